//! Letterheads: a line of capitalized words right above a street address (or before one on the
//! same line, after a comma) names whoever sits at that address: "RIVERSIDE INTERNAL MEDICINE" /
//! "415 Water Street", "North Shore Pulmonary & Sleep" / "One Hutchinson Place, Suite 210",
//! "Little Sprouts Pediatrics, 880 Riverside Pkwy". Such names end in any word, so no list of
//! head words finds them all; their place in the letter does. A person's name there is left to
//! the name recognizers, and a line of only generic office words ("Billing Office", "Attorneys at
//! Law") names no one. A document's title line names its organization before a dash when a word
//! of it says what kind of body it is ("TRI-COUNTY FIRE RESCUE — PATIENT CARE REPORT", "Rosewood
//! Lodge Care Home — Harrogate — …"); a department or a specialty heads notes the same way
//! ("ANTICOAGULATION CLINIC - PHONE ENCOUNTER") and is no place of its own.

use super::merge::TITLES;
use super::places::words_at;
use super::span::Span;
use crate::deid::canonical_label;
use crate::deid::dates::is_month_name;

/// Lower-case words a name may hold ("Department of Health and Human Services").
const CONNECTORS: &[&str] = &[
    "of", "and", "&", "the", "for", "at", "on", "de", "del", "la", "du", "des", "y", "da", "das",
    "do", "dos", "di", "dei", "della", "van", "von", "der", "-", "--", "–", "—", "|",
];

/// Words of a line that names an office, a role or the letter itself, not a place of its own.
#[rustfmt::skip]
const GENERIC: &[&str] = &[
    "billing", "office", "offices", "attorneys", "attorney", "law", "department", "dept",
    "services", "service", "division", "emergency", "clinic", "hospital", "medical", "center",
    "centre", "health", "records", "record", "information", "management", "patient", "patients",
    "financial", "determination", "disability", "administration", "business", "accounts", "mailing",
    "address", "home", "confidential", "private", "personal", "fax", "cover", "sheet",
    "transmittal", "summary", "report", "note", "letter", "referral", "referrals", "correspondence",
    "customer", "claims", "appeals", "member", "members", "provider", "relations", "human",
    "resources", "payroll", "admissions", "registration", "new", "to", "from", "re", "attn",
    "attention", "dear", "sincerely", "regards", "via", "manager", "coordinator", "director",
    "assistant", "nurse", "clerk", "associate", "specialist", "care", "case", "representative",
    "officer", "supervisor", "team", "unit", "garage", "yard", "estate", "sale", "landlord",
    "registrar", "clubhouse", "fellowship", "hall", "council", "parish",
];

/// Words that say a title line's first part is an organization of its own, not a department.
#[rustfmt::skip]
const BODIES: &[&str] = &[
    "hospital", "hospitals", "infirmary", "rescue", "ambulance", "trust", "ltd", "inc", "llc",
    "laboratories", "polyclinic", "ysbyty", "klinik", "krankenhaus", "clinique", "hôpital",
    "response", "school", "college", "chemist", "police", "fire", "paramedics", "lodge", "manor",
    "village", "walk-in", "polyclinics", "institute", "institut", "klinikum",
    "universitätsklinikum", "congress", "mutual", "system", "center", "centre", "network",
    "foundation", "church", "club", "hotel", "travel", "bank", "condominium", "opticians",
    "limited", "plans", "distribution", "hochschule", "masjid", "gurdwara", "mosque", "temple",
    "synagogue", "parish", "software",
];

/// Words that name a document or a department, not who wrote it ("DISCHARGE SUMMARY", "Primary
/// Care Progress Note").
#[rustfmt::skip]
const DOCUMENT: &[&str] = &[
    "summary", "report", "note", "notes", "record", "records", "letter", "form", "visit",
    "consultation", "consult", "assessment", "history", "admission", "discharge", "referral",
    "prescription", "requisition", "certificate", "certification", "encounter", "messages",
    "log", "plan", "orders", "progress", "transfer", "handover", "triage", "chart",
    "evaluation", "review", "request", "appeal", "authorization", "statement", "worksheet",
    "instructions", "examination", "department", "directorate", "division", "ward", "unit",
    "office", "ministry", "republic", "program", "programme", "service", "services", "nursing",
    "medicine", "confirmation", "safety", "claim", "notice", "itinerary", "agreement",
    "policy", "minutes", "newsletter", "intake", "adjustment", "blotter",
];

