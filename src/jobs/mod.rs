//! Durable asynchronous de-identification jobs.
//!
//! A job is stored in SQLite before `submit` returns and is worked off by a
//! small pool of tokio tasks. Every document is recorded exactly once: the
//! processor's output, the purge of the source text and the job counters are
//! written in one transaction guarded by `status = 'pending'`, so a crash at
//! any point means the document is simply redone after restart.
//!
//! The de-identification itself is behind [`Processor`]; webhooks follow the
//! Standard Webhooks convention (see [`sign`]).
//!
//! Threads: all SQLite work runs on tokio's blocking pool (`spawn_blocking`);
//! the synchronous public methods ([`Jobs::submit`], [`Jobs::get`],
//! [`Jobs::results`], [`Jobs::cancel`], [`ResultPages::next_page`]) block on
//! SQLite and should be called from `spawn_blocking` in async handlers.

mod record;
pub(crate) mod seal;
mod store;
mod webhook;
mod worker;

#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::Connection;
use serde::Deserialize;
use tokio::sync::{Notify, watch};
use tokio::task::AbortHandle;

pub use webhook::sign;

/// Boxed `Send` future, so [`Processor`] stays object safe.
pub type BoxFut<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// Turns one document's text into its de-identified output.
///
/// Implemented by the main crate. Errors carry a short code and a message that
/// must never contain document text (they are stored and returned to clients).
pub trait Processor: Send + Sync + 'static {
    fn process(
        &self,
        options: &serde_json::Value,
        text: String,
    ) -> BoxFut<Result<ProcessedDoc, DocError>>;
}

/// Output of [`Processor::process`] for one document.
pub struct ProcessedDoc {
    /// De-identified text.
    pub text: String,
    /// JSON array describing the entities; must contain no original text.
    pub entities: serde_json::Value,
    /// Canonical label per redacted entity, counted into the job's histogram.
    pub labels: Vec<String>,
}

/// A per-document failure. Neither field may contain document text.
#[derive(Debug, Clone)]
pub struct DocError {
    pub code: String,
    pub message: String,
}

/// Configuration of the job store.
#[derive(Clone)]
pub struct JobSettings {
    /// SQLite database file; the parent directory is created if missing.
    pub db_path: PathBuf,
    /// Jobs processed at once.
    pub workers: usize,
    /// Documents of one job in flight at once, so a shared batching queue in
    /// the processor can batch across documents.
    pub doc_concurrency: usize,
    /// Finished jobs (and their results) are deleted this long after completion.
    pub ttl: Duration,
    /// Time limit of one webhook attempt.
    pub webhook_timeout: Duration,
    /// `None` allows any host; otherwise exact host names (case-insensitive)
    /// or `*.example.org` patterns (matching subdomains of example.org).
    pub webhook_allowed_hosts: Option<Vec<String>>,
    /// 32-byte key sealing webhook URL and secret at rest. `None` uses (and on
    /// first open creates, mode 0600) the key file `<db_path>.key`.
    pub seal_key: Option<Vec<u8>>,
}

impl JobSettings {
    /// Settings with the documented defaults: 2 workers, 8 documents in
    /// flight per job, 24 h ttl, 10 s webhook timeout, any webhook host, key file.
    pub fn new(db_path: impl Into<PathBuf>) -> Self {
        Self {
            db_path: db_path.into(),
            workers: 2,
            doc_concurrency: 8,
            ttl: Duration::from_secs(24 * 3600),
            webhook_timeout: Duration::from_secs(10),
            webhook_allowed_hosts: None,
            seal_key: None,
        }
    }
}

impl std::fmt::Debug for JobSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobSettings")
            .field("db_path", &self.db_path)
            .field("workers", &self.workers)
            .field("doc_concurrency", &self.doc_concurrency)
            .field("ttl", &self.ttl)
            .field("webhook_timeout", &self.webhook_timeout)
            .field("webhook_allowed_hosts", &self.webhook_allowed_hosts)
            .field("seal_key", &self.seal_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// A job to submit.
#[derive(Clone, Deserialize)]
pub struct NewJob {
    /// Opaque options handed to the processor for every document.
    #[serde(default)]
    pub options: serde_json::Value,
    pub documents: Vec<NewDocument>,
    #[serde(default)]
    pub webhook: Option<WebhookConfig>,
}

/// One document of a [`NewJob`].
#[derive(Clone, Deserialize)]
pub struct NewDocument {
    /// Caller's id; trimmed, and a blank or missing id becomes the index.
    #[serde(default)]
    pub id: Option<String>,
    pub text: String,
}

/// Where and how to announce the job's terminal state.
#[derive(Clone, Deserialize)]
pub struct WebhookConfig {
    pub url: String,
    /// Signing secret; `whsec_<base64>` secrets are base64-decoded.
    pub secret: String,
    /// Attempts in total (at least 1).
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Delay after the first failed attempt; doubles after each further one.
    #[serde(default = "default_backoff")]
    pub backoff_seconds: f64,
}

fn default_max_attempts() -> u32 {
    3
}

fn default_backoff() -> f64 {
    0.5
}

/// Redacted: URLs can carry tokens and the secret must never reach logs.
impl std::fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("url", &"<redacted>")
            .field("secret", &"<redacted>")
            .field("max_attempts", &self.max_attempts)
            .field("backoff_seconds", &self.backoff_seconds)
            .finish()
    }
}

