//! Checks the decision encoder against sentence-transformers' own output for the same model
//! files (tests/data/minilm_reference.json: sentence-transformers 6.2.0 with torch 2.15.0 on
//! CPU, one padded batch, from the files scripts/fetch-assets installs).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use phiflow::decisions::encoder::{Encoder, EncoderError};
use serde_json::Value;

const TOLERANCE: f64 = 1e-4;

fn model_dir() -> PathBuf {
    phiflow::config::Settings::from_env()
        .decisions
        .decision_encoder_dir
}

fn fixture() -> Value {
    let text = include_str!("data/minilm_reference.json");
    serde_json::from_str(text).expect("fixture is valid JSON")
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot = |x: &[f32], y: &[f32]| {
        x.iter()
            .zip(y)
            .map(|(p, q)| f64::from(*p) * f64::from(*q))
            .sum::<f64>()
    };
    dot(a, b) / (dot(a, a).sqrt() * dot(b, b).sqrt())
}

#[test]
fn matches_sentence_transformers() {
    let fx = fixture();
    let encoder = Encoder::load(&model_dir()).expect("model loads");
    assert_eq!(encoder.dim(), 384);
    assert_eq!(encoder.max_seq_length(), 256);
    assert_eq!(
        encoder.info().base_model.as_deref(),
        Some("nreimers/MiniLM-L6-H384-uncased")
    );
    assert!(
        encoder.model_id().contains("all-MiniLM-L6-v2"),
        "{}",
        encoder.model_id()
    );

    let sentences = fx["sentences"].as_array().expect("sentences");
    let texts: Vec<&str> = sentences
        .iter()
        .map(|s| s["text"].as_str().expect("text"))
        .collect();
    let detailed = encoder.embed_detailed(&texts, None).expect("embeds");
    let got = detailed.vectors;
    assert_eq!(got.len(), texts.len());
    let long: Vec<bool> = sentences
        .iter()
        .map(|s| s["tokens_untruncated"].as_u64().expect("count") > 256)
        .collect();
    assert_eq!(detailed.truncated, long);

    let mut worst_dim = 0f64;
    for (s, e) in sentences.iter().zip(&got) {
        assert_eq!(e.len(), 384);
        for (want, have) in floats(&s["first8"]).iter().zip(e) {
            worst_dim = worst_dim.max((want - f64::from(*have)).abs());
        }
        let norm = e.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
        let sum: f64 = e.iter().map(|v| f64::from(*v)).sum();
        let want_sum = s["sum"].as_f64().expect("sum");
        assert!((sum - want_sum).abs() < 1e-3, "sum {sum} vs {want_sum}");
    }
    let mut worst_cos = 0f64;
    for (i, row) in fx["cosine"].as_array().expect("cosine").iter().enumerate() {
        for (j, want) in floats(row).iter().enumerate() {
            worst_cos = worst_cos.max((want - cosine(&got[i], &got[j])).abs());
        }
    }
    eprintln!("max |Δ| first 8 dims: {worst_dim:.2e}, cosine matrix: {worst_cos:.2e}");
    assert!(worst_dim <= TOLERANCE, "first-8 dims differ by {worst_dim}");
    assert!(
        worst_cos <= TOLERANCE,
        "cosine matrix differs by {worst_cos}"
    );

    // Batch composition must not matter: each text alone, and split into tiny passes.
    for (text, batched) in texts.iter().zip(&got) {
        let alone = encoder.embed(&[text]).expect("embeds");
        let diff = alone[0]
            .iter()
            .zip(batched)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(
            diff < 1e-6,
            "batched vs alone differ by {diff} for {text:?}"
        );
    }
    let split = Encoder::load(&model_dir())
        .expect("model loads")
        .with_max_batch_tokens(16)
        .embed(&texts)
        .expect("embeds");
    assert_eq!(split.len(), got.len());
    for (a, b) in split.iter().zip(&got) {
        assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6));
    }
}

#[test]
fn truncates_at_max_seq_length() {
    let encoder = Encoder::load(&model_dir()).expect("model loads");
    let base = "word ".repeat(300);
    // Anything after token 255 is cut, so a different tail gives the same vector.
    let a = encoder.embed(&[&format!("{base} apples")]).expect("embeds");
    let b = encoder
        .embed(&[&format!("{base} oranges")])
        .expect("embeds");
    assert_eq!(a, b);
}

#[test]
fn deadline_and_empty_input() {
    let encoder = Encoder::load(&model_dir()).expect("model loads");
    assert!(encoder.embed(&[]).expect("empty ok").is_empty());
    let past = Instant::now();
    assert!(matches!(
        encoder.embed_with_deadline(&["too late"], past),
        Err(EncoderError::DeadlineExceeded)
    ));
    let later = Instant::now() + Duration::from_secs(60);
    assert_eq!(
        encoder
            .embed_with_deadline(&["in time"], later)
            .expect("embeds"),
        encoder.embed(&["in time"]).expect("embeds")
    );
}

#[test]
fn missing_directory_is_a_typed_error() {
    let err = Encoder::load(std::path::Path::new("/nonexistent/model")).expect_err("fails");
    assert!(matches!(err, EncoderError::Io { .. }), "{err}");
}
