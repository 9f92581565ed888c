//! POST /cohort/resolve: a phenotype (or a Circe cohort expression) over inline records or a
//! stored load, answered with the caller's own patient ids, evidence pointers and provenance.

use std::collections::{HashMap, HashSet};

use axum::Json;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::body::read_json_limited;
use super::error::ApiError;
use super::omop::{build_error, dataset_error};
use super::schemas;
use super::state::AppState;
use super::validate::Violation;
use crate::cohort::circe::{self, CirceCohort};
use crate::cohort::{self, Hierarchy, PathSeg, Phenotype, ResolveError};
use crate::omop::{self, Source, cdm, dataset};

pub const RESULT_SCHEMA: &str = "phiflow.cohort.result.v1";
pub const CIRCE_RESULT_SCHEMA: &str = "phiflow.cohort.circe_result.v1";
pub const PROVENANCE_SCHEMA: &str = "phiflow.cohort.provenance.v1";
const ADVISORY: &str = "Matches are analytical candidates derived from coded and NLP-extracted \
    records; review them before any clinical or research use.";

/// The definition to resolve.
enum Definition {
    Phenotype(Box<Phenotype>),
    Circe(Box<CirceCohort>),
}

/// Where the records come from.
enum Records {
    Inline(String),
    Stored(String),
}

pub async fn resolve(State(state): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let s = &state.settings;
    let body =
        read_json_limited(req, &schemas::COHORT_RESOLVE, s.max_stream_body_bytes, None).await?;
    let mut violations = Vec::new();
    exactly_one(&body, "phenotype", "circe", &mut violations);
    exactly_one(&body, "records_jsonl", "load_id", &mut violations);
    if !violations.is_empty() {
        return Err(ApiError::Validation(violations));
    }
    let (definition, raw) = match body.get("phenotype") {
        Some(p) => (
            Definition::Phenotype(Box::new(cohort::parse_phenotype(p).map_err(|errs| {
                path_violations(
                    "phenotype",
                    errs.into_iter().map(|e| (e.path, e.kind, e.msg)),
                )
            })?)),
            p.clone(),
        ),
        None => {
            let c = body.get("circe").cloned().unwrap_or_default();
            let parsed = circe::parse(&c).map_err(|errs| {
                path_violations("circe", errs.into_iter().map(|e| (e.path, e.kind, e.msg)))
            })?;
            (Definition::Circe(Box::new(parsed)), c)
        }
    };
    check_size(&definition, &raw)?;
    let edges = edges(&body)?;
    let hierarchy = Hierarchy::new(&edges);
    let records = match body.get("load_id").and_then(Value::as_str) {
        Some(id) if !dataset::is_load_id(id) => {
            return Err(dataset_error(omop::DatasetError::BadId));
        }
        Some(id) => Records::Stored(id.to_owned()),
        None => Records::Inline(
            body.get("records_jsonl")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ),
    };
    if let Some(index) = needs_hierarchy(&definition, &hierarchy) {
        return Err(resolve_error(ResolveError::HierarchyRequired {
            concept_set_index: index,
        }));
    }
    let root = omop::root(&s.data_dir);
    let kind = match definition {
        Definition::Phenotype(_) => "phenotype",
        Definition::Circe(_) => "circe",
    };
    let answer =
        tokio::task::spawn_blocking(move || run(&root, &definition, &raw, &hierarchy, &records))
            .await
            .map_err(|e| ApiError::Internal(format!("cohort task failed: {e}")))??;
    crate::metrics::Metrics::global()
        .cohort_resolutions
        .inc_by(&[kind], 1);
    tracing::info!(
        kind,
        patients = answer["count"].as_u64().unwrap_or(0),
        "cohort resolved"
    );
    Ok(Json(answer).into_response())
}

/// Most concept sets, criteria and concept ids per set a definition may hold: evaluation costs
/// grow with each, times the events.
const MAX_CONCEPT_SETS: usize = 256;
const MAX_CRITERIA: usize = 256;
const MAX_CONCEPTS_PER_SET: usize = 10_000;

