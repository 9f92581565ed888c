//! /fhir/smart-backend/ingestions: start a SMART backend-services Bulk Data ingestion, read its
//! status and summary, cancel it. The work is in `crate::fhir::ingest`; this is the HTTP shell.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Request, State};
use serde_json::{Value, json};

use super::body::read_json;
use super::error::ApiError;
use super::schemas;
use super::state::AppState;
use super::validate::Violation;
use crate::fhir::ingest::{CreateError, Ingestions, SummaryError};
use crate::jobs::JobError;

fn ingestions(state: &AppState) -> Result<Arc<Ingestions>, ApiError> {
    if let Some(reason) = &state.jobs_unavailable {
        return Err(ApiError::StorageUnavailable {
            reason: reason.to_string(),
        });
    }
    state.ingestions.clone().ok_or(ApiError::NotFound {
        code: "ingestions_disabled",
        message: "This process runs without a job store",
    })
}

const NOT_FOUND: ApiError = ApiError::NotFound {
    code: "ingestion_not_found",
    message: "No such ingestion",
};

fn store_error(e: JobError) -> ApiError {
    ApiError::Internal(format!("ingestion store: {e}"))
}

/// Runs a blocking store call off the async runtime.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(format!("ingestion task failed: {e}")))?
}

pub async fn create(State(state): State<AppState>, req: Request) -> Result<Json<Value>, ApiError> {
    let ing = ingestions(&state)?;
    let raw = read_json(req, &state, &schemas::SMART_INGESTION).await?;
    // Creating a job starts its task: stay on the runtime (the store calls are short).
    match ing.create(&raw) {
        Ok(record) => Ok(Json(record)),
        Err(CreateError::Invalid(errors)) => Err(ApiError::Validation(
            errors
                .into_iter()
                .map(|e| Violation::new(&[json!("body"), json!(e.field)], e.kind, e.message, None))
                .collect(),
        )),
        Err(CreateError::Store(e)) => Err(store_error(e)),
    }
}

pub async fn get(
    State(state): State<AppState>,
    Path(job_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let ing = ingestions(&state)?;
    blocking(move || ing.get(&job_id).map_err(store_error)?.ok_or(NOT_FOUND))
        .await
        .map(Json)
}

pub async fn summary(
    State(state): State<AppState>,
    Path(job_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let ing = ingestions(&state)?;
    blocking(move || match ing.summary(&job_id) {
        Ok(s) => Ok(s),
        Err(SummaryError::NotFound) => Err(NOT_FOUND),
        Err(SummaryError::NotFinished(_)) => Err(ApiError::Conflict {
            code: "ingestion_not_finished",
            message: "The ingestion is still running; its summary comes when it ends",
        }),
        Err(SummaryError::Store(e)) => Err(store_error(e)),
    })
    .await
    .map(Json)
}

pub async fn cancel(
    State(state): State<AppState>,
    Path(job_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let ing = ingestions(&state)?;
    blocking(move || ing.cancel(&job_id).map_err(store_error)?.ok_or(NOT_FOUND))
        .await
        .map(Json)
}
