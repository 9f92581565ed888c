//! Localities written between the parts of an address line, found by the recognize stage after
//! the recognizers: "No. 7/12, Kamarajar Salai, Saidapet, Chennai - 600015", "Address:
//! Knockanira, Inch, Ennis, Co. Clare", "Wilton, Cork  T12 DC4A". Suburbs, townlands and villages
//! are in no gazetteer, but a field of capitalized words chained by commas to a street, a postcode
//! or a town is part of the same address, and left standing it says where the person lives.
//!
//! A line is read as fields: spans, and the text between them cut at separators (commas,
//! semicolons, bars, dashes between spaces, runs of spaces). A chain is a run of fields joined by
//! separators; a colon or any other text ends it. The unmarked fields of a chain become towns
//! when the chain holds a street, a unit or a postcode, follows an address label ("Residence:"),
//! holds two places, or is the whole line with one town in it. States, countries, field labels
//! and the words of a department or a ward never do, and an ordinary word only does between an
//! address part and another (`Wilton, Cork  T12 DC4A`), not at a chain's open end, where a
//! table's next column or a heading may stand. The last field after a town is its province
//! ("Bacoor, Cavite") and stays. HL7 segments are read by their fields (`hl7`), not here.

use super::span::{Source, Span};
use super::structure::is_country;
use crate::deid::canonical_label;
use crate::deid::surrogates::is_us_state;

/// Words before a colon that open an address.
#[rustfmt::skip]
const ADDRESS_LABELS: &[&str] = &[
    "address", "addr", "home", "residence", "resides", "domicile", "locality", "village", "town",
    "suburb", "barangay", "brgy", "mailing",
];

/// Words (any case) of fields, titles, departments and parts of a building, never a town's.
#[rustfmt::skip]
const NOT_LOCALITIES: &[&str] = &[
    "tel", "telephone", "phone", "ph", "fax", "email", "e-mail", "web", "mob", "mobile", "re",
    "attn", "dear", "ref", "date", "dob", "name", "no", "department", "dept", "division", "unit",
    "ward", "clinic", "hospital", "outpatients", "inpatients", "service", "services", "floor",
    "level", "building", "block", "wing", "tower", "room", "rm", "bed", "bay", "cot", "suite",
    "office", "reception", "private", "confidential", "urgent", "patient", "female", "male",
    "married", "single", "widowed", "esq", "jr", "sr", "eircode", "postcode", "zip", "pin",
    "licence", "license", "registrar", "notes", "note", "report",
];

/// Lower-case words inside a town's name ("Isle of Lewis", "Baile na hAbhann", "Stoke upon Trent").
const PARTICLES: &[&str] = &[
    "of", "on", "upon", "de", "del", "la", "le", "na", "an", "am", "im", "sur", "di", "da", "do",
    "dos", "das", "van", "von", "der", "y",
];

/// Longest field, in bytes, that can be a town.
const MAX_FIELD: usize = 48;

/// A field of a line: a span, or the text between two separators.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Field {
    /// A street, a unit or a building number.
    Street,
    /// A postcode: written right before or after its town ("Navi Mumbai 400703", "50134
    /// Firenze").
    Postcode,
    /// A town, a county or a named place.
    Place,
    /// A state, a country or a numbered part ("Sector 17"): neither an anchor nor a town.
    Neutral,
    /// Unmarked capitalized words (byte range): a town if the chain says so.
    Candidate(usize, usize),
    /// Anything else: it ends the chain.
    Other,
}

/// A line read left to right.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Token {
    Field(Field),
    Separator,
    /// A colon; `true` after an address label.
    Colon(bool),
}

/// Towns to add as CITY spans (byte offsets, sorted). `v` is sorted, disjoint and has its
/// countries labelled; `ordinary(field)` says every word of a field is an ordinary word.
pub fn address_localities(text: &str, v: &[Span], ordinary: impl Fn(&str) -> bool) -> Vec<Span> {
    let mut out = Vec::new();
    let mut line_start = 0;
    let mut next = 0;
    for line in text.split_inclusive('\n') {
        let line_end = line_start + line.trim_end_matches(['\n', '\r']).len();
        while next < v.len() && v[next].end <= line_start {
            next += 1;
        }
        let first = next;
        let mut last = first;
        while last < v.len() && v[last].start < line_end {
            last += 1;
        }
        // HL7 segments are read by their fields' positions (`hl7`).
        if super::hl7::segment_name(&text[line_start..line_end]).is_some() {
            line_start += line.len();
            continue;
        }
        let tokens = line_tokens(text, line_start, line_end, &v[first..last]);
        for chain in chains(&tokens) {
            chain_towns(text, &chain, &ordinary, &mut out);
        }
        line_start += line.len();
    }
    out
}