/// Errors of the job store. Messages never contain document text or secrets.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The request is unacceptable (client error).
    #[error("invalid job: {0}")]
    Invalid(String),
    #[error("database error: {0}")]
    Db(#[from] rusqlite::Error),
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    #[error("sealing error: {0}")]
    Seal(String),
    #[error("webhook client error: {0}")]
    Client(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("Jobs::open must be called inside a tokio runtime")]
    NoRuntime,
    #[error("background task failed")]
    Task,
}

/// What is wrong with the storage under the job store, when an error says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageProblem {
    /// No space (ENOSPC, SQLITE_FULL), or a file-size limit (EFBIG): wait for space.
    Full,
    /// Read-only, unopenable or failing storage (EROFS, EACCES, SQLITE_READONLY, I/O errors).
    Unavailable,
}

impl StorageProblem {
    /// Fixed text for probes and logs (never a path or caller data).
    pub fn describe(self) -> &'static str {
        match self {
            Self::Full => "the data directory's disk is full",
            Self::Unavailable => "the data directory is read-only, missing or failing",
        }
    }
}

impl JobError {
    /// The storage problem behind this error, if it is one.
    pub fn storage_problem(&self) -> Option<StorageProblem> {
        use rusqlite::ffi;
        match self {
            Self::Db(rusqlite::Error::SqliteFailure(e, _)) => match e.code {
                ffi::ErrorCode::DiskFull => Some(StorageProblem::Full),
                ffi::ErrorCode::SystemIoFailure
                    if matches!(
                        e.extended_code,
                        ffi::SQLITE_IOERR_WRITE
                            | ffi::SQLITE_IOERR_FSYNC
                            | ffi::SQLITE_IOERR_TRUNCATE
                            | ffi::SQLITE_IOERR_SHMSIZE
                    ) =>
                {
                    // A write that failed outright: EFBIG past RLIMIT_FSIZE, ENOSPC on some
                    // file systems. Space is what brings it back.
                    Some(StorageProblem::Full)
                }
                ffi::ErrorCode::ReadOnly
                | ffi::ErrorCode::CannotOpen
                | ffi::ErrorCode::SystemIoFailure
                | ffi::ErrorCode::FileLockingProtocolFailed
                | ffi::ErrorCode::DatabaseCorrupt
                | ffi::ErrorCode::NotADatabase => Some(StorageProblem::Unavailable),
                _ => None,
            },
            Self::Io(e) => match e.raw_os_error() {
                Some(libc::ENOSPC | libc::EFBIG | libc::EDQUOT) => Some(StorageProblem::Full),
                Some(libc::EROFS | libc::EACCES | libc::EPERM | libc::EIO | libc::ENOTDIR) => {
                    Some(StorageProblem::Unavailable)
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// Jobs waiting for storage to come back, and the back-off of their retries.
#[derive(Default)]
pub(crate) struct StorageWait {
    waiting: Mutex<HashSet<String>>,
}

/// First and longest pause between retries while storage is full.
pub(crate) const STORAGE_RETRY_MIN: Duration = Duration::from_millis(500);
pub(crate) const STORAGE_RETRY_MAX: Duration = Duration::from_secs(30);

impl StorageWait {
    /// Marks `job_id` as waiting; logs once per job when it starts waiting.
    fn wait(&self, job_id: &str, problem: StorageProblem) {
        if lock(&self.waiting).insert(job_id.to_owned()) {
            tracing::warn!(
                job_id = %job_id,
                problem = problem.describe(),
                "job waiting for storage; retrying with back-off"
            );
        }
    }

    /// Storage worked for `job_id` again.
    fn resumed(&self, job_id: &str) {
        if lock(&self.waiting).remove(job_id) {
            tracing::info!(job_id = %job_id, "storage is back; job resumes");
        }
    }

    fn is_waiting(&self, job_id: &str) -> bool {
        lock(&self.waiting).contains(job_id)
    }

    fn any(&self) -> bool {
        !lock(&self.waiting).is_empty()
    }
}

/// Handle to the job store and its background tasks.
///
/// Dropping it stops the background tasks at once (no grace); call
/// [`Jobs::shutdown`] first for an orderly stop.
pub struct Jobs {
    inner: Arc<Inner>,
}

/// State shared by the handle and the background tasks.
pub(crate) struct Inner {
    /// Single connection: writes are serialised anyway and reads are short.
    /// Lock order: `db` before `in_flight` / `active_jobs`.
    db: Mutex<Connection>,
    settings: Settings,
    processor: Arc<dyn Processor>,
    sealer: seal::Sealer,
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
    /// Wakes an idle worker after a submit (and chains to the next one).
    wake: Notify,
    stopping: AtomicBool,
    shutdown_tx: watch::Sender<bool>,
    /// Claimed documents; in memory only so a crash leaves them pending.
    in_flight: Mutex<HashSet<(String, i64)>>,
    /// Jobs owned by a worker, so two workers never run the same job.
    active_jobs: Mutex<HashSet<String>>,
    /// Jobs with a delivery task, so a job is never delivered twice at once.
    delivering: Mutex<HashSet<String>>,
    /// Background tasks, aborted at shutdown.
    tasks: Mutex<Vec<AbortHandle>>,
    /// Jobs whose writes failed for lack of storage.
    storage: StorageWait,
}

/// Validated, normalised settings.
pub(crate) struct Settings {
    workers: usize,
    doc_concurrency: usize,
    ttl: Duration,
    webhook_timeout: Duration,
    allowed_hosts: Option<Vec<String>>,
}

/// Locks a mutex, recovering from poisoning: every critical section leaves
/// the protected data consistent, and SQLite transactions roll back on drop.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `sha256:<hex>` of some bytes.
pub(crate) fn sha256_tag(bytes: &[u8]) -> String {
    format!("sha256:{}", crate::digest::sha256_hex(bytes))
}

/// Current time in Unix milliseconds (the DB's time unit).
pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Inner {
    /// Runs `f` with the connection. Blocking: call from blocking threads only.
    fn db<R>(&self, f: impl FnOnce(&mut Connection) -> Result<R, JobError>) -> Result<R, JobError> {
        let mut conn = lock(&self.db);
        f(&mut conn)
    }

    /// Runs `f` on tokio's blocking pool.
    async fn blocking<R: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Inner) -> Result<R, JobError> + Send + 'static,
    ) -> Result<R, JobError> {
        let inner = Arc::clone(self);
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(|_| JobError::Task)?
    }

    /// Checkpoints the WAL into the database and truncates it (best effort), so page images
    /// of purged rows do not outlive the purge. Blocking.
    fn truncate_wal(&self) {
        if let Err(e) = self.db(|c| store::checkpoint(c)) {
            tracing::warn!(error = %e, "WAL checkpoint after a purge failed");
        }
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Spawns a background task that is aborted at shutdown.
    fn spawn(&self, fut: impl std::future::Future<Output = ()> + Send + 'static) {
        let handle = self.runtime.spawn(fut).abort_handle();
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
    }

    fn ttl_ms(&self) -> i64 {
        i64::try_from(self.settings.ttl.as_millis()).unwrap_or(i64::MAX)
    }

    fn begin_stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.shutdown_tx.send_replace(true);
        self.wake.notify_waiters();
    }

    fn abort_all(&self) {
        for t in lock(&self.tasks).drain(..) {
            t.abort();
        }
    }
}

impl Jobs {
    /// Opens (creating if needed) the database, then spawns the worker pool
    /// (which also resumes jobs left queued/running by a previous process),
    /// redelivery of pending webhooks and the expiry sweeper.
    ///
    /// Must be called inside a tokio runtime; the database is opened and
    /// migrated synchronously, which is fine at startup.
    pub fn open(
        settings: JobSettings,
        processor: Arc<dyn Processor>,
    ) -> Result<Arc<Self>, JobError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| JobError::NoRuntime)?;
        if settings.workers == 0 || settings.doc_concurrency == 0 {
            return Err(JobError::Invalid(
                "workers and doc_concurrency must be at least 1".into(),
            ));
        }
        let allowed_hosts = settings
            .webhook_allowed_hosts
            .as_ref()
            .map(|hosts| hosts.iter().map(|h| webhook::normalize_host(h)).collect());
        let sealer = seal::Sealer::load(settings.seal_key.as_deref(), &settings.db_path)?;
        let conn = store::open(&settings.db_path)?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(settings.webhook_timeout)
            .build()
            .map_err(|e| JobError::Client(e.to_string()))?;
        let (shutdown_tx, _) = watch::channel(false);
        let inner = Arc::new(Inner {
            db: Mutex::new(conn),
            settings: Settings {
                workers: settings.workers,
                doc_concurrency: settings.doc_concurrency,
                ttl: settings.ttl,
                webhook_timeout: settings.webhook_timeout,
                allowed_hosts,
            },
            processor,
            sealer,
            http,
            runtime,
            wake: Notify::new(),
            stopping: AtomicBool::new(false),
            shutdown_tx,
            in_flight: Mutex::new(HashSet::new()),
            active_jobs: Mutex::new(HashSet::new()),
            delivering: Mutex::new(HashSet::new()),
            tasks: Mutex::new(Vec::new()),
            storage: StorageWait::default(),
        });
        worker::start(&inner);
        webhook::start_redelivery(&inner);
        Ok(Arc::new(Self { inner }))
    }

    /// Checks a webhook URL: http(s) only, a host, no userinfo, host allowed.
    /// The error says why without echoing the URL.
    pub fn check_webhook_url(&self, url: &str) -> Result<(), String> {
        webhook::check_url(url, self.inner.settings.allowed_hosts.as_deref()).map(|_| ())
    }

    /// Durably stores the job (one transaction, committed before returning)
    /// and wakes a worker. Returns the job record (status "queued"). After
    /// `shutdown` the job is stored but only runs after the next open. Blocking.
    pub fn submit(&self, job: NewJob) -> Result<serde_json::Value, JobError> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let webhook = match &job.webhook {
            None => None,
            Some(w) => {
                self.check_webhook_url(&w.url).map_err(JobError::Invalid)?;
                if w.secret.is_empty() {
                    return Err(JobError::Invalid("webhook secret must not be empty".into()));
                }
                if w.max_attempts == 0 {
                    return Err(JobError::Invalid(
                        "webhook max_attempts must be at least 1".into(),
                    ));
                }
                if !w.backoff_seconds.is_finite() || w.backoff_seconds < 0.0 {
                    return Err(JobError::Invalid(
                        "webhook backoff_seconds must be a non-negative number".into(),
                    ));
                }
                let sealed = self.inner.sealer.seal_webhook(&id, &w.url, &w.secret)?;
                Some(store::NewWebhook {
                    sealed,
                    url_hash: sha256_tag(w.url.as_bytes()),
                    max_attempts: i64::from(w.max_attempts),
                    backoff_seconds: w.backoff_seconds,
                })
            }
        };
        let options_json = serde_json::to_string(&job.options)
            .map_err(|e| JobError::Invalid(format!("options are not serialisable: {e}")))?;
        // Source text is stored sealed: the raw files never hold it in the clear.
        let sealed_texts = job
            .documents
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let idx = i64::try_from(i).unwrap_or(i64::MAX);
                self.inner.sealer.seal_text(&id, idx, &d.text)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let now = now_ms();
        let record = self.inner.db(|conn| {
            store::insert_job(
                conn,
                &id,
                &options_json,
                webhook.as_ref(),
                &job.documents,
                &sealed_texts,
                now,
            )?;
            store::load_record(conn, &id, now)
        })?;
        self.inner.wake.notify_one();
        crate::metrics::Metrics::global().jobs.inc(&["accepted"]);
        tracing::info!(job_id = %id, documents = job.documents.len(), "job submitted");
        record.ok_or_else(|| JobError::Corrupt("submitted job not found".into()))
    }

