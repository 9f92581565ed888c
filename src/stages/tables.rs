//! Tables pasted as delimited rows (CSV, semicolons, tabs, pipes or Markdown), found by the
//! recognize stage: under a header line that names its columns ("name,dob,town,clinic,mrn",
//! "Surname | Given | DOB | Medicare No | Suburb"), every cell of a column that holds an identifier
//! is one, whatever it looks like. A surname in capitals, a suburb in no gazetteer or a practice
//! without a head word ("Beaverton Geriatrics") are out of reach one by one; the header says
//! what they are.
//!
//! A column's kind comes from the words of its header. Strong kinds (e-mail, phone, date,
//! identifier, postcode, street, town) win over words that make a column no one's ("test_date"
//! is a date); names and organizations lose to them ("patient_age", "clinic_code" are not). A
//! row with more cells than its header has an unquoted comma and a space in a name column
//! ("Wood, Patience NP"): the cells before that column are read from the left, those after it
//! from the right.

use super::span::Span;

/// What a column holds.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Column {
    Email,
    Phone,
    Date,
    /// An identifier, with its label.
    Id(&'static str),
    Postcode,
    Street,
    Town,
    Organization,
    Name,
}

/// Header words of identifier columns, by kind: e-mail, phone, postcode, identifier, date,
/// street, town, organization, name, in that order. A header naming an identifier ("hosp_no",
/// "visit no", "nhi") is one even when another word names a person or a date.
#[rustfmt::skip]
const EMAIL_WORDS: &[&str] = &["email", "e-mail", "mail"];
#[rustfmt::skip]
const PHONE_WORDS: &[&str] = &[
    "phone", "mobile", "mob", "tel", "telephone", "cell", "fax", "whatsapp", "landline", "ph",
];
#[rustfmt::skip]
const DATE_WORDS: &[&str] = &[
    "dob", "d.o.b", "date", "birth", "born", "birthday", "admitted", "admission", "discharged",
    "discharge", "collected", "visit", "dod", "death", "seen", "received", "booked",
];
/// Words that make a column an identifier's, and the label they give (None: the column's other
/// words decide).
#[rustfmt::skip]
const ID_WORDS: &[(&str, Option<&str>)] = &[
    ("id", None), ("no", None), ("no.", None), ("num", None), ("number", None), ("#", None),
    ("ref", None), ("reference", None), ("mrn", Some("MEDICAL_RECORD_NUMBER")),
    ("uhid", Some("MEDICAL_RECORD_NUMBER")), ("ur", Some("MEDICAL_RECORD_NUMBER")),
    ("nhi", Some("HEALTH_PLAN_NUMBER")), ("nhs", Some("HEALTH_PLAN_NUMBER")),
    ("medicare", Some("HEALTH_PLAN_NUMBER")), ("medicaid", Some("HEALTH_PLAN_NUMBER")),
    ("chi", Some("HEALTH_PLAN_NUMBER")), ("ihi", Some("HEALTH_PLAN_NUMBER")),
    ("ohip", Some("HEALTH_PLAN_NUMBER")), ("phn", Some("HEALTH_PLAN_NUMBER")),
    ("hcn", Some("HEALTH_PLAN_NUMBER")), ("policy", Some("HEALTH_PLAN_NUMBER")),
    ("ssn", Some("SSN")), ("sin", Some("SSN")), ("nric", Some("SSN")), ("ppsn", Some("SSN")),
    ("aadhaar", Some("SSN")), ("aadhar", Some("SSN")), ("nino", Some("SSN")),
    ("tfn", Some("SSN")), ("pesel", Some("SSN")), ("cpf", Some("SSN")), ("dni", Some("SSN")),
    ("curp", Some("SSN")), ("abha", Some("HEALTH_PLAN_NUMBER")),
    ("account", Some("ACCOUNT_NUMBER")), ("acct", Some("ACCOUNT_NUMBER")),
    ("iban", Some("ACCOUNT_NUMBER")), ("passport", Some("LICENSE_NUMBER")),
    ("licence", Some("LICENSE_NUMBER")), ("license", Some("LICENSE_NUMBER")),
    ("plate", Some("VEHICLE_ID")), ("rego", Some("VEHICLE_ID")), ("vin", Some("VEHICLE_ID")),
    ("ip", Some("IP_ADDRESS")),
];
/// The label an id column's other words give it ("hosp_no", "nhs_no", "member id").
#[rustfmt::skip]
const ID_KINDS: &[(&str, &str)] = &[
    ("hosp", "MEDICAL_RECORD_NUMBER"), ("hospital", "MEDICAL_RECORD_NUMBER"),
    ("record", "MEDICAL_RECORD_NUMBER"), ("chart", "MEDICAL_RECORD_NUMBER"),
    ("patient", "MEDICAL_RECORD_NUMBER"), ("member", "HEALTH_PLAN_NUMBER"),
    ("insurance", "HEALTH_PLAN_NUMBER"), ("plan", "HEALTH_PLAN_NUMBER"),
    ("billing", "ACCOUNT_NUMBER"), ("invoice", "ACCOUNT_NUMBER"),
];
const POSTCODE_WORDS: &[&str] = &[
    "postcode", "zip", "zipcode", "pin", "pincode", "eircode", "postal",
];
const STREET_WORDS: &[&str] = &["address", "addr", "street", "road"];
#[rustfmt::skip]
const TOWN_WORDS: &[&str] = &[
    "town", "city", "village", "suburb", "locality", "taluk", "tehsil", "county", "neighbourhood",
    "neighborhood", "barangay", "brgy", "municipality", "birthplace", "hometown", "residence",
];
#[rustfmt::skip]
const ORGANIZATION_WORDS: &[&str] = &[
    "clinic", "practice", "hospital", "school", "employer", "company", "facility", "pharmacy",
    "surgery", "site", "workplace", "organisation", "organization", "church", "referred",
    "location", "venue", "branch", "store", "shop", "agency", "insurer", "nursery", "daycare",
    "college", "university",
];
#[rustfmt::skip]
const NAME_WORDS: &[&str] = &[
    "name", "patient", "surname", "forename", "firstname", "lastname", "first", "last", "given",
    "family", "fullname", "consultant", "doctor", "dr", "gp", "clinician", "physician",
    "provider", "mother", "father", "husband", "wife", "guardian", "nok", "kin", "parent",
    "spouse", "carer", "caregiver", "nurse", "midwife", "owner", "employee", "tenant",
    "student", "attendee", "customer", "client", "applicant", "referrer", "child", "contact",
    "manager", "supervisor", "teacher", "staff", "username", "handle", "witness",
];
/// Words of columns that hold no one's identifier, unless a strong kind's word is there too.
#[rustfmt::skip]
const NOT_IDENTIFIER_WORDS: &[&str] = &[
    "sex", "gender", "age", "result", "results", "units", "unit", "test", "flag", "bp",
    "diagnosis", "dx", "status", "dose", "drug", "medication", "med", "meds", "qty", "quantity",
    "price", "amount", "cost", "notes", "note", "comment", "comments", "due", "type", "code",
    "ward", "bed", "room", "state", "country", "language", "religion", "ethnicity", "occupation",
    "relationship", "relation", "specialty", "speciality", "service", "department", "dept",
    "reason", "outcome", "time",
];

