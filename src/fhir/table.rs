//! The analytics table of one resource type: a flat Parquet row per de-identified resource.
//!
//! | column | type | what |
//! |---|---|---|
//! | `id` | string | the resource's pseudonymous id |
//! | `resource_type` | string | |
//! | `patient` | string, null | the patient's pseudonym (same as `Patient.id` in the output) |
//! | `date` | string, null | the resource's main clinical date, shifted (see [`DATE_FIELDS`]) |
//! | `status` | string, null | |
//! | `code_system`, `code`, `code_display` | string, null | the first coding of `code` (or `type`, `vaccineCode`, `medicationCodeableConcept`) |
//! | `value_number`, `value_unit` | float64, string, null | `valueQuantity` |
//! | `text` | string, null | the de-identified free text (notes, attachments, strings), one per line |
//! | `resource` | string | the whole de-identified resource as JSON |

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::Value;

use super::files::{AtomicFile, Written};

/// Where the main date of a resource is looked for, in order.
pub const DATE_FIELDS: &[&str] = &[
    "/effectiveDateTime",
    "/effectivePeriod/start",
    "/effectiveInstant",
    "/occurrenceDateTime",
    "/performedDateTime",
    "/performedPeriod/start",
    "/onsetDateTime",
    "/authoredOn",
    "/recordedDate",
    "/issued",
    "/period/start",
    "/date",
    "/created",
    "/birthDate",
    "/meta/lastUpdated",
];

const CODE_FIELDS: &[&str] = &["code", "type", "vaccineCode", "medicationCodeableConcept"];

/// Rows buffered before a row group is written.
const ROWS_PER_BATCH: usize = 8192;

pub fn schema() -> SchemaRef {
    let s = |n: &str, null: bool| Field::new(n, DataType::Utf8, null);
    Arc::new(Schema::new(vec![
        s("id", false),
        s("resource_type", false),
        s("patient", true),
        s("date", true),
        s("status", true),
        s("code_system", true),
        s("code", true),
        s("code_display", true),
        Field::new("value_number", DataType::Float64, true),
        s("value_unit", true),
        s("text", true),
        s("resource", false),
    ]))
}

/// One row's values.
struct Row {
    id: String,
    resource_type: String,
    patient: Option<String>,
    date: Option<String>,
    status: Option<String>,
    code: [Option<String>; 3],
    value_number: Option<f64>,
    value_unit: Option<String>,
    text: Option<String>,
    resource: String,
}

/// Writes one type's table, a batch at a time.
pub struct TableWriter {
    writer: ArrowWriter<AtomicFile>,
    rows: Vec<Row>,
}

fn string_at(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer).and_then(Value::as_str).map(String::from)
}

impl TableWriter {
    pub fn create(path: &Path) -> Result<Self, parquet::errors::ParquetError> {
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by("phiflow".into())
            .build();
        let file = AtomicFile::create(path)?;
        Ok(Self {
            writer: ArrowWriter::try_new(file, schema(), Some(props))?,
            rows: Vec::with_capacity(ROWS_PER_BATCH),
        })
    }

    /// Adds a resource (its JSON as written to the NDJSON output), with its patient's
    /// pseudonym and de-identified free text.
    pub fn push(
        &mut self,
        resource: &Value,
        json: &str,
        patient: Option<&str>,
        text: Option<&str>,
    ) -> Result<(), parquet::errors::ParquetError> {
        let code = CODE_FIELDS
            .iter()
            .find_map(|f| resource.get(*f).and_then(|c| c.pointer("/coding/0")))
            .map(|c| {
                [
                    string_at(c, "/system"),
                    string_at(c, "/code"),
                    string_at(c, "/display"),
                ]
            })
            .unwrap_or_default();
        self.rows.push(Row {
            id: string_at(resource, "/id").unwrap_or_default(),
            resource_type: string_at(resource, "/resourceType").unwrap_or_default(),
            patient: patient.map(String::from),
            date: DATE_FIELDS.iter().find_map(|p| string_at(resource, p)),
            status: string_at(resource, "/status"),
            code,
            value_number: resource
                .pointer("/valueQuantity/value")
                .and_then(Value::as_f64),
            value_unit: string_at(resource, "/valueQuantity/unit"),
            text: text.map(String::from),
            resource: json.to_string(),
        });
        if self.rows.len() >= ROWS_PER_BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), parquet::errors::ParquetError> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.rows);
        let col = |f: &dyn Fn(&Row) -> Option<&str>| -> ArrayRef {
            Arc::new(rows.iter().map(f).collect::<StringArray>())
        };
        let columns: Vec<ArrayRef> = vec![
            col(&|r| Some(r.id.as_str())),
            col(&|r| Some(r.resource_type.as_str())),
            col(&|r| r.patient.as_deref()),
            col(&|r| r.date.as_deref()),
            col(&|r| r.status.as_deref()),
            col(&|r| r.code[0].as_deref()),
            col(&|r| r.code[1].as_deref()),
            col(&|r| r.code[2].as_deref()),
            Arc::new(
                rows.iter()
                    .map(|r| r.value_number)
                    .collect::<Float64Array>(),
            ),
            col(&|r| r.value_unit.as_deref()),
            col(&|r| r.text.as_deref()),
            col(&|r| Some(r.resource.as_str())),
        ];
        let batch = RecordBatch::try_new(schema(), columns)?;
        self.writer.write(&batch)
    }

    /// Writes what is buffered and puts the file in place.
    pub fn commit(mut self) -> Result<Written, parquet::errors::ParquetError> {
        self.flush()?;
        let file = self.writer.into_inner()?;
        Ok(file.commit()?)
    }
}

/// Reads a table back (tests and tools).
pub fn read(path: &Path) -> Result<Vec<RecordBatch>, parquet::errors::ParquetError> {
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?
            .build()?;
    Ok(reader.collect::<Result<Vec<_>, _>>()?)
}
