//! The OMOP CDM 5.4 tables this service writes, column by column, as Arrow schemas.
//!
//! Types follow the CDM: `integer` → Int64 (widened: our deterministic ids are 63-bit),
//! `date` → Date32, `datetime` → Timestamp(µs), `varchar` → Utf8, `float` → Float64.
//! A CDM-required column is non-nullable, and its Arrow field carries the metadata
//! `cdm_required = "true"`. One documented exception: `person.year_of_birth` stays nullable,
//! because a person known only from a note has no birth year and we never invent one;
//! `validate_constraints` reports such rows.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// The CDM type of one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    Int,
    Float,
    Text,
    Date,
    Timestamp,
}

impl ColType {
    pub fn arrow(self) -> DataType {
        match self {
            ColType::Int => DataType::Int64,
            ColType::Float => DataType::Float64,
            ColType::Text => DataType::Utf8,
            ColType::Date => DataType::Date32,
            ColType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        }
    }
}

/// One column: name, type, and whether the CDM requires it.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub name: &'static str,
    pub ty: ColType,
    pub required: bool,
}

/// One table: its name, columns and primary key column (none for `death`).
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [Column],
    pub primary_key: Option<&'static str>,
}

impl Table {
    /// Position of a column; the names are compile-time constants, so a miss is a bug caught by
    /// the unit test that looks up every name this crate uses.
    pub fn index(&self, column: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == column)
    }

    /// The Arrow schema of this table.
    pub fn schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|c| {
                let nullable = !c.required || (self.name == "person" && c.name == "year_of_birth");
                let f = Field::new(c.name, c.ty.arrow(), nullable);
                if c.required {
                    f.with_metadata(HashMap::from([(
                        "cdm_required".to_string(),
                        "true".to_string(),
                    )]))
                } else {
                    f
                }
            })
            .collect();
        Arc::new(Schema::new(fields))
    }
}

const fn req(name: &'static str, ty: ColType) -> Column {
    Column {
        name,
        ty,
        required: true,
    }
}
const fn opt(name: &'static str, ty: ColType) -> Column {
    Column {
        name,
        ty,
        required: false,
    }
}

use ColType::{Date as D, Float as F, Int as I, Text as S, Timestamp as TS};

pub static PERSON: Table = Table {
    name: "person",
    primary_key: Some("person_id"),
    columns: &[
        req("person_id", I),
        req("gender_concept_id", I),
        req("year_of_birth", I),
        opt("month_of_birth", I),
        opt("day_of_birth", I),
        opt("birth_datetime", TS),
        req("race_concept_id", I),
        req("ethnicity_concept_id", I),
        opt("location_id", I),
        opt("provider_id", I),
        opt("care_site_id", I),
        opt("person_source_value", S),
        opt("gender_source_value", S),
        opt("gender_source_concept_id", I),
        opt("race_source_value", S),
        opt("race_source_concept_id", I),
        opt("ethnicity_source_value", S),
        opt("ethnicity_source_concept_id", I),
    ],
};

pub static OBSERVATION_PERIOD: Table = Table {
    name: "observation_period",
    primary_key: Some("observation_period_id"),
    columns: &[
        req("observation_period_id", I),
        req("person_id", I),
        req("observation_period_start_date", D),
        req("observation_period_end_date", D),
        req("period_type_concept_id", I),
    ],
};

pub static VISIT_OCCURRENCE: Table = Table {
    name: "visit_occurrence",
    primary_key: Some("visit_occurrence_id"),
    columns: &[
        req("visit_occurrence_id", I),
        req("person_id", I),
        req("visit_concept_id", I),
        req("visit_start_date", D),
        opt("visit_start_datetime", TS),
        req("visit_end_date", D),
        opt("visit_end_datetime", TS),
        req("visit_type_concept_id", I),
        opt("provider_id", I),
        opt("care_site_id", I),
        opt("visit_source_value", S),
        opt("visit_source_concept_id", I),
        opt("admitted_from_concept_id", I),
        opt("admitted_from_source_value", S),
        opt("discharged_to_concept_id", I),
        opt("discharged_to_source_value", S),
        opt("preceding_visit_occurrence_id", I),
    ],
};

