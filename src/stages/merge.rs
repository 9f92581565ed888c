//! Merge: turns raw model spans into whole, clean entities.
//!
//! Steps, in order: join word pieces of one type that touch (the model may tag each piece `B-`);
//! drop spans under the confidence threshold; widen spans that cut a word to the whole word;
//! trim surrounding whitespace; drop name and place spans that are eponyms (a single word
//! followed by "disease", "'s syndrome", "sign", "reflex"… is a clinical term, not a person;
//! "advanced Alzheimer's" too); optionally group same-type neighbours (gap of at most 2
//! characters, no line break, same sentence) and smart-merge fragments of one identifier (gap of
//! separators only); finally resolve overlaps, so no character belongs to two spans.

use super::span::{Span, Spans};

/// What the merge stage does, from the pipeline and the request.
#[derive(Clone, Copy, Debug)]
pub struct MergeParams {
    pub join_pieces: bool,
    pub snap_to_words: bool,
    pub group_entities: bool,
    pub smart_merging: bool,
    pub threshold: f32,
}

pub fn merge(mut spans: Spans, p: MergeParams) -> Spans {
    let text = spans.original.clone();
    let mut v = std::mem::take(&mut spans.spans);
    v.sort_by_key(|s| (s.start, s.end));
    if p.join_pieces {
        v = join_while(v, |a, b| a.label == b.label && b.start <= a.end);
    }
    v.retain(|s| s.score >= p.threshold);
    if p.snap_to_words {
        for s in &mut v {
            snap(&text, s);
        }
    }
    for s in &mut v {
        trim(&text, s);
    }
    v.retain(|s| s.end > s.start && !is_eponym(&text, s));
    v.sort_by_key(|s| (s.start, s.end));
    if p.group_entities {
        let starts = &spans.sentence_starts;
        v = join_while(v, |a, b| {
            a.label == b.label && b.start >= a.end && {
                let gap = &text[a.end..b.start];
                gap.chars().count() <= 2
                    && !gap.contains(['\n', '\r'])
                    && !crosses(starts, a.end, b.start)
            }
        });
    }
    if p.smart_merging {
        v = join_while(v, |a, b| {
            a.label == b.label && b.start >= a.end && {
                let gap = &text[a.end..b.start];
                gap.chars().count() <= 3
                    && gap
                        .chars()
                        .all(|c| matches!(c, ' ' | '-' | '.' | '/' | '(' | ')' | '_'))
            }
        });
    }
    spans.spans = resolve_overlaps(v);
    spans
}

/// Words that make the name before them a clinical eponym ("Parkinson's disease", "Babinski
/// sign", "Hodgkin lymphoma", "Foley catheter"). `eponym_head` in en_recall.toml is the same
/// list for the recognizers.
const EPONYM_HEADS: &[&str] = &[
    "disease",
    "diseases",
    "syndrome",
    "syndromes",
    "sign",
    "signs",
    "reflex",
    "reflexes",
    "palsy",
    "phenomenon",
    "maneuver",
    "manoeuvre",
    "test",
    "criteria",
    "score",
    "scale",
    "classification",
    "angina",
    "lymphoma",
    "sarcoma",
    "tumor",
    "tumour",
    "ulcer",
    "contracture",
    "node",
    "nodes",
    "esophagus",
    "oesophagus",
    "encephalopathy",
    "disorder",
    "dystrophy",
    "triad",
    "fracture",
    "cyst",
    "hernia",
    "anomaly",
    "body",
    "bodies",
    "cell",
    "cells",
    "thyroiditis",
    "arteritis",
    "dementia",
    "chorea",
    "ataxia",
    "neuralgia",
    "neuroma",
    "formula",
    "equation",
    "solution",
    "procedure",
    "operation",
    "repair",
    "incision",
    "position",
    "stain",
    "staging",
    "index",
    "catheter",
    "monitor",
    "drain",
    "tube",
    "stockings",
    "splint",
    "pump",
];

/// Diseases named by a person and often written without their head noun ("advanced
/// Alzheimer's", "a history of Crohn's").
const EPONYM_DISEASES: &[&str] = &[
    "Alzheimer",
    "Parkinson",
    "Huntington",
    "Crohn",
    "Hodgkin",
    "Addison",
    "Cushing",
    "Hashimoto",
    "Asperger",
    "Tourette",
    "Raynaud",
    "Sjogren",
    "Sjögren",
    "Meniere",
    "Ménière",
    "Kawasaki",
    "Graves",
];

