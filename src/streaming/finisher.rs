//! Runs the Spans → Spans stages (merging, recognizers, propagation) over a sliding region of
//! scored text and commits the spans that no later text can change.
//!
//! After each segment the region (the last `back_chars` of committed text, plus everything
//! scored since) is finished again. The commit point moves to `hold_chars` characters before the
//! scored end, back to the start of any span that crosses it, and back to a word start, so an
//! identifier is committed whole. Identifiers already committed are remembered (bounded), so
//! propagation still finds them further on. Each step depends only on the segments, which depend
//! only on the text: how the text arrived never changes what is committed.

use std::sync::Arc;

use super::segmenter::back_chars;
use crate::pipeline::Terms;
use crate::stages::{RunStats, Span, Spans, StageError};

/// Spans whose text is final, with that text.
#[derive(Debug)]
pub struct Committed {
    /// Global byte offset of `text`.
    pub start: usize,
    pub text: String,
    /// Global byte offsets, sorted, disjoint, inside `start..start + text.len()`.
    pub spans: Vec<Span>,
}

pub struct Finisher {
    hold_chars: usize,
    back_chars: usize,
    /// A region larger than this commits even through a span (splitting it), so memory stays
    /// bounded whatever the text.
    cap_chars: usize,
    region: String,
    region_chars: usize,
    /// Global byte offset of `region`.
    region_start: usize,
    /// Model spans of the region (global), in order.
    model: Vec<Span>,
    /// Sentence starts of the region (global).
    sentences: Vec<usize>,
    /// Everything before this global byte offset is committed.
    committed: usize,
    known: Terms,
}

impl Finisher {
    pub fn new(hold_chars: usize, back_chars: usize, window_chars: usize) -> Self {
        Self {
            hold_chars,
            back_chars,
            cap_chars: 2 * window_chars + hold_chars + back_chars,
            region: String::new(),
            region_chars: 0,
            region_start: 0,
            model: Vec::new(),
            sentences: Vec::new(),
            committed: 0,
            known: Terms::default(),
        }
    }

    /// Adds the next segment's own text, model spans and sentence starts (global offsets),
    /// finishes the region with `post`, and commits what is final (everything when `last`).
    pub fn push(
        &mut self,
        text: &str,
        model: Vec<Span>,
        sentences: Vec<usize>,
        last: bool,
        post: impl FnOnce(Spans, &Terms) -> Result<Spans, StageError>,
    ) -> Result<Committed, StageError> {
        self.region.push_str(text);
        self.region_chars += text.chars().count();
        self.model.extend(model);
        self.sentences.extend(sentences);
        let rs = self.region_start;
        let local = |s: &Span| Span {
            start: s.start - rs,
            end: s.end - rs,
            ..s.clone()
        };
        let region: Arc<str> = Arc::from(self.region.as_str());
        let finished = post(
            Spans {
                original: region,
                spans: self.model.iter().map(local).collect(),
                sentence_starts: self.sentences.iter().map(|&b| b - rs).collect(),
                stats: RunStats::default(),
            },
            &self.known,
        )?;
        let mut spans = finished.spans;
        spans.sort_by_key(|s| (s.start, s.end));
        let h = self.horizon(&spans, last);
        let done = self.committed - rs;
        let pieces: Vec<Span> = spans
            .into_iter()
            .filter(|s| s.end > done && s.start < h)
            .map(|s| Span {
                start: s.start.max(done) - done,
                end: s.end.min(h) - done,
                ..s
            })
            .filter(|s| s.end > s.start)
            .collect();
        let out_text = self.region[done..h].to_string();
        self.known.learn(&out_text, &pieces);
        let committed = Committed {
            start: self.committed,
            spans: pieces
                .into_iter()
                .map(|s| Span {
                    start: s.start + self.committed,
                    end: s.end + self.committed,
                    ..s
                })
                .collect(),
            text: out_text,
        };
        self.committed = rs + h;
        self.trim(h);
        Ok(committed)
    }

    /// The local commit point for this step.
    fn horizon(&self, spans: &[Span], last: bool) -> usize {
        let region = &self.region;
        let done = self.committed - self.region_start;
        if last {
            return region.len();
        }
        let mut h = back_chars(region, self.hold_chars).max(done);
        // Back to a word start, so an identifier that grows later is never split.
        if let Some(i) = region[done..h].rfind(char::is_whitespace) {
            h = done + i + region[done + i..].chars().next().map_or(1, char::len_utf8);
        } else {
            h = done;
        }
        let crossing = spans.iter().find(|s| s.start < h && s.end > h);
        if let Some(s) = crossing {
            h = s.start.max(done);
        }
        if h == done && self.region_chars > self.cap_chars {
            // A span longer than the region allows: commit up to the hold point, splitting it.
            h = back_chars(region, self.hold_chars).max(done);
        }
        h
    }

    /// Drops what lies more than `back_chars` before the new commit point.
    fn trim(&mut self, h: usize) {
        let keep_from = back_chars(&self.region[..h], self.back_chars);
        if keep_from == 0 {
            return;
        }
        self.region_chars -= self.region[..keep_from].chars().count();
        self.region.drain(..keep_from);
        self.region_start += keep_from;
        let rs = self.region_start;
        self.model.retain(|s| s.end > rs);
        for s in &mut self.model {
            s.start = s.start.max(rs);
        }
        self.sentences.retain(|&b| b >= rs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A post stage that keeps the model spans as they are.
    fn identity(s: Spans, _: &Terms) -> Result<Spans, StageError> {
        Ok(s)
    }

    #[test]
    fn commits_whole_spans_and_everything_at_the_end() {
        let mut f = Finisher::new(10, 10, 40);
        let a = "aaaa bbbb cccc dddd eeee ";
        let c = f
            .push(
                a,
                vec![Span::model(15, 24, "NAME", 0.9)],
                vec![],
                false,
                identity,
            )
            .expect("push");
        // The hold point (10 chars before the end) falls inside the span: it waits.
        assert_eq!(c.start, 0);
        assert_eq!(c.text, "aaaa bbbb cccc ");
        assert!(c.spans.is_empty());
        let b = "ffff gggg";
        let c2 = f.push(b, vec![], vec![], true, identity).expect("push");
        assert_eq!(c2.start, 15);
        assert_eq!(c2.text, "dddd eeee ffff gggg");
        assert_eq!((c2.spans[0].start, c2.spans[0].end), (15, 24));
    }
}