pub static CONDITION_OCCURRENCE: Table = Table {
    name: "condition_occurrence",
    primary_key: Some("condition_occurrence_id"),
    columns: &[
        req("condition_occurrence_id", I),
        req("person_id", I),
        req("condition_concept_id", I),
        req("condition_start_date", D),
        opt("condition_start_datetime", TS),
        opt("condition_end_date", D),
        opt("condition_end_datetime", TS),
        req("condition_type_concept_id", I),
        opt("condition_status_concept_id", I),
        opt("stop_reason", S),
        opt("provider_id", I),
        opt("visit_occurrence_id", I),
        opt("visit_detail_id", I),
        opt("condition_source_value", S),
        opt("condition_source_concept_id", I),
        opt("condition_status_source_value", S),
    ],
};

pub static DRUG_EXPOSURE: Table = Table {
    name: "drug_exposure",
    primary_key: Some("drug_exposure_id"),
    columns: &[
        req("drug_exposure_id", I),
        req("person_id", I),
        req("drug_concept_id", I),
        req("drug_exposure_start_date", D),
        opt("drug_exposure_start_datetime", TS),
        req("drug_exposure_end_date", D),
        opt("drug_exposure_end_datetime", TS),
        opt("verbatim_end_date", D),
        req("drug_type_concept_id", I),
        opt("stop_reason", S),
        opt("refills", I),
        opt("quantity", F),
        opt("days_supply", I),
        opt("sig", S),
        opt("route_concept_id", I),
        opt("lot_number", S),
        opt("provider_id", I),
        opt("visit_occurrence_id", I),
        opt("visit_detail_id", I),
        opt("drug_source_value", S),
        opt("drug_source_concept_id", I),
        opt("route_source_value", S),
        opt("dose_unit_source_value", S),
    ],
};

pub static PROCEDURE_OCCURRENCE: Table = Table {
    name: "procedure_occurrence",
    primary_key: Some("procedure_occurrence_id"),
    columns: &[
        req("procedure_occurrence_id", I),
        req("person_id", I),
        req("procedure_concept_id", I),
        req("procedure_date", D),
        opt("procedure_datetime", TS),
        opt("procedure_end_date", D),
        opt("procedure_end_datetime", TS),
        req("procedure_type_concept_id", I),
        opt("modifier_concept_id", I),
        opt("quantity", I),
        opt("provider_id", I),
        opt("visit_occurrence_id", I),
        opt("visit_detail_id", I),
        opt("procedure_source_value", S),
        opt("procedure_source_concept_id", I),
        opt("modifier_source_value", S),
    ],
};

pub static MEASUREMENT: Table = Table {
    name: "measurement",
    primary_key: Some("measurement_id"),
    columns: &[
        req("measurement_id", I),
        req("person_id", I),
        req("measurement_concept_id", I),
        req("measurement_date", D),
        opt("measurement_datetime", TS),
        opt("measurement_time", S),
        req("measurement_type_concept_id", I),
        opt("operator_concept_id", I),
        opt("value_as_number", F),
        opt("value_as_concept_id", I),
        opt("unit_concept_id", I),
        opt("range_low", F),
        opt("range_high", F),
        opt("provider_id", I),
        opt("visit_occurrence_id", I),
        opt("visit_detail_id", I),
        opt("measurement_source_value", S),
        opt("measurement_source_concept_id", I),
        opt("unit_source_value", S),
        opt("unit_source_concept_id", I),
        opt("value_source_value", S),
        opt("measurement_event_id", I),
        opt("meas_event_field_concept_id", I),
    ],
};

pub static OBSERVATION: Table = Table {
    name: "observation",
    primary_key: Some("observation_id"),
    columns: &[
        req("observation_id", I),
        req("person_id", I),
        req("observation_concept_id", I),
        req("observation_date", D),
        opt("observation_datetime", TS),
        req("observation_type_concept_id", I),
        opt("value_as_number", F),
        opt("value_as_string", S),
        opt("value_as_concept_id", I),
        opt("qualifier_concept_id", I),
        opt("unit_concept_id", I),
        opt("provider_id", I),
        opt("visit_occurrence_id", I),
        opt("visit_detail_id", I),
        opt("observation_source_value", S),
        opt("observation_source_concept_id", I),
        opt("unit_source_value", S),
        opt("qualifier_source_value", S),
        opt("value_source_value", S),
        opt("observation_event_id", I),
        opt("obs_event_field_concept_id", I),
    ],
};

