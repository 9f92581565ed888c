//! The encoder backend: options scored by cosine similarity between the sentence embedding of
//! the input text and that of each option (all-MiniLM-L6-v2 by default, run in-process).
//! Single-choice modes turn the similarities into a distribution (softmax at a fixed
//! temperature), scaled down when even the best option is barely related to the text: a
//! softmax alone would pick confidently among options that are all irrelevant. Multi-label
//! keeps each similarity on its own. A scalar cannot be read from embeddings.

use std::path::Path;
use std::time::Instant;

use super::backend::{
    Backend, BackendError, BackendIdentity, BackendKind, BackendOutput, BackendScores, ScoreInput,
};
use super::encoder::{Encoder, EncoderError};
use super::request::Mode;

/// The profile this backend's scores are calibrated for.
pub const ENCODER_PROFILE: &str = "phiflow.minilm.fixed_option.v1";
/// Softmax temperature over cosine similarities (part of the calibration: changing it
/// changes what the profile's thresholds mean).
const TEMPERATURE: f64 = 0.05;
/// Best-option cosine at and below which nothing is related (scores 0), and from which the
/// distribution counts in full; linear in between.
const UNRELATED: f64 = 0.15;
const RELATED: f64 = 0.35;

pub struct EncoderBackend {
    encoder: Encoder,
    identity: BackendIdentity,
}

impl EncoderBackend {
    /// Loads the model; its identity comes from the model directory's `phiflow-model.json`.
    pub fn load(dir: &Path) -> Result<Self, EncoderError> {
        let encoder = Encoder::load(dir)?;
        let info = encoder.info();
        let identity = BackendIdentity {
            backend_id: "phiflow.encoder.fixed_option.v1".into(),
            kind: BackendKind::Encoder,
            runtime: "phiflow-bert-f32".into(),
            model_id: info.model_id.clone(),
            revision: info.revision.clone().unwrap_or_else(|| "unknown".into()),
            license_id: info.license.clone().unwrap_or_else(|| "unknown".into()),
            local: true,
            deterministic: true,
        };
        Ok(Self { encoder, identity })
    }
}

/// Single-choice scores: the softmax, times how related the best option is at all.
fn single_choice(cosines: &[f64]) -> Vec<f64> {
    let best = cosines.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let relevance = ((best - UNRELATED) / (RELATED - UNRELATED)).clamp(0.0, 1.0);
    softmax(cosines)
        .into_iter()
        .map(|p| p * relevance)
        .collect()
}

fn softmax(xs: &[f64]) -> Vec<f64> {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exp: Vec<f64> = xs.iter().map(|x| ((x - max) / TEMPERATURE).exp()).collect();
    let sum: f64 = exp.iter().sum();
    exp.iter().map(|e| e / sum).collect()
}

impl Backend for EncoderBackend {
    fn identity(&self) -> &BackendIdentity {
        &self.identity
    }

    fn score(
        &self,
        input: &ScoreInput<'_>,
        deadline: Instant,
    ) -> Result<BackendOutput, BackendError> {
        if input.mode == Mode::ScalarScore {
            return Err(BackendError::Unsupported {
                reason: "an encoder cannot read a scalar",
            });
        }
        let texts: Vec<&str> = std::iter::once(input.input_text)
            .chain(input.options.iter().map(String::as_str))
            .collect();
        let embedded = self
            .encoder
            .embed_detailed(&texts, Some(deadline))
            .map_err(|e| match e {
                EncoderError::DeadlineExceeded => BackendError::DeadlineExceeded,
                other => BackendError::Failure {
                    reason: other.to_string(),
                },
            })?;
        let (text, options) =
            embedded
                .vectors
                .split_first()
                .ok_or_else(|| BackendError::Failure {
                    reason: "no embedding".into(),
                })?;
        // Embeddings are L2-normalized: the dot product is the cosine.
        let cosines: Vec<f64> = options
            .iter()
            .map(|o| text.iter().zip(o).map(|(a, b)| f64::from(a * b)).sum())
            .collect();
        let scores = match input.mode {
            Mode::MultiLabel => cosines.iter().map(|c| c.clamp(0.0, 1.0)).collect(),
            _ => single_choice(&cosines),
        };
        let mut warnings = Vec::new();
        if embedded.truncated.first().copied().unwrap_or(false) {
            warnings.push("input_truncated".to_owned());
        }
        if embedded.truncated.iter().skip(1).any(|t| *t) {
            warnings.push("option_truncated".to_owned());
        }
        Ok(BackendOutput {
            scores: BackendScores::Options(scores),
            calibration_id: ENCODER_PROFILE.to_owned(),
            warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_is_a_distribution_that_keeps_order() {
        let p = softmax(&[0.5, 0.4, 0.1]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(p[0] > p[1] && p[1] > p[2]);
        // 0.1 apart at temperature 0.05: a ratio of e².
        assert!((p[0] / p[1] - std::f64::consts::E.powi(2)).abs() < 1e-9);
    }

    #[test]
    fn unrelated_options_score_nothing() {
        assert_eq!(single_choice(&[0.15, 0.05]), vec![0.0, 0.0]);
        // Half-way between UNRELATED and RELATED: the distribution at half weight.
        let half = single_choice(&[0.25, 0.25]);
        assert!(half.iter().all(|p| (p - 0.25).abs() < 1e-12), "{half:?}");
        let full = single_choice(&[0.6, 0.6]);
        assert!(full.iter().all(|p| (p - 0.5).abs() < 1e-12), "{full:?}");
    }
}
