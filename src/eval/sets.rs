//! The evaluation sets: the project's own synthetic corpus (a regression floor) and third-party
//! material nobody here wrote (the evidence). Each set knows its licence and whether it was
//! used to tune the recognizers, so a report can say which figures are held out.

use std::path::Path;

use serde::Deserialize;

use super::generator::{GoldSpan, Note};
use super::{class_for_label, from_jsonl};

/// One named set of gold-labelled notes.
#[derive(Clone, Debug)]
pub struct EvalSet {
    pub name: &'static str,
    /// Where it comes from and under which licence.
    pub source: &'static str,
    /// `true` when recognizers were changed while looking at this set's errors.
    pub tuned_on: bool,
    pub notes: Vec<Note>,
    /// Gold values that could not be located in their text (reported, never silently lost).
    pub unplaced: usize,
}

/// Sets committed under `tests/data`, in report order (the fetched ones follow).
const COMMITTED: [&str; 3] = ["synthetic", "asq-phi-dev", "asq-phi-test"];

/// Probe sets committed under `tests/data/probes`, as (name, file, source, tuned on): text
/// written for this project by sessions that never read the recognizers, then tuned on, or held
/// out (see its README).
const PROBES: [(&str, &str, &str, bool); 36] = [
    (
        "probe-clinical",
        "probes/clinical.jsonl",
        "120 clinical notes (25% from outside the US) written blind to the recognizers; tuned on: \
         a regression floor, not evidence",
        true,
    ),
    (
        "probe-general",
        "probes/general.jsonl",
        "382 short general-language texts in many languages and layouts written blind to the \
         recognizers; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-negatives",
        "probes/negatives.jsonl",
        "clinical text with no identifier at all, dense with numbers, scores, eponyms and codes; \
         every redaction is a false positive",
        true,
    ),
    (
        "probe-queries",
        "probes/clinical_queries.jsonl",
        "260 questions about patients as clinicians type them into an LLM (49 with no identifier) \
         written blind to the recognizers in session 16; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-notes",
        "probes/clinical_notes.jsonl",
        "90 US clinical documents of about 40 kinds written blind to the recognizers in session \
         16; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-general-2",
        "probes/general_2.jsonl",
        "300 general-language texts (chats, e-mails, ads, forms, voice transcripts; 40 with no \
         personal data) written blind to the recognizers in session 16; tuned on: a regression \
         floor, not evidence",
        true,
    ),
    (
        "probe-notes-3",
        "probes/clinical_notes_3.jsonl",
        "110 US clinical documents (outpatient records, letters, reports, notes of every \
         discipline) written blind to the recognizers in session 17; tuned on: a regression \
         floor, not evidence",
        true,
    ),
    (
        "probe-general-3",
        "probes/general_3.jsonl",
        "280 general-language texts (chats, e-mails, tickets, reviews, ads, transcripts; 20% not \
         English; 47 with no personal data) written blind to the recognizers in session 17; tuned \
         on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-notes-4",
        "probes/clinical_notes_4.jsonl",
        "110 clinical documents (85 US of every discipline, 25 from twelve other countries, some \
         partly in their languages), dense with employers, agencies, businesses and places named \
         in passing, written blind to the recognizers in session 18; tuned on: a regression \
         floor, not evidence",
        true,
    ),
    (
        "probe-general-4",
        "probes/general_4.jsonl",
        "260 general-language texts (chats, posts, tickets, e-mails, transcripts, ads, forms, \
         chatbot questions; 20% not English; 50 with no personal data) written blind to the \
         recognizers in session 18; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-notes-5",
        "probes/clinical_notes_5.jsonl",
        "120 clinical documents (63 US, 47 from eleven other countries writing in English, some \
         partly in their languages; dictations, OCR text, letters, transcripts; 10 with no \
         identifier) written blind to the recognizers in session 19; tuned on: a regression \
         floor, not evidence",
        true,
    ),
    (
        "probe-general-5",
        "probes/general_5.jsonl",
        "240 general-language texts (prompts to a chatbot, e-mails, chats, tickets, forms, \
         notices; 26% in twelve other languages; 16% lower case or sloppy; 45 with no personal \
         data) written blind to the recognizers in session 19; tuned on: a regression floor, not \
         evidence",
        true,
    ),
    (
        "probe-notes-6",
        "probes/clinical_notes_6.jsonl",
        "120 clinical documents (72 US, 48 from fifteen other countries, a few partly or wholly \
         in Spanish, French or German; OCR faxes, dictations, letters, handoffs; 10 with no \
         identifier) written blind to the recognizers in session 20; tuned on: a regression \
         floor, not evidence",
        true,
    ),
    (
        "probe-general-6",
        "probes/general_6.jsonl",
        "240 general-language texts (e-mails, chats, forms, logs, tickets, transcripts, ads; \
         about half from outside the US, some in fourteen other languages; 27 with no personal \
         data) written blind to the recognizers in session 20; tuned on: a regression floor, not \
         evidence",
        true,
    ),
    (
        "probe-places-6",
        "probes/places_6.jsonl",
        "100 clinical and care documents (social work, home health, transfers, EMS, intake; 84 \
         US) dense with the agencies, employers, churches and towns of a patient's life, written \
         blind to the recognizers in session 20; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-notes-7",
        "probes/clinical_notes_7.jsonl",
        "120 clinical documents (letters with letterheads, summaries, handoffs, home and hospice \
         visits, run sheets, birth and death paperwork, dictations) from eleven countries, with \
         villages, townlands and employers named without a street, written blind to the \
         recognizers in session 21; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-general-7",
        "probes/general_7.jsonl",
        "200 general texts (mail, chats, posts, reviews, tickets, CVs, letters, bookings, \
         notices, transcripts; nine of them in other languages) full of things that are no \
         identifier, written blind to the recognizers in session 21; tuned on: a regression \
         floor, not evidence",
        true,
    ),
    (
        "probe-prompts-7",
        "probes/prompts_7.jsonl",
        "150 texts typed or pasted into an AI assistant (notes to summarise, letters to draft, lab \
         headers, claims, log lines, CSV and JSON rows, dictations in lower case), written blind \
         to the recognizers in session 21; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-notes-8",
        "probes/clinical_notes_8.jsonl",
        "120 clinical documents (letters, handovers, portal messages in lower case, dictations \
         with spoken dates and numbers, HL7 v2 messages, CSV and pipe-table exports, forms) from \
         twelve countries, written blind to the recognizers in session 22; tuned on: a \
         regression floor, not evidence",
        true,
    ),
    (
        "probe-general-8",
        "probes/general_8.jsonl",
        "200 general texts (mail, chats with speaker labels, tickets, CVs, letters, bookings, \
         logs, tables pasted as CSV or pipes; ten languages) full of companies, villages and \
         things that are no identifier, written blind to the recognizers in session 22; tuned \
         on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-notes-9",
        "probes/clinical_notes_9.jsonl",
        "120 clinical documents (summaries, letters, handoffs, triage, reports, portal messages in \
         lower case, dictations, social work, EMS, HL7 and CSV rows, forms) from fifteen \
         countries, written blind to the recognizers in session 23; tuned on: a regression \
         floor, not evidence",
        true,
    ),
    (
        "probe-general-9",
        "probes/general_9.jsonl",
        "200 general texts (mail with reply chains, chats, SMS, posts, reviews, tickets, CVs, \
         letters, alerts, bookings, minutes, ads, logs, JSON and CSV, prompts; about 25 \
         countries) full of names that are words and companies tied to the person, written \
         blind to the recognizers in session 23; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-notes-10",
        "probes/clinical_notes_10.jsonl",
        "120 clinical documents (ED, nursing, operative and dictated notes, reports, HL7 \
         messages, portal messages in lower case, referrals, EMS, social work, claims, CSV rows, \
         fax covers) from twenty countries, tribal and military US care, written blind to the \
         recognizers in session 24; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-general-10",
        "probes/general_10.jsonl",
        "200 general texts (mail, chats with speaker labels, tickets, posts, reviews, CVs, legal \
         and HR letters, bulletins, obituaries, bookings, receipts, alerts, logs, JSON and CSV, \
         prompts; about 25 countries) with public figures beside private people, written blind \
         to the recognizers in session 24; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-notes-11",
        "probes/clinical_notes_11.jsonl",
        "120 clinical documents (twenty kinds, from ED notes and pathology reports to prior \
         authorizations, dental, hospice and correctional care) from the US (fifteen regions) and \
         twenty other countries, written blind to the recognizers in session 25; tuned on: a \
         regression floor, not evidence",
        true,
    ),
    (
        "probe-general-11",
        "probes/general_11.jsonl",
        "200 general texts (thirty kinds, from mail, chats and tickets to police reports, \
         classified ads, app logs and LLM prompts) from thirty-five countries, written blind to \
         the recognizers in session 25; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-notes-12",
        "probes/clinical_notes_12.jsonl",
        "120 clinical documents (twenty-three kinds, from admission H&Ps and EMS run sheets to \
         anaesthesia records, death summaries and interpreter-assisted visits) from the US \
         (mainland, tribal lands, bases and five territories) and twenty other countries, written \
         blind to the recognizers in session 26; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-general-12",
        "probes/general_12.jsonl",
        "200 general texts (thirty-six kinds, from chats, reviews and CVs to court summons, \
         utility complaints, condolence messages and data snippets) from thirty-eight countries, \
         written blind to the recognizers in session 26; tuned on: a regression floor, not \
         evidence",
        true,
    ),
    (
        "probe-notes-13",
        "probes/clinical_notes_13.jsonl",
        "110 clinical documents (forty kinds, from H&Ps, fax covers and EMS run sheets to HL7 \
         rows, school nurse notes and death paperwork) from the US (rural, border, tribal, VA, \
         prisons, migrant clinics, territories) and twenty-three other countries, written blind \
         to the recognizers in session 35; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "probe-general-13",
        "probes/general_13.jsonl",
        "180 general texts (mail, chats, posts, reviews, letters, claims, invitations, logs and \
         data rows; 29% in twenty-three other languages) from forty-four countries, written \
         blind to the recognizers in session 35; tuned on: a regression floor, not evidence",
        true,
    ),
    (
        "heldout-clinical",
        "probes/heldout_clinical.jsonl",
        "150 clinical texts (70 questions to an LLM, 80 US clinical documents) written blind to \
         the recognizers at the end of session 16 and never looked at: held out",
        false,
    ),
    (
        "heldout-general",
        "probes/heldout_general.jsonl",
        "220 general-language texts written blind to the recognizers at the end of session 16 and \
         never looked at: held out",
        false,
    ),
    (
        "heldout-2-clinical",
        "probes/heldout_2_clinical.jsonl",
        "120 clinical texts (40 questions to an LLM, 80 US clinical documents) written blind to \
         the recognizers during session 17 and never looked at: held out",
        false,
    ),
    (
        "heldout-2-general",
        "probes/heldout_2_general.jsonl",
        "200 general-language texts (20% not English, 37 with no personal data) written blind to \
         the recognizers during session 17 and never looked at: held out",
        false,
    ),
    (
        "heldout-3-clinical",
        "probes/heldout_3_clinical.jsonl",
        "100 clinical documents (60 US, 40 from twenty other countries) written blind to the \
         recognizers during session 32 and never looked at: held out",
        false,
    ),
    (
        "heldout-3-general",
        "probes/heldout_3_general.jsonl",
        "160 general-language texts (forty kinds, about thirty countries, a quarter partly in \
         other languages, 20 with no personal data) written blind to the recognizers during \
         session 32 and never looked at: held out",
        false,
    ),
];

