//! POST /pii/deidentify: detect (model, smart merging, safety sweep), then rewrite the text as
//! the method and policy say. The response never echoes the original text: entities carry
//! offsets into the caller's input and the replacement; originals appear only in `mapping`,
//! and only when it was asked for (or the policy keeps one).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::body::{Valid, Validated};
use super::detect::{entities, keep_alive_of, language_warning, now_rfc3339};
use super::error::ApiError;
use super::schemas;
use super::state::AppState;
use crate::deid::operators::Applied;
use crate::deid::options::{self, DeidRequest, ResolveError};
use crate::deid::policy::Method;
use crate::stages::{CharIndex, RunOptions};

#[derive(Deserialize)]
pub struct PiiDeidentifyRequest {
    text: String,
    confidence_threshold: Option<f64>,
    date_shift_days: Option<i64>,
    keep_mapping: Option<bool>,
    keep_year: Option<bool>,
    lang: Option<String>,
    method: Option<Method>,
    model_name: Option<String>,
    normalize_accents: Option<bool>,
    policy: Option<String>,
    shift_dates: Option<bool>,
    use_safety_sweep: Option<bool>,
    use_smart_merging: Option<bool>,
}

impl Validated for PiiDeidentifyRequest {
    const SCHEMA: &'static super::validate::Schema = &schemas::PII_DEIDENTIFY;
}

/// One entity of the response: where it was in the input, what it was, what now stands there.
#[derive(Serialize)]
struct DeidEntity {
    label: String,
    canonical_label: &'static str,
    hipaa_class: &'static str,
    confidence: f64,
    start: usize,
    end: usize,
    source: crate::stages::Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pattern: Option<String>,
    action: Applied,
    replacement: Option<String>,
    output_start: usize,
    output_end: usize,
}

pub async fn deidentify(
    State(state): State<AppState>,
    req: Valid<PiiDeidentifyRequest>,
) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let keep_alive = keep_alive_of(&req.raw);
    let r = req.body;
    let lang = r.lang.unwrap_or_else(|| "en".into());
    let resolved = options::resolve(
        &DeidRequest {
            method: r.method,
            shift_dates: r.shift_dates,
            date_shift_days: r.date_shift_days,
            keep_mapping: r.keep_mapping.unwrap_or(false),
            keep_year: r.keep_year.unwrap_or(false),
            policy: r.policy.clone(),
            use_safety_sweep: r.use_safety_sweep.unwrap_or(true),
            confidence_threshold: r.confidence_threshold.unwrap_or(0.7) as f32,
            lang: lang.clone(),
        },
        &state.policies,
        state.settings.deid_secret_key.as_deref().map(str::as_bytes),
    )
    .map_err(|e| match e {
        ResolveError::Conflicts(c) => ApiError::Validation(
            c.into_iter()
                .map(|c| {
                    super::validate::Violation::new(
                        &[json!("body"), json!(c.field)],
                        c.kind,
                        c.message,
                        c.allowed.map(|a| json!({ "allowed": a })),
                    )
                })
                .collect(),
        ),
        ResolveError::Entropy(why) => ApiError::Internal(why),
    })?;
    let model_name = r
        .model_name
        .unwrap_or_else(|| state.settings.pii_model.clone());
    let opts = Arc::new(RunOptions::pii(
        &lang,
        r.normalize_accents,
        resolved.confidence_threshold,
        r.use_smart_merging.unwrap_or(true),
        resolved.safety_sweep,
    ));
    let model = state.registry.acquire(&model_name, keep_alive).await?;
    let mut warnings: Vec<Value> = language_warning(model.info.languages.as_deref(), &lang)
        .into_iter()
        .collect();
    warnings.extend(
        resolved
            .warnings
            .iter()
            .map(|(code, message)| json!({ "code": code, "message": message })),
    );
    let pipeline = state
        .pipelines
        .get("pii_deidentify")
        .ok_or_else(|| ApiError::Internal("pii_deidentify pipeline missing".into()))?;
    let done = pipeline
        .deidentify(model.arc(), Arc::from(r.text), opts.clone(), &resolved.plan)
        .await?;
    drop(model);
    let (spans, outcome) = (done.spans, done.outcome);
    let out_index = CharIndex::new(&outcome.text);
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    let found = entities(&spans);
    let list: Vec<DeidEntity> = found
        .into_iter()
        .zip(&outcome.redactions)
        .map(|(e, red)| {
            if red.action != Applied::Keep {
                *counts.entry(e.canonical_label).or_default() += 1;
            }
            DeidEntity {
                label: e.label,
                canonical_label: e.canonical_label,
                hipaa_class: e.hipaa_class,
                confidence: e.confidence,
                start: e.start,
                end: e.end,
                source: e.source,
                pattern: e.pattern,
                action: red.action,
                replacement: red.replacement.clone(),
                output_start: out_index.char_offset(red.out_start),
                output_end: out_index.char_offset(red.out_end),
            }
        })
        .collect();
    let redacted: usize = counts.values().sum();
    let policy = resolved.policy.as_ref().map(|p| {
        json!({
            "name": p.name,
            "description": p.description,
            "forced_safety_sweep": p.force_safety_sweep,
            "keep_mapping": p.keep_mapping,
            "max_confidence_threshold": p.max_confidence_threshold,
        })
    });
    let mut body = json!({
        "deidentified_text": outcome.text,
        "entities": list,
        "counts": counts,
        "num_entities_redacted": redacted,
        "method": resolved.plan.method.as_str(),
        "policy": resolved.policy.as_ref().map(|p| p.name.clone()),
        "model_name": model_name,
        "timestamp": now_rfc3339(),
        "processing_time": started.elapsed().as_secs_f64(),
        "warnings": warnings,
        "metadata": {
            "pipeline": pipeline.name,
            "lang": lang,
            "confidence_threshold": resolved.confidence_threshold,
            "normalize_accents": opts.normalize_accents,
            "use_smart_merging": opts.smart_merging,
            "keep_year": resolved.plan.keep_year,
            "safety_sweep": {
                "enabled": resolved.safety_sweep,
                "forced_by_policy": resolved.sweep_forced,
                "patterns_version": state.pipelines.recognizers.version,
                "spans_added": spans.stats.sweep_added,
                "spans_merged": spans.stats.pattern_merged,
            },
            "policy": policy,
            "tokens": spans.stats.tokens,
            "windows": spans.stats.windows,
            "sentences": spans.stats.sentences,
        },
    });
    if let Some(m) = outcome.mapping
        && let Some(obj) = body.as_object_mut()
    {
        obj.insert("mapping".into(), json!(m));
    }
    Ok(Json(body))
}
