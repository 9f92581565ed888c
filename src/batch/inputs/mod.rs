//! The input files of a run: which they are (a directory means its files in name order), their
//! common schema and row counts (a scan that reads Parquet footers and checks every line of
//! the text formats, so a bad file fails before the model loads), and the reading of the rows a
//! shard owns.

mod csv;
mod ndjson;
mod parquet;
mod text;

use std::ops::Range;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::error::BatchRunError;

/// An input file's format, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Parquet,
    Ndjson { gz: bool },
    Csv { gz: bool },
}

impl Format {
    /// `.parquet`, `.ndjson`/`.jsonl`, `.csv`, the text ones optionally followed by `.gz`.
    pub fn of(path: &Path) -> Option<Self> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let (stem, gz) = match name.strip_suffix(".gz") {
            Some(s) => (s.to_string(), true),
            None => (name, false),
        };
        let ext = stem.rsplit_once('.')?.1;
        match (ext, gz) {
            ("parquet", false) => Some(Self::Parquet),
            ("ndjson" | "jsonl", gz) => Some(Self::Ndjson { gz }),
            ("csv", gz) => Some(Self::Csv { gz }),
            _ => None,
        }
    }
}

/// One input file and its row count.
#[derive(Clone, Debug)]
pub struct InputFile {
    pub path: PathBuf,
    pub format: Format,
    pub rows: u64,
}

/// The files of a run and the schema they share.
#[derive(Debug)]
pub struct Inputs {
    pub schema: SchemaRef,
    pub files: Vec<InputFile>,
}

/// The files named: a file as given (its format from the extension), a directory's files of a
/// known format in name order (hidden and `_`-prefixed names, such as Spark's `_SUCCESS`,
/// skipped).
pub fn list(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Format)>, BatchRunError> {
    let mut out = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| BatchRunError::bad_file(path, e))?;
        if meta.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| BatchRunError::bad_file(path, e))?;
            let mut found: Vec<(PathBuf, Format)> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| !n.starts_with('.') && !n.starts_with('_'))
                        && p.is_file()
                })
                .filter_map(|p| Format::of(&p).map(|f| (p, f)))
                .collect();
            if found.is_empty() {
                return Err(BatchRunError::NoInput(path.display().to_string()));
            }
            found.sort_by(|a, b| a.0.cmp(&b.0));
            out.extend(found);
        } else {
            let format = Format::of(path).ok_or_else(|| {
                BatchRunError::bad_file(
                    path,
                    "unknown format (expected .parquet, .ndjson, .jsonl or .csv, optionally .gz for the text formats)",
                )
            })?;
            out.push((path.clone(), format));
        }
    }
    Ok(out)
}

/// Reads every file's schema and row count. All files must share the first file's columns;
/// NDJSON files together make one schema (every key seen, in order of first appearance).
pub fn scan(files: Vec<(PathBuf, Format)>) -> Result<Inputs, BatchRunError> {
    let mut keys: Vec<String> = Vec::new();
    let mut scanned = Vec::new();
    for (path, format) in files {
        let (schema, rows) = match format {
            Format::Parquet => {
                let (s, rows) =
                    parquet::scan(&path).map_err(|e| BatchRunError::bad_file(&path, e))?;
                (Some(s), rows)
            }
            Format::Csv { gz } => {
                let (names, rows) =
                    csv::scan(&path, gz).map_err(|e| BatchRunError::bad_file(&path, e))?;
                (Some(text::utf8_schema(&names)), rows)
            }
            Format::Ndjson { gz } => {
                let rows = ndjson::scan(&path, gz, &mut keys)
                    .map_err(|e| BatchRunError::bad_file(&path, e))?;
                (None, rows)
            }
        };
        scanned.push((InputFile { path, format, rows }, schema));
    }
    let ndjson_schema = (!keys.is_empty()).then(|| text::utf8_schema(&keys));
    let first = scanned
        .iter()
        .find_map(|(_, s)| s.clone())
        .or(ndjson_schema.clone())
        .ok_or_else(|| match scanned.first() {
            Some((f, _)) => BatchRunError::bad_file(&f.path, "no rows, so no columns"),
            None => BatchRunError::NoInput("the arguments".into()),
        })?;
    for (file, schema) in &scanned {
        let Some(schema) = schema.as_ref().or(ndjson_schema.as_ref()) else {
            continue;
        };
        if schema.fields() != first.fields() {
            return Err(BatchRunError::bad_file(
                &file.path,
                format!(
                    "its columns ({}) differ from the first input's ({})",
                    describe(schema),
                    describe(&first)
                ),
            ));
        }
    }
    Ok(Inputs {
        schema: first,
        files: scanned.into_iter().map(|(f, _)| f).collect(),
    })
}

/// Column names and types, for error messages (no data).
fn describe(schema: &SchemaRef) -> String {
    schema
        .fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads the rows `ranges` of `file` (row numbers, sorted and disjoint) in batches of at most
/// `batch_rows` rows, each with the run's `schema`, handing each to `emit`.
pub fn read(
    file: &InputFile,
    schema: &SchemaRef,
    ranges: &[Range<u64>],
    batch_rows: usize,
    mut emit: impl FnMut(RecordBatch) -> Result<(), String>,
) -> Result<(), String> {
    match file.format {
        Format::Parquet => {
            for batch in parquet::read(&file.path, ranges, batch_rows)? {
                let batch = batch?;
                // Parquet keeps the file's schema metadata; the columns are the run's.
                let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())
                    .map_err(|e| e.to_string())?;
                emit(batch)?;
            }
            Ok(())
        }
        Format::Ndjson { gz } => ndjson::read(&file.path, gz, schema, ranges, batch_rows, emit),
        Format::Csv { gz } => csv::read(&file.path, gz, schema, ranges, batch_rows, emit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_come_from_extensions() {
        let f = |s: &str| Format::of(Path::new(s));
        assert_eq!(f("a/notes.parquet"), Some(Format::Parquet));
        assert_eq!(f("n.JSONL"), Some(Format::Ndjson { gz: false }));
        assert_eq!(f("n.ndjson.gz"), Some(Format::Ndjson { gz: true }));
        assert_eq!(f("n.csv.gz"), Some(Format::Csv { gz: true }));
        assert_eq!(f("n.parquet.gz"), None);
        assert_eq!(f("n.txt"), None);
        assert_eq!(f("gz"), None);
    }
}