/// The line's tokens, fields glued together by no separator merged into one.
fn line_tokens(text: &str, start: usize, end: usize, spans: &[Span]) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut pos = start;
    for s in spans {
        if s.start < pos || s.end > end {
            // A span from the line before or into the next: no field of this line.
            push_field(&mut tokens, Field::Other);
            pos = pos.max(s.end.min(end));
            continue;
        }
        gap_tokens(text, pos, s.start, &mut tokens);
        push_field(&mut tokens, span_field(text, s));
        pos = s.end;
    }
    gap_tokens(text, pos, end, &mut tokens);
    tokens
}

/// What a span is to an address.
fn span_field(text: &str, s: &Span) -> Field {
    let c = canonical_label(&s.label);
    if c.hipaa_class != "B_GEOGRAPHIC" {
        return Field::Other;
    }
    match c.name {
        // The model alone takes licence numbers for postcodes and house numbers.
        "ZIP_CODE" | "BUILDING_NUMBER" if s.source == Source::Model => Field::Neutral,
        "STREET_ADDRESS" | "STREET_NAME" | "SECONDARY_ADDRESS" | "BUILDING_NUMBER" => Field::Street,
        "ZIP_CODE" => Field::Postcode,
        "STATE" | "COUNTRY" => Field::Neutral,
        _ if is_country(&text[s.start..s.end]) => Field::Neutral,
        _ => Field::Place,
    }
}

/// Pushes a field. One right after another (no separator between) joins it: an address part
/// absorbs a word glued to it ("Kayole Junction"), other text glued to a part ends the chain
/// after it, and a part glued to other text is other text ("near Spine Road", "Tel 0151…"). A
/// town and its postcode, state or country stay two fields.
fn push_field(tokens: &mut Vec<Token>, f: Field) {
    use Field::*;
    let Some(Token::Field(prev)) = tokens.last_mut() else {
        tokens.push(Token::Field(f));
        return;
    };
    let merged = match (*prev, f) {
        (Candidate(..), Postcode | Neutral) | (Postcode, Candidate(..)) => None,
        (Street | Place | Postcode, Other) => None,
        (Other, _) | (_, Other) => Some(Other),
        (Street, _) | (_, Street) => Some(Street),
        (Postcode, _) | (_, Postcode) => Some(Postcode),
        (Place, _) | (_, Place) => Some(Place),
        (Neutral, x) => Some(x),
        (Candidate(..), Candidate(..)) => Some(Other),
    };
    match merged {
        Some(m) => *prev = m,
        None => tokens.push(Token::Field(f)),
    }
}

/// Tokens of the text between `from` and `to` (byte offsets into `text`).
fn gap_tokens(text: &str, from: usize, to: usize, tokens: &mut Vec<Token>) {
    let gap = &text[from..to];
    let mut piece = 0;
    let mut chars = gap.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let token = match c {
            ',' | ';' | '|' | '·' | '•' | '\t' => Token::Separator,
            ' ' if next == Some(' ') => Token::Separator,
            '-' | '–' | '—' if gap[..i].ends_with(' ') && matches!(next, Some(' ') | None) => {
                Token::Separator
            }
            ':' if matches!(next, Some(' ' | '\t') | None) => {
                let label = gap[piece..i].trim();
                let word = label.rsplit(' ').next().unwrap_or(label);
                Token::Colon(ADDRESS_LABELS.iter().any(|l| l.eq_ignore_ascii_case(word)))
            }
            _ => continue,
        };
        text_piece(text, from + piece, from + i, tokens);
        if tokens.last() != Some(&token) || matches!(token, Token::Colon(_)) {
            tokens.push(token);
        }
        piece = i + c.len_utf8();
    }
    text_piece(text, from + piece, to, tokens);
}

/// The field of unmarked text between two separators, if it holds more than spaces.
fn text_piece(text: &str, from: usize, to: usize, tokens: &mut Vec<Token>) {
    let raw = &text[from..to];
    let piece = raw.trim();
    if piece.is_empty() {
        return;
    }
    let start = from + (raw.len() - raw.trim_start().len());
    push_field(tokens, classify(piece, start));
}

