//! SMART backend-services ingestion jobs: authorise, kick off a Bulk Data export, poll it,
//! download its files (at most `max_inflight_downloads` at once), de-identify them with the
//! same [`Exporter`] as `phiflow fhir deidentify`, and report.
//!
//! Jobs live in the job store's SQLite database and resume after a restart or kill -9: the
//! checkpoint file (`checkpoint_path`, default `<output_dir>/.phiflow-checkpoint.json`) keeps
//! the status URL, the manifest and each finished download with its sha256, so nothing
//! finished is downloaded or de-identified again. The private key is kept sealed only while
//! the job runs; tokens are never stored. States: `running → succeeded | failed | cancelled`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::export::{self, Exporter, Progress, Source};
use super::files::{self, AtomicFile, Written};
use super::ingest_store::{Row, Store};
use super::resource::ResourceDeidentifier;
use super::{
    BulkClient, BulkConfig, BulkError, Manifest, OutputFile, ProgressHook, SmartClient,
    SmartConfig, StatusUrl,
};
use crate::deid::policy::Method;
use crate::deidentifier::{DeidOptions, Deidentifier};
use crate::inference::KeepAlive;
use crate::jobs::JobError;
use crate::jobs::seal::Sealer;

/// Where downloads wait for de-identification, inside the output folder (mode 0700; removed
/// when the job ends, since they hold PHI).
const DOWNLOADS_DIR: &str = ".phiflow-downloads";
const CHECKPOINT_FILE: &str = ".phiflow-checkpoint.json";
/// How often a running job's progress is written to the store.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// A request field that is wrong, with why (never its value).
#[derive(Debug)]
pub struct FieldError {
    pub field: &'static str,
    pub kind: &'static str,
    pub message: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("the request is invalid")]
    Invalid(Vec<FieldError>),
    #[error(transparent)]
    Store(#[from] JobError),
}

#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("no such ingestion")]
    NotFound,
    #[error("the ingestion has not finished")]
    NotFinished(String),
    #[error(transparent)]
    Store(#[from] JobError),
}

/// The stored part of a request: everything but the private key, defaults applied.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobConfig {
    pub fhir_base_url: String,
    pub token_url: String,
    pub client_id: String,
    pub key_id: Option<String>,
    pub scope: String,
    pub export_path: String,
    pub output_dir: PathBuf,
    pub checkpoint_path: PathBuf,
    pub max_inflight_downloads: usize,
    pub poll_interval_seconds: f64,
    pub request_timeout_seconds: f64,
    pub confidence_threshold: f64,
    pub lang: String,
    pub method: Method,
    pub model_name: Option<String>,
    pub normalize_accents: Option<bool>,
    pub policy: Option<String>,
    pub use_safety_sweep: bool,
    pub use_smart_merging: bool,
    pub keep_alive: Option<Value>,
}

impl JobConfig {
    pub fn deid_options(&self) -> DeidOptions {
        DeidOptions {
            confidence_threshold: Some(self.confidence_threshold),
            lang: Some(self.lang.clone()),
            method: Some(self.method),
            model_name: self.model_name.clone(),
            normalize_accents: self.normalize_accents,
            policy: self.policy.clone(),
            use_safety_sweep: Some(self.use_safety_sweep),
            use_smart_merging: Some(self.use_smart_merging),
            ..DeidOptions::default()
        }
    }

    fn bulk(&self) -> BulkConfig {
        let mut b = BulkConfig::new(self.fhir_base_url.clone());
        b.export_path = self.export_path.clone();
        b.poll_interval = Duration::from_secs_f64(self.poll_interval_seconds);
        b.request_timeout = Duration::from_secs_f64(self.request_timeout_seconds);
        b.max_inflight_downloads = self.max_inflight_downloads;
        b
    }

    fn smart(&self, private_key_pem: String) -> SmartConfig {
        SmartConfig {
            token_url: self.token_url.clone(),
            client_id: self.client_id.clone(),
            private_key_pem,
            key_id: self.key_id.clone(),
            scope: self.scope.clone(),
            request_timeout: Duration::from_secs_f64(self.request_timeout_seconds),
        }
    }
}

