//! The recall floor: the real de-identification (Rampart model, recognizers, hipaa_safe_harbor,
//! mask) over the committed 600-note synthetic corpus. Fails when recall or precision drops
//! below what the README reports (measured with `phiflow eval`).

use phiflow::config::Settings;
use phiflow::eval::runner::{EvalOptions, run};

/// The figures reached when this floor was set (README "De-identification quality"), less a
/// small margin for tokenizer or ONNX Runtime rounding across machines.
const MIN_OVERALL_RECALL: f64 = 0.995;
const MIN_CLASS_RECALL: f64 = 0.99;
const MIN_OVERALL_PRECISION: f64 = 0.93;

#[test]
fn safe_harbor_recall_on_the_synthetic_corpus() {
    let corpus = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/deid_eval.jsonl"
    ))
    .expect("corpus");
    let notes = phiflow::eval::from_jsonl(&corpus).expect("corpus parses");
    assert_eq!(
        notes,
        phiflow::eval::generate(20251121, notes.len()),
        "the committed corpus is the generator's output"
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let report = rt.block_on(async {
        let mut settings = Settings::from_env();
        settings.preload_models = Some(vec![]);
        let state = phiflow::api::build_state_without_jobs(settings).expect("service state");
        run(&state, &notes, &EvalOptions::default())
            .await
            .expect("evaluation runs")
    });
    println!("{}", report.table());
    let overall = &report.overall;
    assert!(
        overall.recall.unwrap_or(0.0) >= MIN_OVERALL_RECALL,
        "{}",
        report.table()
    );
    assert!(
        overall.precision.unwrap_or(0.0) >= MIN_OVERALL_PRECISION,
        "{}",
        report.table()
    );
    for row in &report.classes {
        if let Some(r) = row.recall {
            assert!(
                r >= MIN_CLASS_RECALL,
                "{}: {r}\n{}",
                row.class,
                report.table()
            );
        }
    }
}