pub static DEATH: Table = Table {
    name: "death",
    primary_key: None,
    columns: &[
        req("person_id", I),
        req("death_date", D),
        opt("death_datetime", TS),
        opt("death_type_concept_id", I),
        opt("cause_concept_id", I),
        opt("cause_source_value", S),
        opt("cause_source_concept_id", I),
    ],
};

pub static NOTE: Table = Table {
    name: "note",
    primary_key: Some("note_id"),
    columns: &[
        req("note_id", I),
        req("person_id", I),
        req("note_date", D),
        opt("note_datetime", TS),
        req("note_type_concept_id", I),
        req("note_class_concept_id", I),
        opt("note_title", S),
        req("note_text", S),
        req("encoding_concept_id", I),
        req("language_concept_id", I),
        opt("provider_id", I),
        opt("visit_occurrence_id", I),
        opt("visit_detail_id", I),
        opt("note_source_value", S),
        opt("note_event_id", I),
        opt("note_event_field_concept_id", I),
    ],
};

pub static NOTE_NLP: Table = Table {
    name: "note_nlp",
    primary_key: Some("note_nlp_id"),
    columns: &[
        req("note_nlp_id", I),
        req("note_id", I),
        opt("section_concept_id", I),
        opt("snippet", S),
        opt("offset", S),
        req("lexical_variant", S),
        opt("note_nlp_concept_id", I),
        opt("note_nlp_source_concept_id", I),
        opt("nlp_system", S),
        req("nlp_date", D),
        opt("nlp_datetime", TS),
        opt("term_exists", S),
        opt("term_temporal", S),
        opt("term_modifiers", S),
    ],
};

pub static CONCEPT: Table = Table {
    name: "concept",
    primary_key: Some("concept_id"),
    columns: &[
        req("concept_id", I),
        req("concept_name", S),
        req("domain_id", S),
        req("vocabulary_id", S),
        req("concept_class_id", S),
        opt("standard_concept", S),
        req("concept_code", S),
        req("valid_start_date", D),
        req("valid_end_date", D),
        opt("invalid_reason", S),
    ],
};

/// Not CDM: the SHA-256 of each note's text (of its id when it has no text), so evidence
/// pointers can name a note without its text, from a stored dataset too.
pub static NOTE_HASH: Table = Table {
    name: "phiflow_note_hash",
    primary_key: Some("note_id"),
    columns: &[req("note_id", I), req("source_note_hash", S)],
};

/// Not CDM: every person the load mentions in any table (sorted, unique), so a cohort's `not`
/// knows the whole population without reading every table.
pub static PERSON_INDEX: Table = Table {
    name: "phiflow_person",
    primary_key: Some("person_id"),
    columns: &[req("person_id", I)],
};

/// Not CDM: which clinical row each asserted mention became (the row has the mention's id).
/// The link is explicit so a plain row that merely shares an id is never mistaken for one.
pub static DERIVED_EVENT: Table = Table {
    name: "phiflow_derived_event",
    primary_key: Some("note_nlp_id"),
    columns: &[
        req("note_nlp_id", I),
        req("event_table", S),
        req("concept_id", I),
    ],
};

/// Every table a load writes, in the order of the response's `row_counts`.
pub static TABLES: [&Table; 16] = [
    &CONCEPT,
    &PERSON,
    &OBSERVATION_PERIOD,
    &VISIT_OCCURRENCE,
    &NOTE,
    &NOTE_NLP,
    &CONDITION_OCCURRENCE,
    &DRUG_EXPOSURE,
    &PROCEDURE_OCCURRENCE,
    &MEASUREMENT,
    &OBSERVATION,
    &DEATH,
    &NOTE_HASH,
    &PERSON_INDEX,
    &DERIVED_EVENT,
    &SOURCE_TO_CONCEPT_MAP,
];

