//! A shard's output, written atomically: rows go to a hidden temporary file in the output
//! directory, which is synced and renamed to `part-<i>-of-<N>.parquet` only once complete. A
//! rerun of the shard (a retried pod) replaces the file whole, so the union of the parts never
//! holds a row twice or a partial part; temporary files of the shard left by a killed run are
//! removed when it starts again (and their hidden names keep Spark, pyarrow and DuckDB from
//! reading them meanwhile).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::error::BatchRunError;
use super::shard::Shard;

/// Rows per output row group: row groups are the unit later readers split work by.
const ROW_GROUP_ROWS: usize = 16 * 1024;
/// A row group is closed once its encoded size reaches this, whatever its rows (memory bound).
const ROW_GROUP_BYTES: usize = 64 * 1024 * 1024;

/// The output being written for one shard.
pub struct ShardWriter {
    writer: Option<ArrowWriter<BufWriter<File>>>,
    temp: PathBuf,
    target: PathBuf,
}

impl ShardWriter {
    /// Removes what a killed run of this shard left, and starts a temporary file.
    pub fn create(dir: &Path, shard: Shard, schema: SchemaRef) -> Result<Self, BatchRunError> {
        std::fs::create_dir_all(dir).map_err(|e| BatchRunError::output(dir, e))?;
        let target = dir.join(shard.file_name());
        let prefix = temp_prefix(shard);
        remove_stale(dir, &prefix)?;
        let temp = dir.join(format!(
            "{prefix}{}-{}.tmp",
            std::process::id(),
            chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default()
        ));
        let file = File::create(&temp).map_err(|e| BatchRunError::output(&temp, e))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
            .build();
        let writer = ArrowWriter::try_new(BufWriter::new(file), schema, Some(props))
            .map_err(|e| BatchRunError::output(&temp, e))?;
        Ok(Self {
            writer: Some(writer),
            temp,
            target,
        })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), BatchRunError> {
        let Some(w) = self.writer.as_mut() else {
            return Err(BatchRunError::output(&self.temp, "already finished"));
        };
        w.write(batch)
            .map_err(|e| BatchRunError::output(&self.temp, e))
    }

    /// Completes the file, syncs it, renames it into place and syncs the directory.
    pub fn finish(mut self) -> Result<PathBuf, BatchRunError> {
        let Some(w) = self.writer.take() else {
            return Err(BatchRunError::output(&self.temp, "already finished"));
        };
        let out = w
            .into_inner()
            .map_err(|e| BatchRunError::output(&self.temp, e))?;
        let file = out
            .into_inner()
            .map_err(|e| BatchRunError::output(&self.temp, e.error()))?;
        file.sync_all()
            .map_err(|e| BatchRunError::output(&self.temp, e))?;
        drop(file);
        std::fs::rename(&self.temp, &self.target)
            .map_err(|e| BatchRunError::output(&self.target, e))?;
        if let Some(dir) = self.target.parent() {
            // The rename is durable once the directory is.
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| BatchRunError::output(dir, e))?;
        }
        Ok(self.target.clone())
    }
}

/// An unfinished writer (an error stopped the run) removes its temporary file.
impl Drop for ShardWriter {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// The start of every temporary file name of a shard.
fn temp_prefix(shard: Shard) -> String {
    format!(".{}.", shard.file_name())
}

/// Removes the shard's temporary files that a killed run left behind.
fn remove_stale(dir: &Path, prefix: &str) -> Result<(), BatchRunError> {
    let entries = std::fs::read_dir(dir).map_err(|e| BatchRunError::output(dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with(prefix) && name.ends_with(".tmp") {
            std::fs::remove_file(entry.path())
                .map_err(|e| BatchRunError::output(&entry.path(), e))?;
            tracing::info!(file = name, "removed a temporary file a stopped run left");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_hidden_and_per_shard() {
        let p = temp_prefix(Shard { index: 1, count: 3 });
        assert_eq!(p, ".part-1-of-3.parquet.");
        // Shard 1 of 3 never removes shard 11 of 30's files, nor another N's.
        assert!(!".part-11-of-30.parquet.5-6.tmp".starts_with(&p));
        assert!(!".part-1-of-30.parquet.5-6.tmp".starts_with(&p));
    }
}
