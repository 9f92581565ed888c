//! Identifiers known before the text is read (a FHIR Patient's names, identifiers, phone
//! numbers, address lines, birth date): every occurrence in the text becomes a span, whatever
//! the model says. Words match case-insensitively as whole words; numbers match by their
//! digits, whatever separators the text writes between them ("555-0142" finds "555 0142").

use aho_corasick::{AhoCorasick, MatchKind};

use crate::stages::Span;

/// The pattern name known-identifier spans carry (and that entities report).
pub const PATTERN: &str = "known_identifier";

/// Shortest value looked for: two-letter values ("Al", "Jo") match too many ordinary words.
const MIN_CHARS: usize = 3;
/// Fewest digits a value needs to be matched by its digits alone.
const MIN_DIGITS: usize = 5;

/// One known identifier: its value as the structured data writes it, and the canonical label
/// its spans get (`FIRST_NAME`, `LAST_NAME`, `OTHER_IDENTIFIER`, `PHONE`, `STREET_ADDRESS`, `CITY`, `DATE`...).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KnownIdentifier {
    pub value: String,
    pub label: &'static str,
}

impl KnownIdentifier {
    pub fn new(value: impl Into<String>, label: &'static str) -> Self {
        Self {
            value: value.into(),
            label,
        }
    }
}

