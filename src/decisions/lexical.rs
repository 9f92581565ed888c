//! The deterministic baseline backend: token overlap between the normalized input and each
//! option, plus a bonus when the whole option appears verbatim. No model, no state, so its scores
//! are reproducible and explainable; it abstains (via calibration) rather than guesses.
//!
//! Scalar mode reads the one standalone number in the text. Accepted forms (ASCII digits after
//! NFKC): `0`, `1`, `0.<digits>`, `1.<zeros>`, `.<digits>`. A token is a maximal run of word
//! characters joined by single dots (`\.?\w+(\.\w+)*`), so `10`, `0.5.1`, `v0.3`, `3rd` are one
//! token each; tokens of only digits and one dot are numbers, others are words and ignored.
//! A `+`/`-` right before a number makes it signed (never accepted). The text must hold exactly
//! one number and it must be an accepted form; otherwise the backend reports unsupported.

use std::collections::HashSet;
use std::sync::LazyLock;
use std::time::Instant;

use regex::Regex;

use super::backend::{
    Backend, BackendError, BackendIdentity, BackendKind, BackendOutput, BackendScores, ScoreInput,
};
use super::normalize::normalize;
use super::request::Mode;

pub const LEXICAL_BACKEND_ID: &str = "phiflow.deterministic.fixed_option.v1";

static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\w+").expect("constant pattern"));
static NUMBERISH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?P<sign>[+-])?(?P<token>\.?\w+(?:\.\w+)*)").expect("constant pattern")
});

/// Token-overlap scorer; see the module docs.
#[derive(Clone, Debug)]
pub struct LexicalBackend {
    identity: BackendIdentity,
}

impl Default for LexicalBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl LexicalBackend {
    pub fn new() -> Self {
        Self {
            identity: BackendIdentity {
                backend_id: LEXICAL_BACKEND_ID.to_string(),
                kind: BackendKind::Deterministic,
                runtime: "rust".to_string(),
                model_id: "phiflow/deterministic-fixed-option".to_string(),
                revision: "1.0.0".to_string(),
                license_id: "Apache-2.0".to_string(),
                local: true,
                deterministic: true,
            },
        }
    }
}

fn tokens(normalized: &str) -> HashSet<&str> {
    WORD.find_iter(normalized).map(|m| m.as_str()).collect()
}

/// `min(1, 0.05 + 0.80·coverage + 0.15·[option ⊂ input])` on normalized text, where coverage is
/// the share of the option's distinct tokens found in the input (0 for an option with no token).
pub fn option_score(normalized_input: &str, input_tokens: &HashSet<&str>, option: &str) -> f64 {
    let option = normalize(option);
    let option_tokens = tokens(&option);
    let coverage = if option_tokens.is_empty() {
        0.0
    } else {
        let shared = option_tokens.intersection(input_tokens).count();
        shared as f64 / option_tokens.len() as f64
    };
    let contained = !option.is_empty() && normalized_input.contains(&option);
    let bonus = if contained { 0.15 } else { 0.0 };
    (0.05 + 0.80 * coverage + bonus).min(1.0)
}

/// The single standalone number in [0, 1] in `text`, if there is exactly one number at all.
pub fn scalar_value(text: &str) -> Option<f64> {
    let normalized = normalize(text);
    let mut numbers = NUMBERISH.captures_iter(&normalized).filter_map(|caps| {
        let token = caps.name("token")?.as_str();
        let is_number = token.chars().any(|c| c.is_ascii_digit())
            && token.chars().all(|c| c.is_ascii_digit() || c == '.')
            && token.matches('.').count() <= 1;
        is_number.then(|| (caps.name("sign").is_some(), token))
    });
    let (signed, token) = numbers.next()?;
    if numbers.next().is_some() || signed || !accepted_form(token) {
        return None;
    }
    format!("0{token}").parse::<f64>().ok()
}

/// `0`, `1`, `0.d+`, `1.0+`, `.d+`.
fn accepted_form(token: &str) -> bool {
    let (int, frac) = token.split_once('.').unwrap_or((token, ""));
    let has_dot = token.contains('.');
    match int {
        "0" | "" => !has_dot || !frac.is_empty(),
        "1" => frac.chars().all(|c| c == '0') && (!has_dot || !frac.is_empty()),
        _ => false,
    }
}

impl Backend for LexicalBackend {
    fn identity(&self) -> &BackendIdentity {
        &self.identity
    }