/// Sets that `scripts/fetch-assets` builds from third-party packages (never committed), as
/// (name, file in the fetched folder, source, tuned on).
const FETCHED: [(&str, &str, &str, bool); 3] = [
    (
        "i2b2-philter",
        "philter-i2b2.jsonl",
        "five notes of the 2014 i2b2/UTHealth de-identification corpus with their gold, as shipped \
         in philter-ucsf 1.0.3 (BSD-3-Clause); clinical notes",
        true,
    ),
    (
        "presidio-dev",
        "presidio-dev.jsonl",
        "Presidio's evaluation templates and person records (presidio-evaluator 0.3.2, MIT) filled \
         with Faker as Presidio does; even-numbered templates; general-language text",
        true,
    ),
    (
        "presidio-test",
        "presidio-test.jsonl",
        "the same, odd-numbered templates: held out, never looked at",
        false,
    ),
];

/// A set's file, or an error naming it (and `hint`).
fn read(path: &Path, hint: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}{hint}", path.display()))
}

/// Loads the named sets (`all` for every one): committed ones from `data_dir` (`tests/data` in
/// the repository), fetched ones from `fetched_dir` (`.assets/eval`, see `scripts/fetch-assets`).
pub fn load(data_dir: &Path, fetched_dir: &Path, names: &[String]) -> Result<Vec<EvalSet>, String> {
    let all = names.iter().any(|n| n == "all");
    let known = || {
        COMMITTED
            .into_iter()
            .chain(PROBES.map(|(name, ..)| name))
            .chain(FETCHED.map(|(name, ..)| name))
    };
    for n in names {
        if n != "all" && !known().any(|k| k == n) {
            let known: Vec<&str> = known().collect();
            return Err(format!(
                "unknown set {n:?} (known: all, {})",
                known.join(", ")
            ));
        }
    }
    let wanted = |n: &str| all || names.iter().any(|x| x == n);
    let mut sets = Vec::new();
    if wanted("synthetic") {
        sets.push(jsonl_set(
            "synthetic",
            "phiflow's own generator (seed 20251121); a regression floor, not evidence",
            true,
            &data_dir.join("deid_eval.jsonl"),
            "",
        )?);
    }
    if wanted("asq-phi-dev") || wanted("asq-phi-test") {
        let path = data_dir.join("asq-phi/synthetic_clinical_queries.txt");
        let text = read(&path, "")?;
        let (notes, unplaced) = asq_phi(&text)?;
        let (dev, test): (Vec<_>, Vec<_>) =
            notes.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
        let strip = |v: Vec<(usize, Note)>| v.into_iter().map(|(_, n)| n).collect::<Vec<_>>();
        let dev = strip(dev);
        let test = strip(test);
        let count = |v: &[Note]| {
            unplaced
                .iter()
                .filter(|id| v.iter().any(|n| &n.id == *id))
                .count()
        };
        if wanted("asq-phi-dev") {
            sets.push(EvalSet {
                name: "asq-phi-dev",
                source: "ASQ-PHI (MIT), even-numbered queries: the half recognizers were tuned on",
                tuned_on: true,
                unplaced: count(&dev),
                notes: dev,
            });
        }
        if wanted("asq-phi-test") {
            sets.push(EvalSet {
                name: "asq-phi-test",
                source: "ASQ-PHI (MIT), odd-numbered queries: held out, never looked at",
                tuned_on: false,
                unplaced: count(&test),
                notes: test,
            });
        }
    }
    for (name, file, source, tuned_on) in PROBES.into_iter().filter(|(n, ..)| wanted(n)) {
        sets.push(jsonl_set(name, source, tuned_on, &data_dir.join(file), "")?);
    }
    for (name, file, source, tuned_on) in FETCHED.into_iter().filter(|(n, ..)| wanted(n)) {
        let hint = " (run scripts/fetch-assets)";
        sets.push(jsonl_set(
            name,
            source,
            tuned_on,
            &fetched_dir.join(file),
            hint,
        )?);
    }
    Ok(sets)
}

