//! Criterion benches per CPU stage on a ~10k-character note: tokenize, window, sentence
//! detection, aggregate, merge, the recognizer table (`recognize_*`: the original `en.toml`
//! alone beside the shipped tables with gazetteers, which every de-identified document runs) and
//! the layout readers (HL7 segments, tables, address lines).
//! (Inference throughput is measured by the `load` bench.)

use std::sync::Arc;

use criterion::{Criterion, criterion_group};
use phiflow::deid::Recognizers;
use phiflow::inference::{LabelSet, TokenizerHandle};
use phiflow::stages::aggregate::{Aggregation, aggregate};
use phiflow::stages::infer::TokenScores;
use phiflow::stages::merge::{MergeParams, merge};
use phiflow::stages::{Spans, TextView, sentence, tokens, window};

#[path = "corpus.rs"]
mod corpus;
#[path = "support/results.rs"]
mod results;

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
    let en_only = Recognizers::from_sources(
        &[(
            "en.toml".into(),
            std::fs::read_to_string("pipelines/recognizers/en.toml").expect("en.toml"),
        )],
        |_| None,
    )
    .expect("en.toml loads");
    let shipped = Recognizers::load(std::path::Path::new("pipelines/recognizers"))
        .expect("shipped recognizers load");
    assert!(
        shipped.inactive.is_empty(),
        "run scripts/fetch-assets first (gazetteers)"
    );
    // The project's synthetic notes: non-ASCII names and units, as real notes have.
    let notes = phiflow::eval::from_jsonl(
        &std::fs::read_to_string("tests/data/deid_eval.jsonl").expect("synthetic corpus"),
    )
    .expect("corpus parses");
    let unicode: String = notes[..12]
        .iter()
        .map(|n| n.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for (name, table) in [("en_toml_only", &en_only), ("shipped", &shipped)] {
        c.bench_function(&format!("recognize_{name}_ascii_10k_chars"), |b| {
            b.iter(|| table.find(&text))
        });
        c.bench_function(&format!("recognize_{name}_unicode_12_notes"), |b| {
            b.iter(|| table.find(&unicode))
        });
    }
    // As the service runs them: one note at a time, every pattern over each, so each pattern's
    // match cache is cold again by the next note.
    c.bench_function("recognize_shipped_120_notes_one_by_one", |b| {
        b.iter(|| {
            notes[..120]
                .iter()
                .map(|n| shipped.find(&n.text).len())
                .sum::<usize>()
        })
    });
    // The layout readers the recognize stage runs on every text: HL7 segments, tables under a
    // header, localities in address lines (on prose they find nothing and must cost little).
    c.bench_function("layout_readers_10k_chars", |b| {
        b.iter(|| {
            (
                phiflow::stages::hl7::hl7_fields(&text).found.len(),
                phiflow::stages::tables::table_cells(&text).len(),
                phiflow::stages::localities::address_localities(&text, &[], |_| false).len(),
            )
        })
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

/// `criterion_main!`, then the medians it measured recorded for `scripts/plot-benches`.
fn main() {
    let started = std::time::SystemTime::now();
    benches();
    Criterion::default().configure_from_args().final_summary();
    results::Report::new("stages")
        .criterion_medians("CPU stage (median)", started)
        .write();
}
