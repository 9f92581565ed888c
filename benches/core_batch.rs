//! The core's Arrow batch path (`Deidentifier::deidentify_batch`) over a Parquet file of notes,
//! without the CLI's reading and writing: the library's own rows/s (`scripts/bench-surfaces`
//! compares the surfaces with each other). Prints one JSON line.
//!
//! Run: `PHIFLOW_BATCH_BENCH_PARQUET=notes.parquet cargo bench --bench core_batch` (columns `id`,
//! `text`; `PHIFLOW_BATCH_BENCH_ROWS` rows per batch, default 256; `method` replace).

use std::sync::Arc;
use std::time::Instant;

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use phiflow::config::Settings;
use phiflow::deid::policy::Method;
use phiflow::deidentifier::{BatchColumns, DeidOptions, Deidentifier};

#[path = "support/results.rs"]
mod results;

fn main() {
    let Ok(path) = std::env::var("PHIFLOW_BATCH_BENCH_PARQUET") else {
        eprintln!(
            "batch bench: set PHIFLOW_BATCH_BENCH_PARQUET to a Parquet file of notes (id, text)"
        );
        return;
    };
    let rows_per_batch: usize = std::env::var("PHIFLOW_BATCH_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let file = std::fs::File::open(&path).expect("open the Parquet file");
    let batches: Vec<_> = ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a Parquet file")
        .with_batch_size(rows_per_batch)
        .build()
        .expect("reader")
        .collect::<Result<_, _>>()
        .expect("batches");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async move {
        let engine = Arc::new(Deidentifier::build(Settings::from_env()).expect("engine"));
        let p = Arc::new(
            engine
                .prepare(&DeidOptions {
                    method: Some(Method::Replace),
                    ..DeidOptions::default()
                })
                .expect("options"),
        );
        let model = Arc::new(engine.model(&p, None).await.expect("model"));
        let cols = BatchColumns {
            text: "text".into(),
            id: Some("id".into()),
        };
        let started = Instant::now();
        let mut rows = 0;
        for b in &batches {
            let out = engine
                .deidentify_batch(&p, &model, b, &cols)
                .await
                .expect("batch");
            rows += out.num_rows();
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{}",
            serde_json::json!({ "surface": "core", "rows": rows, "seconds": secs, "rows_per_s": rows as f64 / secs })
        );
        results::Report::new("core_batch")
            .knob("PHIFLOW_BATCH_BENCH_ROWS", rows_per_batch)
            .knob("rows", rows)
            .figure("throughput", "core deidentify_batch", rows as f64 / secs, "rows/s")
            .write();
    });
}