/// A set read from a JSON Lines file of gold-labelled notes; `hint` follows a read error.
fn jsonl_set(
    name: &'static str,
    source: &'static str,
    tuned_on: bool,
    path: &Path,
    hint: &str,
) -> Result<EvalSet, String> {
    let text = read(path, hint)?;
    Ok(EvalSet {
        name,
        source,
        tuned_on,
        notes: from_jsonl(&text).map_err(|e| format!("{}: {e}", path.display()))?,
        unplaced: 0,
    })
}

#[derive(Deserialize)]
struct AsqTag {
    identifier_type: String,
    value: String,
}

/// ASQ-PHI identifier type → canonical label.
fn asq_label(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "NAME" => "NAME",
        "GEOGRAPHIC_LOCATION" => "LOCATION",
        "DATE" => "DATE",
        "MEDICAL_RECORD_NUMBER" => "MEDICAL_RECORD_NUMBER",
        "HEALTH_PLAN_BENEFICIARY_NUMBER" => "HEALTH_PLAN_NUMBER",
        "PHONE_NUMBER" => "PHONE",
        "FAX_NUMBER" => "FAX",
        "SOCIAL_SECURITY_NUMBER" => "SSN",
        "EMAIL_ADDRESS" => "EMAIL",
        "ACCOUNT_NUMBER" => "ACCOUNT_NUMBER",
        "CERTIFICATE_LICENSE_NUMBER" => "LICENSE_NUMBER",
        "IP_ADDRESS" => "IP_ADDRESS",
        "UNIQUE_IDENTIFIER" => "OTHER_IDENTIFIER",
        "URL" => "URL",
        "VEHICLE_IDENTIFIER" => "VEHICLE_ID",
        "DEVICE_IDENTIFIER" => "DEVICE_ID",
        "BIOMETRIC_IDENTIFIER" => "BIOMETRIC_ID",
        "AGE" => "AGE",
        _ => return None,
    })
}