/// Departments that follow a facility's dash ("SANFORD WORTHINGTON MEDICAL CENTER — Laboratory").
#[rustfmt::skip]
const DEPARTMENTS: &[&str] = &[
    "laboratory", "lab", "radiology", "imaging", "pathology", "pharmacy", "cardiology", "oncology",
    "pediatrics", "paediatrics", "surgery", "anesthesiology", "endoscopy",
];

/// Legal forms a name keeps after its comma ("TRI-CITIES NEPHROLOGY, P.C."); any other words
/// after a comma are a department or a role ("…'s Office, Child Abuse Division").
const LEGAL_FORMS: &[&str] = &[
    "P.C.", "PC", "P.A.", "PA", "PLLC", "LLC", "LLP", "Inc.", "Inc", "Ltd.", "Ltd", "LTD", "INC",
    "INC.", "Co.", "Corp.",
];

/// Organizations named on the line above, or at the start of the line before, a street address;
/// `v` holds the spans found so far (sorted), which a person's name on that line leaves alone.
pub fn letterheads(text: &str, v: &[Span]) -> Vec<Span> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let start = at;
        at += line.len();
        let head = match lines.peek() {
            Some(next) if starts_with_address(next.trim_start()) => Some(line.trim_end()),
            _ => same_line_head(line),
        };
        let Some(head) = head else { continue };
        let lead = head.len() - head.trim_start().len();
        let Some(len) = name_length(head.trim_start()) else {
            continue;
        };
        let (from, to) = (start + lead, start + lead + len);
        let named_person = v.iter().any(|s| {
            s.start < to && s.end > from && canonical_label(&s.label).hipaa_class == "A_NAMES"
        });
        if !named_person {
            out.push(Span::pattern(from, to, "ORGANIZATION", 0.7, "letterhead"));
        }
    }
    // A title line above a street is already found as its letterhead.
    for s in title_line(text, v).into_iter().flatten() {
        if !out.iter().any(|o| o.start < s.end && s.start < o.end) {
            out.push(s);
        }
    }
    out
}

/// The organization a document's first line names before a spaced dash or bar ("BANKSIA GROVE
/// AGED CARE HOME — Toowoomba QLD — Resident Progress Note"), or as the whole line above the
/// rest, up to its last word for a body ("GRACE FELLOWSHIP BAPTIST CHURCH", "Sahyog Bank" of
/// "Sahyog Bank Virtual Assistant"): two words or more, one in [`BODIES`] or a service's
/// ([`is_service_body`]), none in [`DOCUMENT`], and no person's name is the whole of it; with
/// the town after its comma.
fn title_line(text: &str, v: &[Span]) -> Option<Vec<Span>> {
    let from = text.len() - text.trim_start().len();
    let (line, more) = text[from..].split_once('\n')?;
    let line = line.trim_end();
    let dash = [" — ", " – ", " - ", " -- ", " | "]
        .iter()
        .filter_map(|d| line.find(d))
        .min();
    // A line alone heads the text only when more follows it.
    let cut = dash.or_else(|| (!more.trim().is_empty()).then_some(line.len()))?;
    let mut len = name_length(&line[..cut])?;
    let at_words = words_at(&line[..len]);
    let mut words: Vec<String> = at_words
        .iter()
        .map(|(_, w)| w.trim_end_matches([',', '.']).to_lowercase())
        .collect();
    // Read before a whole line is cut to its name: "POISON CENTER CASE RECORD" is a document's.
    let document = words.iter().any(|w| DOCUMENT.contains(&w.as_str()));
    if dash.is_none() {
        // A whole line ends its name at its last word for a body.
        let last = words
            .iter()
            .rposition(|w| BODIES.contains(&w.as_str()) || SERVICES.contains(&w.as_str()))?;
        words.truncate(last + 1);
        let (at, w) = at_words[last];
        len = at + w.trim_end_matches(',').len();
    }
    // A line addressed to someone names its addressee ("To Summit Coast Bank Bereavement Team").
    if words.first().is_some_and(|w| {
        matches!(
            w.as_str(),
            "to" | "from" | "re" | "attn" | "attention" | "dear"
        )
    }) {
        return None;
    }
    // One word alone is a department ("PHARMACY - CONTROLLED SUBSTANCE LOG").
    let body = words.len() >= 2
        && (words.iter().any(|w| BODIES.contains(&w.as_str()))
            || is_service_body(&words)
            || town_and_state(&line[cut..]));
    let to = from + len;
    // A name that is the whole head is a person's ("Grace Fire — fire safety talk"); one inside
    // a head with a word for a body is the facility's first words ("DON VALLEY GENERAL HOSPITAL").
    let named_person = v.iter().any(|s| {
        s.start < to
            && s.end > from
            && canonical_label(&s.label).hipaa_class == "A_NAMES"
            && (s.start <= from && s.end >= to || !body)
    });
    if !(body && !document && !named_person) {
        return None;
    }
    let mut found = vec![Span::pattern(from, to, "ORGANIZATION", 0.7, "letterhead")];
    // The town after the organization's comma ("CARMEL BAY MEDICAL CENTER, HAIFA - …").
    if let Some(town) = line[len..cut].strip_prefix(", ")
        && (1..=3).contains(&town.split(' ').count())
        && town
            .split(' ')
            .all(|w| w.starts_with(char::is_uppercase) && !w.contains(|c: char| c.is_ascii_digit()))
    {
        let at = to + 2;
        found.push(Span::pattern(
            at,
            at + town.len(),
            "CITY",
            0.7,
            "letterhead",
        ));
    }
    Some(found)
}

