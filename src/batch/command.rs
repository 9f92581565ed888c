//! `phiflow batch deidentify`: the shard's rows of the input files, through the de-identification
//! core in record batches, into one atomically written Parquet part. Reading runs on its own
//! thread, a few batches are de-identified at once (so the model's queue stays fed across batch
//! boundaries) and output keeps input order; memory is bounded by those few batches.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use arrow_schema::{DataType, SchemaRef};
use serde::Serialize;
use tokio::task::JoinHandle;

use super::error::BatchRunError;
use super::inputs::{self, InputFile, Inputs};
use super::output::ShardWriter;
use super::progress::Progress;
use super::shard::{self, Shard};
use crate::config::Settings;
use crate::deid::policy::Method;
use crate::deidentifier::{
    BatchColumns, BatchError, DeidError, DeidOptions, Deidentifier, output_schema,
};

/// Batches de-identified at once (the core runs 32 rows of each at a time), so the model's
/// queue stays full while the oldest batch finishes its last rows; the next waits in the
/// reader's channel.
const BATCHES_IN_FLIGHT: usize = 3;

/// Batch work on files.
#[derive(clap::Args)]
pub struct BatchArgs {
    #[command(subcommand)]
    pub command: BatchCommand,
}

#[derive(clap::Subcommand)]
pub enum BatchCommand {
    /// De-identify the text column of Parquet, NDJSON or CSV files into Parquet (input columns
    /// kept, plus deidentified_text, spans, status and error), one part per shard.
    Deidentify(Box<DeidentifyArgs>),
}

#[derive(clap::Args)]
pub struct DeidentifyArgs {
    /// Input files or directories (a directory: its .parquet, .ndjson/.jsonl and .csv files,
    /// optionally .gz for the text formats, in name order). NDJSON and CSV columns are read as
    /// text (Utf8).
    #[arg(long, required = true, num_args = 1..)]
    pub input: Vec<PathBuf>,
    /// Output directory; this shard writes `part-<i>-of-<N>.parquet` there.
    #[arg(long)]
    pub output: PathBuf,
    /// Column holding the text to de-identify (Utf8, LargeUtf8 or Utf8View).
    #[arg(long, default_value = "text")]
    pub text_column: String,
    /// Column holding each row's id (text or integer): it keys the row's date shift.
    #[arg(long, default_value = "id")]
    pub id_column: String,
    /// This process's shard, `i/N` (0-based), e.g. `$JOB_COMPLETION_INDEX/8`. Default: 0/1.
    #[arg(long)]
    pub shard: Option<Shard>,
    /// Rows per record batch read and de-identified together.
    #[arg(long, default_value_t = 256)]
    pub batch_rows: usize,
    /// Rows per shard unit: consecutive rows of one file that go to the same shard. Every
    /// shard of a run must use the same value.
    #[arg(long, default_value_t = 1024)]
    pub shard_block_rows: u64,
    #[command(flatten)]
    pub options: OptionArgs,
    #[command(flatten)]
    pub settings: Settings,
}

/// The de-identification options, as the `/pii/deidentify` request names them.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct OptionArgs {
    /// Named policy (e.g. `hipaa_safe_harbor`).
    #[arg(long)]
    pub policy: Option<String>,
    /// `mask`, `remove`, `replace`, `hash` or `shift_dates`.
    #[arg(long)]
    pub method: Option<String>,
    #[arg(long)]
    pub confidence_threshold: Option<f64>,
    #[arg(long)]
    pub shift_dates: Option<bool>,
    /// A fixed date shift for every row (otherwise each row's id keys its own).
    #[arg(long, allow_negative_numbers = true)]
    pub date_shift_days: Option<i64>,
    #[arg(long)]
    pub keep_year: Option<bool>,
    #[arg(long)]
    pub lang: Option<String>,
    /// Model id (default: the PII model setting).
    #[arg(long)]
    pub model_name: Option<String>,
    #[arg(long)]
    pub normalize_accents: Option<bool>,
    #[arg(long)]
    pub use_safety_sweep: Option<bool>,
    #[arg(long)]
    pub use_smart_merging: Option<bool>,
}

