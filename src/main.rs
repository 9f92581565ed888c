//! The `phiflow` command line.

use clap::{Parser, Subcommand};
use phiflow::config::{DecisionSettings, Settings};

#[derive(Parser)]
#[command(name = "phiflow", version, about = "Clinical text privacy service")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the HTTP service.
    Serve(Settings),
    /// Score de-identification on every evaluation set (the synthetic corpus and third-party
    /// ASQ-PHI halves): per-HIPAA-class recall and precision at character level, and leaks.
    Eval(EvalArgs),
    /// Write the synthetic evaluation corpus (seeded, reproducible) as JSON Lines.
    GenerateCorpus(GenerateArgs),
    /// Serve the decision tool `service_decide` over MCP on stdin/stdout (logs go to stderr).
    Mcp(McpArgs),
    /// Batch work on files (see `phiflow batch deidentify --help`).
    Batch(phiflow::batch::BatchArgs),
    /// FHIR bulk exports.
    #[command(subcommand)]
    Fhir(FhirCommand),
}

#[derive(Subcommand)]
enum FhirCommand {
    /// De-identify a bulk export on disk (`*.ndjson`, `*.ndjson.gz`) into NDJSON and Parquet
    /// per resource type and a summary.json; a rerun after an interruption resumes.
    Deidentify(phiflow::fhir::cli::DeidentifyArgs),
}

#[derive(clap::Args)]
struct McpArgs {
    #[command(flatten)]
    decisions: DecisionSettings,
    /// Log as JSON lines (on stderr).
    #[arg(long, env = "SERVICE_LOG_JSON", default_value_t = false)]
    log_json: bool,
}

#[derive(clap::Args)]
struct EvalArgs {
    /// Evaluate only this gold corpus (JSON Lines, as written by `generate-corpus`) instead of
    /// the named sets.
    #[arg(long)]
    corpus: Option<std::path::PathBuf>,
    /// Sets to evaluate (repeatable): all, synthetic, asq-phi-dev, asq-phi-test, probe-clinical,
    /// probe-general, probe-negatives, probe-queries, probe-notes, probe-general-2,
    /// probe-notes-3, probe-general-3, probe-notes-4, probe-general-4, probe-notes-5,
    /// probe-general-5, probe-notes-6, probe-general-6, probe-places-6, probe-notes-7,
    /// probe-general-7, probe-prompts-7, probe-notes-8, probe-general-8, probe-notes-9,
    /// probe-general-9, probe-notes-10, probe-general-10, probe-notes-11, probe-general-11,
    /// probe-notes-12, probe-general-12, probe-notes-13, probe-general-13, heldout-clinical,
    /// heldout-general, heldout-2-clinical, heldout-2-general, heldout-3-clinical,
    /// heldout-3-general, i2b2-philter, presidio-dev, presidio-test.
    #[arg(long = "set", default_value = "all")]
    sets: Vec<String>,
    /// Folder holding the committed sets (`deid_eval.jsonl`, `asq-phi/`, `probes/`).
    #[arg(long, default_value = "tests/data")]
    sets_dir: std::path::PathBuf,
    /// Folder holding the sets that scripts/fetch-assets builds from third-party packages.
    #[arg(long, default_value = ".assets/eval")]
    fetched_sets_dir: std::path::PathBuf,
    /// Policy applied, or `none`.
    #[arg(long, default_value = "hipaa_safe_harbor")]
    policy: String,
    #[arg(long, default_value = "mask")]
    method: String,
    #[arg(long, default_value_t = 0.7)]
    confidence_threshold: f32,
    /// Print the table as Markdown (for the README).
    #[arg(long)]
    markdown: bool,
    /// Also list every missed identifier and false positive with its context (for sets marked as
    /// tuned on and a `--corpus` file: a held-out set's text is never shown).
    #[arg(long)]
    errors: bool,
    #[command(flatten)]
    settings: Settings,
}

#[derive(clap::Args)]
struct GenerateArgs {
    #[arg(long, default_value_t = 20251121)]
    seed: u64,
    #[arg(long, default_value_t = 600)]
    notes: usize,
    #[arg(long, default_value = "tests/data/deid_eval.jsonl")]
    out: std::path::PathBuf,
}

fn main() -> std::process::ExitCode {
    phiflow::inference::limit_malloc_arenas();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(settings) => run_serve(settings),
        Command::Eval(args) => run_eval(args),
        Command::Mcp(args) => run_mcp(args),
        Command::Batch(args) => run_batch(args),
        Command::Fhir(FhirCommand::Deidentify(args)) => phiflow::fhir::cli::run(args),
        Command::GenerateCorpus(args) => {
            let notes = phiflow::eval::generate(args.seed, args.notes);
            match std::fs::write(&args.out, phiflow::eval::to_jsonl(&notes)) {
                Ok(()) => {
                    println!("wrote {} notes to {}", notes.len(), args.out.display());
                    std::process::ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("phiflow: cannot write {}: {e}", args.out.display());
                    std::process::ExitCode::FAILURE
                }
            }
        }
    }
}

