//! Streaming bench: runs the release `phiflow serve` binary as its own process on 127.0.0.1 and
//! measures, with a client in this process:
//! - throughput of /pii/extract/stream against /pii/extract on one note (default 1 MB);
//! - time to the first record against the whole stream's time (default 10 MB);
//! - the server's peak resident memory while streaming one note (default 50 MB), sampled from
//!   /proc every 20 ms, against the body size.
//!
//! Run: `cargo bench --bench stream`. `PHIFLOW_STREAM_BENCH=throughput:1,first:10,memory:50`
//! chooses the parts and sizes in MB; `PHIFLOW_STREAM_BENCH_MEMORY_LIMIT_S` stops the memory
//! part's stream after that many seconds (on 2 CPU cores the model scores about 0.6 MB a minute,
//! so a whole 50 MB stream takes over an hour there).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "corpus.rs"]
mod corpus;
#[path = "support/helpers.rs"]
mod helpers;
use helpers::{rss, serve};
#[path = "support/results.rs"]
mod results;

/// A note of about `bytes` bytes: the bench corpus repeated, with line breaks between notes.
fn note(bytes: usize) -> String {
    let notes = corpus::notes(64);
    let mut out = String::with_capacity(bytes + 4096);
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&notes[i % notes.len()]);
        out.push('\n');
        i += 1;
    }
    out
}

struct StreamRun {
    first_record: Duration,
    total: Duration,
    records: usize,
    /// False when the time limit stopped it.
    finished: bool,
}

async fn stream(
    client: &reqwest::Client,
    base: &str,
    body: String,
    limit: Option<Duration>,
) -> StreamRun {
    let started = Instant::now();
    let mut r = client
        .post(format!("{base}/pii/extract/stream"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("stream request");
    assert_eq!(r.status().as_u16(), 200);
    let (mut first, mut records, mut pending) = (None, 0, Vec::new());
    let mut last_line = Vec::new();
    while let Some(chunk) = r.chunk().await.expect("stream body") {
        if limit.is_some_and(|l| started.elapsed() > l) {
            return StreamRun {
                first_record: first.unwrap_or_default(),
                total: started.elapsed(),
                records,
                finished: false,
            };
        }
        pending.extend_from_slice(&chunk);
        while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=nl).collect();
            first.get_or_insert_with(|| started.elapsed());
            records += 1;
            last_line = line;
        }
    }
    let last: Value = serde_json::from_slice(&last_line).unwrap_or(Value::Null);
    assert_eq!(last["type"], "final", "stream ended without a final record");
    StreamRun {
        first_record: first.unwrap_or_default(),
        total: started.elapsed(),
        records,
        finished: true,
    }
}

fn body_of(text: &str) -> String {
    json!({ "text": text, "include_text": false }).to_string()
}

