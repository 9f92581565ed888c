//! Service settings: environment variables prefixed `SERVICE_`, overridable by CLI flags.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, ValueEnum};

/// Where inference runs. CUDA never falls back to CPU silently: a missing provider is a start-up error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Device {
    #[default]
    Cpu,
    Cuda,
}

/// `SERVICE_DEVICE` as given: `cpu`, `cuda` or `cuda:N` (device id N).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DeviceSetting {
    pub device: Device,
    /// The id in `cuda:N`; `None` for `cuda` alone (then `SERVICE_CUDA_DEVICE_ID`, default 0).
    pub id: Option<i32>,
}

impl FromStr for DeviceSetting {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wrong =
            || format!("`{s}` is not a device: use cpu, cuda or cuda:N (N a device id ≥ 0)");
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Ok(Self::default()),
            "cuda" => Ok(Self {
                device: Device::Cuda,
                id: None,
            }),
            other => {
                let id = other.strip_prefix("cuda:").ok_or_else(wrong)?;
                let id: i32 = id.parse().map_err(|_| wrong())?;
                if id < 0 {
                    return Err(wrong());
                }
                Ok(Self {
                    device: Device::Cuda,
                    id: Some(id),
                })
            }
        }
    }
}

/// The GPU batching profile, used on CUDA for the batch settings left unset: a 512-token window
/// × 128 rows per batch. On an H200, budgets of 16k to 131k tokens gave the same end-to-end
/// throughput (batches rarely reach the budget); padding costs far less there than on CPU.
pub const GPU_BATCH_TOKEN_BUDGET: usize = 65_536;
/// See [`GPU_BATCH_TOKEN_BUDGET`].
pub const GPU_BATCH_MAX_PADDING: f64 = 0.5;
/// CPU batching defaults (measured on 2 cores: padding mixed lengths costs more than it gains).
pub const CPU_BATCH_TOKEN_BUDGET: usize = 4096;
/// See [`CPU_BATCH_TOKEN_BUDGET`].
pub const CPU_BATCH_MAX_PADDING: f64 = 0.05;

