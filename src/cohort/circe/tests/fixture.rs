//! Hand-built event tables and expression snippets shared by the tests.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_array::types::Int16Type;
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, DictionaryArray, Int64Array, RecordBatch, StringArray,
};
use chrono::NaiveDate;
use serde_json::{Value, json};

use super::super::{CirceResolution, parse, resolve};
use crate::cohort::events::{CohortData, event_schema, observation_period_schema};

/// Concepts used throughout: 100 is a condition with descendants 101 (→ 102) and 103; 200 a
/// drug, 300 another drug, 400 a measurement, 500 a procedure.
pub const COND: i64 = 100;
pub const DRUG: i64 = 200;
pub const INSULIN: i64 = 300;
pub const LAB: i64 = 400;
pub const PROC: i64 = 500;

/// Parent → child edges of the test hierarchy.
const EDGES: &[(i64, i64)] = &[(100, 101), (101, 102), (100, 103)];

/// Roots plus all descendants over [`EDGES`].
pub fn descendants(roots: &[i64]) -> BTreeSet<i64> {
    let mut out: BTreeSet<i64> = roots.iter().copied().collect();
    let mut frontier: Vec<i64> = roots.to_vec();
    while let Some(c) = frontier.pop() {
        for &(p, child) in EDGES {
            if p == c && out.insert(child) {
                frontier.push(child);
            }
        }
    }
    out
}

pub fn date(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").expect("test date")
}

fn day(s: &str) -> i32 {
    date(s).to_epoch_days()
}

