//! The text the model sees and how its byte offsets map back to the caller's exact input.

use std::sync::Arc;

/// The caller's input and, when normalization changed it, the model's view of it.
#[derive(Clone, Debug)]
pub struct TextView {
    pub original: Arc<str>,
    /// Normalized text, or `None` when the model sees the input unchanged.
    normalized: Option<Normalized>,
}

#[derive(Clone, Debug)]
struct Normalized {
    text: String,
    /// For every byte of `text`, the original byte range of the character it came from.
    starts: Vec<u32>,
    ends: Vec<u32>,
}

impl TextView {
    pub fn new(original: Arc<str>) -> Self {
        Self {
            original,
            normalized: None,
        }
    }

    /// The text to tokenize.
    pub fn view(&self) -> &str {
        self.normalized
            .as_ref()
            .map(|n| n.text.as_str())
            .unwrap_or(&self.original)
    }

    /// Maps a non-empty byte range of the view to the original text.
    pub fn to_original(&self, start: usize, end: usize) -> (usize, usize) {
        match &self.normalized {
            None => (start, end),
            Some(n) if end > start && end <= n.starts.len() => {
                (n.starts[start] as usize, n.ends[end - 1] as usize)
            }
            Some(_) => (start.min(self.original.len()), end.min(self.original.len())),
        }
    }

    /// Builds the view: accents removed (NFD, combining marks dropped) and/or, with `clean`,
    /// runs of whitespace collapsed to one space and control characters dropped.
    pub fn normalize(original: Arc<str>, strip_accents: bool, clean: bool) -> Self {
        if !strip_accents && !clean {
            return Self::new(original);
        }
        let mut text = String::with_capacity(original.len());
        let mut starts = Vec::with_capacity(original.len());
        let mut ends = Vec::with_capacity(original.len());
        let mut push = |c: char, s: usize, e: usize, text: &mut String| {
            let before = text.len();
            text.push(c);
            for _ in before..text.len() {
                starts.push(s as u32);
                ends.push(e as u32);
            }
        };
        let mut last_was_space = false;
        for (s, ch) in original.char_indices() {
            let e = s + ch.len_utf8();
            if clean {
                if ch.is_whitespace() {
                    if !last_was_space {
                        push(' ', s, e, &mut text);
                    }
                    last_was_space = true;
                    continue;
                }
                last_was_space = false;
                if ch.is_control() {
                    continue;
                }
            }
            if strip_accents && !ch.is_ascii() {
                unicode_normalization::char::decompose_canonical(ch, |d| {
                    if !unicode_normalization::char::is_combining_mark(d) {
                        push(d, s, e, &mut text);
                    }
                });
            } else {
                push(ch, s, e, &mut text);
            }
        }
        Self {
            original,
            normalized: Some(Normalized { text, starts, ends }),
        }
    }
}

/// Converts byte offsets into `text` to code point offsets, for many offsets in one pass.
pub struct CharIndex {
    /// Byte offset of every character start, plus the text length.
    byte_of_char: Vec<u32>,
}

impl CharIndex {
    pub fn new(text: &str) -> Self {
        let mut byte_of_char: Vec<u32> = text.char_indices().map(|(b, _)| b as u32).collect();
        byte_of_char.push(text.len() as u32);
        Self { byte_of_char }
    }

    /// The code point offset of a byte offset (which must be a character boundary).
    pub fn char_offset(&self, byte: usize) -> usize {
        self.byte_of_char.partition_point(|&b| (b as usize) < byte)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accent_view_maps_back_to_original() {
        let original: Arc<str> = Arc::from("José Müller");
        let v = TextView::normalize(original.clone(), true, false);
        assert_eq!(v.view(), "Jose Muller");
        let (s, e) = v.to_original(5, 11);
        assert_eq!(&original[s..e], "Müller");
        let (s, e) = v.to_original(0, 4);
        assert_eq!(&original[s..e], "José");
    }

    #[test]
    fn clean_view_collapses_whitespace() {
        let original: Arc<str> = Arc::from("a \n\t b\u{7}c");
        let v = TextView::normalize(original.clone(), false, true);
        assert_eq!(v.view(), "a bc");
        let (s, e) = v.to_original(2, 4);
        assert_eq!(&original[s..e], "b\u{7}c");
    }

    #[test]
    fn char_index_counts_code_points() {
        let idx = CharIndex::new("aé😀b");
        assert_eq!(idx.char_offset(0), 0);
        assert_eq!(idx.char_offset(1), 1);
        assert_eq!(idx.char_offset(3), 2);
        assert_eq!(idx.char_offset(7), 3);
        assert_eq!(idx.char_offset(8), 4);
    }
}
