//! OMOP CDM 5.4 loading: `records_jsonl` (grounded notes and plain CDM rows) → Arrow tables
//! with deterministic ids → a Parquet dataset under the data directory, with an account of
//! every rejected record and, on request, the constraint violations. Needs no model.

mod assertion;
pub mod build;
pub mod cdm;
pub mod cohort_data;
pub mod constraints;
pub mod dataset;
mod records;
mod table_builder;
mod values;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use build::{BuildError, Built, Rejection};
pub use cohort_data::{Source, caller_ids, cohort_data, note_hashes};
pub use constraints::Violations;
pub use dataset::DatasetError;
pub use records::LineError;

pub const LOAD_SCHEMA: &str = "phiflow.omop.load.v1";

/// The answer to `POST /omop/load`. Holds counts, ids, line numbers and hashes, never text.
#[derive(Debug, Serialize)]
pub struct LoadReport {
    pub schema_version: &'static str,
    pub load_id: String,
    pub cdm_version: &'static str,
    pub vocabulary_version: Option<String>,
    /// Non-blank lines read.
    pub records: usize,
    pub row_counts: BTreeMap<&'static str, usize>,
    pub rejection_counts: BTreeMap<&'static str, usize>,
    pub rejections: Vec<Rejection>,
    pub rejections_truncated: bool,
    pub source_note_hashes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constraint_violations: Option<Violations>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Dataset(#[from] DatasetError),
}

/// The folder under the data directory that holds the loads.
pub fn root(data_dir: &Path) -> PathBuf {
    data_dir.join("omop")
}

/// Builds, optionally validates, and stores one load.
pub fn load(
    root: &Path,
    records_jsonl: &str,
    validate_constraints: bool,
    vocabulary_version: Option<&str>,
) -> Result<LoadReport, LoadError> {
    let built = build::build(records_jsonl)?;
    let load_id = dataset::load_id(records_jsonl, vocabulary_version);
    let row_counts: BTreeMap<&'static str, usize> = built
        .tables
        .iter()
        .map(|(n, b)| (*n, b.num_rows()))
        .collect();
    let manifest = dataset::Manifest {
        schema_version: dataset::MANIFEST_SCHEMA.into(),
        load_id: load_id.clone(),
        cdm_version: "5.4".into(),
        vocabulary_version: vocabulary_version.map(str::to_string),
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        row_counts: row_counts
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
    };
    dataset::write(root, &manifest, &built.tables)?;
    let constraint_violations = validate_constraints.then(|| constraints::validate(&built.tables));
    let truncated = built.rejection_counts.values().sum::<usize>() > built.rejections.len();
    Ok(LoadReport {
        schema_version: LOAD_SCHEMA,
        load_id,
        cdm_version: "5.4",
        vocabulary_version: vocabulary_version.map(str::to_string),
        records: built.records,
        row_counts,
        rejection_counts: built.rejection_counts,
        rejections: built.rejections,
        rejections_truncated: truncated,
        source_note_hashes: built.note_hashes,
        constraint_violations,
    })
}

#[cfg(test)]
mod tests;
