//! A bulk export (NDJSON files, gzip or not) de-identified into one NDJSON file and one
//! Parquet table per resource type. The same code serves files already on disk
//! (`phiflow fhir deidentify`) and files downloaded by an ingestion job, so both give the same
//! output for the same resources.
//!
//! 1. **Index**: every Patient and RelatedPerson is read first, so each patient's names,
//!    identifiers, phones, address and birth date are known before any of their notes.
//! 2. **Parts**: each input file becomes a part (its de-identified resources in input order
//!    and its rejections), written atomically; a part whose input has not changed is not
//!    redone, so a restart after kill -9 resumes where it stopped.
//! 3. **Assembly**: the parts, in input order, become `<Type>.ndjson` and `<Type>.parquet`
//!    (each written atomically) and the summary records their sha256.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::files::{self, AtomicFile, Written};
use super::patients::PatientIndex;
use super::resource::{Done, Rejected, ResourceDeidentifier};
use super::table::{Columns, TableWriter};

/// Resources de-identified at once: enough free text to keep the model's batches full.
const IN_FLIGHT: usize = 64;
/// Lines handed from the reader at once (or fewer, up to [`BATCH_BYTES`]).
const BATCH_LINES: usize = 64;
const BATCH_BYTES: usize = 256 * 1024;
/// Input files de-identified at once.
const FILES_AT_ONCE: usize = 2;
/// Where parts live, inside the output folder.
pub const PARTS_DIR: &str = ".phiflow-parts";

/// One input file: a stable name (for the summary and resuming) and where it is.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Source {
    pub name: String,
    pub path: PathBuf,
}

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("reading {name}: {source}")]
    Read { name: String, source: io::Error },
    #[error("writing the output: {0}")]
    Write(#[from] io::Error),
    #[error("writing a Parquet table: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("a part record is unreadable: {0}")]
    Part(String),
    #[error("cancelled")]
    Cancelled,
}

/// Counters shared with whoever reports progress.
#[derive(Debug, Default)]
pub struct Progress {
    pub files_done: AtomicU64,
    pub resources: AtomicU64,
    pub bytes: AtomicU64,
    pub rejected: AtomicU64,
    pub cancelled: std::sync::atomic::AtomicBool,
}

/// A resource that was not passed on: where it was and why. Never its content.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct RejectionRecord {
    pub source: String,
    pub line: u64,
    pub resource_type: Option<String>,
    pub reason: String,
    /// sha256 of the line, to find it in the source without copying it.
    pub sha256: String,
}

/// What one input file gave.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartRecord {
    pub source: String,
    pub source_sha256: String,
    pub resources: BTreeMap<String, u64>,
    pub rejections: Vec<RejectionRecord>,
    pub texts: u64,
    pub spans: u64,
    pub known_added: u64,
    pub removed: u64,
    #[serde(default)]
    pub ages_aggregated: u64,
    /// The reference date ages were counted at: a part made at another is redone.
    #[serde(default)]
    pub reference_date: String,
    pub data: Written,
}

/// One output file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct OutputFile {
    pub resource_type: String,
    pub path: String,
    pub resources: u64,
    pub sha256: String,
    pub bytes: u64,
}

/// The outcome of an export.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    pub files: u64,
    /// The date the export stands at (`YYYY-MM-DD`): ages over 89 are counted at it.
    pub reference_date: String,
    pub patients_indexed: u64,
    pub resources: BTreeMap<String, u64>,
    pub resources_total: u64,
    pub rejections: Vec<RejectionRecord>,
    pub rejections_by_reason: BTreeMap<String, u64>,
    pub free_text_fields: u64,
    pub spans_rewritten: u64,
    pub spans_from_structured_data: u64,
    pub fields_removed: u64,
    /// Ages over 89 (birth dates, Age values) put in the "90 or older" category.
    pub ages_aggregated: u64,
    pub outputs: Vec<OutputFile>,
}

