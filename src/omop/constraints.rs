//! `validate_constraints`: checks a built load against the CDM's rules that a single row cannot
//! show: foreign keys, note offsets, concept references and domain consistency. Works on the
//! Arrow tables, so it reads the same whether they came from records or from Parquet.

use std::collections::{BTreeMap, HashMap, HashSet};

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int64Type};
use arrow_array::{Array, Int64Array, RecordBatch};
use serde::Serialize;

use super::assertion::Assertion;
use super::cdm::{self, EVENT_TABLES};

/// At most this many violations are listed; counts are complete.
const MAX_EXAMPLES: usize = 100;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Violation {
    pub reason: &'static str,
    pub table: &'static str,
    pub column: &'static str,
    /// The row's primary key (the person id for `death`); null when the row has none.
    pub row_id: Option<i64>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Violations {
    pub count: usize,
    pub by_reason: BTreeMap<&'static str, usize>,
    pub violations: Vec<Violation>,
    pub truncated: bool,
}

impl Violations {
    fn add(
        &mut self,
        reason: &'static str,
        table: &'static str,
        column: &'static str,
        row_id: Option<i64>,
    ) {
        self.count += 1;
        *self.by_reason.entry(reason).or_default() += 1;
        if self.violations.len() < MAX_EXAMPLES {
            self.violations.push(Violation {
                reason,
                table,
                column,
                row_id,
            });
        } else {
            self.truncated = true;
        }
    }
}

struct Tables<'a>(HashMap<&'a str, &'a RecordBatch>);

impl<'a> Tables<'a> {
    fn get(&self, t: &cdm::Table) -> Option<&'a RecordBatch> {
        self.0.get(t.name).copied()
    }
    fn ints(&self, t: &cdm::Table, col: &str) -> Option<&'a Int64Array> {
        self.get(t)?
            .column_by_name(col)?
            .as_primitive_opt::<Int64Type>()
    }
    fn ids(&self, t: &cdm::Table, col: &str) -> HashSet<i64> {
        self.ints(t, col)
            .map(|a| a.iter().flatten().collect())
            .unwrap_or_default()
    }
}