    /// The job record; `None` for unknown or expired jobs. Blocking. A job whose writes wait
    /// for storage says so: `"waiting_for": "storage"`.
    pub fn get(&self, id: &str) -> Result<Option<serde_json::Value>, JobError> {
        let mut record = self
            .inner
            .db(|conn| store::load_record(conn, id, now_ms()))?;
        if let Some(r) = record.as_mut().and_then(serde_json::Value::as_object_mut)
            && self.inner.storage.is_waiting(id)
        {
            r.insert("waiting_for".into(), "storage".into());
        }
        Ok(record)
    }

    /// Whether some job is waiting for storage (the disk was full at its last write).
    pub fn waiting_for_storage(&self) -> bool {
        self.inner.storage.any()
    }

    /// Result lines of the documents finished so far, in index order, read
    /// lazily in pages of [`ResultPages::PAGE_SIZE`] so memory stays bounded.
    /// `None` for unknown or expired jobs. Blocking.
    pub fn results(&self, id: &str) -> Result<Option<ResultPages>, JobError> {
        let live = self.inner.db(|conn| store::is_live(conn, id, now_ms()))?;
        Ok(live.then(|| ResultPages {
            inner: Arc::clone(&self.inner),
            job_id: id.to_owned(),
            next_idx: 0,
            finished: false,
        }))
    }

