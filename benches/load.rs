//! End-to-end load bench: starts the service in-process on 127.0.0.1 (ephemeral port), sends a
//! fixed corpus to POST /pii/extract at concurrency 1 and 8, and prints docs/s, tokens/s, p50/p99
//! latency, mean batch size, padding ratio, and the ratio of end-to-end throughput to a plain
//! ONNX Runtime loop over exactly the same windows.
//!
//! Run: `cargo bench --bench load` (PHIFLOW_BENCH_DOCS sets the corpus size, default 64).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ort::value::Tensor;
use phiflow::config::Settings;
use phiflow::inference::{GraphInputs, WindowInput};
use phiflow::stages::infer::window_inputs;
use phiflow::stages::{Aggregation, RunOptions};
use serde_json::{Value, json};

#[path = "corpus.rs"]
mod corpus;

fn main() {
    let docs: usize = std::env::var("PHIFLOW_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(docs));
}

async fn run(docs: usize) {
    let settings = Settings::from_env();
    let model_id = settings.pii_model.clone();
    let state = phiflow::api::build_state_without_jobs(settings)
        .expect("service starts (run scripts/fetch-assets first)");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(phiflow::api::serve(
        listener,
        state.clone(),
        std::future::pending(),
    ));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .expect("client");
    while client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0)
        != 200
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let notes = corpus::notes(docs);
    let chars: usize = notes.iter().map(|n| n.chars().count()).sum();

    // The exact windows the service will run, for the plain ONNX Runtime baseline.
    let handle = state
        .registry
        .acquire(&model_id, None)
        .await
        .expect("model");
    let model = handle.arc();
    let pipeline = state.pipelines.get("pii_extract").expect("pipeline");
    let opts = RunOptions {
        aggregation: Aggregation::Max,
        confidence_threshold: 0.5,
        group_entities: true,
        smart_merging: true,
        ..Default::default()
    };
    let mut windows: Vec<WindowInput> = Vec::new();
    for note in &notes {
        let (toks, ws) = pipeline
            .plan(&model, Arc::from(note.as_str()), &opts)
            .expect("plan");
        windows.extend(window_inputs(&model, &toks, &ws));
    }
    drop(handle);
    let window_tokens: usize = windows.iter().map(|w| w.ids.len()).sum();
    println!(
        "corpus: {docs} notes, {chars} chars, {} windows, {window_tokens} window tokens (mean {:.1}/window)",
        windows.len(),
        window_tokens as f64 / windows.len() as f64
    );

    let ort_secs = plain_ort_loop(&state, &model_id, &windows);
    let ort_tps = window_tokens as f64 / ort_secs;
    println!(
        "plain ONNX Runtime loop (batch 1, same windows): {ort_secs:.2} s, {ort_tps:.0} tokens/s"
    );

    // Warm-up pass.
    send_all(&client, &base, &notes, 8).await;
    println!();
    println!(
        "| concurrency | docs/s | tokens/s | p50 ms | p99 ms | mean batch | padding | e2e/ORT |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for concurrency in [1usize, 8] {
        let before = queue_stats(&client, &base).await;
        let started = Instant::now();
        let mut latencies = send_all(&client, &base, &notes, concurrency).await;
        let wall = started.elapsed().as_secs_f64();
        let after = queue_stats(&client, &base).await;
        latencies.sort_by(|a, b| a.total_cmp(b));
        let pct =
            |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize] * 1000.0;
        let d = |k: &str| after[k].as_f64().unwrap_or(0.0) - before[k].as_f64().unwrap_or(0.0);
        let tps = window_tokens as f64 / wall;
        println!(
            "| {concurrency} | {:.1} | {tps:.0} | {:.1} | {:.1} | {:.2} | {:.3} | {:.3} |",
            docs as f64 / wall,
            pct(0.5),
            pct(0.99),
            d("windows") / d("batches").max(1.0),
            1.0 - d("tokens") / d("padded_tokens").max(1.0),
            tps / ort_tps,
        );
        assert_eq!(
            d("tokens") as usize,
            window_tokens,
            "the service ran exactly the planned windows"
        );
    }
}

/// Runs every window alone through a fresh session with ONNX Runtime defaults: the plain loop.
fn plain_ort_loop(state: &phiflow::api::AppState, model_id: &str, windows: &[WindowInput]) -> f64 {
    let files = state.registry.files(model_id).expect("files");
    let mut session = state
        .registry
        .runtime()
        .default_session(&files.onnx)
        .expect("session");
    let inputs = GraphInputs::from_session(&session).expect("inputs");
    let mut run = |w: &WindowInput| {
        let n = w.ids.len();
        let t = |v: Vec<i64>| Tensor::from_array(([1usize, n], v)).expect("tensor");
        let mut feed: Vec<(String, ort::session::SessionInputValue<'_>)> =
            vec![(inputs.input_ids.clone(), t(w.ids.clone()).into())];
        if let Some(name) = &inputs.attention_mask {
            feed.push((name.clone(), t(vec![1; n]).into()));
        }
        if let Some(name) = &inputs.token_type_ids {
            feed.push((name.clone(), t(vec![0; n]).into()));
        }
        let out = session.run(feed).expect("run");
        let (_, logits) = out[0].try_extract_tensor::<f32>().expect("logits");
        std::hint::black_box(logits.len());
    };
    for w in windows.iter().take(8) {
        run(w);
    }
    let started = Instant::now();
    for w in windows {
        run(w);
    }
    started.elapsed().as_secs_f64()
}

async fn queue_stats(client: &reqwest::Client, base: &str) -> Value {
    let report: Value = client
        .get(format!("{base}/models/loaded"))
        .send()
        .await
        .expect("report")
        .json()
        .await
        .expect("json");
    report["models"][0]["queue"].clone()
}

/// Sends every note with at most `concurrency` in flight; returns each request's latency (s).
async fn send_all(
    client: &reqwest::Client,
    base: &str,
    notes: &[String],
    concurrency: usize,
) -> Vec<f64> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let notes = Arc::new(notes.to_vec());
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, url, next, notes) = (
            client.clone(),
            format!("{base}/pii/extract"),
            next.clone(),
            notes.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(note) = notes.get(i) else { break };
                let t = Instant::now();
                let r = client
                    .post(&url)
                    .json(&json!({ "text": note }))
                    .send()
                    .await
                    .expect("request");
                assert_eq!(r.status(), 200);
                let _: Value = r.json().await.expect("json");
                lat.push(t.elapsed().as_secs_f64());
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.await.expect("worker"));
    }
    all
}
