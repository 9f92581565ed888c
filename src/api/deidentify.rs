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
use super::detect::{keep_alive_of, language_warning, now_rfc3339};
use super::error::ApiError;
use super::schemas;
use super::state::AppState;
use crate::config::Settings;
use crate::deid::canonical_label;
use crate::deid::operators::{Applied, Redaction};
use crate::deid::options::{self, DeidRequest, ResolveError, Resolved};
use crate::deid::policy::Method;
use crate::deid::policy::Policies;
use crate::inference::{KeepAlive, ModelHandle, ModelRegistry};
use crate::pipeline::{Pipeline, Pipelines};
use crate::stages::{CharIndex, RunOptions, Span};
use crate::streaming;

/// The options of PIIDeidentifyRequest (all but `text`), shared by the route, its stream and
/// jobs.
#[derive(Deserialize, Clone, Default)]
pub struct DeidOptions {
    pub confidence_threshold: Option<f64>,
    pub date_shift_days: Option<i64>,
    pub keep_mapping: Option<bool>,
    pub keep_year: Option<bool>,
    pub lang: Option<String>,
    pub method: Option<Method>,
    pub model_name: Option<String>,
    pub normalize_accents: Option<bool>,
    pub policy: Option<String>,
    pub shift_dates: Option<bool>,
    pub use_safety_sweep: Option<bool>,
    pub use_smart_merging: Option<bool>,
}

#[derive(Deserialize)]
pub struct PiiDeidentifyRequest {
    text: String,
    #[serde(flatten)]
    options: DeidOptions,
}

impl Validated for PiiDeidentifyRequest {
    const SCHEMA: &'static super::validate::Schema = &schemas::PII_DEIDENTIFY;
}

/// Everything a de-identification needs once the request is checked.
pub struct DeidSetup {
    pub resolved: Resolved,
    patterns_version: String,
    pub opts: Arc<RunOptions>,
    pub lang: String,
    pub model_name: String,
    pub pipeline: Arc<Pipeline>,
}

impl DeidSetup {
    /// Resolves method, policy and dates (cross-checks give 422 with the field's location).
    pub fn new(
        settings: &Settings,
        pipelines: &Pipelines,
        policies: &Policies,
        o: &DeidOptions,
    ) -> Result<Self, ApiError> {
        let lang = o.lang.clone().unwrap_or_else(|| "en".into());
        let resolved = options::resolve(
            &DeidRequest {
                method: o.method,
                shift_dates: o.shift_dates,
                date_shift_days: o.date_shift_days,
                keep_mapping: o.keep_mapping.unwrap_or(false),
                keep_year: o.keep_year.unwrap_or(false),
                policy: o.policy.clone(),
                use_safety_sweep: o.use_safety_sweep.unwrap_or(true),
                confidence_threshold: o.confidence_threshold.unwrap_or(0.7) as f32,
                lang: lang.clone(),
            },
            policies,
            settings.deid_secret_key.as_deref().map(str::as_bytes),
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
        let opts = Arc::new(RunOptions::pii(
            &lang,
            o.normalize_accents,
            resolved.confidence_threshold,
            o.use_smart_merging.unwrap_or(true),
            resolved.safety_sweep,
        ));
        let pipeline = pipelines
            .get("pii_deidentify")
            .ok_or_else(|| ApiError::Internal("pii_deidentify pipeline missing".into()))?;
        Ok(Self {
            resolved,
            patterns_version: pipelines.recognizers.version.to_string(),
            opts,
            model_name: o
                .model_name
                .clone()
                .unwrap_or_else(|| settings.pii_model.clone()),
            lang,
            pipeline,
        })
    }

    pub async fn model(
        &self,
        registry: &Arc<ModelRegistry>,
        keep_alive: Option<KeepAlive>,
    ) -> Result<ModelHandle, ApiError> {
        Ok(registry.acquire(&self.model_name, keep_alive).await?)
    }

    /// Warnings about the language and the key.
    pub fn warnings(&self, model: &ModelHandle) -> Vec<Value> {
        let mut w: Vec<Value> = language_warning(model.info.languages.as_deref(), &self.lang)
            .into_iter()
            .collect();
        w.extend(
            self.resolved
                .warnings
                .iter()
                .map(|(code, message)| json!({ "code": code, "message": message })),
        );
        w
    }

    /// The method, policy and detection settings, as reported in responses.
    pub fn metadata(&self) -> Value {
        let r = &self.resolved;
        json!({
            "pipeline": self.pipeline.name,
            "lang": self.lang,
            "confidence_threshold": r.confidence_threshold,
            "normalize_accents": self.opts.normalize_accents,
            "use_smart_merging": self.opts.smart_merging,
            "keep_year": r.plan.keep_year,
            "safety_sweep": {
                "enabled": r.safety_sweep,
                "forced_by_policy": r.sweep_forced,
                "patterns_version": self.patterns_version,
            },
            "policy": r.policy.as_ref().map(|p| json!({
                "name": p.name,
                "description": p.description,
                "forced_safety_sweep": p.force_safety_sweep,
                "keep_mapping": p.keep_mapping,
                "max_confidence_threshold": p.max_confidence_threshold,
            })),
        })
    }
}

/// One entity of a de-identification: where it was in the input, what it was, what now stands
/// there. Never the original text.
#[derive(Serialize)]
pub struct DeidEntity {
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

/// Builds entities and label counts piece by piece, with code point offsets into the whole
/// input and the whole output.
#[derive(Default)]
pub struct EntityShaper {
    pub entities: Vec<DeidEntity>,
    pub counts: BTreeMap<&'static str, usize>,
    in_chars: usize,
    out_chars: usize,
    out_bytes: usize,
}

impl EntityShaper {
    /// Adds the spans of one input piece that starts at byte `base` of the input (span offsets
    /// are into the whole input) and the redactions made for them in `out` (byte offsets into
    /// the whole output).
    pub fn push(
        &mut self,
        input: &str,
        base: usize,
        spans: &[Span],
        out: &str,
        redactions: &[Redaction],
    ) {
        let (ii, oi) = (CharIndex::new(input), CharIndex::new(out));
        for (s, red) in spans.iter().zip(redactions) {
            let canon = canonical_label(&s.label);
            if red.action != Applied::Keep {
                *self.counts.entry(canon.name).or_default() += 1;
            }
            self.entities.push(DeidEntity {
                label: s.label.clone(),
                canonical_label: canon.name,
                hipaa_class: canon.hipaa_class,
                confidence: (f64::from(s.score) * 1e4).round() / 1e4,
                start: self.in_chars + ii.char_offset(s.start - base),
                end: self.in_chars + ii.char_offset(s.end - base),
                source: s.source,
                pattern: s.pattern.as_deref().map(String::from),
                action: red.action,
                replacement: red.replacement.clone(),
                output_start: self.out_chars + oi.char_offset(red.out_start - self.out_bytes),
                output_end: self.out_chars + oi.char_offset(red.out_end - self.out_bytes),
            });
        }
        self.in_chars += input.chars().count();
        self.out_chars += out.chars().count();
        self.out_bytes += out.len();
    }