/// Note provenance of a note-derived row: (note_id, note_nlp_id, hash, span start, span end).
pub type Note = (i64, i64, &'static str, i64, i64);

struct Row {
    person: i64,
    concept: i64,
    domain: &'static str,
    event_id: i64,
    start: Option<&'static str>,
    end: Option<&'static str>,
    note: Option<Note>,
}

/// Builder for a [`CohortData`].
#[derive(Default)]
pub struct Data {
    rows: Vec<Row>,
    ops: Vec<(i64, &'static str, &'static str)>,
}

impl Data {
    pub fn new() -> Data {
        Data::default()
    }

    /// Any event; `end` None means a null end date (Circe then uses start + 1).
    pub fn event(
        mut self,
        person: i64,
        domain: &'static str,
        event_id: i64,
        concept: i64,
        start: &'static str,
        end: Option<&'static str>,
    ) -> Data {
        self.rows.push(Row {
            person,
            concept,
            domain,
            event_id,
            start: Some(start),
            end,
            note: None,
        });
        self
    }

    /// A condition occurrence with a null end date.
    pub fn cond(self, person: i64, id: i64, concept: i64, start: &'static str) -> Data {
        self.event(person, "condition_occurrence", id, concept, start, None)
    }

    /// A drug exposure with a null end date.
    pub fn drug(self, person: i64, id: i64, concept: i64, start: &'static str) -> Data {
        self.event(person, "drug_exposure", id, concept, start, None)
    }

    /// A note-derived row.
    pub fn noted(
        mut self,
        person: i64,
        domain: &'static str,
        event_id: i64,
        concept: i64,
        start: &'static str,
        note: Note,
    ) -> Data {
        self.rows.push(Row {
            person,
            concept,
            domain,
            event_id,
            start: Some(start),
            end: None,
            note: Some(note),
        });
        self
    }

    /// A row with a null start date.
    pub fn undated(mut self, person: i64, domain: &'static str, id: i64, concept: i64) -> Data {
        self.rows.push(Row {
            person,
            concept,
            domain,
            event_id: id,
            start: None,
            end: None,
            note: None,
        });
        self
    }

    pub fn op(mut self, person: i64, start: &'static str, end: &'static str) -> Data {
        self.ops.push((person, start, end));
        self
    }

    pub fn build(&self) -> CohortData {
        let r = &self.rows;
        let n = r.len();
        let ints = |f: &dyn Fn(&Row) -> i64| -> ArrayRef {
            Arc::new(Int64Array::from(r.iter().map(f).collect::<Vec<_>>()))
        };
        let opt_ints = |f: &dyn Fn(&Row) -> Option<i64>| -> ArrayRef {
            Arc::new(Int64Array::from(r.iter().map(f).collect::<Vec<_>>()))
        };
        let strs = |v: &str| -> ArrayRef {
            Arc::new(std::iter::repeat_n(v, n).collect::<DictionaryArray<Int16Type>>())
        };
        let columns: Vec<ArrayRef> = vec![
            ints(&|x| x.person),
            ints(&|x| x.concept),
            strs("SNOMED"),
            Arc::new(
                r.iter()
                    .map(|x| x.domain)
                    .collect::<DictionaryArray<Int16Type>>(),
            ),
            ints(&|x| x.event_id),
            Arc::new(Date32Array::from(
                r.iter().map(|x| x.start.map(day)).collect::<Vec<_>>(),
            )),
            Arc::new(Date32Array::from(
                r.iter().map(|x| x.end.map(day)).collect::<Vec<_>>(),
            )),
            opt_ints(&|x| x.note.map(|n| n.0)),
            opt_ints(&|x| x.note.map(|n| n.1)),
            Arc::new(StringArray::from(
                r.iter().map(|x| x.note.map(|n| n.2)).collect::<Vec<_>>(),
            )),
            opt_ints(&|x| x.note.map(|n| n.3)),
            opt_ints(&|x| x.note.map(|n| n.4)),
            Arc::new(BooleanArray::from(vec![false; n])),
            strs("recent"),
            strs("certain"),
            strs("patient"),
        ];
        let events = RecordBatch::try_new(event_schema(), columns).expect("event batch");
        let mut persons: Vec<i64> = r.iter().map(|x| x.person).collect();
        persons.extend(self.ops.iter().map(|o| o.0));
        persons.sort_unstable();
        persons.dedup();
        let op_columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(
                self.ops.iter().map(|o| o.0).collect::<Vec<_>>(),
            )),
            Arc::new(Date32Array::from(
                self.ops.iter().map(|o| day(o.1)).collect::<Vec<_>>(),
            )),
            Arc::new(Date32Array::from(
                self.ops.iter().map(|o| day(o.2)).collect::<Vec<_>>(),
            )),
        ];
        let observation_periods =
            RecordBatch::try_new(observation_period_schema(), op_columns).expect("op batch");
        CohortData {
            events,
            persons: Int64Array::from(persons),
            observation_periods,
        }
    }
}

/// A concept set item.
pub fn item(concept: i64, descendants: bool, excluded: bool) -> Value {
    json!({
        "concept": {"CONCEPT_ID": concept, "CONCEPT_NAME": "name", "VOCABULARY_ID": "SNOMED"},
        "isExcluded": excluded,
        "includeDescendants": descendants,
        "includeMapped": false
    })
}

pub fn concept_set(id: i64, items: Vec<Value>) -> Value {
    json!({"id": id, "name": "set", "expression": {"items": items}})
}

/// Concept sets 0 = condition 100 with descendants, 1 = drug 200, 2 = drug 300,
/// 3 = measurement 400, 4 = procedure 500.
pub fn standard_sets() -> Value {
    json!([
        concept_set(0, vec![item(COND, true, false)]),
        concept_set(1, vec![item(DRUG, false, false)]),
        concept_set(2, vec![item(INSULIN, false, false)]),
        concept_set(3, vec![item(LAB, false, false)]),
        concept_set(4, vec![item(PROC, false, false)]),
    ])
}

/// A one-key domain criterion.
pub fn crit(domain: &str, codeset: i64) -> Value {
    json!({ domain: {"CodesetId": codeset} })
}

