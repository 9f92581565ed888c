//! Turns validated backend scores into an outcome with a calibrated rule: rank, take the top
//! score as confidence and the gap to the runner-up as margin, and abstain unless both clear the
//! profile's thresholds (multi-label: any score at the label threshold). Threshold comparisons
//! allow `TOLERANCE` so float noise (0.95 − 0.80 = 0.1499…) does not flip a boundary case.

use super::outcome::{AbstainCode, FailureCode, Outcome, Selection};
use super::request::Mode;
use super::result::OptionScore;

/// Slack on every `≥ threshold` comparison.
pub const TOLERANCE: f64 = 1e-9;

/// A profile's decision thresholds, each in [0, 1].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    pub minimum_confidence: f64,
    pub minimum_margin: f64,
    pub multi_label_threshold: f64,
}

/// Everything scoring contributes to a result.
#[derive(Clone, Debug, PartialEq)]
pub struct Scored {
    pub outcome: Outcome,
    pub option_scores: Vec<OptionScore>,
    pub ranking: Vec<usize>,
    pub confidence: f64,
    pub margin: f64,
}

impl Scored {
    /// An outcome reached without usable scores: no scores, ranking, confidence or margin.
    pub fn unscored(outcome: Outcome) -> Self {
        Self {
            outcome,
            option_scores: Vec::new(),
            ranking: Vec::new(),
            confidence: 0.0,
            margin: 0.0,
        }
    }
}

fn at_least(value: f64, threshold: f64) -> bool {
    value + TOLERANCE >= threshold
}

/// Option indices by score descending, ties by input index.
pub fn ranking(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order
}

/// Scores for option modes (all but `scalar_score`); scores must be finite and in [0, 1].
pub fn score_options(mode: Mode, options: &[String], scores: &[f64], t: Thresholds) -> Scored {
    if mode == Mode::ScalarScore || options.is_empty() || options.len() != scores.len() {
        return Scored::unscored(Outcome::Failure(FailureCode::BackendContractInvalid));
    }
    let ranking = ranking(scores);
    let score_at = |rank: usize| ranking.get(rank).map(|&i| scores[i]);
    let confidence = score_at(0).unwrap_or(0.0);
    let margin = score_at(1).map_or(confidence, |second| confidence - second);
    let outcome = match mode {
        Mode::MultiLabel => {
            let choices: Vec<String> = options
                .iter()
                .zip(scores)
                .filter(|&(_, &s)| at_least(s, t.multi_label_threshold))
                .map(|(o, _)| o.clone())
                .collect();
            match choices.first() {
                None => Outcome::Abstained(AbstainCode::NoLabelAboveThreshold),
                Some(first) => Outcome::Success(Selection {
                    choice: Some(first.clone()),
                    choices,
                    scalar_score: None,
                }),
            }
        }
        _ if !at_least(confidence, t.minimum_confidence) => {
            Outcome::Abstained(AbstainCode::LowConfidence)
        }
        _ if !at_least(margin, t.minimum_margin) => {
            Outcome::Abstained(AbstainCode::AmbiguousScores)
        }
        _ => {
            let by_rank = |i: &usize| options[*i].clone();
            let choices: Vec<String> = match mode {
                Mode::OrderedPreference => ranking.iter().map(by_rank).collect(),
                _ => ranking.first().map(by_rank).into_iter().collect(),
            };
            Outcome::Success(Selection {
                choice: choices.first().cloned(),
                choices,
                scalar_score: None,
            })
        }
    };
    let option_scores = options
        .iter()
        .zip(scores)
        .enumerate()
        .map(|(index, (option, &score))| OptionScore {
            index,
            option: option.clone(),
            score,
        })
        .collect();
    Scored {
        outcome,
        option_scores,
        ranking,
        confidence,
        margin,
    }
}

