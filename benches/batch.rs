//! Batch CLI against HTTP on the same notes: writes N synthetic notes to Parquet, runs
//! `phiflow batch deidentify` (the built binary) over them, then sends the same notes to
//! `POST /pii/deidentify` of an in-process server at a fixed concurrency, and prints rows/s of
//! each and the ratio HTTP/CLI. It also checks that both gave the same de-identified text.
//!
//! Run: `cargo bench --bench batch` (PHIFLOW_BENCH_ROWS sets the note count, default 1000;
//! PHIFLOW_BENCH_CONCURRENCY the HTTP requests in flight, default 96: the most rows the CLI has
//! in flight, 3 batches of 32). Issue 17's figure, every surface on one file, is
//! `scripts/bench-surfaces 100000`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use phiflow::config::Settings;
use serde_json::{Value, json};

#[path = "corpus.rs"]
mod corpus;
#[path = "support/helpers.rs"]
mod helpers;
use helpers::env_usize;

const SECRET: &str = "batch-bench-secret";

fn main() {
    let rows = env_usize("PHIFLOW_BENCH_ROWS", 1000);
    let concurrency = env_usize("PHIFLOW_BENCH_CONCURRENCY", 96);
    let dir = std::env::temp_dir().join(format!("phiflow-bench-batch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let notes = corpus::notes(rows);
    let ids: Vec<String> = (0..rows).map(|i| format!("note-{i:07}")).collect();
    let chars: usize = notes.iter().map(|n| n.chars().count()).sum();
    write_input(&dir.join("notes.parquet"), &ids, &notes);
    println!("corpus: {rows} notes, {chars} chars; HTTP concurrency {concurrency}");

    let (cli_rps, cli_wall, cli_texts) = run_cli(&dir);
    println!(
        "CLI:  {cli_rps:.1} rows/s (after start-up; {:.1} rows/s over {cli_wall:.1} s wall with model load)",
        rows as f64 / cli_wall
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (http_rps, http_texts) = rt.block_on(run_http(&ids, &notes, concurrency));
    println!("HTTP: {http_rps:.1} rows/s");
    println!("ratio HTTP/CLI: {:.3}", http_rps / cli_rps);
    let same = ids
        .iter()
        .filter(|id| cli_texts.get(*id) == http_texts.get(*id))
        .count();
    println!("identical de-identified text: {same}/{rows}");
    assert_eq!(same, rows, "the CLI and HTTP gave different text");
    let _ = std::fs::remove_dir_all(&dir);
}

fn write_input(path: &Path, ids: &[String], notes: &[String]) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("text", DataType::Utf8, false),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(ids)),
        Arc::new(StringArray::from_iter_values(notes)),
    ];
    let batch = RecordBatch::try_new(schema.clone(), cols).expect("batch");
    let mut w = ArrowWriter::try_new(std::fs::File::create(path).expect("create"), schema, None)
        .expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
}

/// Rows/s the CLI reports (after its start-up), its wall time, and its text by id.
fn run_cli(dir: &Path) -> (f64, f64, HashMap<String, String>) {
    let out = dir.join("out");
    let started = Instant::now();
    let result = std::process::Command::new(env!("CARGO_BIN_EXE_phiflow"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("SERVICE_DEID_SECRET_KEY", SECRET)
        .env("SERVICE_LOG", "warn")
        .args(["batch", "deidentify", "--method", "replace", "--input"])
        .arg(dir.join("notes.parquet"))
        .arg("--output")
        .arg(&out)
        .output()
        .expect("phiflow runs");
    let wall = started.elapsed().as_secs_f64();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let summary: Value = serde_json::from_slice(&result.stdout).expect("summary");
    let file = std::fs::File::open(out.join("part-0-of-1.parquet")).expect("output");
    let mut texts = HashMap::new();
    for b in ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet")
        .build()
        .expect("reader")
    {
        let b = b.expect("batch");
        let id = b.column_by_name("id").expect("id").as_string::<i32>();
        let t = b
            .column_by_name("deidentified_text")
            .expect("text")
            .as_string::<i32>();
        for i in 0..b.num_rows() {
            texts.insert(id.value(i).to_string(), t.value(i).to_string());
        }
    }
    (
        summary["rows_per_second"].as_f64().expect("rows/s"),
        wall,
        texts,
    )
}

/// Rows/s through `POST /pii/deidentify` and the text by id.
async fn run_http(
    ids: &[String],
    notes: &[String],
    concurrency: usize,
) -> (f64, HashMap<String, String>) {
    let mut settings = Settings::from_env();
    settings.deid_secret_key = Some(SECRET.into());
    let state = phiflow::api::build_state_without_jobs(settings).expect("service starts");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(phiflow::api::serve(listener, state, std::future::pending()));
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
    let url = format!("{base}/pii/deidentify");
    // Warm-up.
    for note in notes.iter().take(4) {
        post(&client, &url, note).await;
    }
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let notes = Arc::new(notes.to_vec());
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, url, next, notes) = (client.clone(), url.clone(), next.clone(), notes.clone());
        workers.push(tokio::spawn(async move {
            let mut got = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(note) = notes.get(i) else { break };
                got.push((i, post(&client, &url, note).await));
            }
            got
        }));
    }
    let mut texts = HashMap::new();
    for w in workers {
        for (i, t) in w.await.expect("worker") {
            texts.insert(ids[i].clone(), t);
        }
    }
    (ids.len() as f64 / started.elapsed().as_secs_f64(), texts)
}

async fn post(client: &reqwest::Client, url: &str, note: &str) -> String {
    let r = client
        .post(url)
        .json(&json!({ "text": note, "method": "replace" }))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.expect("json");
    body["deidentified_text"]
        .as_str()
        .expect("text")
        .to_string()
}
