//! The scoring backend seam. Backends only score the caller's fixed options (or read a scalar);
//! the engine owns thresholds, access and timeouts. Learned backends are admitted only with a
//! permissive license and local execution, checked once when the engine is built.

use std::fmt;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::request::Mode;

/// What kind of model a backend is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    Deterministic,
    Encoder,
    CrossEncoder,
    Specialist,
}

impl BackendKind {
    pub const ALL: [BackendKind; 4] = [
        BackendKind::Deterministic,
        BackendKind::Encoder,
        BackendKind::CrossEncoder,
        BackendKind::Specialist,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Deterministic => "deterministic",
            BackendKind::Encoder => "encoder",
            BackendKind::CrossEncoder => "cross_encoder",
            BackendKind::Specialist => "specialist",
        }
    }

    /// Learned kinds carry model weights and so a license and a place of execution.
    pub fn is_learned(self) -> bool {
        self != BackendKind::Deterministic
    }
}

/// Provenance of a backend, copied into every result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendIdentity {
    pub backend_id: String,
    pub kind: BackendKind,
    pub runtime: String,
    pub model_id: String,
    pub revision: String,
    pub license_id: String,
    pub local: bool,
    pub deterministic: bool,
}

/// SPDX ids a learned backend may carry.
pub const ALLOWED_LEARNED_LICENSES: [&str; 5] = [
    "Apache-2.0",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "MIT",
    "MPL-2.0",
];

/// Why a backend may not be used at all.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum AdmissionError {
    #[error(
        "backend {backend_id} ({kind}) has license {license_id}; learned backends need one of Apache-2.0, BSD-2-Clause, BSD-3-Clause, MIT, MPL-2.0"
    )]
    LicenseNotAllowed {
        backend_id: String,
        kind: &'static str,
        license_id: String,
    },
    #[error("backend {backend_id} ({kind}) is learned and must run locally")]
    NotLocal {
        backend_id: String,
        kind: &'static str,
    },
}

/// Admits a backend identity: learned kinds need an allowed license and `local = true`.
pub fn admit(identity: &BackendIdentity) -> Result<(), AdmissionError> {
    if !identity.kind.is_learned() {
        return Ok(());
    }
    let kind = identity.kind.as_str();
    if !ALLOWED_LEARNED_LICENSES.contains(&identity.license_id.as_str()) {
        return Err(AdmissionError::LicenseNotAllowed {
            backend_id: identity.backend_id.clone(),
            kind,
            license_id: identity.license_id.clone(),
        });
    }
    if !identity.local {
        return Err(AdmissionError::NotLocal {
            backend_id: identity.backend_id.clone(),
            kind,
        });
    }
    Ok(())
}

/// What a backend is asked to score. `Debug` redacts the text.
#[derive(Clone, Copy)]
pub struct ScoreInput<'a> {
    pub mode: Mode,
    pub input_text: &'a str,
    /// Trimmed options in input order (empty for `scalar_score`).
    pub options: &'a [String],
    /// The calibration the engine will judge the scores with.
    pub calibration_id: &'a str,
}

impl fmt::Debug for ScoreInput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScoreInput")
            .field("mode", &self.mode)
            .field("input_text_chars", &self.input_text.chars().count())
            .field("option_count", &self.options.len())
            .field("calibration_id", &self.calibration_id)
            .finish()
    }
}

/// Raw scores; the engine checks their shape and range.
#[derive(Clone, Debug, PartialEq)]
pub enum BackendScores {
    /// One score in [0, 1] per option, in input order.
    Options(Vec<f64>),
    /// `scalar_score` mode: a value in [0, 1] and the backend's confidence in it.
    Scalar { value: f64, confidence: f64 },
}

/// A backend's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct BackendOutput {
    pub scores: BackendScores,
    /// The calibration id the backend scored for; must equal the requested one.
    pub calibration_id: String,
    /// Machine codes (identifier-shaped, e.g. `truncated_input`), never free text.
    pub warnings: Vec<String>,
}

/// Backend errors. Reasons are for logs and never reach a result; they must not quote input.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BackendError {
    /// Maps to `unsupported` / `backend_unsupported`.
    #[error("backend does not support this request: {reason}")]
    Unsupported { reason: &'static str },
    /// Maps to `failure` / `backend_failure`.
    #[error("backend failed: {reason}")]
    Failure { reason: String },
    /// The backend gave up at the deadline; maps to `failure` / `backend_timeout`.
    #[error("backend stopped at the deadline")]
    DeadlineExceeded,
    /// The backend's own state conflicts with the request; maps to `conflict` / `backend_conflict`.
    #[error("backend conflict: {reason}")]
    Conflict { reason: String },
}

/// A scoring backend. Object safe; shared across threads behind `Arc<dyn Backend>`.
pub trait Backend: Send + Sync {
    fn identity(&self) -> &BackendIdentity;

    /// Scores `input`; should return by `deadline` (the engine also checks elapsed time).
    fn score(
        &self,
        input: &ScoreInput<'_>,
        deadline: Instant,
    ) -> Result<BackendOutput, BackendError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(kind: BackendKind, license: &str, local: bool) -> BackendIdentity {
        BackendIdentity {
            backend_id: "test.backend".into(),
            kind,
            runtime: "onnxruntime".into(),
            model_id: "org/model".into(),
            revision: "abc123".into(),
            license_id: license.into(),
            local,
            deterministic: false,
        }
    }

    #[test]
    fn learned_backends_need_permissive_license_and_local() {
        for kind in [
            BackendKind::Encoder,
            BackendKind::CrossEncoder,
            BackendKind::Specialist,
        ] {
            for license in ALLOWED_LEARNED_LICENSES {
                assert_eq!(admit(&identity(kind, license, true)), Ok(()));
            }
            assert_eq!(
                admit(&identity(kind, "GPL-3.0-only", true)),
                Err(AdmissionError::LicenseNotAllowed {
                    backend_id: "test.backend".into(),
                    kind: kind.as_str(),
                    license_id: "GPL-3.0-only".into(),
                })
            );
            assert_eq!(
                admit(&identity(kind, "MIT", false)),
                Err(AdmissionError::NotLocal {
                    backend_id: "test.backend".into(),
                    kind: kind.as_str(),
                })
            );
        }
        // Deterministic backends carry no weights: no license or locality rule.
        assert_eq!(
            admit(&identity(BackendKind::Deterministic, "proprietary", false)),
            Ok(())
        );
    }

    #[test]
    fn kind_names() {
        let names: Vec<String> = BackendKind::ALL
            .iter()
            .filter_map(|k| serde_json::to_value(k).ok())
            .filter_map(|v| v.as_str().map(String::from))
            .collect();
        assert_eq!(
            names,
            ["deterministic", "encoder", "cross_encoder", "specialist"]
        );
        assert!(
            BackendKind::ALL
                .iter()
                .all(|k| names.contains(&k.as_str().to_string()))
        );
    }

    #[test]
    fn score_input_debug_redacts() {
        let options = vec!["secret option".to_string()];
        let input = ScoreInput {
            mode: Mode::FixedChoice,
            input_text: "secret text",
            options: &options,
            calibration_id: "c",
        };
        let d = format!("{input:?}");
        assert!(!d.contains("secret") && d.contains("input_text_chars: 11"));
    }
}