impl OptionArgs {
    fn deid_options(&self) -> Result<DeidOptions, BatchRunError> {
        let method = match &self.method {
            None => None,
            Some(m) => Some(Method::parse(m).ok_or_else(|| {
                BatchRunError::Options(format!(
                    "--method {m} is not one of mask, remove, replace, hash, shift_dates"
                ))
            })?),
        };
        Ok(DeidOptions {
            confidence_threshold: self.confidence_threshold,
            date_shift_days: self.date_shift_days,
            keep_mapping: None,
            keep_year: self.keep_year,
            lang: self.lang.clone(),
            method,
            model_name: self.model_name.clone(),
            normalize_accents: self.normalize_accents,
            policy: self.policy.clone(),
            shift_dates: self.shift_dates,
            use_safety_sweep: self.use_safety_sweep,
            use_smart_merging: self.use_smart_merging,
        })
    }
}

/// What a finished run reports (on stdout, as JSON).
#[derive(Debug, Serialize)]
pub struct Summary {
    pub shard: String,
    pub output: PathBuf,
    pub files: usize,
    pub rows: u64,
    pub ok: u64,
    pub errors: u64,
    pub seconds: f64,
    pub rows_per_second: f64,
}

/// Runs the command (its own async runtime; call it from `main`).
pub fn run(args: DeidentifyArgs) -> Result<Summary, BatchRunError> {
    if args
        .settings
        .deid_secret_key
        .as_deref()
        .is_none_or(str::is_empty)
    {
        return Err(BatchRunError::MissingKey);
    }
    if args.batch_rows == 0 || args.shard_block_rows == 0 {
        return Err(BatchRunError::Options(
            "--batch-rows and --shard-block-rows must be at least 1".into(),
        ));
    }
    let options = args.options.deid_options()?;
    let shard = args.shard.unwrap_or(Shard::ALL);
    if let Ok(out) = args.output.canonicalize()
        && args
            .input
            .iter()
            .any(|i| i.canonicalize().is_ok_and(|i| i == out))
    {
        // A rerun would read the parts as input.
        return Err(BatchRunError::Options(format!(
            "the output directory {} is also an input directory",
            args.output.display()
        )));
    }
    let inputs = inputs::scan(inputs::list(&args.input)?)?;
    let cols = BatchColumns {
        text: args.text_column.clone(),
        id: Some(args.id_column.clone()),
    };
    check_columns(&inputs, &cols)?;
    let out_schema = output_schema(&inputs.schema)
        .map_err(|e| BatchRunError::bad_file(&inputs.files[0].path, e))?;
    let plan = plan(&inputs.files, shard, args.shard_block_rows);
    let total: u64 = plan
        .iter()
        .flat_map(|(_, r)| r.iter().map(|r| r.end - r.start))
        .sum();
    tracing::info!(
        files = inputs.files.len(),
        rows = total,
        shard = %format!("{}/{}", shard.index, shard.count),
        "de-identifying"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| BatchRunError::Start(format!("the async runtime: {e}")))?;
    let files = inputs.files.len();
    let run = Run {
        settings: args.settings,
        options,
        cols,
        schema: inputs.schema,
        out_schema,
        plan,
        batch_rows: args.batch_rows,
        output: args.output,
        shard,
        total,
    };
    let (output, progress, counts) = runtime.block_on(run.go())?;
    Ok(Summary {
        shard: format!("{}/{}", shard.index, shard.count),
        output,
        files,
        rows: counts.0 + counts.1,
        ok: counts.0,
        errors: counts.1,
        seconds: progress.elapsed().as_secs_f64(),
        rows_per_second: progress.rows_per_second(),
    })
}

/// The text and id columns exist and hold what the core reads.
fn check_columns(inputs: &Inputs, cols: &BatchColumns) -> Result<(), BatchRunError> {
    let first = &inputs.files[0].path;
    let field = |name: &str, what: &str| {
        inputs.schema.field_with_name(name).map_err(|_| {
            BatchRunError::bad_file(
                first,
                format!("no {what} column `{name}` in the input (see --{what}-column)"),
            )
        })
    };
    let text = field(&cols.text, "text")?;
    if !matches!(
        text.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) {
        return Err(BatchRunError::bad_file(
            first,
            BatchError::NotText {
                name: cols.text.clone(),
                data_type: text.data_type().clone(),
            },
        ));
    }
    if let Some(id) = &cols.id {
        let f = field(id, "id")?;
        if !matches!(
            f.data_type(),
            DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Int32
                | DataType::Int64
                | DataType::UInt32
                | DataType::UInt64
        ) {
            return Err(BatchRunError::bad_file(
                first,
                BatchError::BadId {
                    name: id.clone(),
                    data_type: f.data_type().clone(),
                },
            ));
        }
    }
    Ok(())
}