fn run_eval(args: EvalArgs) -> std::process::ExitCode {
    let fail = |msg: String| {
        eprintln!("phiflow eval: {msg}");
        std::process::ExitCode::FAILURE
    };
    let Some(method) = phiflow::deid::policy::Method::parse(&args.method) else {
        return fail(format!("unknown method {}", args.method));
    };
    let sets = match &args.corpus {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|s| phiflow::eval::from_jsonl(&s))
            .map(|notes| {
                vec![phiflow::eval::sets::EvalSet {
                    name: "corpus",
                    source: "--corpus",
                    tuned_on: false,
                    notes,
                    unplaced: 0,
                }]
            })
            .map_err(|e| format!("{}: {e}", path.display())),
        None => phiflow::eval::sets::load(&args.sets_dir, &args.fetched_sets_dir, &args.sets),
    };
    let sets = match sets {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    let options = phiflow::eval::runner::EvalOptions {
        policy: (args.policy != "none").then_some(args.policy.clone()),
        method,
        confidence_threshold: args.confidence_threshold,
        ..Default::default()
    };
    runtime.block_on(async move {
        let state = match phiflow::api::build_state_without_jobs(args.settings) {
            Ok(s) => s,
            Err(e) => return fail(e.to_string()),
        };
        for set in &sets {
            let started = std::time::Instant::now();
            let outputs = match phiflow::eval::runner::predict(&state, &set.notes, &options).await {
                Ok(o) => o,
                Err(e) => return fail(e),
            };
            let report = phiflow::eval::evaluate(&set.notes, &outputs);
            // A corpus the user passed is theirs to read; a held-out set's text is never shown.
            if args.errors && (set.tuned_on || args.corpus.is_some()) {
                for line in phiflow::eval::metrics::error_lines(&set.notes, &outputs) {
                    println!("{line}");
                }
            }
            println!(
                "## {}: {} notes, policy {}, method {}, {:.1} s\n{}{}{}\n",
                set.name,
                set.notes.len(),
                args.policy,
                args.method,
                started.elapsed().as_secs_f64(),
                set.source,
                if set.tuned_on { " (tuned on)" } else { "" },
                if set.unplaced > 0 {
                    format!("; {} gold values not found in their text", set.unplaced)
                } else {
                    String::new()
                },
            );
            if args.markdown {
                println!("{}", report.markdown());
            } else {
                println!("{}", report.table());
            }
        }
        std::process::ExitCode::SUCCESS
    })
}

fn init_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SERVICE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// stdout carries MCP messages only, so logs go to stderr.
fn init_stderr_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SERVICE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(false)
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn run_mcp(args: McpArgs) -> std::process::ExitCode {
    init_stderr_logging(args.log_json);
    let fail = |msg: String| {
        eprintln!("phiflow mcp: {msg}");
        std::process::ExitCode::FAILURE
    };
    let engine = match phiflow::decisions::setup::build_engine(&args.decisions) {
        Ok(e) => std::sync::Arc::new(e),
        Err(e) => return fail(e.to_string()),
    };
    let tool = match phiflow::decisions::mcp_tool(engine) {
        Ok(t) => t,
        Err(e) => return fail(e.to_string()),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(phiflow::decisions::mcp::serve_stdio(
        tool,
        env!("CARGO_PKG_VERSION"),
    )) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => fail(e.to_string()),
    }
}

/// A write past the file-size limit (`RLIMIT_FSIZE`) raises SIGXFSZ, whose default action kills
/// the process. Ignored, the write fails with `EFBIG` instead, and the job store treats that
/// as a full disk: it waits for space rather than dying.
#[cfg(unix)]
fn ignore_sigxfsz() {
    // SAFETY: setting a signal's disposition to SIG_IGN at start-up, before any thread is
    // spawned, installs no handler code and touches no Rust state.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Batch commands log to stderr (beside the progress line); the summary goes to stdout.
fn run_batch(args: phiflow::batch::BatchArgs) -> std::process::ExitCode {
    let phiflow::batch::BatchCommand::Deidentify(args) = args.command;
    init_stderr_logging(args.settings.log_json);
    match phiflow::batch::run(*args) {
        Ok(summary) => {
            println!("{}", serde_json::to_string(&summary).unwrap_or_default());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("phiflow batch deidentify: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run_serve(settings: Settings) -> std::process::ExitCode {
    #[cfg(unix)]
    ignore_sigxfsz();
    init_logging(settings.log_json);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("phiflow: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async move {
        let addr = format!("{}:{}", settings.host, settings.port);
        let state = match phiflow::api::build_state(settings) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot start");
                eprintln!("phiflow: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        let listener = match tokio::net::TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("phiflow: cannot listen on {addr}: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        tracing::info!(address = %addr, "listening");
        match phiflow::api::serve(listener, state, shutdown_signal()).await {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("phiflow: server error: {e}");
                std::process::ExitCode::FAILURE
            }
        }
    });
    // The drain deadline has passed: tasks still running (a request cut off, a blocking store
    // call) must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
