//! Widening spans over the words that go with an identifier, applied last by the recognize
//! stage when the pipeline asks (de-identification, not extraction):
//!
//! - Prefixes (`with_prefixes`): a doctor's or professor's title before a name ("Dr. Patel")
//!   and a `#` glued to a number ("MRN #ST-112233") go with the identifier. Clinical gold that
//!   names people with their title (ASQ-PHI's) counts the title as part of the name. "Mr.",
//!   "Mrs." and "Ms." stay: general-language gold (Presidio's, i2b2's) leaves titles out, and
//!   there they are far more common, so taking them cost more precision than it won recall.
//! - Whole places (`whole_places`): a place of care and the town after it ("St. Joseph's Health
//!   in Detroit", "Brigham and Women's Hospital, Boston") are one place, and so is a town or a
//!   place named with the lower-case word for what it is ("our New York clinic", "Mt. Sinai
//!   hospital"), and a facility takes the campus named after a dash ("Saint Alphonsus Medical
//!   Center - Nampa"). Masked apart they leave " in " and "clinic" standing between placeholders, and
//!   gold annotations that name the place as one span (ASQ-PHI's) count them as missed.
//!
//! States and countries are never taken in: Safe Harbor keeps them.

use super::span::Span;
use crate::deid::canonical_label;

/// Titles taken with the name after them; matched whole, in any case, with or without a full
/// stop.
const TITLES: &[&str] = &["Dr", "Dra", "Drs", "Prof"];

/// Lower-case words after a town or a place that make it a place of care, a modifier first.
const CARE_WORDS: &[&str] = &[
    "clinic", "office", "hospital", "practice", "branch", "campus", "center", "centre",
];
const CARE_MODIFIERS: &[&str] = &["downtown", "main", "satellite", "outpatient"];

/// Widens `v` (sorted, disjoint) in place; it stays sorted and disjoint.
pub fn widen(text: &str, v: &mut Vec<Span>, with_prefixes: bool, whole_places: bool) {
    if with_prefixes {
        for i in 0..v.len() {
            let floor = if i == 0 { 0 } else { v[i - 1].end };
            let head = &text[floor..v[i].start];
            let start = if is_name(&v[i]) {
                title_before(head)
            } else if is_number(&v[i]) && head.ends_with('#') {
                Some(head.len() - 1)
            } else {
                None
            };
            if let Some(start) = start {
                v[i].start = floor + start;
            }
        }
    }
    if whole_places {
        for i in 0..v.len() {
            if is_place(&v[i]) || is_organization(&v[i]) {
                let ceiling = v.get(i + 1).map_or(text.len(), |n| n.start);
                let rest = &text[v[i].end..ceiling];
                if let Some(len) = care_word_after(rest) {
                    v[i].end += len;
                    v[i].label = "LOCATION".into();
                } else if is_organization(&v[i])
                    && let Some(len) = campus_after(rest)
                {
                    v[i].end += len;
                }
            }
        }
        join_places_with_towns(text, v);
    }
}

/// "St. Joseph's Health in Detroit": a place of care, " in " or ", ", and a town.
fn join_places_with_towns(text: &str, v: &mut Vec<Span>) {
    let mut out: Vec<Span> = Vec::with_capacity(v.len());
    for s in v.drain(..) {
        if let Some(prev) = out.last_mut()
            && (is_organization(prev) || canonical_label(&prev.label).name == "LOCATION")
            && canonical_label(&s.label).name == "CITY"
            && matches!(&text[prev.end..s.start], " in " | ", " | " at ")
        {
            prev.end = s.end;
            prev.label = "LOCATION".into();
            prev.score = prev.score.min(s.score);
            continue;
        }
        out.push(s);
    }
    *v = out;
}

/// The start of a title ending `head` before one space or none ("Dr. ", "Mrs ", "Dr."), the
/// title preceded by no letter.
fn title_before(head: &str) -> Option<usize> {
    let bare = head.strip_suffix([' ', '\t']).unwrap_or(head);
    let word = bare.strip_suffix('.').unwrap_or(bare);
    if word.len() == head.len() {
        return None;
    }
    let start = word
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphabetic())
        .last()
        .map(|(i, _)| i)?;
    TITLES
        .iter()
        .any(|t| t.eq_ignore_ascii_case(&word[start..]))
        .then_some(start)
}

