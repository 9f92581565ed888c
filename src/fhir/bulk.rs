//! The FHIR Bulk Data client: kick-off, status polling, NDJSON downloads, cancel.
//!
//! Every call carries a timeout, follows no redirect, and goes only to the origin of
//! `fhir_base_url` or of the token endpoint. Transient failures (connect errors, timeouts, 5xx,
//! 429, a body that breaks off) are retried with exponential backoff or the server's
//! `Retry-After`; a 401 re-mints the access token once. Downloads stream: a file is never held
//! in memory, and a download that breaks off resumes by skipping what was already delivered.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_LOCATION, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::manifest::{Manifest, ManifestError, OutputFile, StatusUrl};
use super::origin::{AllowedOrigins, Origin, OriginViolation, parse_http_url};
use super::retry::{self, RetryPolicy};
use super::smart::{AccessToken, SmartClient, SmartError};

/// Shortest wait between two polls when neither the server nor the caller asks for one.
const MIN_POLL_WAIT: Duration = Duration::from_millis(50);
/// Largest status, kick-off or error body read into memory.
const SMALL_BODY_LIMIT: usize = 16 * 1024 * 1024;
/// Largest single NDJSON line [`NdjsonReader`] buffers.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How to reach the server and how hard to try.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BulkConfig {
    /// The FHIR server's base URL (absolute http or https).
    pub fhir_base_url: String,
    /// Appended to the base URL for the kick-off (`$export`, `Patient/$export`,
    /// `Group/1/$export?_type=Patient`).
    pub export_path: String,
    /// Floor between two status polls (the server's `Retry-After` may ask for more).
    pub poll_interval: Duration,
    /// Timeout of each request; for a download, of getting the response head and of each read.
    pub request_timeout: Duration,
    /// File downloads in flight at once, across all callers of one client (at least 1).
    pub max_inflight_downloads: usize,
    pub retry: RetryPolicy,
}

impl BulkConfig {
    /// The interface's defaults: `$export`, 1 s polls, 30 s timeout, 2 downloads in flight.
    pub fn new(fhir_base_url: impl Into<String>) -> Self {
        Self {
            fhir_base_url: fhir_base_url.into(),
            export_path: "$export".into(),
            poll_interval: Duration::from_secs(1),
            request_timeout: Duration::from_secs(30),
            max_inflight_downloads: 2,
            retry: RetryPolicy::default(),
        }
    }
}

/// Which step of the export failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    KickOff,
    Poll,
    Download,
    Cancel,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::KickOff => "kick-off",
            Phase::Poll => "status poll",
            Phase::Download => "download",
            Phase::Cancel => "cancel",
        })
    }
}

/// Why an export step failed. Names the phase and the status; never a token, a key or a full
/// URL (a file URL may carry a signed query string).
#[derive(Debug, thiserror::Error)]
pub enum BulkError {
    #[error("invalid {field}: {reason}")]
    Config {
        field: &'static str,
        reason: &'static str,
    },
    #[error("{phase}: the server gave a URL that is not an absolute http(s) URL")]
    BadUrl { phase: Phase },
    #[error("{phase}: URL on {origin} refused: not the origin of fhir_base_url or token_url")]
    OffOrigin { phase: Phase, origin: Origin },
    #[error("{phase}: redirect (HTTP {status}) not followed")]
    Redirect { phase: Phase, status: u16 },
    #[error("{phase}: server answered HTTP {status}")]
    Status { phase: Phase, status: u16 },
    #[error("{phase}: gave up after {attempts} attempts (last: {last})")]
    Exhausted {
        phase: Phase,
        attempts: u32,
        last: String,
    },
    #[error("{phase}: access token refused (HTTP 401), also after minting a new one")]
    Unauthorized { phase: Phase },
    #[error("kick-off: HTTP 202 without a Content-Location header")]
    MissingContentLocation,
    #[error("{phase}: the server refused or failed the export: HTTP {status}{}", codes_suffix(.issue_codes))]
    ExportFailed {
        phase: Phase,
        status: u16,
        /// `issue[].code` values of the OperationOutcome, when there was one.
        issue_codes: Vec<String>,
    },
    #[error("status poll: {0}")]
    Manifest(#[from] ManifestError),
    #[error("{phase}: response body larger than {limit} bytes")]
    TooLarge { phase: Phase, limit: usize },
    #[error("download: the file changed between attempts (shorter on retry)")]
    FileChanged,
    #[error("{phase}: authorisation: {source}")]
    Auth {
        phase: Phase,
        #[source]
        source: SmartError,
    },
    #[error("download: writing {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn codes_suffix(codes: &[String]) -> String {
    if codes.is_empty() {
        String::new()
    } else {
        format!(" ({})", codes.join(", "))
    }
}

/// One status answer that said "not yet" (202).
#[derive(Debug, Clone, PartialEq)]
pub struct PollUpdate {
    /// Polls so far, this one included.
    pub polls: u32,
    /// The server's `X-Progress`, printable and at most 200 characters.
    pub progress: Option<String>,
    /// How long the client waits before the next poll.
    pub next_poll_in: Duration,
}

/// What one download moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DownloadStats {
    /// Decoded (after gzip) bytes.
    pub bytes: u64,
    /// Non-empty NDJSON lines.
    pub lines: u64,
    /// HTTP requests made for the file (1 without retries).
    pub attempts: u32,
}

