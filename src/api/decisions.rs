//! POST /v1/decisions and /v1/decisions/batch: the closed-world decision contract over HTTP.
//! Malformed requests are 422; every typed result, whatever its state, is 200.

use axum::Json;
use axum::extract::{Request, State};

use super::body::read_json;
use super::error::ApiError;
use super::schemas;
use super::state::AppState;
use crate::decisions::{DecisionRequest, DecisionResult, parse_batch};

pub async fn decide(
    State(state): State<AppState>,
    req: Request,
) -> Result<Json<DecisionResult>, ApiError> {
    let body = read_json(req, &state, &schemas::DECISION).await?;
    let request = DecisionRequest::parse(&body).map_err(ApiError::Validation)?;
    let mut results = run(&state, vec![request]).await?;
    results
        .pop()
        .map(Json)
        .ok_or_else(|| ApiError::Internal("decision produced no result".into()))
}

/// `{"results": [...]}`, one per request, in order.
#[derive(serde::Serialize)]
pub struct BatchResults {
    results: Vec<DecisionResult>,
}

pub async fn decide_batch(
    State(state): State<AppState>,
    req: Request,
) -> Result<Json<BatchResults>, ApiError> {
    let body = read_json(req, &state, &schemas::DECISION_BATCH).await?;
    let requests = parse_batch(&body).map_err(ApiError::Validation)?;
    let results = run(&state, requests).await?;
    Ok(Json(BatchResults { results }))
}

/// Decides off the async runtime (an encoder backend computes for milliseconds).
async fn run(
    state: &AppState,
    requests: Vec<DecisionRequest>,
) -> Result<Vec<DecisionResult>, ApiError> {
    let engine = state.decisions.clone();
    let results = tokio::task::spawn_blocking(move || engine.decide_batch(&requests))
        .await
        .map_err(|e| ApiError::Internal(format!("decision task failed: {e}")))?;
    let metrics = crate::metrics::Metrics::global();
    for r in &results {
        metrics.decisions.inc_by(&[r.state().as_str()], 1);
    }
    tracing::info!(
        requests = results.len(),
        success = results.iter().filter(|r| r.code().is_none()).count(),
        "decided"
    );
    Ok(results)
}
