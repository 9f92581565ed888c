//! The typed stages of the detection pipeline:
//!
//! Text ─normalize─▶ Text ─tokenize─▶ Tokens ─window─▶ Windows ─infer─▶ TokenScores
//!      ─aggregate─▶ Spans ─merge─▶ Spans ─recognize─▶ Spans
//!
//! Each stage takes one item type and yields another; `pipeline` checks their order at start-up.

pub mod aggregate;
pub mod before_towns;
pub mod branch_towns;
pub mod hl7;
pub mod infer;
pub mod letterhead;
pub mod localities;
pub mod merge;
pub mod ocr_digits;
pub mod places;
pub mod recognize;
pub mod sentence;
pub mod span;
pub mod speakers;
pub mod structure;
pub mod tables;
pub mod text;
pub mod tokens;
pub mod window;

pub use aggregate::Aggregation;
pub use span::{RunStats, Source, Span, Spans};
pub use text::{CharIndex, TextView};

use crate::inference::InferenceError;

/// Why a stage failed.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("tokenizer failed: {0}")]
    Tokenizer(String),
    #[error(transparent)]
    Inference(#[from] InferenceError),
    #[error("pipeline fault: {0}")]
    Internal(String),
}

/// The per-request choices the stages honour (the pipeline decides which ones apply).
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub aggregation: Aggregation,
    pub confidence_threshold: f32,
    pub group_entities: bool,
    pub sentence_detection: bool,
    pub sentence_clean: bool,
    pub sentence_language: String,
    pub normalize_accents: bool,
    pub smart_merging: bool,
    pub safety_sweep: bool,
}

/// Languages for which accents are stripped when the request leaves `normalize_accents` null.
const AUTO_ACCENT_LANGS: &[&str] = &["es"];

impl RunOptions {
    /// The options of the PII pipelines (extraction, de-identification and what builds on them):
    /// the pipeline files fix the stages; a request chooses only these.
    pub fn pii(
        lang: &str,
        normalize_accents: Option<bool>,
        confidence_threshold: f32,
        smart_merging: bool,
        safety_sweep: bool,
    ) -> Self {
        Self {
            aggregation: Aggregation::Max,
            confidence_threshold,
            group_entities: true,
            sentence_language: lang.to_string(),
            normalize_accents: normalize_accents.unwrap_or(AUTO_ACCENT_LANGS.contains(&lang)),
            smart_merging,
            safety_sweep,
            ..Self::default()
        }
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            aggregation: Aggregation::Simple,
            confidence_threshold: 0.0,
            group_entities: false,
            sentence_detection: true,
            sentence_clean: false,
            sentence_language: "en".into(),
            normalize_accents: false,
            smart_merging: false,
            safety_sweep: false,
        }
    }
}