/// Words of columns that are never anyone's: reference ranges and units.
const NEVER_WORDS: &[&str] = &["range", "normal", "interval", "limits", "units", "unit"];

/// Titles before a name in a cell ("DR A SHARMA", "Late Ramaiah").
const TITLES: &[&str] = &[
    "dr", "dr.", "mr", "mr.", "mrs", "mrs.", "ms", "ms.", "prof", "late",
];

/// Cell values that say nothing is there.
const EMPTY_VALUES: &[&str] = &["-", "—", "n/a", "na", "none", "nil", "unknown", "?", "tbc"];

/// The identifiers in the tables of `text` (byte offsets, sorted).
pub fn table_cells(text: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let lines: Vec<(usize, &str)> = text
        .split_inclusive('\n')
        .scan(0, |at, line| {
            let start = *at;
            *at += line.len();
            Some((start, line.trim_end_matches(['\n', '\r'])))
        })
        .collect();
    let mut i = 0;
    while i < lines.len() {
        let Some((delimiter, columns)) = header(lines[i].1) else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while let Some(&(at, line)) = lines.get(j) {
            let row = cells(line, delimiter);
            if row.iter().all(|&(a, b)| is_rule(&line[a..b])) && !line.trim().is_empty() {
                j += 1;
                continue;
            }
            if !read_row(line, at, &row, &columns, &mut out) {
                break;
            }
            j += 1;
        }
        i = j.max(i + 1);
    }
    out
}

