//! Criterion benches per CPU stage on a ~10k-character note: tokenize, window, sentence
//! detection, aggregate, merge. (Inference throughput is measured by the `load` bench.)

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use phiflow::inference::{LabelSet, TokenizerHandle};
use phiflow::stages::aggregate::{Aggregation, aggregate};
use phiflow::stages::infer::TokenScores;
use phiflow::stages::merge::{MergeParams, merge};
use phiflow::stages::{Spans, TextView, sentence, tokens, window};

#[path = "corpus.rs"]
mod corpus;

fn bench(c: &mut Criterion) {
    let text: String = corpus::notes(40).join("\n");
    let tk = TokenizerHandle::load(std::path::Path::new(
        ".assets/models/nationaldesignstudio/rampart/tokenizer.json",
    ))
    .expect("run scripts/fetch-assets first");
    let original: Arc<str> = Arc::from(text.as_str());
    c.bench_function("tokenize_10k_chars", |b| {
        b.iter(|| tokens::tokenize(&tk, TextView::new(original.clone()), Some("en")).unwrap())
    });
    c.bench_function("sentence_starts_10k_chars", |b| {
        b.iter(|| sentence::sentence_starts(&text, "en"))
    });
    let toks = tokens::tokenize(&tk, TextView::new(original.clone()), Some("en")).unwrap();
    let p = window::WindowParams {
        capacity: 126,
        overlap: 64,
        prefer_sentences: true,
    };
    c.bench_function("window", |b| {
        b.iter(|| window::windows(toks.len(), &toks.words, &toks.sentence_starts, p))
    });

    let labels = LabelSet::new(vec!["O".into(), "B-X".into(), "I-X".into()]);
    let n = toks.len();
    let probs: Vec<f32> = (0..n)
        .flat_map(|t| {
            if t % 7 < 2 {
                [0.1, 0.8, 0.1]
            } else if t % 7 == 2 {
                [0.1, 0.1, 0.8]
            } else {
                [0.9, 0.05, 0.05]
            }
        })
        .collect();
    let scores = TokenScores {
        tokens: toks,
        probs,
        num_labels: 3,
        windows: 1,
    };
    for strategy in [Aggregation::Simple, Aggregation::Max, Aggregation::Average] {
        c.bench_function(&format!("aggregate_{strategy:?}"), |b| {
            b.iter(|| aggregate(&scores, &labels, strategy))
        });
    }
    let spans = aggregate(&scores, &labels, Aggregation::Max);
    let params = MergeParams {
        join_pieces: true,
        snap_to_words: true,
        group_entities: true,
        smart_merging: true,
        threshold: 0.5,
    };
    c.bench_function("merge", |b| {
        b.iter(|| {
            merge(
                Spans {
                    original: original.clone(),
                    spans: spans.clone(),
                    sentence_starts: vec![],
                    stats: Default::default(),
                },
                params,
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