/// Titles that make the possessive after them a person's ("Mr. Parkinson's wife"), and a line
/// starting with one a person's (letterheads).
pub(super) const TITLES: &[&str] = &["Mr", "Mrs", "Ms", "Miss", "Dr", "Prof"];

/// A model span of one word, a name or a place, directly followed (after an optional "'s") by an
/// eponym head ("Babinski sign", "Lyme disease"), or a disease eponym with its "'s" and no
/// title before it ("advanced Alzheimer's").
fn is_eponym(text: &str, s: &Span) -> bool {
    let class = crate::deid::canonical_label(&s.label).hipaa_class;
    let word = &text[s.start..s.end];
    if !matches!(class, "A_NAMES" | "B_GEOGRAPHIC") || word.contains(char::is_whitespace) {
        return false;
    }
    let rest = &text[s.end..];
    let after_possessive = ["'s", "’s"].iter().find_map(|p| rest.strip_prefix(p));
    if after_possessive.is_some()
        && EPONYM_DISEASES.contains(&word)
        && !text[..s.start]
            .trim_end_matches([' ', '.'])
            .rsplit(|c: char| !c.is_alphabetic())
            .next()
            .is_some_and(|w| TITLES.contains(&w))
    {
        return true;
    }
    let rest = after_possessive
        .or_else(|| ["'", "’"].iter().find_map(|p| rest.strip_prefix(p)))
        .unwrap_or(rest);
    let Some(rest) = rest.strip_prefix([' ', '\t']) else {
        return false;
    };
    let word_end = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    let head = &rest[..word_end];
    EPONYM_HEADS.iter().any(|h| h.eq_ignore_ascii_case(head))
}

/// Whether a sentence starts inside `(from, to]`.
fn crosses(starts: &[usize], from: usize, to: usize) -> bool {
    let i = starts.partition_point(|&s| s <= from);
    starts.get(i).is_some_and(|&s| s <= to)
}

