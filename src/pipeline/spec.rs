//! The TOML form of a pipeline. A parameter left out is taken from the request.

use serde::Deserialize;

use crate::stages::Aggregation;

/// The item types that flow between stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Text,
    Tokens,
    Windows,
    Scores,
    Spans,
}

/// One pipeline file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub stages: Vec<StageSpec>,
}

/// One stage and its parameters.
#[derive(Debug, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case", deny_unknown_fields)]
pub enum StageSpec {
    /// Text → Text: accent stripping and/or whitespace cleanup, offsets kept.
    Normalize {
        accents: Option<bool>,
        clean: Option<bool>,
    },
    /// Text → Tokens: whole-text encoding, optional sentence starts.
    Tokenize { sentences: Option<bool> },
    /// Tokens → Windows.
    Window {
        max_tokens: usize,
        overlap_tokens: usize,
        prefer_sentences: Option<bool>,
    },
    /// Windows → Scores, through the model's batching queue.
    Infer,
    /// Scores → Spans.
    Aggregate { strategy: Option<Aggregation> },
    /// Spans → Spans.
    Merge {
        #[serde(default = "yes")]
        join_pieces: bool,
        #[serde(default)]
        snap_to_words: bool,
        group_entities: Option<bool>,
        smart_merging: Option<bool>,
    },
    /// Spans → Spans: recognizer findings merged with model spans, and the safety sweep.
    Recognize {
        smart_merging: Option<bool>,
        safety_sweep: Option<bool>,
        #[serde(default)]
        join_names: bool,
        #[serde(default)]
        propagate: bool,
        /// A place of care and its town or campus are one place.
        #[serde(default)]
        whole_places: bool,
        /// Labels that open lines of a conversation are people.
        #[serde(default)]
        speakers: bool,
        /// Recognizer findings under the request's confidence threshold are dropped
        /// (extraction); by default validators alone decide (de-identification).
        #[serde(default)]
        findings_obey_threshold: bool,
    },
}

fn yes() -> bool {
    true
}

impl StageSpec {
    pub fn kinds(&self) -> (Kind, Kind) {
        match self {
            Self::Normalize { .. } => (Kind::Text, Kind::Text),
            Self::Tokenize { .. } => (Kind::Text, Kind::Tokens),
            Self::Window { .. } => (Kind::Tokens, Kind::Windows),
            Self::Infer => (Kind::Windows, Kind::Scores),
            Self::Aggregate { .. } => (Kind::Scores, Kind::Spans),
            Self::Merge { .. } | Self::Recognize { .. } => (Kind::Spans, Kind::Spans),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Self::Normalize { .. } => "normalize",
            Self::Tokenize { .. } => "tokenize",
            Self::Window { .. } => "window",
            Self::Infer => "infer",
            Self::Aggregate { .. } => "aggregate",
            Self::Merge { .. } => "merge",
            Self::Recognize { .. } => "recognize",
        }
    }
}
