//! Runs one decision in the contract's order: calibration lookup, access policy, backend call
//! under a deadline, output checks, calibrated scoring. Every path ends in a complete
//! `DecisionResult`; nothing here panics on request or backend data.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Map;
use thiserror::Error;

use super::access::{AccessInfo, AccessPolicy};
use super::backend::{AdmissionError, Backend, BackendError, BackendScores, ScoreInput, admit};
use super::calibration::{CalibrationProfile, CalibrationSet};
use super::outcome::{ConflictCode, FailureCode, Outcome, UnsupportedCode};
use super::request::{DecisionRequest, Mode, is_identifier};
use super::result::{DecisionResult, RESULT_SCHEMA_VERSION, Review};
use super::scoring::{Scored, score_options, score_scalar};

/// Why an engine could not be built.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum EngineError {
    #[error("default calibration profile {0} is not loaded")]
    UnknownDefaultProfile(String),
    #[error(transparent)]
    Admission(#[from] AdmissionError),
}

/// Profiles, policy and one admitted backend.
pub struct Engine {
    profiles: CalibrationSet,
    default_profile: CalibrationProfile,
    access: AccessPolicy,
    backend: Arc<dyn Backend>,
}

fn unit(x: f64) -> bool {
    x.is_finite() && (0.0..=1.0).contains(&x)
}

impl Engine {
    /// Builds an engine; the default profile must be loaded and the backend admissible.
    pub fn new(
        profiles: CalibrationSet,
        default_profile_id: &str,
        access: AccessPolicy,
        backend: Arc<dyn Backend>,
    ) -> Result<Self, EngineError> {
        admit(backend.identity())?;
        let default_profile = profiles
            .get(default_profile_id)
            .cloned()
            .ok_or_else(|| EngineError::UnknownDefaultProfile(default_profile_id.to_string()))?;
        Ok(Self {
            profiles,
            default_profile,
            access,
            backend,
        })
    }

    pub fn profiles(&self) -> &CalibrationSet {
        &self.profiles
    }

    pub fn default_profile(&self) -> &CalibrationProfile {
        &self.default_profile
    }

