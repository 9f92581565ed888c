//! The one table a cohort is evaluated over: every clinical event of a load, flattened, in Arrow.
//! Built by `omop` (from inline records or a stored Parquet dataset); read by the phenotype and
//! Circe evaluators. Ids are the load's internal 63-bit CDM ids; mapping them back to the
//! caller's own ids is the API layer's job. The low-cardinality string columns are
//! dictionary-encoded ([`dictionary`]): a builder appends a key per row, and an evaluator
//! compares each distinct value once instead of every row's string.

use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// Column names of the event table, in schema order.
pub mod col {
    pub const PERSON_ID: &str = "person_id";
    pub const CONCEPT_ID: &str = "concept_id";
    /// The concept's `vocabulary_id` from the load's concept table; null when the load has no
    /// concept row for it (OMOP concept ids are global, so the id alone still identifies it).
    pub const VOCABULARY_ID: &str = "vocabulary_id";
    /// `condition_occurrence`, `drug_exposure`, `procedure_occurrence`, `measurement`,
    /// `observation`, `visit_occurrence`, `death`, or `note_nlp` for a mention that became no
    /// clinical event (negated, hypothetical, uncertain or not about the patient).
    pub const DOMAIN_TABLE: &str = "domain_table";
    /// The row id in `domain_table`.
    pub const EVENT_ID: &str = "event_id";
    pub const START_DATE: &str = "start_date";
    /// Null when the row has no end date (Circe then uses start + 1 day).
    pub const END_DATE: &str = "end_date";
    /// Set for events that come from a note mention.
    pub const NOTE_ID: &str = "note_id";
    pub const NOTE_NLP_ID: &str = "note_nlp_id";
    /// May be null even for a mention: a builder may defer it, and whoever shapes the answer
    /// looks it up for the evidence pointers alone.
    pub const SOURCE_NOTE_HASH: &str = "source_note_hash";
    /// Code-point offsets of the mention in its note.
    pub const SPAN_START: &str = "span_start";
    pub const SPAN_END: &str = "span_end";
    /// Assertion attributes; structured rows carry the defaults
    /// (false, "recent", "certain", "patient").
    pub const NEGATED: &str = "negated";
    /// `recent` | `historical` | `hypothetical`
    pub const TEMPORALITY: &str = "temporality";
    /// `certain` | `uncertain`
    pub const CERTAINTY: &str = "certainty";
    /// `patient` | `family` | `other`
    pub const EXPERIENCER: &str = "experiencer";
}

/// The type of the dictionary-encoded string columns: `Int16` keys into `Utf8` values.
pub fn dictionary() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8))
}

/// The event table's schema.
pub fn event_schema() -> SchemaRef {
    use col::*;
    Arc::new(Schema::new(vec![
        Field::new(PERSON_ID, DataType::Int64, false),
        Field::new(CONCEPT_ID, DataType::Int64, false),
        Field::new(VOCABULARY_ID, dictionary(), true),
        Field::new(DOMAIN_TABLE, dictionary(), false),
        Field::new(EVENT_ID, DataType::Int64, false),
        Field::new(START_DATE, DataType::Date32, true),
        Field::new(END_DATE, DataType::Date32, true),
        Field::new(NOTE_ID, DataType::Int64, true),
        Field::new(NOTE_NLP_ID, DataType::Int64, true),
        Field::new(SOURCE_NOTE_HASH, DataType::Utf8, true),
        Field::new(SPAN_START, DataType::Int64, true),
        Field::new(SPAN_END, DataType::Int64, true),
        Field::new(NEGATED, DataType::Boolean, false),
        Field::new(TEMPORALITY, dictionary(), false),
        Field::new(CERTAINTY, dictionary(), false),
        Field::new(EXPERIENCER, dictionary(), false),
    ]))
}

/// Observation periods: `person_id` Int64, `start_date` Date32, `end_date` Date32 (all non-null).
pub fn observation_period_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("person_id", DataType::Int64, false),
        Field::new("start_date", DataType::Date32, false),
        Field::new("end_date", DataType::Date32, false),
    ]))
}

/// Everything a cohort is evaluated over.
#[derive(Debug, Clone)]
pub struct CohortData {
    /// One batch with `event_schema()`. A (domain_table, event_id) pair appears once.
    pub events: RecordBatch,
    /// Every person of the load (person table ∪ persons of notes and events), sorted, unique.
    /// `not` is relative to this set.
    pub persons: Int64Array,
    /// One batch with `observation_period_schema()`.
    pub observation_periods: RecordBatch,
}