/// Length of " clinic", " downtown clinic" … at the start of `rest`, ending a word.
fn care_word_after(rest: &str) -> Option<usize> {
    let mut len = 0;
    let mut after = rest;
    let mut word = |after: &mut &str, words: &[&str]| -> bool {
        let Some(s) = after.strip_prefix(' ') else {
            return false;
        };
        for w in words {
            if let Some(tail) = s.strip_prefix(w)
                && !tail.starts_with(char::is_alphanumeric)
            {
                len += 1 + w.len();
                *after = tail;
                return true;
            }
        }
        false
    };
    word(&mut after, CARE_MODIFIERS);
    word(&mut after, CARE_WORDS).then_some(len)
}

/// Words after a dash that name a note's title, a person or a unit inside the facility, not a
/// campus ("- Adolescent Unit", "- Cardiology Clinic").
#[rustfmt::skip]
const NOT_CAMPUS: &[&str] = &[
    "Dr", "Mr", "Mrs", "Ms", "Department", "Dept", "Note", "Notes", "Report", "Summary", "Visit",
    "Call", "Record", "Page", "Phone", "Fax", "Patient", "Progress", "Discharge", "Admission",
    "Unit", "Clinic", "Ward", "Wing", "Floor", "Service", "Services", "Pharmacy", "Laboratory",
    "Lab",
];

/// Length of " - Nampa", " -- Wausau Center" at the start of `rest`: a dash, then one to three
/// capitalized words ending the field (a line end, two spaces or punctuation).
fn campus_after(rest: &str) -> Option<usize> {
    let dash = [" - ", " -- ", " – ", " — "]
        .into_iter()
        .find(|d| rest.starts_with(d))?;
    let mut end = dash.len();
    for n in 0..3 {
        let word_len = rest[end..]
            .char_indices()
            .find(|&(i, c)| !(c.is_alphabetic() && (i == 0) == c.is_uppercase()))
            .map_or(rest.len() - end, |(i, _)| i);
        let word = &rest[end..end + word_len];
        if word.chars().count() < 2 || NOT_CAMPUS.contains(&word) {
            return None;
        }
        end += word_len;
        let after = &rest[end..];
        if after.is_empty()
            || after.starts_with(['\n', '\r', ',', ';', '.', ')', ':'])
            || after.starts_with("  ")
        {
            return Some(end);
        }
        if n == 2 || !after.starts_with(' ') {
            return None;
        }
        end += 1;
    }
    None
}

fn is_name(s: &Span) -> bool {
    canonical_label(&s.label).hipaa_class == "A_NAMES"
}

/// A number or code naming one record, account, licence, device or vehicle.
fn is_number(s: &Span) -> bool {
    let c = canonical_label(&s.label);
    matches!(
        c.hipaa_class,
        "H_MEDICAL_RECORD"
            | "I_HEALTH_PLAN"
            | "J_ACCOUNT"
            | "K_CERTIFICATE_LICENSE"
            | "L_VEHICLE"
            | "M_DEVICE"
            | "R_OTHER_UNIQUE_ID"
    ) && !matches!(c.name, "ORGANIZATION" | "USERNAME")
}

/// A town or a named place: no state, country, ZIP code, street or building number.
fn is_place(s: &Span) -> bool {
    matches!(canonical_label(&s.label).name, "CITY" | "LOCATION")
}