/// Joins each span into its predecessor while `joinable(prev, next)`; the joined score is the
/// length-weighted mean, so a long confident piece is not diluted by a short one.
fn join_while(v: Vec<Span>, joinable: impl Fn(&Span, &Span) -> bool) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::with_capacity(v.len());
    for s in v {
        match out.last_mut() {
            Some(prev) if joinable(prev, &s) => {
                let (a, b) = ((prev.end - prev.start) as f32, (s.end - s.start) as f32);
                prev.score = if a + b > 0.0 {
                    (prev.score * a + s.score * b) / (a + b)
                } else {
                    prev.score
                };
                prev.end = prev.end.max(s.end);
                if s.source != prev.source {
                    prev.source = super::span::Source::Both;
                }
            }
            _ => out.push(s),
        }
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// Widens a span that starts or ends inside a word to the whole word: a partial identifier
/// left in the text is a leak.
fn snap(text: &str, s: &mut Span) {
    while let Some(c) = text[..s.start].chars().next_back() {
        let inside = text[s.start..].chars().next().is_some_and(is_word_char);
        if is_word_char(c) && inside {
            s.start -= c.len_utf8();
        } else {
            break;
        }
    }
    while let Some(c) = text[s.end..].chars().next() {
        let inside = text[..s.end].chars().next_back().is_some_and(is_word_char);
        if is_word_char(c) && inside {
            s.end += c.len_utf8();
        } else {
            break;
        }
    }
}

fn trim(text: &str, s: &mut Span) {
    let inner = &text[s.start..s.end];
    let lead = inner.len() - inner.trim_start().len();
    let trail = inner.len() - inner.trim_end().len();
    if lead + trail >= inner.len() {
        s.end = s.start;
    } else {
        s.start += lead;
        s.end -= trail;
    }
}

/// Overlapping spans become one span covering both, labelled by the more confident one.
fn resolve_overlaps(v: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::with_capacity(v.len());
    for s in v {
        match out.last_mut() {
            Some(prev) if s.start < prev.end => {
                if s.score > prev.score {
                    prev.label = s.label.clone();
                }
                prev.score = prev.score.max(s.score);
                prev.end = prev.end.max(s.end);
            }
            _ => out.push(s),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::span::RunStats;
    use std::sync::Arc;

    fn run(
        text: &str,
        spans: Vec<Span>,
        sentence_starts: Vec<usize>,
        p: MergeParams,
    ) -> Vec<(String, String)> {
        let original: Arc<str> = Arc::from(text);
        let out = merge(
            Spans {
                original,
                spans,
                sentence_starts,
                stats: RunStats::default(),
            },
            p,
        );
        out.spans
            .iter()
            .map(|s| (text[s.start..s.end].to_string(), s.label.clone()))
            .collect()
    }

    const ALL: MergeParams = MergeParams {
        join_pieces: true,
        snap_to_words: true,
        group_entities: true,
        smart_merging: true,
        threshold: 0.5,
    };
    const NONE: MergeParams = MergeParams {
        join_pieces: false,
        snap_to_words: false,
        group_entities: false,
        smart_merging: false,
        threshold: 0.0,
    };

    #[test]
    fn joins_touching_pieces_of_one_type() {
        let t = "Aisha came";
        let got = run(
            t,
            vec![Span::model(0, 2, "N", 0.9), Span::model(2, 5, "N", 0.8)],
            vec![],
            ALL,
        );
        assert_eq!(got, vec![("Aisha".into(), "N".into())]);
        let got = run(
            t,
            vec![Span::model(0, 2, "N", 0.9), Span::model(2, 5, "N", 0.8)],
            vec![],
            NONE,
        );
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn threshold_drops_weak_spans() {
        let got = run(
            "Ann Lee",
            vec![Span::model(0, 3, "N", 0.4), Span::model(4, 7, "N", 0.6)],
            vec![],
            ALL,
        );
        assert_eq!(got, vec![("Lee".into(), "N".into())]);
    }

    #[test]
    fn snaps_partial_words_and_trims() {
        let got = run(
            "call Jonathan now",
            vec![Span::model(6, 10, "N", 0.9)],
            vec![],
            ALL,
        );
        assert_eq!(got, vec![("Jonathan".into(), "N".into())]);
        let got = run("x  Ann  y", vec![Span::model(1, 7, "N", 0.9)], vec![], ALL);
        assert_eq!(got, vec![("Ann".into(), "N".into())]);
    }

    #[test]
    fn groups_neighbours_within_a_sentence_only() {
        let p = MergeParams {
            smart_merging: false,
            ..ALL
        };
        let t = "Ann, Lee";
        let got = run(
            t,
            vec![Span::model(0, 3, "N", 0.9), Span::model(5, 8, "N", 0.9)],
            vec![],
            p,
        );
        assert_eq!(got, vec![("Ann, Lee".into(), "N".into())]);
        let t = "Ann\nLee";
        let got = run(
            t,
            vec![Span::model(0, 3, "N", 0.9), Span::model(4, 7, "N", 0.9)],
            vec![4],
            p,
        );
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn smart_merging_joins_identifier_fragments() {
        let p = MergeParams {
            group_entities: false,
            ..ALL
        };
        let t = "tel (617) 555-0143.";
        let got = run(
            t,
            vec![
                Span::model(4, 9, "PHONE", 0.9),
                Span::model(10, 18, "PHONE", 0.9),
            ],
            vec![],
            p,
        );
        assert_eq!(got, vec![("(617) 555-0143".into(), "PHONE".into())]);
    }

    #[test]
    fn overlaps_resolve_to_one_span() {
        let got = run(
            "abcdef",
            vec![Span::model(0, 4, "A", 0.6), Span::model(2, 6, "B", 0.9)],
            vec![],
            NONE,
        );
        assert_eq!(got, vec![("abcdef".into(), "B".into())]);
    }

    #[test]
    fn eponyms_are_not_names() {
        let text = "Hx of Alzheimer's disease, a Babinski sign, Hodgkin lymphoma; Mr. Parkinson's wife \
                    called. Advanced Crohn's, Lyme disease; Dr. Huntington's notes.";
        let at = |w: &str, label: &str| Span::model_at(text, w, label);
        let spans = vec![
            at("Alzheimer", "SURNAME"),
            at("Babinski", "SURNAME"),
            at("Hodgkin", "SURNAME"),
            at("Parkinson", "SURNAME"),
            at("Crohn", "SURNAME"),
            at("Lyme", "CITY"),
            at("Huntington", "SURNAME"),
        ];
        let got = run(text, spans, vec![], ALL);
        let surname = |w: &str| (w.to_string(), "SURNAME".to_string());
        assert_eq!(got, vec![surname("Parkinson"), surname("Huntington")]);
    }
}
