//! The decision outcome: a state and, for non-success states, a code from that state's own
//! family, so a wrong pairing (e.g. `denied` + `low_confidence`) cannot be built. Only
//! `Success` carries a selection (choice, choices, scalar score).

use serde::{Deserialize, Serialize};
use thiserror::Error;

macro_rules! code_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            pub fn parse(text: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|c| c.as_str() == text)
            }
        }
    };
}

code_enum!(
    /// The flat `state` field.
    State {
        Success => "success",
        Abstained => "abstained",
        Unsupported => "unsupported",
        Denied => "denied",
        Conflict => "conflict",
        Failure => "failure",
    }
);
code_enum!(
    /// The backend scored, but the calibrated rule does not let it decide.
    AbstainCode {
        LowConfidence => "low_confidence",
        AmbiguousScores => "ambiguous_scores",
        NoLabelAboveThreshold => "no_label_above_threshold",
    }
);
code_enum!(
    /// The request cannot be served by this deployment.
    UnsupportedCode {
        CalibrationUnavailable => "calibration_unavailable",
        BackendUnsupported => "backend_unsupported",
    }
);
code_enum!(
    /// The access policy refused the request.
    DenyCode {
        NamespaceDenied => "namespace_denied",
        PurposeDenied => "purpose_denied",
        BackendDenied => "backend_denied",
    }
);
code_enum!(
    /// The backend disagrees with what was asked (state, calibration).
    ConflictCode {
        BackendConflict => "backend_conflict",
        CalibrationMismatch => "calibration_mismatch",
    }
);
code_enum!(
    /// The backend did not produce a usable answer.
    FailureCode {
        BackendTimeout => "backend_timeout",
        BackendFailure => "backend_failure",
        BackendContractInvalid => "backend_contract_invalid",
    }
);

/// What a successful decision selected; empty parts are `None`/`[]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    pub choice: Option<String>,
    pub choices: Vec<String>,
    pub scalar_score: Option<f64>,
}

impl Selection {
    pub fn is_empty(&self) -> bool {
        self.choice.is_none() && self.choices.is_empty() && self.scalar_score.is_none()
    }
}

/// State plus code, typed per state.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Success(Selection),
    Abstained(AbstainCode),
    Unsupported(UnsupportedCode),
    Denied(DenyCode),
    Conflict(ConflictCode),
    Failure(FailureCode),
}

/// A flat `state`/`code`/selection triple that is not a valid outcome. Never names the values.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum OutcomeError {
    #[error("state {state} does not allow this code")]
    CodeNotAllowed { state: &'static str },
    #[error("state {state} requires a code")]
    CodeMissing { state: &'static str },
    #[error("only state success may carry choice, choices or scalar_score")]
    SelectionOnNonSuccess,
}

impl Outcome {
    pub fn state(&self) -> State {
        match self {
            Outcome::Success(_) => State::Success,
            Outcome::Abstained(_) => State::Abstained,
            Outcome::Unsupported(_) => State::Unsupported,
            Outcome::Denied(_) => State::Denied,
            Outcome::Conflict(_) => State::Conflict,
            Outcome::Failure(_) => State::Failure,
        }
    }

    /// `None` exactly for success.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            Outcome::Success(_) => None,
            Outcome::Abstained(c) => Some(c.as_str()),
            Outcome::Unsupported(c) => Some(c.as_str()),
            Outcome::Denied(c) => Some(c.as_str()),
            Outcome::Conflict(c) => Some(c.as_str()),
            Outcome::Failure(c) => Some(c.as_str()),
        }
    }

    pub fn selection(&self) -> Option<&Selection> {
        match self {
            Outcome::Success(s) => Some(s),
            _ => None,
        }
    }

    /// Rebuilds an outcome from the flat wire fields, refusing wrong pairings.
    pub fn from_parts(
        state: State,
        code: Option<&str>,
        selection: Selection,
    ) -> Result<Outcome, OutcomeError> {
        let name = state.as_str();
        if state == State::Success {
            return match code {
                None => Ok(Outcome::Success(selection)),
                Some(_) => Err(OutcomeError::CodeNotAllowed { state: name }),
            };
        }
        if !selection.is_empty() {
            return Err(OutcomeError::SelectionOnNonSuccess);
        }
        let code = code.ok_or(OutcomeError::CodeMissing { state: name })?;
        let outcome = match state {
            State::Abstained => AbstainCode::parse(code).map(Outcome::Abstained),
            State::Unsupported => UnsupportedCode::parse(code).map(Outcome::Unsupported),
            State::Denied => DenyCode::parse(code).map(Outcome::Denied),
            State::Conflict => ConflictCode::parse(code).map(Outcome::Conflict),
            State::Failure => FailureCode::parse(code).map(Outcome::Failure),
            State::Success => None,
        };
        outcome.ok_or(OutcomeError::CodeNotAllowed { state: name })
    }
}