fn main() {
    let plan = std::env::var("PHIFLOW_STREAM_BENCH")
        .unwrap_or_else(|_| "throughput:1,first:10,memory:50".into());
    let server = serve(
        "phiflow-stream-bench",
        &[
            ("SERVICE_MAX_BODY_BYTES", (128u64 << 20).to_string()),
            ("SERVICE_MAX_TEXT_CHARS", "100000000".into()),
        ],
        Duration::from_secs(120),
    );
    let pid = server.child.id();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(24 * 3600))
        .build()
        .expect("client");
    let mut report = results::Report::new("stream");
    report.knob("PHIFLOW_STREAM_BENCH", &plan);
    if let Ok(limit) = std::env::var("PHIFLOW_STREAM_BENCH_MEMORY_LIMIT_S") {
        report.knob("PHIFLOW_STREAM_BENCH_MEMORY_LIMIT_S", limit);
    }
    // Warm-up: the model is resident and the first batch is behind us.
    rt.block_on(stream(&client, &server.base, body_of(&note(20_000)), None));
    for part in plan.split(',') {
        let Some((what, mb)) = part.split_once(':') else {
            continue;
        };
        let mb: f64 = mb.parse().expect("size in MB");
        let text = note((mb * 1e6) as usize);
        match what {
            "throughput" => {
                let started = Instant::now();
                let status = rt.block_on(async {
                    let r = client
                        .post(format!("{}/pii/extract", server.base))
                        .json(&json!({ "text": text }))
                        .send()
                        .await
                        .expect("extract");
                    let status = r.status().as_u16();
                    let _ = r.bytes().await;
                    status
                });
                assert_eq!(status, 200);
                let one_shot = started.elapsed().as_secs_f64();
                let s = rt.block_on(stream(&client, &server.base, body_of(&text), None));
                let streamed = s.total.as_secs_f64();
                println!(
                    "stream/throughput {mb} MB: /pii/extract {one_shot:.1} s ({:.0} KB/s), \
                     /pii/extract/stream {streamed:.1} s ({:.0} KB/s), stream/extract time ratio {:.3}",
                    text.len() as f64 / 1e3 / one_shot,
                    text.len() as f64 / 1e3 / streamed,
                    streamed / one_shot
                );
                // Issue 19: streaming within 15% of the one-shot time.
                let x = format!("{mb} MB note");
                report
                    .figure(
                        "throughput: time",
                        &format!("/pii/extract, {x}"),
                        one_shot,
                        "s",
                    )
                    .figure(
                        "throughput: time",
                        &format!("/pii/extract/stream, {x}"),
                        streamed,
                        "s",
                    )
                    .figure_max("stream / one-shot time", &x, streamed / one_shot, "×", 1.15);
            }
            "first" => {
                let s = rt.block_on(stream(&client, &server.base, body_of(&text), None));
                println!(
                    "stream/first-record {mb} MB: first record after {:.3} s, whole stream {:.1} s \
                     ({} records), first/whole {:.4}",
                    s.first_record.as_secs_f64(),
                    s.total.as_secs_f64(),
                    s.records,
                    s.first_record.as_secs_f64() / s.total.as_secs_f64()
                );
                // Issue 19: the first record in under 10% of the whole stream's time.
                let x = format!("{mb} MB note");
                report
                    .figure("first record", &x, s.first_record.as_secs_f64(), "s")
                    .figure("whole stream", &x, s.total.as_secs_f64(), "s")
                    .figure_max(
                        "first record / whole stream",
                        &x,
                        s.first_record.as_secs_f64() / s.total.as_secs_f64(),
                        "×",
                        0.10,
                    );
            }
            "memory" => {
                let body = body_of(&text);
                drop(text);
                let body_len = body.len() as u64;
                let before = rss(pid);
                let peak = Arc::new(AtomicU64::new(before));
                let done = Arc::new(AtomicBool::new(false));
                let sampler = {
                    let (peak, done) = (peak.clone(), done.clone());
                    std::thread::spawn(move || {
                        while !done.load(Ordering::Relaxed) {
                            peak.fetch_max(rss(pid), Ordering::Relaxed);
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    })
                };
                let limit = std::env::var("PHIFLOW_STREAM_BENCH_MEMORY_LIMIT_S")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .map(Duration::from_secs);
                let s = rt.block_on(stream(&client, &server.base, body, limit));
                done.store(true, Ordering::Relaxed);
                let _ = sampler.join();
                let peak = peak.load(Ordering::Relaxed);
                println!(
                    "stream/memory {mb} MB: body {:.1} MB, server RSS before {:.1} MB, peak {:.1} MB, \
                     growth {:.1} MB = {:.2}× body (stream {:.0} s, {} records{})",
                    body_len as f64 / 1e6,
                    before as f64 / 1e6,
                    peak as f64 / 1e6,
                    (peak - before) as f64 / 1e6,
                    (peak - before) as f64 / body_len as f64,
                    s.total.as_secs_f64(),
                    s.records,
                    if s.finished {
                        ""
                    } else {
                        ", stopped by the time limit"
                    }
                );
                // Issue 19: peak growth under 4× the body.
                let x = format!(
                    "{mb} MB note{}",
                    if s.finished { "" } else { " (stopped early)" }
                );
                report
                    .figure("server RSS", "before", before as f64 / 1e6, "MB")
                    .figure("server RSS", "peak", peak as f64 / 1e6, "MB")
                    .figure_max(
                        "RSS growth / body",
                        &x,
                        (peak - before) as f64 / body_len as f64,
                        "×",
                        4.0,
                    );
            }
            other => eprintln!("unknown part {other}"),
        }
        let _ = std::io::Write::flush(&mut std::io::stdout());
    }
    report.write();
}
