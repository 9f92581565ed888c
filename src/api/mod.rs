//! The HTTP surface: routes, request validation and the one error mapping. Handlers are thin:
//! validate, pick the pipeline, run it, shape the response.

mod body;
pub mod catalog;
mod cohort;
mod cors;
mod decisions;
mod deidentify;
mod detect;
mod docs;
mod error;
mod fhir;
mod gateway;
mod jobs;
mod middleware;
mod omop;
pub mod openapi;
mod openapi_components;
mod ops;
mod schemas;
mod state;
mod stream;
pub mod validate;

use std::sync::Arc;

use axum::Router;

pub use error::ApiError;
pub use state::{AppState, Readiness};

use crate::config::Settings;
use crate::deidentifier::Deidentifier;
use crate::inference::KeepAlive;

/// The pipelines the routes need.
pub use crate::deidentifier::REQUIRED_PIPELINES;

/// Every route of the interface, from the catalog.
pub fn router(state: AppState) -> Router {
    let mut router = Router::new();
    for r in catalog::routes() {
        router = router.route(r.path, (r.handler)());
    }
    router
        .fallback(|| async {
            ApiError::NotFound {
                code: "route_not_found",
                message: "No such route",
            }
        })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::body_timeout,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::timeout,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::authenticate,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            cors::cors,
        ))
        .layer(axum::middleware::from_fn(middleware::observe))
        .layer(axum::middleware::from_fn(middleware::request_id))
        .with_state(state)
}

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Settings(String),
    #[error(transparent)]
    Engine(#[from] crate::deidentifier::BuildError),
    #[error("job store: {0}")]
    Jobs(#[from] crate::jobs::JobError),
    #[error("authentication settings: {0}")]
    Auth(#[from] crate::auth::AuthConfigError),
    #[error("TLS settings: {0}")]
    Tls(#[from] crate::tls::TlsConfigError),
    #[error("decision API: {0}")]
    Decisions(#[from] crate::decisions::setup::SetupError),
}

/// Builds the state from settings: runtime, pipelines (checked), registry and its reaper, and
/// the job store (whose workers resume unfinished jobs). The preload runs in the background;
/// `/readyz` turns ready when it has finished. Call it inside a tokio runtime.
pub fn build_state(settings: Settings) -> Result<AppState, StartError> {
    build(settings, true)
}

/// The state without a job store, for processes that serve no HTTP (evaluation): they must
/// not pick up the server's jobs.
pub fn build_state_without_jobs(settings: Settings) -> Result<AppState, StartError> {
    build(settings, false)
}

fn open_jobs(
    settings: &Arc<Settings>,
    deid: &Arc<Deidentifier>,
) -> Result<Arc<crate::jobs::Jobs>, StartError> {
    let seal_key = settings
        .jobs_seal_key_bytes()
        .map_err(StartError::Settings)?;
    if !settings.webhook_timeout_seconds.is_finite() || settings.webhook_timeout_seconds <= 0.0 {
        return Err(StartError::Settings(
            "SERVICE_WEBHOOK_TIMEOUT_SECONDS must be a positive number".into(),
        ));
    }
    let job_settings = crate::jobs::JobSettings {
        db_path: settings.jobs_db_path(),
        workers: settings.jobs_workers.max(1),
        doc_concurrency: settings.jobs_doc_concurrency.max(1),
        ttl: std::time::Duration::from_secs(settings.jobs_ttl_seconds),
        webhook_timeout: std::time::Duration::from_secs_f64(settings.webhook_timeout_seconds),
        webhook_allowed_hosts: settings.webhook_allowed_hosts.clone(),
        seal_key,
    };
    let processor = Arc::new(jobs::JobProcessor { deid: deid.clone() });
    Ok(crate::jobs::Jobs::open(job_settings, Arc::new(processor))?)
}

/// The privacy gateway, when an upstream is configured. A broken audit chain stops the start:
/// the gateway must not go on appending to a log it cannot vouch for.
fn open_gateway(settings: &Settings) -> Result<Option<Arc<state::Gateway>>, StartError> {
    let Some(url) = settings
        .gateway_url
        .as_deref()
        .filter(|u| !u.trim().is_empty())
    else {
        return Ok(None);
    };
    let upstream = crate::gateway::Upstream::new(
        url.trim(),
        &settings.gateway_model,
        settings.gateway_api_key.as_deref(),
        settings.gateway_timeout_seconds,
    )
    .map_err(|e| StartError::Settings(e.to_string()))?;
    let path = settings
        .gateway_audit_log
        .clone()
        .unwrap_or_else(|| settings.data_dir.join("gateway-audit.jsonl"));
    let audit = crate::gateway::AuditLog::open(&path)
        .map_err(|e| StartError::Settings(format!("SERVICE_GATEWAY_AUDIT_LOG: {e}")))?;
    Ok(Some(Arc::new(state::Gateway { upstream, audit })))
}

/// The HTTPS server configuration, when a certificate is configured.
fn tls_server(settings: &Settings) -> Result<Option<Arc<crate::tls::TlsServer>>, StartError> {
    match crate::tls::TlsSettings::from_lookup(|name| settings.tls.lookup(name))? {
        Some(tls) => Ok(Some(Arc::new(tls.build()?))),
        None => Ok(None),
    }
}

fn build(settings: Settings, with_jobs: bool) -> Result<AppState, StartError> {
    let deid = Arc::new(Deidentifier::build(settings)?);
    let (settings, registry, pipelines, policies) = (
        deid.settings().clone(),
        deid.registry().clone(),
        deid.pipelines().clone(),
        deid.policies().clone(),
    );
    let (jobs, jobs_unavailable) = if with_jobs {
        match open_jobs(&settings, &deid) {
            Ok(jobs) => (Some(jobs), None),
            // Storage the job store cannot use must not stop the routes that need none.
            Err(StartError::Jobs(e)) if e.storage_problem().is_some() => {
                let problem = e
                    .storage_problem()
                    .unwrap_or(crate::jobs::StorageProblem::Unavailable);
                tracing::error!(error = %e, "job store unavailable; job routes answer 503");
                let reason = format!("job store unavailable: {}", problem.describe());
                (None, Some(Arc::from(reason)))
            }
            Err(e) => return Err(e),
        }
    } else {
        (None, None)
    };
    // Ingestions share the job store's database: where it opened, they open too.
    let ingestions = match &jobs {
        Some(_) => Some(crate::fhir::ingest::Ingestions::open(deid.clone())?),
        None => None,
    };
    let auth = Arc::new(crate::auth::Authenticator::new(
        crate::auth::AuthConfig::from_lookup(|name| settings.auth.lookup(name))?,
    )?);
    let tls = tls_server(&settings)?;
    let gateway = open_gateway(&settings)?;
    let decisions = Arc::new(crate::decisions::setup::build_engine(&settings.decisions)?);
    let state = AppState {
        gateway,
        decisions,
        auth,
        tls,
        settings,
        registry,
        pipelines,
        policies,
        deid,
        readiness: Arc::new(Readiness::default()),
        jobs,
        ingestions,
        jobs_unavailable,
    };
    spawn_preload(state.clone());
    Ok(state)
}

fn spawn_preload(state: AppState) {
    let models = state.settings.preload();
    state.readiness.set(
        false,
        models
            .iter()
            .map(|m| format!("loading model {m}"))
            .collect(),
    );
    tokio::spawn(async move {
        let mut failures = Vec::new();
        for id in &models {
            // Preloaded models stay resident: the handle is released with the keep-alive "forever".
            match state.registry.acquire(id, Some(KeepAlive::Forever)).await {
                Ok(handle) => drop(handle),
                Err(e) => {
                    tracing::error!(model = %id, error = %e, "preload failed");
                    failures.push(format!("model {id} failed to load: {e}"));
                }
            }
        }
        let ready = failures.is_empty();
        state.readiness.set(ready, failures);
        if ready {
            tracing::info!(models = models.len(), "ready");
        }
    });
}

/// Most that shutdown waits for job documents in flight; the rest resume after restart.
const JOBS_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves until `shutdown` resolves, then drains in-flight requests and lets the job workers
/// finish the documents they hold, all within `SERVICE_SHUTDOWN_DRAIN_SECONDS`: what is still
/// running at the deadline is cut off (job documents resume after restart).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let jobs = state.jobs.clone();
    let tls = state.tls.clone();
    let limits = crate::listen::Limits::from_settings(&state.settings);
    let drain = limits.drain;
    let app = router(state);
    // The drain deadline counts from the shutdown signal.
    let (signalled_tx, signalled_rx) = tokio::sync::oneshot::channel::<tokio::time::Instant>();
    let shutdown = async move {
        shutdown.await;
        tracing::info!(
            drain_seconds = drain.as_secs_f64(),
            "shutting down: draining in-flight requests"
        );
        let _ = signalled_tx.send(tokio::time::Instant::now());
    };
    let served = match tls {
        Some(tls) => crate::tls::serve(listener, app, tls, limits, shutdown).await,
        None => {
            crate::listen::accept_loop(listener, limits, shutdown, move |tcp, peer, conn| {
                crate::listen::serve_http1(tcp, peer, app.clone(), conn, |_| {})
            })
            .await
        }
    };
    let deadline = signalled_rx
        .await
        .unwrap_or_else(|_| tokio::time::Instant::now())
        + drain;
    if let Some(jobs) = jobs {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        jobs.shutdown(left.min(JOBS_GRACE)).await;
    }
    served
}