/// Conditions of set 0 as primary events, every limit `All`, no rules, the default end
/// (observation period end), no era pad, no censor window.
pub fn base() -> Value {
    json!({
        "ConceptSets": standard_sets(),
        "PrimaryCriteria": {
            "CriteriaList": [crit("ConditionOccurrence", 0)],
            "ObservationWindow": {"PriorDays": 0, "PostDays": 0},
            "PrimaryCriteriaLimit": {"Type": "All"}
        },
        "QualifiedLimit": {"Type": "All"},
        "ExpressionLimit": {"Type": "All"},
        "InclusionRules": [],
        "CensoringCriteria": [],
        "CollapseSettings": {"CollapseType": "ERA", "EraPad": 0},
        "CensorWindow": {}
    })
}

/// A window endpoint: `days` None is unbounded.
pub fn endpoint(days: Option<i64>, coeff: i64) -> Value {
    match days {
        Some(d) => json!({"Days": d, "Coeff": coeff}),
        None => json!({"Coeff": coeff}),
    }
}

/// A start window from index + `from` to index + `to` days (None: unbounded that side).
pub fn window(from: Option<i64>, to: Option<i64>) -> Value {
    let ep = |d: Option<i64>, unbounded_coeff: i64| match d {
        Some(d) if d < 0 => endpoint(Some(-d), -1),
        Some(d) => endpoint(Some(d), 1),
        None => endpoint(None, unbounded_coeff),
    };
    json!({"Start": ep(from, -1), "End": ep(to, 1), "UseIndexEnd": false, "UseEventEnd": false})
}

/// A correlated criterion with ATLAS's default keys. `occurrence` is (Type, Count).
pub fn corr(criterion: Value, start_window: Value, occurrence: (i64, i64)) -> Value {
    json!({
        "Criteria": criterion,
        "StartWindow": start_window,
        "RestrictVisit": false,
        "IgnoreObservationPeriod": false,
        "Occurrence": {"Type": occurrence.0, "Count": occurrence.1, "IsDistinct": false}
    })
}

/// "At least one `domain` event of `codeset` from index + from to index + to".
pub fn has(domain: &str, codeset: i64, from: i64, to: i64) -> Value {
    corr(crit(domain, codeset), window(Some(from), Some(to)), (2, 1))
}

pub fn group(ty: &str, count: Option<i64>, criteria: Vec<Value>, groups: Vec<Value>) -> Value {
    let mut g = json!({
        "Type": ty,
        "CriteriaList": criteria,
        "DemographicCriteriaList": [],
        "Groups": groups
    });
    if let Some(c) = count {
        g["Count"] = json!(c);
    }
    g
}

pub fn rule(expression: Value) -> Value {
    json!({"name": "rule", "description": null, "expression": expression})
}

/// Parses (panicking with the errors on failure) and resolves over `data`.
pub fn run(expr: &Value, data: &Data) -> CirceResolution {
    let cohort = parse(expr).unwrap_or_else(|e| panic!("parse failed: {e:?}"));
    resolve(&cohort, &descendants, &data.build())
}

/// (person, event_id) of the surviving index events.
pub fn index_ids(r: &CirceResolution) -> Vec<(i64, i64)> {
    r.index_events
        .iter()
        .map(|e| (e.person_id, e.event_id))
        .collect()
}

/// (person, start, end) of the periods, dates as ISO strings.
pub fn periods(r: &CirceResolution) -> Vec<(i64, String, String)> {
    r.periods
        .iter()
        .map(|p| {
            (
                p.person_id,
                p.start_date.to_string(),
                p.end_date.to_string(),
            )
        })
        .collect()
}

/// Shorthand for building expected period literals.
pub fn p(person: i64, start: &str, end: &str) -> (i64, String, String) {
    (person, start.to_owned(), end.to_owned())
}

/// (event_count, person_count) per inclusion rule.
pub fn rule_counts(r: &CirceResolution) -> Vec<(usize, usize)> {
    r.inclusion_rules
        .iter()
        .map(|s| (s.event_count, s.person_count))
        .collect()
}
