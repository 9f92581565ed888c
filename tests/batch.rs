//! `phiflow batch deidentify` run as the built binary on temp files with the real model:
//! Parquet, NDJSON and CSV in, Parquet out with the input columns kept; the same text and spans
//! as `/pii/deidentify`; shards that partition the input, a killed shard rerun without
//! duplicates or leftovers; bad rows reported in their row, bad files failing clearly.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::properties::WriterProperties;
use serde_json::{Value, json};

const SECRET: &str = "batch-test-secret";

/// Synthetic notes with planted identifiers, of varied length.
fn notes(n: usize) -> Vec<String> {
    let first = ["John", "Aisha", "Maria", "Wei", "Fatima", "Carlos"];
    let last = ["Smith", "Okafor", "Garcia", "Chen", "Haddad", "Alvarez"];
    let body = "Patient presents for follow-up of type 2 diabetes. Metformin continued. ";
    (0..n)
        .map(|i| {
            format!(
                "{} {} (MRN {}) was seen on 2021-04-{:02} at {} Oak Street, Boston. Call (617) 555-01{:02}. {}",
                first[i % 6],
                last[(i * 5) % 6],
                4_829_100 + i,
                1 + i % 28,
                10 + i,
                i % 100,
                body.repeat(1 + i % 3)
            )
        })
        .collect()
}

fn phiflow() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_phiflow"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("SERVICE_DEID_SECRET_KEY", SECRET)
        .env("SERVICE_LOG", "warn")
        .arg("batch")
        .arg("deidentify");
    c
}

/// Runs the CLI to the end; returns its output.
fn run(args: &[&str]) -> Output {
    phiflow()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("phiflow runs")
}

fn run_ok(args: &[&str]) -> Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "phiflow failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("summary JSON on stdout")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `(id, text, site)` rows as a record batch with an integer id.
fn input_batch(rows: &[(i64, Option<&str>, &str)]) -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("text", DataType::Utf8, true),
        Field::new("site", DataType::Utf8, false),
    ]);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.1))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.2))),
    ];
    RecordBatch::try_new(Arc::new(schema), cols).expect("batch")
}

fn write_parquet(path: &Path, batch: &RecordBatch, row_group_rows: usize) {
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(row_group_rows))
        .build();
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(path).expect("create"),
        batch.schema(),
        Some(props),
    )
    .expect("writer");
    w.write(batch).expect("write");
    w.close().expect("close");
}

fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).expect("output exists");
    ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet")
        .build()
        .expect("reader")
        .map(|b| b.expect("batch"))
        .collect()
}

/// One output row, every column as comparable values (spans as JSON).
#[derive(Debug, Clone, PartialEq)]
struct Row {
    id: String,
    cols: BTreeMap<String, Value>,
}

fn rows_of(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
        for i in 0..b.num_rows() {
            let mut cols = BTreeMap::new();
            for (f, c) in b.schema().fields().iter().zip(b.columns()) {
                cols.insert(f.name().clone(), cell(c, i));
            }
            let id = match &cols["id"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out.push(Row { id, cols });
        }
    }
    out
}

fn cell(c: &ArrayRef, i: usize) -> Value {
    if c.is_null(i) {
        return Value::Null;
    }
    match c.data_type() {
        DataType::Utf8 => json!(c.as_string::<i32>().value(i)),
        DataType::Int64 => json!(c.as_primitive::<arrow_array::types::Int64Type>().value(i)),
        DataType::List(_) => {
            let list = c.as_list::<i32>().value(i);
            let st = list.as_struct();
            (0..st.len())
                .map(|j| {
                    let str_of =
                        |n: &str| st.column_by_name(n).expect(n).as_string::<i32>().value(j);
                    let num = |n: &str| {
                        st.column_by_name(n)
                            .expect(n)
                            .as_primitive::<UInt64Type>()
                            .value(j)
                    };
                    json!({
                        "label": str_of("label"),
                        "canonical_label": str_of("canonical_label"),
                        "start": num("start"),
                        "end": num("end"),
                        "output_start": num("output_start"),
                        "output_end": num("output_end"),
                        "confidence": st.column_by_name("confidence").expect("confidence")
                            .as_primitive::<Float32Type>().value(j),
                        "source": str_of("source"),
                        "action": str_of("action"),
                    })
                })
                .collect()
        }
        other => panic!("unexpected output type {other}"),
    }
}

fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    rows
}

