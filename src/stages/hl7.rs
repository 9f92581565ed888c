//! HL7 v2 segments pasted into a note or a ticket ("PID|1||E8812046^^^EPI^MR||YOUNG^FAITH^ANNE||
//! 19620822|F|||417 W Hays St^^Boise^ID^83702"), found by the recognize stage. The standard
//! says what each field holds, so the fields that hold a person's identifiers are read by their
//! position: names (XPN) and providers (XCN) by their family, given and middle components,
//! addresses (XAD) by street, town, postcode and county (the state and country stay), phones and
//! e-mail addresses (XTN), identifiers (CX) with the kind their type code names, timestamps, and
//! the facilities that send or receive the message, hold the patient, insure them or order the
//! test. Names in capitals joined by carets are out of every other recognizer's reach.

use super::span::Span;

/// What a field holds.
#[derive(Clone, Copy)]
enum Kind {
    /// A person's name: family^given^middle^suffix^prefix.
    Name,
    /// A provider: id^family^given^middle…
    Provider,
    /// Identifiers, labelled by their type code where it names one (component 5).
    Id(&'static str),
    /// A date or a timestamp (YYYYMMDD…).
    Date,
    /// street^other^city^state^zip^country^type^other geographic^county.
    Address,
    /// Phone numbers and e-mail addresses, in any component.
    Telecom,
    /// An organization's name (component 1).
    Organization,
    /// The facility a message goes to (MSH-6): an organization unless it names a system or a
    /// department ("LAB", "HIE", "FRACTURE_CLINIC").
    Receiver,
    /// A place in a facility: point^room^bed^facility^…; the facility (component 4) names where
    /// the patient is, the ward, room and bed are codes ("4W^412^B").
    Location,
    /// Codes, values, units, ranges and message ids: what other recognizers find in them is no
    /// one's identifier ("135-175", "MSG004417", "FBC^FULL BLOOD COUNT").
    Code,
}

/// (segment, field number as the standard counts it, what it holds).
#[rustfmt::skip]
const FIELDS: &[(&str, usize, Kind)] = &[
    ("MSH", 4, Kind::Organization), ("MSH", 6, Kind::Receiver), ("MSH", 7, Kind::Date),
    ("MSH", 9, Kind::Code), ("MSH", 10, Kind::Code), ("MSH", 12, Kind::Code),
    ("EVN", 2, Kind::Date), ("EVN", 5, Kind::Provider), ("EVN", 6, Kind::Date),
    ("PID", 2, Kind::Id("MEDICAL_RECORD_NUMBER")), ("PID", 3, Kind::Id("MEDICAL_RECORD_NUMBER")),
    ("PID", 4, Kind::Id("MEDICAL_RECORD_NUMBER")), ("PID", 5, Kind::Name), ("PID", 6, Kind::Name),
    ("PID", 7, Kind::Date), ("PID", 9, Kind::Name), ("PID", 11, Kind::Address),
    ("PID", 13, Kind::Telecom), ("PID", 14, Kind::Telecom),
    ("PID", 18, Kind::Id("ACCOUNT_NUMBER")), ("PID", 19, Kind::Id("SSN")),
    ("PID", 20, Kind::Id("LICENSE_NUMBER")), ("PID", 21, Kind::Id("OTHER_IDENTIFIER")),
    ("PID", 29, Kind::Date),
    ("PD1", 3, Kind::Organization), ("PD1", 4, Kind::Provider),
    ("NK1", 2, Kind::Name), ("NK1", 4, Kind::Address), ("NK1", 5, Kind::Telecom),
    ("NK1", 6, Kind::Telecom),
    ("PV1", 7, Kind::Provider), ("PV1", 8, Kind::Provider), ("PV1", 9, Kind::Provider),
    ("PV1", 17, Kind::Provider), ("PV1", 19, Kind::Id("ACCOUNT_NUMBER")),
    ("PV1", 44, Kind::Date), ("PV1", 45, Kind::Date),
    ("ORC", 2, Kind::Id("OTHER_IDENTIFIER")), ("ORC", 3, Kind::Id("OTHER_IDENTIFIER")),
    ("ORC", 9, Kind::Date), ("ORC", 10, Kind::Provider), ("ORC", 11, Kind::Provider),
    ("ORC", 12, Kind::Provider), ("ORC", 21, Kind::Organization),
    ("OBR", 2, Kind::Id("OTHER_IDENTIFIER")), ("OBR", 3, Kind::Id("OTHER_IDENTIFIER")),
    ("OBR", 7, Kind::Date), ("OBR", 8, Kind::Date), ("OBR", 14, Kind::Date),
    ("OBR", 16, Kind::Provider), ("OBR", 22, Kind::Date), ("OBR", 28, Kind::Provider),
    ("OBR", 4, Kind::Code), ("OBX", 2, Kind::Code), ("OBX", 3, Kind::Code),
    ("OBX", 6, Kind::Code), ("OBX", 7, Kind::Code), ("OBX", 8, Kind::Code),
    ("OBX", 14, Kind::Date), ("OBX", 16, Kind::Provider), ("PV1", 2, Kind::Code),
    ("PV1", 3, Kind::Location), ("PV1", 10, Kind::Code), ("AIL", 3, Kind::Location),
    ("IN1", 4, Kind::Organization), ("IN1", 8, Kind::Id("HEALTH_PLAN_NUMBER")),
    ("IN1", 16, Kind::Name), ("IN1", 18, Kind::Date), ("IN1", 19, Kind::Address),
    ("IN1", 36, Kind::Id("HEALTH_PLAN_NUMBER")), ("IN1", 49, Kind::Id("HEALTH_PLAN_NUMBER")),
    ("GT1", 3, Kind::Name), ("GT1", 5, Kind::Address), ("GT1", 6, Kind::Telecom),
    ("GT1", 7, Kind::Telecom), ("GT1", 8, Kind::Date), ("GT1", 12, Kind::Id("SSN")),
    ("AIP", 3, Kind::Provider),
    ("TXA", 4, Kind::Date), ("TXA", 5, Kind::Provider), ("TXA", 6, Kind::Date),
    ("TXA", 7, Kind::Date), ("TXA", 9, Kind::Provider), ("TXA", 10, Kind::Provider),
    ("TXA", 11, Kind::Provider), ("TXA", 22, Kind::Provider),
];

/// Identifier type codes (CX component 5) of a facility's own numbers: the assigning authority
/// (component 4) is the facility's code ("0004418893^^^SMH^MR").
const FACILITY_TYPES: &[&str] = &["MR", "MRN", "PI", "PN", "PT", "VN", "AN"];

/// Assigning authorities that are record systems or nations, no facility.
const NOT_FACILITIES: &[&str] = &[
    "EPIC",
    "EPI",
    "CERNER",
    "MEDITECH",
    "ALLSCRIPTS",
    "NHS",
    "HL7",
    "LAB",
    "LIS",
    "RIS",
    "PAS",
];

/// Words of a receiving application or department (MSH-6), no facility: a receiver with one
/// of them among its parts ("FRACTURE_CLINIC", "CLINIC_SCHED") is a system.
#[rustfmt::skip]
const SYSTEM_WORDS: &[&str] = &[
    "LAB", "LABS", "LABSYS", "EHR", "EMR", "HIS", "HIE", "RIS", "PACS", "MOH", "DOH", "CDC",
    "RADIOLOGY", "PHARMACY", "CLINIC", "SCHED", "BILLING", "REGISTRY", "IIS", "RECV", "ADT",
];

/// Identifier type codes (CX component 5) that name another kind than the field's.
const ID_TYPES: &[(&str, &str)] = &[
    ("NH", "HEALTH_PLAN_NUMBER"),
    ("JHN", "HEALTH_PLAN_NUMBER"),
    ("MC", "HEALTH_PLAN_NUMBER"),
    ("MA", "HEALTH_PLAN_NUMBER"),
    ("SS", "SSN"),
    ("DL", "LICENSE_NUMBER"),
    ("PPN", "LICENSE_NUMBER"),
    ("AN", "ACCOUNT_NUMBER"),
    ("VN", "ACCOUNT_NUMBER"),
];

const SCORE: f32 = 0.9;

/// The pattern name of every span read from a segment's fields.
pub const PATTERN: &str = "hl7_field";

/// What the HL7 v2 segments of a text hold.
#[derive(Default)]
pub struct Segments {
    /// Identifiers (byte offsets, sorted).
    pub found: Vec<Span>,
    /// Fields that hold codes and values, no identifier (byte ranges).
    pub codes: Vec<(usize, usize)>,
}

/// Reads the HL7 v2 segments of `text`.
pub fn hl7_fields(text: &str) -> Segments {
    let mut out = Segments::default();
    if !text.contains('|') {
        return out;
    }
    let mut start = 0;
    for line in text.split_inclusive(['\n', '\r']) {
        let body = line.trim_end_matches(['\n', '\r']);
        segment_fields(body, start, &mut out);
        start += line.len();
    }
    out
}

/// The name opening a line shaped like a segment ("PID" in "PID|1||…"): three capitals or
/// digits, then a bar.
pub fn segment_name(line: &str) -> Option<&str> {
    let name = line.get(..3)?;
    (line.as_bytes().get(3) == Some(&b'|')
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()))
    .then_some(name)
}

