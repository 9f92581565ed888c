//! FHIR bulk de-identification throughput: the [`Exporter`] (index, parts, assembly into
//! NDJSON and Parquet) over a generated population, in resources/s and MB/s of input.
//!
//! 1. Structured resources without free text (Patient, Encounter, Observation, Condition,
//!    MedicationRequest): target 20,000 resources/s or more on 2 cores.
//! 2. Resources with free text (DocumentReference notes, DiagnosticReport conclusions): the
//!    same texts also sent to `POST /pii/deidentify` (in-process server on 127.0.0.1,
//!    concurrency 8, same method and policy); target: the export at 0.9 or more of that rate.
//!
//! Run: `cargo bench --bench fhir`. `PHIFLOW_BENCH_RESOURCES` sets the structured size
//! (default 20,000; the size is 100,000), `PHIFLOW_BENCH_TEXT_RESOURCES` the free-text
//! size (default 600; 0 skips it). Needs the fetched assets (scripts/fetch-assets).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use phiflow::config::Settings;
use phiflow::deid::policy::Method;
use phiflow::deidentifier::DeidOptions;
use phiflow::fhir::export::{self, Exporter, Progress};
use phiflow::fhir::population::{self, Spec};
use serde_json::{Value, json};

#[path = "support/helpers.rs"]
mod helpers;
use helpers::env_usize;

fn main() {
    let structured = env_usize("PHIFLOW_BENCH_RESOURCES", 20_000);
    let with_text = env_usize("PHIFLOW_BENCH_TEXT_RESOURCES", 600);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(structured, with_text));
}

fn options() -> DeidOptions {
    DeidOptions {
        method: Some(Method::Replace),
        policy: Some("hipaa_safe_harbor".into()),
        confidence_threshold: Some(0.7),
        ..DeidOptions::default()
    }
}

fn temp(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("phiflow-bench-fhir-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

struct Timing {
    index: f64,
    parts: f64,
    assemble: f64,
    resources: u64,
    /// CPU seconds the process used (all threads; includes anything else it runs).
    cpu: f64,
}

/// User + system CPU seconds of this process so far (Linux `/proc/self/stat`, in the
/// kernel's 100 Hz clock ticks). On a machine shared with other work, wall time says what
/// this run got; CPU time says what it needed.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command name (which ends with the last ')'): utime is the 12th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        f.get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (ticks(11) + ticks(12)) / 100.0
}

impl Timing {
    fn total(&self) -> f64 {
        self.index + self.parts + self.assemble
    }
}

/// The three passes of an export, timed one by one (what `Exporter::run` does).
async fn export(exporter: &Exporter, input: &Path) -> Timing {
    let sources = export::sources_in(input).expect("sources");
    let progress = Progress::default();
    let cpu = cpu_seconds();
    let t = Instant::now();
    let index = Arc::new(export::index(&sources).expect("index"));
    let index_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut parts = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        parts.push(exporter.part(i, s, &index, &progress).await.expect("part"));
    }
    let parts_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let outputs = exporter.assemble(&parts).expect("assemble");
    let assemble_s = t.elapsed().as_secs_f64();
    let summary = export::summarize(&parts, index.patients() as u64, outputs);
    assert!(summary.rejections.is_empty(), "{:?}", summary.rejections);
    exporter.clean().expect("clean");
    Timing {
        index: index_s,
        parts: parts_s,
        assemble: assemble_s,
        resources: summary.resources_total,
        cpu: cpu_seconds() - cpu,
    }
}

fn report(name: &str, t: &Timing, bytes: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    println!(
        "{name}: {} resources, {:.1} MB in {:.2} s (index {:.2}, parts {:.2}, assembly {:.2}): {:.0} resources/s, {:.1} MB/s",
        t.resources,
        bytes as f64 / 1e6,
        t.total(),
        t.index,
        t.parts,
        t.assemble,
        t.resources as f64 / t.total(),
        bytes as f64 / 1e6 / t.total()
    );
    println!(
        "  CPU {:.2} s ({:.2} of {cores} cores busy): {:.0} resources/s with the {cores} cores to itself",
        t.cpu,
        t.cpu / t.total(),
        t.resources as f64 / (t.cpu / cores)
    );
}

