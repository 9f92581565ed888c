//! Prometheus metrics for phiflow: a small lock-light registry, text
//! exposition (format 0.0.4) and the fixed set of `phiflow_*` families.
//!
//! Label *names* are fixed per family at registration; label *values* must
//! come from sets chosen by the code (route templates, status codes, model
//! ids, outcomes), never from request data. As a backstop each family caps
//! its series (see [`DEFAULT_MAX_SERIES`]) and folds the excess into an
//! all-`"other"` series.

mod registry;
mod text;

#[cfg(test)]
mod tests;

use std::sync::OnceLock;
use std::time::Duration;

pub use registry::{
    Counter, CounterVec, DEFAULT_MAX_SERIES, Gauge, GaugeGuard, GaugeVec, Histogram,
    HistogramTimer, HistogramVec, OVERFLOW_LABEL_VALUE, Registry,
};

/// `Content-Type` for the text exposition served at `/metrics`.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Latency buckets (seconds) for requests, inference batches and model loads:
/// 5 ms resolution at the fast end, up to two minutes for long jobs.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];
/// Windows-per-batch buckets (powers of two, as batchers size them).
pub const BATCH_SIZE_BUCKETS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];
/// Padding ratio buckets: `padded_tokens / real_tokens - 1`.
pub const PADDING_RATIO_BUCKETS: [f64; 7] = [0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0];

/// Route label for requests that matched no route template.
pub const UNMATCHED_ROUTE: &str = "unmatched";
/// `reason` values of `phiflow_auth_failures_total`.
pub const AUTH_FAILURE_REASONS: [&str; 5] = [
    "missing",
    "invalid",
    "forbidden",
    "rate_limited",
    "certificate",
];
/// `outcome` values of `phiflow_model_loads_total`.
pub const MODEL_LOAD_OUTCOMES: [&str; 2] = ["ok", "error"];
/// `reason` values of `phiflow_model_evictions_total`.
pub const EVICTION_REASONS: [&str; 4] = ["lru", "budget", "keep_alive", "unload"];
/// `outcome` values of `phiflow_jobs_total`.
pub const JOB_OUTCOMES: [&str; 5] = ["accepted", "succeeded", "failed", "cancelled", "expired"];
/// `outcome` values of `phiflow_job_documents_total`.
pub const JOB_DOCUMENT_OUTCOMES: [&str; 2] = ["ok", "error"];
/// `outcome` values of `phiflow_webhook_deliveries_total`.
pub const WEBHOOK_OUTCOMES: [&str; 3] = ["delivered", "retry", "failed"];
/// `outcome` values of `phiflow_omop_records_total`.
pub const OMOP_RECORD_OUTCOMES: [&str; 2] = ["loaded", "rejected"];
/// `outcome` values of `phiflow_gateway_requests_total`: forwarded, or the reason code.
pub const GATEWAY_OUTCOMES: [&str; 12] = [
    "forwarded",
    "redaction_confidence_below_threshold",
    "disallowed_entity_category",
    "invalid_entity_offsets",
    "overlapping_entity_spans",
    "outbound_tripwire_detected",
    "unknown_placeholder",
    "mangled_placeholder",
    "missing_external_endpoint",
    "transport_failed",
    "transport_timeout",
    "invalid_transport_response",
];
/// `kind` values of `phiflow_cohort_resolutions_total`.
pub const COHORT_KINDS: [&str; 2] = ["phenotype", "circe"];
/// `type` values of `phiflow_stream_records_total`.
pub const STREAM_RECORD_TYPES: [&str; 4] = ["emit", "final", "error", "chunk"];

/// HTTP methods kept as label values; anything else becomes `"other"`
/// because extension methods are client-chosen.
const KNOWN_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE",
];

/// Returns the allow-list entry equal to `value`, or `"other"`.
///
/// The returned `&str` is always the allow-list's own string, so untrusted
/// input (e.g. a FHIR `resourceType` from a payload) never becomes a label.
pub fn allow_listed<'a>(value: &str, allow_list: &[&'a str]) -> &'a str {
    allow_list
        .iter()
        .find(|a| **a == value)
        .copied()
        .unwrap_or(OVERFLOW_LABEL_VALUE)
}

/// Normalises an HTTP method to a fixed set (`"other"` for extensions).
pub fn method_label(method: &str) -> &'static str {
    allow_listed(method, &KNOWN_METHODS)
}