/// One segment's identifiers; `at` is the segment's offset in the text.
fn segment_fields(segment: &str, at: usize, out: &mut Segments) {
    let Some(name) = segment_name(segment)
        .filter(|n| n.starts_with(|c: char| c.is_ascii_uppercase()))
        .filter(|n| FIELDS.iter().any(|(s, _, _)| s == n))
    else {
        return;
    };
    // MSH-1 is the field separator itself, so MSH's fields are one place to the left.
    let shift = usize::from(name == "MSH");
    let mut offset = at;
    for (i, field) in segment.split('|').enumerate() {
        let number = i + shift;
        if i > 0
            && let Some((_, _, kind)) = FIELDS.iter().find(|(s, n, _)| *s == name && *n == number)
        {
            match kind {
                Kind::Code => out.codes.push((offset, offset + field.len())),
                Kind::Location => place_field(field, offset, out),
                _ => {
                    let mut rep_at = offset;
                    for repetition in field.split('~') {
                        read_field(repetition, rep_at, *kind, &mut out.found);
                        rep_at += repetition.len() + 1;
                    }
                }
            }
        }
        offset += field.len() + 1;
    }
}

/// The components of one repetition with their offsets.
fn components(value: &str, at: usize) -> Vec<(usize, &str)> {
    let mut offset = at;
    value
        .split('^')
        .map(|c| {
            let here = offset;
            offset += c.len() + 1;
            (here, c)
        })
        .collect()
}