fn too_large(loc: &[Value], what: &str, max: usize) -> ApiError {
    ApiError::validation_one(
        loc,
        "too_long",
        format!("At most {max} {what}"),
        Some(json!({ "max_length": max })),
    )
}

/// Bounds the definition's size before any data is read.
fn check_size(definition: &Definition, raw: &Value) -> Result<(), ApiError> {
    let (field, sets_key, items) = match definition {
        Definition::Phenotype(p) => {
            if p.criteria().len() > MAX_CRITERIA {
                return Err(too_large(
                    &[json!("body"), json!("phenotype"), json!("expression")],
                    "criteria",
                    MAX_CRITERIA,
                ));
            }
            ("phenotype", "concept_sets", "/concept_ids")
        }
        Definition::Circe(_) => ("circe", "ConceptSets", "/expression/items"),
    };
    let sets = raw
        .get(sets_key)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if sets.len() > MAX_CONCEPT_SETS {
        return Err(too_large(
            &[json!("body"), json!(field), json!(sets_key)],
            "concept sets",
            MAX_CONCEPT_SETS,
        ));
    }
    for (i, set) in sets.iter().enumerate() {
        if set
            .pointer(items)
            .and_then(Value::as_array)
            .is_some_and(|a| a.len() > MAX_CONCEPTS_PER_SET)
        {
            let mut loc = vec![json!("body"), json!(field), json!(sets_key), json!(i)];
            loc.extend(items.trim_start_matches('/').split('/').map(|k| json!(k)));
            return Err(too_large(&loc, "concepts per set", MAX_CONCEPTS_PER_SET));
        }
    }
    Ok(())
}

/// The hierarchy edges, each a pair of positive 64-bit integers (the schema lets `1.0` and
/// integers past 64 bits through; an edge silently dropped would shrink a cohort).
fn edges(body: &Value) -> Result<Vec<(i64, i64)>, ApiError> {
    let Some(items) = body.get("concept_ancestors").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(items.len());
    let mut bad = Vec::new();
    for (i, e) in items.iter().enumerate() {
        let id = |k: &str| e.get(k).and_then(Value::as_i64).filter(|v| *v > 0);
        for k in ["ancestor_concept_id", "descendant_concept_id"] {
            if id(k).is_none() {
                bad.push(Violation::new(
                    &[
                        json!("body"),
                        json!("concept_ancestors"),
                        json!(i),
                        json!(k),
                    ],
                    "int_type",
                    "Input should be a positive 64-bit integer",
                    None,
                ));
            }
        }
        if let (Some(a), Some(d)) = (id("ancestor_concept_id"), id("descendant_concept_id")) {
            out.push((a, d));
        }
    }
    if bad.is_empty() {
        Ok(out)
    } else {
        Err(ApiError::Validation(bad))
    }
}

/// The first concept set that asks for descendants when no hierarchy was given.
fn needs_hierarchy(definition: &Definition, h: &Hierarchy) -> Option<usize> {
    if !h.is_empty() {
        return None;
    }
    match definition {
        Definition::Phenotype(p) => p.first_set_with_descendants(),
        Definition::Circe(c) => c.first_set_with_descendants(),
    }
}

/// Exactly one of two alternative fields (the schema already refused `null`).
fn exactly_one(body: &Value, a: &str, b: &str, out: &mut Vec<Violation>) {
    let msg = format!("Exactly one of `{a}` and `{b}` must be given");
    match (body.get(a).is_some(), body.get(b).is_some()) {
        (true, false) | (false, true) => {}
        (true, true) => out.push(Violation::new(
            &[json!("body"), json!(b)],
            "value_error",
            msg,
            Some(json!({ "fields": [a, b] })),
        )),
        (false, false) => out.push(Violation::new(
            &[json!("body"), json!(a)],
            "missing",
            msg,
            Some(json!({ "fields": [a, b] })),
        )),
    }
}