/// Whether a cell is a Markdown table's rule ("---", ":--:").
fn is_rule(cell: &str) -> bool {
    let c = cell.trim().trim_matches(':');
    c.len() >= 2 && c.bytes().all(|b| b == b'-')
}

/// The delimiter and the columns' kinds of a header line: three cells or more, each a short
/// label, one at least naming an identifier.
fn header(line: &str) -> Option<(char, Vec<Option<Column>>)> {
    for delimiter in ['|', '\t', ';', ','] {
        if !line.contains(delimiter) {
            continue;
        }
        let row = cells(line, delimiter);
        if row.len() < 3 {
            continue;
        }
        let labels: Vec<&str> = row.iter().map(|&(a, b)| line[a..b].trim()).collect();
        if !labels.iter().all(|l| is_label(l)) {
            continue;
        }
        let columns: Vec<Option<Column>> = labels.iter().map(|l| column(l)).collect();
        // Two identifier columns: one word of a kind may be a town's or a hospital's name in an
        // address line ("Willow Surgical Hospital, Tucson, AZ").
        if columns.iter().filter(|c| c.is_some()).count() >= 2 {
            return Some((delimiter, columns));
        }
    }
    None
}

/// A column's label: short, starting with a letter or '#', no sentence punctuation.
fn is_label(label: &str) -> bool {
    let label = label.trim_matches('"');
    (1..=40).contains(&label.len())
        && label.split_whitespace().count() <= 5
        && label.starts_with(|c: char| c.is_alphabetic() || c == '#')
        && label.chars().all(|c| {
            c.is_alphanumeric() || matches!(c, ' ' | '_' | '-' | '.' | '#' | '/' | '(' | ')')
        })
}

/// A column's kind from its label's words.
fn column(label: &str) -> Option<Column> {
    let lower = label.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '#' | '.' | '-')))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| !w.is_empty())
        .collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(w));
    if has(NEVER_WORDS) {
        return None;
    }
    if has(EMAIL_WORDS) {
        return Some(Column::Email);
    }
    if has(PHONE_WORDS) {
        return Some(Column::Phone);
    }
    if has(POSTCODE_WORDS) {
        return Some(Column::Postcode);
    }
    let id_word = words
        .iter()
        .find_map(|w| ID_WORDS.iter().find(|(k, _)| k == w));
    if let Some((_, label)) = id_word {
        let label = label.or_else(|| {
            words
                .iter()
                .find_map(|w| ID_KINDS.iter().find(|(k, _)| k == w).map(|(_, l)| *l))
        });
        return Some(Column::Id(label.unwrap_or("OTHER_IDENTIFIER")));
    }
    if has(DATE_WORDS) {
        return Some(Column::Date);
    }
    if has(STREET_WORDS) {
        return Some(Column::Street);
    }
    if has(TOWN_WORDS) {
        return Some(Column::Town);
    }
    if has(NOT_IDENTIFIER_WORDS) {
        return None;
    }
    if has(ORGANIZATION_WORDS) {
        return Some(Column::Organization);
    }
    has(NAME_WORDS).then_some(Column::Name)
}

