//! A load on disk: `<root>/<load_id>/<table>.parquet` for every table plus `manifest.json`,
//! written into a temporary folder and renamed into place, so a reader never sees half a load.
//! The load id is derived from the records and the vocabulary version: loading the same
//! records twice yields the same id and the same dataset.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{BooleanArray, RecordBatch, RecordBatchReader};
use arrow_schema::ArrowError;
use arrow_select::concat::concat_batches;
use parquet::arrow::ArrowWriter;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowPredicateFn, ParquetRecordBatchReaderBuilder, RowFilter};
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use parquet::file::statistics::Statistics;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;
use crate::idhash::IdSet;

pub const MANIFEST_SCHEMA: &str = "phiflow.omop.load.v1";
/// Part of every load id: a dataset written in another layout gets another id.
const FORMAT: &str = "phiflow.omop.dataset.v2";

/// What is recorded with a load.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub schema_version: String,
    pub load_id: String,
    pub cdm_version: String,
    pub vocabulary_version: Option<String>,
    pub created_at: String,
    pub row_counts: BTreeMap<String, usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("load not found")]
    NotFound,
    #[error("load id is malformed")]
    BadId,
    #[error("table is not part of the load")]
    NoTable,
    #[error("a column is missing or of an unexpected type")]
    BadColumn,
    #[error("dataset io: {0}")]
    Io(#[from] std::io::Error),
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("manifest: {0}")]
    Manifest(#[from] serde_json::Error),
    #[error("{0} does not hold what this service wrote")]
    Invalid(&'static str),
    #[error("a reader thread panicked")]
    Poisoned,
}

/// `omop-` and 24 hex digits of SHA-256 over the dataset format, the vocabulary version and
/// the records.
pub fn load_id(records_jsonl: &str, vocabulary_version: Option<&str>) -> String {
    let mut input = String::with_capacity(records_jsonl.len() + 64);
    input.push_str(FORMAT);
    input.push('\u{1f}');
    input.push_str(vocabulary_version.unwrap_or(""));
    input.push('\u{1f}');
    input.push_str(records_jsonl);
    format!("omop-{}", &sha256_hex(&input)[..24])
}

/// Whether a string has the shape of a load id (checked before it touches a path).
pub fn is_load_id(s: &str) -> bool {
    s.len() == 29
        && s.starts_with("omop-")
        && s[5..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn dir(root: &Path, load_id: &str) -> Result<PathBuf, DatasetError> {
    if !is_load_id(load_id) {
        return Err(DatasetError::BadId);
    }
    Ok(root.join(load_id))
}

/// Writes a load; an existing dataset with the same id is the same data and is kept.
pub fn write(
    root: &Path,
    manifest: &Manifest,
    tables: &[(&'static str, RecordBatch)],
) -> Result<PathBuf, DatasetError> {
    write_grouped(root, manifest, tables, ROW_GROUP_ROWS)
}

/// Rows per Parquet row group: the unit a concept filter skips.
const ROW_GROUP_ROWS: usize = 128 * 1024;

fn write_grouped(
    root: &Path,
    manifest: &Manifest,
    tables: &[(&'static str, RecordBatch)],
    row_group_rows: usize,
) -> Result<PathBuf, DatasetError> {
    let target = dir(root, &manifest.load_id)?;
    if target.join("manifest.json").is_file() {
        return Ok(target);
    }
    private_dir(root)?;
    remove_stale_temporaries(root);
    let tmp = root.join(format!(
        ".tmp-{}-{}",
        manifest.load_id,
        uuid::Uuid::new_v4()
    ));
    private_dir(&tmp)?;
    let result = write_into(&tmp, manifest, tables, row_group_rows).and_then(|()| {
        match fs::rename(&tmp, &target) {
            // The rename itself is made durable too.
            Ok(()) => Ok(File::open(root)?.sync_all()?),
            // A concurrent identical load won the race; its data is the same.
            Err(_) if target.join("manifest.json").is_file() => Ok(()),
            Err(e) => Err(e.into()),
        }
    });
    if tmp.exists() {
        let _ = fs::remove_dir_all(&tmp);
    }
    result.map(|()| target)
}

fn write_into(
    dir: &Path,
    manifest: &Manifest,
    tables: &[(&'static str, RecordBatch)],
    row_group_rows: usize,
) -> Result<(), DatasetError> {
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(row_group_rows))
        .build();
    for (name, batch) in tables {
        let file = private_file(&dir.join(format!("{name}.parquet")))?;
        let mut w =
            ArrowWriter::try_new(BufWriter::new(file), batch.schema(), Some(props.clone()))?;
        w.write(batch)?;
        let file = w
            .into_inner()?
            .into_inner()
            .map_err(|e| DatasetError::Io(e.into_error()))?;
        file.sync_all()?;
    }
    // The manifest last: a folder with a manifest holds every table, durably.
    let mut m = private_file(&dir.join("manifest.json"))?;
    m.write_all(&serde_json::to_vec_pretty(manifest)?)?;
    m.sync_all()?;
    File::open(dir)?.sync_all()?;
    Ok(())
}

/// A folder only the service's user can enter: the dataset holds note text.
fn private_dir(path: &Path) -> std::io::Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(path)
}

/// A new file only the service's user can read.
fn private_file(path: &Path) -> std::io::Result<File> {
    let mut o = fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

/// Temporary folders a crashed writer left behind (an hour old or more).
fn remove_stale_temporaries(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let stale = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() >= 3600);
        if stale && e.file_name().to_string_lossy().starts_with(".tmp-") {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// The manifest of a stored load.
pub fn manifest(root: &Path, load_id: &str) -> Result<Manifest, DatasetError> {
    let path = dir(root, load_id)?.join("manifest.json");
    match fs::read(&path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(DatasetError::NotFound),
        Err(e) => Err(e.into()),
    }
}

/// Keep only the rows whose integer `column` (null read as 0) is in `ids`.
pub struct KeepIf<'a> {
    pub column: &'static str,
    pub ids: &'a Arc<IdSet>,
}

/// Reads one table of a load, only the named columns (all when `columns` is empty).
pub fn read(
    root: &Path,
    load_id: &str,
    table: &str,
    columns: &[&str],
) -> Result<RecordBatch, DatasetError> {
    read_where(root, load_id, table, columns, None)
}

/// [`read`] with a row filter pushed into the Parquet reader: the filter's column is decoded
/// first, and the other columns only for the rows it keeps.
pub fn read_where(
    root: &Path,
    load_id: &str,
    table: &str,
    columns: &[&str],
    keep: Option<&KeepIf<'_>>,
) -> Result<RecordBatch, DatasetError> {
    let (_, builder, groups) = open(root, load_id, table, keep)?;
    read_groups(builder, columns, keep, groups)
}

/// [`read_where`] with the row groups split over the cores, each part through its own reader,
/// for a read that would otherwise run alone on one core (the lookups after a cohort).
pub fn read_where_split(
    root: &Path,
    load_id: &str,
    table: &str,
    columns: &[&str],
    keep: Option<&KeepIf<'_>>,
) -> Result<RecordBatch, DatasetError> {
    let (path, builder, groups) = open(root, load_id, table, keep)?;
    let threads = crate::parallel::cores();
    if groups.len() < 2 || threads < 2 {
        return read_groups(builder, columns, keep, groups);
    }
    let parts: Vec<Vec<usize>> = groups
        .chunks(groups.len().div_ceil(threads))
        .map(<[usize]>::to_vec)
        .collect();
    let batches = parts
        .par_iter()
        .map(|part| {
            let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&path)?)?;
            read_groups(builder, columns, keep, part.clone())
        })
        .collect::<Result<Vec<_>, DatasetError>>()?;
    match batches.first() {
        Some(b) => Ok(concat_batches(&b.schema(), &batches)?),
        None => read_groups(builder, columns, keep, Vec::new()),
    }
}

/// A table's file, its reader, and the row groups `keep` may match (all without a filter).
fn open(
    root: &Path,
    load_id: &str,
    table: &str,
    keep: Option<&KeepIf<'_>>,
) -> Result<(PathBuf, ParquetRecordBatchReaderBuilder<File>, Vec<usize>), DatasetError> {
    let path = dir(root, load_id)?.join(format!("{table}.parquet"));
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(if dir(root, load_id)?.is_dir() {
                DatasetError::NoTable
            } else {
                DatasetError::NotFound
            });
        }
        Err(e) => return Err(e.into()),
    };
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
    let groups = match keep {
        Some(k) => row_groups_that_may_match(&builder, k),
        None => (0..builder.metadata().num_row_groups()).collect(),
    };
    Ok((path, builder, groups))
}

/// Reads `groups` of a file: the named columns (all when empty), rows filtered by `keep` inside
/// the reader, as one batch.
fn read_groups(
    mut builder: ParquetRecordBatchReaderBuilder<File>,
    columns: &[&str],
    keep: Option<&KeepIf<'_>>,
    groups: Vec<usize>,
) -> Result<RecordBatch, DatasetError> {
    // One batch for the whole table: no concatenation afterwards.
    let rows = usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    builder = builder.with_batch_size(rows.max(1)).with_row_groups(groups);
    if !columns.is_empty() {
        let mask = ProjectionMask::columns(builder.parquet_schema(), columns.iter().copied());
        builder = builder.with_projection(mask);
    }
    if let Some(k) = keep {
        let mask = ProjectionMask::columns(builder.parquet_schema(), [k.column]);
        let (ids, column) = (Arc::clone(k.ids), k.column);
        let predicate = ArrowPredicateFn::new(mask, move |batch: RecordBatch| {
            let values = batch
                .column_by_name(column)
                .and_then(|c| c.as_primitive_opt::<Int64Type>())
                .ok_or_else(|| {
                    ArrowError::SchemaError(format!("{column} is not an integer column"))
                })?;
            Ok(values
                .iter()
                .map(|v| Some(ids.contains(&v.unwrap_or(0))))
                .collect::<BooleanArray>())
        });
        builder = builder.with_row_filter(RowFilter::new(vec![Box::new(predicate)]));
    }
    let reader = builder.build()?;
    let schema = reader.schema();
    let mut batches = reader.collect::<Result<Vec<_>, _>>()?;
    if batches.len() == 1 {
        return Ok(batches.remove(0));
    }
    Ok(concat_batches(&schema, &batches)?)
}

/// The row groups whose min/max statistics for the filter column admit a wanted id (all of
/// them when a group has no statistics). Loads sort the clinical tables and `note_nlp` by
/// concept, so a concept filter skips most groups without decoding them.
fn row_groups_that_may_match(
    builder: &ParquetRecordBatchReaderBuilder<File>,
    k: &KeepIf<'_>,
) -> Vec<usize> {
    let schema = builder.parquet_schema();
    let leaf = (0..schema.num_columns()).find(|i| schema.column(*i).name() == k.column);
    let wanted_null = k.ids.contains(&0);
    builder
        .metadata()
        .row_groups()
        .iter()
        .enumerate()
        .filter(|(_, rg)| {
            let Some(Statistics::Int64(st)) = leaf.and_then(|l| rg.column(l).statistics()) else {
                return true;
            };
            let (Some(min), Some(max)) = (st.min_opt(), st.max_opt()) else {
                return true;
            };
            (wanted_null && st.null_count_opt().is_none_or(|n| n > 0))
                || k.ids.iter().any(|id| (min..=max).contains(&id))
        })
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::omop::build::build;

    #[test]
    fn load_ids_are_deterministic_and_checked() {
        let a = load_id("x", None);
        assert!(is_load_id(&a));
        assert_eq!(a, load_id("x", None));
        assert_ne!(a, load_id("x", Some("v5")));
        assert!(!is_load_id("../etc"));
        assert!(!is_load_id("omop-ABCDEF0123456789abcdef01"));
    }

    #[test]
    fn a_load_round_trips_through_parquet() {
        let records = r#"{"note_id":"n1","person_id":"p1","note_text":"Pneumonia.","note_date":"2024-01-02","entities":[{"start":0,"end":9,"domain":"condition","concept_id":255848,"vocabulary_id":"SNOMED"}]}"#;
        let built = build(records).unwrap();
        let root = std::env::temp_dir().join(format!("phiflow-omop-{}", uuid::Uuid::new_v4()));
        let m = Manifest {
            schema_version: MANIFEST_SCHEMA.into(),
            load_id: load_id(records, None),
            cdm_version: "5.4".into(),
            vocabulary_version: None,
            created_at: "2026-01-01T00:00:00Z".into(),
            row_counts: BTreeMap::new(),
        };
        let path = write(&root, &m, &built.tables).unwrap();
        assert!(path.join("condition_occurrence.parquet").is_file());
        assert_eq!(manifest(&root, &m.load_id).unwrap(), m);
        let nlp = read(&root, &m.load_id, "note_nlp", &["note_nlp_id", "offset"]).unwrap();
        assert_eq!((nlp.num_rows(), nlp.num_columns()), (1, 2));
        let full = read(&root, &m.load_id, "note", &[]).unwrap();
        assert_eq!(full.schema(), crate::omop::cdm::NOTE.schema());
        assert!(matches!(
            read(&root, "omop-000000000000000000000000", "note", &[]),
            Err(DatasetError::NotFound)
        ));
        // Writing the same load again keeps the first dataset.
        write(&root, &m, &built.tables).unwrap();
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_concept_filter_skips_row_groups_and_keeps_exact_rows() {
        // Ten mentions of concepts 1..=10, stored in concept order, two rows per group.
        let entities: Vec<String> = (1..=10)
            .rev()
            .map(|c| format!(r#"{{"start":0,"end":1,"domain":"condition","concept_id":{c}}}"#))
            .collect();
        let records = format!(
            r#"{{"note_id":1,"person_id":1,"note_date":"2024-01-01","entities":[{}]}}"#,
            entities.join(",")
        );
        let built = build(&records).unwrap();
        let root = std::env::temp_dir().join(format!("phiflow-omop-{}", uuid::Uuid::new_v4()));
        let m = Manifest {
            schema_version: MANIFEST_SCHEMA.into(),
            load_id: load_id(&records, None),
            cdm_version: "5.4".into(),
            vocabulary_version: None,
            created_at: "2026-01-01T00:00:00Z".into(),
            row_counts: BTreeMap::new(),
        };
        write_grouped(&root, &m, &built.tables, 2).unwrap();
        let ids: Arc<IdSet> = Arc::new([4, 9].into_iter().collect());
        let keep = KeepIf {
            column: "note_nlp_concept_id",
            ids: &ids,
        };
        let path = root.join(&m.load_id).join("note_nlp.parquet");
        let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
        // Groups hold concepts {1,2} {3,4} {5,6} {7,8} {9,10}: 4 is in group 1, 9 in group 4.
        assert_eq!(row_groups_that_may_match(&builder, &keep), vec![1, 4]);
        let b = read_where(
            &root,
            &m.load_id,
            "note_nlp",
            &["note_nlp_concept_id"],
            Some(&keep),
        )
        .unwrap();
        let got: Vec<i64> = b.column(0).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(got, vec![4, 9]);
        fs::remove_dir_all(&root).unwrap();
    }
}
