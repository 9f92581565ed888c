//! POST /privacy-gateway/complete: detect, fail closed, redact, re-scan, forward to the
//! operator's endpoint, restore, audit. The caller's text reaches the endpoint only as
//! placeholders; logs and the audit log hold ids, counts, codes and hashes.

use std::sync::Arc;

use crate::digest::sha256_hex;
use axum::Json;
use axum::extract::{Request, State};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::body::read_json;
use super::detect::keep_alive_of;
use super::error::ApiError;
use super::schemas;
use super::state::{AppState, Gateway};
use crate::deid::canonical_label;
use crate::gateway::{
    BlockReason, Failure, GatewaySpan, Redaction, check_spans, normalize_category, redact,
};
use crate::stages::{RunOptions, Spans};

#[derive(Deserialize)]
struct GatewayRequest {
    text: String,
    confidence_threshold: Option<f64>,
    detector_confidence_floor: Option<f64>,
    disallowed_entity_categories: Option<Vec<String>>,
    lang: Option<String>,
    model_name: Option<String>,
    normalize_accents: Option<bool>,
    policy: Option<String>,
    use_smart_merging: Option<bool>,
}

/// A policy name is recorded and echoed, so it must be an identifier, not free text.
fn valid_policy_name(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// What a request was checked against (all of it safe to record).
struct Policy {
    name: String,
    min_confidence: f32,
    floor: f32,
    disallowed: Vec<String>,
}

impl Policy {
    fn json(&self) -> Value {
        json!({
            "name": self.name,
            "confidence_threshold": self.min_confidence,
            "detector_confidence_floor": self.floor,
            "disallowed_entity_categories": self.disallowed,
        })
    }
}

pub async fn complete(
    State(state): State<AppState>,
    req: Request,
) -> Result<Json<Value>, ApiError> {
    let raw = read_json(req, &state, &schemas::PRIVACY_GATEWAY).await?;
    let r: GatewayRequest = serde_json::from_value(raw.clone())
        .map_err(|_| ApiError::Internal("validated gateway body did not parse".into()))?;
    let policy = Policy {
        name: r.policy.clone().unwrap_or_else(|| "strict".into()),
        min_confidence: r.confidence_threshold.unwrap_or(0.85) as f32,
        floor: r.detector_confidence_floor.unwrap_or(0.0) as f32,
        disallowed: r
            .disallowed_entity_categories
            .iter()
            .flatten()
            .map(|c| normalize_category(c))
            .collect(),
    };
    if !valid_policy_name(&policy.name) {
        return Err(ApiError::validation_one(
            &[json!("body"), json!("policy")],
            "string_pattern_mismatch",
            "policy is a name of 1 to 64 letters, digits, '_', '-' or '.'",
            None,
        ));
    }
    let metrics = &crate::metrics::Metrics::global().gateway_requests;
    let Some(gateway) = state.gateway.clone() else {
        metrics.inc_by(&[Failure::NotConfigured.reason()], 1);
        return Err(ApiError::Gateway(Failure::NotConfigured));
    };
    // A fresh id, never the caller's X-Request-ID: this one is sent upstream and written to
    // the audit log, and a caller-chosen header could carry an identifier.
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    let mut audit = Map::new();
    audit.insert("ts".into(), json!(super::detect::now_rfc3339()));
    audit.insert("request_id".into(), json!(request_id));
    audit.insert("policy".into(), policy.json());
    match run(&state, &gateway, &r, &raw, &policy, &request_id, &mut audit).await {
        Ok(mut answer) => {
            audit.insert("status".into(), json!("forwarded"));
            let (previous, hash) = append(&gateway, audit)?;
            answer["audit"] = json!({ "record_hash": hash, "previous_hash": previous });
            metrics.inc_by(&["forwarded"], 1);
            tracing::info!(request_id = %request_id, "gateway forwarded");
            Ok(Json(answer))
        }
        Err(GatewayError::Api(e)) => Err(e),
        Err(GatewayError::Failure(f)) => {
            audit.insert("status".into(), json!(f.audit_status()));
            audit.insert("reason".into(), json!(f.reason()));
            append(&gateway, audit)?;
            metrics.inc_by(&[f.reason()], 1);
            tracing::info!(request_id = %request_id, reason = f.reason(), "gateway refused");
            Err(ApiError::Gateway(f))
        }
    }
}

fn append(gateway: &Gateway, record: Map<String, Value>) -> Result<(String, String), ApiError> {
    gateway
        .audit
        .append(record)
        .map_err(|e| ApiError::Internal(format!("gateway audit: {e}")))
}

enum GatewayError {
    /// Not the gateway's decision (model missing, queue full…): not audited as one.
    Api(ApiError),
    Failure(Failure),
}

impl From<ApiError> for GatewayError {
    fn from(e: ApiError) -> Self {
        GatewayError::Api(e)
    }
}

impl From<Failure> for GatewayError {
    fn from(f: Failure) -> Self {
        GatewayError::Failure(f)
    }
}

async fn run(
    state: &AppState,
    gateway: &Gateway,
    r: &GatewayRequest,
    raw: &Value,
    policy: &Policy,
    request_id: &str,
    audit: &mut Map<String, Value>,
) -> Result<Value, GatewayError> {
    let lang = r.lang.clone().unwrap_or_else(|| "en".into());
    let model_name = r
        .model_name
        .clone()
        .unwrap_or_else(|| state.settings.pii_model.clone());
    // The detector reports down to the floor; the policy then blocks anything below the
    // threshold, so a low-confidence finding stops the request instead of slipping through.
    let opts = Arc::new(RunOptions::pii(
        &lang,
        r.normalize_accents,
        policy.floor,
        r.use_smart_merging.unwrap_or(true),
        true,
    ));
    let text: Arc<str> = Arc::from(r.text.as_str());
    let found = detect(state, &model_name, raw, &opts, text.clone()).await?;
    let spans = gateway_spans(&found);
    check_spans(&text, &spans, policy.min_confidence, &policy.disallowed)?;
    let redaction = redact(&text, &spans, request_id);
    audit.insert("entity_counts".into(), json!(redaction.counts));
    audit.insert("prompt_sha256".into(), json!(sha256_hex(&redaction.prompt)));

    let rescan = detect(
        state,
        &model_name,
        raw,
        &opts,
        Arc::from(redaction.prompt.as_str()),
    )
    .await?;
    tripwire(&rescan, &redaction)?;

    let answer = gateway
        .upstream
        .complete(&redaction.prompt, request_id)
        .await?;
    audit.insert("response_sha256".into(), json!(sha256_hex(&answer)));
    let restored = redaction.restore(&answer)?;
    Ok(json!({
        "request_id": request_id,
        "model_name": model_name,
        "redacted_prompt": redaction.prompt,
        "external_response": answer,
        "reidentified_text": restored,
        "entity_counts": redaction.counts,
        "placeholder_hashes": redaction.placeholders().map(sha256_hex).collect::<Vec<_>>(),
        "policy": policy.json(),
        "upstream": { "model": gateway.upstream.model() },
    }))
}

async fn detect(
    state: &AppState,
    model_name: &str,
    raw: &Value,
    opts: &Arc<RunOptions>,
    text: Arc<str>,
) -> Result<Spans, ApiError> {
    let model = state
        .registry
        .acquire(model_name, keep_alive_of(raw))
        .await?;
    let pipeline = state
        .pipelines
        .get("pii_extract")
        .ok_or_else(|| ApiError::Internal("pii_extract pipeline missing".into()))?;
    let spans = crate::streaming::detect(pipeline.clone(), model.arc(), opts.clone(), text).await?;
    drop(model);
    Ok(spans)
}

fn gateway_spans(found: &Spans) -> Vec<GatewaySpan> {
    found
        .spans
        .iter()
        .map(|s| GatewaySpan {
            start: s.start,
            end: s.end,
            category: normalize_category(canonical_label(&s.label).name),
            label: normalize_category(&s.label),
            confidence: s.score,
        })
        .collect()
}

/// Anything the re-scan finds outside the placeholders means the redacted prompt still
/// carries an identifier: nothing is sent.
fn tripwire(rescan: &Spans, redaction: &Redaction) -> Result<(), Failure> {
    if rescan.spans.iter().any(|s| redaction.leaks(s.start, s.end)) {
        return Err(Failure::Blocked(BlockReason::OutboundTripwire));
    }
    Ok(())
}
