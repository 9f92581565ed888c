//! CSV input (RFC 4180: a header row, comma separated, double-quoted fields may hold commas,
//! quotes and newlines). Every column is Utf8 and an empty field is the empty string: CSV has
//! no null, and guessing one would change the data.

use std::ops::Range;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::text::{self, Cursor, Rows};

fn reader(path: &Path, gz: bool) -> Result<csv::Reader<Box<dyn std::io::BufRead + Send>>, String> {
    Ok(csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(text::open(path, gz)?))
}

/// Why the file cannot be read, without its content.
fn csv_error(e: &csv::Error) -> String {
    let line = e
        .position()
        .map(|p| format!("line {}: ", p.line()))
        .unwrap_or_default();
    let what = match e.kind() {
        csv::ErrorKind::Io(e) => format!("cannot read: {e}"),
        csv::ErrorKind::Utf8 { .. } => "not valid UTF-8".into(),
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} fields where the header has {expected_len}"),
        _ => "not valid CSV".into(),
    };
    format!("{line}{what}")
}

/// The header's column names and the row count; checks every record.
pub fn scan(path: &Path, gz: bool) -> Result<(Vec<String>, u64), String> {
    let mut r = reader(path, gz)?;
    let names: Vec<String> = r
        .headers()
        .map_err(|e| csv_error(&e))?
        .iter()
        .map(String::from)
        .collect();
    if names.is_empty() || names.iter().all(String::is_empty) {
        return Err("no header row".into());
    }
    let mut unique = std::collections::HashSet::new();
    if let Some(dup) = names.iter().find(|n| !unique.insert(n.as_str())) {
        return Err(format!("the header names column `{dup}` twice"));
    }
    let mut record = csv::StringRecord::new();
    let mut rows = 0u64;
    while r.read_record(&mut record).map_err(|e| csv_error(&e))? {
        rows += 1;
    }
    Ok((names, rows))
}

/// Reads the owned rows (`ranges`, by record number) into batches of `batch_rows` rows.
pub fn read(
    path: &Path,
    gz: bool,
    schema: &SchemaRef,
    ranges: &[Range<u64>],
    batch_rows: usize,
    mut emit: impl FnMut(RecordBatch) -> Result<(), String>,
) -> Result<(), String> {
    let mut r = reader(path, gz)?;
    let mut cursor = Cursor::new(ranges);
    let mut rows = Rows::new(schema.clone());
    let mut record = csv::StringRecord::new();
    let mut row = 0u64;
    while !cursor.done() && r.read_record(&mut record).map_err(|e| csv_error(&e))? {
        if cursor.owns(row) {
            rows.push(record.iter().map(Some));
            if rows.len() >= batch_rows {
                emit(rows.take()?)?;
            }
        }
        row += 1;
    }
    if !rows.is_empty() {
        emit(rows.take()?)?;
    }
    Ok(())
}
