//! Probes, model management (load on use, keep-alive, unload, LRU under a budget), the
//! batching queue's backpressure, and the execution-provider setting.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const RAMPART: &str = "nationaldesignstudio/rampart";

fn resident(report: &Value) -> Vec<String> {
    report["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["model_name"].as_str().unwrap().to_string())
        .collect()
}

/// A models directory with two copies of the real model (links, not copies of the weights).
fn two_model_dir() -> tempfile_dir::TempDir {
    let dir = tempfile_dir::TempDir::new();
    let src = std::fs::canonicalize(".assets/models/nationaldesignstudio/rampart")
        .expect("fetched model");
    for name in ["one", "two"] {
        let dst = dir.path().join("lab").join(name);
        std::fs::create_dir_all(dst.join("onnx")).unwrap();
        for f in ["config.json", "tokenizer.json", "phiflow-model.json"] {
            std::os::unix::fs::symlink(src.join(f), dst.join(f)).unwrap();
        }
        std::os::unix::fs::symlink(
            src.join("onnx/model_q4.onnx"),
            dst.join("onnx/model_q4.onnx"),
        )
        .unwrap();
    }
    dir
}

mod tempfile_dir {
    /// A directory removed on drop.
    pub struct TempDir(std::path::PathBuf);
    impl TempDir {
        pub fn new() -> Self {
            let p = std::env::temp_dir()
                .join(format!("phiflow-test-{}", uuid::Uuid::new_v4().simple()));
            std::fs::create_dir_all(&p).unwrap();
            Self(p)
        }
        pub fn path(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[tokio::test]
async fn probes() {
    let s = common::server();
    assert_eq!(s.get("/livez").await, (200, json!({ "status": "ok" })));
    assert_eq!(s.get("/readyz").await, (200, json!({ "status": "ready" })));
    let (status, health) = s.get("/health").await;
    assert_eq!(status, 200);
    let obj = health.as_object().unwrap();
    assert!(
        obj.values().all(Value::is_string),
        "every /health value is a string: {health}"
    );
    assert_eq!(health["version"], env!("CARGO_PKG_VERSION"));
}

#[tokio::test]
async fn readyz_is_503_with_reasons_until_default_models_load() {
    let s = common::start_unready(|c| c.preload_models = Some(vec!["missing/model".into()]));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = s.get("/readyz").await;
        assert_eq!(status, 503);
        assert_eq!(body["status"], "not_ready");
        let reasons = body["reasons"].as_array().unwrap();
        if reasons
            .iter()
            .any(|r| r.as_str().unwrap().contains("failed to load"))
        {
            break;
        }
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(s.get("/livez").await.0, 200);
}

#[tokio::test]
async fn unload_by_name_and_all_then_reload_on_use() {
    let s = common::start(|_| {});
    let (_, report) = s.get("/models/loaded").await;
    assert_eq!(resident(&report), vec![RAMPART]);
    assert_eq!(report["installed"], json!([RAMPART]));
    assert_eq!(report["models"][0]["takes_token_type_ids"], true);

    let (status, out) = s
        .post("/models/unload", &json!({ "model_name": RAMPART }))
        .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["unloaded"], true);
    assert!(resident(&s.get("/models/loaded").await.1).is_empty());
    let (_, health) = s.get("/health").await;
    assert_eq!(health["models"], "");

    // Loads again on first use.
    let (status, _) = s
        .post("/pii/extract", &json!({ "text": "Call (617) 555-0143" }))
        .await;
    assert_eq!(status, 200);
    let (_, report) = s.get("/models/loaded").await;
    assert_eq!(resident(&report), vec![RAMPART]);
    assert_eq!(report["loads_total"], 2);

    let (status, out) = s.post("/models/unload", &json!({ "all": true })).await;
    assert_eq!(status, 200);
    assert_eq!(out["unloaded"], json!([RAMPART]));

    let (status, out) = s
        .post("/models/unload", &json!({ "model_name": RAMPART }))
        .await;
    assert_eq!(
        (status, out["unloaded"].clone(), out["reason"].clone()),
        (200, json!(false), json!("not_loaded"))
    );
    let (status, out) = s
        .post("/models/unload", &json!({ "model_name": "no/such" }))
        .await;
    assert_eq!(status, 404);
    assert_eq!(out["error"]["code"], "model_not_found");
}

#[tokio::test]
async fn keep_alive_zero_unloads_after_the_request_and_durations_expire() {
    let s = common::start(|_| {});
    let (status, _) = s
        .post(
            "/pii/extract",
            &json!({ "text": "Call (617) 555-0143", "keep_alive": 0 }),
        )
        .await;
    assert_eq!(status, 200);
    assert!(
        resident(&s.get("/models/loaded").await.1).is_empty(),
        "keep_alive 0 unloads right after the request"
    );

    let (status, _) = s
        .post(
            "/pii/extract",
            &json!({ "text": "Call (617) 555-0143", "keep_alive": "1s" }),
        )
        .await;
    assert_eq!(status, 200);
    let (_, report) = s.get("/models/loaded").await;
    assert_eq!(resident(&report), vec![RAMPART]);
    let remaining = report["models"][0]["keep_alive_seconds_remaining"]
        .as_f64()
        .unwrap();
    assert!(remaining > 0.0 && remaining <= 1.0, "{remaining}");
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert!(
        resident(&s.get("/models/loaded").await.1).is_empty(),
        "expired after 1s idle"
    );
}

#[tokio::test]
async fn lru_evicts_the_least_recently_used_idle_model() {
    let dir = two_model_dir();
    let models_dir = dir.path().to_path_buf();
    let s = common::start(move |c| {
        c.models_dir = models_dir;
        c.preload_models = Some(vec![]);
        c.max_resident_models = 1;
    });
    for name in ["lab/one", "lab/two"] {
        let (status, body) = s
            .post(
                "/pii/extract",
                &json!({ "text": "Call (617) 555-0143", "model_name": name }),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["model_name"], name);
    }
    let (_, report) = s.get("/models/loaded").await;
    assert_eq!(resident(&report), vec!["lab/two"]);
    assert_eq!(report["evictions_total"], 1);
    assert_eq!(report["installed"], json!(["lab/one", "lab/two"]));
    assert!(Path::new(dir.path()).exists());
}

/// A RoBERTa/DeBERTa-style graph, whose only inputs are `input_ids` and `attention_mask`,
/// derived from the real model by `common::onnx_surgery` (zeros computed inside the graph where
/// the original takes `token_type_ids`). Feeding it `token_type_ids` would be a run error; it
/// must answer, and find the same entities as the original with the same scores.
#[tokio::test]
async fn a_graph_without_token_type_ids_is_fed_none_and_finds_the_same() {
    let dir = two_model_dir();
    let original = std::fs::read(dir.path().join("lab/two/onnx/model_q4.onnx")).unwrap();
    let derived = common::onnx_surgery::without_token_type_ids(&original).expect("rewrite");
    assert!(
        common::onnx_surgery::without_token_type_ids(&derived).is_err(),
        "the derived graph has no token_type_ids input left"
    );
    std::fs::remove_file(dir.path().join("lab/two/onnx/model_q4.onnx")).unwrap();
    std::fs::write(dir.path().join("lab/two/onnx/model.onnx"), derived).unwrap();
    let models_dir = dir.path().to_path_buf();
    let s = common::start(move |c| {
        c.models_dir = models_dir;
        c.preload_models = Some(vec![]);
    });
    let text = "Patient John Smith, phone (617) 555-0143, email john.smith@example.com, \
                seen at 12 Elm Street, Boston on 03/04/2024.";
    let mut answers = Vec::new();
    for name in ["lab/one", "lab/two"] {
        let (status, body) = s
            .post(
                "/analyze",
                &json!({ "text": text, "model_name": name, "confidence_threshold": 0.0 }),
            )
            .await;
        assert_eq!(status, 200, "{name}: {body}");
        let found = common::entities(text, &body);
        assert!(!found.is_empty(), "{name}: {body}");
        let by_model = body["entities"].as_array().unwrap().iter();
        assert!(
            by_model.clone().any(|e| e["source"] == "model"),
            "{name}: the model itself found something: {body}"
        );
        let scores: Vec<f64> = by_model
            .map(|e| e["confidence"].as_f64().unwrap())
            .collect();
        answers.push((found, scores));
    }
    assert_eq!(answers[0].0, answers[1].0);
    for (a, b) in answers[0].1.iter().zip(&answers[1].1) {
        assert!((a - b).abs() < 1e-4, "scores {a} and {b}");
    }
}

/// The single-threaded workers and the wide session (`SERVICE_INFER_WORKERS=1` keeps only the
/// wide one) find the same entities with the same scores, for a long note alone and for several
/// notes at once, whichever session each window lands on.
#[tokio::test]
async fn every_worker_layout_finds_the_same() {
    let note = "Patient John Smith (MRN 4471923) was seen on 03/04/2024 by Dr. Alice Wong. \
                Call (617) 555-0143 or write to john.smith@example.com about the follow-up. "
        .repeat(12);
    let mut answers = Vec::new();
    for workers in [1usize, 3] {
        let s = common::start(move |c| c.infer_workers = workers);
        let c = common::client();
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let (c, url, note) = (c.clone(), s.url("/pii/extract"), note.clone());
            tasks.push(tokio::spawn(async move {
                let r = c.post(url).json(&json!({ "text": note })).send().await;
                r.unwrap().json::<Value>().await.unwrap()
            }));
        }
        let mut bodies = Vec::new();
        for t in tasks {
            bodies.push(t.await.unwrap());
        }
        let (_, alone) = s.post("/pii/extract", &json!({ "text": note })).await;
        bodies.push(alone);
        for body in bodies {
            let found = common::entities(&note, &body);
            assert!(found.len() >= 12, "{workers} workers: {body}");
            let scores: Vec<f64> = body["entities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["confidence"].as_f64().unwrap())
                .collect();
            answers.push((workers, found, scores));
        }
    }
    let (_, first, first_scores) = &answers[0];
    for (workers, found, scores) in &answers[1..] {
        assert_eq!(found, first, "{workers} workers");
        for (a, b) in scores.iter().zip(first_scores) {
            assert!((a - b).abs() < 1e-4, "{workers} workers: {a} vs {b}");
        }
    }
}

#[tokio::test]
async fn a_full_queue_answers_503_with_retry_after() {
    let s = common::start(|c| c.queue_capacity = 1);
    let text = "Patient John Smith, phone (617) 555-0143, seen today for review. ".repeat(40);
    let c = common::client();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (c, url, text) = (c.clone(), s.url("/pii/extract"), text.clone());
        tasks.push(tokio::spawn(async move {
            let r = c
                .post(url)
                .json(&json!({ "text": text }))
                .send()
                .await
                .unwrap();
            let retry = r
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_string());
            let status = r.status().as_u16();
            let body: Value = r.json().await.unwrap();
            (status, retry, body)
        }));
    }
    let mut ok = 0;
    let mut busy = 0;
    for t in tasks {
        let (status, retry, body) = t.await.unwrap();
        match status {
            200 => ok += 1,
            503 => {
                busy += 1;
                assert_eq!(retry.as_deref(), Some("1"));
                assert_eq!(body["error"]["code"], "backpressure");
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert!(ok >= 1 && busy >= 1, "ok={ok} busy={busy}");
}

#[test]
fn cuda_without_its_provider_is_a_clear_error() {
    let lib = std::fs::canonicalize(phiflow::config::DEFAULT_ORT_LIBRARY).expect("fetched runtime");
    let err = phiflow::inference::OrtRuntime::init(
        &lib,
        phiflow::inference::SessionOptions {
            device: phiflow::config::Device::Cuda,
            cuda_device_id: 0,
            cuda_lib_dir: phiflow::config::DEFAULT_CUDA_LIB_DIR.into(),
            cuda_memory_limit: 1 << 30,
            cuda_arena_extend: Default::default(),
            threads: 1,
            workers: 1,
        },
    )
    .expect_err("the CPU wheel has no CUDA provider");
    assert!(
        err.to_string().contains("no CUDA execution provider"),
        "{err}"
    );
}
