//! `phiflow fhir deidentify`: a bulk export already on disk (`*.ndjson`, `*.ndjson.gz`)
//! de-identified into NDJSON and Parquet per resource type, with a progress line and a
//! `summary.json`. The same [`Exporter`] as the ingestion job, so the output is the same.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::config::Settings;
use crate::deid::policy::Method;
use crate::deidentifier::{DeidError, DeidOptions, Deidentifier};

use super::export::{self, Exporter, Progress, Summary};
use super::files::AtomicFile;
use super::resource::{ResourceDeidentifier, SetupError};

/// The summary's file name in the output folder.
pub const SUMMARY_FILE: &str = "summary.json";

/// `phiflow fhir deidentify` arguments. Defaults are those of SMARTBackendIngestionRequest.
#[derive(clap::Args, Debug)]
pub struct DeidentifyArgs {
    /// Folder of the export: `*.ndjson`, `*.ndjson.gz`, `*.jsonl` files (any names; one or
    /// more files per resource type).
    #[arg(long)]
    pub input: PathBuf,
    /// Folder for `<Type>.ndjson`, `<Type>.parquet` and `summary.json` (created).
    #[arg(long)]
    pub output: PathBuf,
    /// Policy applied (`none` for none).
    #[arg(long, default_value = "hipaa_safe_harbor")]
    pub policy: String,
    /// `replace`, `mask`, `remove`, `hash` or `shift_dates`.
    #[arg(long, default_value = "replace")]
    pub method: String,
    #[arg(long, default_value_t = 0.7)]
    pub confidence_threshold: f64,
    #[arg(long, default_value = "en")]
    pub lang: String,
    /// PII model id (default: the service's PII model).
    #[arg(long)]
    pub model_name: Option<String>,
    #[arg(long)]
    pub normalize_accents: Option<bool>,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub use_safety_sweep: bool,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub use_smart_merging: bool,
    /// The date the export stands at (`YYYY-MM-DD`; default: today, UTC). Safe Harbor puts
    /// ages over 89 at this date into "90 or older"; give the export's date to make reruns on
    /// other days give the same bytes.
    #[arg(long)]
    pub reference_date: Option<String>,
    /// Seconds between progress lines when stderr is not a terminal.
    #[arg(long, default_value_t = 10.0)]
    pub progress_interval_seconds: f64,
    #[command(flatten)]
    pub settings: Settings,
}

/// Why the command failed (each message names what to fix, never the data).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(
        "SERVICE_DEID_SECRET_KEY is not set (or --deid-secret-key): resource pseudonyms, \
         surrogates and date shifts are keyed by it, so that a rerun gives the same output"
    )]
    NoSecretKey,
    #[error("unknown method {0:?} (replace, mask, remove, hash, shift_dates)")]
    Method(String),
    #[error("--reference-date {0:?} is not a date (YYYY-MM-DD)")]
    ReferenceDate(String),
    #[error("--input {0}: {1}")]
    Input(PathBuf, String),
    #[error("--output must not be the input folder")]
    SameFolder,
    #[error("invalid options: {0}")]
    Options(String),
    #[error("cannot start: {0}")]
    Engine(String),
    #[error(transparent)]
    Export(#[from] export::ExportError),
    #[error("writing {SUMMARY_FILE}: {0}")]
    Summary(std::io::Error),
    #[error("interrupted; run the same command again to resume")]
    Interrupted,
}

impl DeidentifyArgs {
    /// The de-identification options these flags stand for.
    pub fn options(&self) -> Result<DeidOptions, CliError> {
        let method = Method::parse(&self.method).ok_or(CliError::Method(self.method.clone()))?;
        Ok(DeidOptions {
            confidence_threshold: Some(self.confidence_threshold),
            lang: Some(self.lang.clone()),
            method: Some(method),
            model_name: self.model_name.clone(),
            normalize_accents: self.normalize_accents,
            policy: (self.policy != "none").then(|| self.policy.clone()),
            use_safety_sweep: Some(self.use_safety_sweep),
            use_smart_merging: Some(self.use_smart_merging),
            ..DeidOptions::default()
        })
    }

    /// `--reference-date`, or today (UTC).
    pub fn reference_date(&self) -> Result<chrono::NaiveDate, CliError> {
        match &self.reference_date {
            Some(d) => chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
                .map_err(|_| CliError::ReferenceDate(d.clone())),
            None => Ok(chrono::Utc::now().date_naive()),
        }
    }
}