/// A town's shape ("Saidapet", "Co. Mayo", "Isle of Lewis", "NAIROBI"), a numbered part
/// ("Sector 17", "Purok 5"), or other text.
fn classify(piece: &str, start: usize) -> Field {
    let words: Vec<&str> = piece.split(' ').collect();
    let numbered = words.len() <= 3
        && words.last().is_some_and(|n| {
            let digits = n.bytes().take_while(u8::is_ascii_digit).count();
            (1..=4).contains(&digits) && n.len() <= digits + 1
        })
        && words[..words.len() - 1]
            .iter()
            .all(|w| w.starts_with(char::is_uppercase) && w.chars().all(char::is_alphabetic));
    if numbered {
        return Field::Neutral;
    }
    let capitalized = |w: &str| {
        let core = w.strip_suffix('.').unwrap_or(w);
        w.starts_with(char::is_uppercase)
            && (core.len() == w.len() || core.chars().count() <= 4)
            && core
                .chars()
                .all(|c| c.is_alphabetic() || matches!(c, '\'' | '’' | '-'))
    };
    let shaped = piece.len() <= MAX_FIELD
        && words.len() <= 4
        && words.first().is_some_and(|w| capitalized(w))
        && words.last().is_some_and(|w| capitalized(w))
        && words
            .iter()
            .all(|w| capitalized(w) || PARTICLES.contains(w));
    if !shaped || words.iter().any(|w| is_not_locality(w)) {
        return Field::Other;
    }
    // Codes and one abbreviated word are states' and provinces' ("IL.", "Jal.").
    let code = |w: &str| w.chars().count() <= 3 && w.chars().all(|c| c.is_uppercase());
    let abbreviated = words.len() == 1 && piece.ends_with('.');
    if code(piece) || abbreviated || is_country(piece) || is_us_state(piece) {
        return Field::Neutral;
    }
    // A state's or a province's code after the town stays ("Toronto ON").
    let len = match words.as_slice() {
        [.., last] if words.len() > 1 && code(last) => piece.len() - last.len() - 1,
        _ => piece.len(),
    };
    Field::Candidate(start, start + len)
}

/// Whether `word` (a trailing dot aside, any case) is a field's, a title's or a department's.
pub(super) fn is_not_locality(word: &str) -> bool {
    let w = word.trim_end_matches('.');
    NOT_LOCALITIES.iter().any(|n| n.eq_ignore_ascii_case(w))
}

/// One chain of fields: the fields between separators, with whether an address label opened it
/// and whether it is its line's whole text.
struct Chain {
    fields: Vec<Field>,
    labelled: bool,
    whole_line: bool,
}

/// The line's chains: runs of fields joined by separators, cut at colons and other text.
fn chains(tokens: &[Token]) -> Vec<Chain> {
    let mut out = Vec::new();
    let mut current = Chain {
        fields: Vec::new(),
        labelled: false,
        whole_line: true,
    };
    let mut close = |current: &mut Chain, labelled: bool, whole_line: bool| {
        let done = std::mem::replace(
            current,
            Chain {
                fields: Vec::new(),
                labelled,
                whole_line,
            },
        );
        if !done.fields.is_empty() {
            out.push(done);
        }
    };
    for t in tokens {
        match *t {
            Token::Field(Field::Other) => close(&mut current, false, false),
            Token::Field(f) => current.fields.push(f),
            Token::Colon(label) => close(&mut current, label, label),
            Token::Separator => {}
        }
    }
    close(&mut current, false, false);
    // Only a chain that reaches the line's end is its whole line.
    let ends = tokens_end_in_field(tokens);
    let n = out.len();
    for (i, c) in out.iter_mut().enumerate() {
        c.whole_line &= ends && i + 1 == n;
    }
    out
}

/// Whether the line ends in an address field (not in other text or a colon).
fn tokens_end_in_field(tokens: &[Token]) -> bool {
    tokens
        .iter()
        .rev()
        .find(|t| **t != Token::Separator)
        .is_some_and(|t| matches!(t, Token::Field(f) if *f != Field::Other))
}

