//! De-identification of an Arrow record batch: every input column kept, plus the de-identified
//! text, its spans (a list of structs) and a per-row status, so a bad row never fails the batch.
//! Each row's id (when a column is named) keys its date shift, so a retried shard or another
//! machine gives the same output.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, Float32Array, ListArray, RecordBatch, StringArray, StructArray, UInt64Array,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema, SchemaRef};

use super::{DeidError, Deidentification, Deidentifier, Prepared, Subject};
use crate::inference::{InferenceError, ModelHandle};

/// Which input columns hold the text and the row id.
#[derive(Clone, Debug)]
pub struct BatchColumns {
    pub text: String,
    pub id: Option<String>,
}

/// Why a batch as a whole cannot be processed (row failures are reported in the rows).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("column `{0}` is not in the input")]
    MissingColumn(String),
    #[error("column `{name}` has type {data_type}; expected text (Utf8, LargeUtf8 or Utf8View)")]
    NotText { name: String, data_type: DataType },
    #[error("id column `{name}` has type {data_type}; expected text or integers")]
    BadId { name: String, data_type: DataType },
    #[error("the input already has a column named `{0}`")]
    ColumnExists(String),
    #[error(transparent)]
    Arrow(#[from] ArrowError),
}

/// Columns the output adds, in order.
pub const ADDED: [&str; 4] = ["deidentified_text", "spans", "status", "error"];

/// How many rows run at once: enough windows to fill the batching queue's batches.
const ROWS_IN_FLIGHT: usize = 32;

fn span_fields() -> Fields {
    Fields::from(vec![
        Field::new("label", DataType::Utf8, false),
        Field::new("canonical_label", DataType::Utf8, false),
        Field::new("start", DataType::UInt64, false),
        Field::new("end", DataType::UInt64, false),
        Field::new("output_start", DataType::UInt64, false),
        Field::new("output_end", DataType::UInt64, false),
        Field::new("confidence", DataType::Float32, false),
        Field::new("source", DataType::Utf8, false),
        Field::new("action", DataType::Utf8, false),
    ])
}

fn span_item() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Struct(span_fields()), false))
}

/// The output schema for an input schema: its fields, then [`ADDED`]. Offsets in spans are
/// code points into the row's input text and its de-identified text.
pub fn output_schema(input: &Schema) -> Result<SchemaRef, BatchError> {
    if let Some(clash) = ADDED.iter().find(|n| input.index_of(n).is_ok()) {
        return Err(BatchError::ColumnExists((*clash).to_string()));
    }
    let mut fields: Vec<Arc<Field>> = input.fields().iter().cloned().collect();
    fields.push(Arc::new(Field::new(
        "deidentified_text",
        DataType::Utf8,
        true,
    )));
    fields.push(Arc::new(Field::new(
        "spans",
        DataType::List(span_item()),
        true,
    )));
    fields.push(Arc::new(Field::new("status", DataType::Utf8, false)));
    fields.push(Arc::new(Field::new("error", DataType::Utf8, true)));
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        input.metadata().clone(),
    )))
}

/// The text of each row (None for null), whatever the string layout.
fn texts(batch: &RecordBatch, name: &str) -> Result<Vec<Option<Arc<str>>>, BatchError> {
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| BatchError::MissingColumn(name.into()))?;
    let get = |i: usize, v: &str| (!col.is_null(i)).then(|| Arc::from(v));
    Ok(match col.data_type() {
        DataType::Utf8 => {
            let a = col.as_string::<i32>();
            (0..a.len()).map(|i| get(i, a.value(i))).collect()
        }
        DataType::LargeUtf8 => {
            let a = col.as_string::<i64>();
            (0..a.len()).map(|i| get(i, a.value(i))).collect()
        }
        DataType::Utf8View => {
            let a = col.as_string_view();
            (0..a.len()).map(|i| get(i, a.value(i))).collect()
        }
        other => {
            return Err(BatchError::NotText {
                name: name.into(),
                data_type: other.clone(),
            });
        }
    })
}

/// The id of each row as text (None for null).
fn ids(batch: &RecordBatch, name: &str) -> Result<Vec<Option<String>>, BatchError> {
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| BatchError::MissingColumn(name.into()))?;
    let n = col.len();
    let pick = |i: usize, f: &dyn Fn(usize) -> String| (!col.is_null(i)).then(|| f(i));
    Ok(match col.data_type() {
        DataType::Utf8 => {
            let a = col.as_string::<i32>();
            (0..n).map(|i| pick(i, &|i| a.value(i).into())).collect()
        }
        DataType::LargeUtf8 => {
            let a = col.as_string::<i64>();
            (0..n).map(|i| pick(i, &|i| a.value(i).into())).collect()
        }
        DataType::Utf8View => {
            let a = col.as_string_view();
            (0..n).map(|i| pick(i, &|i| a.value(i).into())).collect()
        }
        DataType::Int32 => {
            let a = col.as_primitive::<Int32Type>();
            (0..n)
                .map(|i| pick(i, &|i| a.value(i).to_string()))
                .collect()
        }
        DataType::Int64 => {
            let a = col.as_primitive::<Int64Type>();
            (0..n)
                .map(|i| pick(i, &|i| a.value(i).to_string()))
                .collect()
        }
        DataType::UInt32 => {
            let a = col.as_primitive::<UInt32Type>();
            (0..n)
                .map(|i| pick(i, &|i| a.value(i).to_string()))
                .collect()
        }
        DataType::UInt64 => {
            let a = col.as_primitive::<UInt64Type>();
            (0..n)
                .map(|i| pick(i, &|i| a.value(i).to_string()))
                .collect()
        }
        other => {
            return Err(BatchError::BadId {
                name: name.into(),
                data_type: other.clone(),
            });
        }
    })
}