/// The shard's rows of each file, for the files where it owns any.
fn plan(
    files: &[InputFile],
    shard: Shard,
    block_rows: u64,
) -> Vec<(InputFile, Vec<std::ops::Range<u64>>)> {
    let mut unit = 0;
    let mut out = Vec::new();
    for f in files {
        let ranges = shard.owned_rows(unit, f.rows, block_rows);
        unit += shard::units(f.rows, block_rows);
        if !ranges.is_empty() {
            out.push((f.clone(), ranges));
        }
    }
    out
}

/// One run, past the checks.
struct Run {
    settings: Settings,
    options: DeidOptions,
    cols: BatchColumns,
    schema: SchemaRef,
    out_schema: SchemaRef,
    plan: Vec<(InputFile, Vec<std::ops::Range<u64>>)>,
    batch_rows: usize,
    output: PathBuf,
    shard: Shard,
    total: u64,
}

type Pending = (PathBuf, JoinHandle<Result<RecordBatch, BatchError>>);

impl Run {
    /// Returns the output path, the progress and the (ok, error) row counts.
    async fn go(self) -> Result<(PathBuf, Progress, (u64, u64)), BatchRunError> {
        let engine = Arc::new(
            Deidentifier::build(self.settings).map_err(|e| BatchRunError::Start(e.to_string()))?,
        );
        let prepared = Arc::new(engine.prepare(&self.options).map_err(options_error)?);
        let model = Arc::new(
            engine
                .model(&prepared, None)
                .await
                .map_err(|e| BatchRunError::Start(e.to_string()))?,
        );
        let mut writer = ShardWriter::create(&self.output, self.shard, self.out_schema)?;
        let mut progress = Progress::new(self.total);
        let mut counts = (0u64, 0u64);
        let mut rx = spawn_reader(self.plan, self.schema, self.batch_rows);
        let mut pending: VecDeque<Pending> = VecDeque::new();
        let mut write_front = async |pending: &mut VecDeque<Pending>| -> Result<(), BatchRunError> {
            let Some((path, task)) = pending.pop_front() else {
                return Ok(());
            };
            let out = task
                .await
                .map_err(|e| BatchRunError::Start(format!("a batch task failed: {e}")))?
                .map_err(|e| BatchRunError::bad_file(&path, e))?;
            let (ok, err) = status_counts(&out);
            counts.0 += ok;
            counts.1 += err;
            writer.write(&out)?;
            progress.add(out.num_rows() as u64);
            Ok(())
        };
        while let Some(next) = rx.recv().await {
            let (path, batch) = next?;
            let (e, p, m, c) = (
                engine.clone(),
                prepared.clone(),
                model.clone(),
                self.cols.clone(),
            );
            pending.push_back((
                path,
                tokio::spawn(async move { e.deidentify_batch(&p, &m, &batch, &c).await }),
            ));
            if pending.len() >= BATCHES_IN_FLIGHT {
                write_front(&mut pending).await?;
            }
        }
        while !pending.is_empty() {
            write_front(&mut pending).await?;
        }
        let path = writer.finish()?;
        progress.finish();
        Ok((path, progress, counts))
    }
}

type Read = Result<(PathBuf, RecordBatch), BatchRunError>;

/// Reads the planned rows on a thread of its own; a full channel holds it back.
fn spawn_reader(
    plan: Vec<(InputFile, Vec<std::ops::Range<u64>>)>,
    schema: SchemaRef,
    batch_rows: usize,
) -> tokio::sync::mpsc::Receiver<Read> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Read>(1);
    std::thread::spawn(move || {
        for (file, ranges) in plan {
            let sent = inputs::read(&file, &schema, &ranges, batch_rows, |b| {
                tx.blocking_send(Ok((file.path.clone(), b)))
                    .map_err(|_| "stopped".to_string())
            });
            if let Err(why) = sent {
                let _ = tx.blocking_send(Err(BatchRunError::bad_file(&file.path, why)));
                return;
            }
        }
    });
    rx
}

fn options_error(e: DeidError) -> BatchRunError {
    match e {
        DeidError::Invalid(conflicts) => BatchRunError::Options(
            conflicts
                .iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        other => BatchRunError::Start(other.to_string()),
    }
}

/// Rows with status `ok` and `error` in an output batch.
fn status_counts(out: &RecordBatch) -> (u64, u64) {
    let Some(status) = out.column_by_name("status") else {
        return (0, 0);
    };
    let ok = status
        .as_string::<i32>()
        .iter()
        .filter(|s| *s == Some("ok"))
        .count() as u64;
    (ok, out.num_rows() as u64 - ok)
}