/// Every setting of `phiflow serve`. `Debug` redacts the secrets (see the impl below).
#[derive(Args, Clone)]
pub struct Settings {
    /// Address to listen on.
    #[arg(long, env = "SERVICE_HOST", default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one).
    #[arg(long, env = "SERVICE_PORT", default_value_t = 8080)]
    pub port: u16,
    /// Models directory in the Hugging Face layout: `<models_dir>/<org>/<name>/`.
    #[arg(long, env = "SERVICE_MODELS_DIR", default_value = ".assets/models")]
    pub models_dir: PathBuf,
    /// Data directory (job store, loads).
    #[arg(long, env = "SERVICE_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// Where the /docs and /redoc pages' scripts are (fetched by scripts/fetch-assets).
    #[arg(long, env = "SERVICE_DOCS_ASSETS_DIR", default_value = ".assets/docs")]
    pub docs_assets_dir: PathBuf,
    /// Path to `libonnxruntime.so`; default: the one fetched into `.assets/` by scripts/fetch-assets.
    #[arg(long, env = "SERVICE_ORT_LIBRARY")]
    pub ort_library: Option<PathBuf>,
    /// Execution provider: `cpu`, `cuda` or `cuda:N` (CUDA device N). CUDA never falls back to
    /// CPU: a missing provider, library, driver or device stops the service at start-up.
    #[arg(long, env = "SERVICE_DEVICE", default_value = "cpu")]
    pub device: DeviceSetting,
    /// CUDA device index when `--device cuda` (default 0; `cuda:N` sets it too).
    #[arg(long, env = "SERVICE_CUDA_DEVICE_ID")]
    pub cuda_device_id: Option<i32>,
    /// Folder of the CUDA 13 libraries the CUDA provider needs (cudart, cuBLAS, cuBLASLt,
    /// cuRAND), loaded at start-up; `system` searches the dynamic loader's path instead.
    #[arg(long, env = "SERVICE_CUDA_LIB_DIR", default_value = DEFAULT_CUDA_LIB_DIR)]
    pub cuda_lib_dir: PathBuf,
    /// Most GPU memory the CUDA provider's arena may take per session, in bytes.
    #[arg(long, env = "SERVICE_CUDA_MEMORY_LIMIT_BYTES", default_value_t = 16 * 1024 * 1024 * 1024)]
    pub cuda_memory_limit_bytes: u64,
    /// How the CUDA arena grows when a batch needs more than it holds (up to the limit).
    #[arg(long, env = "SERVICE_CUDA_ARENA_EXTEND", value_enum, default_value_t)]
    pub cuda_arena_extend: CudaArenaExtend,
    /// ONNX Runtime intra-op threads of each model's wide session (0: one per core on CPU, one
    /// on CUDA, where the host only launches kernels).
    #[arg(long, env = "SERVICE_ORT_THREADS", default_value_t = 0)]
    pub ort_threads: usize,
    /// Single-threaded inference workers per loaded model, each with its own session, beside
    /// the wide session that runs a lone batch on all cores (0: one per core on CPU, none on
    /// CUDA; 1: none, the wide session runs every batch).
    #[arg(long, env = "SERVICE_INFER_WORKERS", default_value_t = 0)]
    pub infer_workers: usize,
    /// Default PII model id (used by /pii/* when `model_name` is omitted).
    #[arg(
        long,
        env = "SERVICE_PII_MODEL",
        default_value = "nationaldesignstudio/rampart"
    )]
    pub pii_model: String,
    /// Default /analyze model id.
    #[arg(
        long,
        env = "SERVICE_ANALYZE_MODEL",
        default_value = "nationaldesignstudio/rampart"
    )]
    pub analyze_model: String,
    /// Models loaded at start-up, comma-separated; `/readyz` is ready once they are. Default: the PII model.
    #[arg(long, env = "SERVICE_PRELOAD_MODELS", value_delimiter = ',')]
    pub preload_models: Option<Vec<String>>,
    /// Server default keep-alive for loaded models (seconds or a duration like `5m`; `-1` = forever).
    #[arg(long, env = "SERVICE_KEEP_ALIVE", default_value = "-1")]
    pub keep_alive: String,
    /// Most models resident at once (LRU eviction beyond).
    #[arg(long, env = "SERVICE_MAX_RESIDENT_MODELS", default_value_t = 4)]
    pub max_resident_models: usize,
    /// Memory budget for resident models in bytes (estimated footprint; LRU eviction beyond).
    #[arg(long, env = "SERVICE_MODEL_MEMORY_BUDGET_BYTES", default_value_t = 4 * 1024 * 1024 * 1024)]
    pub model_memory_budget_bytes: u64,
    /// Padded tokens per inference batch (sequence length × batch size). Default 4096 on CPU,
    /// 65536 on CUDA (the GPU profile).
    #[arg(long, env = "SERVICE_BATCH_TOKEN_BUDGET")]
    pub batch_token_budget: Option<usize>,
    /// Largest padding a batch may add, as a fraction of its real tokens. Default 0.05 on CPU
    /// (padding mixed lengths costs CPU time that batching does not win back), 0.5 on CUDA.
    #[arg(long, env = "SERVICE_BATCH_MAX_PADDING")]
    pub batch_max_padding: Option<f64>,
    /// Most windows waiting in one model's queue; beyond, requests get 503 with Retry-After.
    #[arg(long, env = "SERVICE_QUEUE_CAPACITY", default_value_t = 4096)]
    pub queue_capacity: usize,
    /// Directory of pipeline definitions (TOML).
    #[arg(long, env = "SERVICE_PIPELINES_DIR", default_value = "pipelines")]
    pub pipelines_dir: PathBuf,
    /// Largest request body in bytes.
    #[arg(long, env = "SERVICE_MAX_BODY_BYTES", default_value_t = 16 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Largest request body of the streaming routes and of `POST /jobs`, in bytes: a streamed
    /// note may be far longer than a one-shot one, and the body is all the server holds of it.
    #[arg(long, env = "SERVICE_MAX_STREAM_BODY_BYTES", default_value_t = 256 * 1024 * 1024)]
    pub max_stream_body_bytes: usize,
    /// Longest text field in characters (one-shot routes and each job document).
    #[arg(long, env = "SERVICE_MAX_TEXT_CHARS", default_value_t = 1_000_000)]
    pub max_text_chars: usize,
    /// Job store (SQLite, WAL); default `<data_dir>/jobs.sqlite`.
    #[arg(long, env = "SERVICE_JOBS_DB")]
    pub jobs_db: Option<PathBuf>,
    /// Jobs worked on at once.
    #[arg(long, env = "SERVICE_JOBS_WORKERS", default_value_t = 2)]
    pub jobs_workers: usize,
    /// Documents of one job in flight at once (they share the model's batching queue).
    #[arg(long, env = "SERVICE_JOBS_DOC_CONCURRENCY", default_value_t = 8)]
    pub jobs_doc_concurrency: usize,
    /// Seconds a finished job and its results are kept.
    #[arg(long, env = "SERVICE_JOBS_TTL_SECONDS", default_value_t = 86_400)]
    pub jobs_ttl_seconds: u64,
    /// Time limit of one webhook attempt, in seconds.
    #[arg(long, env = "SERVICE_WEBHOOK_TIMEOUT_SECONDS", default_value_t = 10.0)]
    pub webhook_timeout_seconds: f64,
    /// Hosts webhooks may call, comma-separated (`*.example.org` for subdomains); unset: any.
    #[arg(long, env = "SERVICE_WEBHOOK_ALLOWED_HOSTS", value_delimiter = ',')]
    pub webhook_allowed_hosts: Option<Vec<String>>,
    /// Key sealing webhook secrets at rest: 32 bytes, base64. Unset: a key file beside the
    /// job store (`<jobs_db>.key`, mode 0600), created on first start.
    #[arg(long, env = "SERVICE_JOBS_SEAL_KEY", hide_env_values = true)]
    pub jobs_seal_key: Option<String>,
    /// Key for hashes and surrogates: with it they are stable across requests (pseudonyms);
    /// without it each request draws a random key. Never logged or returned.
    #[arg(long, env = "SERVICE_DEID_SECRET_KEY", hide_env_values = true)]
    pub deid_secret_key: Option<String>,
    /// Where FHIR ingestions may write: `output_dir` and `checkpoint_path` of a request are
    /// resolved inside this folder (relative paths) or must lie inside it (absolute paths).
    /// Default `<data_dir>/fhir`.
    #[arg(long, env = "SERVICE_FHIR_OUTPUT_ROOT")]
    pub fhir_output_root: Option<PathBuf>,
    /// The privacy gateway's upstream: the full URL of an OpenAI-compatible chat completions
    /// endpoint (e.g. `http://127.0.0.1:8000/v1/chat/completions`). Unset: the gateway
    /// answers 503 `gateway_not_configured`. Requests never carry a URL of their own.
    #[arg(long, env = "SERVICE_GATEWAY_URL")]
    pub gateway_url: Option<String>,
    /// The `model` sent to the gateway's upstream.
    #[arg(long, env = "SERVICE_GATEWAY_MODEL", default_value = "default")]
    pub gateway_model: String,
    /// Bearer token for the gateway's upstream. Never logged or returned.
    #[arg(long, env = "SERVICE_GATEWAY_API_KEY", hide_env_values = true)]
    pub gateway_api_key: Option<String>,
    /// Time limit of one upstream call, in seconds.
    #[arg(long, env = "SERVICE_GATEWAY_TIMEOUT_SECONDS", default_value_t = 30.0)]
    pub gateway_timeout_seconds: f64,
    /// The gateway's hash-chained audit log (JSON lines); default `<data_dir>/gateway-audit.jsonl`.
    #[arg(long, env = "SERVICE_GATEWAY_AUDIT_LOG")]
    pub gateway_audit_log: Option<PathBuf>,
    /// Log as JSON lines.
    #[arg(long, env = "SERVICE_LOG_JSON", default_value_t = false)]
    pub log_json: bool,
    /// Longest a request may take before it is answered 504 `timeout` (seconds; 0: no limit).
    /// For the streaming routes it bounds the time to the first byte, not the whole stream.
    #[arg(long, env = "SERVICE_REQUEST_TIMEOUT_SECONDS", default_value_t = 300.0)]
    pub request_timeout_seconds: f64,
    /// Longest a client may take to send a request's headers, in seconds; a connection that
    /// has not sent them in time is closed (slow-client guard). 0: no limit.
    #[arg(
        long,
        env = "SERVICE_HEADER_READ_TIMEOUT_SECONDS",
        default_value_t = 10.0
    )]
    pub header_read_timeout_seconds: f64,
    /// Longest wait for the next piece of a request body, in seconds; a body that stalls longer
    /// fails the request (408 `body_timeout`). 0: no limit.
    #[arg(
        long,
        env = "SERVICE_BODY_READ_TIMEOUT_SECONDS",
        default_value_t = 30.0
    )]
    pub body_read_timeout_seconds: f64,
    /// Most client connections open at once. When all are taken, a new connection evicts the
    /// oldest one that has not yet sent a complete request; when every one has, new clients
    /// wait in the listen backlog. Keep it below the process's open-file limit. 0: no limit.
    #[arg(long, env = "SERVICE_MAX_CONNECTIONS", default_value_t = 512)]
    pub max_connections: usize,
    /// Longest graceful shutdown, in seconds: requests still running after it are cut off, and
    /// job documents still in flight resume after restart. 0: no drain.
    #[arg(long, env = "SERVICE_SHUTDOWN_DRAIN_SECONDS", default_value_t = 30.0)]
    pub shutdown_drain_seconds: f64,
    /// Browser origins allowed to call the API (CORS), comma-separated, exact
    /// (`https://app.example.org`) or `*`. Unset: no CORS headers (off). Preflights are
    /// answered before authentication; the actual requests still need credentials.
    #[arg(long, env = "SERVICE_CORS_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub cors_allowed_origins: Option<Vec<String>>,
    #[command(flatten)]
    pub auth: AuthSettings,
    #[command(flatten)]
    pub tls: TlsArgs,
    #[command(flatten)]
    pub decisions: DecisionSettings,
}

