//! POST /analyze and POST /pii/extract: thin handlers over the detection pipelines.

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::body::{Valid, Validated};
use super::error::ApiError;
use super::schemas;
use super::state::AppState;
use crate::deid::canonical_label;
use crate::inference::KeepAlive;
use crate::stages::{Aggregation, CharIndex, RunOptions, Source, Spans};

#[derive(Deserialize)]
pub struct AnalyzeRequest {
    text: String,
    model_name: Option<String>,
    aggregation_strategy: Option<Aggregation>,
    confidence_threshold: Option<f64>,
    group_entities: Option<bool>,
    sentence_detection: Option<bool>,
    sentence_clean: Option<bool>,
    sentence_language: Option<String>,
    use_fast_tokenizer: Option<bool>,
}

impl Validated for AnalyzeRequest {
    const SCHEMA: &'static super::validate::Schema = &schemas::ANALYZE;
}

#[derive(Deserialize)]
pub struct PiiExtractRequest {
    text: String,
    confidence_threshold: Option<f64>,
    lang: Option<String>,
    model_name: Option<String>,
    normalize_accents: Option<bool>,
    use_smart_merging: Option<bool>,
}

impl Validated for PiiExtractRequest {
    const SCHEMA: &'static super::validate::Schema = &schemas::PII_EXTRACT;
}

/// One entity in a response. Offsets are code points into the exact input; `text == input[start:end]`.
#[derive(Serialize, Debug)]
pub struct Entity {
    pub text: String,
    pub label: String,
    pub canonical_label: &'static str,
    pub hipaa_class: &'static str,
    pub confidence: f64,
    pub start: usize,
    pub end: usize,
    pub source: Source,
    /// The recognizer pattern that found or confirmed the entity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

/// Turns pipeline spans into response entities with code point offsets.
pub fn entities(spans: &Spans) -> Vec<Entity> {
    let index = CharIndex::new(&spans.original);
    spans
        .spans
        .iter()
        .map(|s| {
            let canon = canonical_label(&s.label);
            Entity {
                text: spans.original[s.start..s.end].to_string(),
                label: s.label.clone(),
                canonical_label: canon.name,
                hipaa_class: canon.hipaa_class,
                confidence: (f64::from(s.score) * 1e4).round() / 1e4,
                start: index.char_offset(s.start),
                end: index.char_offset(s.end),
                source: s.source,
                pattern: s.pattern.as_deref().map(String::from),
            }
        })
        .collect()
}

/// The keep-alive a request asked for (`null`/absent: the server default).
pub fn keep_alive_of(raw: &Value) -> Option<KeepAlive> {
    raw.get("keep_alive")
        .filter(|v| !v.is_null())
        .and_then(|v| KeepAlive::from_json(v).ok())
}

pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

pub async fn analyze(
    State(state): State<AppState>,
    req: Valid<AnalyzeRequest>,
) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let keep_alive = keep_alive_of(&req.raw);
    let r = req.body;
    let model_name = r
        .model_name
        .unwrap_or_else(|| state.settings.analyze_model.clone());
    let opts = RunOptions {
        aggregation: r.aggregation_strategy.unwrap_or(Aggregation::Simple),
        confidence_threshold: r.confidence_threshold.unwrap_or(0.0) as f32,
        group_entities: r.group_entities.unwrap_or(false),
        sentence_detection: r.sentence_detection.unwrap_or(true),
        sentence_clean: r.sentence_clean.unwrap_or(false),
        sentence_language: r.sentence_language.unwrap_or_else(|| "en".into()),
        normalize_accents: false,
        smart_merging: false,
        safety_sweep: false,
    };
    let mut warnings = Vec::new();
    if r.use_fast_tokenizer == Some(false) {
        warnings.push(json!({
            "code": "slow_tokenizer_unavailable",
            "message": "use_fast_tokenizer=false has no effect: only the Rust (fast) tokenizer exists here; it tokenizes identically",
        }));
    }
    let model = state.registry.acquire(&model_name, keep_alive).await?;
    let pipeline = state
        .pipelines
        .get("analyze")
        .ok_or_else(|| ApiError::Internal("analyze pipeline missing".into()))?;
    let opts = Arc::new(opts);
    let spans = pipeline
        .run(model.arc(), Arc::from(r.text), opts.clone())
        .await?;
    drop(model);
    Ok(Json(json!({
        "model_name": model_name,
        "entities": entities(&spans),
        "timestamp": now_rfc3339(),
        "processing_time": started.elapsed().as_secs_f64(),
        "warnings": warnings,
        "metadata": {
            "pipeline": pipeline.name,
            "aggregation_strategy": opts.aggregation,
            "confidence_threshold": opts.confidence_threshold,
            "group_entities": opts.group_entities,
            "sentence_detection": opts.sentence_detection,
            "sentence_clean": opts.sentence_clean,
            "sentence_language": opts.sentence_language,
            "tokenizer": "fast",
            "tokens": spans.stats.tokens,
            "windows": spans.stats.windows,
            "sentences": spans.stats.sentences,
        },
    })))
}

pub use crate::deidentifier::language_warning;

pub async fn pii_extract(
    State(state): State<AppState>,
    req: Valid<PiiExtractRequest>,
) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let keep_alive = keep_alive_of(&req.raw);
    let r = req.body;
    let lang = r.lang.unwrap_or_else(|| "en".into());
    let model_name = r
        .model_name
        .unwrap_or_else(|| state.settings.pii_model.clone());
    let opts = Arc::new(RunOptions::pii(
        &lang,
        r.normalize_accents,
        r.confidence_threshold.unwrap_or(0.5) as f32,
        r.use_smart_merging.unwrap_or(true),
        true,
    ));
    let model = state.registry.acquire(&model_name, keep_alive).await?;
    let warnings: Vec<Value> = language_warning(model.info.languages.as_deref(), &lang)
        .into_iter()
        .collect();
    let pipeline = state
        .pipelines
        .get("pii_extract")
        .ok_or_else(|| ApiError::Internal("pii_extract pipeline missing".into()))?;
    let spans = crate::streaming::detect(
        pipeline.clone(),
        model.arc(),
        opts.clone(),
        Arc::from(r.text),
    )
    .await?;
    drop(model);
    Ok(Json(json!({
        "model_name": model_name,
        "entities": entities(&spans),
        "timestamp": now_rfc3339(),
        "processing_time": started.elapsed().as_secs_f64(),
        "warnings": warnings,
        "metadata": {
            "pipeline": pipeline.name,
            "lang": lang,
            "confidence_threshold": opts.confidence_threshold,
            "normalize_accents": opts.normalize_accents,
            "use_smart_merging": opts.smart_merging,
            "tokens": spans.stats.tokens,
            "windows": spans.stats.windows,
            "sentences": spans.stats.sentences,
        },
    })))
}