/// Words for a service that name a body only beside a word of its own name ("OPTION CARE
/// HEALTH", "BRADESCO SAÚDE", "HEARTWOOD HOSPICE", "Western Sports Physiotherapy").
#[rustfmt::skip]
const SERVICES: &[&str] = &[
    "health", "saúde", "salud", "santé", "sante", "gesundheit", "healthcare", "telehealth",
    "diagnostics", "home", "hospice", "surgery", "practice", "pharmacy", "rehabilitation", "rehab",
    "imaging", "audiology", "eye", "dentistry", "physiotherapy",
];

/// Words that make a service a field or a department, not the name of a body ("OCCUPATIONAL
/// HEALTH", "OUTPATIENT BEHAVIORAL HEALTH", "ORAL & MAXILLOFACIAL SURGERY", "MSK Physiotherapy").
#[rustfmt::skip]
const FIELDS: &[&str] = &[
    "occupational", "correctional", "employee", "employees", "behavioral", "behavioural",
    "mental", "community", "public", "student", "students", "women's", "womens", "men's", "child",
    "children's", "adolescent", "youth", "school", "global", "oral", "population", "primary",
    "maternal", "infant", "sexual", "reproductive", "environmental", "travel", "integrative",
    "veterans", "worker", "workers", "allied", "digital", "pediatric", "paediatric", "outpatient",
    "inpatient", "rural", "tribal", "refugee", "bone", "joint", "heart", "brain", "skin", "eye",
    "foot", "lung", "liver", "kidney", "breast", "spine", "digestive", "urgent", "virtual",
    "remote", "perinatal", "senior", "geriatric", "family", "maxillofacial", "msk", "renal",
    "dose", "clinical", "specialty", "specialist", "cardiac", "orthopaedic", "orthopedic",
    "plastic", "vascular", "dental", "hand", "sports", "physical", "speech", "district",
    "visitor", "general", "surgical", "ambulatory", "cosmetic", "nuclear", "interventional",
    "diagnostic", "retail", "compounding", "mail", "order", "infusion", "wound", "pain", "sleep",
    "weight", "bariatric", "trauma", "palliative", "respiratory", "dialysis", "transplant",
    "day", "same", "minor", "nursing", "oncology", "cancer",
];

