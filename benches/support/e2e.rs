//! What the end-to-end benches (`load`, `gpu`) share: the service started in-process on
//! 127.0.0.1 (ephemeral port), the exact windows it will run for a corpus, the plain ONNX Runtime
//! loop over those same windows, and one measured pass of POST /pii/extract at a concurrency.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use ort::value::Tensor;
use phiflow::config::Settings;
use phiflow::inference::{GraphInputs, WindowInput};
use phiflow::stages::infer::window_inputs;
use phiflow::stages::{Aggregation, RunOptions};
use serde_json::{Value, json};

/// The service, listening, with its default PII model loaded.
pub struct Service {
    pub state: phiflow::api::AppState,
    pub base: String,
    pub client: reqwest::Client,
    pub model_id: String,
}

/// Starts the service and waits until `/readyz` is 200; a start-up error is returned as text.
pub async fn start(settings: Settings) -> Result<Service, String> {
    let model_id = settings.pii_model.clone();
    let state = phiflow::api::build_state_without_jobs(settings).map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let base = format!(
        "http://{}",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    tokio::spawn(phiflow::api::serve(
        listener,
        state.clone(),
        std::future::pending(),
    ));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .map_err(|e| e.to_string())?;
    loop {
        let status = client
            .get(format!("{base}/readyz"))
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0);
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(Service {
        state,
        base,
        client,
        model_id,
    })
}

/// One measured pass over the corpus.
pub struct Pass {
    pub docs_per_s: f64,
    pub tokens_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub mean_batch: f64,
    pub padding: f64,
}

impl Service {
    /// The exact windows the service will run for `notes`, and the model's padding id.
    pub async fn windows(&self, notes: &[String]) -> (Vec<WindowInput>, i64) {
        let handle = self
            .state
            .registry
            .acquire(&self.model_id, None)
            .await
            .expect("model");
        let model = handle.arc();
        let pipeline = self.state.pipelines.get("pii_extract").expect("pipeline");
        let opts = RunOptions {
            aggregation: Aggregation::Max,
            confidence_threshold: 0.5,
            group_entities: true,
            smart_merging: true,
            ..Default::default()
        };
        let mut windows: Vec<WindowInput> = Vec::new();
        for note in notes {
            let (toks, ws) = pipeline
                .plan(&model, Arc::from(note.as_str()), &opts)
                .expect("plan");
            windows.extend(window_inputs(&model, &toks, &ws));
        }
        (windows, i64::from(model.tokenizer.pad_id))
    }

    /// Runs every window through a fresh session with ONNX Runtime defaults on the configured
    /// device: the plain loop. `batch_tokens` `None`: one window per run; `Some(budget)`: what a
    /// plain program would do on a GPU, windows sorted by length and packed under `budget`
    /// padded tokens. Returns the seconds taken (after a warm-up).
    pub fn plain_ort_loop(
        &self,
        windows: &[WindowInput],
        pad_id: i64,
        batch_tokens: Option<usize>,
    ) -> f64 {
        let files = self.state.registry.files(&self.model_id).expect("files");
        let mut session = self
            .state
            .registry
            .runtime()
            .default_session(&files.onnx)
            .expect("session");
        let inputs = GraphInputs::from_session(&session).expect("inputs");
        let batches: Vec<Vec<&WindowInput>> = match batch_tokens {
            None => windows.iter().map(|w| vec![w]).collect(),
            Some(budget) => {
                let mut sorted: Vec<&WindowInput> = windows.iter().collect();
                sorted.sort_by_key(|w| w.ids.len());
                let mut batches: Vec<Vec<&WindowInput>> = Vec::new();
                for w in sorted {
                    match batches.last_mut() {
                        Some(b) if w.ids.len() * (b.len() + 1) <= budget => b.push(w),
                        _ => batches.push(vec![w]),
                    }
                }
                batches
            }
        };
        let mut run = |batch: &[&WindowInput]| {
            let (b, n) = (
                batch.len(),
                batch.iter().map(|w| w.ids.len()).max().unwrap_or(0),
            );
            let mut ids = vec![pad_id; b * n];
            let mut mask = vec![0i64; b * n];
            for (row, w) in batch.iter().enumerate() {
                ids[row * n..row * n + w.ids.len()].copy_from_slice(&w.ids);
                mask[row * n..row * n + w.ids.len()].fill(1);
            }
            let t = |v: Vec<i64>| Tensor::from_array(([b, n], v)).expect("tensor");
            let mut feed: Vec<(String, ort::session::SessionInputValue<'_>)> =
                vec![(inputs.input_ids.clone(), t(ids).into())];
            if let Some(name) = &inputs.attention_mask {
                feed.push((name.clone(), t(mask).into()));
            }
            if let Some(name) = &inputs.token_type_ids {
                feed.push((name.clone(), t(vec![0; b * n]).into()));
            }
            let out = session.run(feed).expect("run");
            let (_, logits) = out[0].try_extract_tensor::<f32>().expect("logits");
            std::hint::black_box(logits.len());
        };
        for batch in batches.iter().take(8) {
            run(batch);
        }
        let started = Instant::now();
        for batch in &batches {
            run(batch);
        }
        started.elapsed().as_secs_f64()
    }

    /// Sends every note at `concurrency`; checks the service ran exactly `window_tokens`.
    pub async fn measure(
        &self,
        notes: &[String],
        concurrency: usize,
        window_tokens: usize,
    ) -> Pass {
        let before = self.queue_stats().await;
        let started = Instant::now();
        let mut latencies = self.send_all(notes, concurrency).await;
        let wall = started.elapsed().as_secs_f64();
        let after = self.queue_stats().await;
        latencies.sort_by(|a, b| a.total_cmp(b));
        let pct =
            |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize] * 1000.0;
        let d = |k: &str| after[k].as_f64().unwrap_or(0.0) - before[k].as_f64().unwrap_or(0.0);
        assert_eq!(
            d("tokens") as usize,
            window_tokens,
            "the service ran exactly the planned windows"
        );
        Pass {
            docs_per_s: notes.len() as f64 / wall,
            tokens_per_s: window_tokens as f64 / wall,
            p50_ms: pct(0.5),
            p99_ms: pct(0.99),
            mean_batch: d("windows") / d("batches").max(1.0),
            padding: 1.0 - d("tokens") / d("padded_tokens").max(1.0),
        }
    }

    async fn queue_stats(&self) -> Value {
        let report: Value = self
            .client
            .get(format!("{}/models/loaded", self.base))
            .send()
            .await
            .expect("report")
            .json()
            .await
            .expect("json");
        report["models"][0]["queue"].clone()
    }

    /// Sends every note with at most `concurrency` in flight; returns each request's latency (s).
    pub async fn send_all(&self, notes: &[String], concurrency: usize) -> Vec<f64> {
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let notes = Arc::new(notes.to_vec());
        let mut workers = Vec::new();
        for _ in 0..concurrency {
            let (client, url, next, notes) = (
                self.client.clone(),
                format!("{}/pii/extract", self.base),
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
}