/// What a restart needs to go on without redoing finished work.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Checkpoint {
    fhir_base_url: String,
    export_path: String,
    status_url: Option<StatusUrl>,
    manifest: Option<Manifest>,
    /// Finished downloads by local file name.
    downloaded: BTreeMap<String, Written>,
}

/// A running job's live counters.
struct Live {
    progress: Arc<Progress>,
    phase: Mutex<&'static str>,
    started: Instant,
    phase_started: Mutex<Instant>,
    files_total: AtomicU64,
    files_downloaded: AtomicU64,
    bytes_downloaded: AtomicU64,
    input_bytes: AtomicU64,
    polls: AtomicU64,
    peak_inflight: AtomicU64,
    cancelled: AtomicBool,
    cancel: Notify,
}

impl Live {
    fn new() -> Self {
        Self {
            progress: Arc::new(Progress::default()),
            phase: Mutex::new("authorizing"),
            started: Instant::now(),
            phase_started: Mutex::new(Instant::now()),
            files_total: AtomicU64::new(0),
            files_downloaded: AtomicU64::new(0),
            bytes_downloaded: AtomicU64::new(0),
            input_bytes: AtomicU64::new(0),
            polls: AtomicU64::new(0),
            peak_inflight: AtomicU64::new(0),
            cancelled: AtomicBool::new(false),
            cancel: Notify::new(),
        }
    }

