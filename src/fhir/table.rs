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

/// The analytics columns of one resource, taken from it once (where resources are
/// de-identified, in parallel) and carried to the table beside its JSON.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Columns {
    pub id: String,
    pub resource_type: String,
    pub date: Option<String>,
    pub status: Option<String>,
    pub code_system: Option<String>,
    pub code: Option<String>,
    pub code_display: Option<String>,
    pub value_number: Option<f64>,
    pub value_unit: Option<String>,
}

impl Columns {
    pub fn of(resource: &Value) -> Self {
        let coding = CODE_FIELDS
            .iter()
            .find_map(|f| resource.get(*f).and_then(|c| c.pointer("/coding/0")));
        let code = |k: &str| coding.and_then(|c| string_at(c, k));
        Self {
            id: string_at(resource, "/id").unwrap_or_default(),
            resource_type: string_at(resource, "/resourceType").unwrap_or_default(),
            date: DATE_FIELDS.iter().find_map(|p| string_at(resource, p)),
            status: string_at(resource, "/status"),
            code_system: code("/system"),
            code: code("/code"),
            code_display: code("/display"),
            value_number: resource
                .pointer("/valueQuantity/value")
                .and_then(Value::as_f64),
            value_unit: string_at(resource, "/valueQuantity/unit"),
        }
    }
}

/// One row's values.
struct Row {
    columns: Columns,
    patient: Option<String>,
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
        self.push_columns(Columns::of(resource), json, patient, text)
    }

    /// [`TableWriter::push`] with the columns already taken.
    pub fn push_columns(
        &mut self,
        columns: Columns,
        json: &str,
        patient: Option<&str>,
        text: Option<&str>,
    ) -> Result<(), parquet::errors::ParquetError> {
        self.rows.push(Row {
            columns,
            patient: patient.map(String::from),
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
            col(&|r| Some(r.columns.id.as_str())),
            col(&|r| Some(r.columns.resource_type.as_str())),
            col(&|r| r.patient.as_deref()),
            col(&|r| r.columns.date.as_deref()),
            col(&|r| r.columns.status.as_deref()),
            col(&|r| r.columns.code_system.as_deref()),
            col(&|r| r.columns.code.as_deref()),
            col(&|r| r.columns.code_display.as_deref()),
            Arc::new(
                rows.iter()
                    .map(|r| r.columns.value_number)
                    .collect::<Float64Array>(),
            ),
            col(&|r| r.columns.value_unit.as_deref()),
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
