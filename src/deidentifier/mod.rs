//! The de-identification core: one entry point that turns a text and options into a
//! de-identified text and its entities. The HTTP routes, jobs, FHIR ingestion, the batch CLI
//! and the evaluation all go through [`Deidentifier`], so the same input gives byte-identical
//! output on every surface. Knows nothing of HTTP: errors are [`DeidError`], which the API maps
//! to statuses in one place.

mod batch;
mod entities;
mod known;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

pub use batch::{BatchColumns, BatchError, output_schema};
pub use entities::{DeidEntity, EntityShaper};
pub use known::KnownIdentifier;

use crate::config::Settings;
use crate::deid::operators::{self, Original, Plan};
use crate::deid::options::{self, Conflict, DeidRequest, ResolveError, Resolved};
use crate::deid::policy::{Method, Policies};
use crate::inference::{
    InferenceError, KeepAlive, ModelHandle, ModelRegistry, OrtRuntime, RegistryLimits,
    SessionOptions, spawn_reaper,
};
use crate::pipeline::{Pipeline, Pipelines};
use crate::stages::{RunOptions, RunStats, StageError};
use crate::streaming;

/// The options of a de-identification (PIIDeidentifyRequest without `text`), shared by every
/// surface.
#[derive(Deserialize, Clone, Debug, Default)]
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