    pub fn access_policy(&self) -> &AccessPolicy {
        &self.access
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Decides each request in order (each under its own timeout).
    pub fn decide_batch(&self, requests: &[DecisionRequest]) -> Vec<DecisionResult> {
        requests.iter().map(|r| self.decide(r)).collect()
    }

    /// Decides one request.
    pub fn decide(&self, request: &DecisionRequest) -> DecisionResult {
        let access = self.access.evaluate(
            request.namespace(),
            request.purpose(),
            self.backend.identity().kind,
        );
        let wanted = request
            .calibration_id()
            .unwrap_or(self.default_profile.calibration_id());
        let Some(profile) = self.profiles.get(wanted) else {
            let outcome = Outcome::Unsupported(UnsupportedCode::CalibrationUnavailable);
            return self.finish(
                request,
                &self.default_profile,
                access,
                Scored::unscored(outcome),
                &[],
            );
        };
        if let Some(code) = access.code {
            return self.finish(
                request,
                profile,
                access,
                Scored::unscored(Outcome::Denied(code)),
                &[],
            );
        }
        let (scored, warnings) = self.score(request, profile);
        self.finish(request, profile, access, scored, &warnings)
    }

    /// Calls the backend under the request's deadline and checks its output.
    fn score(
        &self,
        request: &DecisionRequest,
        profile: &CalibrationProfile,
    ) -> (Scored, Vec<String>) {
        let failure = |code| (Scored::unscored(Outcome::Failure(code)), Vec::new());
        let input = ScoreInput {
            mode: request.mode(),
            input_text: request.input_text(),
            options: request.options(),
            calibration_id: profile.calibration_id(),
        };
        let budget = Duration::from_millis(request.timeout_ms());
        let start = Instant::now();
        let deadline = start.checked_add(budget).unwrap_or(start);
        let produced = self.backend.score(&input, deadline);
        if start.elapsed() > budget {
            return failure(FailureCode::BackendTimeout);
        }
        let output = match produced {
            Ok(output) => output,
            Err(error) => {
                let outcome = match error {
                    BackendError::Unsupported { .. } => {
                        Outcome::Unsupported(UnsupportedCode::BackendUnsupported)
                    }
                    BackendError::Failure { .. } => Outcome::Failure(FailureCode::BackendFailure),
                    BackendError::DeadlineExceeded => Outcome::Failure(FailureCode::BackendTimeout),
                    BackendError::Conflict { .. } => {
                        Outcome::Conflict(ConflictCode::BackendConflict)
                    }
                };
                return (Scored::unscored(outcome), Vec::new());
            }
        };
        if output.calibration_id != profile.calibration_id() {
            let outcome = Outcome::Conflict(ConflictCode::CalibrationMismatch);
            return (Scored::unscored(outcome), Vec::new());
        }
        // Warnings are machine codes; free text could carry input, so it breaks the contract.
        if !output.warnings.iter().all(|w| is_identifier(w)) {
            return failure(FailureCode::BackendContractInvalid);
        }
        let thresholds = profile.thresholds();
        let scored = match (request.mode(), output.scores) {
            (Mode::ScalarScore, BackendScores::Scalar { value, confidence })
                if unit(value) && unit(confidence) =>
            {
                score_scalar(value, confidence, thresholds)
            }
            (mode, BackendScores::Options(scores))
                if mode != Mode::ScalarScore
                    && scores.len() == request.options().len()
                    && scores.iter().copied().all(unit) =>
            {
                // -0.0 passes the range check; store it as 0.0.
                let scores: Vec<f64> = scores.into_iter().map(|s| s + 0.0).collect();
                score_options(mode, request.options(), &scores, thresholds)
            }
            _ => return failure(FailureCode::BackendContractInvalid),
        };
        (scored, output.warnings)
    }

    /// Assembles the result; warnings and review reasons follow the contract.
    fn finish(
        &self,
        request: &DecisionRequest,
        profile: &CalibrationProfile,
        access: AccessInfo,
        scored: Scored,
        backend_warnings: &[String],
    ) -> DecisionResult {
        let code = scored.outcome.code();
        let mut warnings: Vec<String> = Vec::new();
        let all = backend_warnings
            .iter()
            .map(String::as_str)
            .chain(["human_review_required"])
            .chain(code);
        for warning in all {
            if !warnings.iter().any(|w| w == warning) {
                warnings.push(warning.to_string());
            }
        }
        let reasons = ["clinical_use_requires_review"]
            .into_iter()
            .chain(code)
            .map(String::from)
            .collect();
        DecisionResult {
            mode: request.mode(),
            outcome: scored.outcome,
            option_scores: scored.option_scores,
            ranking: scored.ranking,
            confidence: scored.confidence,
            margin: scored.margin,
            calibration: profile.info(),
            backend: self.backend.identity().clone(),
            access,
            warnings,
            review: Review { reasons },
            schema_version: RESULT_SCHEMA_VERSION.to_string(),
            extensions: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {

    use serde_json::json;

    use super::*;
    use crate::decisions::backend::{BackendIdentity, BackendKind};
    use crate::decisions::lexical::LexicalBackend;
    use crate::decisions::outcome::{AbstainCode, DenyCode, Selection, State};
    use crate::decisions::testkit::{
        FakeBackend, checked, default_profiles, lexical_engine, request,
    };

    const DEFAULT_ID: &str = "phiflow.synthetic.fixed_option.v1";

    fn fake_engine(fake: FakeBackend) -> Engine {
        match Engine::new(
            default_profiles(),
            DEFAULT_ID,
            AccessPolicy::default(),
            Arc::new(fake),
        ) {
            Ok(e) => e,
            Err(e) => panic!("engine: {e}"),
        }
    }

    fn fixed() -> DecisionRequest {
        request(
            json!({"mode": "fixed_choice", "input_text": "PRIVATE patient text about chest pain",
            "options": ["chest pain", "headache"]}),
        )
    }

    fn outcome_of(engine: &Engine, req: &DecisionRequest) -> (State, Option<&'static str>) {
        let r = checked(engine.decide(req), req.input_text());
        (r.state(), r.code())
    }

    #[test]
    fn lexical_success_result_by_hand() {
        let engine = lexical_engine();
        let r = checked(engine.decide(&fixed()), "PRIVATE");
        assert_eq!(
            r.outcome,
            Outcome::Success(Selection {
                choice: Some("chest pain".into()),
                choices: vec!["chest pain".into()],
                scalar_score: None,
            })
        );
        // chest pain: coverage 1 + substring → 1.0; headache → 0.05; margin 0.95
        assert_eq!(r.ranking, [0, 1]);
        assert!((r.confidence - 1.0).abs() < 1e-12 && (r.margin - 0.95).abs() < 1e-12);
        assert_eq!(r.warnings, ["human_review_required"]);
        assert_eq!(r.review.reasons, ["clinical_use_requires_review"]);
        assert_eq!(r.calibration.calibration_id, DEFAULT_ID);
        assert_eq!(
            r.backend.backend_id,
            "phiflow.deterministic.fixed_option.v1"
        );
        assert!(r.access.allowed && r.access.code.is_none());
        assert_eq!(r.schema_version, "1.0.0");
    }

    #[test]
    fn abstention_keeps_scores_and_adds_code() {
        let engine = lexical_engine();
        let req = request(
            json!({"mode": "fixed_choice", "input_text": "PRIVATE chest pain and headache",
            "options": ["chest pain", "headache"]}),
        );
        let r = checked(engine.decide(&req), req.input_text());
        assert_eq!(r.outcome, Outcome::Abstained(AbstainCode::AmbiguousScores));
        assert_eq!(r.option_scores.len(), 2);
        assert_eq!(r.ranking, [0, 1]);
        assert_eq!(r.warnings, ["human_review_required", "ambiguous_scores"]);
        assert_eq!(
            r.review.reasons,
            ["clinical_use_requires_review", "ambiguous_scores"]
        );
    }

    #[test]
    fn unknown_calibration_shows_default_profile() {
        let engine = lexical_engine();
        let req = request(json!({"mode": "scalar_score", "input_text": "PRIVATE 0.5",
            "calibration_id": "nope.v9", "namespace": "elsewhere"}));
        let r = checked(engine.decide(&req), req.input_text());
        assert_eq!(
            (r.state(), r.code()),
            (State::Unsupported, Some("calibration_unavailable"))
        );
        assert_eq!(r.calibration.calibration_id, DEFAULT_ID);
        // Calibration is checked before access; the access block still records the policy view.
        assert_eq!(r.access.code, Some(DenyCode::NamespaceDenied));
        assert!(r.option_scores.is_empty() && r.ranking.is_empty());
        assert_eq!((r.confidence, r.margin), (0.0, 0.0));
    }

    #[test]
    fn access_denials() {
        let engine = lexical_engine();
        let deny = |extra: serde_json::Value| {
            let mut body = json!({"mode": "boolean_choice", "input_text": "PRIVATE: yes", "options": ["yes", "no"]});
            if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
                b.extend(e.clone());
            }
            outcome_of(&engine, &request(body))
        };
        assert_eq!(
            deny(json!({"namespace": "other"})),
            (State::Denied, Some("namespace_denied"))
        );
        assert_eq!(
            deny(json!({"purpose": "billing"})),
            (State::Denied, Some("purpose_denied"))
        );
        assert_eq!(
            deny(json!({"purpose": "analytics"})),
            (State::Success, None)
        );
        let mut policy = AccessPolicy::default();
        policy.backend_kinds.remove(&BackendKind::Deterministic);
        let engine = Engine::new(
            default_profiles(),
            DEFAULT_ID,
            policy,
            Arc::new(LexicalBackend::new()),
        );
        let engine = engine.map_err(|e| e.to_string());
        let r = engine.map(|e| outcome_of(&e, &fixed()));
        assert_eq!(r, Ok((State::Denied, Some("backend_denied"))));
    }

    #[test]
    fn backend_errors_map_to_codes() {
        let cases = [
            (
                BackendError::Unsupported { reason: "x" },
                State::Unsupported,
                "backend_unsupported",
            ),
            (
                BackendError::Failure { reason: "x".into() },
                State::Failure,
                "backend_failure",
            ),
            (
                BackendError::DeadlineExceeded,
                State::Failure,
                "backend_timeout",
            ),
            (
                BackendError::Conflict { reason: "x".into() },
                State::Conflict,
                "backend_conflict",
            ),
        ];
        for (error, state, code) in cases {
            let engine = fake_engine(FakeBackend::failing(error));
            assert_eq!(outcome_of(&engine, &fixed()), (state, Some(code)));
        }
    }

    #[test]
    fn timeout_is_enforced_by_elapsed_time() {
        let fake = FakeBackend::scores(vec![1.0, 0.0]).delayed(Duration::from_millis(30));
        let engine = fake_engine(fake);
        let req = request(
            json!({"mode": "fixed_choice", "input_text": "PRIVATE note", "options": ["a", "b"],
            "timeout_ms": 5}),
        );
        let r = checked(engine.decide(&req), req.input_text());
        assert_eq!(
            (r.state(), r.code()),
            (State::Failure, Some("backend_timeout"))
        );
        assert!(r.outcome.selection().is_none() && r.option_scores.is_empty());
    }

    #[test]
    fn backend_gets_a_deadline_of_timeout_ms() {
        let fake = Arc::new(FakeBackend::scores(vec![1.0, 0.0]));
        let engine = Engine::new(
            default_profiles(),
            DEFAULT_ID,
            AccessPolicy::default(),
            fake.clone(),
        );
        let req = request(
            json!({"mode": "fixed_choice", "input_text": "PRIVATE note", "options": ["a", "b"],
            "timeout_ms": 250}),
        );
        let before = Instant::now();
        let r = engine.map(|e| checked(e.decide(&req), req.input_text()).state());
        let after = Instant::now();
        assert_eq!(r.ok(), Some(State::Success));
        let budget = Duration::from_millis(250);
        let deadline = fake.last_deadline();
        assert!(deadline.is_some_and(|d| d >= before + budget && d <= after + budget));
    }

    #[test]
    fn calibration_mismatch_and_contract_checks() {
        let engine = fake_engine(FakeBackend::scores(vec![1.0, 0.0]).for_calibration("other.cal"));
        assert_eq!(
            outcome_of(&engine, &fixed()),
            (State::Conflict, Some("calibration_mismatch"))
        );
        let invalid = Some("backend_contract_invalid");
        for scores in [
            vec![1.0],
            vec![1.0, 0.0, 0.0],
            vec![f64::NAN, 0.0],
            vec![1.2, 0.0],
            vec![-0.1, 0.5],
        ] {
            let engine = fake_engine(FakeBackend::scores(scores));
            assert_eq!(outcome_of(&engine, &fixed()), (State::Failure, invalid));
        }
        let engine = fake_engine(FakeBackend::output(BackendScores::Scalar {
            value: 0.5,
            confidence: 1.0,
        }));
        assert_eq!(outcome_of(&engine, &fixed()), (State::Failure, invalid));
        let scalar = request(json!({"mode": "scalar_score", "input_text": "PRIVATE note"}));
        let engine = fake_engine(FakeBackend::scores(vec![]));
        assert_eq!(outcome_of(&engine, &scalar), (State::Failure, invalid));
        let engine = fake_engine(FakeBackend::output(BackendScores::Scalar {
            value: 0.5,
            confidence: f64::NAN,
        }));
        assert_eq!(outcome_of(&engine, &scalar), (State::Failure, invalid));
        let engine =
            fake_engine(FakeBackend::scores(vec![1.0, 0.0]).warning("Echo of PRIVATE text"));
        assert_eq!(outcome_of(&engine, &fixed()), (State::Failure, invalid));
    }

    #[test]
    fn backend_warnings_come_first_and_scalar_success() {
        let fake = FakeBackend::output(BackendScores::Scalar {
            value: 0.25,
            confidence: 0.9,
        })
        .warning("model_cold_start")
        .warning("human_review_required");
        let engine = fake_engine(fake);
        let req = request(json!({"mode": "scalar_score", "input_text": "PRIVATE note"}));
        let r = checked(engine.decide(&req), req.input_text());
        assert_eq!(r.warnings, ["model_cold_start", "human_review_required"]);
        assert_eq!(
            r.outcome.selection().and_then(|s| s.scalar_score),
            Some(0.25)
        );
        assert_eq!((r.confidence, r.margin), (0.9, 0.9));
        assert!(r.option_scores.is_empty() && r.ranking.is_empty());
        let engine = fake_engine(FakeBackend::output(BackendScores::Scalar {
            value: 0.25,
            confidence: 0.6,
        }));
        let r = checked(engine.decide(&req), req.input_text());
        assert_eq!(
            (r.state(), r.code()),
            (State::Abstained, Some("low_confidence"))
        );
        assert_eq!(r.outcome.selection(), None);
    }

    #[test]
    fn lexical_scalar_unsupported_without_number() {
        let engine = lexical_engine();
        let req =
            request(json!({"mode": "scalar_score", "input_text": "PRIVATE no number at all"}));
        assert_eq!(
            outcome_of(&engine, &req),
            (State::Unsupported, Some("backend_unsupported"))
        );
    }

    #[test]
    fn batch_keeps_order() {
        let engine = lexical_engine();
        let reqs = [
            fixed(),
            request(json!({"mode": "scalar_score", "input_text": "PRIVATE risk 0.4"})),
            request(
                json!({"mode": "fixed_choice", "input_text": "PRIVATE note", "options": ["a", "b"], "purpose": "billing"}),
            ),
        ];
        let results: Vec<_> = engine
            .decide_batch(&reqs)
            .into_iter()
            .map(|r| checked(r, "PRIVATE"))
            .collect();
        let states: Vec<_> = results.iter().map(|r| (r.mode, r.state())).collect();
        assert_eq!(
            states,
            [
                (Mode::FixedChoice, State::Success),
                (Mode::ScalarScore, State::Success),
                (Mode::FixedChoice, State::Denied),
            ]
        );
    }

    #[test]
    fn construction_checks() {
        let learned = |license: &str, local: bool| {
            FakeBackend::scores(vec![]).with_identity(BackendIdentity {
                backend_id: "enc".into(),
                kind: BackendKind::Encoder,
                runtime: "onnxruntime".into(),
                model_id: "org/m".into(),
                revision: "r1".into(),
                license_id: license.into(),
                local,
                deterministic: false,
            })
        };
        let build = |fake: FakeBackend, id: &str| {
            Engine::new(
                default_profiles(),
                id,
                AccessPolicy::default(),
                Arc::new(fake),
            )
            .err()
        };
        assert!(build(learned("MIT", true), DEFAULT_ID).is_none());
        assert!(matches!(
            build(learned("CC-BY-NC-4.0", true), DEFAULT_ID),
            Some(EngineError::Admission(
                AdmissionError::LicenseNotAllowed { .. }
            ))
        ));
        assert!(matches!(
            build(learned("MIT", false), DEFAULT_ID),
            Some(EngineError::Admission(AdmissionError::NotLocal { .. }))
        ));
        assert_eq!(
            build(FakeBackend::scores(vec![]), "missing.v1"),
            Some(EngineError::UnknownDefaultProfile("missing.v1".into()))
        );
    }
}