/// Shown for a secret that is set: whether it is set is useful, its value never is.
fn redacted(v: &Option<String>) -> Option<&'static str> {
    v.as_ref().map(|_| "<redacted>")
}

/// Keys, the upstream token and the upstream URL (which can carry credentials) are redacted, so
/// a settings dump in a log or a panic message never holds them.
impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("models_dir", &self.models_dir)
            .field("data_dir", &self.data_dir)
            .field("docs_assets_dir", &self.docs_assets_dir)
            .field("ort_library", &self.ort_library)
            .field("device", &self.device)
            .field("cuda_device_id", &self.cuda_device_id)
            .field("cuda_lib_dir", &self.cuda_lib_dir)
            .field("cuda_memory_limit_bytes", &self.cuda_memory_limit_bytes)
            .field("cuda_arena_extend", &self.cuda_arena_extend)
            .field("ort_threads", &self.ort_threads)
            .field("infer_workers", &self.infer_workers)
            .field("pii_model", &self.pii_model)
            .field("analyze_model", &self.analyze_model)
            .field("preload_models", &self.preload_models)
            .field("keep_alive", &self.keep_alive)
            .field("max_resident_models", &self.max_resident_models)
            .field("model_memory_budget_bytes", &self.model_memory_budget_bytes)
            .field("batch_token_budget", &self.batch_token_budget)
            .field("batch_max_padding", &self.batch_max_padding)
            .field("queue_capacity", &self.queue_capacity)
            .field("pipelines_dir", &self.pipelines_dir)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_stream_body_bytes", &self.max_stream_body_bytes)
            .field("max_text_chars", &self.max_text_chars)
            .field("jobs_db", &self.jobs_db)
            .field("jobs_workers", &self.jobs_workers)
            .field("jobs_doc_concurrency", &self.jobs_doc_concurrency)
            .field("jobs_ttl_seconds", &self.jobs_ttl_seconds)
            .field("webhook_timeout_seconds", &self.webhook_timeout_seconds)
            .field("webhook_allowed_hosts", &self.webhook_allowed_hosts)
            .field("jobs_seal_key", &redacted(&self.jobs_seal_key))
            .field("deid_secret_key", &redacted(&self.deid_secret_key))
            .field("gateway_url", &redacted(&self.gateway_url))
            .field("gateway_model", &self.gateway_model)
            .field("gateway_api_key", &redacted(&self.gateway_api_key))
            .field("gateway_timeout_seconds", &self.gateway_timeout_seconds)
            .field("gateway_audit_log", &self.gateway_audit_log)
            .field("log_json", &self.log_json)
            .field("request_timeout_seconds", &self.request_timeout_seconds)
            .field(
                "header_read_timeout_seconds",
                &self.header_read_timeout_seconds,
            )
            .field("body_read_timeout_seconds", &self.body_read_timeout_seconds)
            .field("max_connections", &self.max_connections)
            .field("shutdown_drain_seconds", &self.shutdown_drain_seconds)
            .field("cors_allowed_origins", &self.cors_allowed_origins)
            .field("auth", &self.auth)
            .field("tls", &self.tls)
            .field("decisions", &self.decisions)
            .finish()
    }
}

