//! FHIR bulk de-identification throughput, end to end from loopback: a generated population
//! is served by a local Bulk Data server on 127.0.0.1 (tests/common/bulk_server.rs, the one
//! the tests use: SMART token endpoint verifying the signed client assertion against the
//! registered JWKS, `$export` kick-off, 202 polling, manifest, NDJSON downloads with a bearer
//! token) and ingested through `POST /fhir/smart-backend/ingestions` on an in-process phiflow
//! server: the real job (job store, SMART auth, kick-off, polling, downloads, then the
//! Exporter's patient index, parts and assembly into NDJSON + Parquet per type).
//!
//! Each run reports end to end (POST to the job's end), and the job's own times for the
//! download and the de-identification parts (`download_seconds`, `deidentify_seconds` of its
//! summary), in resources/s and MB/s of NDJSON served.
//!
//! 1. Structured resources without free text (Patient, Encounter, Observation, Condition,
//!    MedicationRequest): target 20,000 resources/s or more on 2 cores, end to end.
//! 2. Resources with free text (DocumentReference notes, DiagnosticReport conclusions): the
//!    same texts are sent to `POST /pii/deidentify` on the same server (concurrency 8, same
//!    method and policy); route and ingestion alternate, five rounds. Target: the
//!    ingestion's de-identification at 0.9 or more of the route's rate.
//!
//! Run: `cargo bench --bench fhir`. `PHIFLOW_BENCH_RESOURCES` sets the structured size
//! (default 100,000, the size), `PHIFLOW_BENCH_TEXT_RESOURCES` the free-text size
//! (default 600; 0 skips it), `PHIFLOW_BENCH_ROUNDS` the free-text rounds (default 5). Needs
//! the fetched assets (scripts/fetch-assets). Lines starting `result:` are the figures.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use phiflow::config::Settings;
use phiflow::fhir::population::{self, Population, Spec};
use serde_json::{Value, json};

#[path = "support/helpers.rs"]
mod helpers;
use helpers::env_usize;
#[path = "support/results.rs"]
mod results;

#[path = "../tests/common/bulk_server.rs"]
#[allow(dead_code)]
mod bulk_server;
use bulk_server::{
    BulkServer, BulkServerConfig, RegisteredClient, RetryAfterStyle, ServedFile, TestKey,
};

const CLIENT_ID: &str = "phiflow-bench";
/// Resources per served NDJSON file (exports split large types into several files).
const PER_FILE: usize = 10_000;

fn main() {
    let structured = env_usize("PHIFLOW_BENCH_RESOURCES", 100_000);
    let with_text = env_usize("PHIFLOW_BENCH_TEXT_RESOURCES", 600);
    let rounds = env_usize("PHIFLOW_BENCH_ROUNDS", 5).max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(structured, with_text, rounds));
}

fn temp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("phiflow-bench-fhir-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// User + system CPU seconds of this process so far (Linux `/proc/self/stat`, in the
/// kernel's 100 Hz clock ticks). On a machine shared with other work, wall time says what
/// this run got; CPU time says what it needed. Everything here is one process: the Bulk
/// Data server, the phiflow server and the client.
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

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The population as a Bulk Data server serves it: NDJSON per type, at most [`PER_FILE`]
/// resources a file.
fn served(pop: &Population) -> Vec<ServedFile> {
    let mut files = Vec::new();
    for (t, lines) in &pop.lines {
        for (n, chunk) in lines.chunks(PER_FILE).enumerate() {
            let mut body = chunk.join("\n");
            body.push('\n');
            files.push(ServedFile {
                resource_type: t.clone(),
                name: format!("{t}-{}.ndjson", n + 1),
                body: body.into_bytes(),
                count: Some(chunk.len() as u64),
            });
        }
    }
    files
}

/// The phiflow server (in-process, 127.0.0.1) and a client for it.
struct Phiflow {
    base: String,
    client: reqwest::Client,
}

impl Phiflow {
    async fn post(&self, path: &str, body: &Value) -> Value {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .json(body)
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 200, "POST {path}");
        r.json().await.expect("json")
    }

    async fn get(&self, path: &str) -> Value {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 200, "GET {path}");
        r.json().await.expect("json")
    }
}

