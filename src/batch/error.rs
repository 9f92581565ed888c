//! Why a batch run stopped. A bad row never stops it (the core reports it in the row's
//! status); a bad file, missing settings or an unwritable output do, with the file and the
//! reason but never the data.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum BatchRunError {
    #[error(
        "SERVICE_DEID_SECRET_KEY is not set (or --deid-secret-key): a batch run needs a stable key \
         so that retried shards and other machines give the same surrogates and date shifts"
    )]
    MissingKey,
    #[error(
        "no input files in {0} (expected .parquet, .ndjson, .jsonl or .csv, optionally .gz for the text formats)"
    )]
    NoInput(String),
    #[error("{file}: {reason}")]
    BadFile { file: String, reason: String },
    #[error("invalid options: {0}")]
    Options(String),
    #[error("output {path}: {reason}")]
    Output { path: String, reason: String },
    #[error("cannot start: {0}")]
    Start(String),
}

impl BatchRunError {
    pub fn bad_file(path: &Path, reason: impl std::fmt::Display) -> Self {
        Self::BadFile {
            file: path.display().to_string(),
            reason: reason.to_string(),
        }
    }

    pub fn output(path: &Path, reason: impl std::fmt::Display) -> Self {
        Self::Output {
            path: path.display().to_string(),
            reason: reason.to_string(),
        }
    }
}