fn read_field(value: &str, at: usize, kind: Kind, out: &mut Vec<Span>) {
    let parts = components(value, at);
    let push = |out: &mut Vec<Span>, (start, c): (usize, &str), label: &str| {
        if !c.trim().is_empty() {
            out.push(Span::pattern(start, start + c.len(), label, SCORE, PATTERN));
        }
    };
    match kind {
        Kind::Name => name_span(&parts, 0, out),
        Kind::Provider => {
            if let Some(&id) = parts.first()
                && id.1.bytes().any(|b| b.is_ascii_alphanumeric())
                && parts.len() > 1
            {
                push(out, id, "OTHER_IDENTIFIER");
            } else if parts.len() == 1 {
                // An operator's user name alone ("jsmith4").
                push(out, parts[0], "NAME");
            }
            name_span(&parts, 1, out);
        }
        Kind::Id(label) => {
            let Some(&id) = parts.first() else {
                return;
            };
            if !id.1.bytes().any(|b| b.is_ascii_digit()) || id.1.len() < 3 {
                return;
            }
            let id_type = parts.get(4).map_or("", |(_, t)| *t);
            let typed = ID_TYPES
                .iter()
                .find(|(code, _)| *code == id_type)
                .map_or(label, |(_, l)| l);
            push(out, id, typed);
            if FACILITY_TYPES.contains(&id_type)
                && let Some(&authority) = parts.get(3)
                && !NOT_FACILITIES.contains(&authority.1)
            {
                push(out, authority, "LOCATION");
            }
        }
        Kind::Date => {
            if let Some(&d) = parts.first() {
                let digits = d.1.bytes().take_while(u8::is_ascii_digit).count();
                if digits >= 8 && (d.1.starts_with("19") || d.1.starts_with("20")) {
                    push(out, d, "DATE");
                }
            }
        }
        Kind::Address => {
            for (n, label) in [
                (0, "STREET_ADDRESS"),
                (1, "STREET_ADDRESS"),
                (2, "CITY"),
                (4, "ZIP_CODE"),
                (8, "CITY"),
            ] {
                if let Some(&c) = parts.get(n) {
                    push(out, c, label);
                }
            }
        }
        Kind::Telecom => {
            for &c in &parts {
                if c.1.contains('@') {
                    push(out, c, "EMAIL");
                } else if c.1.bytes().filter(u8::is_ascii_digit).count() >= 6 {
                    push(out, c, "PHONE");
                }
            }
        }
        Kind::Code | Kind::Location => {}
        Kind::Receiver => {
            if let Some(&c) = parts.first()
                && c.1.len() >= 3
                && c.1.chars().any(char::is_alphabetic)
                && !NOT_FACILITIES.contains(&c.1)
                && !c
                    .1
                    .split(['_', ' ', '-'])
                    .any(|w| SYSTEM_WORDS.contains(&w))
            {
                push(out, c, "LOCATION");
            }
        }
        Kind::Organization => {
            if let Some(&c) = parts.first()
                && c.1.chars().any(char::is_alphabetic)
            {
                push(out, c, "LOCATION");
            }
        }
    }
}