fn is_organization(s: &Span) -> bool {
    canonical_label(&s.label).name == "ORGANIZATION"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widened(text: &str, spans: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut from = 0;
        let mut v: Vec<Span> = spans
            .iter()
            .map(|(word, label)| {
                let start = from + text[from..].find(word).expect("word in text");
                from = start + word.len();
                Span::pattern(start, from, *label, 0.9, "t")
            })
            .collect();
        widen(text, &mut v, true, true);
        v.iter()
            .map(|s| (text[s.start..s.end].to_string(), s.label.clone()))
            .collect()
    }

    fn one(text: &str, spans: &[(&str, &str)]) -> String {
        let w = widened(text, spans);
        assert_eq!(w.len(), 1, "{w:?}");
        w[0].0.clone()
    }

    #[test]
    fn titles_and_hashes_go_with_what_they_announce() {
        assert_eq!(
            one("seen by Dr. Patel today", &[("Patel", "NAME")]),
            "Dr. Patel"
        );
        assert_eq!(one("to DR SMITH,", &[("SMITH", "NAME")]), "DR SMITH");
        assert_eq!(one("Dr.Okafor called", &[("Okafor", "NAME")]), "Dr.Okafor");
        assert_eq!(one("Prof Ruiz", &[("Ruiz", "NAME")]), "Prof Ruiz");
        assert_eq!(one("Mrs. Okafor called", &[("Okafor", "NAME")]), "Okafor");
        assert_eq!(
            one("MRN #ST-112233?", &[("ST-112233", "MRN")]),
            "#ST-112233"
        );
        // Not a title, or not right before the name; a '#' with a space stays.
        assert_eq!(one("Andrew Smith", &[("Smith", "NAME")]), "Smith");
        assert_eq!(one("Dr.  Patel", &[("Patel", "NAME")]), "Patel");
        assert_eq!(one("Mr Dr. Patel", &[("Patel", "NAME")]), "Dr. Patel");
        assert_eq!(one("MRN # 112233", &[("112233", "MRN")]), "112233");
        assert_eq!(one("Ward #4 Dr. X", &[("4", "DATE")]), "4");
        assert_eq!(one("room #12", &[("12", "ORGANIZATION")]), "12");
    }

    #[test]
    fn a_place_of_care_and_its_town_are_one_place() {
        let w = widened(
            "at St. Joseph's Health in Detroit, MI on",
            &[
                ("St. Joseph's Health", "ORGANIZATION"),
                ("Detroit", "CITY"),
                ("MI", "STATE"),
            ],
        );
        assert_eq!(
            w,
            [
                ("St. Joseph's Health in Detroit".into(), "LOCATION".into()),
                ("MI".into(), "STATE".into())
            ]
        );
        assert_eq!(
            one("visited our New York clinic on", &[("New York", "CITY")]),
            "New York clinic"
        );
        assert_eq!(
            one("the Chicago downtown clinic.", &[("Chicago", "CITY")]),
            "Chicago downtown clinic"
        );
        assert_eq!(
            one(
                "at Brigham and Women's Hospital, Boston.",
                &[
                    ("Brigham and Women's Hospital", "LOCATION"),
                    ("Boston", "CITY")
                ]
            ),
            "Brigham and Women's Hospital, Boston"
        );
        // Two places of care, a state, and words that only start like a care word stay apart.
        assert_eq!(
            widened(
                "Mayo Clinic, Cleveland Clinic",
                &[
                    ("Mayo Clinic", "ORGANIZATION"),
                    ("Cleveland Clinic", "ORGANIZATION")
                ]
            )
            .len(),
            2
        );
        assert_eq!(one("Boston, MA", &[("MA", "STATE")]), "MA");
        assert_eq!(
            one(
                "TRIAGE  Saint Alphonsus Medical Center - Nampa  Date",
                &[("Saint Alphonsus Medical Center", "ORGANIZATION")]
            ),
            "Saint Alphonsus Medical Center - Nampa"
        );
        assert_eq!(
            one(
                "Marshfield Clinic -- Wausau Center\n",
                &[("Marshfield Clinic", "ORGANIZATION")]
            ),
            "Marshfield Clinic -- Wausau Center"
        );
        for text in [
            "Mayo Clinic - Dr. Smith called",
            "Mayo Clinic - PHARMACIST NOTE",
            "Mayo Clinic - the patient was seen",
            "Mayo Clinic - Progress Note",
            "Meadowbrook Behavioral Hospital - Adolescent Unit Date",
        ] {
            let place = text.split(" -").next().unwrap_or(text);
            assert_eq!(one(text, &[(place, "ORGANIZATION")]), place);
        }
        assert_eq!(one("Boston clinician", &[("Boston", "CITY")]), "Boston");
        assert_eq!(one("Dallas office", &[("Dallas", "NAME")]), "Dallas");
    }
}