/// A line of a part file: the type, the patient pseudonym, the free text, the table's
/// columns and the resource.
#[derive(Serialize)]
struct PartLineOut<'a> {
    t: &'a str,
    p: Option<&'a str>,
    x: Option<String>,
    c: &'a Columns,
    r: &'a Value,
}

#[derive(Deserialize)]
struct PartLineIn<'a> {
    t: String,
    p: Option<String>,
    x: Option<String>,
    c: Columns,
    #[serde(borrow)]
    r: &'a RawValue,
}

/// A de-identified resource as its part line, with its counts.
struct Encoded {
    line: Vec<u8>,
    resource_type: String,
    texts: usize,
    spans: usize,
    known_added: usize,
    removed: usize,
    ages_aggregated: usize,
}

impl Encoded {
    fn new(done: Done) -> Result<Self, ExportError> {
        let text = (!done.free_text.is_empty()).then(|| done.free_text.join("\n"));
        let columns = Columns::of(&done.resource);
        let mut line = Vec::with_capacity(1024);
        serde_json::to_writer(
            &mut line,
            &PartLineOut {
                t: &done.resource_type,
                p: done.patient.as_deref(),
                x: text,
                c: &columns,
                r: &done.resource,
            },
        )
        .map_err(|e| ExportError::Part(e.to_string()))?;
        line.push(b'\n');
        Ok(Self {
            line,
            resource_type: done.resource_type,
            texts: done.texts,
            spans: done.spans,
            known_added: done.known_added,
            removed: done.removed,
            ages_aggregated: done.ages_aggregated,
        })
    }
}

/// Opens an input file, decompressing `.gz`.
/// Counts the bytes read from the file itself, under any decompression: progress and its ETA
/// are in the file's bytes, which is what the total is made of (a `.gz` file's decompressed
/// lines would run past it several times over).
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: io::Read> io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The source's lines, decompressed when it is a `.gz` file; `read` counts its file's bytes.
fn open(source: &Source, read: Arc<AtomicU64>) -> Result<Box<dyn BufRead + Send>, ExportError> {
    let err = |e| ExportError::Read {
        name: source.name.clone(),
        source: e,
    };
    let f = Counted {
        inner: File::open(&source.path).map_err(err)?,
        read,
    };
    let gz = source
        .path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    Ok(if gz {
        Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::read::MultiGzDecoder::new(f),
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 20, f))
    })
}

/// Calls `f` with each non-empty line (1-based number, bytes without the newline, and the file
/// bytes read since the previous call).
fn each_line(
    source: &Source,
    mut f: impl FnMut(u64, &[u8], u64) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let read = Arc::new(AtomicU64::new(0));
    let mut r = open(source, read.clone())?;
    let mut counted = 0;
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let got = r
            .read_until(b'\n', &mut buf)
            .map_err(|e| ExportError::Read {
                name: source.name.clone(),
                source: e,
            })?;
        if got == 0 {
            return Ok(());
        }
        n += 1;
        let line = buf.trim_ascii();
        if !line.is_empty() {
            let now = read.load(Ordering::Relaxed);
            f(n, line, now - counted)?;
            counted = now;
        }
    }
}

/// Pass 1: the patient index from every Patient and RelatedPerson of the sources.
pub fn index(sources: &[Source]) -> Result<PatientIndex, ExportError> {
    let mut idx = PatientIndex::default();
    // Most lines are neither: only a line holding one of the type names as a JSON string
    // (wherever its `resourceType` key sits) is parsed.
    let names = aho_corasick::AhoCorasick::new([&b"\"Patient\""[..], b"\"RelatedPerson\""])
        .map_err(|e| ExportError::Part(e.to_string()))?;
    for s in sources {
        each_line(s, |_, line, _| {
            if names.is_match(line)
                && let Ok(v) = serde_json::from_slice::<Value>(line)
            {
                idx.learn(&v);
            }
            Ok(())
        })?;
    }
    Ok(idx)
}

fn sha256_hex(b: &[u8]) -> String {
    crate::digest::sha256_hex(b)
}

