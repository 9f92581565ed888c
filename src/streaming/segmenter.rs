//! Cuts an incoming text into segments that the model scores once each.
//!
//! A cut depends only on the text, never on how it arrived: it is chosen within the first
//! `window_chars` characters after the previous cut, so a stream fed one character at a time and
//! a one-shot call fed the whole text see the same segments. Cuts prefer, in order: the last
//! sentence or line start in the second half of the window (the model needs no context across
//! it), else the last word start there, else exactly `window_chars` characters in. The last two
//! are "forced": the model then also sees up to `context_chars` characters on each side of the
//! cut, and only spans inside the segment's own text are kept.

use std::ops::Range;

use crate::stages::sentence::sentence_starts;

/// How a text is cut.
#[derive(Clone, Debug)]
pub struct SegmentParams {
    pub window_chars: usize,
    pub context_chars: usize,
    /// Sentence rules.
    pub lang: String,
}

/// One segment: its global position, the text the model sees, and which part of it is its own.
#[derive(Debug)]
pub struct Segment {
    /// Global byte offset of `text[own.start]`.
    pub start: usize,
    pub text: String,
    /// The segment's own bytes within `text` (the rest is context).
    pub own: Range<usize>,
}

impl Segment {
    /// The segment's own text.
    pub fn own_text(&self) -> &str {
        &self.text[self.own.clone()]
    }
}

/// Accepts text in pieces and yields segments as soon as their cut is decided.
pub struct Segmenter {
    p: SegmentParams,
    /// Received text from global byte `buf_start` on (the previous segment's tail is kept as
    /// left context).
    buf: String,
    buf_start: usize,
    /// Where the next segment starts, in `buf`.
    next: usize,
    /// Characters in `buf[next..]`.
    pending_chars: usize,
    /// Whether the previous cut was forced (the next segment then needs left context).
    left_forced: bool,
    finished: bool,
}

impl Segmenter {
    pub fn new(p: SegmentParams) -> Self {
        let p = SegmentParams {
            window_chars: p.window_chars.max(2),
            ..p
        };
        Self {
            p,
            buf: String::new(),
            buf_start: 0,
            next: 0,
            pending_chars: 0,
            left_forced: false,
            finished: false,
        }
    }

    pub fn push(&mut self, piece: &str) {
        self.buf.push_str(piece);
        self.pending_chars += piece.chars().count();
    }

    /// No more text will come: the rest becomes the last segments.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// The next segment, once its cut (and its right context, if forced) is known.
    pub fn next_segment(&mut self) -> Option<Segment> {
        let wc = self.p.window_chars;
        if self.pending_chars == 0
            || (!self.finished && self.pending_chars <= wc + self.p.context_chars)
        {
            return None;
        }
        let rest = &self.buf[self.next..];
        let (cut, forced) = if self.pending_chars <= wc {
            (rest.len(), false)
        } else {
            choose_cut(rest, wc, &self.p.lang)
        };
        let ctx_start = if self.left_forced {
            let from = back_chars(&self.buf[..self.next], self.p.context_chars);
            // Start the context at a word start when it has one.
            match self.buf[from..self.next].find(char::is_whitespace) {
                Some(i) => from + i,
                None => from,
            }
        } else {
            self.next
        };
        let ctx_end = if forced {
            let to = cut + forward_chars(&rest[cut..], self.p.context_chars);
            match rest[cut..to].rfind(char::is_whitespace) {
                Some(i) if i > 0 => cut + i,
                _ => to,
            }
        } else {
            cut
        };
        let seg = Segment {
            start: self.buf_start + self.next,
            text: self.buf[ctx_start..self.next + ctx_end].to_string(),
            own: self.next - ctx_start..self.next - ctx_start + cut,
        };
        self.pending_chars -= rest[..cut].chars().count();
        self.next += cut;
        self.left_forced = forced;
        // Keep only what the next segment may need as left context.
        let keep = back_chars(&self.buf[..self.next], self.p.context_chars);
        self.buf.drain(..keep);
        self.buf_start += keep;
        self.next -= keep;
        Some(seg)
    }
}

/// Where to cut `rest` (more than `window` characters long), and whether the cut is forced.
fn choose_cut(rest: &str, window: usize, lang: &str) -> (usize, bool) {
    let limit = forward_chars(rest, window);
    let half = forward_chars(rest, window / 2);
    let scan = &rest[..limit];
    if let Some(&s) = sentence_starts(scan, lang)
        .iter()
        .rev()
        .find(|&&s| s >= half)
    {
        return (s, false);
    }
    let mut prev_ws = false;
    let mut word_start = None;
    for (i, c) in scan[..limit].char_indices() {
        if i > half && prev_ws && !c.is_whitespace() {
            word_start = Some(i);
        }
        prev_ws = c.is_whitespace();
    }
    (word_start.unwrap_or(limit), true)
}

/// The byte offset `n` characters into `s` (or its length).
fn forward_chars(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

/// The byte offset `n` characters before the end of `s` (or 0).
pub fn back_chars(s: &str, n: usize) -> usize {
    if n == 0 {
        return s.len();
    }
    s.char_indices().rev().nth(n - 1).map_or(0, |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(text: &str, chunk: usize, window: usize, context: usize) -> Vec<Segment> {
        let mut s = Segmenter::new(SegmentParams {
            window_chars: window,
            context_chars: context,
            lang: "en".into(),
        });
        let mut out = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(chunk) {
            s.push(&piece.iter().collect::<String>());
            while let Some(seg) = s.next_segment() {
                out.push(seg);
            }
        }
        s.finish();
        while let Some(seg) = s.next_segment() {
            out.push(seg);
        }
        out
    }

    fn cuts(segs: &[Segment]) -> Vec<usize> {
        segs.iter().map(|s| s.start).collect()
    }

    #[test]
    fn segments_tile_the_text_whatever_the_chunking() {
        let text =
            "Ann Lee was seen. ".repeat(40) + &"wordy ".repeat(60) + &"x".repeat(300) + "é😀 end";
        let reference = segments(&text, text.len(), 100, 16);
        let mut joined = String::new();
        for s in &reference {
            assert_eq!(s.start, joined.len());
            joined.push_str(s.own_text());
        }
        assert_eq!(joined, text);
        for chunk in [1, 7, 33, 1024] {
            assert_eq!(
                cuts(&segments(&text, chunk, 100, 16)),
                cuts(&reference),
                "{chunk}"
            );
        }
    }

    #[test]
    fn cuts_prefer_sentences_then_words_then_force() {
        let segs = segments(&"Ann Lee was seen. ".repeat(20), 5, 100, 10);
        assert!(segs[1].own_text().starts_with("Ann"));
        assert_eq!(
            segs[1].own,
            0..segs[1].own.len(),
            "no context at a sentence start"
        );
        let segs = segments(&"word ".repeat(100), 5, 100, 10);
        assert!(segs[1].own_text().starts_with("word"));
        assert!(segs[1].own.start > 0, "left context at a forced cut");
        assert!(
            segs[0].text.len() > segs[0].own.end,
            "right context at a forced cut"
        );
        let segs = segments(&"x".repeat(250), 5, 100, 10);
        assert_eq!(cuts(&segs), vec![0, 100, 200]);
    }
}