/// Definition errors as 422 entries located under `body.<field>`.
fn path_violations(
    field: &str,
    errs: impl Iterator<Item = (Vec<PathSeg>, &'static str, String)>,
) -> ApiError {
    ApiError::Validation(
        errs.map(|(path, kind, msg)| {
            let mut loc = vec![json!("body"), json!(field)];
            loc.extend(path.into_iter().map(|p| match p {
                PathSeg::Key(k) => json!(k),
                PathSeg::Index(i) => json!(i),
            }));
            Violation::new(&loc, kind, msg, None)
        })
        .collect(),
    )
}

fn run(
    root: &std::path::Path,
    definition: &Definition,
    raw: &Value,
    hierarchy: &Hierarchy,
    records: &Records,
) -> Result<Value, ApiError> {
    match records {
        Records::Inline(text) => {
            let built = omop::build::build(text).map_err(build_error)?;
            let src = Source::Memory(&built.tables);
            let mut answer = evaluate(&src, definition, raw, hierarchy)?;
            answer["provenance"]["load_id"] = Value::Null;
            answer["provenance"]["records"] = json!({
                "records": built.records,
                "rejection_counts": built.rejection_counts,
            });
            Ok(answer)
        }
        Records::Stored(load_id) => {
            let manifest = dataset::manifest(root, load_id).map_err(dataset_error)?;
            let src = Source::Stored { root, load_id };
            let mut answer = evaluate(&src, definition, raw, hierarchy)?;
            answer["provenance"]["load_id"] = json!(load_id);
            answer["provenance"]["vocabulary_version"] = json!(manifest.vocabulary_version);
            Ok(answer)
        }
    }
}

fn evaluate(
    src: &Source<'_>,
    definition: &Definition,
    raw: &Value,
    hierarchy: &Hierarchy,
) -> Result<Value, ApiError> {
    let concepts = concept_filter(definition, hierarchy);
    let data = omop::cohort_data(src, concepts.as_ref()).map_err(dataset_error)?;
    match definition {
        Definition::Circe(c) => circe_answer(src, c, raw, hierarchy, &data),
        Definition::Phenotype(p) => {
            let r = cohort::resolve(p, hierarchy, &data).map_err(resolve_error)?;
            let notes = r
                .evidence
                .iter()
                .flat_map(|e| e.matches.iter().filter_map(|m| m.note_id))
                .collect();
            let caller = CallerIds::new(src, r.patients.iter().copied().collect(), notes)?;
            let evidence: Vec<Value> = r
                .evidence
                .iter()
                .map(|e| {
                    let matches: Vec<Value> = e
                        .matches
                        .iter()
                        .map(|m| {
                            json!({
                                "criterion_id": m.criterion_id,
                                "concept_set_id": m.concept_set_id,
                                "concept_id": m.concept_id,
                                "vocabulary": m.vocabulary,
                                "domain_table": m.domain_table,
                                "event_id": m.event_id,
                                "note_id": m.note_id.map(|n| caller.note(n)),
                                "note_nlp_id": m.note_nlp_id,
                                "source_note_hash": caller.hash(m.note_id, &m.source_note_hash),
                                "start": m.start,
                                "end": m.end,
                            })
                        })
                        .collect();
                    json!({ "patient_id": caller.person(e.person_id), "matches": matches })
                })
                .collect();
            Ok(json!({
                "schema_version": RESULT_SCHEMA,
                "advisory": ADVISORY,
                "count": r.patients.len(),
                "patient_ids": r.patients.iter().map(|p| caller.person(*p)).collect::<Vec<_>>(),
                "evidence": evidence,
                "provenance": {
                    "schema_version": PROVENANCE_SCHEMA,
                    "definition": { "kind": "phenotype", "id": p.id(), "schema_version": cohort::SCHEMA_VERSION },
                    "definition_sha256": cohort::definition_sha256(raw),
                    "hierarchy_sha256": hierarchy.sha256(),
                    "matched_patient_count": r.matched_patient_count,
                    "evidence_pointer_count": r.evidence_pointer_count,
                    "concept_sets": r.concept_sets,
                },
            }))
        }
    }
}

/// Every concept the definition can match: events of other concepts are never read.
fn concept_filter(definition: &Definition, h: &Hierarchy) -> Option<HashSet<i64>> {
    let descendants = |roots: &[i64]| h.descendants_with_self(roots);
    match definition {
        Definition::Phenotype(p) => Some(p.concept_filter(&descendants)),
        Definition::Circe(c) => c.concept_filter(&descendants),
    }
}

/// A Circe cohort: periods and index events by the caller's ids, and ATLAS-style rule counts.
fn circe_answer(
    src: &Source<'_>,
    c: &CirceCohort,
    raw: &Value,
    hierarchy: &Hierarchy,
    data: &crate::cohort::events::CohortData,
) -> Result<Value, ApiError> {
    let r = circe::resolve(c, &|roots| hierarchy.descendants_with_self(roots), data);
    let mut patients: Vec<i64> = r.periods.iter().map(|p| p.person_id).collect();
    patients.dedup();
    let notes = r.index_events.iter().filter_map(|e| e.note_id).collect();
    let caller = CallerIds::new(src, patients.iter().copied().collect(), notes)?;
    let periods: Vec<Value> = r
        .periods
        .iter()
        .map(|p| {
            json!({
                "patient_id": caller.person(p.person_id),
                "start_date": p.start_date.to_string(),
                "end_date": p.end_date.to_string(),
            })
        })
        .collect();
    let index_events: Vec<Value> = r
        .index_events
        .iter()
        .map(|e| {
            json!({
                "patient_id": caller.person(e.person_id),
                "domain_table": e.domain_table,
                "event_id": e.event_id,
                "concept_id": e.concept_id,
                "start_date": e.start_date.to_string(),
                "note_id": e.note_id.map(|n| caller.note(n)),
                "note_nlp_id": e.note_nlp_id,
                "source_note_hash": caller.hash(e.note_id, &e.source_note_hash),
                "start": e.start,
                "end": e.end,
            })
        })
        .collect();
    Ok(json!({
        "schema_version": CIRCE_RESULT_SCHEMA,
        "advisory": ADVISORY,
        "count": patients.len(),
        "patient_ids": patients.iter().map(|p| caller.person(*p)).collect::<Vec<_>>(),
        "periods": periods,
        "index_events": index_events,
        "inclusion_rules": r.inclusion_rules,
        "provenance": {
            "schema_version": PROVENANCE_SCHEMA,
            "definition": { "kind": "circe" },
            "definition_sha256": cohort::definition_sha256(raw),
            "hierarchy_sha256": hierarchy.sha256(),
            "concept_sets": r.concept_sets,
        },
    }))
}

/// The caller's own ids for the persons and notes an answer names, and those notes' hashes.
struct CallerIds {
    persons: HashMap<i64, Value>,
    notes: HashMap<i64, Value>,
    hashes: HashMap<i64, String>,
}

impl CallerIds {
    fn new(src: &Source<'_>, persons: HashSet<i64>, notes: HashSet<i64>) -> Result<Self, ApiError> {
        let ids = |table, kind, wanted| omop::caller_ids(src, table, kind, wanted);
        Ok(Self {
            persons: ids(&cdm::PERSON, "person", &persons).map_err(dataset_error)?,
            notes: ids(&cdm::NOTE, "note", &notes).map_err(dataset_error)?,
            hashes: omop::note_hashes(src, &notes).map_err(dataset_error)?,
        })
    }

    /// An id with no caller form is its own.
    fn person(&self, id: i64) -> Value {
        self.persons.get(&id).cloned().unwrap_or(json!(id))
    }

    fn note(&self, id: i64) -> Value {
        self.notes.get(&id).cloned().unwrap_or(json!(id))
    }

    /// The note's stored hash, else the one the event carried.
    fn hash<'a>(&'a self, note: Option<i64>, carried: &'a Option<String>) -> Option<&'a String> {
        note.and_then(|n| self.hashes.get(&n)).or(carried.as_ref())
    }
}

fn resolve_error(e: ResolveError) -> ApiError {
    match e {
        ResolveError::HierarchyRequired { concept_set_index } => ApiError::validation_one(
            &[json!("body"), json!("concept_ancestors")],
            "hierarchy_required",
            "A concept set includes descendants, so concept_ancestors must supply the hierarchy",
            Some(json!({ "concept_set_index": concept_set_index })),
        ),
        other => ApiError::Internal(format!("cohort: {other}")),
    }
}