/// The de-identification of one export into one output folder.
#[derive(Clone)]
pub struct Exporter {
    rd: Arc<ResourceDeidentifier>,
    output: PathBuf,
    parts: PathBuf,
    /// The date the export stands at: ages over 89 are counted at it.
    reference: NaiveDate,
}

impl Exporter {
    /// An exporter into `output`; `reference` is the date the export stands at (its
    /// `transactionTime`, or the day a local export is de-identified).
    pub fn new(
        rd: Arc<ResourceDeidentifier>,
        output: &Path,
        reference: NaiveDate,
    ) -> Result<Self, ExportError> {
        fs::create_dir_all(output)?;
        let parts = output.join(PARTS_DIR);
        files::create_private_dir(&parts)?;
        files::remove_temporaries(output)?;
        files::remove_temporaries(&parts)?;
        Ok(Self {
            rd,
            output: output.to_path_buf(),
            parts,
            reference,
        })
    }

    fn reference_date(&self) -> String {
        self.reference.format("%Y-%m-%d").to_string()
    }

    fn part_paths(&self, i: usize) -> (PathBuf, PathBuf) {
        (
            self.parts.join(format!("part-{i:05}.ndjson")),
            self.parts.join(format!("part-{i:05}.json")),
        )
    }

    /// The finished part of source `i`, when its input has not changed since.
    pub fn finished_part(&self, i: usize, source: &Source) -> Option<PartRecord> {
        let (data, record) = self.part_paths(i);
        let rec: PartRecord = serde_json::from_slice(&fs::read(record).ok()?).ok()?;
        let same_source = rec.source == source.name
            && rec.reference_date == self.reference_date()
            && files::sha256_file(&source.path).ok()? == rec.source_sha256;
        let same_data = files::sha256_file(&data).ok()? == rec.data.sha256;
        (same_source && same_data).then_some(rec)
    }