fn outputs_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("output dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn csv_field(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

#[test]
fn parquet_ndjson_and_csv_become_parquet_with_their_columns_kept() {
    let dir = common::temp_dir("batch-formats");
    let texts = notes(5);
    let rows: Vec<(i64, Option<&str>, &str)> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (i as i64 + 1, Some(t.as_str()), ["north", "south"][i % 2]))
        .collect();
    write_parquet(&dir.join("notes.parquet"), &input_batch(&rows), 2);
    let ndjson: String = rows
        .iter()
        .map(|(id, t, site)| {
            format!(
                "{{\"id\": {id}, \"text\": {}, \"site\": \"{site}\"}}\n",
                json!(t)
            )
        })
        .collect();
    std::fs::write(dir.join("notes.ndjson"), ndjson).expect("ndjson");
    let mut csv = String::from("id,text,site\n");
    for (id, t, site) in &rows {
        csv.push_str(&format!(
            "{id},{},{site}\n",
            csv_field(t.unwrap_or_default())
        ));
    }
    std::fs::write(dir.join("notes.csv"), &csv).expect("csv");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(dir.join("notes.csv.gz")).expect("gz"),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut gz, csv.as_bytes()).expect("gzip");
    gz.finish().expect("gzip");

    let mut deidentified: Vec<Vec<Value>> = Vec::new();
    for name in ["notes.parquet", "notes.ndjson", "notes.csv", "notes.csv.gz"] {
        let out = dir.join(format!("out-{name}"));
        let summary = run_ok(&[
            "--input",
            s(&dir.join(name)),
            "--output",
            s(&out),
            "--method",
            "replace",
            "--batch-rows",
            "2",
        ]);
        assert_eq!(summary["rows"], 5, "{name}: {summary}");
        assert_eq!(summary["ok"], 5, "{name}: {summary}");
        assert_eq!(outputs_in(&out), ["part-0-of-1.parquet"], "{name}");
        let batches = read_parquet(&out.join("part-0-of-1.parquet"));
        let schema = batches[0].schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(
            names,
            [
                "id",
                "text",
                "site",
                "deidentified_text",
                "spans",
                "status",
                "error"
            ],
            "{name}"
        );
        let got = rows_of(&batches);
        assert_eq!(got.len(), 5);
        for (row, (id, text, site)) in got.iter().zip(&rows) {
            assert_eq!(row.id, id.to_string(), "{name}: input order kept");
            assert_eq!(row.cols["text"], json!(text), "{name}");
            assert_eq!(row.cols["site"], json!(site), "{name}");
            assert_eq!(row.cols["status"], json!("ok"), "{name}");
            let d = row.cols["deidentified_text"].as_str().expect("text");
            assert_ne!(Some(d), *text, "{name}");
            assert!(
                !d.contains(&(4_829_099 + id).to_string()),
                "{name}: MRN survived"
            );
            assert!(
                row.cols["spans"].as_array().is_some_and(|s| s.len() >= 3),
                "{name}"
            );
        }
        deidentified.push(
            got.iter()
                .map(|r| json!([r.cols["deidentified_text"], r.cols["spans"]]))
                .collect(),
        );
    }
    // Integer ids in Parquet and their text in NDJSON and CSV key the rows alike.
    assert_eq!(deidentified[0], deidentified[1]);
    assert_eq!(deidentified[0], deidentified[2]);
    assert_eq!(deidentified[0], deidentified[3]);
}

#[tokio::test]
async fn the_cli_gives_the_route_output() {
    let server = common::start(|s| s.deid_secret_key = Some(SECRET.into()));
    let dir = common::temp_dir("batch-parity");
    let texts = notes(8);
    let ids: Vec<String> = (0..texts.len()).map(|i| format!("note-{i:03}")).collect();
    let ndjson: String = ids
        .iter()
        .zip(&texts)
        .rev() // Input order differs from id order: the comparison sorts by id.
        .map(|(id, t)| format!("{}\n", json!({"id": id, "text": t})))
        .collect();
    std::fs::write(dir.join("in.jsonl"), ndjson).expect("input");
    for method in ["replace", "mask"] {
        let out = dir.join(format!("out-{method}"));
        run_ok(&[
            "--input",
            s(&dir.join("in.jsonl")),
            "--output",
            s(&out),
            "--method",
            method,
        ]);
        let cli = sorted(rows_of(&read_parquet(&out.join("part-0-of-1.parquet"))));
        assert_eq!(cli.len(), texts.len());
        for (row, (id, text)) in cli.iter().zip(ids.iter().zip(&texts)) {
            assert_eq!(&row.id, id);
            let (status, body) = server
                .post(
                    "/pii/deidentify",
                    &json!({ "text": text, "method": method }),
                )
                .await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(
                row.cols["deidentified_text"], body["deidentified_text"],
                "{method}"
            );
            let http_spans: Vec<Value> = body["entities"]
                .as_array()
                .expect("entities")
                .iter()
                .map(|e| {
                    json!({
                        "label": e["label"],
                        "canonical_label": e["canonical_label"],
                        "start": e["start"],
                        "end": e["end"],
                        "output_start": e["output_start"],
                        "output_end": e["output_end"],
                        "confidence": e["confidence"].as_f64().expect("confidence") as f32,
                        "source": e["source"],
                        "action": e["action"],
                    })
                })
                .collect();
            assert_eq!(row.cols["spans"], json!(http_spans), "{method} {id}");
        }
    }
}