    fn set_phase(&self, p: &'static str) {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = p;
        *self.phase_started.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn report(&self) -> Value {
        let phase = *self.phase.lock().unwrap_or_else(|e| e.into_inner());
        let in_phase = self
            .phase_started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
            .as_secs_f64();
        let p = &self.progress;
        let resources = p.resources.load(Ordering::Relaxed);
        let bytes = p.bytes.load(Ordering::Relaxed);
        let total = self.input_bytes.load(Ordering::Relaxed);
        let deidentifying = phase == "deidentifying";
        let rate = if deidentifying && in_phase > 0.0 {
            resources as f64 / in_phase
        } else {
            0.0
        };
        let eta = (deidentifying && bytes > 0 && total >= bytes)
            .then(|| (total - bytes) as f64 * in_phase / bytes as f64);
        json!({
            "phase": phase,
            "files_total": self.files_total.load(Ordering::Relaxed),
            "files_downloaded": self.files_downloaded.load(Ordering::Relaxed),
            "files_done": p.files_done.load(Ordering::Relaxed),
            "resources_done": resources,
            "resources_rejected": p.rejected.load(Ordering::Relaxed),
            "bytes_downloaded": self.bytes_downloaded.load(Ordering::Relaxed),
            "bytes_done": bytes,
            "bytes_total": total,
            "resources_per_second": (rate * 10.0).round() / 10.0,
            "eta_seconds": eta.map(|e| e.round()),
            "polls": self.polls.load(Ordering::Relaxed),
            "peak_inflight_downloads": self.peak_inflight.load(Ordering::Relaxed),
            "elapsed_seconds": (self.started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        })
    }

    /// Waits until the job is cancelled.
    async fn cancelled(&self) {
        loop {
            let notified = self.cancel.notified();
            if self.cancelled.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

struct DownloadProgress(Arc<Live>);

impl ProgressHook for DownloadProgress {
    fn downloaded(&self, _file: &OutputFile, bytes: u64, _lines: u64) {
        self.0.bytes_downloaded.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// Why a job failed: a code and a message with no URL, key, token or PHI.
struct Failure {
    code: &'static str,
    message: String,
}

impl Failure {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl From<BulkError> for Failure {
    fn from(e: BulkError) -> Self {
        let code = match &e {
            BulkError::Auth { .. } | BulkError::Unauthorized { .. } => "authorization_failed",
            BulkError::OffOrigin { .. } | BulkError::Redirect { .. } => "url_not_allowed",
            BulkError::ExportFailed { .. } | BulkError::MissingContentLocation => "export_failed",
            BulkError::Io { .. } => "storage_error",
            _ => "transfer_failed",
        };
        Self::new(code, e.to_string())
    }
}

impl From<export::ExportError> for Failure {
    fn from(e: export::ExportError) -> Self {
        Self::new("deidentification_failed", e.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Self::new(
            "storage_error",
            format!("writing the output failed: {}", e.kind()),
        )
    }
}

/// The ingestion jobs of this process.
pub struct Ingestions {
    deid: Arc<Deidentifier>,
    store: Store,
    sealer: Sealer,
    root: PathBuf,
    live: Mutex<HashMap<String, Arc<Live>>>,
}

fn field(field: &'static str, kind: &'static str, message: impl Into<String>) -> FieldError {
    FieldError {
        field,
        kind,
        message: message.into(),
    }
}

/// `p` resolved inside `root`: relative paths below it, absolute ones only inside it, and
/// never through `..`.
fn inside(root: &Path, p: &str) -> Result<PathBuf, &'static str> {
    let path = Path::new(p);
    if p.trim().is_empty() {
        return Err("must not be empty");
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err("must not contain `..`");
    }
    let full = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    if full.starts_with(root) && full != root {
        Ok(full)
    } else {
        Err("must lie inside the configured SERVICE_FHIR_OUTPUT_ROOT")
    }
}

impl Ingestions {
    /// Opens the store (the job database) and resumes every job still running.
    pub fn open(deid: Arc<Deidentifier>) -> Result<Arc<Self>, JobError> {
        let s = deid.settings().clone();
        let db = s.jobs_db_path();
        if let Some(parent) = db.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let store = Store::open(&db)?;
        let seal_key = s.jobs_seal_key_bytes().map_err(JobError::Seal)?;
        let sealer = Sealer::load(seal_key.as_deref(), &db)?;
        let root = s
            .fhir_output_root
            .clone()
            .unwrap_or_else(|| s.data_dir.join("fhir"));
        std::fs::create_dir_all(&root)?;
        let root = std::path::absolute(&root)?;
        let this = Arc::new(Self {
            deid,
            store,
            sealer,
            root,
            live: Mutex::new(HashMap::new()),
        });
        for id in this.store.running()? {
            tracing::info!(job_id = %id, "resuming a FHIR ingestion");
            this.spawn(id);
        }
        Ok(this)
    }

    /// Checks a validated request body and starts the job.
    pub fn create(self: &Arc<Self>, raw: &Value) -> Result<Value, CreateError> {
        let (config, key) = self.check(raw)?;
        let id = uuid::Uuid::new_v4().to_string();
        let sealed = self.sealer.seal_bytes(&id, key.as_bytes())?;
        let stored = serde_json::to_value(&config).map_err(|e| JobError::Corrupt(e.to_string()))?;
        self.store.insert(&id, &stored, &sealed)?;
        tracing::info!(job_id = %id, "FHIR ingestion started");
        self.spawn(id.clone());
        self.get(&id)?
            .ok_or_else(|| CreateError::Store(JobError::Corrupt("job vanished".into())))
    }

    fn check(&self, raw: &Value) -> Result<(JobConfig, String), CreateError> {
        let mut errors = Vec::new();
        let str_of = |k: &str| raw.get(k).and_then(Value::as_str).map(String::from);
        let output = str_of("output_dir").unwrap_or_default();
        let output_dir = inside(&self.root, &output)
            .map_err(|why| errors.push(field("output_dir", "path_not_allowed", why)))
            .unwrap_or_default();
        let checkpoint_path = match str_of("checkpoint_path") {
            Some(c) => inside(&self.root, &c)
                .map_err(|why| errors.push(field("checkpoint_path", "path_not_allowed", why)))
                .unwrap_or_default(),
            None => output_dir.join(CHECKPOINT_FILE),
        };
        let method = match str_of("method") {
            Some(m) => serde_json::from_value(Value::String(m)).unwrap_or(Method::Replace),
            None => Method::Replace,
        };
        let config = JobConfig {
            fhir_base_url: str_of("fhir_base_url").unwrap_or_default(),
            token_url: str_of("token_url").unwrap_or_default(),
            client_id: str_of("client_id").unwrap_or_default(),
            key_id: str_of("key_id"),
            scope: str_of("scope").unwrap_or_else(|| "system/*.read".into()),
            export_path: str_of("export_path").unwrap_or_else(|| "$export".into()),
            output_dir,
            checkpoint_path,
            max_inflight_downloads: raw
                .get("max_inflight_downloads")
                .and_then(Value::as_u64)
                .map_or(2, |n| n.clamp(1, 64) as usize),
            poll_interval_seconds: raw
                .get("poll_interval_seconds")
                .and_then(Value::as_f64)
                .unwrap_or(1.0),
            request_timeout_seconds: raw
                .get("request_timeout_seconds")
                .and_then(Value::as_f64)
                .unwrap_or(30.0),
            confidence_threshold: raw
                .get("confidence_threshold")
                .and_then(Value::as_f64)
                .unwrap_or(0.7),
            lang: str_of("lang").unwrap_or_else(|| "en".into()),
            method,
            model_name: str_of("model_name"),
            normalize_accents: raw.get("normalize_accents").and_then(Value::as_bool),
            // Absent: Safe Harbor; an explicit null: no policy.
            policy: match raw.get("policy") {
                None => Some("hipaa_safe_harbor".into()),
                Some(p) => p.as_str().map(String::from),
            },
            use_safety_sweep: raw
                .get("use_safety_sweep")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            use_smart_merging: raw
                .get("use_smart_merging")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            keep_alive: raw.get("keep_alive").filter(|v| !v.is_null()).cloned(),
        };
        let key = str_of("private_key_pem").unwrap_or_default();
        if let Err(e) = SmartClient::new(config.smart(key.clone())) {
            let (f, kind) = match &e {
                super::SmartError::Config { field, .. } => (*field, "value_error"),
                _ => ("private_key_pem", "value_error"),
            };
            let f = match f {
                "token_url" => "token_url",
                "client_id" => "client_id",
                "scope" => "scope",
                "key_id" => "key_id",
                _ => "private_key_pem",
            };
            errors.push(field(f, kind, e.to_string()));
        }
        for (name, url) in [
            ("fhir_base_url", &config.fhir_base_url),
            ("token_url", &config.token_url),
        ] {
            let ok = reqwest::Url::parse(url)
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
            if !ok {
                errors.push(field(
                    name,
                    "url_parsing",
                    "must be an absolute http or https URL",
                ));
            }
        }
        if config.export_path.trim().is_empty() || config.export_path.contains("://") {
            errors.push(field(
                "export_path",
                "value_error",
                "must be a path relative to fhir_base_url, such as `$export` or `Group/1/$export`",
            ));
        }
        match self.deid.prepare(&config.deid_options()) {
            Err(crate::deidentifier::DeidError::Invalid(conflicts)) => {
                for c in conflicts {
                    errors.push(field(c.field, c.kind, c.message));
                }
            }
            Err(e) => errors.push(field("model_name", "value_error", e.to_string())),
            Ok(p) => {
                if !self.deid.registry().installed().contains(&p.model_name) {
                    errors.push(field(
                        "model_name",
                        "model_not_found",
                        "the model is not installed",
                    ));
                }
            }
        }
        if !self.deid.has_secret_key() {
            errors.push(field(
                "method",
                "secret_key_required",
                "FHIR ingestion needs SERVICE_DEID_SECRET_KEY: pseudonyms and date shifts are keyed by it",
            ));
        }
        if errors.is_empty() {
            Ok((config, key))
        } else {
            Err(CreateError::Invalid(errors))
        }
    }

    fn spawn(self: &Arc<Self>, id: String) {
        let live = Arc::new(Live::new());
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), live.clone());
        let this = self.clone();
        tokio::spawn(async move {
            let ticker = {
                let (this, id, live) = (this.clone(), id.clone(), live.clone());
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(PROGRESS_EVERY).await;
                        let (this, id, report) = (this.clone(), id.clone(), live.report());
                        let _ =
                            tokio::task::spawn_blocking(move || this.store.progress(&id, &report))
                                .await;
                    }
                })
            };
            let outcome = this.run(&id, &live).await;
            ticker.abort();
            let report = live.report();
            let (status, summary, error) = match outcome {
                Ok(summary) => ("succeeded", Some(summary), None),
                Err(_) if live.cancelled.load(Ordering::Acquire) => ("cancelled", None, None),
                Err(f) => {
                    tracing::warn!(job_id = %id, code = f.code, "FHIR ingestion failed");
                    (
                        "failed",
                        None,
                        Some(json!({ "code": f.code, "message": f.message })),
                    )
                }
            };
            let (this2, id2) = (this.clone(), id.clone());
            let stored = tokio::task::spawn_blocking(move || {
                this2
                    .store
                    .finish(&id2, status, &report, summary.as_ref(), error.as_ref())
            })
            .await;
            if !matches!(stored, Ok(Ok(_))) {
                tracing::error!(job_id = %id, "recording the end of a FHIR ingestion failed");
            }
            this.live
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            tracing::info!(job_id = %id, status, "FHIR ingestion ended");
        });
    }

    /// Runs a job to its end; cancellation stops it between and inside phases.
    async fn run(&self, id: &str, live: &Arc<Live>) -> Result<Value, Failure> {
        let row = self
            .store
            .get(id)
            .map_err(|e| Failure::new("storage_error", e.to_string()))?
            .ok_or_else(|| Failure::new("storage_error", "the job record is missing"))?;
        let config: JobConfig = serde_json::from_value(row.request.clone())
            .map_err(|_| Failure::new("storage_error", "the stored request does not parse"))?;
        let key = self
            .store
            .sealed_key(id)
            .ok()
            .flatten()
            .and_then(|s| self.sealer.unseal_bytes(id, &s).ok())
            .and_then(|k| String::from_utf8(k).ok())
            .ok_or_else(|| {
                Failure::new(
                    "credentials_unavailable",
                    "the private key could not be unsealed; start the ingestion again with the same checkpoint_path to resume",
                )
            })?;
        let smart = SmartClient::new(config.smart(key))
            .map_err(|e| Failure::new("authorization_failed", e.to_string()))?;
        let bulk = BulkClient::new(config.bulk(), smart)?
            .with_progress(Arc::new(DownloadProgress(live.clone())));
        let result = tokio::select! {
            r = self.work(&config, &bulk, live) => r,
            () = live.cancelled() => Err(Failure::new("cancelled", "cancelled")),
        };
        if live.cancelled.load(Ordering::Acquire) {
            // Tell the server, then drop what was downloaded (it holds PHI).
            if let Some(status) = read_checkpoint(&config).and_then(|c| c.status_url)
                && let Err(e) = bulk.cancel(&status).await
            {
                tracing::warn!(job_id = %id, error = %e, "the export's DELETE failed");
            }
            let _ = std::fs::remove_dir_all(config.output_dir.join(DOWNLOADS_DIR));
        }
        result
    }

    async fn work(
        &self,
        config: &JobConfig,
        bulk: &BulkClient,
        live: &Arc<Live>,
    ) -> Result<Value, Failure> {
        files::create_private_dir(&config.output_dir)?;
        let downloads = config.output_dir.join(DOWNLOADS_DIR);
        files::create_private_dir(&downloads)?;
        files::remove_temporaries(&downloads)?;
        let mut cp = read_checkpoint(config).unwrap_or_else(|| Checkpoint {
            fhir_base_url: config.fhir_base_url.clone(),
            export_path: config.export_path.clone(),
            ..Checkpoint::default()
        });
        let status = match cp.status_url.clone() {
            Some(s) => s,
            None => {
                live.set_phase("kick_off");
                let s = bulk.kick_off().await?;
                cp.status_url = Some(s.clone());
                write_checkpoint(config, &cp)?;
                s
            }
        };
        let manifest = match cp.manifest.clone() {
            Some(m) => m,
            None => {
                live.set_phase("polling");
                let m = bulk
                    .poll(&status, |_| {
                        live.polls.fetch_add(1, Ordering::Relaxed);
                    })
                    .await?;
                cp.manifest = Some(m.clone());
                write_checkpoint(config, &cp)?;
                m
            }
        };
        live.set_phase("downloading");
        let downloading = Instant::now();
        live.files_total
            .store(manifest.output.len() as u64, Ordering::Relaxed);
        let cp = Arc::new(Mutex::new(cp));
        let mut sources = Vec::with_capacity(manifest.output.len());
        let mut tasks = tokio::task::JoinSet::new();
        for (i, file) in manifest.output.iter().enumerate() {
            let name = format!("{i:05}-{}.ndjson", safe_name(&file.resource_type));
            let path = downloads.join(&name);
            sources.push(Source {
                name: name.clone(),
                path: path.clone(),
            });
            let done = cp
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .downloaded
                .get(&name)
                .cloned();
            if let Some(w) = done
                && files::sha256_file(&path).ok().as_deref() == Some(w.sha256.as_str())
            {
                live.files_downloaded.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let (bulk, manifest, file, cp, config, live) = (
                bulk.clone(),
                manifest.clone(),
                file.clone(),
                cp.clone(),
                config.clone(),
                live.clone(),
            );
            tasks.spawn(async move {
                let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
                bulk.download(&manifest, &file, &tmp).await?;
                let sha256 = files::sha256_file(&tmp)?;
                let bytes = std::fs::metadata(&tmp)?.len();
                std::fs::rename(&tmp, &path)?;
                let mut c = cp.lock().unwrap_or_else(|e| e.into_inner());
                c.downloaded.insert(name, Written { sha256, bytes });
                write_checkpoint(&config, &c)?;
                live.files_downloaded.fetch_add(1, Ordering::Relaxed);
                Ok::<(), Failure>(())
            });
        }
        while let Some(r) = tasks.join_next().await {
            match r {
                Ok(Ok(())) => {}
                Ok(Err(f)) => return Err(f),
                Err(e) => {
                    return Err(Failure::new(
                        "transfer_failed",
                        format!("a download task failed: {e}"),
                    ));
                }
            }
            live.peak_inflight
                .store(bulk.peak_inflight() as u64, Ordering::Relaxed);
        }
        live.peak_inflight
            .store(bulk.peak_inflight() as u64, Ordering::Relaxed);
        let download_seconds = downloading.elapsed().as_secs_f64();
        live.set_phase("deidentifying");
        let deidentifying = Instant::now();
        live.input_bytes
            .store(export::total_bytes(&sources), Ordering::Relaxed);
        let keep_alive = config
            .keep_alive
            .as_ref()
            .and_then(|v| KeepAlive::from_json(v).ok());
        let rd = ResourceDeidentifier::build(self.deid.clone(), &config.deid_options(), keep_alive)
            .await
            .map_err(|e| Failure::new("deidentification_failed", e.to_string()))?;
        let rd = Arc::new(rd);
        // The export stands at its transactionTime (kept in the checkpoint, so a resumed job
        // counts ages at the same date).
        let reference = chrono::DateTime::parse_from_rfc3339(&manifest.transaction_time)
            .map(|t| t.with_timezone(&chrono::Utc).date_naive())
            .unwrap_or_else(|_| chrono::Utc::now().date_naive());
        let exporter = Exporter::new(rd, &config.output_dir, reference)?;
        let summary = exporter.run(&sources, &live.progress).await?;
        let deidentify_seconds = deidentifying.elapsed().as_secs_f64();
        // The same summary.json as `phiflow fhir deidentify` writes beside the outputs.
        super::cli::write_summary(&config.output_dir, &summary)?;
        live.set_phase("finishing");
        // The files may go: the server is told, and the raw downloads are removed.
        if let Err(e) = bulk.cancel(&status).await {
            tracing::info!(error = %e, "the export's DELETE after completion failed");
        }
        let _ = std::fs::remove_dir_all(&downloads);
        exporter.clean()?;
        let _ = std::fs::remove_file(&config.checkpoint_path);
        let mut out = serde_json::to_value(&summary)
            .map_err(|e| Failure::new("storage_error", e.to_string()))?;
        if let Some(o) = out.as_object_mut() {
            o.insert("transaction_time".into(), json!(manifest.transaction_time));
            o.insert("files_downloaded".into(), json!(manifest.output.len()));
            o.insert(
                "bytes_downloaded".into(),
                json!(live.bytes_downloaded.load(Ordering::Relaxed)),
            );
            o.insert(
                "peak_inflight_downloads".into(),
                json!(bulk.peak_inflight()),
            );
            o.insert("server_error_files".into(), json!(manifest.error.len()));
            o.insert("server_deleted_files".into(), json!(manifest.deleted.len()));
            o.insert("tokens_minted".into(), json!(bulk.smart().tokens_minted()));
            o.insert(
                "duration_seconds".into(),
                json!(live.started.elapsed().as_secs_f64()),
            );
            // This run's time in the two phases that move data (a resumed job: since it
            // resumed).
            o.insert("download_seconds".into(), json!(download_seconds));
            o.insert("deidentify_seconds".into(), json!(deidentify_seconds));
            o.insert("method".into(), json!(config.method.as_str()));
            o.insert("policy".into(), json!(config.policy));
        }
        Ok(out)
    }

    /// The live counters of a job running in this process.
    fn live(&self, id: &str) -> Option<Arc<Live>> {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    /// The job record (None for an unknown id).
    pub fn get(&self, id: &str) -> Result<Option<Value>, JobError> {
        let Some(row) = self.store.get(id)? else {
            return Ok(None);
        };
        Ok(Some(record(&row, self.live(id).map(|l| l.report()))))
    }

    /// The summary of a finished job.
    pub fn summary(&self, id: &str) -> Result<Value, SummaryError> {
        let row = self.store.get(id)?.ok_or(SummaryError::NotFound)?;
        match (&row.summary, row.status.as_str()) {
            (Some(s), _) => Ok(json!({ "job_id": row.id, "status": row.status, "summary": s })),
            (None, "running") => Err(SummaryError::NotFinished(row.status)),
            (None, _) => Ok(json!({
                "job_id": row.id, "status": row.status, "summary": null, "error": row.error,
            })),
        }
    }

    /// Cancels a running job (the runner sends the Bulk Data DELETE); the record either way.
    pub fn cancel(&self, id: &str) -> Result<Option<Value>, JobError> {
        let Some(row) = self.store.get(id)? else {
            return Ok(None);
        };
        if row.status == "running" {
            match self.live(id) {
                Some(l) => {
                    l.cancelled.store(true, Ordering::Release);
                    l.progress.cancelled.store(true, Ordering::Release);
                    l.cancel.notify_waiters();
                    self.store
                        .finish(id, "cancelled", &l.report(), None, None)?;
                }
                None => {
                    self.store
                        .finish(id, "cancelled", &row.progress, None, None)?;
                }
            }
        }
        self.get(id)
    }
}

fn safe_name(t: &str) -> String {
    t.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(64)
        .collect()
}

fn read_checkpoint(config: &JobConfig) -> Option<Checkpoint> {
    let c: Checkpoint =
        serde_json::from_slice(&std::fs::read(&config.checkpoint_path).ok()?).ok()?;
    // Another export's checkpoint is not ours to resume.
    (c.fhir_base_url == config.fhir_base_url && c.export_path == config.export_path).then_some(c)
}

fn write_checkpoint(config: &JobConfig, c: &Checkpoint) -> Result<(), Failure> {
    if let Some(dir) = config.checkpoint_path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = AtomicFile::create(&config.checkpoint_path)?;
    serde_json::to_writer(&mut f, c).map_err(|e| Failure::new("storage_error", e.to_string()))?;
    f.commit()?;
    Ok(())
}

fn ms_to_rfc3339(ms: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// The job as the routes show it: no key, no token, no PHI.
fn record(row: &Row, live: Option<Value>) -> Value {
    let r = &row.request;
    let base = "/fhir/smart-backend/ingestions";
    let mut v = json!({
        "job_id": row.id,
        "status": row.status,
        "progress": live.unwrap_or_else(|| row.progress.clone()),
        "created_at": ms_to_rfc3339(row.created_at),
        "updated_at": ms_to_rfc3339(row.updated_at),
        "completed_at": row.completed_at.and_then(ms_to_rfc3339),
        "status_url": format!("{base}/{}", row.id),
        "summary_url": format!("{base}/{}/summary", row.id),
        "request": {
            "fhir_base_url": r["fhir_base_url"],
            "token_url": r["token_url"],
            "client_id": r["client_id"],
            "key_id": r["key_id"],
            "scope": r["scope"],
            "export_path": r["export_path"],
            "output_dir": r["output_dir"],
            "checkpoint_path": r["checkpoint_path"],
            "max_inflight_downloads": r["max_inflight_downloads"],
            "method": r["method"],
            "policy": r["policy"],
            "model_name": r["model_name"],
        },
    });
    if let (Some(e), Some(o)) = (&row.error, v.as_object_mut()) {
        o.insert("error".into(), e.clone());
    }
    v
}