/// The cells of a line (byte ranges, quotes included), a Markdown row's outer pipes left out.
/// Commas and semicolons inside double quotes belong to their cell.
fn cells(line: &str, delimiter: char) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut from, mut to) = (0, line.len());
    if delimiter == '|' {
        let trimmed_start = line.len() - line.trim_start().len();
        if line[trimmed_start..].starts_with('|') {
            from = trimmed_start + 1;
        }
        let trimmed_end = line.trim_end().len();
        if trimmed_end > from && line[..trimmed_end].ends_with('|') {
            to = trimmed_end - 1;
        }
    }
    let mut start = from;
    let mut quoted = false;
    for (i, c) in line[from..to].char_indices() {
        let i = from + i;
        if c == '"' && delimiter != '|' {
            quoted = !quoted;
        } else if c == delimiter && !quoted {
            out.push((start, i));
            start = i + 1;
        }
    }
    out.push((start, to));
    out
}

/// Marks the identifier cells of one row; false when the line is no row of this table.
fn read_row(
    line: &str,
    at: usize,
    row: &[(usize, usize)],
    columns: &[Option<Column>],
    out: &mut Vec<Span>,
) -> bool {
    let n = columns.len();
    if line.trim().is_empty() || row.len() < n {
        return false;
    }
    // Cells for each column: one, or (the first name column of a row with extra cells) several.
    // The comma of "Wood, Patience" is followed by a space; a delimiter is not.
    let extra = row.len().saturating_sub(n);
    let spread = (0..n).find(|&k| {
        columns[k] == Some(Column::Name)
            && (1..=extra).all(|e| {
                row.get(k + e)
                    .is_some_and(|&(a, _)| line[a..].starts_with(' '))
            })
    });
    if extra > 0 && spread.is_none() {
        return false;
    }
    for (k, column) in columns.iter().enumerate() {
        let Some(column) = column else {
            continue;
        };
        let (first, last) = match spread {
            Some(s) if extra > 0 && k == s => (k, k + extra),
            Some(s) if extra > 0 && k > s => (k + extra, k + extra),
            _ => (k, k),
        };
        let (Some(&(a, _)), Some(&(_, b))) = (row.get(first), row.get(last)) else {
            continue;
        };
        if let Some((s, e)) = value(&line[a..b], *column) {
            out.push(Span::pattern(
                at + a + s,
                at + a + e,
                label(*column),
                0.75,
                "table_column",
            ));
        }
    }
    true
}

/// The byte range of a cell's value inside it, if it holds one of its column's kind.
fn value(cell: &str, column: Column) -> Option<(usize, usize)> {
    let trimmed = cell.trim();
    let lead = cell.len() - cell.trim_start().len();
    let unquoted = trimmed
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(trimmed);
    let start = lead + (trimmed.len() - unquoted.len()) / 2;
    let v = unquoted.trim();
    let start = start + (unquoted.len() - unquoted.trim_start().len());
    if v.is_empty() || v.starts_with('(') || EMPTY_VALUES.iter().any(|e| e.eq_ignore_ascii_case(v))
    {
        return None;
    }
    // A title before a name stays ("DR A SHARMA" is "A SHARMA").
    let (start, v) = match v.split_once(' ') {
        Some((title, rest))
            if column == Column::Name && TITLES.iter().any(|t| t.eq_ignore_ascii_case(title)) =>
        {
            (start + v.len() - rest.trim_start().len(), rest.trim_start())
        }
        _ => (start, v),
    };
    let digits = v.bytes().filter(u8::is_ascii_digit).count();
    let letters = v.chars().any(char::is_alphabetic);
    let fits = match column {
        Column::Email => v.contains('@'),
        Column::Phone => digits >= 6,
        Column::Date => digits >= 3 || letters && v.len() >= 5,
        Column::Id(_) => digits >= 1 && v.len() >= 3,
        Column::Postcode => digits >= 2,
        Column::Street => letters,
        // "freelance", "none": a word in lower case is no organization's name.
        Column::Organization => letters && digits == 0 && v.chars().any(char::is_uppercase),
        Column::Town | Column::Name => letters && digits == 0,
    };
    fits.then_some((start, start + v.len()))
}