/// Parses ASQ-PHI's `===QUERY===` / `===PHI_TAGS===` blocks into notes with code-point gold
/// spans: every whole-word occurrence of a tagged value is gold (a value tagged once but
/// written twice is an identifier both times). Overlapping values keep the longer one.
/// Returns the notes and the ids of notes with a value that does not occur in its query.
pub fn asq_phi(text: &str) -> Result<(Vec<Note>, Vec<String>), String> {
    let mut notes = Vec::new();
    let mut unplaced = Vec::new();
    for (i, block) in text.split("===QUERY===").skip(1).enumerate() {
        let id = format!("asq-phi-{:04}", i + 1);
        let (query, tags) = block
            .split_once("===PHI_TAGS===")
            .ok_or_else(|| format!("query {}: no ===PHI_TAGS=== section", i + 1))?;
        let query = query.trim_matches('\n').trim();
        let mut spans: Vec<GoldSpan> = Vec::new();
        for (k, line) in tags.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let tag: AsqTag = serde_json::from_str(line)
                .map_err(|e| format!("query {}, tag {}: {:?} error", i + 1, k + 1, e.classify()))?;
            let label = asq_label(&tag.identifier_type).ok_or_else(|| {
                format!(
                    "query {}: unknown identifier type {}",
                    i + 1,
                    tag.identifier_type
                )
            })?;
            let found = occurrences(query, tag.value.trim());
            if found.is_empty() {
                unplaced.push(id.clone());
            }
            for (start, end) in found {
                spans.push(GoldSpan {
                    start,
                    end,
                    label: label.to_string(),
                    class: class_for_label(label)
                        .unwrap_or("R_OTHER_UNIQUE_ID")
                        .to_string(),
                });
            }
        }
        spans.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        let mut kept: Vec<GoldSpan> = Vec::new();
        for s in spans {
            match kept.last_mut() {
                Some(last) if s.start < last.end => {
                    if s.end - s.start > last.end - last.start {
                        *last = s;
                    }
                }
                _ => kept.push(s),
            }
        }
        notes.push(Note {
            id,
            kind: "asq-phi".into(),
            text: query.to_string(),
            spans: kept,
        });
    }
    Ok((notes, unplaced))
}

