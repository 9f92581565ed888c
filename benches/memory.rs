//! Memory bench: runs the `phiflow serve` binary as its own process on 127.0.0.1 and prints its
//! resident memory (VmRSS from /proc) idle after readiness, at its peak during a burst of
//! concurrent `/pii/extract` and `/pii/deidentify` requests of mixed sizes, and a few seconds
//! after the burst; then unloads the model and compares the footprint the registry counted
//! with the memory the unload gave back.
//!
//! Targets (issue 19): idle RSS with the default model ≤ 150 MB; RSS back within 20% of idle
//! once load stops. Run: `cargo bench --bench memory` (`PHIFLOW_MEMORY_BENCH_CONCURRENCY`,
//! default 8, and `PHIFLOW_MEMORY_BENCH_REQUESTS`, default 48, shape the burst).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "corpus.rs"]
mod corpus;
#[path = "support/helpers.rs"]
mod helpers;
use helpers::{env_usize, rss, serve};
#[path = "support/results.rs"]
mod results;

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// A text of about `chars` characters cut from the bench corpus.
fn text(chars: usize, seed: usize) -> String {
    let notes = corpus::notes(64);
    let mut out = String::with_capacity(chars + 1024);
    let mut i = seed;
    while out.len() < chars {
        out.push_str(&notes[i % notes.len()]);
        out.push(' ');
        i += 1;
    }
    out.chars().take(chars).collect()
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> Value {
    let r = client.post(url).json(&body).send().await.expect("request");
    assert!(r.status().is_success(), "status {}", r.status());
    r.json().await.expect("json body")
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run());
}

async fn run() {
    let concurrency = env_usize("PHIFLOW_MEMORY_BENCH_CONCURRENCY", 8).max(1);
    let requests = env_usize("PHIFLOW_MEMORY_BENCH_REQUESTS", 48).max(1);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .expect("client");
    // A blocking wait for readiness, off the runtime's workers.
    let server = tokio::task::spawn_blocking(|| {
        serve("phiflow-memory-bench", &[], Duration::from_secs(180))
    })
    .await
    .expect("start task");
    let pid = server.child.id();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = rss(pid);

    // Sample the peak while the burst runs.
    let peak = Arc::new(AtomicU64::new(idle));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, stop) = (peak.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let sizes = [200usize, 1_000, 3_000, 8_000, 20_000, 60_000];
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let (client, base) = (client.clone(), server.base.clone());
        tasks.push(tokio::spawn(async move {
            let mut k = worker;
            while k < requests {
                let body = json!({"text": text(sizes[(k * 7 + worker) % sizes.len()], k)});
                let route = if k % 2 == 0 {
                    "pii/extract"
                } else {
                    "pii/deidentify"
                };
                post(&client, format!("{base}/{route}"), body).await;
                k += concurrency;
            }
        }));
    }
    for t in tasks {
        t.await.expect("burst task");
    }
    let burst = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    let end = rss(pid);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = rss(pid);

    // Unload: the counted footprint against what the process gives back.
    let loaded: Value = client
        .get(format!("{}/models/loaded", server.base))
        .send()
        .await
        .expect("models/loaded")
        .json()
        .await
        .expect("json");
    let counted: u64 = loaded["models"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter_map(|m| m["footprint_bytes"].as_u64())
                .sum()
        })
        .unwrap_or(0);
    let before_unload = rss(pid);
    post(
        &client,
        format!("{}/models/unload", server.base),
        json!({"all": true}),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let unloaded = rss(pid);

    println!(
        "burst: {requests} requests (extract and deidentify, 200 to 60,000 chars) at concurrency {concurrency}, {:.1} s",
        burst.as_secs_f64()
    );
    println!("| measure | MB |");
    println!("|---|---|");
    println!(
        "| idle RSS after readiness (target ≤ 150) | {:.1} |",
        mb(idle)
    );
    println!(
        "| peak RSS during the burst | {:.1} |",
        mb(peak.load(Ordering::Relaxed))
    );
    println!("| RSS as the burst ends | {:.1} |", mb(end));
    println!(
        "| RSS 5 s after the burst (target ≤ {:.1}, idle + 20%) | {:.1} ({:+.0}% of idle) |",
        mb(idle) * 1.2,
        mb(after),
        (after as f64 / idle.max(1) as f64 - 1.0) * 100.0
    );
    println!("| footprint counted by the registry | {:.1} |", mb(counted));
    println!(
        "| RSS given back by unloading the model | {:.1} |",
        mb(before_unload.saturating_sub(unloaded))
    );

    // Issue 19: idle at most 150 MB; back within 20% of idle once load stops.
    results::Report::new("memory")
        .knob("PHIFLOW_MEMORY_BENCH_CONCURRENCY", concurrency)
        .knob("PHIFLOW_MEMORY_BENCH_REQUESTS", requests)
        .figure_max("server RSS", "idle", mb(idle), "MB", 150.0)
        .figure(
            "server RSS",
            "peak in the burst",
            mb(peak.load(Ordering::Relaxed)),
            "MB",
        )
        .figure("server RSS", "burst ends", mb(end), "MB")
        .figure_max("server RSS", "5 s after", mb(after), "MB", mb(idle) * 1.2)
        .figure("model memory", "counted by the registry", mb(counted), "MB")
        .figure(
            "model memory",
            "given back by the unload",
            mb(before_unload.saturating_sub(unloaded)),
            "MB",
        )
        .figure("burst", "wall time", burst.as_secs_f64(), "s")
        .write();
}
