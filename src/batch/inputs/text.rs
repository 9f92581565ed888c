//! What the text formats (NDJSON, CSV) share: opening (plain or gzip), the row cursor that
//! picks the shard's rows, and the batch of Utf8 columns they are read into. Every column of a
//! text input is Utf8: values are kept as written (numbers and nested JSON as their JSON text),
//! so nothing is lost to a type guessed from the first rows.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// The file as lines of text, decompressed when it is gzip.
pub fn open(path: &Path, gz: bool) -> Result<Box<dyn BufRead + Send>, String> {
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    Ok(if gz {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(file)))
    } else {
        Box::new(BufReader::with_capacity(1 << 16, file))
    })
}

/// The schema of a text input: these columns, all nullable Utf8.
pub fn utf8_schema(names: &[String]) -> SchemaRef {
    Arc::new(Schema::new(
        names
            .iter()
            .map(|n| Field::new(n, DataType::Utf8, true))
            .collect::<Vec<_>>(),
    ))
}

/// Walks a file's rows in order and says which the shard owns; stops once past the last.
pub struct Cursor {
    ranges: Vec<Range<u64>>,
    at: usize,
}

impl Cursor {
    pub fn new(ranges: &[Range<u64>]) -> Self {
        Self {
            ranges: ranges.to_vec(),
            at: 0,
        }
    }

    /// Whether row `row` (rows asked in increasing order) is owned.
    pub fn owns(&mut self, row: u64) -> bool {
        while let Some(r) = self.ranges.get(self.at) {
            if row < r.end {
                return row >= r.start;
            }
            self.at += 1;
        }
        false
    }

    /// Whether no owned row is left.
    pub fn done(&self) -> bool {
        self.at >= self.ranges.len()
    }
}

/// Rows being gathered into one record batch of Utf8 columns.
pub struct Rows {
    schema: SchemaRef,
    builders: Vec<StringBuilder>,
    len: usize,
}

impl Rows {
    pub fn new(schema: SchemaRef) -> Self {
        let builders = schema
            .fields()
            .iter()
            .map(|_| StringBuilder::new())
            .collect();
        Self {
            schema,
            builders,
            len: 0,
        }
    }

    /// Adds a row: one value (or null) per column, in schema order.
    pub fn push<'a>(&mut self, values: impl IntoIterator<Item = Option<&'a str>>) {
        for (b, v) in self.builders.iter_mut().zip(values) {
            b.append_option(v);
        }
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The gathered rows as a batch; the builders start over.
    pub fn take(&mut self) -> Result<RecordBatch, String> {
        let columns: Vec<ArrayRef> = self
            .builders
            .iter_mut()
            .map(|b| Arc::new(b.finish()) as ArrayRef)
            .collect();
        self.len = 0;
        RecordBatch::try_new(self.schema.clone(), columns).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_walks_the_ranges() {
        let mut c = Cursor::new(&[1..3, 5..6]);
        let owned: Vec<u64> = (0..8).filter(|&r| c.owns(r)).collect();
        assert_eq!(owned, vec![1, 2, 5]);
        assert!(c.done());
    }
}