/// Why a de-identification could not run.
#[derive(Debug, thiserror::Error)]
pub enum DeidError {
    /// The options contradict each other or name what does not exist (each with its field).
    #[error("the options are invalid")]
    Invalid(Vec<Conflict>),
    #[error(transparent)]
    Inference(#[from] InferenceError),
    #[error("{0}")]
    Internal(String),
}

impl From<StageError> for DeidError {
    fn from(e: StageError) -> Self {
        match e {
            StageError::Inference(e) => Self::Inference(e),
            other => Self::Internal(other.to_string()),
        }
    }
}

/// Why the engine could not be built from settings.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0}")]
    Settings(String),
    #[error(transparent)]
    Inference(#[from] InferenceError),
    #[error(transparent)]
    Pipeline(#[from] crate::pipeline::PipelineError),
    #[error(transparent)]
    Policy(#[from] crate::deid::policy::PolicyError),
}

/// The pipelines every process needs.
pub const REQUIRED_PIPELINES: &[&str] = &["analyze", "pii_extract", "pii_deidentify"];

/// The engine: settings, model registry (with its batching queues), pipelines and policies.
/// Build it once per process and share it.
pub struct Deidentifier {
    settings: Arc<Settings>,
    registry: Arc<ModelRegistry>,
    pipelines: Arc<Pipelines>,
    policies: Arc<Policies>,
}

/// Options resolved against the policies and the key: build once, run on many texts.
pub struct Prepared {
    pub resolved: Resolved,
    patterns_version: String,
    pub opts: Arc<RunOptions>,
    pub lang: String,
    pub model_name: String,
    pub pipeline: Arc<Pipeline>,
    /// Whether the caller fixed the date shift (then no subject re-keys it).
    explicit_shift: bool,
}

/// What the text's subject (a row, a patient) brings: an id that keys its date shift, so that
/// reruns and other machines shift its dates alike, and identifiers known from structured data
/// that must go wherever they appear.
#[derive(Clone, Copy, Default)]
pub struct Subject<'a> {
    pub id: Option<&'a str>,
    pub known: &'a [KnownIdentifier],
}

/// The spans found in one text, before any rewriting.
#[derive(Debug)]
pub struct Detected {
    pub text: Arc<str>,
    /// Byte offsets into `text`, sorted and disjoint.
    pub spans: Vec<crate::stages::Span>,
    pub stats: RunStats,
    pub known_added: usize,
}

/// A de-identified text.
#[derive(Debug)]
pub struct Deidentification {
    pub text: String,
    pub entities: Vec<DeidEntity>,
    /// Rewritten spans by canonical label.
    pub counts: BTreeMap<&'static str, usize>,
    pub mapping: Option<BTreeMap<String, Original>>,
    pub stats: RunStats,
    /// Spans added because a known identifier appeared where nothing was detected.
    pub known_added: usize,
    /// The date shift applied, when the method shifts dates.
    pub shift_days: Option<i64>,
}

impl Deidentification {
    /// Rewritten spans (not kept).
    pub fn redacted(&self) -> usize {
        self.counts.values().sum()
    }
}

impl Deidentifier {
    pub fn new(
        settings: Arc<Settings>,
        registry: Arc<ModelRegistry>,
        pipelines: Arc<Pipelines>,
        policies: Arc<Policies>,
    ) -> Self {
        Self {
            settings,
            registry,
            pipelines,
            policies,
        }
    }

    /// Builds everything from settings: the ONNX Runtime, the checked pipelines and policies,
    /// and the model registry with its reaper. Call it inside a tokio runtime.
    pub fn build(settings: Settings) -> Result<Self, BuildError> {
        let default_keep_alive = KeepAlive::parse(&settings.keep_alive)
            .map_err(|why| BuildError::Settings(format!("SERVICE_KEEP_ALIVE: {why}")))?;
        let (device, cuda_device_id) = settings.inference_device().map_err(BuildError::Settings)?;
        let runtime = OrtRuntime::init(
            &settings.ort_library_path(),
            SessionOptions {
                device,
                cuda_device_id,
                cuda_lib_dir: settings.cuda_lib_dir.clone(),
                cuda_memory_limit: settings.cuda_memory_limit_bytes,
                cuda_arena_extend: settings.cuda_arena_extend,
                threads: settings.ort_threads,
                workers: settings.infer_workers,
            },
        )?;
        let pipelines = Pipelines::load(&settings.pipelines_dir, REQUIRED_PIPELINES)?;
        let policies = Policies::load(&settings.pipelines_dir.join("policies"))?;
        let registry = ModelRegistry::new(
            runtime,
            settings.models_dir.clone(),
            RegistryLimits {
                default_keep_alive,
                max_resident: settings.max_resident_models,
                memory_budget: settings.model_memory_budget_bytes,
                batch_token_budget: settings.batch_token_budget(),
                batch_max_padding: settings.batch_max_padding(),
                queue_capacity: settings.queue_capacity,
            },
        );
        spawn_reaper(registry.clone());
        Ok(Self::new(
            Arc::new(settings),
            registry,
            Arc::new(pipelines),
            Arc::new(policies),
        ))
    }

    pub fn settings(&self) -> &Arc<Settings> {
        &self.settings
    }

    pub fn registry(&self) -> &Arc<ModelRegistry> {
        &self.registry
    }

    pub fn pipelines(&self) -> &Arc<Pipelines> {
        &self.pipelines
    }

    pub fn policies(&self) -> &Arc<Policies> {
        &self.policies
    }

    /// Whether a stable key is configured (`SERVICE_DEID_SECRET_KEY`): without one, surrogates,
    /// hashes and date shifts differ from one run to the next.
    pub fn has_secret_key(&self) -> bool {
        self.secret_key().is_some()
    }

    /// The configured key (`SERVICE_DEID_SECRET_KEY`), when set and not empty.
    pub fn secret_key(&self) -> Option<&[u8]> {
        self.settings
            .deid_secret_key
            .as_deref()
            .filter(|k| !k.is_empty())
            .map(str::as_bytes)
    }

    /// The date shift of a subject: a keyed HMAC of its id, the same on every run and machine.
    /// None without a configured key.
    pub fn subject_shift_days(&self, subject: &str) -> Option<i64> {
        self.secret_key()
            .map(|s| operators::Key::from_secret(s).subject_shift_days(subject))
    }

    /// Resolves method, policy, dates and the model: conflicts come back with their fields.
    pub fn prepare(&self, o: &DeidOptions) -> Result<Prepared, DeidError> {
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
            &self.policies,
            self.secret_key(),
        )
        .map_err(|e| match e {
            ResolveError::Conflicts(c) => DeidError::Invalid(c),
            ResolveError::Entropy(why) => DeidError::Internal(why),
        })?;
        let opts = Arc::new(RunOptions::pii(
            &lang,
            o.normalize_accents,
            resolved.confidence_threshold,
            o.use_smart_merging.unwrap_or(true),
            resolved.safety_sweep,
        ));
        let pipeline = self
            .pipelines
            .get("pii_deidentify")
            .ok_or_else(|| DeidError::Internal("pii_deidentify pipeline missing".into()))?;
        Ok(Prepared {
            resolved,
            patterns_version: self.pipelines.recognizers.version.to_string(),
            opts,
            model_name: o
                .model_name
                .clone()
                .unwrap_or_else(|| self.settings.pii_model.clone()),
            lang,
            pipeline,
            explicit_shift: o.date_shift_days.is_some(),
        })
    }

    /// The prepared options' model, loaded if needed (a handle keeps it resident).
    pub async fn model(
        &self,
        p: &Prepared,
        keep_alive: Option<KeepAlive>,
    ) -> Result<ModelHandle, DeidError> {
        Ok(self.registry.acquire(&p.model_name, keep_alive).await?)
    }

    /// The spans of one text: detected, plus every occurrence of the subject's known
    /// identifiers; sorted and disjoint (byte offsets). Also the run's counts and how many
    /// spans only the known identifiers gave.
    pub async fn detect(
        &self,
        p: &Prepared,
        model: &ModelHandle,
        text: Arc<str>,
        subject: Subject<'_>,
    ) -> Result<Detected, DeidError> {
        let spans =
            streaming::detect(p.pipeline.clone(), model.arc(), p.opts.clone(), text).await?;
        let (found, known_added) =
            known::merge(spans.spans, known::find(&spans.original, subject.known));
        Ok(Detected {
            text: spans.original,
            spans: found,
            stats: spans.stats,
            known_added,
        })
    }

    /// De-identifies one text with prepared options and a loaded model.
    pub async fn run(
        &self,
        p: &Prepared,
        model: &ModelHandle,
        text: Arc<str>,
        subject: Subject<'_>,
    ) -> Result<Deidentification, DeidError> {
        let found = self.detect(p, model, text, subject).await?;
        let plan = self.plan_for(p, subject.id);
        let outcome = operators::apply(&found.text, &streaming::targets(&found.spans, 0), &plan);
        let mut shaper = EntityShaper::default();
        shaper.push(
            &found.text,
            0,
            &found.spans,
            &outcome.text,
            &outcome.redactions,
        );
        Ok(Deidentification {
            text: outcome.text,
            entities: shaper.entities,
            counts: shaper.counts,
            mapping: outcome.mapping,
            stats: found.stats,
            known_added: found.known_added,
            shift_days: (plan.method == Method::ShiftDates).then_some(plan.shift_days),
        })
    }

    /// [`Self::run`], waiting out a full queue (back-pressure, not a verdict on the text) for
    /// a while: for jobs, batches and exports, which have no caller to send a 503 to.
    pub async fn run_patiently(
        &self,
        p: &Prepared,
        model: &ModelHandle,
        text: Arc<str>,
        subject: Subject<'_>,
    ) -> Result<Deidentification, DeidError> {
        patiently(|| self.run(p, model, text.clone(), subject)).await
    }

    /// [`Self::detect`], waiting out a full queue like [`Self::run_patiently`].
    pub async fn detect_patiently(
        &self,
        p: &Prepared,
        model: &ModelHandle,
        text: Arc<str>,
        subject: Subject<'_>,
    ) -> Result<Detected, DeidError> {
        patiently(|| self.detect(p, model, text.clone(), subject)).await
    }

    /// Prepares, loads the model and runs: the one-call form for a single text.
    pub async fn deidentify(
        &self,
        text: &str,
        o: &DeidOptions,
        subject: Subject<'_>,
    ) -> Result<Deidentification, DeidError> {
        let p = self.prepare(o)?;
        let model = self.model(&p, None).await?;
        self.run(&p, &model, Arc::from(text), subject).await
    }

    /// The plan for one subject: its date shift keyed by its id when a key is configured and
    /// the caller fixed none.
    pub fn plan_for(&self, p: &Prepared, subject: Option<&str>) -> Plan {
        let mut plan = p.resolved.plan.clone();
        if let (Some(id), false) = (subject, p.explicit_shift)
            && let Some(days) = self.subject_shift_days(id)
        {
            plan.shift_days = days;
        }
        plan
    }
}

impl Prepared {
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

/// How long work waits, in all, for a busy model queue before it fails.
const BUSY_PATIENCE: std::time::Duration = std::time::Duration::from_secs(300);

/// Calls `f` until it gives something other than a full queue, sleeping as the queue asks,
/// for at most [`BUSY_PATIENCE`].
async fn patiently<T, F, Fut>(f: F) -> Result<T, DeidError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, DeidError>>,
{
    let started = tokio::time::Instant::now();
    loop {
        match f().await {
            Err(DeidError::Inference(InferenceError::QueueFull { retry_after_secs }))
                if started.elapsed() < BUSY_PATIENCE =>
            {
                tokio::time::sleep(std::time::Duration::from_secs(retry_after_secs.max(1))).await;
            }
            other => return other,
        }
    }
}

/// A warning when the model was not trained for `lang` (or does not say what it covers).
pub fn language_warning(languages: Option<&[String]>, lang: &str) -> Option<Value> {
    match languages {
        Some(langs) if !langs.iter().any(|l| l == lang) => Some(json!({
            "code": "language_not_covered",
            "message": "The model was not trained for the requested language; recall may be low",
            "lang": lang,
            "model_languages": langs,
        })),
        None => Some(json!({
            "code": "language_coverage_unknown",
            "message": "The model does not declare its languages",
            "lang": lang,
        })),
        Some(_) => None,
    }
}
