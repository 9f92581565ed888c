//! The entities of a de-identification, shaped for every surface: where each was in the input,
//! what it was, what now stands there. Never the original text.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::deid::canonical_label;
use crate::deid::operators::{Applied, Redaction};
use crate::stages::{CharIndex, Source, Span};

/// One entity: code point offsets into the whole input and the whole output.
#[derive(Clone, Debug, Serialize)]
pub struct DeidEntity {
    pub label: String,
    pub canonical_label: &'static str,
    pub hipaa_class: &'static str,
    pub confidence: f64,
    pub start: usize,
    pub end: usize,
    pub source: Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    pub action: Applied,
    pub replacement: Option<String>,
    pub output_start: usize,
    pub output_end: usize,
}

/// Builds entities and label counts piece by piece, with code point offsets into the whole
/// input and the whole output.
#[derive(Default)]
pub struct EntityShaper {
    pub entities: Vec<DeidEntity>,
    pub counts: BTreeMap<&'static str, usize>,
    in_chars: usize,
    out_chars: usize,
    out_bytes: usize,
}

impl EntityShaper {
    /// Adds the spans of one input piece that starts at byte `base` of the input (span offsets
    /// are into the whole input) and the redactions made for them in `out` (byte offsets into
    /// the whole output).
    pub fn push(
        &mut self,
        input: &str,
        base: usize,
        spans: &[Span],
        out: &str,
        redactions: &[Redaction],
    ) {
        let (ii, oi) = (CharIndex::new(input), CharIndex::new(out));
        for (s, red) in spans.iter().zip(redactions) {
            let canon = canonical_label(&s.label);
            if red.action != Applied::Keep {
                *self.counts.entry(canon.name).or_default() += 1;
            }
            self.entities.push(DeidEntity {
                label: s.label.clone(),
                canonical_label: canon.name,
                hipaa_class: canon.hipaa_class,
                confidence: (f64::from(s.score) * 1e4).round() / 1e4,
                start: self.in_chars + ii.char_offset(s.start - base),
                end: self.in_chars + ii.char_offset(s.end - base),
                source: s.source,
                pattern: s.pattern.as_deref().map(String::from),
                action: red.action,
                replacement: red.replacement.clone(),
                output_start: self.out_chars + oi.char_offset(red.out_start - self.out_bytes),
                output_end: self.out_chars + oi.char_offset(red.out_end - self.out_bytes),
            });
        }
        self.in_chars += input.chars().count();
        self.out_chars += out.chars().count();
        self.out_bytes += out.len();
    }

    /// Spans that were rewritten (not kept).
    pub fn redacted(&self) -> usize {
        self.counts.values().sum()
    }
}