fn label(column: Column) -> &'static str {
    match column {
        Column::Email => "EMAIL",
        Column::Phone => "PHONE",
        Column::Date => "DATE",
        Column::Id(label) => label,
        Column::Postcode => "ZIP_CODE",
        Column::Street => "STREET_ADDRESS",
        Column::Town => "CITY",
        Column::Organization => "LOCATION",
        Column::Name => "NAME",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, String)> {
        table_cells(text)
            .into_iter()
            .map(|s| (text[s.start..s.end].to_string(), s.label.to_string()))
            .collect()
    }

    fn has(got: &[(String, String)], value: &str, label: &str) -> bool {
        got.contains(&(value.to_string(), label.to_string()))
    }

    #[test]
    fn csv_with_quoted_names() {
        let got = found(
            "Clinic list\nname,dob,town,clinic,mrn,phone,sex,result\n\
             \"Okonkwo, Blessing\",1990-03-17,Enfield,Lea Valley Diabetes Clinic,ENF0042761,020 7946 0033,F,7.1\n\
             \"Summer Field\",2004-05-21,Ponders End,-,ENF0066305,,F,6.0\n\nThanks, Ann",
        );
        for (v, l) in [
            ("Okonkwo, Blessing", "NAME"),
            ("1990-03-17", "DATE"),
            ("Enfield", "CITY"),
            ("Lea Valley Diabetes Clinic", "LOCATION"),
            ("ENF0042761", "MEDICAL_RECORD_NUMBER"),
            ("020 7946 0033", "PHONE"),
            ("Summer Field", "NAME"),
            ("Ponders End", "CITY"),
        ] {
            assert!(has(&got, v, l), "{v} {l} in {got:?}");
        }
        // Sex, results, a dash and the text after the table stay.
        assert_eq!(got.len(), 10, "{got:?}");
    }

    #[test]
    fn pipes_markdown_and_header_words() {
        let got = found(
            "| Surname | Given | DOB | Medicare No | Suburb | Postcode | Due | Consultant |\n\
             |---|---|---|---|---|---|---|---|\n\
             | NGUYEN | Summer | 19/02/2020 | 2288 40917 1 | Mulwala | 2647 | 4yo DTPa-IPV | DR  A SHARMA |\n",
        );
        for (v, l) in [
            ("NGUYEN", "NAME"),
            ("Summer", "NAME"),
            ("19/02/2020", "DATE"),
            ("2288 40917 1", "HEALTH_PLAN_NUMBER"),
            ("Mulwala", "CITY"),
            ("2647", "ZIP_CODE"),
            ("A SHARMA", "NAME"),
        ] {
            assert!(has(&got, v, l), "{v} {l} in {got:?}");
        }
        assert_eq!(got.len(), 7, "{got:?}");
    }

    #[test]
    fn an_unquoted_comma_in_a_name_shifts_the_cells_after_it() {
        let got = found(
            "appt_id,patient_name,provider,location\nA-558120,Grace Hall,Wood, Patience NP,Hillsboro Primary Care\n",
        );
        assert!(has(&got, "A-558120", "OTHER_IDENTIFIER"), "{got:?}");
        assert!(has(&got, "Grace Hall", "NAME"), "{got:?}");
        assert!(has(&got, "Hillsboro Primary Care", "LOCATION"), "{got:?}");
    }

    #[test]
    fn prose_and_tables_of_no_one_are_left() {
        for text in [
            "We spoke about name, address and phone.\nShe agreed.",
            "test,result,units,flag\nHbA1c,71,mmol/mol,H\n",
            "Apples, oranges, pears\nJohn, Mary, Peter\n",
            "Willow Surgical Hospital, Tucson, AZ\nPt: Cook, Everett J.   MRN: DW-310447\n",
            "Test | 10/12 | 10/13 | Ref range\nSodium | 142 | 145 | 135-145 mmol/L\n",
        ] {
            assert!(found(text).is_empty(), "{text}");
        }
    }
}