/// Download progress, reported as increments while bytes arrive. Called from download tasks,
/// so keep it quick (counters, a channel).
pub trait ProgressHook: Send + Sync {
    fn downloaded(&self, file: &OutputFile, bytes: u64, lines: u64);
}

struct Inner {
    config: BulkConfig,
    base: Url,
    export_url: Url,
    allowed: AllowedOrigins,
    http: reqwest::Client,
    smart: SmartClient,
    downloads: Arc<Semaphore>,
    inflight: AtomicUsize,
    peak_inflight: AtomicUsize,
    bytes_total: AtomicU64,
    progress: OnceLock<Arc<dyn ProgressHook>>,
}

/// The Bulk Data client. Cheap to clone; clones share the download limit and the token.
#[derive(Clone)]
pub struct BulkClient {
    inner: Arc<Inner>,
}

impl fmt::Debug for BulkClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkClient")
            .field("fhir_base_url", &self.inner.base.as_str())
            .field("smart", &self.inner.smart)
            .finish_non_exhaustive()
    }
}

/// Whether a request carries the bearer token.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bearer {
    Yes,
    No,
}

/// Which failures of one request are worth another attempt.
#[derive(Clone, Copy)]
enum Transient {
    /// 429, 502, 503, 504 (a 500 on kick-off, status or cancel is the server's verdict).
    Gateway,
    /// Every 5xx and 429 (file servers fail transiently).
    AnyServerError,
}

impl Transient {
    fn covers(self, status: StatusCode) -> bool {
        match self {
            Transient::Gateway => matches!(status.as_u16(), 429 | 502 | 503 | 504),
            Transient::AnyServerError => retry::is_transient_status(status),
        }
    }
}

