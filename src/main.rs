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
    /// Score de-identification on the labeled synthetic corpus: per-HIPAA-class recall and
    /// precision at character level, and the leak count.
    Eval(EvalArgs),
    /// Write the synthetic evaluation corpus (seeded, reproducible) as JSON Lines.
    GenerateCorpus(GenerateArgs),
    /// Serve the decision tool `service_decide` over MCP on stdin/stdout (logs go to stderr).
    Mcp(McpArgs),
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
    /// The gold corpus (JSON Lines, as written by `generate-corpus`).
    #[arg(long, default_value = "tests/data/deid_eval.jsonl")]
    corpus: std::path::PathBuf,
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
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(settings) => run_serve(settings),
        Command::Eval(args) => run_eval(args),
        Command::Mcp(args) => run_mcp(args),
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
    let notes = match std::fs::read_to_string(&args.corpus)
        .map_err(|e| e.to_string())
        .and_then(|s| phiflow::eval::from_jsonl(&s))
    {
        Ok(n) => n,
        Err(e) => return fail(format!("{}: {e}", args.corpus.display())),
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
        let started = std::time::Instant::now();
        match phiflow::eval::runner::run(&state, &notes, &options).await {
            Ok(report) => {
                println!(
                    "{} notes, policy {}, method {}, {:.1} s",
                    notes.len(),
                    args.policy,
                    args.method,
                    started.elapsed().as_secs_f64()
                );
                if args.markdown {
                    println!("{}", report.markdown());
                } else {
                    println!("{}", report.table());
                }
                std::process::ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        }
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

fn run_serve(settings: Settings) -> std::process::ExitCode {
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
    runtime.block_on(async move {
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
    })
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
    tracing::info!("shutting down: draining in-flight requests");
}
