//! Aggregate: token scores to entity spans with Hugging Face token-classification semantics
//! (`simple`, `first`, `average`, `max`), then BIO grouping.

use super::infer::TokenScores;
use super::span::Span;
use crate::inference::LabelSet;

/// The interface's `aggregation_strategy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Aggregation {
    Simple,
    First,
    Average,
    Max,
}

/// One scored unit before grouping: a token (`simple`) or a word (the others).
#[derive(Debug, Clone)]
struct PreEntity {
    label: usize,
    score: f32,
    start: usize,
    end: usize,
}

fn argmax(v: &[f32]) -> (usize, f32) {
    v.iter()
        .copied()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |best, (i, x)| {
            if x > best.1 { (i, x) } else { best }
        })
}

/// Splits `B-X`/`I-X` (also `E-`, `S-`, `L-`, `U-`) into (begins, entity type); a bare label continues.
pub fn split_tag(label: &str) -> (bool, &str) {
    match label.split_once('-') {
        Some(("B" | "S" | "U", rest)) => (true, rest),
        Some(("I" | "E" | "L", rest)) => (false, rest),
        _ => (false, label),
    }
}

/// Entity spans in view byte offsets.
pub fn aggregate(scores: &TokenScores, labels: &LabelSet, strategy: Aggregation) -> Vec<Span> {
    let tokens = &scores.tokens;
    let mut pre = Vec::with_capacity(tokens.len());
    match strategy {
        Aggregation::Simple => {
            for t in 0..tokens.len() {
                let (label, score) = argmax(scores.token(t));
                let (start, end) = tokens.offsets[t];
                pre.push(PreEntity {
                    label,
                    score,
                    start,
                    end,
                });
            }
        }
        _ => {
            let mut t = 0;
            while t < tokens.len() {
                let mut u = t + 1;
                while u < tokens.len()
                    && tokens.words[u].is_some()
                    && tokens.words[u] == tokens.words[t]
                {
                    u += 1;
                }
                let (label, score) = match strategy {
                    Aggregation::First => argmax(scores.token(t)),
                    Aggregation::Max => (t..u)
                        .map(|i| argmax(scores.token(i)))
                        .fold((0, f32::NEG_INFINITY), |b, x| if x.1 > b.1 { x } else { b }),
                    _ => {
                        let mut mean = vec![0f32; scores.num_labels];
                        for i in t..u {
                            for (m, x) in mean.iter_mut().zip(scores.token(i)) {
                                *m += x;
                            }
                        }
                        let k = (u - t) as f32;
                        mean.iter_mut().for_each(|m| *m /= k);
                        argmax(&mean)
                    }
                };
                pre.push(PreEntity {
                    label,
                    score,
                    start: tokens.offsets[t].0,
                    end: tokens.offsets[u - 1].1,
                });
                t = u;
            }
        }
    }
    group(&pre, labels)
}

/// Hugging Face `group_entities`: consecutive units of one type join unless a unit begins anew;
/// the group's score is the mean of its units; `O` groups are dropped.
fn group(pre: &[PreEntity], labels: &LabelSet) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut current: Option<(String, Vec<f32>, usize, usize)> = None;
    let flush = |cur: Option<(String, Vec<f32>, usize, usize)>, out: &mut Vec<Span>| {
        if let Some((ty, scores, start, end)) = cur
            && ty != "O"
            && end > start
        {
            let score = scores.iter().sum::<f32>() / scores.len() as f32;
            out.push(Span::model(start, end, ty, score));
        }
    };
    for p in pre {
        let (begins, ty) = split_tag(labels.name(p.label));
        match &mut current {
            Some((cty, scores, _, end)) if !begins && cty == ty => {
                scores.push(p.score);
                *end = p.end;
            }
            _ => {
                flush(current.take(), &mut out);
                current = Some((ty.to_string(), vec![p.score], p.start, p.end));
            }
        }
    }
    flush(current, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::text::TextView;
    use crate::stages::tokens::Tokens;
    use std::sync::Arc;

    fn labels() -> LabelSet {
        LabelSet::new(vec![
            "O".into(),
            "B-PER".into(),
            "I-PER".into(),
            "B-LOC".into(),
            "I-LOC".into(),
        ])
    }

    /// "Ann Lee went" → tokens: An ##n Lee went (word ids 0 0 1 2).
    fn scores(rows: Vec<[f32; 5]>) -> TokenScores {
        let text = TextView::new(Arc::from("Ann Lee went"));
        let tokens = Tokens {
            text,
            ids: vec![1, 2, 3, 4],
            offsets: vec![(0, 2), (2, 3), (4, 7), (8, 12)],
            words: vec![Some(0), Some(0), Some(1), Some(2)],
            sentence_starts: vec![],
            sentence_bytes: vec![],
        };
        TokenScores {
            tokens,
            probs: rows.concat(),
            num_labels: 5,
            windows: 1,
        }
    }

    fn rows() -> Vec<[f32; 5]> {
        vec![
            [0.1, 0.7, 0.1, 0.1, 0.0], // An: B-PER
            [0.1, 0.0, 0.2, 0.7, 0.0], // ##n: B-LOC (disagrees with its word)
            [0.1, 0.0, 0.8, 0.1, 0.0], // Lee: I-PER
            [0.9, 0.0, 0.0, 0.1, 0.0], // went: O
        ]
    }

    fn triples(spans: &[Span]) -> Vec<(usize, usize, String, f32)> {
        spans
            .iter()
            .map(|s| {
                (
                    s.start,
                    s.end,
                    s.label.clone(),
                    (s.score * 100.0).round() / 100.0,
                )
            })
            .collect()
    }

    #[test]
    fn simple_groups_tokens_by_bio() {
        let s = aggregate(&scores(rows()), &labels(), Aggregation::Simple);
        assert_eq!(
            triples(&s),
            vec![
                (0, 2, "PER".into(), 0.7),
                (2, 3, "LOC".into(), 0.7),
                (4, 7, "PER".into(), 0.8)
            ]
        );
    }

    #[test]
    fn first_uses_the_first_piece_of_each_word() {
        let s = aggregate(&scores(rows()), &labels(), Aggregation::First);
        assert_eq!(triples(&s), vec![(0, 7, "PER".into(), 0.75)]);
    }

    #[test]
    fn max_uses_the_most_confident_piece() {
        let mut r = rows();
        r[1] = [0.0, 0.0, 0.0, 0.9, 0.1];
        let s = aggregate(&scores(r), &labels(), Aggregation::Max);
        // Word "Ann" becomes B-LOC (0.9); "Lee" is I-PER: a different type starts a new group.
        assert_eq!(
            triples(&s),
            vec![(0, 3, "LOC".into(), 0.9), (4, 7, "PER".into(), 0.8)]
        );
    }

    #[test]
    fn average_averages_piece_scores() {
        let s = aggregate(&scores(rows()), &labels(), Aggregation::Average);
        // Ann: mean = [0.1, 0.35, 0.15, 0.4, 0.0] → B-LOC 0.4; Lee: I-PER 0.8.
        assert_eq!(
            triples(&s),
            vec![(0, 3, "LOC".into(), 0.4), (4, 7, "PER".into(), 0.8)]
        );
    }

    #[test]
    fn tags_split() {
        assert_eq!(split_tag("B-GIVEN_NAME"), (true, "GIVEN_NAME"));
        assert_eq!(split_tag("I-X"), (false, "X"));
        assert_eq!(split_tag("first_name"), (false, "first_name"));
        assert_eq!(split_tag("S-X"), (true, "X"));
    }
}