    /// Pass 2 for one source: its part, done now or found done before.
    pub async fn part(
        &self,
        i: usize,
        source: &Source,
        index: &Arc<PatientIndex>,
        progress: &Progress,
    ) -> Result<PartRecord, ExportError> {
        if let Some(done) = self.finished_part(i, source) {
            if let Ok(m) = fs::metadata(&source.path) {
                progress.bytes.fetch_add(m.len(), Ordering::Relaxed);
            }
            progress
                .resources
                .fetch_add(done.resources.values().sum::<u64>(), Ordering::Relaxed);
            progress
                .rejected
                .fetch_add(done.rejections.len() as u64, Ordering::Relaxed);
            progress.files_done.fetch_add(1, Ordering::Relaxed);
            return Ok(done);
        }
        // The parts folder again, should it have been cleaned since `new`.
        files::create_private_dir(&self.parts)?;
        let source_sha256 = files::sha256_file(&source.path).map_err(|e| ExportError::Read {
            name: source.name.clone(),
            source: e,
        })?;
        let (data_path, record_path) = self.part_paths(i);
        let mut data = AtomicFile::create(&data_path)?;
        let mut rec = PartRecord {
            source: source.name.clone(),
            source_sha256,
            resources: BTreeMap::new(),
            rejections: Vec::new(),
            texts: 0,
            spans: 0,
            known_added: 0,
            removed: 0,
            ages_aggregated: 0,
            reference_date: self.reference_date(),
            data: Written {
                sha256: String::new(),
                bytes: 0,
            },
        };
        // Lines are read on a blocking thread and handed over in batches (one wake-up per
        // batch, not per line); they are de-identified IN_FLIGHT at a time and written back
        // in input order.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<(u64, Vec<u8>, u64)>>(4);
        let reader = {
            let source = source.clone();
            tokio::task::spawn_blocking(move || {
                let mut batch = Vec::with_capacity(BATCH_LINES);
                let mut bytes = 0;
                each_line(&source, |n, line, read| {
                    bytes += line.len();
                    batch.push((n, line.to_vec(), read));
                    if batch.len() >= BATCH_LINES || bytes >= BATCH_BYTES {
                        bytes = 0;
                        let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_LINES));
                        tx.blocking_send(full).map_err(|_| ExportError::Cancelled)?;
                    }
                    Ok(())
                })?;
                if !batch.is_empty() {
                    tx.blocking_send(batch)
                        .map_err(|_| ExportError::Cancelled)?;
                }
                Ok::<(), ExportError>(())
            })
        };
        type Encoding = Result<Result<Encoded, ExportError>, Rejected>;
        let mut tasks: tokio::task::JoinSet<(u64, String, Encoding)> = tokio::task::JoinSet::new();
        let mut ready: BTreeMap<u64, (String, Encoding)> = BTreeMap::new();
        let mut order: std::collections::VecDeque<u64> = std::collections::VecDeque::new();
        let mut pending: std::collections::VecDeque<(u64, Vec<u8>, u64)> =
            std::collections::VecDeque::new();
        let mut reading = true;
        loop {
            if progress.cancelled.load(Ordering::Relaxed) {
                tasks.abort_all();
                return Err(ExportError::Cancelled);
            }
            while tasks.len() < IN_FLIGHT {
                let Some((n, bytes, read)) = pending.pop_front() else {
                    break;
                };
                order.push_back(n);
                progress.bytes.fetch_add(read, Ordering::Relaxed);
                let (rd, index, reference) = (self.rd.clone(), index.clone(), self.reference);
                tasks.spawn(async move {
                    let r = match std::str::from_utf8(&bytes) {
                        Ok(line) => rd.line(line, &index, reference).await,
                        Err(_) => Err(Rejected {
                            reason: super::resource::Rejection::InvalidJson,
                            resource_type: None,
                        }),
                    };
                    // Only a rejection records the line's hash.
                    let hash = if r.is_err() {
                        sha256_hex(&bytes)
                    } else {
                        String::new()
                    };
                    // Encoded here, beside the others, not in the writing loop.
                    (n, hash, r.map(Encoded::new))
                });
            }
            tokio::select! {
                batch = rx.recv(), if reading && pending.is_empty() => match batch {
                    Some(b) => pending.extend(b),
                    None => reading = false,
                },
                done = tasks.join_next(), if !tasks.is_empty() => match done {
                    Some(Ok((n, hash, r))) => {
                        ready.insert(n, (hash, r));
                    }
                    Some(Err(e)) => {
                        return Err(ExportError::Part(format!("a resource task failed: {e}")));
                    }
                    None => {}
                },
                else => break,
            }
            while let Some(&next) = order.front() {
                let Some((hash, r)) = ready.remove(&next) else {
                    break;
                };
                order.pop_front();
                match r {
                    Ok(encoded) => {
                        let done = encoded?;
                        data.write_all(&done.line)?;
                        *rec.resources.entry(done.resource_type).or_default() += 1;
                        rec.texts += done.texts as u64;
                        rec.spans += done.spans as u64;
                        rec.known_added += done.known_added as u64;
                        rec.removed += done.removed as u64;
                        rec.ages_aggregated += done.ages_aggregated as u64;
                        progress.resources.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(rej) => {
                        rec.rejections.push(RejectionRecord {
                            source: source.name.clone(),
                            line: next,
                            resource_type: rej.resource_type,
                            reason: rej.reason.code().to_string(),
                            sha256: hash,
                        });
                        progress.rejected.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        reader
            .await
            .map_err(|e| ExportError::Part(format!("the reader failed: {e}")))??;
        rec.data = data.commit()?;
        let mut record = AtomicFile::create(&record_path)?;
        serde_json::to_writer(&mut record, &rec).map_err(io::Error::other)?;
        record.commit()?;
        progress.files_done.fetch_add(1, Ordering::Relaxed);
        Ok(rec)
    }

    /// Pass 2 over every source, [`FILES_AT_ONCE`] at a time: the next file starts while the
    /// last texts of one wait for the model, so its batches stay full across file ends.
    async fn parts(
        &self,
        sources: &[Source],
        index: &Arc<PatientIndex>,
        progress: &Progress,
    ) -> Result<Vec<PartRecord>, ExportError> {
        type PartFuture<'a> = std::pin::Pin<
            Box<
                dyn std::future::Future<Output = (usize, Result<PartRecord, ExportError>)>
                    + Send
                    + 'a,
            >,
        >;
        let mut done: Vec<Option<PartRecord>> = (0..sources.len()).map(|_| None).collect();
        let mut running: Vec<PartFuture<'_>> = Vec::new();
        let mut next = 0;
        loop {
            while running.len() < FILES_AT_ONCE && next < sources.len() {
                let i = next;
                running.push(Box::pin(async move {
                    (i, self.part(i, &sources[i], index, progress).await)
                }));
                next += 1;
            }
            if running.is_empty() {
                break;
            }
            let (k, (i, r)) = std::future::poll_fn(|cx| {
                for (k, f) in running.iter_mut().enumerate() {
                    if let std::task::Poll::Ready(out) = f.as_mut().poll(cx) {
                        return std::task::Poll::Ready((k, out));
                    }
                }
                std::task::Poll::Pending
            })
            .await;
            drop(running.swap_remove(k));
            done[i] = Some(r?);
        }
        done.into_iter()
            .map(|p| p.ok_or_else(|| ExportError::Part("a part is missing".into())))
            .collect()
    }

    /// Pass 3: the parts, in order, into one NDJSON file and one Parquet table per type.
    pub fn assemble(&self, parts: &[PartRecord]) -> Result<Vec<OutputFile>, ExportError> {
        struct Out {
            ndjson: AtomicFile,
            table: TableWriter,
            count: u64,
        }
        let mut outs: HashMap<String, Out> = HashMap::new();
        for i in 0..parts.len() {
            let (data, _) = self.part_paths(i);
            let mut r = BufReader::with_capacity(1 << 20, File::open(&data)?);
            let mut buf = String::new();
            loop {
                buf.clear();
                if r.read_line(&mut buf)? == 0 {
                    break;
                }
                let line: PartLineIn = serde_json::from_str(buf.trim_end())
                    .map_err(|e| ExportError::Part(e.to_string()))?;
                if !super::types::is_known(&line.t) {
                    return Err(ExportError::Part("unknown type in a part".into()));
                }
                let out = match outs.get_mut(&line.t) {
                    Some(o) => o,
                    None => {
                        let ndjson =
                            AtomicFile::create(&self.output.join(format!("{}.ndjson", line.t)))?;
                        let table =
                            TableWriter::create(&self.output.join(format!("{}.parquet", line.t)))?;
                        outs.entry(line.t.clone()).or_insert(Out {
                            ndjson,
                            table,
                            count: 0,
                        })
                    }
                };
                let json = line.r.get();
                out.ndjson.write_all(json.as_bytes())?;
                out.ndjson.write_all(b"\n")?;
                out.table
                    .push_columns(line.c, json, line.p.as_deref(), line.x.as_deref())?;
                out.count += 1;
            }
        }
        let mut types: Vec<String> = outs.keys().cloned().collect();
        types.sort();
        let mut files = Vec::new();
        for t in types {
            let Some(o) = outs.remove(&t) else { continue };
            let n = o.ndjson.commit()?;
            let p = o.table.commit()?;
            for (ext, w) in [("ndjson", n), ("parquet", p)] {
                files.push(OutputFile {
                    resource_type: t.clone(),
                    path: format!("{t}.{ext}"),
                    resources: o.count,
                    sha256: w.sha256,
                    bytes: w.bytes,
                });
            }
        }
        Ok(files)
    }

    /// Removes the parts (after the summary is safe).
    pub fn clean(&self) -> io::Result<()> {
        match fs::remove_dir_all(&self.parts) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// All three passes over `sources`, in the order given (part `i` is source `i`; a
    /// resumed run must pass the same list, as [`sources_in`] gives it).
    pub async fn run(
        &self,
        sources: &[Source],
        progress: &Progress,
    ) -> Result<Summary, ExportError> {
        let list = sources.to_vec();
        let index = tokio::task::spawn_blocking(move || index(&list))
            .await
            .map_err(|e| ExportError::Part(format!("indexing failed: {e}")))??;
        let index = Arc::new(index);
        let parts = self.parts(sources, &index, progress).await?;
        // Assembly is blocking file work.
        let (me, p) = (self.clone(), parts.clone());
        let outputs = tokio::task::spawn_blocking(move || me.assemble(&p))
            .await
            .map_err(|e| ExportError::Part(format!("assembly failed: {e}")))??;
        let mut summary = summarize(&parts, index.patients() as u64, outputs);
        summary.reference_date = self.reference_date();
        Ok(summary)
    }
}

/// The summary of finished parts and outputs.
pub fn summarize(parts: &[PartRecord], patients: u64, outputs: Vec<OutputFile>) -> Summary {
    let mut s = Summary {
        files: parts.len() as u64,
        reference_date: parts
            .first()
            .map(|p| p.reference_date.clone())
            .unwrap_or_default(),
        patients_indexed: patients,
        resources: BTreeMap::new(),
        resources_total: 0,
        rejections: Vec::new(),
        rejections_by_reason: BTreeMap::new(),
        free_text_fields: 0,
        spans_rewritten: 0,
        spans_from_structured_data: 0,
        fields_removed: 0,
        ages_aggregated: 0,
        outputs,
    };
    for p in parts {
        for (t, n) in &p.resources {
            *s.resources.entry(t.clone()).or_default() += n;
            s.resources_total += n;
        }
        for r in &p.rejections {
            *s.rejections_by_reason.entry(r.reason.clone()).or_default() += 1;
        }
        s.rejections.extend(p.rejections.iter().cloned());
        s.free_text_fields += p.texts;
        s.spans_rewritten += p.spans;
        s.spans_from_structured_data += p.known_added;
        s.fields_removed += p.removed;
        s.ages_aggregated += p.ages_aggregated;
    }
    s
}

/// The NDJSON files (`*.ndjson`, `*.ndjson.gz`, `*.jsonl`) of a folder, sorted by name.
pub fn sources_in(dir: &Path) -> io::Result<Vec<Source>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let lower = name.to_ascii_lowercase();
        let is_ndjson = [".ndjson", ".ndjson.gz", ".jsonl", ".jsonl.gz"]
            .iter()
            .any(|s| lower.ends_with(s));
        if is_ndjson && e.file_type()?.is_file() {
            out.push(Source {
                name,
                path: e.path(),
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Bytes of all sources (for progress).
pub fn total_bytes(sources: &[Source]) -> u64 {
    sources
        .iter()
        .filter_map(|s| fs::metadata(&s.path).ok())
        .map(|m| m.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Progress counts a `.gz` file's own bytes, so its total and ETA hold: the decompressed
    /// lines are many times the file.
    #[test]
    fn lines_of_a_gz_file_count_its_compressed_bytes() {
        let dir = std::env::temp_dir().join(format!("phiflow-gz-{}", uuid::Uuid::new_v4()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("Patient.ndjson.gz");
        let line = format!(
            "{{\"resourceType\":\"Patient\",\"id\":\"p\",\"x\":\"{}\"}}\n",
            "a".repeat(500)
        );
        let mut gz = flate2::write::GzEncoder::new(
            File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        for _ in 0..2000 {
            gz.write_all(line.as_bytes()).unwrap();
        }
        gz.finish().unwrap();
        let source = Source {
            name: "Patient.ndjson.gz".into(),
            path: path.clone(),
        };
        let (mut lines, mut read, mut text) = (0, 0, 0);
        each_line(&source, |_, l, r| {
            lines += 1;
            read += r;
            text += l.len();
            Ok(())
        })
        .unwrap();
        let size = fs::metadata(&path).unwrap().len();
        assert_eq!(lines, 2000);
        assert!(text as u64 > 50 * size, "the file compresses well");
        let _ = fs::remove_dir_all(&dir);
        assert!(read <= size && read + 64 >= size, "read {read} of {size}");
    }
}