/// How the CUDA provider's memory arena grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum CudaArenaExtend {
    /// Doubling regions (ONNX Runtime's default).
    #[default]
    PowerOfTwo,
    /// Exactly what each batch asks. On an H200 both gave the same throughput and about the
    /// same memory.
    SameAsRequested,
}

/// Which backend scores decision options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum DecisionBackend {
    /// Deterministic lexical overlap: no model, no network.
    #[default]
    Lexical,
    /// Cosine similarity of sentence embeddings from a local encoder model.
    Encoder,
}

/// The decision API (`/v1/decisions`, `phiflow mcp`): backend, calibration profiles and the
/// access policy.
#[derive(Args, Clone, Debug)]
pub struct DecisionSettings {
    /// Backend scoring the options.
    #[arg(long, env = "SERVICE_DECISION_BACKEND", value_enum, default_value_t)]
    pub decision_backend: DecisionBackend,
    /// The encoder backend's model directory (config.json, tokenizer.json, model.safetensors).
    #[arg(
        long,
        env = "SERVICE_DECISION_ENCODER_DIR",
        default_value = ".assets/models/sentence-transformers/all-MiniLM-L6-v2"
    )]
    pub decision_encoder_dir: PathBuf,
    /// Calibration profiles (`*.toml`, each with its fixture files and their sha256).
    #[arg(
        long,
        env = "SERVICE_DECISION_CALIBRATION_DIR",
        default_value = "calibration"
    )]
    pub decision_calibration_dir: PathBuf,
    /// Namespaces allowed to ask, comma-separated.
    #[arg(
        long,
        env = "SERVICE_DECISION_NAMESPACES",
        value_delimiter = ',',
        default_value = "default"
    )]
    pub decision_namespaces: Vec<String>,
    /// Purposes of use allowed, comma-separated.
    #[arg(
        long,
        env = "SERVICE_DECISION_PURPOSES",
        value_delimiter = ',',
        default_value = "analytics,care_review,quality"
    )]
    pub decision_purposes: Vec<String>,
}

