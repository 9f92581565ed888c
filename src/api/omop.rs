//! POST /omop/load: records → a stored OMOP CDM 5.4 Parquet dataset, and its account.

use axum::Json;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::body::read_json_limited;
use super::error::ApiError;
use super::schemas;
use super::state::AppState;
use super::validate::Violation;
use crate::omop::{self, BuildError, DatasetError, LineError, LoadError};

pub async fn load(State(state): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let s = &state.settings;
    let body = read_json_limited(req, &schemas::OMOP_LOAD, s.max_stream_body_bytes, None).await?;
    let records = body["records_jsonl"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let validate = body["validate_constraints"].as_bool().unwrap_or(false);
    let vocabulary = body["vocabulary_version"].as_str().map(str::to_owned);
    let root = omop::root(&s.data_dir);
    let report = tokio::task::spawn_blocking(move || {
        omop::load(&root, &records, validate, vocabulary.as_deref())
    })
    .await
    .map_err(|e| ApiError::Internal(format!("omop load task failed: {e}")))?
    .map_err(load_error)?;
    let rejected: usize = report.rejection_counts.values().sum();
    let m = crate::metrics::Metrics::global();
    m.omop_records.inc_by(&["loaded"], report.records as u64);
    m.omop_records.inc_by(&["rejected"], rejected as u64);
    tracing::info!(
        load_id = %report.load_id,
        records = report.records,
        rejected,
        "omop load stored"
    );
    Ok(Json(report).into_response())
}

/// Records that could not be read at all are the caller's error (422 naming each line);
/// everything else is ours.
pub fn load_error(e: LoadError) -> ApiError {
    match e {
        LoadError::Build(b) => build_error(b),
        LoadError::Dataset(d) => dataset_error(d),
    }
}

pub fn build_error(e: BuildError) -> ApiError {
    match e {
        BuildError::Lines(lines) => {
            ApiError::Validation(lines.iter().map(line_violation).collect())
        }
        BuildError::Empty => ApiError::validation_one(
            &[json!("body"), json!("records_jsonl")],
            "too_short",
            "records_jsonl must hold at least one record",
            None,
        ),
        BuildError::Arrow(a) => ApiError::Internal(format!("omop build: {a}")),
    }
}

fn line_violation(e: &LineError) -> Violation {
    Violation::new(
        &[json!("body"), json!("records_jsonl"), json!(e.line)],
        e.kind,
        e.msg,
        Some(json!({ "line": e.line })),
    )
}

pub fn dataset_error(e: DatasetError) -> ApiError {
    match e {
        DatasetError::NotFound => ApiError::NotFound {
            code: "load_not_found",
            message: "No OMOP load with this id",
        },
        DatasetError::BadId => ApiError::validation_one(
            &[json!("body"), json!("load_id")],
            "string_pattern_mismatch",
            "load_id is `omop-` followed by 24 lowercase hexadecimal digits",
            None,
        ),
        other => ApiError::Internal(format!("omop dataset: {other}")),
    }
}