/// Runs every check.
pub fn validate(tables: &[(&'static str, RecordBatch)]) -> Violations {
    let t = Tables(tables.iter().map(|(n, b)| (*n, b)).collect());
    let mut v = Violations::default();
    required(&t, &mut v);
    let persons = t.ids(&cdm::PERSON, "person_id");
    let visits = t.ids(&cdm::VISIT_OCCURRENCE, "visit_occurrence_id");
    let person_tables: Vec<&cdm::Table> = vec![
        &cdm::OBSERVATION_PERIOD,
        &cdm::VISIT_OCCURRENCE,
        &cdm::NOTE,
        &cdm::DEATH,
    ]
    .into_iter()
    .chain(EVENT_TABLES.iter().map(|e| e.table))
    .collect();
    for table in &person_tables {
        foreign_key(&t, table, "person_id", &persons, "missing_person", &mut v);
    }
    for table in [&cdm::NOTE]
        .into_iter()
        .chain(EVENT_TABLES.iter().map(|e| e.table))
    {
        foreign_key(
            &t,
            table,
            "visit_occurrence_id",
            &visits,
            "missing_visit",
            &mut v,
        );
    }
    let notes = t.ids(&cdm::NOTE, "note_id");
    foreign_key(
        &t,
        &cdm::NOTE_NLP,
        "note_id",
        &notes,
        "missing_note",
        &mut v,
    );
    note_offsets(&t, &mut v);
    concepts(&t, &mut v);
    date_ranges(&t, &mut v);
    domain_events(&t, &mut v);
    v
}

fn row_id(t: &Tables<'_>, table: &cdm::Table, row: usize) -> Option<i64> {
    let key = table.primary_key.unwrap_or("person_id");
    t.ints(table, key)
        .filter(|a| a.is_valid(row))
        .map(|a| a.value(row))
}

fn required(t: &Tables<'_>, v: &mut Violations) {
    for table in cdm::TABLES {
        let Some(batch) = t.get(table) else { continue };
        for col in table.columns.iter().filter(|c| c.required) {
            let Some(a) = batch.column_by_name(col.name) else {
                continue;
            };
            if a.null_count() == 0 {
                continue;
            }
            for row in (0..a.len()).filter(|r| a.is_null(*r)) {
                v.add(
                    "missing_required_field",
                    table.name,
                    col.name,
                    row_id(t, table, row),
                );
            }
        }
    }
}

fn foreign_key(
    t: &Tables<'_>,
    table: &'static cdm::Table,
    column: &'static str,
    targets: &HashSet<i64>,
    reason: &'static str,
    v: &mut Violations,
) {
    let Some(a) = t.ints(table, column) else {
        return;
    };
    for (row, id) in a.iter().enumerate() {
        if let Some(id) = id
            && !targets.contains(&id)
        {
            v.add(reason, table.name, column, row_id(t, table, row));
        }
    }
}

/// `offset` is `start-end` in code points and must lie within the note's text (a note loaded
/// without text has no length to check against).
fn note_offsets(t: &Tables<'_>, v: &mut Violations) {
    let Some(notes) = t.get(&cdm::NOTE) else {
        return;
    };
    let (Some(ids), Some(texts)) = (
        notes
            .column_by_name("note_id")
            .and_then(|c| c.as_primitive_opt::<Int64Type>()),
        notes
            .column_by_name("note_text")
            .and_then(|c| c.as_string_opt::<i32>()),
    ) else {
        return;
    };
    let lengths: HashMap<i64, usize> = ids
        .iter()
        .zip(texts.iter())
        .filter_map(|(id, text)| Some((id?, text.map_or(0, |s| s.chars().count()))))
        .collect();
    let Some(nlp) = t.get(&cdm::NOTE_NLP) else {
        return;
    };
    let (Some(note_ids), Some(offsets)) = (
        nlp.column_by_name("note_id")
            .and_then(|c| c.as_primitive_opt::<Int64Type>()),
        nlp.column_by_name("offset")
            .and_then(|c| c.as_string_opt::<i32>()),
    ) else {
        return;
    };
    for row in 0..nlp.num_rows() {
        if offsets.is_null(row) {
            continue;
        }
        let ok = match parse_offset(offsets.value(row)) {
            None => false,
            Some((_, end)) => match lengths.get(&note_ids.value(row)) {
                Some(0) | None => true,
                Some(len) => end as usize <= *len,
            },
        };
        if !ok {
            v.add(
                "invalid_note_offset",
                "note_nlp",
                "offset",
                row_id(t, &cdm::NOTE_NLP, row),
            );
        }
    }
}

/// `start-end` with `0 ≤ start ≤ end`.
pub fn parse_offset(s: &str) -> Option<(i64, i64)> {
    let (a, b) = s.split_once('-')?;
    let (a, b) = (a.trim().parse::<i64>().ok()?, b.trim().parse::<i64>().ok()?);
    (a >= 0 && b >= a).then_some((a, b))
}

/// The concept columns that name what a row is about (type concepts, units and the like are
/// usually standard concepts outside a load's concept table, so they are not checked).
fn concepts(t: &Tables<'_>, v: &mut Violations) {
    let known = t.ids(&cdm::CONCEPT, "concept_id");
    let mut cols: Vec<(&'static cdm::Table, &'static str)> = vec![
        (&cdm::VISIT_OCCURRENCE, "visit_concept_id"),
        (&cdm::NOTE_NLP, "note_nlp_concept_id"),
        (&cdm::DEATH, "cause_concept_id"),
    ];
    cols.extend(EVENT_TABLES.iter().map(|e| (e.table, e.concept)));
    for (table, col) in cols {
        foreign_key(t, table, col, &known, "missing_concept", v);
    }
}

fn date_ranges(t: &Tables<'_>, v: &mut Violations) {
    let pairs: [(&'static cdm::Table, &'static str, &'static str); 5] = [
        (
            &cdm::OBSERVATION_PERIOD,
            "observation_period_start_date",
            "observation_period_end_date",
        ),
        (&cdm::VISIT_OCCURRENCE, "visit_start_date", "visit_end_date"),
        (
            &cdm::CONDITION_OCCURRENCE,
            "condition_start_date",
            "condition_end_date",
        ),
        (
            &cdm::DRUG_EXPOSURE,
            "drug_exposure_start_date",
            "drug_exposure_end_date",
        ),
        (
            &cdm::PROCEDURE_OCCURRENCE,
            "procedure_date",
            "procedure_end_date",
        ),
    ];
    for (table, start, end) in pairs {
        let Some(b) = t.get(table) else { continue };
        let (Some(s), Some(e)) = (
            b.column_by_name(start)
                .and_then(|c| c.as_primitive_opt::<Date32Type>()),
            b.column_by_name(end)
                .and_then(|c| c.as_primitive_opt::<Date32Type>()),
        ) else {
            continue;
        };
        for row in 0..b.num_rows() {
            if s.is_valid(row) && e.is_valid(row) && e.value(row) < s.value(row) {
                v.add("invalid_date_range", table.name, end, row_id(t, table, row));
            }
        }
    }
}

/// Concept domains, and the clinical event every asserted mention should have produced.
fn domain_events(t: &Tables<'_>, v: &mut Violations) {
    let Some(concept) = t.get(&cdm::CONCEPT) else {
        return;
    };
    let (Some(ids), Some(domains)) = (
        concept
            .column_by_name("concept_id")
            .and_then(|c| c.as_primitive_opt::<Int64Type>()),
        concept
            .column_by_name("domain_id")
            .and_then(|c| c.as_string_opt::<i32>()),
    ) else {
        return;
    };
    let domain_of: HashMap<i64, &str> = ids
        .iter()
        .zip(domains.iter())
        .filter_map(|(i, d)| Some((i?, d?)))
        .collect();
    for et in &EVENT_TABLES {
        let Some(concepts) = t.ints(et.table, et.concept) else {
            continue;
        };
        for (row, c) in concepts.iter().enumerate() {
            if let Some(c) = c
                && c != 0
                && domain_of.get(&c).is_some_and(|d| *d != et.domain)
            {
                v.add(
                    "mismatched_domain_event",
                    et.table.name,
                    et.concept,
                    row_id(t, et.table, row),
                );
            }
        }
    }
    let Some(nlp) = t.get(&cdm::NOTE_NLP) else {
        return;
    };
    let (Some(nlp_ids), Some(nlp_concepts), exists, modifiers) = (
        t.ints(&cdm::NOTE_NLP, "note_nlp_id"),
        t.ints(&cdm::NOTE_NLP, "note_nlp_concept_id"),
        nlp.column_by_name("term_exists")
            .and_then(|c| c.as_string_opt::<i32>()),
        nlp.column_by_name("term_modifiers")
            .and_then(|c| c.as_string_opt::<i32>()),
    ) else {
        return;
    };
    let event_ids: HashMap<&str, HashSet<i64>> = EVENT_TABLES
        .iter()
        .map(|e| {
            let pk = e.table.primary_key.unwrap_or("person_id");
            (e.table.name, t.ids(e.table, pk))
        })
        .collect();
    for row in 0..nlp.num_rows() {
        let asserted = exists.is_some_and(|e| e.is_valid(row) && e.value(row) == "Y")
            && modifiers
                .filter(|m| m.is_valid(row))
                .and_then(|m| Assertion::from_modifiers(m.value(row)))
                .is_none_or(|a| a.asserted());
        if !asserted || nlp_concepts.is_null(row) {
            continue;
        }
        let Some(et) = domain_of
            .get(&nlp_concepts.value(row))
            .and_then(|d| cdm::event_table_for_domain(d))
        else {
            continue;
        };
        let id = nlp_ids.value(row);
        if !event_ids
            .get(et.table.name)
            .is_some_and(|s| s.contains(&id))
        {
            v.add("missing_domain_event", "note_nlp", "note_nlp_id", Some(id));
        }
    }
}