/// A place in a facility (PL, each repetition): the facility (component 4) is a LOCATION, what
/// stands before and after it is a code.
fn place_field(field: &str, at: usize, out: &mut Segments) {
    let mut rep_at = at;
    for repetition in field.split('~') {
        let end = rep_at + repetition.len();
        let facility = components(repetition, rep_at)
            .get(3)
            .copied()
            .filter(|(_, c)| c.chars().any(char::is_alphabetic) && !NOT_FACILITIES.contains(c));
        match facility {
            Some((start, c)) => {
                let stop = start + c.len();
                out.found
                    .push(Span::pattern(start, stop, "LOCATION", SCORE, PATTERN));
                out.codes.push((rep_at, start));
                out.codes.push((stop, end));
            }
            None => out.codes.push((rep_at, end)),
        }
        rep_at = end + 1;
    }
}

/// The name in components `from` (family), `from + 1` (given) and `from + 2` (middle), as one
/// span from the family name to the last of them written.
fn name_span(parts: &[(usize, &str)], from: usize, out: &mut Vec<Span>) {
    let Some(&(start, family)) = parts.get(from) else {
        return;
    };
    let is_name = |c: &str| {
        c.chars().any(char::is_alphabetic)
            && c.chars()
                .all(|ch| ch.is_alphabetic() || matches!(ch, ' ' | '-' | '\'' | '’' | '.'))
    };
    if !is_name(family) {
        return;
    }
    let mut end = start + family.len();
    for &(at, c) in parts.iter().skip(from + 1).take(2) {
        if c.is_empty() {
            continue;
        }
        if !is_name(c) {
            break;
        }
        end = at + c.len();
    }
    out.push(Span::pattern(start, end, "NAME", SCORE, PATTERN));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, String)> {
        hl7_fields(text)
            .found
            .into_iter()
            .map(|s| (text[s.start..s.end].to_string(), s.label.to_string()))
            .collect()
    }

    #[test]
    fn reads_a_patient_by_field_position() {
        let msg = "MSH|^~\\&|ADT1|STLUKESBOISE|LAB|LAB|20240417093015||ADT^A01|MSG0001|P|2.5\r\
PID|1||E8812046^^^SLB^MR~9449305552^^^NHS^NH||YOUNG^FAITH^ANNE||19620822|F|||417 W Hays St^^Boise^ID^83702||(208)555-0139^PRN^PH~^NET^Internet^faith@example.org|||M||400118827391|518-44-9021\n\
PV1|1|I|4W^412^B||||1720384456^ROSSI^ANGELA^M^^^^MD|||MED";
        let got = found(msg);
        for want in [
            ("STLUKESBOISE", "LOCATION"),
            ("20240417093015", "DATE"),
            ("E8812046", "MEDICAL_RECORD_NUMBER"),
            ("9449305552", "HEALTH_PLAN_NUMBER"),
            ("YOUNG^FAITH^ANNE", "NAME"),
            ("19620822", "DATE"),
            ("417 W Hays St", "STREET_ADDRESS"),
            ("Boise", "CITY"),
            ("83702", "ZIP_CODE"),
            ("(208)555-0139", "PHONE"),
            ("faith@example.org", "EMAIL"),
            ("400118827391", "ACCOUNT_NUMBER"),
            ("518-44-9021", "SSN"),
            ("ROSSI^ANGELA^M", "NAME"),
            ("STLUKESBOISE", "LOCATION"),
        ] {
            let want = (want.0.to_string(), want.1.to_string());
            assert!(got.contains(&want), "{want:?} in {got:?}");
        }
        // The state, the sex, the message type and the ward stay.
        for kept in ["ID", "F", "ADT^A01", "4W^412^B", "MED", "LAB"] {
            assert!(!got.iter().any(|(t, _)| t == kept), "{kept} in {got:?}");
        }
    }

    #[test]
    fn receiving_facilities_and_a_location_s_facility_are_places() {
        let msg = "MSH|^~\\&|LAB|SJH|EHR|WESTMICH_HEALTH|20240611143205||ORU^R01|LAB0611|P|2.5.1\n\
PV1|1|O|3W^312^A^NWMC||||1457392854^OKAFOR^CHIDI\n\
AIL|1|A|EXAM3^^^TVH FOOTHILLS CLINIC\n\
MSH|^~\\&|CERNER|SMH|CLINSCHED|FRACTURE_CLINIC|20240212101144||SIU^S12|00092417|P|2.3";
        let got = found(msg);
        for want in [
            "SJH",
            "WESTMICH_HEALTH",
            "NWMC",
            "TVH FOOTHILLS CLINIC",
            "SMH",
        ] {
            let want = (want.to_string(), "LOCATION".to_string());
            assert!(got.contains(&want), "{want:?} in {got:?}");
        }
        // A receiving system or department stays, and the ward, room and bed are codes.
        for kept in ["EHR", "FRACTURE_CLINIC", "3W", "312", "EXAM3"] {
            assert!(!got.iter().any(|(t, _)| t == kept), "{kept} in {got:?}");
        }
        let segments = hl7_fields(msg);
        let codes: Vec<&str> = segments.codes.iter().map(|&(a, b)| &msg[a..b]).collect();
        assert!(codes.contains(&"3W^312^A^"), "{codes:?}");
    }

    #[test]
    fn ignores_pipes_that_are_no_segment() {
        for text in [
            "| name | town |\n|------|------|\n| Ann | Hull |",
            "PIDX|1||YOUNG^FAITH",
            "ZZZ|1|YOUNG^FAITH",
        ] {
            assert!(found(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn codes_values_and_message_ids_are_no_identifiers() {
        let msg = "MSH|^~\\&|LIS|NUH|NEHR|MOH|20240228081133||ORU^R01|LIS0228-00417|P|2.5\n\
OBX|1|NM|718-7^Haemoglobin^LN||98|g/L|135-175|L|||F";
        let segments = hl7_fields(msg);
        let codes: Vec<&str> = segments.codes.iter().map(|&(a, b)| &msg[a..b]).collect();
        for code in [
            "ORU^R01",
            "LIS0228-00417",
            "718-7^Haemoglobin^LN",
            "g/L",
            "135-175",
        ] {
            assert!(codes.contains(&code), "{code} in {codes:?}");
        }
        assert!(
            !codes.contains(&"98"),
            "an observation's value is read by the others"
        );
    }
}
