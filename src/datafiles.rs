//! The operator-editable data folders (pipelines, recognizers, policies): every `*.toml` file of
//! a folder, read in name order, so load order never depends on the file system.

use std::path::Path;

/// A data file that could not be read: which one, and why.
#[derive(Debug)]
pub struct ReadError {
    pub file: String,
    pub message: String,
}

/// `(path, contents)` of every `*.toml` directly in `dir`, sorted by path.
pub fn read_toml_dir(dir: &Path, what: &str) -> Result<Vec<(String, String)>, ReadError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ReadError {
        file: dir.display().to_string(),
        message: format!("cannot read {what} directory: {e}"),
    })?;
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let file = f.display().to_string();
            match std::fs::read_to_string(&f) {
                Ok(src) => Ok((file, src)),
                Err(e) => Err(ReadError {
                    file,
                    message: e.to_string(),
                }),
            }
        })
        .collect()
}
