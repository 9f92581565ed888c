//! The decision result. The Rust type keeps invariants (typed outcome, selection only on
//! success); the wire form adds the constant safety fields (`review.required`, `advisory`,
//! `autonomous_action`, `compatibility_policy`) and refuses any JSON that contradicts them.
//!
//! Wire field order: mode, state, code, option_scores, choice, choices, ranking, scalar_score,
//! confidence, margin, calibration, backend, access, warnings, review, advisory,
//! autonomous_action, schema_version, compatibility_policy, extensions.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

use super::access::AccessInfo;
use super::backend::BackendIdentity;
use super::calibration::CalibrationInfo;
use super::outcome::{Outcome, OutcomeError, Selection, State};
use super::request::Mode;
use super::version::{SUPPORTED_MAJOR, parse_semver};

/// The schema version results are produced in.
pub const RESULT_SCHEMA_VERSION: &str = "1.0.0";
/// The fixed advisory sentence every result carries.
pub const ADVISORY: &str = "This result is advisory only: it authorizes no action and must be reviewed by a qualified human before any use.";
/// Every top-level wire field, in order.
pub const TOP_LEVEL_FIELDS: [&str; 20] = [
    "mode",
    "state",
    "code",
    "option_scores",
    "choice",
    "choices",
    "ranking",
    "scalar_score",
    "confidence",
    "margin",
    "calibration",
    "backend",
    "access",
    "warnings",
    "review",
    "advisory",
    "autonomous_action",
    "schema_version",
    "compatibility_policy",
    "extensions",
];

/// One option's score, in input order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionScore {
    pub index: usize,
    pub option: String,
    pub score: f64,
}

/// Why a result needs review (review itself is always required).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Review {
    pub reasons: Vec<String>,
}

/// A decision result. Serializes to / deserializes from the flat wire form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "ResultWire", try_from = "ResultWire")]
pub struct DecisionResult {
    pub mode: Mode,
    pub outcome: Outcome,
    /// Empty unless the backend's scores were valid (success or abstained option modes).
    pub option_scores: Vec<OptionScore>,
    pub ranking: Vec<usize>,
    pub confidence: f64,
    pub margin: f64,
    pub calibration: CalibrationInfo,
    pub backend: BackendIdentity,
    pub access: AccessInfo,
    pub warnings: Vec<String>,
    pub review: Review,
    pub schema_version: String,
    pub extensions: Map<String, Value>,
}

impl DecisionResult {
    pub fn state(&self) -> State {
        self.outcome.state()
    }
    pub fn code(&self) -> Option<&'static str> {
        self.outcome.code()
    }
    /// The chosen option; only a success has one.
    pub fn choice(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Success(s) => s.choice.as_deref(),
            _ => None,
        }
    }
}