/// A row's outcome: its de-identification or an error code.
type RowOutcome = Result<Deidentification, &'static str>;

fn error_code(e: &DeidError) -> &'static str {
    match e {
        DeidError::Invalid(_) => "invalid_options",
        DeidError::Inference(InferenceError::QueueFull { .. }) => "backpressure",
        DeidError::Inference(InferenceError::ModelNotFound { .. }) => "model_not_found",
        DeidError::Inference(_) => "inference_failed",
        DeidError::Internal(_) => "internal_error",
    }
}

impl Deidentifier {
    /// De-identifies the text column of `batch` (see the module doc for the output).
    pub async fn deidentify_batch(
        self: &Arc<Self>,
        p: &Arc<Prepared>,
        model: &Arc<ModelHandle>,
        batch: &RecordBatch,
        cols: &BatchColumns,
    ) -> Result<RecordBatch, BatchError> {
        let schema = output_schema(&batch.schema())?;
        let texts = texts(batch, &cols.text)?;
        let ids = match &cols.id {
            Some(name) => ids(batch, name)?,
            None => vec![None; batch.num_rows()],
        };
        let mut outcomes: Vec<Option<RowOutcome>> = (0..texts.len()).map(|_| None).collect();
        let mut tasks = tokio::task::JoinSet::new();
        let mut rows = texts.into_iter().zip(ids).enumerate();
        loop {
            while tasks.len() < ROWS_IN_FLIGHT {
                let Some((i, (text, id))) = rows.next() else {
                    break;
                };
                let Some(text) = text else {
                    outcomes[i] = Some(Err("null_text"));
                    continue;
                };
                let (this, p, model) = (self.clone(), p.clone(), model.clone());
                tasks.spawn(async move {
                    let subject = Subject {
                        id: id.as_deref(),
                        known: &[],
                    };
                    let r = this.run_patiently(&p, &model, text, subject).await;
                    (i, r.map_err(|e| error_code(&e)))
                });
            }
            match tasks.join_next().await {
                Some(Ok((i, r))) => outcomes[i] = Some(r),
                Some(Err(e)) => {
                    tracing::error!(error = %e, "a batch row task failed");
                }
                None => break,
            }
        }
        let outcomes: Vec<RowOutcome> = outcomes
            .into_iter()
            .map(|o| o.unwrap_or(Err("internal_error")))
            .collect();
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        columns.extend(added_columns(&outcomes)?);
        Ok(RecordBatch::try_new(schema, columns)?)
    }
}

/// The four added columns for the rows' outcomes.
fn added_columns(outcomes: &[RowOutcome]) -> Result<Vec<ArrayRef>, ArrowError> {
    let text: StringArray = outcomes
        .iter()
        .map(|o| o.as_ref().ok().map(|d| d.text.as_str()))
        .collect();
    let status: StringArray = outcomes
        .iter()
        .map(|o| Some(if o.is_ok() { "ok" } else { "error" }))
        .collect();
    let error: StringArray = outcomes.iter().map(|o| o.as_ref().err().copied()).collect();
    let entities = || {
        outcomes
            .iter()
            .flat_map(|o| o.as_ref().map(|d| d.entities.as_slice()).unwrap_or(&[]))
    };
    let strings = |f: &dyn Fn(&super::DeidEntity) -> String| -> ArrayRef {
        Arc::new(entities().map(|e| Some(f(e))).collect::<StringArray>())
    };
    let numbers = |f: &dyn Fn(&super::DeidEntity) -> usize| -> ArrayRef {
        Arc::new(entities().map(|e| f(e) as u64).collect::<UInt64Array>())
    };
    let json_name = |v: serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let children: Vec<ArrayRef> = vec![
        strings(&|e| e.label.clone()),
        strings(&|e| e.canonical_label.to_string()),
        numbers(&|e| e.start),
        numbers(&|e| e.end),
        numbers(&|e| e.output_start),
        numbers(&|e| e.output_end),
        Arc::new(
            entities()
                .map(|e| e.confidence as f32)
                .collect::<Float32Array>(),
        ),
        strings(&|e| json_name(serde_json::to_value(e.source).unwrap_or_default())),
        strings(&|e| json_name(serde_json::to_value(e.action).unwrap_or_default())),
    ];
    let structs = StructArray::try_new(span_fields(), children, None)?;
    let lengths = outcomes
        .iter()
        .map(|o| o.as_ref().map_or(0, |d| d.entities.len()));
    let nulls =
        arrow_buffer::NullBuffer::from(outcomes.iter().map(Result::is_ok).collect::<Vec<_>>());
    let spans = ListArray::try_new(
        span_item(),
        OffsetBuffer::from_lengths(lengths),
        Arc::new(structs),
        Some(nulls),
    )?;
    Ok(vec![
        Arc::new(text),
        Arc::new(spans),
        Arc::new(status),
        Arc::new(error),
    ])
}