    /// Cancels a queued or running job: pending documents are marked cancelled
    /// and their text purged; documents in flight finish and are recorded.
    /// Cancelling a finished job is a no-op. `None` if unknown. Blocking.
    pub fn cancel(&self, id: &str) -> Result<Option<serde_json::Value>, JobError> {
        let now = now_ms();
        let ttl = self.inner.ttl_ms();
        let (record, deliver) = self.inner.db(|conn| {
            let in_flight: Vec<i64> = lock(&self.inner.in_flight)
                .iter()
                .filter(|(job, _)| job == id)
                .map(|(_, idx)| *idx)
                .collect();
            let deliver = match store::cancel(conn, id, &in_flight, now, ttl)? {
                None => return Ok((None, false)),
                Some(deliver) => deliver,
            };
            Ok((store::load_record(conn, id, now)?, deliver))
        })?;
        if record.is_some() {
            tracing::info!(job_id = %id, "job cancel requested");
            // The purged texts' page images leave the WAL now, not at the next shutdown.
            self.inner.truncate_wal();
        }
        if deliver {
            webhook::spawn_delivery(&self.inner, id.to_owned());
        }
        Ok(record)
    }

    /// Deletes expired jobs now (the sweeper also does this periodically).
    /// Returns how many jobs were deleted. Blocking.
    pub fn sweep_expired(&self) -> Result<usize, JobError> {
        let n = self.inner.db(|conn| store::sweep(conn, now_ms()))?;
        if n > 0 {
            self.inner.truncate_wal();
        }
        Ok(n)
    }