/// Authentication (the interface's section 5). Values are parsed and checked by `auth` at
/// start-up; a bad one stops the service with the setting's name, never its value.
#[derive(Args, Clone, Default)]
pub struct AuthSettings {
    /// `true` turns authentication on (default off: loopback or private subnets only).
    #[arg(long = "auth-enabled", env = "SERVICE_AUTH_ENABLED")]
    pub enabled: Option<String>,
    /// JSON array of `{id, principal, key_hash: "sha256:<hex>", scopes}`; digests only.
    #[arg(
        long = "auth-api-keys",
        env = "SERVICE_AUTH_API_KEYS",
        hide_env_values = true
    )]
    pub api_keys: Option<String>,
    /// Path to a JWKS file (HS256 `oct` and RS256 `RSA` keys).
    #[arg(long = "auth-jwks-file", env = "SERVICE_AUTH_JWKS_FILE")]
    pub jwks_file: Option<String>,
    /// Inline JWKS JSON (`{"keys":[…]}`), merged after the file's keys.
    #[arg(long = "auth-jwks", env = "SERVICE_AUTH_JWKS", hide_env_values = true)]
    pub jwks: Option<String>,
    /// Expected JWT issuer (`iss`).
    #[arg(long = "auth-jwt-issuer", env = "SERVICE_AUTH_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Expected JWT audience; a comma-separated list, of which the token must name one.
    #[arg(long = "auth-jwt-audience", env = "SERVICE_AUTH_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// Clock leeway for `exp`, `nbf` and `iat` (seconds, default 0).
    #[arg(
        long = "auth-jwt-leeway-seconds",
        env = "SERVICE_AUTH_JWT_LEEWAY_SECONDS"
    )]
    pub jwt_leeway_seconds: Option<String>,
    /// JSON object `{"<METHOD> <path>": [scopes]}` extending or overriding the built-in map.
    #[arg(long = "auth-route-scopes", env = "SERVICE_AUTH_ROUTE_SCOPES")]
    pub route_scopes: Option<String>,
    /// Routes missing from the scope map still need a valid credential (default true).
    #[arg(long = "auth-deny-by-default", env = "SERVICE_AUTH_DENY_BY_DEFAULT")]
    pub deny_by_default: Option<String>,
    /// Failed-attempt limiter: tokens per second (default 5; 0 turns it off).
    #[arg(long = "auth-failure-rps", env = "SERVICE_AUTH_FAILURE_RATE_LIMIT_RPS")]
    pub failure_rps: Option<String>,
    /// Failed-attempt limiter: burst (default 10; 0 turns it off).
    #[arg(
        long = "auth-failure-burst",
        env = "SERVICE_AUTH_FAILURE_RATE_LIMIT_BURST"
    )]
    pub failure_burst: Option<String>,
    /// Failed-attempt limiter key: `peer` (default), `global`, or `xff` (X-Forwarded-For).
    #[arg(long = "auth-failure-key", env = "SERVICE_AUTH_FAILURE_RATE_LIMIT_KEY")]
    pub failure_key: Option<String>,
}

