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

/// Floors per set: (name, min recall, min precision, max whole-identifier leaks). Measured with
/// `phiflow eval` (README "De-identification quality"); a change that lowers recall or adds a
/// leak on any set fails here. The third-party held-out halves were never looked at; the i2b2
/// and Presidio sets are built by scripts/fetch-assets from pinned third-party packages. The
/// probe sets (tests/data/probes) were written blind to the recognizers and then tuned on: a
/// regression floor like the synthetic corpus. The held-out probe sets (`heldout-*`) were
/// written blind and never looked at: `heldout-clinical` and `heldout-general` after session
/// 16's changes, `heldout-2-*` during session 17, first measured at its end, `heldout-3-*`
/// during session 32, first measured at its end. `probe-notes-4`
/// and `probe-general-4` were written blind in session 18, `probe-notes-5` and
/// `probe-general-5` in session 19, `probe-notes-6`, `probe-general-6` and `probe-places-6` in
/// session 20, `probe-notes-7`, `probe-general-7` and `probe-prompts-7` in session 21,
/// `probe-notes-8` and `probe-general-8` in session 22, `probe-notes-9` and `probe-general-9` in
/// session 23, `probe-notes-10` and `probe-general-10` in session 24, `probe-notes-11` and
/// `probe-general-11` in session 25, `probe-notes-12` and `probe-general-12` in session 26,
/// `probe-notes-13` and `probe-general-13` in session 35, and then tuned on.
const SET_FLOORS: [(&str, f64, f64, usize); 40] = [
    ("asq-phi-dev", 0.985, 0.982, 1),
    ("asq-phi-test", 0.978, 0.987, 3),
    ("probe-clinical", 0.977, 0.945, 18),
    ("probe-general", 0.944, 0.95, 48),
    ("probe-queries", 0.986, 0.925, 6),
    ("probe-notes", 0.971, 0.943, 23),
    ("probe-general-2", 0.947, 0.917, 40),
    ("probe-notes-3", 0.975, 0.935, 25),
    ("probe-general-3", 0.914, 0.909, 62),
    ("probe-notes-4", 0.931, 0.922, 81),
    ("probe-general-4", 0.894, 0.909, 98),
    ("probe-notes-5", 0.956, 0.932, 42),
    ("probe-general-5", 0.89, 0.914, 104),
    ("probe-notes-6", 0.954, 0.912, 47),
    ("probe-general-6", 0.93, 0.932, 66),
    ("probe-places-6", 0.979, 0.957, 19),
    ("probe-notes-7", 0.96, 0.939, 40),
    ("probe-general-7", 0.902, 0.929, 115),
    ("probe-prompts-7", 0.918, 0.937, 80),
    ("probe-notes-8", 0.947, 0.944, 57),
    ("probe-general-8", 0.896, 0.922, 104),
    ("probe-notes-9", 0.945, 0.922, 64),
    ("probe-general-9", 0.886, 0.907, 223),
    ("probe-notes-10", 0.916, 0.9, 79),
    ("probe-general-10", 0.904, 0.91, 149),
    ("probe-notes-11", 0.934, 0.908, 94),
    ("probe-general-11", 0.862, 0.879, 215),
    ("probe-notes-12", 0.933, 0.926, 107),
    ("probe-general-12", 0.914, 0.919, 185),
    ("probe-notes-13", 0.943, 0.915, 89),
    ("probe-general-13", 0.884, 0.903, 220),
    ("heldout-clinical", 0.968, 0.911, 16),
    ("heldout-general", 0.963, 0.882, 16),
    ("heldout-2-clinical", 0.961, 0.932, 21),
    ("heldout-2-general", 0.918, 0.882, 34),
    ("heldout-3-clinical", 0.901, 0.898, 152),
    ("heldout-3-general", 0.891, 0.886, 179),
    ("i2b2-philter", 0.999, 0.997, 0),
    ("presidio-dev", 0.991, 0.88, 11),
    ("presidio-test", 0.974, 0.85, 24),
];

/// Clinical text with no identifier at all (tests/data/probes/negatives.jsonl): at most this
/// many of its 153 notes may have anything redacted.
const MAX_NEGATIVES_REDACTED: usize = 73;

#[test]
fn every_set_holds_its_recall_and_leak_floors() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let names: Vec<String> = SET_FLOORS
        .iter()
        .map(|(n, ..)| n.to_string())
        .chain(["probe-negatives".to_string()])
        .collect();
    let fetched = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".assets/eval");
    let sets = phiflow::eval::sets::load(&dir, &fetched, &names).expect("third-party sets load");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut settings = Settings::from_env();
        settings.preload_models = Some(vec![]);
        let state = phiflow::api::build_state_without_jobs(settings).expect("service state");
        let inactive = &state.pipelines.recognizers.inactive;
        assert!(
            inactive.is_empty(),
            "gazetteers missing (run scripts/fetch-assets): {inactive:?}"
        );
        let (negatives, sets): (Vec<_>, Vec<_>) =
            sets.iter().partition(|s| s.name == "probe-negatives");
        for set in negatives {
            let report = run(&state, &set.notes, &EvalOptions::default())
                .await
                .expect("evaluation runs");
            assert!(
                report.clean_notes_redacted <= MAX_NEGATIVES_REDACTED,
                "{} of {} clean notes redacted",
                report.clean_notes_redacted,
                report.clean_notes
            );
        }
        for (set, (name, min_recall, min_precision, max_leaks)) in sets.into_iter().zip(SET_FLOORS)
        {
            assert_eq!(set.name, name);
            let report = run(&state, &set.notes, &EvalOptions::default())
                .await
                .expect("evaluation runs");
            println!("{name}\n{}", report.table());
            let o = &report.overall;
            assert!(
                o.recall.unwrap_or(0.0) >= min_recall,
                "{name} recall\n{}",
                report.table()
            );
            assert!(
                o.precision.unwrap_or(0.0) >= min_precision,
                "{name} precision\n{}",
                report.table()
            );
            assert!(
                report.whole_leaks <= max_leaks,
                "{name} leaks\n{}",
                report.table()
            );
        }
    });
}

/// The given-name gazetteer scripts/fetch-assets builds: names from many countries beside the US
/// Census list, and none of the English words that open sentences ("He", "Can", "To").
#[test]
fn given_names_reach_past_the_census_and_leave_english_words_out() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".assets/gazetteers/given_names.txt");
    let text = std::fs::read_to_string(&path).expect("run scripts/fetch-assets");
    let names = phiflow::deid::gazetteer::Gazetteer::from_lines(&text);
    for name in [
        "John", "Lars", "Bernd", "Amadeo", "Tuomo", "Jordanka", "Mamoru", "Hope",
    ] {
        assert!(names.contains(name), "{name} missing");
    }
    for word in [
        "He", "Can", "To", "The", "You", "Alien", "San", "VIN", "Per", "Den",
    ] {
        assert!(!names.contains(word), "{word} listed");
    }
}