/// Whether the words of a head name a body by a service word: one in [`SERVICES`] and another
/// that is none of those, no field ([`FIELDS`]), office word or connector ("HBF HEALTH",
/// "SOUTHWEST KANSAS FAMILY HEALTH"; not "MENTAL HEALTH", "Home Health" or "CLINICAL PHARMACY").
fn is_service_body(words: &[String]) -> bool {
    words.iter().any(|w| SERVICES.contains(&w.as_str()))
        && words.iter().any(|w| {
            let w = w.as_str();
            !SERVICES.contains(&w)
                && !FIELDS.contains(&w)
                && !GENERIC.contains(&w)
                && !CONNECTORS.contains(&w)
                && !DEPARTMENTS.contains(&w)
        })
}

/// Whether a title line's dash leads to a town and its state code only ("OZARKS ALLERGY &
/// ASTHMA - Springfield, MO"): what stands before it is seated there, a body of its own.
fn town_and_state(rest: &str) -> bool {
    let rest = rest.trim_start_matches([' ', '—', '–', '-', '|']);
    // The field ends at the line's end or a wide gap.
    let rest = rest.split("  ").next().unwrap_or(rest).trim_end();
    let Some((town, state)) = rest.rsplit_once(", ") else {
        return false;
    };
    let words: Vec<&str> = town.split(' ').collect();
    (1..=3).contains(&words.len())
        && words.iter().all(|w| {
            w.starts_with(char::is_uppercase) && w.chars().all(|c| c.is_alphabetic() || c == '.')
        })
        && state.len() == 2
        && state.bytes().all(|b| b.is_ascii_uppercase())
}

/// The part of `line` before ", <house number> <Street>", when the line starts with it.
fn same_line_head(line: &str) -> Option<&str> {
    let cut = line
        .match_indices(", ")
        .map(|(i, _)| i)
        .find(|&i| starts_with_address(&line[i + 2..]))?;
    Some(&line[..cut])
}

/// A street line: a house number and a capitalized word ("415 Water Street", "7115 W. Okanogan
/// Ave"), "One"/"Two" and a place ("One Hutchinson Place"), or a PO box.
fn starts_with_address(s: &str) -> bool {
    let mut words = s.split([' ', '\t']).filter(|w| !w.is_empty());
    let (Some(first), Some(second)) = (words.next(), words.next()) else {
        return false;
    };
    let capital = |w: &str| w.starts_with(|c: char| c.is_uppercase());
    let digits = first.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let number = (1..=6).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && first.len() - digits.len() <= 1;
    // A numbered street: "3220 23rd St".
    let ordinal = |w: &str| {
        let n = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && matches!(&w[n.len()..], "st" | "nd" | "rd" | "th")
    };
    let box_line = matches!(first, "PO" | "P.O." | "P.O" | "POB") && second.starts_with("Box");
    // A day and its month look like a house number and its street ("On Friday, 7 March").
    let month = is_month_name(second.trim_end_matches([',', '.']));
    (number || matches!(first, "One" | "Two")) && (capital(second) || ordinal(second)) && !month
        || box_line
}

