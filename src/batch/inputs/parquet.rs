//! Parquet input: the schema and row count from the footer, then only the row groups and rows
//! the shard owns, streamed in record batches (memory bounded by a batch and a column chunk).

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::{
    ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};

/// The file's Arrow schema and row count, from its footer alone.
pub fn scan(path: &Path) -> Result<(SchemaRef, u64), String> {
    let b = builder(path)?;
    let rows = b.metadata().file_metadata().num_rows().max(0) as u64;
    Ok((b.schema().clone(), rows))
}

fn builder(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, String> {
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| format!("not a readable Parquet file: {e}"))
}

/// Batches of the rows in `ranges` (file row numbers, sorted, disjoint).
pub fn read(
    path: &Path,
    ranges: &[Range<u64>],
    batch_rows: usize,
) -> Result<impl Iterator<Item = Result<RecordBatch, String>> + use<>, String> {
    let b = builder(path)?;
    let group_rows: Vec<u64> = b
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.num_rows().max(0) as u64)
        .collect();
    let (groups, selectors) = selection(&group_rows, ranges);
    let reader: ParquetRecordBatchReader = b
        .with_row_groups(groups)
        .with_row_selection(RowSelection::from(selectors))
        .with_batch_size(batch_rows)
        .build()
        .map_err(|e| format!("cannot read: {e}"))?;
    Ok(reader.map(|r| r.map_err(|e| format!("cannot read: {e}"))))
}

/// The row groups that hold any of `ranges`, and the skip/select runs over those groups' rows.
fn selection(group_rows: &[u64], ranges: &[Range<u64>]) -> (Vec<usize>, Vec<RowSelector>) {
    let mut groups = Vec::new();
    let mut selectors = Vec::new();
    let mut start = 0u64;
    for (g, &n) in group_rows.iter().enumerate() {
        let end = start + n;
        let inside: Vec<Range<u64>> = ranges
            .iter()
            .filter(|r| r.start < end && r.end > start)
            .map(|r| r.start.max(start)..r.end.min(end))
            .collect();
        if !inside.is_empty() {
            groups.push(g);
            let mut pos = start;
            for r in inside {
                if r.start > pos {
                    selectors.push(RowSelector::skip((r.start - pos) as usize));
                }
                selectors.push(RowSelector::select((r.end - r.start) as usize));
                pos = r.end;
            }
            if pos < end {
                selectors.push(RowSelector::skip((end - pos) as usize));
            }
        }
        start = end;
    }
    (groups, selectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_only_the_groups_and_rows_asked_for() {
        // Groups of 4, 4, 4 rows (0..4, 4..8, 8..12); ask for rows 2..5 and 10..12.
        let (groups, sel) = selection(&[4, 4, 4], &[2..5, 10..12]);
        assert_eq!(groups, vec![0, 1, 2]);
        assert_eq!(
            sel,
            vec![
                RowSelector::skip(2),
                RowSelector::select(2),
                RowSelector::select(1),
                RowSelector::skip(3),
                RowSelector::skip(2),
                RowSelector::select(2),
            ]
        );
        let (groups, sel) = selection(&[4, 4, 4], std::slice::from_ref(&(4..8)));
        assert_eq!(groups, vec![1]);
        assert_eq!(sel, vec![RowSelector::select(4)]);
        assert_eq!(selection(&[4], &[]).0, Vec::<usize>::new());
    }
}