impl AuthSettings {
    /// The value of one `SERVICE_AUTH_*` setting, by its environment name.
    pub fn lookup(&self, name: &str) -> Option<String> {
        let v = match name {
            "SERVICE_AUTH_ENABLED" => &self.enabled,
            "SERVICE_AUTH_API_KEYS" => &self.api_keys,
            "SERVICE_AUTH_JWKS_FILE" => &self.jwks_file,
            "SERVICE_AUTH_JWKS" => &self.jwks,
            "SERVICE_AUTH_JWT_ISSUER" => &self.jwt_issuer,
            "SERVICE_AUTH_JWT_AUDIENCE" => &self.jwt_audience,
            "SERVICE_AUTH_JWT_LEEWAY_SECONDS" => &self.jwt_leeway_seconds,
            "SERVICE_AUTH_ROUTE_SCOPES" => &self.route_scopes,
            "SERVICE_AUTH_DENY_BY_DEFAULT" => &self.deny_by_default,
            "SERVICE_AUTH_FAILURE_RATE_LIMIT_RPS" => &self.failure_rps,
            "SERVICE_AUTH_FAILURE_RATE_LIMIT_BURST" => &self.failure_burst,
            "SERVICE_AUTH_FAILURE_RATE_LIMIT_KEY" => &self.failure_key,
            _ => return None,
        };
        v.clone()
    }
}

/// Key material and hashes stay out of debug output.
impl std::fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthSettings")
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

/// HTTPS and mutual TLS. With a certificate and key the service serves HTTPS only. Values are
/// checked together by `tls` at start-up (an mTLS setting without a certificate is an error).
#[derive(Args, Clone, Debug, Default)]
pub struct TlsArgs {
    /// PEM certificate chain for HTTPS.
    #[arg(long = "tls-cert", env = "SERVICE_TLS_CERT")]
    pub cert: Option<String>,
    /// PEM private key for HTTPS.
    #[arg(long = "tls-key", env = "SERVICE_TLS_KEY")]
    pub key: Option<String>,
    /// PEM bundle of the CAs whose client certificates are accepted (turns on mutual TLS).
    #[arg(long = "mtls-ca-bundle", env = "SERVICE_MTLS_CA_BUNDLE")]
    pub mtls_ca_bundle: Option<String>,
    /// JSON list `[{"identities": [...], "principal": "...", "scopes": [...]}]` mapping a
    /// certificate's subject, common name or SAN to a principal; unmapped certificates
    /// authenticate as `mtls:<sha256 fingerprint>` with no scopes.
    #[arg(long = "mtls-principals", env = "SERVICE_MTLS_PRINCIPALS")]
    pub mtls_principals: Option<String>,
    /// `true` refuses TLS clients without a certificate at the handshake (default: they may
    /// connect and use a key or token instead).
    #[arg(long = "mtls-required", env = "SERVICE_MTLS_REQUIRED")]
    pub mtls_required: Option<String>,
}