/// The free-text values the exporter sends through the core, in the same order.
fn texts_of(pop: &population::Population) -> Vec<String> {
    let mut out = Vec::new();
    for (t, lines) in &pop.lines {
        for l in lines {
            let v: Value = serde_json::from_str(l).expect("json");
            match t.as_str() {
                "DocumentReference" => {
                    out.extend(v["description"].as_str().map(String::from));
                    for c in v["content"].as_array().into_iter().flatten() {
                        let data = c["attachment"]["data"].as_str().unwrap_or_default();
                        let bytes = base64::engine::general_purpose::STANDARD
                            .decode(data)
                            .expect("base64");
                        out.push(String::from_utf8(bytes).expect("utf-8"));
                    }
                }
                "DiagnosticReport" => out.extend(v["conclusion"].as_str().map(String::from)),
                _ => {}
            }
        }
    }
    out
}

async fn run(structured: usize, with_text: usize) {
    let mut settings = Settings::from_env();
    settings.deid_secret_key = Some("bench-fhir-secret".into());
    settings.data_dir = temp("data");
    let state = phiflow::api::build_state_without_jobs(settings)
        .expect("service starts (run scripts/fetch-assets first)");
    let rd = phiflow::fhir::cli::resource_deidentifier(state.deid.clone(), &options())
        .await
        .expect("resource de-identifier");
    let rd = Arc::new(rd);
    println!(
        "cores: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    // 1. Structured resources, no free text.
    let pop = population::generate(&Spec {
        seed: 1,
        patients: structured.div_ceil(9),
        structured_per_patient: 8,
        notes_per_patient: 0,
        relatives_and_narratives: false,
    });
    let input = temp("structured-in");
    pop.write(&input).expect("write");
    let exporter = Exporter::new(rd.clone(), &temp("structured-out")).expect("exporter");
    let t = export(&exporter, &input).await;
    report("structured (no free text)", &t, pop.bytes());
    let rate = t.resources as f64 / t.total();
    println!(
        "  target >= 20000 resources/s (wall): {}",
        if rate >= 20_000.0 { "met" } else { "MISSED" }
    );
    if with_text == 0 {
        return;
    }

    // 2. Resources with free text, against /pii/deidentify on the same texts.
    let pop = population::generate(&Spec {
        seed: 2,
        patients: with_text.div_ceil(3),
        structured_per_patient: 0,
        notes_per_patient: 2,
        relatives_and_narratives: false,
    });
    let input = temp("text-in");
    pop.write(&input).expect("write");
    let texts = texts_of(&pop);
    let chars: usize = texts.iter().map(|t| t.chars().count()).sum();
    println!(
        "free text: {} resources, {} texts, {chars} chars",
        pop.resources(),
        texts.len()
    );
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
    // Warm-up, then route and export in turn (twice: the machine is shared, and load drifts).
    send_all(&client, &base, &texts[..texts.len().min(16)], 8).await;
    let mut ratios = Vec::new();
    for round in 1..=2 {
        let exporter = Exporter::new(rd.clone(), &temp("text-out")).expect("exporter");
        let cpu = cpu_seconds();
        let started = Instant::now();
        send_all(&client, &base, &texts, 8).await;
        let http = started.elapsed().as_secs_f64();
        let http_cpu = cpu_seconds() - cpu;
        println!(
            "round {round}: /pii/deidentify, concurrency 8: {} texts in {http:.2} s (CPU {http_cpu:.2} s, server and client): {:.1} texts/s, {:.0} chars/s",
            texts.len(),
            texts.len() as f64 / http,
            chars as f64 / http
        );
        let t = export(&exporter, &input).await;
        report("with free text", &t, pop.bytes());
        println!(
            "  export: {:.1} texts/s, {:.0} chars/s; export/route throughput {:.3} (CPU time: {:.3}); target >= 0.9",
            texts.len() as f64 / t.total(),
            chars as f64 / t.total(),
            http / t.total(),
            http_cpu / t.cpu
        );
        ratios.push(http / t.total());
    }
    println!(
        "export/route throughput, best of {}: {:.3}",
        ratios.len(),
        ratios.iter().copied().fold(0.0, f64::max)
    );
}

/// Sends every text to `/pii/deidentify` with at most `concurrency` in flight.
async fn send_all(client: &reqwest::Client, base: &str, texts: &[String], concurrency: usize) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let texts = Arc::new(texts.to_vec());
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, url, next, texts) = (
            client.clone(),
            format!("{base}/pii/deidentify"),
            next.clone(),
            texts.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(text) = texts.get(i) else { break };
                let r = client
                    .post(&url)
                    .json(&json!({
                        "text": text,
                        "method": "replace",
                        "policy": "hipaa_safe_harbor",
                        "confidence_threshold": 0.7
                    }))
                    .send()
                    .await
                    .expect("request");
                assert_eq!(r.status(), 200);
                let _: Value = r.json().await.expect("json");
            }
        }));
    }
    for w in workers {
        w.await.expect("worker");
    }
}