/// All phiflow metric families. One per process; see [`Metrics::global`].
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// `phiflow_http_requests_total{route,method,status}`.
    pub http_requests: CounterVec<3>,
    /// `phiflow_http_request_duration_seconds{route,method}`.
    pub http_request_duration: HistogramVec<2>,
    /// `phiflow_http_requests_in_flight`.
    pub http_in_flight: Gauge,
    /// `phiflow_auth_failures_total{reason}`.
    pub auth_failures: CounterVec<1>,
    /// `phiflow_slow_client_events_total{event}` (timeouts, evictions, limit reached).
    pub slow_clients: CounterVec<1>,
    /// `phiflow_inference_queue_depth{model}` (windows waiting).
    pub inference_queue_depth: GaugeVec<1>,
    /// `phiflow_inference_batches_total{model}`.
    pub inference_batches: CounterVec<1>,
    /// `phiflow_inference_batch_size{model}` (windows per batch).
    pub inference_batch_size: HistogramVec<1>,
    /// `phiflow_inference_batch_padding_ratio{model}`.
    pub inference_batch_padding_ratio: HistogramVec<1>,
    /// `phiflow_inference_batch_seconds{model}`.
    pub inference_batch_seconds: HistogramVec<1>,
    /// `phiflow_inference_queue_rejections_total{model}`.
    pub inference_queue_rejections: CounterVec<1>,
    /// `phiflow_model_loads_total{model,outcome}`.
    pub model_loads: CounterVec<2>,
    /// `phiflow_model_load_seconds{model}`.
    pub model_load_seconds: HistogramVec<1>,
    /// `phiflow_model_evictions_total{model,reason}`.
    pub model_evictions: CounterVec<2>,
    /// `phiflow_models_resident`.
    pub models_resident: Gauge,
    /// `phiflow_models_resident_bytes`.
    pub models_resident_bytes: Gauge,
    /// `phiflow_jobs_total{outcome}`.
    pub jobs: CounterVec<1>,
    /// `phiflow_job_documents_total{outcome}`.
    pub job_documents: CounterVec<1>,
    /// `phiflow_jobs_running`.
    pub jobs_running: Gauge,
    /// `phiflow_webhook_deliveries_total{outcome}`.
    pub webhook_deliveries: CounterVec<1>,
    /// `phiflow_ingestions_total{outcome}`.
    pub ingestions: CounterVec<1>,
    /// `phiflow_ingested_resources_total{resource_type}`; prefer
    /// [`Metrics::record_ingested_resources`], which applies the allow-list.
    pub ingested_resources: CounterVec<1>,
    /// `phiflow_omop_records_total{outcome}`: records of stored OMOP loads (a note with a
    /// rejected entity is still loaded; the entity counts as rejected).
    pub omop_records: CounterVec<1>,
    /// `phiflow_cohort_resolutions_total{kind}`.
    pub cohort_resolutions: CounterVec<1>,
    /// `phiflow_gateway_requests_total{outcome}`.
    pub gateway_requests: CounterVec<1>,
    /// `phiflow_decisions_total{state}`.
    pub decisions: CounterVec<1>,
    /// `phiflow_stream_records_total{route,type}`.
    pub stream_records: CounterVec<2>,
    /// `phiflow_build_info{version}` (always 1).
    pub build_info: GaugeVec<1>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// All families, `build_info` labelled with this crate's package version.
    pub fn new() -> Self {
        Self::with_version(env!("CARGO_PKG_VERSION"))
    }

    /// All families with an explicit `build_info` version.
    pub fn with_version(version: &str) -> Self {
        Self::with_registry(Registry::new(), version)
    }

    /// All families registered into `registry` (e.g. one with a custom cap).
    pub fn with_registry(registry: Registry, version: &str) -> Self {
        let r = &registry;
        let m = Self {
            http_requests: r.counter_vec(
                "phiflow_http_requests_total",
                "HTTP requests by matched route template, method and status.",
                ["route", "method", "status"],
            ),
            http_request_duration: r.histogram_vec(
                "phiflow_http_request_duration_seconds",
                "HTTP request latency in seconds.",
                ["route", "method"],
                &LATENCY_BUCKETS,
            ),
            http_in_flight: r.gauge(
                "phiflow_http_requests_in_flight",
                "HTTP requests currently being served.",
            ),
            auth_failures: r.counter_vec(
                "phiflow_auth_failures_total",
                "Rejected authentications by reason.",
                ["reason"],
            ),
            slow_clients: r.counter_vec(
                "phiflow_slow_client_events_total",
                "Connections closed or delayed to protect the service from slow clients, by event.",
                ["event"],
            ),
            inference_queue_depth: r.gauge_vec(
                "phiflow_inference_queue_depth",
                "Windows waiting in the inference queue.",
                ["model"],
            ),
            inference_batches: r.counter_vec(
                "phiflow_inference_batches_total",
                "Inference batches executed.",
                ["model"],
            ),
            inference_batch_size: r.histogram_vec(
                "phiflow_inference_batch_size",
                "Windows per inference batch.",
                ["model"],
                &BATCH_SIZE_BUCKETS,
            ),
            inference_batch_padding_ratio: r.histogram_vec(
                "phiflow_inference_batch_padding_ratio",
                "Padded tokens over real tokens minus one, per batch.",
                ["model"],
                &PADDING_RATIO_BUCKETS,
            ),
            inference_batch_seconds: r.histogram_vec(
                "phiflow_inference_batch_seconds",
                "Inference batch execution time in seconds.",
                ["model"],
                &LATENCY_BUCKETS,
            ),
            inference_queue_rejections: r.counter_vec(
                "phiflow_inference_queue_rejections_total",
                "Work rejected because the inference queue was full.",
                ["model"],
            ),
            model_loads: r.counter_vec(
                "phiflow_model_loads_total",
                "Model load attempts by outcome.",
                ["model", "outcome"],
            ),
            model_load_seconds: r.histogram_vec(
                "phiflow_model_load_seconds",
                "Model load time in seconds.",
                ["model"],
                &LATENCY_BUCKETS,
            ),
            model_evictions: r.counter_vec(
                "phiflow_model_evictions_total",
                "Models evicted from memory by reason.",
                ["model", "reason"],
            ),
            models_resident: r.gauge("phiflow_models_resident", "Models currently loaded."),
            models_resident_bytes: r.gauge(
                "phiflow_models_resident_bytes",
                "Estimated bytes held by loaded models.",
            ),
            jobs: r.counter_vec(
                "phiflow_jobs_total",
                "Batch job lifecycle events by outcome.",
                ["outcome"],
            ),
            job_documents: r.counter_vec(
                "phiflow_job_documents_total",
                "Documents processed by batch jobs by outcome.",
                ["outcome"],
            ),
            jobs_running: r.gauge("phiflow_jobs_running", "Batch jobs currently running."),
            webhook_deliveries: r.counter_vec(
                "phiflow_webhook_deliveries_total",
                "Webhook delivery attempts by outcome.",
                ["outcome"],
            ),
            ingestions: r.counter_vec(
                "phiflow_ingestions_total",
                "FHIR ingestions by outcome.",
                ["outcome"],
            ),
            ingested_resources: r.counter_vec(
                "phiflow_ingested_resources_total",
                "Ingested FHIR resources by allow-listed resource type.",
                ["resource_type"],
            ),
            omop_records: r.counter_vec(
                "phiflow_omop_records_total",
                "Records of OMOP loads: loaded lines and rejected records or entities.",
                ["outcome"],
            ),
            cohort_resolutions: r.counter_vec(
                "phiflow_cohort_resolutions_total",
                "Cohort resolutions answered, by definition kind.",
                ["kind"],
            ),
            gateway_requests: r.counter_vec(
                "phiflow_gateway_requests_total",
                "Privacy gateway requests: forwarded, or the reason they were refused.",
                ["outcome"],
            ),
            decisions: r.counter_vec(
                "phiflow_decisions_total",
                "Decision results by state (each request of a batch counts).",
                ["state"],
            ),
            stream_records: r.counter_vec(
                "phiflow_stream_records_total",
                "Streamed response records by route and record type.",
                ["route", "type"],
            ),
            build_info: r.gauge_vec(
                "phiflow_build_info",
                "Build information; value is always 1.",
                ["version"],
            ),
            registry,
        };
        m.build_info.set(&[version], 1.0);
        // Pre-create fixed-set series so rates work from the first scrape.
        for reason in AUTH_FAILURE_REASONS {
            m.auth_failures.inc_by(&[reason], 0);
        }
        for outcome in JOB_OUTCOMES {
            m.jobs.inc_by(&[outcome], 0);
        }
        for outcome in JOB_DOCUMENT_OUTCOMES {
            m.job_documents.inc_by(&[outcome], 0);
        }
        for outcome in WEBHOOK_OUTCOMES {
            m.webhook_deliveries.inc_by(&[outcome], 0);
        }
        for outcome in OMOP_RECORD_OUTCOMES {
            m.omop_records.inc_by(&[outcome], 0);
        }
        for state in crate::decisions::State::ALL {
            m.decisions.inc_by(&[state.as_str()], 0);
        }
        for kind in COHORT_KINDS {
            m.cohort_resolutions.inc_by(&[kind], 0);
        }
        for outcome in GATEWAY_OUTCOMES {
            m.gateway_requests.inc_by(&[outcome], 0);
        }
        m
    }

    /// Process-wide instance, so deep code (queues, workers) can record
    /// without threading a handle through every layer.
    pub fn global() -> &'static Metrics {
        static GLOBAL: OnceLock<Metrics> = OnceLock::new();
        GLOBAL.get_or_init(Metrics::new)
    }

    /// The underlying registry, for ad-hoc families.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Text exposition; serve with [`CONTENT_TYPE`].
    pub fn render(&self) -> String {
        self.registry.render()
    }

    /// Records a finished request: count and latency. `route` is the matched
    /// template or [`UNMATCHED_ROUTE`]; `method` is normalised by
    /// [`method_label`]; `status` is the numeric code as text (e.g.
    /// `StatusCode::as_str()`).
    pub fn observe_http(&self, route: &str, method: &str, status: &str, elapsed: Duration) {
        let method = method_label(method);
        self.http_requests.inc(&[route, method, status]);
        self.http_request_duration
            .observe_duration(&[route, method], elapsed);
    }

    /// Counts `n` ingested resources of `resource_type`, labelled by the
    /// matching `allow_list` entry or `"other"`, so payload-supplied type
    /// names never reach the label set.
    pub fn record_ingested_resources(&self, allow_list: &[&str], resource_type: &str, n: u64) {
        self.ingested_resources
            .inc_by(&[allow_listed(resource_type, allow_list)], n);
    }
}
