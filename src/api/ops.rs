//! Probes and model management.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::body::{Valid, Validated};
use super::error::ApiError;
use super::schemas;
use super::state::AppState;

pub async fn livez() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// 200 once the default models are loaded at start-up; 503 with the reasons before. A job
/// store that cannot be used does not make the service unready (every other route serves):
/// it is listed under `degraded`, as is a job waiting for storage.
pub async fn readyz(State(state): State<AppState>) -> Response {
    let (ready, mut reasons) = state.readiness.get();
    let mut degraded = Vec::new();
    if let Some(why) = &state.jobs_unavailable {
        degraded.push(why.to_string());
    }
    if state.jobs.as_ref().is_some_and(|j| j.waiting_for_storage()) {
        degraded.push("job store: jobs are waiting for storage (the disk is full)".to_string());
    }
    if ready {
        if degraded.is_empty() {
            Json(json!({ "status": "ready" })).into_response()
        } else {
            Json(json!({ "status": "ready", "degraded": degraded })).into_response()
        }
    } else {
        reasons.extend(degraded);
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "not_ready", "reasons": reasons })),
        )
            .into_response()
    }
}

/// Every value is a string, as the interface says.
pub async fn health(State(state): State<AppState>) -> Json<Value> {
    let (ready, _) = state.readiness.get();
    Json(json!({
        "status": "ok",
        "service": "phiflow",
        "version": env!("CARGO_PKG_VERSION"),
        "ready": ready.to_string(),
        "device": format!("{:?}", state.registry.runtime().device()).to_lowercase(),
        "models": state.registry.resident_ids().join(","),
    }))
}

pub async fn models_loaded(State(state): State<AppState>) -> Json<Value> {
    Json(serde_json::to_value(state.registry.report()).unwrap_or(Value::Null))
}

#[derive(Deserialize)]
pub struct ModelUnloadRequest {
    all: Option<bool>,
    model_name: Option<String>,
}

impl Validated for ModelUnloadRequest {
    const SCHEMA: &'static super::validate::Schema = &schemas::MODEL_UNLOAD;
}

/// Unloads one model by name, or every idle one with `all`. A model in use stays loaded.
pub async fn models_unload(
    State(state): State<AppState>,
    req: Valid<ModelUnloadRequest>,
) -> Result<Json<Value>, ApiError> {
    let r = req.body;
    if r.all == Some(true) {
        let results = state.registry.unload_all();
        let unloaded: Vec<&str> = results
            .iter()
            .filter(|o| o.unloaded)
            .map(|o| o.model_name.as_str())
            .collect();
        return Ok(Json(
            json!({ "all": true, "unloaded": unloaded, "results": results }),
        ));
    }
    let Some(name) = r.model_name.filter(|n| !n.trim().is_empty()) else {
        return Err(ApiError::validation_one(
            &[json!("body")],
            "value_error",
            "Value error, one of all, model_name must be given",
            None,
        ));
    };
    if !state.registry.is_resident(&name) {
        // Distinguish "installed but idle-unloaded" from "no such model".
        state.registry.files(&name)?;
    }
    let outcome = state.registry.unload(&name);
    Ok(Json(serde_json::to_value(outcome).unwrap_or(Value::Null)))
}

/// Prometheus text format. Gauges read from the registry are refreshed at scrape time.
pub async fn metrics(State(state): State<AppState>) -> Response {
    let m = crate::metrics::Metrics::global();
    for model in state.registry.report().models {
        m.inference_queue_depth
            .set(&[model.model_name.as_str()], model.queue.depth as f64);
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            crate::metrics::CONTENT_TYPE,
        )],
        m.render(),
    )
        .into_response()
}