/// Every code a non-success state may carry, by state (for schemas and tests).
pub fn codes_by_state() -> Vec<(State, Vec<&'static str>)> {
    fn names<T: Copy>(all: &[T], f: fn(T) -> &'static str) -> Vec<&'static str> {
        all.iter().copied().map(f).collect()
    }
    vec![
        (
            State::Abstained,
            names(AbstainCode::ALL, AbstainCode::as_str),
        ),
        (
            State::Unsupported,
            names(UnsupportedCode::ALL, UnsupportedCode::as_str),
        ),
        (State::Denied, names(DenyCode::ALL, DenyCode::as_str)),
        (
            State::Conflict,
            names(ConflictCode::ALL, ConflictCode::as_str),
        ),
        (State::Failure, names(FailureCode::ALL, FailureCode::as_str)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_contract_names() {
        let all: Vec<&str> = codes_by_state().into_iter().flat_map(|(_, c)| c).collect();
        assert_eq!(
            all,
            [
                "low_confidence",
                "ambiguous_scores",
                "no_label_above_threshold",
                "calibration_unavailable",
                "backend_unsupported",
                "namespace_denied",
                "purpose_denied",
                "backend_denied",
                "backend_conflict",
                "calibration_mismatch",
                "backend_timeout",
                "backend_failure",
                "backend_contract_invalid",
            ]
        );
        assert_eq!(
            serde_json::to_value(DenyCode::BackendDenied).ok(),
            Some("backend_denied".into())
        );
        assert_eq!(
            serde_json::to_value(State::Abstained).ok(),
            Some("abstained".into())
        );
    }

    #[test]
    fn state_and_code() {
        let o = Outcome::Failure(FailureCode::BackendTimeout);
        assert_eq!(
            (o.state(), o.code()),
            (State::Failure, Some("backend_timeout"))
        );
        let s = Outcome::Success(Selection::default());
        assert_eq!((s.state(), s.code()), (State::Success, None));
    }

    #[test]
    fn from_parts_refuses_wrong_pairings() {
        let none = Selection::default();
        assert_eq!(
            Outcome::from_parts(State::Denied, Some("purpose_denied"), none.clone()),
            Ok(Outcome::Denied(DenyCode::PurposeDenied))
        );
        assert_eq!(
            Outcome::from_parts(State::Denied, Some("low_confidence"), none.clone()),
            Err(OutcomeError::CodeNotAllowed { state: "denied" })
        );
        assert_eq!(
            Outcome::from_parts(State::Success, Some("low_confidence"), none.clone()),
            Err(OutcomeError::CodeNotAllowed { state: "success" })
        );
        assert_eq!(
            Outcome::from_parts(State::Failure, None, none.clone()),
            Err(OutcomeError::CodeMissing { state: "failure" })
        );
        let chosen = Selection {
            choice: Some("a".into()),
            ..Selection::default()
        };
        assert_eq!(
            Outcome::from_parts(State::Abstained, Some("low_confidence"), chosen.clone()),
            Err(OutcomeError::SelectionOnNonSuccess)
        );
        assert_eq!(
            Outcome::from_parts(State::Success, None, chosen.clone()),
            Ok(Outcome::Success(chosen))
        );
    }
}