/// Code-point ranges of `value` in `text`, not glued to a letter or digit on either side;
/// straight and curly apostrophes are treated alike (the data mixes them).
fn occurrences(text: &str, value: &str) -> Vec<(usize, usize)> {
    let norm = |c: char| if c == '’' || c == '‘' { '\'' } else { c };
    let hay: Vec<char> = text.chars().map(norm).collect();
    let needle: Vec<char> = value.chars().map(norm).collect();
    if needle.is_empty() || needle.len() > hay.len() {
        return Vec::new();
    }
    let glued = |c: Option<&char>, edge: char| {
        edge.is_alphanumeric() && c.is_some_and(|c| c.is_alphanumeric())
    };
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + needle.len() <= hay.len() {
        let end = pos + needle.len();
        if hay[pos..end] == needle[..]
            && !glued(pos.checked_sub(1).and_then(|p| hay.get(p)), needle[0])
            && !glued(hay.get(end), needle[needle.len() - 1])
        {
            out.push((pos, end));
            pos = end;
        } else {
            pos += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "===QUERY===\nDose for Anna S. at St. Vincent\u{2019}s; Anna S. again (MRN: 998877)?\n===PHI_TAGS===\n{\"identifier_type\": \"NAME\", \"value\": \"Anna S.\"}\n{\"identifier_type\": \"GEOGRAPHIC_LOCATION\", \"value\": \"St. Vincent's\"}\n{\"identifier_type\": \"MEDICAL_RECORD_NUMBER\", \"value\": \"998877\"}\n\n===QUERY===\nACE inhibitors in CKD?\n===PHI_TAGS===\n\n===QUERY===\nSeen by Dr. Lee\n===PHI_TAGS===\n{\"identifier_type\": \"NAME\", \"value\": \"Dr. Kim\"}\n";

    #[test]
    fn values_become_code_point_spans_at_every_occurrence() {
        let (notes, unplaced) = asq_phi(SAMPLE).expect("parses");
        assert_eq!(notes.len(), 3);
        let n = &notes[0];
        let text: Vec<char> = n.text.chars().collect();
        let got: Vec<(String, &str)> = n
            .spans
            .iter()
            .map(|s| (text[s.start..s.end].iter().collect(), s.label.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("Anna S.".to_string(), "NAME"),
                ("St. Vincent\u{2019}s".to_string(), "LOCATION"),
                ("Anna S.".to_string(), "NAME"),
                ("998877".to_string(), "MEDICAL_RECORD_NUMBER"),
            ]
        );
        assert!(notes[1].spans.is_empty(), "a hard negative has no gold");
        assert_eq!(unplaced, vec!["asq-phi-0003".to_string()]);
    }

    #[test]
    fn a_value_inside_a_word_is_not_an_occurrence() {
        assert_eq!(occurrences("Annabel and Ann", "Ann"), vec![(12, 15)]);
        assert_eq!(occurrences("#SP-1 and SP-1", "#SP-1"), vec![(0, 5)]);
    }

    #[test]
    fn unknown_types_and_broken_blocks_are_errors() {
        assert!(asq_phi("===QUERY===\nno tags").is_err());
        let bad = "===QUERY===\nx\n===PHI_TAGS===\n{\"identifier_type\": \"SHOE_SIZE\", \"value\": \"x\"}\n";
        assert!(asq_phi(bad).is_err());
    }

    #[test]
    fn the_shipped_set_parses_and_splits_in_two_halves() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let none = Path::new("/nonexistent");
        let sets = load(&dir, none, &["asq-phi-dev".into(), "asq-phi-test".into()]).expect("loads");
        assert_eq!(sets.len(), 2);
        assert_eq!(sets[0].notes.len() + sets[1].notes.len(), 1051);
        let gold: usize = sets
            .iter()
            .map(|s| s.notes.iter().map(|n| n.spans.len()).sum::<usize>())
            .sum();
        assert!(gold >= 2973 - 10, "{gold}");
        assert!(sets.iter().all(|s| s.unplaced == 0));
        assert!(load(&dir, none, &["nope".into()]).is_err());
        let missing = load(&dir, none, &["presidio-test".into()]).expect_err("not fetched");
        assert!(missing.contains("scripts/fetch-assets"), "{missing}");
    }
}