/// JSON that is shaped like a result but breaks one of its rules. Never quotes values.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ResultError {
    #[error(transparent)]
    Outcome(#[from] OutcomeError),
    #[error("autonomous_action must be false")]
    AutonomousAction,
    #[error("review.required must be true")]
    ReviewNotRequired,
    #[error("advisory must be the fixed advisory sentence")]
    Advisory,
    #[error("compatibility_policy must be same_major")]
    CompatibilityPolicy,
    #[error("schema_version must be a semantic version with major {SUPPORTED_MAJOR}")]
    SchemaVersion,
    #[error("scores, confidence and margin must be finite numbers in [0, 1]")]
    ScoreRange,
    #[error("access.allowed must be true exactly when access.code is null")]
    AccessInconsistent,
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReviewWire {
    required: bool,
    reasons: Vec<String>,
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResultWire {
    mode: Mode,
    state: State,
    code: Option<String>,
    option_scores: Vec<OptionScore>,
    choice: Option<String>,
    choices: Vec<String>,
    ranking: Vec<usize>,
    scalar_score: Option<f64>,
    confidence: f64,
    margin: f64,
    calibration: CalibrationInfo,
    backend: BackendIdentity,
    access: AccessInfo,
    warnings: Vec<String>,
    review: ReviewWire,
    advisory: String,
    autonomous_action: bool,
    schema_version: String,
    compatibility_policy: String,
    #[serde(default)]
    extensions: Map<String, Value>,
}

impl From<DecisionResult> for ResultWire {
    fn from(r: DecisionResult) -> Self {
        let state = r.outcome.state();
        let code = r.outcome.code().map(String::from);
        let selection = match r.outcome {
            Outcome::Success(selection) => selection,
            _ => Selection::default(),
        };
        ResultWire {
            mode: r.mode,
            state,
            code,
            option_scores: r.option_scores,
            choice: selection.choice,
            choices: selection.choices,
            ranking: r.ranking,
            scalar_score: selection.scalar_score,
            confidence: r.confidence,
            margin: r.margin,
            calibration: r.calibration,
            backend: r.backend,
            access: r.access,
            warnings: r.warnings,
            review: ReviewWire {
                required: true,
                reasons: r.review.reasons,
            },
            advisory: ADVISORY.to_string(),
            autonomous_action: false,
            schema_version: r.schema_version,
            compatibility_policy: "same_major".to_string(),
            extensions: r.extensions,
        }
    }
}

fn unit(x: f64) -> bool {
    x.is_finite() && (0.0..=1.0).contains(&x)
}

impl TryFrom<ResultWire> for DecisionResult {
    type Error = ResultError;

    fn try_from(w: ResultWire) -> Result<Self, ResultError> {
        if w.autonomous_action {
            return Err(ResultError::AutonomousAction);
        }
        if !w.review.required {
            return Err(ResultError::ReviewNotRequired);
        }
        if w.advisory != ADVISORY {
            return Err(ResultError::Advisory);
        }
        if w.compatibility_policy != "same_major" {
            return Err(ResultError::CompatibilityPolicy);
        }
        if parse_semver(&w.schema_version).is_none_or(|v| v.major != SUPPORTED_MAJOR) {
            return Err(ResultError::SchemaVersion);
        }
        let scores_ok = [w.confidence, w.margin].into_iter().all(unit)
            && w.option_scores.iter().all(|s| unit(s.score))
            && w.scalar_score.is_none_or(unit);
        if !scores_ok {
            return Err(ResultError::ScoreRange);
        }
        if w.access.allowed != w.access.code.is_none() {
            return Err(ResultError::AccessInconsistent);
        }
        let selection = Selection {
            choice: w.choice,
            choices: w.choices,
            scalar_score: w.scalar_score,
        };
        let outcome = Outcome::from_parts(w.state, w.code.as_deref(), selection)?;
        Ok(DecisionResult {
            mode: w.mode,
            outcome,
            option_scores: w.option_scores,
            ranking: w.ranking,
            confidence: w.confidence,
            margin: w.margin,
            calibration: w.calibration,
            backend: w.backend,
            access: w.access,
            warnings: w.warnings,
            review: Review {
                reasons: w.review.reasons,
            },
            schema_version: w.schema_version,
            extensions: w.extensions,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decisions::testkit::sample_result;

    #[test]
    fn wire_field_order_and_constants() {
        let text = serde_json::to_string(&sample_result()).unwrap_or_default();
        // Top-level keys are serialized in contract order (first occurrences are top-level).
        let positions: Vec<Option<usize>> = TOP_LEVEL_FIELDS
            .iter()
            .map(|k| text.find(&format!("\"{k}\":")))
            .collect();
        assert!(positions.iter().all(Option::is_some));
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
        assert!(
            text.starts_with("{\"mode\":\"boolean_choice\",\"state\":\"success\",\"code\":null,")
        );
        let v: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(v.as_object().map(|o| o.len()), Some(20));
        assert_eq!(v["autonomous_action"], json!(false));
        assert_eq!(
            v["review"],
            json!({"required": true, "reasons": ["clinical_use_requires_review"]})
        );
        assert_eq!(v["advisory"], json!(ADVISORY));
        assert_eq!(v["compatibility_policy"], json!("same_major"));
        assert_eq!(
            (v["state"].clone(), v["code"].clone()),
            (json!("success"), json!(null))
        );
        assert_eq!(v["choice"], json!("yes"));
        assert_eq!(v["extensions"], json!({}));
    }

    #[test]
    fn round_trip() {
        let r = sample_result();
        let back: Result<DecisionResult, _> =
            serde_json::from_value(serde_json::to_value(&r).unwrap_or_default());
        assert_eq!(back.ok(), Some(r));
    }

    #[test]
    fn refuses_contradictions() {
        let good = serde_json::to_value(sample_result()).unwrap_or_default();
        let bad = |key: &str, value: Value| {
            let mut v = good.clone();
            v[key] = value;
            serde_json::from_value::<DecisionResult>(v).is_err()
        };
        assert!(bad("autonomous_action", json!(true)));
        assert!(bad("review", json!({"required": false, "reasons": []})));
        assert!(bad("advisory", json!("go ahead")));
        assert!(bad("compatibility_policy", json!("any")));
        assert!(bad("schema_version", json!("2.0.0")));
        assert!(bad("confidence", json!(1.5)));
        assert!(bad("code", json!("low_confidence"))); // success with a code
        assert!(bad("state", json!("abstained"))); // abstained without a code, with a choice
        assert!(bad("surprise", json!(1))); // unknown fields are migrate()'s job
        let mut v = good.clone();
        v["state"] = json!("abstained");
        v["code"] = json!("low_confidence");
        assert!(serde_json::from_value::<DecisionResult>(v.clone()).is_err()); // choice still set
        v["choice"] = json!(null);
        v["choices"] = json!([]);
        assert!(serde_json::from_value::<DecisionResult>(v).is_ok());
    }
}