pub static SOURCE_TO_CONCEPT_MAP: Table = Table {
    name: "source_to_concept_map",
    primary_key: None,
    columns: &[
        req("source_code", S),
        req("source_concept_id", I),
        req("source_vocabulary_id", S),
        opt("source_code_description", S),
        req("target_concept_id", I),
        req("target_vocabulary_id", S),
        req("valid_start_date", D),
        req("valid_end_date", D),
        opt("invalid_reason", S),
    ],
};

/// The tables a plain record (`"table": …`) may name.
pub fn plain_table(name: &str) -> Option<&'static Table> {
    TABLES.iter().copied().find(|t| {
        t.name == name && !t.name.starts_with("phiflow_") && t.name != SOURCE_TO_CONCEPT_MAP.name
    })
}

/// A clinical event table: its domain (`concept.domain_id`), concept column, and date columns.
#[derive(Debug)]
pub struct EventTable {
    pub table: &'static Table,
    pub domain: &'static str,
    pub concept: &'static str,
    pub start_date: &'static str,
    pub end_date: Option<&'static str>,
    /// The type concept column; rows derived from a note mention carry 32858 ("NLP").
    pub type_concept: &'static str,
}

pub static EVENT_TABLES: [EventTable; 5] = [
    EventTable {
        table: &CONDITION_OCCURRENCE,
        domain: "Condition",
        concept: "condition_concept_id",
        start_date: "condition_start_date",
        end_date: Some("condition_end_date"),
        type_concept: "condition_type_concept_id",
    },
    EventTable {
        table: &DRUG_EXPOSURE,
        domain: "Drug",
        concept: "drug_concept_id",
        start_date: "drug_exposure_start_date",
        end_date: Some("drug_exposure_end_date"),
        type_concept: "drug_type_concept_id",
    },
    EventTable {
        table: &PROCEDURE_OCCURRENCE,
        domain: "Procedure",
        concept: "procedure_concept_id",
        start_date: "procedure_date",
        end_date: Some("procedure_end_date"),
        type_concept: "procedure_type_concept_id",
    },
    EventTable {
        table: &MEASUREMENT,
        domain: "Measurement",
        concept: "measurement_concept_id",
        start_date: "measurement_date",
        end_date: None,
        type_concept: "measurement_type_concept_id",
    },
    EventTable {
        table: &OBSERVATION,
        domain: "Observation",
        concept: "observation_concept_id",
        start_date: "observation_date",
        end_date: None,
        type_concept: "observation_type_concept_id",
    },
];

/// The event table for a CDM domain id.
pub fn event_table_for_domain(domain: &str) -> Option<&'static EventTable> {
    EVENT_TABLES.iter().find(|e| e.domain == domain)
}

/// OMOP type concept "NLP": marks an event row derived from a note mention.
pub const NLP_TYPE_CONCEPT: i64 = 32858;
/// OMOP type concept "EHR" for notes and visits synthesized from a grounded note.
pub const EHR_TYPE_CONCEPT: i64 = 32817;
/// UTF-8 encoding concept.
pub const UTF8_CONCEPT: i64 = 32678;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_column_exists() {
        for e in &EVENT_TABLES {
            assert!(e.table.index(e.concept).is_some());
            assert!(e.table.index(e.start_date).is_some());
            assert!(e.table.index(e.type_concept).is_some());
            if let Some(end) = e.end_date {
                assert!(e.table.index(end).is_some());
            }
        }
        for t in TABLES {
            if let Some(pk) = t.primary_key {
                assert!(t.index(pk).is_some(), "{}", t.name);
            }
        }
    }

    #[test]
    fn required_columns_are_not_nullable_except_the_birth_year() {
        let s = PERSON.schema();
        assert!(s.field_with_name("year_of_birth").unwrap().is_nullable());
        assert!(!s.field_with_name("person_id").unwrap().is_nullable());
        let n = NOTE.schema();
        let f = n.field_with_name("note_text").unwrap();
        assert!(!f.is_nullable());
        assert_eq!(
            f.metadata().get("cdm_required").map(String::as_str),
            Some("true")
        );
    }
}
