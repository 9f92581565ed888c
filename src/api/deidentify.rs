//! POST /pii/deidentify: detect (model, smart merging, safety sweep), then rewrite the text as
//! the method and policy say. The response never echoes the original text: entities carry
//! offsets into the caller's input and the replacement; originals appear only in `mapping`,
//! and only when it was asked for (or the policy keeps one).

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

use super::body::{Valid, Validated};
use super::detect::{keep_alive_of, now_rfc3339};
use super::error::ApiError;
use super::schemas;
use super::state::AppState;
use crate::deidentifier::{DeidOptions, Subject};

#[derive(Deserialize)]
pub struct PiiDeidentifyRequest {
    text: String,
    #[serde(flatten)]
    options: DeidOptions,
}

impl Validated for PiiDeidentifyRequest {
    const SCHEMA: &'static super::validate::Schema = &schemas::PII_DEIDENTIFY;
}

pub async fn deidentify(
    State(state): State<AppState>,
    req: Valid<PiiDeidentifyRequest>,
) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let keep_alive = keep_alive_of(&req.raw);
    let r = req.body;
    let deid = &state.deid;
    let setup = deid.prepare(&r.options)?;
    let model = deid.model(&setup, keep_alive).await?;
    let warnings = setup.warnings(&model);
    let done = deid
        .run(&setup, &model, Arc::from(r.text), Subject::default())
        .await?;
    drop(model);
    let stats = &done.stats;
    let mut metadata = setup.metadata();
    metadata["safety_sweep"]["spans_added"] = json!(stats.sweep_added);
    metadata["safety_sweep"]["spans_merged"] = json!(stats.pattern_merged);
    metadata["propagated"] = json!(stats.propagated);
    metadata["tokens"] = json!(stats.tokens);
    metadata["windows"] = json!(stats.windows);
    metadata["sentences"] = json!(stats.sentences);
    let r = &setup.resolved;
    let mut body = json!({
        "num_entities_redacted": done.redacted(),
        "deidentified_text": done.text,
        "entities": done.entities,
        "counts": done.counts,
        "method": r.plan.method.as_str(),
        "policy": r.policy.as_ref().map(|p| p.name.clone()),
        "model_name": setup.model_name,
        "timestamp": now_rfc3339(),
        "processing_time": started.elapsed().as_secs_f64(),
        "warnings": warnings,
        "metadata": metadata,
    });
    if let Some(m) = done.mapping
        && let Some(obj) = body.as_object_mut()
    {
        obj.insert("mapping".into(), json!(m));
    }
    Ok(Json(body))
}
