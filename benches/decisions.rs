//! Criterion benches of one decision end to end in-process (parse, calibration, access, score,
//! result) with the lexical backend and with the encoder backend (all-MiniLM-L6-v2), and a
//! batch of 32 encoder decisions.

use criterion::{Criterion, criterion_group};
use phiflow::config::{DecisionBackend, Settings};
use phiflow::decisions::{DecisionRequest, parse_batch, setup};
use serde_json::json;

#[path = "support/results.rs"]
mod results;

fn bench(c: &mut Criterion) {
    let body = json!({"mode": "fixed_choice",
        "input_text": "She reports feeling very sad and hopeless most days, with poor sleep and appetite.",
        "options": ["depressed mood", "bone fracture", "fever"]});
    let mut settings = Settings::from_env().decisions;
    let lexical = setup::build_engine(&settings).expect("lexical engine");
    settings.decision_backend = DecisionBackend::Encoder;
    let encoder = setup::build_engine(&settings).expect("run scripts/fetch-assets first");
    let request = DecisionRequest::parse(&body).expect("valid");
    c.bench_function("decide_lexical_3_options", |b| {
        b.iter(|| lexical.decide(&request))
    });
    c.bench_function("decide_encoder_3_options", |b| {
        b.iter(|| encoder.decide(&request))
    });
    let batch = parse_batch(&json!({"requests": vec![body; 32]})).expect("valid batch");
    let mut g = c.benchmark_group("batch");
    g.sample_size(10);
    g.bench_function("decide_encoder_batch_32", |b| {
        b.iter(|| encoder.decide_batch(&batch))
    });
    g.finish();
}

criterion_group!(benches, bench);

/// `criterion_main!`, then the medians it measured recorded for `scripts/plot-benches`.
fn main() {
    let started = std::time::SystemTime::now();
    benches();
    Criterion::default().configure_from_args().final_summary();
    results::Report::new("decisions")
        .criterion_medians("end to end (median)", started)
        .write();
}
