//! Spans: what every detection stage produces, in byte offsets of the caller's exact input.

use std::sync::Arc;

/// Where a span came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Model,
    Pattern,
    #[serde(rename = "model+pattern")]
    Both,
}

/// One detected entity. `start..end` are byte offsets into the original text.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    /// The entity type without its B-/I- prefix.
    pub label: String,
    pub score: f32,
    pub source: Source,
    /// The recognizer pattern that found or confirmed it, if any.
    pub pattern: Option<Arc<str>>,
}

impl Span {
    pub fn model(start: usize, end: usize, label: impl Into<String>, score: f32) -> Self {
        Self {
            start,
            end,
            label: label.into(),
            score,
            source: Source::Model,
            pattern: None,
        }
    }

    /// A model span (score 0.9) over the first occurrence of `word` in `text`, for test set-ups.
    #[cfg(test)]
    pub fn model_at(text: &str, word: &str, label: &str) -> Self {
        let start = text.find(word).expect("word in text");
        Self::model(start, start + word.len(), label, 0.9)
    }

    /// A span a recognizer pattern (or a rule named like one) found on its own.
    pub fn pattern(
        start: usize,
        end: usize,
        label: impl Into<String>,
        score: f32,
        pattern: impl Into<Arc<str>>,
    ) -> Self {
        Self {
            start,
            end,
            label: label.into(),
            score,
            source: Source::Pattern,
            pattern: Some(pattern.into()),
        }
    }
}

/// The spans of one text, with the sentence starts that grouping must not cross.
#[derive(Debug)]
pub struct Spans {
    pub original: Arc<str>,
    pub spans: Vec<Span>,
    pub sentence_starts: Vec<usize>,
    pub stats: RunStats,
}

/// Counts reported in response metadata.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RunStats {
    pub tokens: usize,
    pub windows: usize,
    pub sentences: usize,
    /// Recognizer findings the safety sweep added (the model had nothing there).
    pub sweep_added: usize,
    /// Model spans widened or joined by recognizer findings (smart merging, sweep overlaps).
    pub pattern_merged: usize,
    /// Spans added because the same identifier was found elsewhere in the text.
    pub propagated: usize,
}