impl TlsArgs {
    /// The value of one TLS setting, by its environment name.
    pub fn lookup(&self, name: &str) -> Option<String> {
        let v = match name {
            "SERVICE_TLS_CERT" => &self.cert,
            "SERVICE_TLS_KEY" => &self.key,
            "SERVICE_MTLS_CA_BUNDLE" => &self.mtls_ca_bundle,
            "SERVICE_MTLS_PRINCIPALS" => &self.mtls_principals,
            "SERVICE_MTLS_REQUIRED" => &self.mtls_required,
            _ => return None,
        };
        v.clone()
    }
}

impl Settings {
    /// The job store's database (`SERVICE_JOBS_DB`, default `<data_dir>/jobs.sqlite`); jobs
    /// and FHIR ingestions share it.
    pub fn jobs_db_path(&self) -> PathBuf {
        self.jobs_db
            .clone()
            .unwrap_or_else(|| self.data_dir.join("jobs.sqlite"))
    }

    /// `SERVICE_JOBS_SEAL_KEY` decoded (32 bytes in base64); `None` when unset (the store then
    /// keeps a key file beside itself).
    pub fn jobs_seal_key_bytes(&self) -> Result<Option<Vec<u8>>, String> {
        use base64::Engine;
        let Some(k) = &self.jobs_seal_key else {
            return Ok(None);
        };
        base64::engine::general_purpose::STANDARD
            .decode(k.trim())
            .ok()
            .filter(|k| k.len() == 32)
            .map(Some)
            .ok_or_else(|| "SERVICE_JOBS_SEAL_KEY must be 32 bytes in base64".into())
    }

    /// Settings from the environment only (tests and benches), with defaults for the rest.
    pub fn from_env() -> Self {
        use clap::{CommandFactory, FromArgMatches};
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            s: Settings,
        }
        let matches = Wrapper::command().get_matches_from(["phiflow"]);
        Wrapper::from_arg_matches(&matches)
            .map(|w| w.s)
            .expect("defaults parse")
    }

    /// The ONNX Runtime library: the configured path, else the fetched one under `.assets/`.
    pub fn ort_library_path(&self) -> PathBuf {
        self.ort_library
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_ORT_LIBRARY))
    }

    /// The device and CUDA device id: `cuda:N` or `SERVICE_CUDA_DEVICE_ID` (both given must agree).
    pub fn inference_device(&self) -> Result<(Device, i32), String> {
        let DeviceSetting { device, id } = self.device;
        match (id, self.cuda_device_id) {
            (Some(a), Some(b)) if a != b => Err(format!(
                "SERVICE_DEVICE=cuda:{a} and SERVICE_CUDA_DEVICE_ID={b} disagree: set one"
            )),
            (_, Some(b)) if b < 0 => Err(format!("SERVICE_CUDA_DEVICE_ID={b} is not a device id")),
            (a, b) => Ok((device, a.or(b).unwrap_or(0))),
        }
    }

    /// Padded tokens per batch: the setting, else the CPU default or the GPU profile's.
    pub fn batch_token_budget(&self) -> usize {
        self.batch_token_budget.unwrap_or(match self.device.device {
            Device::Cpu => CPU_BATCH_TOKEN_BUDGET,
            Device::Cuda => GPU_BATCH_TOKEN_BUDGET,
        })
    }

    /// Padding allowance per batch: the setting, else the CPU default or the GPU profile's.
    pub fn batch_max_padding(&self) -> f64 {
        self.batch_max_padding.unwrap_or(match self.device.device {
            Device::Cpu => CPU_BATCH_MAX_PADDING,
            Device::Cuda => GPU_BATCH_MAX_PADDING,
        })
    }

    /// Models loaded at start-up: the setting, else the default PII model.
    pub fn preload(&self) -> Vec<String> {
        match &self.preload_models {
            Some(list) => list
                .iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            None => vec![self.pii_model.clone()],
        }
    }
}

