//! Gazetteers: word lists from public sources (US Census given names and surnames, US places
//! from a ZIP code database), fetched and checksummed by `scripts/fetch-assets`, never
//! committed. A recognizer pattern gated by a gazetteer counts only when the text of its
//! `gaz_<name>` group is listed, so an ordinary word ("Will", "Hope") stays unless both the
//! context and the list say name or place.

use std::collections::HashSet;

/// Longest entry kept, in bytes; longer lookups never match.
const MAX_ENTRY: usize = 64;

/// One word list, case-folded to upper case.
#[derive(Debug, Default)]
pub struct Gazetteer {
    entries: HashSet<Box<str>>,
}

impl Gazetteer {
    /// One entry a line; blank lines and lines starting with `#` are skipped.
    pub fn from_lines(text: &str) -> Self {
        Self::from_words(text.lines().filter(|l| !l.trim_start().starts_with('#')))
    }

    /// One entry a word or phrase, as a recognizer file's `[word_lists]` give them.
    pub fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Self {
        let entries = words
            .into_iter()
            .map(str::trim)
            .filter(|w| !w.is_empty() && w.len() <= MAX_ENTRY)
            .map(|w| fold(w).into_boxed_str())
            .collect();
        Self { entries }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, in upper case.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| &**e)
    }

    /// Whether `s` is listed (case-insensitive, tabs read as spaces). ASCII text, the usual
    /// case, is folded in a stack buffer: no allocation per lookup.
    pub fn contains(&self, s: &str) -> bool {
        if s.len() > MAX_ENTRY {
            return false;
        }
        if s.is_ascii() {
            let mut buf = [0u8; MAX_ENTRY];
            let b = &mut buf[..s.len()];
            for (d, c) in b.iter_mut().zip(s.bytes()) {
                *d = if c == b'\t' {
                    b' '
                } else {
                    c.to_ascii_uppercase()
                };
            }
            std::str::from_utf8(b).is_ok_and(|k| self.entries.contains(k))
        } else {
            // The public lists are ASCII: "Echevarría" is listed as ECHEVARRIA.
            self.entries.contains(fold(s).as_str())
                || self.entries.contains(fold(&without_marks(s)).as_str())
        }
    }

    /// Byte length of the longest run of whole words at the start of `s` that is listed,
    /// trailing punctuation aside: "Port Leyden Hospital" → the length of "Port Leyden" when
    /// only that is listed; "Chicago." → "Chicago".
    pub fn longest_prefix(&self, s: &str) -> Option<usize> {
        let mut end = s.len();
        loop {
            let head = s[..end].trim_end_matches(|c: char| !c.is_alphanumeric());
            if head.is_empty() {
                return None;
            }
            if self.contains(head) {
                return Some(head.len());
            }
            end = head.rfind([' ', '\t'])?;
        }
    }
}

/// `s` with its accents and other combining marks taken off ("Galić" → "Galic").
fn without_marks(s: &str) -> String {
    use unicode_normalization::{UnicodeNormalization, char::is_combining_mark};
    s.nfd().filter(|c| !is_combining_mark(*c)).collect()
}

fn fold(s: &str) -> String {
    s.chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .flat_map(char::to_uppercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_fold_case_and_find_the_longest_listed_prefix() {
        let g = Gazetteer::from_lines("# places\nPORT LEYDEN\nNew York\n\nZürich\n");
        assert_eq!(g.len(), 3);
        assert!(g.contains("Port Leyden") && g.contains("port\tleyden"));
        assert!(g.contains("ZÜRICH") && g.contains("zürich"));
        assert!(g.contains("Pórt Leydén") && !g.contains("Zurich"));
        assert!(!g.contains("Port"));
        assert_eq!(g.longest_prefix("Port Leyden Hospital"), Some(11));
        assert_eq!(g.longest_prefix("New York City Clinic"), Some(8));
        assert_eq!(g.longest_prefix("Boston"), None);
        assert_eq!(g.longest_prefix("New York."), Some(8));
        assert!(!g.contains(&"A".repeat(100)));
    }
}