impl BulkClient {
    /// Checks the configuration; makes no request.
    pub fn new(config: BulkConfig, smart: SmartClient) -> Result<Self, BulkError> {
        let base = parse_http_url(&config.fhir_base_url).ok_or(BulkError::Config {
            field: "fhir_base_url",
            reason: "must be an absolute http or https URL without user info",
        })?;
        let path = config.export_path.trim().trim_start_matches('/');
        if path.is_empty() || path.contains("://") || path.chars().any(char::is_whitespace) {
            return Err(BulkError::Config {
                field: "export_path",
                reason: "must be a relative path such as $export or Patient/$export",
            });
        }
        let export_url = Url::parse(&format!("{}/{}", base.as_str().trim_end_matches('/'), path))
            .ok()
            .filter(|u| Origin::of(u) == Origin::of(&base))
            .ok_or(BulkError::Config {
                field: "export_path",
                reason: "does not make a URL on the FHIR server's origin",
            })?;
        if config.request_timeout.is_zero() {
            return Err(BulkError::Config {
                field: "request_timeout",
                reason: "must be greater than 0",
            });
        }
        if config.max_inflight_downloads == 0 {
            return Err(BulkError::Config {
                field: "max_inflight_downloads",
                reason: "must be at least 1",
            });
        }
        if config.retry.max_attempts == 0 {
            return Err(BulkError::Config {
                field: "retry.max_attempts",
                reason: "must be at least 1",
            });
        }
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.request_timeout)
            .build()
            .map_err(|_| BulkError::Config {
                field: "http client",
                reason: "could not be built",
            })?;
        let allowed = AllowedOrigins::new([Origin::of(&base), smart.token_origin()]);
        let downloads = Arc::new(Semaphore::new(config.max_inflight_downloads));
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                base,
                export_url,
                allowed,
                http,
                smart,
                downloads,
                inflight: AtomicUsize::new(0),
                peak_inflight: AtomicUsize::new(0),
                bytes_total: AtomicU64::new(0),
                progress: OnceLock::new(),
            }),
        })
    }

    /// Reports download progress to `hook`, for this client and its clones. The first hook
    /// set stays; later calls change nothing.
    pub fn with_progress(self, hook: Arc<dyn ProgressHook>) -> Self {
        let _ = self.inner.progress.set(hook);
        self
    }

    /// The kick-off URL (base URL joined with `export_path`).
    pub fn export_url(&self) -> &str {
        self.inner.export_url.as_str()
    }

    /// The SMART client this client authenticates with.
    pub fn smart(&self) -> &SmartClient {
        &self.inner.smart
    }

    /// The most downloads that were ever in flight at once on this client.
    pub fn peak_inflight(&self) -> usize {
        self.inner.peak_inflight.load(Ordering::Relaxed)
    }

    /// Decoded bytes downloaded by this client so far.
    pub fn bytes_downloaded(&self) -> u64 {
        self.inner.bytes_total.load(Ordering::Relaxed)
    }

    /// Starts an export: `GET {export_url}` with `Prefer: respond-async`; the server's 202
    /// names the status URL.
    pub async fn kick_off(&self) -> Result<StatusUrl, BulkError> {
        let phase = Phase::KickOff;
        let url = self.inner.export_url.clone();
        let (response, _) = self
            .send(
                phase,
                Method::GET,
                &url,
                &[
                    (ACCEPT, "application/fhir+json"),
                    (
                        reqwest::header::HeaderName::from_static("prefer"),
                        "respond-async",
                    ),
                ],
                Bearer::Yes,
                Transient::Gateway,
                true,
            )
            .await?;
        let status = response.status();
        if status != StatusCode::ACCEPTED {
            let codes = self.outcome_codes(response).await;
            return Err(if status.is_success() {
                BulkError::Status {
                    phase,
                    status: status.as_u16(),
                }
            } else {
                BulkError::ExportFailed {
                    phase,
                    status: status.as_u16(),
                    issue_codes: codes,
                }
            });
        }
        let location = response
            .headers()
            .get(CONTENT_LOCATION)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.trim().is_empty())
            .ok_or(BulkError::MissingContentLocation)?;
        let status_url = self.check_url(phase, location)?;
        Ok(StatusUrl(status_url.to_string()))
    }

    /// Polls the status URL until the export completes, calling `on_progress` after each 202.
    /// Waits what `Retry-After` asks (seconds or HTTP-date), never less than `poll_interval`;
    /// a 429 or 503 is waited out and retried. Drop the future to stop polling.
    pub async fn poll(
        &self,
        status_url: &StatusUrl,
        mut on_progress: impl FnMut(&PollUpdate) + Send,
    ) -> Result<Manifest, BulkError> {
        let phase = Phase::Poll;
        let url = self.check_url(phase, status_url.as_str())?;
        let mut polls = 0u32;
        loop {
            let (response, _) = self
                .send(
                    phase,
                    Method::GET,
                    &url,
                    &[(ACCEPT, "application/json")],
                    Bearer::Yes,
                    Transient::Gateway,
                    true,
                )
                .await?;
            polls += 1;
            let status = response.status();
            match status {
                StatusCode::OK => {
                    let body = self.read_small(phase, response).await?;
                    let manifest = Manifest::parse(&body)?;
                    for file in manifest.all_files() {
                        self.check_url(phase, &file.url)?;
                    }
                    return Ok(manifest);
                }
                StatusCode::ACCEPTED => {
                    let floor = self.inner.config.poll_interval.max(MIN_POLL_WAIT);
                    let asked = retry::retry_after(response.headers())
                        .map(|d| d.min(self.inner.config.retry.max_retry_after));
                    let update = PollUpdate {
                        polls,
                        progress: response
                            .headers()
                            .get("x-progress")
                            .and_then(|v| v.to_str().ok())
                            .map(printable),
                        next_poll_in: asked.map_or(floor, |d| d.max(floor)),
                    };
                    drop(response);
                    on_progress(&update);
                    tokio::time::sleep(update.next_poll_in).await;
                }
                s if s.is_success() => {
                    return Err(BulkError::Status {
                        phase,
                        status: s.as_u16(),
                    });
                }
                s => {
                    let codes = self.outcome_codes(response).await;
                    return Err(BulkError::ExportFailed {
                        phase,
                        status: s.as_u16(),
                        issue_codes: codes,
                    });
                }
            }
        }
    }

    /// Cancels the export (or deletes its files once complete): `DELETE` on the status URL.
    pub async fn cancel(&self, status_url: &StatusUrl) -> Result<(), BulkError> {
        let phase = Phase::Cancel;
        let url = self.check_url(phase, status_url.as_str())?;
        let (response, _) = self
            .send(
                phase,
                Method::DELETE,
                &url,
                &[(ACCEPT, "application/fhir+json")],
                Bearer::Yes,
                Transient::Gateway,
                true,
            )
            .await?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(BulkError::Status {
                phase,
                status: status.as_u16(),
            })
        }
    }

    /// Downloads one file of `manifest` to `dest` (created or truncated), decoded NDJSON as the
    /// server sent it, flushed and synced before returning. Waits for a download slot first.
    /// Write to a temporary path and rename it into place to hand the file over atomically.
    pub async fn download(
        &self,
        manifest: &Manifest,
        file: &OutputFile,
        dest: &Path,
    ) -> Result<DownloadStats, BulkError> {
        let io = |source| BulkError::Io {
            path: dest.to_path_buf(),
            source,
        };
        let mut stream = self.open_stream(manifest, file).await?;
        let mut out = tokio::fs::File::create(dest).await.map_err(io)?;
        while let Some(chunk) = stream.next_chunk().await? {
            out.write_all(&chunk).await.map_err(io)?;
        }
        out.flush().await.map_err(io)?;
        out.sync_all().await.map_err(io)?;
        Ok(stream.stats())
    }

    /// Opens one file of `manifest` for reading line by line (see [`NdjsonReader`]). Waits for
    /// a download slot, which the reader holds until it is dropped.
    pub async fn open(
        &self,
        manifest: &Manifest,
        file: &OutputFile,
    ) -> Result<NdjsonReader, BulkError> {
        Ok(NdjsonReader {
            stream: self.open_stream(manifest, file).await?,
            pending: Vec::new(),
            start: 0,
            scanned: 0,
            done: false,
        })
    }

    async fn open_stream(
        &self,
        manifest: &Manifest,
        file: &OutputFile,
    ) -> Result<FileStream, BulkError> {
        let url = self.check_url(Phase::Download, &file.url)?;
        let permit = Arc::clone(&self.inner.downloads)
            .acquire_owned()
            .await
            .map_err(|_| BulkError::Config {
                field: "max_inflight_downloads",
                reason: "download limiter closed",
            })?;
        let now = self.inner.inflight.fetch_add(1, Ordering::SeqCst) + 1;
        self.inner.peak_inflight.fetch_max(now, Ordering::SeqCst);
        let mut stream = FileStream {
            client: self.clone(),
            file: file.clone(),
            url,
            bearer: if manifest.requires_access_token {
                Bearer::Yes
            } else {
                Bearer::No
            },
            response: None,
            attempts: 0,
            delivered: 0,
            received: 0,
            lines: 0,
            last_byte: None,
            finished: false,
            _slot: Slot {
                _permit: permit,
                client: Arc::clone(&self.inner),
            },
        };
        stream.connect().await?;
        Ok(stream)
    }

    /// Resolves and checks a URL the server handed over.
    fn check_url(&self, phase: Phase, text: &str) -> Result<Url, BulkError> {
        self.inner
            .allowed
            .check(&self.inner.base, text)
            .map_err(|v| match v {
                OriginViolation::NotAUrl => BulkError::BadUrl { phase },
                OriginViolation::OffOrigin(origin) => BulkError::OffOrigin { phase, origin },
            })
    }

    /// Sends one request with retries. Returns the first answer that is not transient and not
    /// a redirect (any status, for the caller to judge) and the attempts it took.
    #[allow(clippy::too_many_arguments)]
    async fn send(
        &self,
        phase: Phase,
        method: Method,
        url: &Url,
        headers: &[(reqwest::header::HeaderName, &str)],
        bearer: Bearer,
        transient: Transient,
        whole_timeout: bool,
    ) -> Result<(reqwest::Response, u32), BulkError> {
        let inner = &self.inner;
        let policy = inner.config.retry;
        let timeout = inner.config.request_timeout;
        let mut attempts = 0u32;
        let mut reminted = false;
        loop {
            let token = match bearer {
                Bearer::Yes => Some(
                    inner
                        .smart
                        .access_token()
                        .await
                        .map_err(|source| BulkError::Auth { phase, source })?,
                ),
                Bearer::No => None,
            };
            let mut request = inner.http.request(method.clone(), url.clone());
            for (name, value) in headers {
                request = request.header(name.clone(), *value);
            }
            if let Some(token) = &token {
                request = request.header(AUTHORIZATION, bearer_header(phase, token)?);
            }
            if whole_timeout {
                request = request.timeout(timeout);
            }
            attempts += 1;
            let outcome = match tokio::time::timeout(timeout, request.send()).await {
                Err(_) => Err("timeout".to_owned()),
                Ok(Err(e)) => Err(retry::transport_kind(&e).to_owned()),
                Ok(Ok(response)) => Ok(response),
            };
            let (last, wait_hint) = match outcome {
                Ok(response) => {
                    let status = response.status();
                    if status == StatusCode::UNAUTHORIZED
                        && let Some(token) = &token
                    {
                        if reminted {
                            return Err(BulkError::Unauthorized { phase });
                        }
                        tracing::info!(%phase, "access token refused; minting a new one");
                        inner.smart.token_rejected(token).await;
                        reminted = true;
                        attempts -= 1;
                        continue;
                    }
                    if status.is_redirection() {
                        return Err(BulkError::Redirect {
                            phase,
                            status: status.as_u16(),
                        });
                    }
                    if !transient.covers(status) {
                        return Ok((response, attempts));
                    }
                    (
                        format!("HTTP {}", status.as_u16()),
                        retry::retry_after(response.headers()),
                    )
                }
                Err(kind) => (kind, None),
            };
            if attempts >= policy.max_attempts {
                return Err(BulkError::Exhausted {
                    phase,
                    attempts,
                    last,
                });
            }
            let wait = policy.wait(attempts, wait_hint);
            tracing::debug!(%phase, attempts, wait_ms = wait.as_millis() as u64, last = %last, "retrying");
            tokio::time::sleep(wait).await;
        }
    }

    async fn read_small(
        &self,
        phase: Phase,
        mut response: reqwest::Response,
    ) -> Result<Vec<u8>, BulkError> {
        let timeout = self.inner.config.request_timeout;
        let mut body = Vec::new();
        loop {
            let chunk = match tokio::time::timeout(timeout, response.chunk()).await {
                Err(_) => {
                    return Err(BulkError::Exhausted {
                        phase,
                        attempts: 1,
                        last: "timeout".into(),
                    });
                }
                Ok(Err(e)) => {
                    return Err(BulkError::Exhausted {
                        phase,
                        attempts: 1,
                        last: retry::transport_kind(&e).into(),
                    });
                }
                Ok(Ok(chunk)) => chunk,
            };
            match chunk {
                None => return Ok(body),
                Some(c) if body.len() + c.len() > SMALL_BODY_LIMIT => {
                    return Err(BulkError::TooLarge {
                        phase,
                        limit: SMALL_BODY_LIMIT,
                    });
                }
                Some(c) => body.extend_from_slice(&c),
            }
        }
    }

    /// The `issue[].code` values of an OperationOutcome body (short FHIR codes, never the
    /// free-text diagnostics).
    async fn outcome_codes(&self, response: reqwest::Response) -> Vec<String> {
        #[derive(Deserialize)]
        struct Outcome {
            #[serde(default)]
            issue: Vec<Issue>,
        }
        #[derive(Deserialize)]
        struct Issue {
            code: Option<String>,
        }
        let Ok(body) = self.read_small(Phase::Poll, response).await else {
            return Vec::new();
        };
        serde_json::from_slice::<Outcome>(&body)
            .map(|o| {
                o.issue
                    .into_iter()
                    .filter_map(|i| i.code)
                    .filter(|c| {
                        c.len() <= 32 && c.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
                    })
                    .take(8)
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn bearer_header(phase: Phase, token: &AccessToken) -> Result<HeaderValue, BulkError> {
    let mut value = HeaderValue::try_from(format!("Bearer {}", token.secret())).map_err(|_| {
        BulkError::Auth {
            phase,
            source: SmartError::BadResponse {
                reason: "access_token is not a valid header value",
            },
        }
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// Printable, at most 200 characters: `X-Progress` is shown to people, not trusted.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}

/// A download slot: releases the semaphore permit and the in-flight count when dropped.
struct Slot {
    _permit: OwnedSemaphorePermit,
    client: Arc<Inner>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.client.inflight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The decoded bytes of one file, resumed transparently after transient failures: a retry
/// requests the file again and skips the bytes already delivered (Bulk Data files are static
/// once the manifest is out).
struct FileStream {
    client: BulkClient,
    file: OutputFile,
    url: Url,
    bearer: Bearer,
    response: Option<reqwest::Response>,
    attempts: u32,
    /// Bytes handed to the consumer.
    delivered: u64,
    /// Bytes received in the current attempt.
    received: u64,
    lines: u64,
    last_byte: Option<u8>,
    /// The end of the file was reached.
    finished: bool,
    _slot: Slot,
}

impl FileStream {
    async fn connect(&mut self) -> Result<(), BulkError> {
        let phase = Phase::Download;
        let (response, attempts) = self
            .client
            .send(
                phase,
                Method::GET,
                &self.url,
                &[(ACCEPT, "application/fhir+ndjson")],
                self.bearer,
                Transient::AnyServerError,
                false,
            )
            .await?;
        self.attempts += attempts;
        let status = response.status();
        if status != StatusCode::OK {
            return Err(BulkError::Status {
                phase,
                status: status.as_u16(),
            });
        }
        self.response = Some(response);
        self.received = 0;
        Ok(())
    }

    /// The next new bytes, or `None` at the end of the file.
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, BulkError> {
        let timeout = self.client.inner.config.request_timeout;
        let policy = self.client.inner.config.retry;
        loop {
            if self.finished {
                return Ok(None);
            }
            let Some(response) = self.response.as_mut() else {
                self.connect().await?;
                continue;
            };
            let failure = match tokio::time::timeout(timeout, response.chunk()).await {
                Ok(Ok(Some(chunk))) => {
                    let start = self.received;
                    self.received += chunk.len() as u64;
                    if self.received <= self.delivered {
                        continue;
                    }
                    let skip = self.delivered.saturating_sub(start) as usize;
                    let fresh = chunk.slice(skip..);
                    self.account(&fresh);
                    return Ok(Some(fresh));
                }
                Ok(Ok(None)) => {
                    if self.received < self.delivered {
                        return Err(BulkError::FileChanged);
                    }
                    self.response = None;
                    self.finished = true;
                    if self.last_byte.is_some_and(|b| b != b'\n') {
                        self.lines += 1;
                        self.report(0, 1);
                        self.last_byte = Some(b'\n');
                    }
                    return Ok(None);
                }
                Ok(Err(e)) => retry::transport_kind(&e).to_owned(),
                Err(_) => "timeout".to_owned(),
            };
            self.response = None;
            if self.attempts >= policy.max_attempts {
                return Err(BulkError::Exhausted {
                    phase: Phase::Download,
                    attempts: self.attempts,
                    last: failure,
                });
            }
            tokio::time::sleep(policy.backoff(self.attempts)).await;
        }
    }

    /// Counts the bytes and the lines that end in `fresh` (a last line without a newline is
    /// counted at the end of the file); blank lines do not count.
    fn account(&mut self, fresh: &Bytes) {
        let mut lines = 0u64;
        let mut prev = self.last_byte;
        for &b in fresh.iter() {
            if b == b'\n' && prev.is_some_and(|p| p != b'\n' && p != b'\r') {
                lines += 1;
            }
            if b != b'\r' {
                prev = Some(b);
            }
        }
        // A "\r\n" pair: the line was counted at '\n' as long as it had content before '\r'.
        self.last_byte = prev;
        self.delivered += fresh.len() as u64;
        self.lines += lines;
        self.client
            .inner
            .bytes_total
            .fetch_add(fresh.len() as u64, Ordering::Relaxed);
        self.report(fresh.len() as u64, lines);
    }

    fn report(&self, bytes: u64, lines: u64) {
        if let Some(hook) = self.client.inner.progress.get() {
            hook.downloaded(&self.file, bytes, lines);
        }
    }

    fn stats(&self) -> DownloadStats {
        DownloadStats {
            bytes: self.delivered,
            lines: self.lines,
            attempts: self.attempts,
        }
    }
}

/// Reads one NDJSON file line by line as it downloads; holds a download slot until dropped.
pub struct NdjsonReader {
    stream: FileStream,
    /// Bytes received; those before `start` were already returned.
    pending: Vec<u8>,
    start: usize,
    /// How far `pending` has been searched for a newline.
    scanned: usize,
    done: bool,
}

impl fmt::Debug for NdjsonReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NdjsonReader")
            .field("type", &self.stream.file.resource_type)
            .field("stats", &self.stream.stats())
            .finish_non_exhaustive()
    }
}

impl NdjsonReader {
    /// The next non-blank line (without its line ending), or `None` at the end of the file.
    pub async fn next_line(&mut self) -> Result<Option<Vec<u8>>, BulkError> {
        loop {
            if let Some(pos) = self.pending[self.scanned..]
                .iter()
                .position(|&b| b == b'\n')
            {
                let end = self.scanned + pos;
                let mut line = &self.pending[self.start..end];
                self.start = end + 1;
                self.scanned = self.start;
                if line.last() == Some(&b'\r') {
                    line = &line[..line.len() - 1];
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(Some(line.to_vec()));
            }
            // No complete line left: drop what was consumed before reading more.
            self.pending.drain(..self.start);
            self.start = 0;
            self.scanned = self.pending.len();
            if self.done {
                let line = std::mem::take(&mut self.pending);
                self.scanned = 0;
                return Ok((!line.iter().all(u8::is_ascii_whitespace)).then_some(line));
            }
            if self.pending.len() > MAX_LINE_BYTES {
                return Err(BulkError::TooLarge {
                    phase: Phase::Download,
                    limit: MAX_LINE_BYTES,
                });
            }
            match self.stream.next_chunk().await? {
                Some(chunk) => self.pending.extend_from_slice(&chunk),
                None => self.done = true,
            }
        }
    }

    /// What was downloaded so far.
    pub fn stats(&self) -> DownloadStats {
        self.stream.stats()
    }

    /// The manifest entry being read.
    pub fn file(&self) -> &OutputFile {
        &self.stream.file
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_drops_controls_and_caps_length() {
        assert_eq!(printable("50%\r\n done"), "50% done");
        assert_eq!(printable(&"x".repeat(500)).len(), 200);
    }

    #[test]
    fn transient_sets() {
        assert!(Transient::Gateway.covers(StatusCode::SERVICE_UNAVAILABLE));
        assert!(Transient::Gateway.covers(StatusCode::TOO_MANY_REQUESTS));
        assert!(!Transient::Gateway.covers(StatusCode::INTERNAL_SERVER_ERROR));
        assert!(Transient::AnyServerError.covers(StatusCode::INTERNAL_SERVER_ERROR));
        assert!(!Transient::AnyServerError.covers(StatusCode::NOT_FOUND));
    }
}
