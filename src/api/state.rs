//! What every route shares.

use std::sync::{Arc, Mutex};

use crate::config::Settings;
use crate::deid::policy::Policies;
use crate::inference::ModelRegistry;
use crate::pipeline::Pipelines;

/// Shared application state (cheap to clone).
#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    pub registry: Arc<ModelRegistry>,
    pub pipelines: Arc<Pipelines>,
    pub policies: Arc<Policies>,
    /// The de-identification core every de-identifying route and job goes through.
    pub deid: Arc<crate::deidentifier::Deidentifier>,
    pub readiness: Arc<Readiness>,
    pub auth: Arc<crate::auth::Authenticator>,
    /// HTTPS (and mutual TLS) when configured.
    pub tls: Option<Arc<crate::tls::TlsServer>>,
    /// The durable job store; `None` in processes that serve no HTTP (evaluation), or when
    /// it could not be opened (then `jobs_unavailable` says why).
    pub jobs: Option<Arc<crate::jobs::Jobs>>,
    /// FHIR Bulk Data ingestions (in the job store); `None` where `jobs` is.
    pub ingestions: Option<Arc<crate::fhir::ingest::Ingestions>>,
    /// Why the job store could not be opened (read-only or broken data directory): job routes
    /// answer 503 `storage_unavailable` with it and `/readyz` lists it; everything else serves.
    pub jobs_unavailable: Option<Arc<str>>,
    /// The privacy gateway's upstream and audit log; `None` when no upstream is configured.
    pub gateway: Option<Arc<Gateway>>,
    /// The decision engine (backend, calibration profiles, access policy).
    pub decisions: Arc<crate::decisions::Engine>,
}

/// The privacy gateway's configured upstream and its audit log.
pub struct Gateway {
    pub upstream: crate::gateway::Upstream,
    pub audit: crate::gateway::AuditLog,
}

/// Whether start-up (the model preload) has completed, and if not, why.
#[derive(Default)]
pub struct Readiness {
    state: Mutex<(bool, Vec<String>)>,
}

impl Readiness {
    pub fn set(&self, ready: bool, reasons: Vec<String>) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        *s = (ready, reasons);
    }

    pub fn get(&self) -> (bool, Vec<String>) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