/// The CLI's resource de-identifier (see [`ResourceDeidentifier::build`]), its errors as the
/// CLI words them.
pub async fn resource_deidentifier(
    deid: Arc<Deidentifier>,
    options: &DeidOptions,
) -> Result<ResourceDeidentifier, CliError> {
    ResourceDeidentifier::build(deid, options, None)
        .await
        .map_err(|e| match e {
            SetupError::NoSecretKey => CliError::NoSecretKey,
            SetupError::Deid(DeidError::Invalid(conflicts)) => CliError::Options(
                conflicts
                    .iter()
                    .map(|c| format!("{}: {}", c.field, c.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            SetupError::Deid(other) => CliError::Engine(other.to_string()),
        })
}

/// Runs the command; the exit code says how it went (messages on stderr).
pub fn run(args: DeidentifyArgs) -> ExitCode {
    // Warnings and errors only: the progress line has stderr to itself.
    let filter = tracing_subscriber::EnvFilter::try_from_env("SERVICE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .try_init();
    match run_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Interrupted) => {
            eprintln!("\nphiflow fhir deidentify: {}", CliError::Interrupted);
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("phiflow fhir deidentify: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: DeidentifyArgs) -> Result<(), CliError> {
    if args
        .settings
        .deid_secret_key
        .as_deref()
        .is_none_or(str::is_empty)
    {
        return Err(CliError::NoSecretKey);
    }
    let options = args.options()?;
    let reference = args.reference_date()?;
    if !args.input.is_dir() {
        return Err(CliError::Input(args.input.clone(), "not a folder".into()));
    }
    if same_folder(&args.input, &args.output) {
        return Err(CliError::SameFolder);
    }
    let sources = export::sources_in(&args.input)
        .map_err(|e| CliError::Input(args.input.clone(), e.to_string()))?;
    if sources.is_empty() {
        return Err(CliError::Input(
            args.input.clone(),
            "holds no *.ndjson or *.ndjson.gz file".into(),
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Engine(format!("the async runtime: {e}")))?;
    let interval = Duration::from_secs_f64(args.progress_interval_seconds.clamp(0.1, 3600.0));
    runtime.block_on(async move {
        let deid = Deidentifier::build(args.settings.clone())
            .map_err(|e| CliError::Engine(e.to_string()))?;
        let rd = resource_deidentifier(Arc::new(deid), &options).await?;
        let exporter = Exporter::new(Arc::new(rd), &args.output, reference)?;
        let progress = Arc::new(Progress::default());
        let total = export::total_bytes(&sources);
        let started = Instant::now();
        let reporter = tokio::spawn(report(
            progress.clone(),
            total,
            sources.len() as u64,
            started,
            interval,
        ));
        let interrupt = {
            let progress = progress.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    progress.cancelled.store(true, Ordering::Relaxed);
                }
            })
        };
        let outcome = exporter.run(&sources, &progress).await;
        reporter.abort();
        interrupt.abort();
        let summary = match outcome {
            Ok(s) => s,
            Err(export::ExportError::Cancelled) => return Err(CliError::Interrupted),
            Err(e) => return Err(e.into()),
        };
        let tty = std::io::stderr().is_terminal();
        line(&progress, total, sources.len() as u64, started, tty);
        if tty {
            eprintln!();
        }
        write_summary(&args.output, &summary).map_err(CliError::Summary)?;
        exporter.clean().map_err(|e| CliError::Export(e.into()))?;
        print_summary(&args.output, &summary, started.elapsed());
        Ok(())
    })
}

fn same_folder(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `summary.json`, written atomically (it holds no timing, so reruns give the same bytes).
pub fn write_summary(output: &Path, summary: &Summary) -> std::io::Result<()> {
    let mut f = AtomicFile::create(&output.join(SUMMARY_FILE))?;
    serde_json::to_writer_pretty(&mut f, summary).map_err(std::io::Error::other)?;
    f.write_all(b"\n")?;
    f.commit().map(|_| ())
}

fn print_summary(output: &Path, s: &Summary, elapsed: Duration) {
    println!(
        "de-identified {} resources of {} types from {} files in {:.1} s ({} patients indexed)",
        s.resources_total,
        s.resources.len(),
        s.files,
        elapsed.as_secs_f64(),
        s.patients_indexed
    );
    for (t, n) in &s.resources {
        println!("  {t:<28} {n:>10}");
    }
    println!(
        "free-text fields {}, spans rewritten {} ({} only from patients' structured data)",
        s.free_text_fields, s.spans_rewritten, s.spans_from_structured_data
    );
    if s.rejections.is_empty() {
        println!("rejected: none");
    } else {
        let reasons: Vec<String> = s
            .rejections_by_reason
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        println!(
            "rejected {} ({}); see rejections in {}",
            s.rejections.len(),
            reasons.join(", "),
            output.join(SUMMARY_FILE).display()
        );
    }
    println!("output: {}", output.display());
}

async fn report(
    progress: Arc<Progress>,
    total: u64,
    files: u64,
    started: Instant,
    interval: Duration,
) {
    let tty = std::io::stderr().is_terminal();
    let every = if tty {
        Duration::from_millis(250)
    } else {
        interval
    };
    loop {
        tokio::time::sleep(every).await;
        line(&progress, total, files, started, tty);
    }
}

/// One progress line: resources, MB, resources/s, ETA from the bytes still to read.
fn line(p: &Progress, total: u64, files: u64, started: Instant, tty: bool) {
    let resources = p.resources.load(Ordering::Relaxed);
    let bytes = p.bytes.load(Ordering::Relaxed);
    let secs = started.elapsed().as_secs_f64().max(1e-3);
    let rate = resources as f64 / secs;
    let eta = if bytes == 0 || bytes >= total {
        "--:--".to_string()
    } else {
        let left = (total - bytes) as f64 / (bytes as f64 / secs);
        format!("{}:{:02}", (left / 60.0) as u64, (left % 60.0) as u64)
    };
    let text = format!(
        "{resources} resources | {:.1}/{:.1} MB | {rate:.0} resources/s | ETA {eta} | files {}/{files} | rejected {}",
        bytes as f64 / 1e6,
        total as f64 / 1e6,
        p.files_done.load(Ordering::Relaxed),
        p.rejected.load(Ordering::Relaxed),
    );
    let mut err = std::io::stderr().lock();
    let _ = if tty {
        write!(err, "\r\x1b[2K{text}")
    } else {
        writeln!(err, "{text}")
    };
    let _ = err.flush();
}
