//! The `phiflow` command line.

use clap::{Parser, Subcommand};
use phiflow::config::Settings;

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
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(settings) => run_serve(settings),
    }
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