    fn score(
        &self,
        input: &ScoreInput<'_>,
        _deadline: Instant,
    ) -> Result<BackendOutput, BackendError> {
        let scores = if input.mode == Mode::ScalarScore {
            let value = scalar_value(input.input_text).ok_or(BackendError::Unsupported {
                reason: "input text does not hold exactly one standalone number in [0, 1]",
            })?;
            BackendScores::Scalar {
                value,
                confidence: 1.0,
            }
        } else {
            let normalized = normalize(input.input_text);
            let input_tokens = tokens(&normalized);
            BackendScores::Options(
                input
                    .options
                    .iter()
                    .map(|o| option_score(&normalized, &input_tokens, o))
                    .collect(),
            )
        };
        Ok(BackendOutput {
            scores,
            calibration_id: input.calibration_id.to_string(),
            warnings: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn score(input: &str, option: &str) -> f64 {
        let n = normalize(input);
        option_score(&n, &tokens(&n), option)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn option_scores_by_hand() {
        let text = "Patient reports Chest  Pain since morning";
        // {chest, pain} both shared → coverage 1; "chest pain" ⊂ input → 0.05+0.80+0.15 = 1.0
        assert!(close(score(text, "chest pain"), 1.0));
        // coverage 1, not a substring (order differs) → 0.85
        assert!(close(score(text, "pain chest"), 0.85));
        // {chest, tightness}: 1 of 2 → 0.05 + 0.40 = 0.45
        assert!(close(score(text, "Chest tightness"), 0.45));
        // no shared token, not a substring → 0.05
        assert!(close(score(text, "headache"), 0.05));
        // tokens {est, pa} not shared, but "est pa" ⊂ "chest pain" → 0.05 + 0.15 = 0.20
        assert!(close(score(text, "est pa"), 0.20));
        // no tokens at all → coverage 0 → 0.05
        assert!(close(score(text, "!!!"), 0.05));
        // 1 of 3 tokens → 0.05 + 0.80/3
        assert!(close(
            score("discharge to home", "transfer to facility"),
            0.05 + 0.8 / 3.0
        ));
        // NFKC + case folding: fullwidth and ß
        assert!(close(
            score("ＦＯＬＬＯＷ ｕｐ, Straße", "follow up strasse"),
            0.85
        ));
    }

    #[test]
    fn scalar_forms() {
        let cases: [(&str, Option<f64>); 22] = [
            ("risk is 0.35 today", Some(0.35)),
            ("risk 0.35.", Some(0.35)),
            ("score 1", Some(1.0)),
            ("score 1.0", Some(1.0)),
            ("score 1.00", Some(1.0)),
            ("score .5", Some(0.5)),
            ("score 0", Some(0.0)),
            ("(0.8)", Some(0.8)),
            ("estimate １", Some(1.0)),
            ("v0.3 says 0.8", Some(0.8)),
            ("build 0.5.1 says 0.2", Some(0.2)),
            ("score 10", None),
            ("version 0.5.1", None),
            ("v0.3", None),
            ("0.2 and 0.4", None),
            ("-0.5", None),
            ("+0.5", None),
            ("1.5", None),
            ("0.5 out of 10", None),
            ("01", None),
            ("0,5", None),
            ("no number here", None),
        ];
        for (text, want) in cases {
            assert_eq!(scalar_value(text), want, "{text}");
        }
        assert_eq!(scalar_value("1.01"), None);
        assert_eq!(scalar_value("3rd visit, risk 0.4"), Some(0.4));
    }

    #[test]
    fn backend_identity_and_scoring() {
        let backend: Arc<dyn Backend> = Arc::new(LexicalBackend::new());
        let id = backend.identity();
        assert_eq!(id.backend_id, "phiflow.deterministic.fixed_option.v1");
        assert_eq!(id.kind, BackendKind::Deterministic);
        assert_eq!(
            (
                id.runtime.as_str(),
                id.model_id.as_str(),
                id.revision.as_str(),
                id.license_id.as_str()
            ),
            (
                "rust",
                "phiflow/deterministic-fixed-option",
                "1.0.0",
                "Apache-2.0"
            )
        );
        assert!(id.local && id.deterministic);
        let options = vec!["chest pain".to_string(), "headache".to_string()];
        let input = ScoreInput {
            mode: Mode::FixedChoice,
            input_text: "chest pain",
            options: &options,
            calibration_id: "cal.x",
        };
        let out = backend.score(&input, Instant::now());
        assert_eq!(
            out,
            Ok(BackendOutput {
                scores: BackendScores::Options(vec![1.0, 0.05]),
                calibration_id: "cal.x".into(),
                warnings: vec![],
            })
        );
        let scalar = ScoreInput {
            mode: Mode::ScalarScore,
            input_text: "about 0.25",
            options: &[],
            ..input
        };
        assert_eq!(
            backend.score(&scalar, Instant::now()).map(|o| o.scores),
            Ok(BackendScores::Scalar {
                value: 0.25,
                confidence: 1.0
            })
        );
        let none = ScoreInput {
            input_text: "none",
            ..scalar
        };
        assert!(matches!(
            backend.score(&none, Instant::now()),
            Err(BackendError::Unsupported { .. })
        ));
    }
}