    /// Stops claiming documents, waits up to `grace` for documents in flight
    /// to commit, then stops all background tasks (webhook deliveries
    /// included; they resume on the next open) and checkpoints the WAL.
    /// Unfinished documents stay pending in the database and resume on the
    /// next open.
    pub async fn shutdown(&self, grace: Duration) {
        let inner = &self.inner;
        inner.begin_stop();
        // Barrier: a claim in progress holds the DB lock while registering its
        // documents as in flight; after this they are visible below.
        let _ = inner.blocking(|i| i.db(|_| Ok(()))).await;
        let deadline = tokio::time::Instant::now() + grace;
        while !lock(&inner.in_flight).is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let left = lock(&inner.in_flight).len();
        inner.abort_all();
        if let Err(e) = inner.blocking(|i| i.db(|c| store::checkpoint(c))).await {
            tracing::warn!(error = %e, "checkpoint at shutdown failed");
        }
        tracing::info!(documents_left_pending = left, "job store shut down");
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.inner.begin_stop();
        self.inner.abort_all();
    }
}

/// Lazily paged result lines of one job; each value is one NDJSON line.
/// `Send + 'static`, so it can be moved into `spawn_blocking`.
pub struct ResultPages {
    inner: Arc<Inner>,
    job_id: String,
    next_idx: i64,
    finished: bool,
}

impl ResultPages {
    /// Rows read per query.
    pub const PAGE_SIZE: usize = 64;

    /// Next page of result lines, `None` when exhausted. Blocking.
    pub fn next_page(&mut self) -> Result<Option<Vec<serde_json::Value>>, JobError> {
        if self.finished {
            return Ok(None);
        }
        let (job_id, from) = (&self.job_id, self.next_idx);
        let page = self
            .inner
            .db(|conn| store::result_page(conn, job_id, from, Self::PAGE_SIZE))?;
        match page.last() {
            None => {
                self.finished = true;
                Ok(None)
            }
            Some((last_idx, _)) => {
                self.next_idx = last_idx + 1;
                if page.len() < Self::PAGE_SIZE {
                    self.finished = true;
                }
                Ok(Some(page.into_iter().map(|(_, line)| line).collect()))
            }
        }
    }
}
