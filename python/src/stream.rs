//! A stream of de-identified record batches over a stream of input batches: each batch read
//! from the input when the consumer asks for the next one, so memory stays bounded by a batch.

use std::sync::Arc;

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use phiflow::deidentifier::BatchColumns;

use crate::engine::Core;

pub struct DeidStream {
    core: Arc<Core>,
    input: RecordBatchStreamReader,
    cols: BatchColumns,
    schema: SchemaRef,
}

impl DeidStream {
    /// Checks the input's schema up front: the text column must be there, the added columns not.
    pub fn new(
        core: Arc<Core>,
        input: RecordBatchStreamReader,
        cols: BatchColumns,
    ) -> Result<Self, phiflow::deidentifier::BatchError> {
        let in_schema = input.schema();
        for name in std::iter::once(&cols.text).chain(cols.id.as_ref()) {
            if in_schema.index_of(name).is_err() {
                return Err(phiflow::deidentifier::BatchError::MissingColumn(
                    name.clone(),
                ));
            }
        }
        let schema = phiflow::deidentifier::output_schema(&in_schema)?;
        Ok(Self {
            core,
            input,
            cols,
            schema,
        })
    }
}

impl Iterator for DeidStream {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = match self.input.next()? {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        Some(
            self.core
                .deidentify_batch(&batch, &self.cols)
                .map_err(|e| ArrowError::ExternalError(Box::new(e))),
        )
    }
}

impl RecordBatchReader for DeidStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