/// One ingestion, timed.
struct Ingested {
    resources: u64,
    /// POST to the job's end, as the client saw it.
    wall: f64,
    /// The job's own figures.
    duration: f64,
    download: f64,
    deidentify: f64,
    bytes_downloaded: u64,
    cpu: f64,
}

/// A Bulk Data server for `pop` on 127.0.0.1, with one registered client.
async fn bulk_server(pop: &Population, key: &TestKey) -> BulkServer {
    BulkServer::start(BulkServerConfig {
        clients: vec![RegisteredClient::new(CLIENT_ID, &[key])],
        files: served(pop),
        requires_access_token: true,
        // One 202, then the manifest; the client's poll interval is the wait.
        pending_polls: 1,
        retry_after: RetryAfterStyle::Omit,
        ..Default::default()
    })
    .await
}

/// Runs one ingestion of `bulk`'s export into `output_dir` to its end.
async fn ingest(phiflow: &Phiflow, bulk: &BulkServer, key: &TestKey, output_dir: &str) -> Ingested {
    let request = json!({
        "fhir_base_url": bulk.fhir_base_url,
        "token_url": bulk.token_url,
        "client_id": CLIENT_ID,
        "private_key_pem": key.private_pem,
        "key_id": key.kid,
        "output_dir": output_dir,
        "poll_interval_seconds": 0.1,
        "request_timeout_seconds": 60,
        "max_inflight_downloads": 4,
        "method": "replace",
        "policy": "hipaa_safe_harbor",
        "confidence_threshold": 0.7,
    });
    let cpu = cpu_seconds();
    let started = Instant::now();
    let job = phiflow
        .post("/fhir/smart-backend/ingestions", &request)
        .await;
    let id = job["job_id"].as_str().expect("job id").to_string();
    loop {
        let j = phiflow
            .get(&format!("/fhir/smart-backend/ingestions/{id}"))
            .await;
        if j["status"] != "running" {
            assert_eq!(j["status"], "succeeded", "{j}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    let s = phiflow
        .get(&format!("/fhir/smart-backend/ingestions/{id}/summary"))
        .await;
    let s = &s["summary"];
    assert_eq!(s["rejections"].as_array().map(Vec::len), Some(0), "{s}");
    let f = |k: &str| s[k].as_f64().unwrap_or(f64::NAN);
    Ingested {
        resources: s["resources_total"].as_u64().unwrap_or(0),
        wall,
        duration: f("duration_seconds"),
        download: f("download_seconds"),
        deidentify: f("deidentify_seconds"),
        bytes_downloaded: s["bytes_downloaded"].as_u64().unwrap_or(0),
        cpu,
    }
}

fn report(name: &str, i: &Ingested, bytes: usize) {
    let mb = bytes as f64 / 1e6;
    println!(
        "{name}: {} resources, {mb:.1} MB served ({:.1} MB downloaded) from 127.0.0.1",
        i.resources,
        i.bytes_downloaded as f64 / 1e6
    );
    println!(
        "  end to end {:.2} s (job {:.2} s): {:.0} resources/s, {:.1} MB/s",
        i.wall,
        i.duration,
        i.resources as f64 / i.wall,
        mb / i.wall
    );
    println!(
        "  download {:.2} s: {:.1} MB/s; de-identification (index, parts, assembly) {:.2} s: {:.0} resources/s, {:.1} MB/s",
        i.download,
        mb / i.download,
        i.deidentify,
        i.resources as f64 / i.deidentify,
        mb / i.deidentify
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    println!(
        "  CPU {:.2} s ({:.2} of {cores} cores busy end to end; load average now {})",
        i.cpu,
        i.cpu / i.wall,
        load_average()
    );
}

/// The free-text values the exporter sends through the core, in the same order.
fn texts_of(pop: &Population) -> Vec<String> {
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

/// The model's batching queue counters (`GET /models/loaded`), summed over loaded models.
#[derive(Clone, Copy, Default)]
struct Queue {
    batches: f64,
    windows: f64,
    tokens: f64,
    padded: f64,
    busy: f64,
}

impl Queue {
    async fn now(phiflow: &Phiflow) -> Self {
        let r = phiflow.get("/models/loaded").await;
        let mut q = Self::default();
        for m in r["models"].as_array().into_iter().flatten() {
            let f = |k: &str| m["queue"][k].as_f64().unwrap_or(0.0);
            q.batches += f("batches");
            q.windows += f("windows");
            q.tokens += f("tokens");
            q.padded += f("padded_tokens");
            q.busy += f("busy_seconds");
        }
        q
    }

    /// What the model was given between `self` and `later`, over `wall` seconds: windows per
    /// batch, padding, and seconds inside `Session::run` (all workers) per wall second.
    fn describe(&self, later: &Self, wall: f64) -> String {
        let (b, w) = (later.batches - self.batches, later.windows - self.windows);
        let (t, p) = (later.tokens - self.tokens, later.padded - self.padded);
        let busy = later.busy - self.busy;
        format!(
            "model: {b:.0} batches, {:.1} windows/batch, padded/real tokens {:.2}, inference {busy:.2} s ({:.2} per wall second)",
            w / b.max(1.0),
            p / t.max(1.0),
            busy / wall
        )
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn run(structured: usize, with_text: usize, rounds: usize) {
    let mut settings = Settings::from_env();
    settings.deid_secret_key = Some("bench-fhir-secret".into());
    settings.data_dir = temp("data");
    let root = temp("out");
    settings.fhir_output_root = Some(root.clone());
    let state = phiflow::api::build_state(settings)
        .expect("service starts (run scripts/fetch-assets first)");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(phiflow::api::serve(listener, state, std::future::pending()));
    let phiflow = Phiflow {
        base: base.clone(),
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .expect("client"),
    };
    let key = TestKey::ec_p384("bench-key");
    let mut record = results::Report::new("fhir");
    record
        .knob("PHIFLOW_BENCH_RESOURCES", structured)
        .knob("PHIFLOW_BENCH_TEXT_RESOURCES", with_text)
        .knob("rounds", rounds);
    println!(
        "cores: {}; load average {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        load_average()
    );
    // The model loads on first use: once, before anything is timed.
    send_all(
        &phiflow.client,
        &base,
        &["Warm-up for Sumiko Larue, MRN 1234567.".to_string()],
        1,
    )
    .await;

    // 1. Structured resources, no free text.
    let pop = population::generate(&Spec {
        seed: 1,
        patients: structured.div_ceil(9),
        structured_per_patient: 8,
        notes_per_patient: 0,
        relatives_and_narratives: false,
    });
    let bulk = bulk_server(&pop, &key).await;
    let i = ingest(&phiflow, &bulk, &key, "structured").await;
    let _ = std::fs::remove_dir_all(root.join("structured"));
    report("structured (no free text)", &i, pop.bytes());
    let rate = i.resources as f64 / i.wall;
    println!(
        "  target >= 20000 resources/s end to end (wall): {}",
        if rate >= 20_000.0 { "met" } else { "MISSED" }
    );
    println!(
        "result: fhir.structured resources={} mb={:.1} end_to_end_s={:.3} resources_per_s={:.0} mb_per_s={:.2} deidentify_s={:.3} deidentify_resources_per_s={:.0} deidentify_mb_per_s={:.2} download_s={:.3} cpu_s={:.2}",
        i.resources,
        pop.bytes() as f64 / 1e6,
        i.wall,
        rate,
        pop.bytes() as f64 / 1e6 / i.wall,
        i.deidentify,
        i.resources as f64 / i.deidentify,
        pop.bytes() as f64 / 1e6 / i.deidentify,
        i.download,
        i.cpu
    );
    record
        .figure_min(
            "structured resources/s",
            "end to end",
            rate,
            "resources/s",
            20_000.0,
        )
        .figure(
            "structured resources/s",
            "de-identification",
            i.resources as f64 / i.deidentify,
            "resources/s",
        )
        .figure(
            "structured MB/s",
            "end to end",
            pop.bytes() as f64 / 1e6 / i.wall,
            "MB/s",
        );
    drop(pop);
    if with_text == 0 {
        record.write();
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
    let bulk = bulk_server(&pop, &key).await;
    let texts = texts_of(&pop);
    let chars: usize = texts.iter().map(|t| t.chars().count()).sum();
    println!(
        "free text: {} resources ({} texts, {chars} chars), {:.2} MB served",
        pop.resources(),
        texts.len(),
        pop.bytes() as f64 / 1e6
    );
    // Warm-up of both paths at this size, untimed.
    send_all(&phiflow.client, &base, &texts[..texts.len().min(32)], 8).await;
    let (mut deid_ratios, mut e2e_ratios, mut cpu_ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=rounds {
        // Route first in odd rounds, ingestion first in even ones: load that drifts during a
        // round favours neither side.
        let mut ingested = None;
        if round % 2 == 0 {
            ingested = Some(ingest_texts(&phiflow, &bulk, &key, &root, round, &pop).await);
        }
        let q0 = Queue::now(&phiflow).await;
        let cpu = cpu_seconds();
        let started = Instant::now();
        send_all(&phiflow.client, &base, &texts, 8).await;
        let http = started.elapsed().as_secs_f64();
        let http_cpu = cpu_seconds() - cpu;
        let q1 = Queue::now(&phiflow).await;
        println!(
            "round {round}: /pii/deidentify, concurrency 8: {} texts in {http:.2} s (CPU {http_cpu:.2} s, {:.2} cores busy): {:.1} texts/s, {:.0} chars/s",
            texts.len(),
            http_cpu / http,
            texts.len() as f64 / http,
            chars as f64 / http
        );
        println!("  route {}", q0.describe(&q1, http));
        let i = match ingested {
            Some(i) => i,
            None => ingest_texts(&phiflow, &bulk, &key, &root, round, &pop).await,
        };
        let (deid, e2e) = (http / i.deidentify, http / i.wall);
        println!(
            "  ingestion (run {}): de-identification {:.1} texts/s, end to end {:.1} texts/s; ingestion/route throughput: de-identification {deid:.3}, end to end {e2e:.3} (CPU per text {:.3}); target >= 0.9",
            if round % 2 == 0 { "first" } else { "second" },
            texts.len() as f64 / i.deidentify,
            texts.len() as f64 / i.wall,
            http_cpu / i.cpu
        );
        deid_ratios.push(deid);
        e2e_ratios.push(e2e);
        cpu_ratios.push(http_cpu / i.cpu);
    }
    let (deid, e2e) = (median(deid_ratios.clone()), median(e2e_ratios.clone()));
    println!(
        "ingestion/route throughput over {rounds} rounds: de-identification median {deid:.3} (all {deid_ratios:.3?}), end to end median {e2e:.3} (all {e2e_ratios:.3?}); target >= 0.9 (de-identification): {}",
        if deid >= 0.9 { "met" } else { "MISSED" }
    );
    println!(
        "result: fhir.free_text resources={} texts={} chars={chars} rounds={rounds} deidentify_ratio_median={deid:.3} end_to_end_ratio_median={e2e:.3} route_cpu_over_ingestion_cpu_median={:.3}",
        pop.resources(),
        texts.len(),
        median(cpu_ratios)
    );
    record
        .figure_min(
            "free text: ingestion / route",
            "de-identification",
            deid,
            "ratio",
            0.9,
        )
        .figure("free text: ingestion / route", "end to end", e2e, "ratio")
        .write();
}

/// One ingestion of the free-text export, reported with what the model was given.
async fn ingest_texts(
    phiflow: &Phiflow,
    bulk: &BulkServer,
    key: &TestKey,
    root: &std::path::Path,
    round: usize,
    pop: &Population,
) -> Ingested {
    let q = Queue::now(phiflow).await;
    let out = format!("text-{round}");
    let i = ingest(phiflow, bulk, key, &out).await;
    let q2 = Queue::now(phiflow).await;
    let _ = std::fs::remove_dir_all(root.join(&out));
    report(
        &format!("round {round}: ingestion with free text"),
        &i,
        pop.bytes(),
    );
    println!("  ingestion {}", q.describe(&q2, i.wall));
    i
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
