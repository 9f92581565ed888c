//! The place written right before a found town and a comma: a neighbourhood, a village or the
//! branch of an organization ("Industrial Area, Nairobi", "lives in Rathmines, Dublin 6",
//! "Sasol Chemicals, Secunda", "Asokwa, Kumasi"). Neighbourhoods and villages are in no
//! gazetteer, and a town names the place before it as a street names its house number: left
//! standing, the neighbourhood says more about where the person lives than the town did.
//!
//! The words (one to four, capitalized, with numbers and particles inside) must stand as a
//! field: after a line's start, a separator (comma, semicolon, colon, bracket, bar, wide gap) or
//! a preposition ("in", "at", "from"), and touch no other span. Ordinary words ("Pathology,
//! Sacramento", "Case Manager, Hamilton"), fields and parts of a building, states, countries and
//! a lone acronym ("MUSC, Charleston") are not places.

use super::localities::is_not_locality;
use super::span::Span;
use super::structure::is_country;
use crate::deid::canonical_label;
use crate::deid::surrogates::is_us_state;

/// Most words in the place.
const MAX_WORDS: usize = 4;

/// Lower-case words after which a place starts ("works in Industrial Area, Nairobi").
const PREPOSITIONS: &[&str] = &[
    "in", "at", "from", "near", "of", "to", "via", "by", "with", "for", "and",
];

/// Lower-case words inside a place's name ("Isle of Lewis", "Barrio del Carmen").
const PARTICLES: &[&str] = &[
    "of", "de", "del", "la", "le", "na", "di", "da", "do", "dos", "das", "van", "von", "der", "el",
];

/// Places (LOCATION spans, sorted) written right before the towns of `v` (sorted, disjoint).
/// `common(phrase)` says every word of a phrase is an ordinary word.
pub fn places_before_towns(text: &str, v: &[Span], common: impl Fn(&str) -> bool) -> Vec<Span> {
    let mut out = Vec::new();
    for (i, s) in v.iter().enumerate() {
        if canonical_label(&s.label).name != "CITY" {
            continue;
        }
        let Some((start, end)) = field_before(&text[..s.start]) else {
            continue;
        };
        // The place touches no other span ("Dr. Maria Hofbauer, Ettlingen").
        let previous_end = v[..i].last().map_or(0, |p| p.end);
        if previous_end > start {
            continue;
        }
        let place = &text[start..end];
        let words: Vec<&str> = place.split(' ').collect();
        let acronym = words.len() == 1 && place.chars().all(|c| !c.is_lowercase());
        if acronym
            || common(place)
            || words
                .iter()
                .any(|w| is_not_locality(w) || is_department(w) || is_compound(w))
            || is_country(place)
            || is_us_state(place)
        {
            continue;
        }
        out.push(Span::pattern(
            start,
            end,
            "LOCATION",
            0.6,
            "place_before_town",
        ));
    }
    out
}

/// The field of capitalized words that ends `head` before a comma and spaces, as byte offsets
/// into `head`: `None` when `head` does not end so or the words do not stand as a field.
fn field_before(head: &str) -> Option<(usize, usize)> {
    let end = head.trim_end_matches([' ', '\t']);
    if end.len() == head.len() {
        return None;
    }
    let end = end.strip_suffix(',')?.len();
    let line_start = head[..end].rfind(['\n', '\r']).map_or(0, |n| n + 1);
    let line = &head[line_start..end];
    let mut start = end;
    let mut words = 0;
    let mut rest = line;
    loop {
        if rest.is_empty() {
            break;
        }
        let (before, word) = match rest.rfind(' ') {
            Some(sp) => (&rest[..sp], &rest[sp + 1..]),
            None => ("", rest),
        };
        if word.is_empty() {
            // Two spaces: a wide gap between columns.
            break;
        }
        let opened = word.trim_start_matches(['(', '"', '“', '\'', '‘']);
        if words > 0 && (word.ends_with([',', ';', ':', '|', ')', '·', '•']) || word == "-") {
            break;
        }
        if words > 0 && PREPOSITIONS.contains(&word) {
            // After a title's "of" the words are the rest of a title ("Head of Planning",
            // "Department of Internal Medicine B").
            let title = word == "of"
                && before
                    .rsplit(' ')
                    .next()
                    .is_some_and(|w| w.starts_with(char::is_uppercase));
            if title {
                return None;
            }
            break;
        }
        let taken = if words == 0 {
            capitalized(opened)
        } else {
            capitalized(opened) || numbered(opened) || PARTICLES.contains(&opened)
        };
        if !taken {
            return None;
        }
        words += 1;
        start = line_start + before.len() + if before.is_empty() { 0 } else { 1 };
        start += word.len() - opened.len();
        if words > MAX_WORDS {
            return None;
        }
        if opened.len() < word.len() {
            break;
        }
        rest = before;
    }
    let first = head[start..end].split(' ').next()?;
    (words > 0 && capitalized(first)).then_some((start, end))
}

