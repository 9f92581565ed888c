//! End-to-end load bench: starts the service in-process on 127.0.0.1 (ephemeral port), sends a
//! fixed corpus to POST /pii/extract at concurrency 1 and 8, and prints docs/s, tokens/s, p50/p99
//! latency, mean batch size, padding ratio, and the ratio of end-to-end throughput to a plain
//! ONNX Runtime loop over exactly the same windows.
//!
//! Run: `cargo bench --bench load` (PHIFLOW_BENCH_DOCS sets the corpus size, default 64).

use phiflow::config::Settings;

#[path = "corpus.rs"]
mod corpus;
#[path = "support/e2e.rs"]
mod e2e;
#[path = "support/results.rs"]
mod results;

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
    let service = e2e::start(Settings::from_env())
        .await
        .expect("service starts (run scripts/fetch-assets first)");
    let notes = corpus::notes(docs);
    let chars: usize = notes.iter().map(|n| n.chars().count()).sum();

    // The exact windows the service will run, for the plain ONNX Runtime baseline.
    let (windows, pad_id) = service.windows(&notes).await;
    let window_tokens: usize = windows.iter().map(|w| w.ids.len()).sum();
    println!(
        "corpus: {docs} notes, {chars} chars, {} windows, {window_tokens} window tokens (mean {:.1}/window)",
        windows.len(),
        window_tokens as f64 / windows.len() as f64
    );

    let ort_secs = service.plain_ort_loop(&windows, pad_id, None);
    let ort_tps = window_tokens as f64 / ort_secs;
    println!(
        "plain ONNX Runtime loop (batch 1, same windows): {ort_secs:.2} s, {ort_tps:.0} tokens/s"
    );

    // Warm-up pass.
    service.send_all(&notes, 8).await;
    println!();
    println!(
        "| concurrency | docs/s | tokens/s | p50 ms | p99 ms | mean batch | padding | e2e/ORT |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut report = results::Report::new("load");
    report
        .knob("PHIFLOW_BENCH_DOCS", docs)
        .knob("windows", windows.len())
        .knob("window tokens", window_tokens)
        .figure("throughput", "plain ORT loop", ort_tps, "tokens/s");
    for concurrency in [1usize, 8] {
        let p = service.measure(&notes, concurrency, window_tokens).await;
        let c = format!("concurrency {concurrency}");
        report
            .figure("throughput", &c, p.tokens_per_s, "tokens/s")
            .figure("latency p50", &c, p.p50_ms, "ms")
            .figure("latency p99", &c, p.p99_ms, "ms")
            .figure("mean batch", &c, p.mean_batch, "windows");
        // Issue 19: end to end at least 0.95 of the plain loop at concurrency 8.
        let ratio = p.tokens_per_s / ort_tps;
        if concurrency == 8 {
            report.figure_min("end to end / plain ORT", &c, ratio, "×", 0.95);
        } else {
            report.figure("end to end / plain ORT", &c, ratio, "×");
        }
        println!(
            "| {concurrency} | {:.1} | {:.0} | {:.1} | {:.1} | {:.2} | {:.3} | {:.3} |",
            p.docs_per_s,
            p.tokens_per_s,
            p.p50_ms,
            p.p99_ms,
            p.mean_batch,
            p.padding,
            p.tokens_per_s / ort_tps,
        );
    }
    report.write();
}
