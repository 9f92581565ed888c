//! The engine's settings: the server's (`SERVICE_*` environment variables and their defaults),
//! then the arguments given from Python on top. Parsing never exits or panics the interpreter:
//! a bad variable is an error naming the variable.

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches};
use phiflow::config::{DeviceSetting, Settings};

/// Settings the Python constructor may override; `None` keeps the environment's value.
#[derive(Default)]
pub struct Overrides {
    pub models_dir: Option<PathBuf>,
    pub model: Option<String>,
    pub pipelines_dir: Option<PathBuf>,
    pub ort_library: Option<PathBuf>,
    pub threads: Option<usize>,
    pub device: Option<String>,
    pub cuda_device_id: Option<i32>,
    pub secret_key: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A `SERVICE_*` variable does not parse (clap's message names it, never its value for
    /// the hidden secrets).
    #[error("invalid SERVICE_* environment: {0}")]
    Environment(String),
    #[error("device must be `cpu` or `cuda`, got `{0}`")]
    Device(String),
    #[error("threads must be at least 1")]
    Threads,
}

#[derive(clap::Parser)]
struct Wrapper {
    #[command(flatten)]
    s: Settings,
}

/// The server's settings from the environment, then `o` on top.
pub fn resolve(o: Overrides) -> Result<Settings, SettingsError> {
    let matches = Wrapper::command()
        .try_get_matches_from(["phiflow"])
        .map_err(|e| SettingsError::Environment(first_line(&e.to_string())))?;
    let mut s = Wrapper::from_arg_matches(&matches)
        .map_err(|e| SettingsError::Environment(first_line(&e.to_string())))?
        .s;
    if let Some(v) = o.models_dir {
        s.models_dir = v;
    }
    if let Some(v) = o.model {
        s.pii_model = v.clone();
        s.analyze_model = v;
    }
    if let Some(v) = o.pipelines_dir {
        s.pipelines_dir = v;
    }
    if let Some(v) = o.ort_library {
        s.ort_library = Some(v);
    }
    if let Some(t) = o.threads {
        if t == 0 {
            return Err(SettingsError::Threads);
        }
        // `t` cores in all: t single-threaded worker sessions (none when t is 1) and a wide
        // session of t threads that runs a lone batch while they are idle.
        s.ort_threads = t;
        s.infer_workers = t;
    }
    if let Some(d) = o.device {
        // `cpu`, `cuda` or `cuda:N`, as `SERVICE_DEVICE` takes them.
        s.device = d
            .parse::<DeviceSetting>()
            .map_err(|_| SettingsError::Device(d))?;
    }
    if let Some(v) = o.cuda_device_id {
        s.cuda_device_id = Some(v);
    }
    if let Some(v) = o.secret_key {
        s.deid_secret_key = Some(v);
    }
    Ok(s)
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

/// Whether the pipelines directory was chosen (argument or `SERVICE_PIPELINES_DIR`); if not,
/// the definitions embedded at build time are used.
pub fn pipelines_chosen(o: &Overrides) -> bool {
    o.pipelines_dir.is_some() || std::env::var_os("SERVICE_PIPELINES_DIR").is_some()
}