/// Endings of the words of a department or a discipline ("Breast Oncology", "Informatik",
/// "Pediatrics").
const DEPARTMENT_ENDINGS: &[&str] = &[
    "ology",
    "ologie",
    "ología",
    "ologia",
    "iatry",
    "iatrics",
    "pedics",
    "paedics",
    "medicine",
    "surgery",
    "nursing",
    "informatik",
    "informatics",
];

/// Whether `w` names a department or a discipline by its ending.
fn is_department(w: &str) -> bool {
    let w = w.to_lowercase();
    DEPARTMENT_ENDINGS.iter().any(|e| w.ends_with(e))
}

/// A compound whose second part is lower case: a role or a trait ("MDL-arts", "Faith-based",
/// "WHO-supported"), never a place ("Idi-Araba", "Hay-on-Wye" has capitals at both ends).
fn is_compound(w: &str) -> bool {
    w.rsplit('-')
        .next()
        .is_some_and(|last| last.len() < w.len() && last.starts_with(char::is_lowercase))
}

/// A capitalized word of letters ("Asokwa", "Idi-Araba", "St.", "O'Connell").
fn capitalized(w: &str) -> bool {
    w.starts_with(char::is_uppercase)
        && w.chars()
            .all(|c| c.is_alphabetic() || matches!(c, '\'' | '’' | '-' | '.' | '&'))
}

/// A number inside a place's name ("Sector 17 Market", "Phase 2 Extension").
fn numbered(w: &str) -> bool {
    w.starts_with(|c: char| c.is_ascii_digit())
        && w.len() <= 5
        && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The places found before the towns `towns` names in `text`.
    fn places(text: &str, towns: &[&str]) -> Vec<String> {
        let mut v: Vec<Span> = towns
            .iter()
            .map(|t| {
                let at = text.find(t).expect("town in text");
                Span::pattern(at, at + t.len(), "CITY", 0.9, "test")
            })
            .collect();
        v.sort_by_key(|s| s.start);
        let common = |p: &str| {
            p.split(' ')
                .all(|w| ["Pathology", "Case", "Manager", "Industrial"].contains(&w))
        };
        places_before_towns(text, &v, common)
            .iter()
            .map(|s| text[s.start..s.end].to_string())
            .collect()
    }

    #[test]
    fn the_place_before_a_town_is_a_place() {
        assert_eq!(
            places("I run payroll in Industrial Area, Nairobi.", &["Nairobi"]),
            ["Industrial Area"]
        );
        assert_eq!(
            places(
                "family house, Plot 12, Block B, Asokwa, Kumasi.",
                &["Kumasi"]
            ),
            ["Asokwa"]
        );
        assert_eq!(
            places("Moved to Koramangala, Bengaluru last year", &["Bengaluru"]),
            ["Koramangala"]
        );
        assert_eq!(
            places("Plot 132, Central District, Garki, Abuja", &["Abuja"]),
            ["Garki"]
        );
        assert_eq!(
            places("Employer: Sasol Chemicals, Secunda", &["Secunda"]),
            ["Sasol Chemicals"]
        );
        assert_eq!(
            places("(Rathmines, Dublin 6)", &["Dublin 6"]),
            ["Rathmines"]
        );
    }

    #[test]
    fn ordinary_words_fields_acronyms_and_sentences_are_not() {
        assert!(places("Pathology, Sacramento", &["Sacramento"]).is_empty());
        assert!(places("Case Manager, Hamilton", &["Hamilton"]).is_empty());
        assert!(places("Department, Galway", &["Galway"]).is_empty());
        assert!(places("MUSC, Charleston", &["Charleston"]).is_empty());
        assert!(places("Germany, Bengaluru", &["Bengaluru"]).is_empty());
        assert!(places("Head of Planning, Argos", &["Argos"]).is_empty());
        assert!(places("Dr Lin, Breast Oncology, Mission Bay", &["Mission Bay"]).is_empty());
        assert!(places("dr. M. El Amrani, MDL-arts, Maasstad", &["Maasstad"]).is_empty());
        // Text that is no field before the words, more words than a place has, no comma.
        assert!(places("we met the Old Rectory, Hay", &["Hay"]).is_empty());
        assert!(places("Anne Marie Louise Claire Dubois, Paris", &["Paris"]).is_empty());
        assert!(places("Asokwa Kumasi", &["Kumasi"]).is_empty());
    }
}