/// Spans for every occurrence of `known` in `text` (byte offsets), sorted; they may overlap
/// each other and the detected spans (see [`merge`]).
pub fn find(text: &str, known: &[KnownIdentifier]) -> Vec<Span> {
    let mut words: Vec<(String, &'static str)> = Vec::new();
    let mut numbers: Vec<(String, &'static str)> = Vec::new();
    for k in known {
        let v = k.value.trim();
        if v.chars().count() < MIN_CHARS {
            continue;
        }
        let digits: String = v.chars().filter(char::is_ascii_digit).collect();
        let has_letters = v.chars().any(char::is_alphabetic);
        if digits.len() >= MIN_DIGITS && !has_letters {
            numbers.push((digits, k.label));
        } else {
            words.push((v.to_string(), k.label));
        }
    }
    let mut out = find_words(text, &words);
    out.extend(find_numbers(text, &numbers));
    out.sort_by_key(|s| (s.start, s.end));
    out
}

fn span(start: usize, end: usize, label: &str) -> Span {
    Span::pattern(start, end, label, 1.0, PATTERN)
}

fn is_word(c: Option<char>) -> bool {
    c.is_some_and(char::is_alphanumeric)
}

fn find_words(text: &str, words: &[(String, &'static str)]) -> Vec<Span> {
    if words.is_empty() {
        return Vec::new();
    }
    let Ok(ac) = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::LeftmostLongest)
        .build(words.iter().map(|(w, _)| w))
    else {
        return Vec::new();
    };
    ac.find_iter(text)
        .filter(|m| {
            !is_word(text[..m.start()].chars().next_back())
                && !is_word(text[m.end()..].chars().next())
        })
        .map(|m| span(m.start(), m.end(), words[m.pattern().as_usize()].1))
        .collect()
}

/// Digit runs in `text` (digits joined by at most two separators from `-().␠/`) whose digits
/// equal a known number's.
fn find_numbers(text: &str, numbers: &[(String, &'static str)]) -> Vec<Span> {
    if numbers.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() || (i > 0 && bytes[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        // A run: digits, with single separators between them.
        let (start, mut end, mut j) = (i, i, i);
        let mut digits = String::new();
        while j < bytes.len() {
            let b = bytes[j];
            if b.is_ascii_digit() {
                digits.push(b as char);
                j += 1;
                end = j;
            } else {
                // At most two separators ("-", ") ") between digits.
                let sep = |k: usize| {
                    bytes
                        .get(k)
                        .is_some_and(|c| matches!(c, b'-' | b'(' | b')' | b'.' | b' ' | b'/'))
                };
                let digit = |k: usize| bytes.get(k).is_some_and(u8::is_ascii_digit);
                if sep(j) && digit(j + 1) {
                    j += 1;
                } else if sep(j) && sep(j + 1) && digit(j + 2) {
                    j += 2;
                } else {
                    break;
                }
            }
        }
        let alnum_after = bytes.get(end).is_some_and(|b| b.is_ascii_alphanumeric());
        if !alnum_after {
            for (number, label) in numbers {
                if let Some(at) = digits.find(number.as_str()) {
                    // Map the digit positions back to bytes of the run.
                    let (a, b) = digit_range(&text[start..end], at, number.len());
                    let whole = at == 0 && at + number.len() == digits.len();
                    if whole || number.len() >= 7 {
                        out.push(span(start + a, start + b, label));
                    }
                }
            }
        }
        i = end.max(i + 1);
    }
    out
}

/// Byte range in `run` covering its digits `at..at + n`.
fn digit_range(run: &str, at: usize, n: usize) -> (usize, usize) {
    let positions: Vec<usize> = run
        .bytes()
        .enumerate()
        .filter(|(_, b)| b.is_ascii_digit())
        .map(|(i, _)| i)
        .collect();
    (positions[at], positions[at + n - 1] + 1)
}

/// Joins `extra` into `spans` (both sorted): an extra span inside a detected one adds nothing;
/// overlapping spans become one covering both, with the detected span's label.
pub fn merge(spans: Vec<Span>, extra: Vec<Span>) -> (Vec<Span>, usize) {
    if extra.is_empty() {
        return (spans, 0);
    }
    let mut all: Vec<(Span, bool)> = spans
        .into_iter()
        .map(|s| (s, false))
        .chain(extra.into_iter().map(|s| (s, true)))
        .collect();
    all.sort_by_key(|(s, is_extra)| (s.start, std::cmp::Reverse(s.end), *is_extra));
    let mut out: Vec<(Span, bool)> = Vec::with_capacity(all.len());
    for (s, is_extra) in all {
        match out.last_mut() {
            Some((last, last_extra)) if s.start < last.end => {
                if s.end > last.end {
                    last.end = s.end;
                }
                // A detected span's label and score win over a known one's.
                if *last_extra && !is_extra {
                    let (start, end) = (last.start, last.end);
                    *last = Span { start, end, ..s };
                    *last_extra = false;
                }
            }
            _ => out.push((s, is_extra)),
        }
    }
    let added = out.iter().filter(|(_, e)| *e).count();
    (out.into_iter().map(|(s, _)| s).collect(), added)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found<'a>(text: &'a str, known: &[KnownIdentifier]) -> Vec<(&'a str, String)> {
        find(text, known)
            .into_iter()
            .map(|s| (&text[s.start..s.end], s.label))
            .collect()
    }

    #[test]
    fn names_match_whole_words_in_any_case() {
        let known = [
            KnownIdentifier::new("Sumiko254", "FIRST_NAME"),
            KnownIdentifier::new("Larue605", "LAST_NAME"),
            KnownIdentifier::new("Al", "FIRST_NAME"),
        ];
        let text = "SUMIKO254 larue605 seen; Larue6050 is not her; Al is too short.";
        assert_eq!(
            found(text, &known),
            [
                ("SUMIKO254", "FIRST_NAME".to_string()),
                ("larue605", "LAST_NAME".to_string())
            ]
        );
    }

    #[test]
    fn numbers_match_by_digits_whatever_the_separators() {
        let known = [
            KnownIdentifier::new("555-867-5309", "PHONE"),
            KnownIdentifier::new("12345", "ID"),
        ];
        let text = "Call (555) 867 5309 or 555.867.5309; MRN 12345, not 123456 nor A12345.";
        let got: Vec<&str> = found(text, &known).into_iter().map(|(t, _)| t).collect();
        assert_eq!(got, ["555) 867 5309", "555.867.5309", "12345"]);
    }

    #[test]
    fn merge_keeps_detected_labels_and_counts_additions() {
        let detected = vec![Span::model(0, 5, "NAME", 0.9)];
        let extra = vec![
            span(3, 9, "LAST_NAME"),
            span(20, 25, "ID"),
            span(1, 2, "ID"),
        ];
        let mut extra = extra;
        extra.sort_by_key(|s| (s.start, s.end));
        let (merged, added) = merge(detected, extra);
        let got: Vec<_> = merged
            .iter()
            .map(|s| (s.start, s.end, s.label.as_str()))
            .collect();
        assert_eq!(got, [(0, 9, "NAME"), (20, 25, "ID")]);
        assert_eq!(added, 1);
    }
}