/// The byte length of the name `head` is, or None when it is no name: one to eight capitalized
/// words and connectors, no digits, no colon, not only generic words. A dash or a bar ends it
/// unless one word, a campus, follows ("Maine District Court - Bangor").
fn name_length(head: &str) -> Option<usize> {
    if head.contains([':', '@', '/', '(', '*', '#', '"'])
        || head.chars().any(|c| c.is_ascii_digit())
        || head.len() > 70
    {
        return None;
    }
    let words = words_at(head);
    let dash = words
        .iter()
        .position(|(_, w)| matches!(*w, "-" | "--" | "–" | "—" | "|"));
    // One word after the dash is a campus, unless it names a department ("— Laboratory").
    let campus = |w: &str| {
        let w = w.to_lowercase();
        !GENERIC.contains(&w.as_str())
            && !DOCUMENT.contains(&w.as_str())
            && !DEPARTMENTS.contains(&w.as_str())
    };
    let words = match dash {
        Some(d) if words.len() - d == 2 && campus(words[d + 1].1) => &words[..],
        Some(d) => &words[..d],
        None => &words[..],
    };
    let comma = words.iter().position(|(_, w)| w.ends_with(','));
    let words = match comma {
        Some(c) if words[c + 1..].iter().all(|(_, w)| LEGAL_FORMS.contains(w)) => words,
        Some(c) => &words[..=c],
        None => words,
    };
    let (first, last) = (words.first()?, words.last()?);
    // "Department of Imaging, 122 12th St" is a department of the letterhead above it.
    if matches!(
        first.1.to_lowercase().as_str(),
        "department" | "dept" | "dept." | "division" | "section" | "service" | "servicio"
    ) {
        return None;
    }
    // A title starts a person's line, left to the name recognizers.
    let title = TITLES.contains(&first.1.trim_end_matches('.'));
    if words.len() > 8 || title || CONNECTORS.contains(&first.1) {
        return None;
    }
    let mut named = false;
    for (_, w) in words {
        let core = w.trim_end_matches([',', '.']);
        if CONNECTORS.contains(&core) {
            continue;
        }
        if !core.starts_with(|c: char| c.is_uppercase()) {
            return None;
        }
        named |= !GENERIC.contains(&core.to_lowercase().as_str());
    }
    let end = last.0 + last.1.trim_end_matches(',').len();
    (named && !CONNECTORS.contains(&last.1)).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heads(text: &str, v: &[Span]) -> Vec<String> {
        letterheads(text, v)
            .iter()
            .map(|s| text[s.start..s.end].to_string())
            .collect()
    }

    #[test]
    fn the_line_above_a_street_names_its_organization() {
        let text = "RIVERSIDE INTERNAL MEDICINE\n415 Water Street  |  Augusta, ME 04330\n\
                    FAX TRANSMITTAL\nTRI-CITIES NEPHROLOGY, P.C.\n7115 W. Okanogan Ave\n\
                    North Shore Pulmonary & Sleep\nOne Hutchinson Place, Suite 210\n\
                    Maine District Court - Bangor\n78 Exchange St\n\
                    Valley Crest Hospital - Department of Pathology\n12 Elm Rd\n\
                    Harris County District Attorney's Office, Child Abuse Division\n1201 Franklin St";
        assert_eq!(
            heads(text, &[]),
            [
                "RIVERSIDE INTERNAL MEDICINE",
                "TRI-CITIES NEPHROLOGY, P.C.",
                "North Shore Pulmonary & Sleep",
                "Maine District Court - Bangor",
                "Valley Crest Hospital",
                "Harris County District Attorney's Office",
            ]
        );
    }

    #[test]
    fn a_numbered_street_is_a_street() {
        let text = "HEARTLAND AUDIOLOGY & HEARING AID CENTER\n3220 23rd St, Columbus, NE 68601";
        assert_eq!(
            heads(text, &[]),
            ["HEARTLAND AUDIOLOGY & HEARING AID CENTER"]
        );
        // A department of the letterhead, before its street or after its dash, is none.
        let text = "Department of Imaging, 122 12th St, Princeton\n\
                    SANFORD WORTHINGTON MEDICAL CENTER — Laboratory\n1018 6th Ave";
        assert_eq!(heads(text, &[]), ["SANFORD WORTHINGTON MEDICAL CENTER"]);
    }

    #[test]
    fn the_name_before_a_street_on_its_line_is_one_too() {
        let text = "Little Sprouts Pediatrics, 880 Riverside Pkwy Ste 110, Grand Junction";
        assert_eq!(heads(text, &[]), ["Little Sprouts Pediatrics"]);
    }

    #[test]
    fn a_title_line_names_its_organization_before_the_document() {
        let heads_of = |t: &str| heads(t, &[]);
        assert_eq!(
            heads_of("  TRI-COUNTY FIRE RESCUE — PATIENT CARE REPORT\nIncident 4471"),
            ["TRI-COUNTY FIRE RESCUE"]
        );
        assert_eq!(
            heads_of("Rosewood Lodge Care Home — Harrogate — Resident daily record\n"),
            ["Rosewood Lodge Care Home"]
        );
        assert_eq!(
            heads_of("OZARKS ALLERGY & ASTHMA - Springfield, MO    New Patient\n"),
            ["OZARKS ALLERGY & ASTHMA"]
        );
        assert!(heads_of("Primary Care - Follow-up, MO\n").is_empty());
        assert_eq!(
            heads_of("CARMEL BAY MEDICAL CENTER, HAIFA - Department of Anesthesiology\n"),
            ["CARMEL BAY MEDICAL CENTER", "HAIFA"]
        );
        let t = "DON VALLEY GENERAL HOSPITAL - 7A Neurosurgery Step-down\n";
        assert_eq!(
            heads(t, &[Span::model_at(t, "DON VALLEY", "NAME")]),
            ["DON VALLEY GENERAL HOSPITAL"]
        );
        // Departments, documents and people are not.
        assert!(heads_of("ANTICOAGULATION CLINIC - PHONE ENCOUNTER\n").is_empty());
        assert!(heads_of("PUBLIC HEALTH NURSING - HOME VISIT RECORD\n").is_empty());
        assert!(heads_of("DOT MEDICAL EXAMINATION - EXAMINER SUMMARY\n").is_empty());
        assert!(heads_of("HOME OXYGEN SAFETY - WHAT YOU NEED TO KNOW\n").is_empty());
        // A service word names a body only beside a word of the body's own name.
        assert_eq!(
            heads_of("HBF HEALTH — Hospital Cover Pre-Approval Request\n"),
            ["HBF HEALTH"]
        );
        for field in [
            "OCCUPATIONAL HEALTH - WORKERS' COMPENSATION INITIAL VISIT\n",
            "ORAL & MAXILLOFACIAL SURGERY -- PROCEDURE NOTE\n",
            "MSK Physiotherapy - telephone triage\n",
            "Parish Council – minutes of meeting\n",
        ] {
            assert!(heads_of(field).is_empty(), "{field}");
        }
        assert_eq!(
            heads_of("HOSPITAL DAS CLÍNICAS DA FMUSP -- Instituto Central\n"),
            ["HOSPITAL DAS CLÍNICAS DA FMUSP"]
        );
        // A whole line, up to its last word for a body, when more text follows.
        assert_eq!(
            heads_of("GRACE FELLOWSHIP BAPTIST CHURCH\nSunday bulletin"),
            ["GRACE FELLOWSHIP BAPTIST CHURCH"]
        );
        assert_eq!(
            heads_of("Sahyog Bank Virtual Assistant\nBot: Namaste!"),
            ["Sahyog Bank"]
        );
        assert!(heads_of("GRACE FELLOWSHIP BAPTIST CHURCH").is_empty());
        for line in [
            "POISON CENTER CASE RECORD\nCase #: 4",
            "To Summit Coast Bank Bereavement Team,\nMy mother",
            "Thoracic Surgery Progress Note\nPOD 2",
        ] {
            assert!(heads_of(line).is_empty(), "{line}");
        }
        assert_eq!(
            heads_of("SEVEN SEAS REMOVALS LTD - Shipment Confirmation\n"),
            ["SEVEN SEAS REMOVALS LTD"]
        );
        let t = "Grace Fire — fire safety talk\n";
        assert!(heads(t, &[Span::model_at(t, "Grace Fire", "NAME")]).is_empty());
    }

    #[test]
    fn offices_people_sentences_and_labels_are_not() {
        let text = "Billing Office\n12 Main St\nAttorneys at Law\n1 Financial Plaza\n\
                    Dr. Anil Rao\n22 Oak Ave\nAddress: Home\n5 Pine Rd\n\
                    She moved to the house at\n14 Birch Lane\nThandeka Mokoena\n9 Kloof St\n\
                    Tove Lindgren, RN\nCare Manager\n4 East Riverbend Health\n\
                    Suite 4, 15 Main St\nThe patient lives at 12 Elm St\n\
                    On Friday, 7 March, Year 6 will visit\nat Our Lady Parish Hall\n1875 Ridge Road\n\
                    Office of the Registrar\n4800 College Way\nFellowship Hall\n318 W Main St\n\
                    Séamus Hegarty\nLandlord\n14 Quay Road";
        let names = [Span::model_at(text, "Thandeka Mokoena", "NAME")];
        assert!(heads(text, &names).is_empty(), "{:?}", heads(text, &names));
    }
}