/// Waits for a file of the shard's temporary name to appear in `dir`.
fn wait_for_temp(dir: &Path, prefix: &str, child: &mut std::process::Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if outputs_in(dir).iter().any(|n| n.starts_with(prefix)) {
            return true;
        }
        if child.try_wait().expect("child").is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
fn shards_partition_the_input_and_a_killed_shard_reruns_cleanly() {
    let dir = common::temp_dir("batch-shards");
    let input = dir.join("in");
    std::fs::create_dir_all(&input).expect("input dir");
    let texts = notes(36);
    // Two files (read in name order), row groups of 5 rows, shard units of 3 rows.
    for (f, range) in [("a.parquet", 0..20), ("b.parquet", 20..36)] {
        let rows: Vec<(i64, Option<&str>, &str)> = range
            .map(|i| (i as i64, Some(texts[i].as_str()), "site"))
            .collect();
        write_parquet(&input.join(f), &input_batch(&rows), 5);
    }
    std::fs::write(input.join("_SUCCESS"), "").expect("marker is skipped");
    let common_args = |out: &Path| {
        vec![
            "--input".to_string(),
            s(&input).to_string(),
            "--output".to_string(),
            s(out).to_string(),
            "--shard-block-rows".to_string(),
            "3".to_string(),
            "--batch-rows".to_string(),
            "2".to_string(),
            "--method".to_string(),
            "shift_dates".to_string(),
        ]
    };
    let full_out = dir.join("full");
    let args: Vec<String> = common_args(&full_out);
    run_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let full = rows_of(&read_parquet(&full_out.join("part-0-of-1.parquet")));
    assert_eq!(full.len(), 36);

    let out = dir.join("sharded");
    let shard_args = |i: usize| {
        let mut a = common_args(&out);
        a.extend(["--shard".to_string(), format!("{i}/3")]);
        a
    };
    for i in [0, 2] {
        let a = shard_args(i);
        run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    }
    // Shard 1 is killed once its output is under way, and left behind a temporary file.
    let a = shard_args(1);
    let mut child = phiflow()
        .args(&a)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    assert!(
        wait_for_temp(&out, ".part-1-of-3.parquet.", &mut child),
        "shard 1 started writing"
    );
    child.kill().expect("kill");
    child.wait().expect("wait");
    let left = outputs_in(&out);
    assert!(
        !left.contains(&"part-1-of-3.parquet".to_string()),
        "killed before completion: {left:?}"
    );
    assert!(
        left.iter().any(|n| n.starts_with(".part-1-of-3.parquet.")),
        "{left:?}"
    );
    // The retry, and a rerun of shard 0 that replaces its part.
    for i in [1, 0] {
        let a = shard_args(i);
        run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    }
    assert_eq!(
        outputs_in(&out),
        [
            "part-0-of-3.parquet",
            "part-1-of-3.parquet",
            "part-2-of-3.parquet"
        ],
        "no temporary files left"
    );
    let mut union = Vec::new();
    let mut sizes = Vec::new();
    for i in 0..3 {
        let rows = rows_of(&read_parquet(&out.join(format!("part-{i}-of-3.parquet"))));
        sizes.push(rows.len());
        // Rows within a shard keep input order.
        let ids: Vec<i64> = rows.iter().map(|r| r.id.parse().expect("id")).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        union.extend(rows);
    }
    assert!(sizes.iter().all(|&n| n >= 9), "balanced shards: {sizes:?}");
    assert_eq!(sorted(union), sorted(full.clone()));
    // Date shifts are keyed by the row id: the dates moved, the same way in every run.
    assert!(full.iter().all(|r| r.cols["status"] == json!("ok")));
    let d0 = full[0].cols["deidentified_text"].as_str().expect("text");
    assert!(!d0.contains("2021-04-01"), "{d0}");
}

#[test]
fn null_and_empty_texts_are_reported_in_their_rows() {
    let dir = common::temp_dir("batch-rows");
    std::fs::write(
        dir.join("in.ndjson"),
        "{\"id\": \"a\", \"text\": \"Seen by Dr. John Smith.\"}\n\n{\"id\": \"b\", \"text\": null}\n{\"id\": \"c\", \"text\": \"\"}\n{\"id\": \"d\"}\n",
    )
    .expect("input");
    let out = dir.join("out");
    let summary = run_ok(&["--input", s(&dir.join("in.ndjson")), "--output", s(&out)]);
    assert_eq!(summary["rows"], 4, "{summary}");
    let rows = rows_of(&read_parquet(&out.join("part-0-of-1.parquet")));
    let got: Vec<(&str, &Value, &Value, &Value)> = rows
        .iter()
        .map(|r| {
            (
                r.id.as_str(),
                &r.cols["status"],
                &r.cols["error"],
                &r.cols["deidentified_text"],
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "a",
                &json!("ok"),
                &Value::Null,
                &rows[0].cols["deidentified_text"]
            ),
            ("b", &json!("error"), &json!("null_text"), &Value::Null),
            ("c", &json!("ok"), &Value::Null, &json!("")),
            ("d", &json!("error"), &json!("null_text"), &Value::Null),
        ]
    );
    assert!(
        !rows[0].cols["deidentified_text"]
            .as_str()
            .expect("text")
            .contains("Smith")
    );
    assert_eq!(summary["errors"], 2);
    // A shard that owns no rows still writes its (empty) part, so every index completes.
    let summary = run_ok(&[
        "--input",
        s(&dir.join("in.ndjson")),
        "--output",
        s(&out),
        "--shard",
        "1/2",
    ]);
    assert_eq!(summary["rows"], 0, "{summary}");
    let empty = read_parquet(&out.join("part-1-of-2.parquet"));
    assert_eq!(empty.iter().map(RecordBatch::num_rows).sum::<usize>(), 0);
}

fn failure(args: &[&str], env: Option<(&str, &str)>) -> String {
    let mut c = phiflow();
    c.args(args);
    if let Some((k, v)) = env {
        c.env(k, v);
    }
    let out = c.output().expect("runs");
    assert!(!out.status.success(), "expected a failure");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_files_and_a_missing_key_fail_clearly_without_data() {
    let dir = common::temp_dir("batch-bad");
    let out = dir.join("out");
    let csv = dir.join("notes.csv");
    std::fs::write(&csv, "id,note\n1,\"Seen by John Smith\"\n").expect("csv");
    let err = failure(&["--input", s(&csv), "--output", s(&out)], None);
    assert!(
        err.contains(s(&csv)) && err.contains("no text column `text`"),
        "{err}"
    );
    assert!(!err.contains("Smith"), "{err}");

    let bad = dir.join("bad.ndjson");
    std::fs::write(
        &bad,
        "{\"id\": 1, \"text\": \"ok\"}\n{\"id\": 2, \"text\": \"John Smith\n",
    )
    .expect("ndjson");
    let err = failure(&["--input", s(&bad), "--output", s(&out)], None);
    assert!(
        err.contains(s(&bad)) && err.contains("line 2 is not valid JSON"),
        "{err}"
    );
    assert!(!err.contains("Smith"), "{err}");

    let ragged = dir.join("ragged.csv");
    std::fs::write(&ragged, "id,text\n1,a\n2,John Smith,extra\n").expect("csv");
    let err = failure(&["--input", s(&ragged), "--output", s(&out)], None);
    assert!(
        err.contains(s(&ragged)) && err.contains("3 fields"),
        "{err}"
    );
    assert!(!err.contains("Smith"), "{err}");

    let unreadable = dir.join("broken.parquet");
    std::fs::write(&unreadable, "not parquet").expect("file");
    let err = failure(&["--input", s(&unreadable), "--output", s(&out)], None);
    assert!(
        err.contains(s(&unreadable)) && err.contains("Parquet"),
        "{err}"
    );

    let good = dir.join("good.ndjson");
    std::fs::write(&good, "{\"id\": 1, \"text\": \"x\"}\n").expect("ndjson");
    let err = failure(&["--input", s(&dir), "--output", s(&dir)], None);
    assert!(err.contains("also an input directory"), "{err}");
    let err = failure(
        &["--input", s(&good), "--output", s(&out)],
        Some(("SERVICE_DEID_SECRET_KEY", "")),
    );
    assert!(err.contains("SERVICE_DEID_SECRET_KEY"), "{err}");
    assert!(!out.join("part-0-of-1.parquet").exists());
    let _: PathBuf = out;
}
