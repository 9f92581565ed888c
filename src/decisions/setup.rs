//! Builds the decision engine from settings: the same engine serves REST, the library and MCP.

use std::sync::Arc;

use thiserror::Error;

use super::access::{AccessPolicy, DEFAULT_POLICY_VERSION};
use super::backend::{Backend, BackendKind};
use super::calibration::{CalibrationError, CalibrationSet};
use super::encoder::EncoderError;
use super::encoder_backend::{ENCODER_PROFILE, EncoderBackend};
use super::engine::{Engine, EngineError};
use super::lexical::LexicalBackend;
use super::request::is_identifier;
use crate::config::{DecisionBackend, DecisionSettings};

/// The profile each backend is calibrated by; a request naming another one gets
/// `conflict/calibration_mismatch`.
pub const LEXICAL_PROFILE: &str = "phiflow.synthetic.fixed_option.v1";

/// Why the decision engine could not be built (names settings and files, never values).
#[derive(Debug, Error)]
pub enum SetupError {
    #[error(transparent)]
    Calibration(#[from] CalibrationError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("encoder model (SERVICE_DECISION_ENCODER_DIR): {0}")]
    Encoder(#[from] EncoderError),
    #[error("{0} must list identifiers matching ^[a-z][a-z0-9_.:/-]{{0,127}}$")]
    BadList(&'static str),
}

/// The engine the settings describe.
pub fn build_engine(s: &DecisionSettings) -> Result<Engine, SetupError> {
    let profiles = CalibrationSet::load_dir(&s.decision_calibration_dir)?;
    let list = |items: &[String], name| {
        let items: Vec<String> = items.iter().map(|i| i.trim().to_owned()).collect();
        if items.iter().all(|i| is_identifier(i)) {
            Ok(items.into_iter().collect())
        } else {
            Err(SetupError::BadList(name))
        }
    };
    let access = AccessPolicy {
        namespaces: list(&s.decision_namespaces, "SERVICE_DECISION_NAMESPACES")?,
        purposes: list(&s.decision_purposes, "SERVICE_DECISION_PURPOSES")?,
        backend_kinds: BackendKind::ALL.into(),
        policy_version: DEFAULT_POLICY_VERSION.to_owned(),
    };
    let (backend, profile): (Arc<dyn Backend>, &str) = match s.decision_backend {
        DecisionBackend::Lexical => (Arc::new(LexicalBackend::new()), LEXICAL_PROFILE),
        DecisionBackend::Encoder => (
            Arc::new(EncoderBackend::load(&s.decision_encoder_dir)?),
            ENCODER_PROFILE,
        ),
    };
    Ok(Engine::new(profiles, profile, access, backend)?)
}