/// The towns of one chain (see the module docs).
fn chain_towns(text: &str, chain: &Chain, ordinary: &impl Fn(&str) -> bool, out: &mut Vec<Span>) {
    let f = &chain.fields;
    let streets = f
        .iter()
        .filter(|x| matches!(x, Field::Street | Field::Postcode))
        .count()
        + usize::from(chain.labelled);
    let places = f.iter().filter(|x| **x == Field::Place).count();
    let candidates = f
        .iter()
        .filter(|x| matches!(x, Field::Candidate(..)))
        .count();
    let address =
        streets >= 1 || places >= 2 || (places == 1 && chain.whole_line && candidates <= 2);
    if !address || candidates == 0 {
        return;
    }
    let part =
        |x: Option<&Field>| matches!(x, Some(Field::Street | Field::Postcode | Field::Place));
    let last = f.iter().rposition(|x| *x != Field::Neutral);
    for (i, x) in f.iter().enumerate() {
        let Field::Candidate(s, e) = *x else {
            continue;
        };
        // Last in its chain after a town, it is a province or a region ("Bacoor, Cavite"); after
        // a street or a postcode, or alone after its label, a town.
        let before = i.checked_sub(1).map(|j| f[j]);
        let region = Some(i) == last
            && !matches!(before, Some(Field::Street | Field::Postcode))
            && !(chain.labelled && f.len() == 1);
        if region {
            continue;
        }
        if ordinary(&text[s..e]) {
            // An ordinary word between an address part (or a town) and another.
            let named_before = match before {
                Some(Field::Candidate(a, b)) => !ordinary(&text[a..b]),
                other => part(other.as_ref()),
            };
            if streets == 0 || !named_before || !part(f.get(i + 1)) {
                continue;
            }
        }
        out.push(Span::pattern(s, e, "CITY", 0.6, "address_locality"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The towns found in `text` around the parts `parts` names (value, label).
    fn towns(text: &str, parts: &[(&str, &str)]) -> Vec<String> {
        let mut v: Vec<Span> = parts
            .iter()
            .map(|(value, label)| {
                let at = text.find(value).expect("part in text");
                Span::pattern(at, at + value.len(), *label, 0.9, "test")
            })
            .collect();
        v.sort_by_key(|s| s.start);
        let ordinary = |f: &str| ["Cork", "Inch", "Hypertension", "Active"].contains(&f);
        address_localities(text, &v, ordinary)
            .iter()
            .map(|s| text[s.start..s.end].to_string())
            .collect()
    }

    #[test]
    fn fields_chained_to_an_address_are_towns() {
        let street = "STREET_ADDRESS";
        assert_eq!(
            towns(
                "Address: No. 7/12, Kamarajar Salai, Saidapet, Chennai - 600015",
                &[
                    ("No. 7/12, Kamarajar Salai", street),
                    ("Chennai", "CITY"),
                    ("600015", "ZIP_CODE")
                ],
            ),
            ["Saidapet"]
        );
        // After an address label; an ordinary word between two parts.
        assert_eq!(
            towns(
                "Address: Knockanira, Inch, Ennis, Co. Clare",
                &[("Ennis", "CITY"), ("Co. Clare", "CITY")],
            ),
            ["Knockanira", "Inch"]
        );
        assert_eq!(
            towns(
                "Wilton, Cork  T12 DC4A   Tel 021 492",
                &[("T12 DC4A", "ZIP_CODE")]
            ),
            ["Wilton", "Cork"]
        );
        // A whole line of a town and its suburb, a state's code left.
        assert_eq!(
            towns("Dooradoyle, Limerick", &[("Limerick", "CITY")]),
            ["Dooradoyle"]
        );
        assert_eq!(
            towns(
                "200 Front Street West, Toronto ON M5V 3J1",
                &[("200 Front Street West", street), ("M5V 3J1", "ZIP_CODE")]
            ),
            ["Toronto"]
        );
    }

    #[test]
    fn labels_departments_provinces_and_other_text_are_not() {
        // A province after its town; a department between places; a table's column.
        assert_eq!(
            towns("Poblacion, Bangui, Ilocos Norte", &[("Bangui", "CITY")]),
            ["Poblacion"]
        );
        assert!(
            towns(
                "St Mary's, Department, Galway",
                &[("St Mary's", "LOCATION"), ("Galway", "CITY")]
            )
            .is_empty()
        );
        assert!(towns("02139,Hypertension,Active", &[("02139", "ZIP_CODE")]).is_empty());
        // Text around the chain, a name before it, an HL7 segment.
        assert!(
            towns(
                "Seen by Dr Ray, Leeds Road clinic",
                &[("Leeds Road", street())]
            )
            .is_empty()
        );
        assert!(
            towns(
                "MSH|^~\\&|AUSLAB|PATHWEST QEII|HBCIS|FSH",
                &[("PATHWEST QEII", "LOCATION")]
            )
            .is_empty()
        );
    }

    fn street() -> &'static str {
        "STREET_ADDRESS"
    }
}
