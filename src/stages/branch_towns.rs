//! The town named right after an organization or a place found in the text, as letterheads,
//! signatures and social histories write a branch or a campus ("GE Aviation, Evendale",
//! "Arctic Imaging Partners, Anchorage)", "Panorama Orthopedics (Golden)", "Smile Dental Co.
//! Fremantle - Clinical notes"): where the person works or is treated. The recognizers' town
//! patterns need a preposition or a facility word before the town; here the organization is
//! the context. Only a listed town counts, and it must stand as a field: a comma, a bracket, a
//! dash, a state's code, a wide gap or the line's end after it. A town that is also an ordinary
//! word ("Golden", "Aurora", "Mobile") must follow a comma or a bracket, which a word of the
//! organization's own name ("Kingsgate Trust Bank Mobile") never does.

use super::span::Span;
use crate::deid::canonical_label;

/// Most words in a town's name ("Prenzlauer Berg", "Salt Lake City").
const MAX_WORDS: usize = 3;

/// What may stand between the organization and its town; the first two also let a town that
/// is an ordinary word through.
const SEPARATORS: &[&str] = &[", ", " (", " - ", " – ", " — ", " "];

/// The towns after the organizations and places of `v` (sorted, disjoint): spans to add.
/// `is_town` says whether a phrase is a listed town, `is_word` whether a word is ordinary.
pub fn towns_after_organizations(
    text: &str,
    v: &[Span],
    is_town: impl Fn(&str) -> bool,
    is_word: impl Fn(&str) -> bool,
) -> Vec<Span> {
    let mut out = Vec::new();
    for (i, s) in v.iter().enumerate() {
        if !matches!(canonical_label(&s.label).name, "ORGANIZATION" | "LOCATION") {
            continue;
        }
        let ceiling = v.get(i + 1).map_or(text.len(), |n| n.start);
        let rest = &text[s.end..ceiling];
        let Some(sep) = SEPARATORS.iter().find(|p| rest.starts_with(**p)) else {
            continue;
        };
        let at = s.end + sep.len();
        let Some(len) = town_at(&text[at..ceiling], &text[at..], &is_town) else {
            continue;
        };
        let town = &text[at..at + len];
        let ordinary = town
            .split([' ', '-'])
            .filter(|w| !w.is_empty())
            .all(&is_word);
        if ordinary && !matches!(*sep, ", " | " (") {
            continue;
        }
        out.push(Span::pattern(
            at,
            at + len,
            "CITY",
            s.score.min(0.7),
            "town_after_organization",
        ));
    }
    out
}

/// The byte length of the listed town at the start of `room` (the text up to the next span;
/// `tail` runs on to the text's end): the longest run of one to [`MAX_WORDS`] capitalized
/// words that is listed and ends a field.
fn town_at(room: &str, tail: &str, is_town: &impl Fn(&str) -> bool) -> Option<usize> {
    let mut ends = Vec::new();
    let mut at = 0;
    for _ in 0..MAX_WORDS {
        // A word that cannot be a town's ("AK" after "Anchorage") ends the name.
        let Some(word_len) = town_word(&room[at..]) else {
            break;
        };
        ends.push(at + word_len);
        at += word_len;
        match room[at..].chars().next() {
            Some(' ' | '-') if room[at + 1..].starts_with(char::is_uppercase) => at += 1,
            _ => break,
        }
    }
    ends.into_iter()
        .rev()
        .find(|&end| ends_field(&tail[end..]) && is_town(&room[..end]))
}

/// The byte length of a word of a town's name at the start of `s`: capitalized ("Evendale") or
/// in capitals, three letters or more ("LUCKNOW"). Unlike a name's word in `structure`, capitals
/// count and a hyphen ends it (capitalized words joined by one make one town: "Idi-Araba").
fn town_word(s: &str) -> Option<usize> {
    let mut chars = s.char_indices();
    let (_, first) = chars.next()?;
    if !first.is_uppercase() {
        return None;
    }
    let end = chars
        .find(|(_, c)| !(c.is_alphabetic() || matches!(c, '\'' | '’')))
        .map_or(s.len(), |(i, _)| i);
    let word = &s[..end];
    let all_caps = word.chars().all(|c| !c.is_lowercase());
    let rest_lower = word.chars().skip(1).all(|c| !c.is_uppercase());
    ((all_caps && word.chars().count() >= 3) || (rest_lower && word.chars().count() >= 2))
        .then_some(end)
}

/// Whether what follows a town ends its field: punctuation that closes it, the line's or the
/// text's end, a wide gap, a dash, or a state's two-letter code ("Franklin TN").
fn ends_field(after: &str) -> bool {
    match after.chars().next() {
        None | Some(',' | '.' | ';' | ')' | '\n' | '\r' | '\t') => true,
        Some(' ') => {
            let rest = &after[1..];
            rest.starts_with([' ', '\t', '-', '–', '—'])
                || rest.is_empty()
                || (rest.len() >= 2
                    && rest.as_bytes()[..2].iter().all(u8::is_ascii_uppercase)
                    && !rest[2..].starts_with(char::is_alphanumeric))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOWNS: &[&str] = &[
        "EVENDALE",
        "ANCHORAGE",
        "GOLDEN",
        "MOBILE",
        "PRENZLAUER BERG",
        "FREMANTLE",
    ];
    const WORDS: &[&str] = &["GOLDEN", "MOBILE", "MARITAL", "STATUS"];

    fn towns(text: &str, org: &str) -> Vec<String> {
        let start = text.find(org).expect("org in text");
        let v = vec![Span::pattern(
            start,
            start + org.len(),
            "ORGANIZATION",
            0.8,
            "t",
        )];
        towns_after_organizations(
            text,
            &v,
            |p| TOWNS.contains(&p.to_uppercase().as_str()),
            |w| WORDS.contains(&w.to_uppercase().as_str()),
        )
        .into_iter()
        .map(|s| text[s.start..s.end].to_string())
        .collect()
    }

    #[test]
    fn a_listed_town_standing_after_an_organization_is_its_branch() {
        for (text, org, town) in [
            (
                "machinist, GE Aviation, Evendale\nMarital status",
                "GE Aviation",
                "Evendale",
            ),
            (
                "Arctic Imaging Partners, Anchorage)  PATIENT",
                "Arctic Imaging Partners",
                "Anchorage",
            ),
            (
                "PT at Panorama Orthopedics (Golden).",
                "Panorama Orthopedics",
                "Golden",
            ),
            (
                "Zapfhahn Garten, Prenzlauer Berg  Amélie",
                "Zapfhahn Garten",
                "Prenzlauer Berg",
            ),
            (
                "Smile Dental Co. Fremantle - Clinical notes",
                "Smile Dental Co.",
                "Fremantle",
            ),
            (
                "Arctic Imaging Partners, Anchorage AK 99501",
                "Arctic Imaging Partners",
                "Anchorage",
            ),
        ] {
            assert_eq!(towns(text, org), [town], "{text}");
        }
    }

    #[test]
    fn an_ordinary_word_needs_a_comma_and_a_town_must_end_its_field() {
        for (text, org) in [
            // A word of the name, not a town after it.
            (
                "Kingsgate Trust Bank Mobile  Transaction",
                "Kingsgate Trust Bank",
            ),
            // The sentence goes on: no field of its own.
            ("works at GE Aviation, Evendale office staff", "GE Aviation"),
            // Unlisted.
            ("Bay Clinic, Springwood.", "Bay Clinic"),
            // A label after it.
            ("GE Aviation, Mobile: 0412", "GE Aviation"),
        ] {
            assert!(towns(text, org).is_empty(), "{text}");
        }
    }
}