    pub fn redacted(&self) -> usize {
        self.counts.values().sum()
    }
}

pub async fn deidentify(
    State(state): State<AppState>,
    req: Valid<PiiDeidentifyRequest>,
) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let keep_alive = keep_alive_of(&req.raw);
    let r = req.body;
    let setup = DeidSetup::new(
        &state.settings,
        &state.pipelines,
        &state.policies,
        &r.options,
    )?;
    let model = setup.model(&state.registry, keep_alive).await?;
    let warnings = setup.warnings(&model);
    let done = streaming::deidentify(
        setup.pipeline.clone(),
        model.arc(),
        setup.opts.clone(),
        Arc::from(r.text),
        &setup.resolved.plan,
    )
    .await?;
    drop(model);
    let (spans, outcome) = (done.spans, done.outcome);
    let mut shaper = EntityShaper::default();
    shaper.push(
        &spans.original,
        0,
        &spans.spans,
        &outcome.text,
        &outcome.redactions,
    );
    let mut metadata = setup.metadata();
    metadata["safety_sweep"]["spans_added"] = json!(spans.stats.sweep_added);
    metadata["safety_sweep"]["spans_merged"] = json!(spans.stats.pattern_merged);
    metadata["propagated"] = json!(spans.stats.propagated);
    metadata["tokens"] = json!(spans.stats.tokens);
    metadata["windows"] = json!(spans.stats.windows);
    metadata["sentences"] = json!(spans.stats.sentences);
    let r = &setup.resolved;
    let mut body = json!({
        "deidentified_text": outcome.text,
        "num_entities_redacted": shaper.redacted(),
        "entities": shaper.entities,
        "counts": shaper.counts,
        "method": r.plan.method.as_str(),
        "policy": r.policy.as_ref().map(|p| p.name.clone()),
        "model_name": setup.model_name,
        "timestamp": now_rfc3339(),
        "processing_time": started.elapsed().as_secs_f64(),
        "warnings": warnings,
        "metadata": metadata,
    });
    if let Some(m) = outcome.mapping
        && let Some(obj) = body.as_object_mut()
    {
        obj.insert("mapping".into(), json!(m));
    }
    Ok(Json(body))
}