/// `scalar_score` mode: success iff the backend's confidence clears the minimum.
pub fn score_scalar(value: f64, confidence: f64, t: Thresholds) -> Scored {
    let outcome = if at_least(confidence, t.minimum_confidence) {
        Outcome::Success(Selection {
            choice: None,
            choices: Vec::new(),
            scalar_score: Some(value),
        })
    } else {
        Outcome::Abstained(AbstainCode::LowConfidence)
    };
    Scored {
        outcome,
        option_scores: Vec::new(),
        ranking: Vec::new(),
        confidence,
        margin: confidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Thresholds = Thresholds {
        minimum_confidence: 0.70,
        minimum_margin: 0.15,
        multi_label_threshold: 0.70,
    };

    fn opts(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("o{i}")).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn ranking_desc_ties_by_index() {
        assert_eq!(ranking(&[0.2, 0.9, 0.9, 0.1]), [1, 2, 0, 3]);
        assert_eq!(ranking(&[0.5, 0.5, 0.5]), [0, 1, 2]);
        assert!(ranking(&[]).is_empty());
    }

    #[test]
    fn fixed_choice_success() {
        let s = score_options(Mode::FixedChoice, &opts(3), &[0.45, 1.0, 0.05], T);
        assert_eq!(
            s.outcome,
            Outcome::Success(Selection {
                choice: Some("o1".into()),
                choices: vec!["o1".into()],
                scalar_score: None,
            })
        );
        assert_eq!(s.ranking, [1, 0, 2]);
        assert!(close(s.confidence, 1.0) && close(s.margin, 0.55));
        assert_eq!(
            s.option_scores[2],
            OptionScore {
                index: 2,
                option: "o2".into(),
                score: 0.05
            }
        );
    }

    #[test]
    fn low_confidence_is_checked_before_ambiguity() {
        // confidence 0.5 < 0.70 although margin 0.4 ≥ 0.15
        let s = score_options(Mode::BooleanChoice, &opts(2), &[0.5, 0.1], T);
        assert_eq!(s.outcome, Outcome::Abstained(AbstainCode::LowConfidence));
        // confidence 0.6 and margin 0.0: both fail, low_confidence wins
        let s = score_options(Mode::FixedChoice, &opts(2), &[0.6, 0.6], T);
        assert_eq!(s.outcome, Outcome::Abstained(AbstainCode::LowConfidence));
        // confidence 0.9, margin 0.1 < 0.15
        let s = score_options(Mode::FixedChoice, &opts(2), &[0.8, 0.9], T);
        assert_eq!(s.outcome, Outcome::Abstained(AbstainCode::AmbiguousScores));
        assert!(close(s.margin, 0.1));
        // Abstentions keep the scores and ranking for the reviewer.
        assert_eq!(s.ranking, [1, 0]);
        assert_eq!(s.option_scores.len(), 2);
    }

    #[test]
    fn boundaries_are_inclusive() {
        // 0.95 − 0.80 is 0.1499999999999999 in binary; the tolerance keeps the boundary inclusive.
        let s = score_options(Mode::FixedChoice, &opts(2), &[0.95, 0.80], T);
        assert_eq!(s.outcome.code(), None);
        let s = score_options(Mode::FixedChoice, &opts(2), &[0.70, 0.55], T);
        assert_eq!(s.outcome.code(), None);
        let s = score_options(Mode::FixedChoice, &opts(2), &[0.95, 0.8001], T);
        assert_eq!(s.outcome, Outcome::Abstained(AbstainCode::AmbiguousScores));
        let s = score_options(Mode::FixedChoice, &opts(2), &[0.6999, 0.0], T);
        assert_eq!(s.outcome, Outcome::Abstained(AbstainCode::LowConfidence));
    }

    #[test]
    fn ordered_preference_lists_ranking() {
        let s = score_options(Mode::OrderedPreference, &opts(3), &[0.05, 1.0, 0.05], T);
        let sel = s.outcome.selection().cloned().unwrap_or_default();
        assert_eq!(sel.choice.as_deref(), Some("o1"));
        assert_eq!(sel.choices, ["o1", "o0", "o2"]);
    }

    #[test]
    fn multi_label() {
        let s = score_options(Mode::MultiLabel, &opts(3), &[0.9, 0.2, 0.7], T);
        assert_eq!(
            s.outcome,
            Outcome::Success(Selection {
                choice: Some("o0".into()),
                choices: vec!["o0".into(), "o2".into()],
                scalar_score: None,
            })
        );
        assert_eq!(s.ranking, [0, 2, 1]);
        assert!(close(s.confidence, 0.9) && close(s.margin, 0.2));
        // Multi-label ignores the margin rule: two equal scores above threshold both count.
        let s = score_options(Mode::MultiLabel, &opts(2), &[1.0, 1.0], T);
        assert_eq!(s.outcome.selection().map(|x| x.choices.len()), Some(2));
        let s = score_options(Mode::MultiLabel, &opts(2), &[0.69, 0.1], T);
        assert_eq!(
            s.outcome,
            Outcome::Abstained(AbstainCode::NoLabelAboveThreshold)
        );
    }

    #[test]
    fn scalar() {
        let s = score_scalar(0.4, 1.0, T);
        assert_eq!(
            s.outcome.selection().and_then(|x| x.scalar_score),
            Some(0.4)
        );
        assert!(close(s.confidence, 1.0) && close(s.margin, 1.0));
        let s = score_scalar(0.4, 0.5, T);
        assert_eq!(s.outcome, Outcome::Abstained(AbstainCode::LowConfidence));
        assert!(close(s.margin, 0.5));
    }

    #[test]
    fn single_option_margin_is_confidence_and_bad_shapes_fail() {
        let s = score_options(Mode::FixedChoice, &opts(1), &[0.8], T);
        assert!(close(s.margin, 0.8));
        let bad = Outcome::Failure(FailureCode::BackendContractInvalid);
        assert_eq!(
            score_options(Mode::FixedChoice, &opts(2), &[0.8], T).outcome,
            bad
        );
        assert_eq!(
            score_options(Mode::ScalarScore, &opts(1), &[0.8], T).outcome,
            bad
        );
        assert_eq!(score_options(Mode::MultiLabel, &[], &[], T).outcome, bad);
    }
}