/// Where scripts/fetch-assets puts the library.
pub const DEFAULT_ORT_LIBRARY: &str = ".assets/onnxruntime-1.31.1/libonnxruntime.so";

/// Where `scripts/fetch-assets --gpu` puts the CUDA build of the same ONNX Runtime.
pub const DEFAULT_GPU_ORT_LIBRARY: &str = ".assets/onnxruntime-gpu-1.31.1/libonnxruntime.so";

/// Where `scripts/fetch-assets --gpu` puts the CUDA libraries.
pub const DEFAULT_CUDA_LIB_DIR: &str = ".assets/cuda/lib";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_secrets() {
        let mut s = Settings::from_env();
        s.jobs_seal_key = Some("SEAL-KEY-VALUE".into());
        s.deid_secret_key = Some("DEID-KEY-VALUE".into());
        s.gateway_api_key = Some("GATEWAY-TOKEN-VALUE".into());
        s.gateway_url = Some("https://user:PASSWORD@upstream.example/v1".into());
        s.auth.api_keys = Some("API-KEYS-VALUE".into());
        s.auth.jwks = Some("JWKS-VALUE".into());
        let shown = format!("{s:?} {s:#?}");
        for secret in [
            "SEAL-KEY-VALUE",
            "DEID-KEY-VALUE",
            "GATEWAY-TOKEN-VALUE",
            "PASSWORD",
            "API-KEYS-VALUE",
            "JWKS-VALUE",
        ] {
            assert!(!shown.contains(secret), "{secret} leaked");
        }
        assert!(shown.contains("<redacted>") && shown.contains("max_connections"));
    }

    #[test]
    fn device_syntax() {
        let d = |s: &str| s.parse::<DeviceSetting>();
        assert_eq!(d("cpu"), Ok(DeviceSetting::default()));
        assert_eq!(
            d("CUDA"),
            Ok(DeviceSetting {
                device: Device::Cuda,
                id: None
            })
        );
        assert_eq!(
            d("cuda:1"),
            Ok(DeviceSetting {
                device: Device::Cuda,
                id: Some(1)
            })
        );
        for bad in ["gpu", "cuda:", "cuda:-1", "cuda:x", "cpu:0", ""] {
            let err = d(bad).expect_err(bad);
            assert!(err.contains("cpu, cuda or cuda:N"), "{err}");
        }
    }

    #[test]
    fn device_id_from_either_setting() {
        let mut s = Settings::from_env();
        s.device = "cuda:2".parse().unwrap();
        assert_eq!(s.inference_device(), Ok((Device::Cuda, 2)));
        s.cuda_device_id = Some(2);
        assert_eq!(s.inference_device(), Ok((Device::Cuda, 2)));
        s.cuda_device_id = Some(3);
        assert!(s.inference_device().unwrap_err().contains("disagree"));
        s.device = "cuda".parse().unwrap();
        assert_eq!(s.inference_device(), Ok((Device::Cuda, 3)));
        s.cuda_device_id = None;
        assert_eq!(s.inference_device(), Ok((Device::Cuda, 0)));
    }

    #[test]
    fn gpu_profile_fills_only_unset_batch_settings() {
        let mut s = Settings::from_env();
        s.batch_token_budget = None;
        s.batch_max_padding = None;
        assert_eq!(s.batch_token_budget(), CPU_BATCH_TOKEN_BUDGET);
        assert_eq!(s.batch_max_padding(), CPU_BATCH_MAX_PADDING);
        s.device = "cuda:0".parse().unwrap();
        assert_eq!(s.batch_token_budget(), GPU_BATCH_TOKEN_BUDGET);
        assert_eq!(s.batch_max_padding(), GPU_BATCH_MAX_PADDING);
        s.batch_token_budget = Some(8192);
        s.batch_max_padding = Some(0.1);
        assert_eq!(s.batch_token_budget(), 8192);
        assert_eq!(s.batch_max_padding(), 0.1);
    }
}
