//! SQLite schema and every statement the job store runs. All functions are
//! blocking and take the connection from the caller, who holds the DB lock.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::{Value, json};

use super::record::{self, DocSummary, JobRow};
use super::{DocError, JobError, NewDocument, ProcessedDoc, sha256_tag};

/// Schema migrations, applied in order; `PRAGMA user_version` counts them.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    options_json TEXT NOT NULL,
    webhook_sealed BLOB,
    webhook_url_hash TEXT,
    webhook_max_attempts INTEGER,
    webhook_backoff REAL,
    delivery_state TEXT,
    delivery_attempts INTEGER NOT NULL DEFAULT 0,
    delivery_status_code INTEGER,
    delivery_error TEXT,
    delivery_last_attempt_at INTEGER,
    delivery_delivered_at INTEGER,
    document_count INTEGER NOT NULL,
    processed_count INTEGER NOT NULL DEFAULT 0,
    failed_count INTEGER NOT NULL DEFAULT 0,
    label_histogram_json TEXT NOT NULL DEFAULT '{}',
    error_json TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    started_at INTEGER,
    completed_at INTEGER,
    expires_at INTEGER
);
CREATE INDEX jobs_active ON jobs(status, created_at);
CREATE INDEX jobs_expiry ON jobs(expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX jobs_delivery ON jobs(delivery_state) WHERE delivery_state IS NOT NULL;
CREATE TABLE documents (
    job_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    doc_id TEXT NOT NULL,
    text TEXT,
    status TEXT NOT NULL,
    length INTEGER NOT NULL,
    text_hash TEXT NOT NULL,
    result_text TEXT,
    entities_json TEXT,
    error_json TEXT,
    PRIMARY KEY (job_id, idx)
);
"#];

/// Opens the database with durable settings and migrates it.
pub(super) fn open(path: &Path) -> Result<Connection, JobError> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)?;
    }
    restrict_file(path)?;
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(JobError::Corrupt(format!(
            "could not enable WAL (got {mode})"
        )));
    }
    // FULL: a commit is fsynced before it returns, so an acknowledged submit
    // survives even power loss (NORMAL would survive only a process kill).
    // secure_delete: purged document text is overwritten, not left in free
    // space; journal_size_limit: the WAL (which still holds old page images
    // with source text) is truncated whenever a checkpoint resets it.
    conn.execute_batch(
        "PRAGMA synchronous=FULL; PRAGMA secure_delete=ON; PRAGMA journal_size_limit=0;
         PRAGMA foreign_keys=ON;",
    )?;
    migrate(&conn)?;
    Ok(conn)
}

/// Creates the DB file with mode 0600 before SQLite does; SQLite gives the
/// WAL and shared-memory files the same permissions as the database file.
#[cfg(unix)]
fn restrict_file(path: &Path) -> Result<(), JobError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}

#[cfg(not(unix))]
fn restrict_file(_path: &Path) -> Result<(), JobError> {
    Ok(())
}

fn migrate(conn: &Connection) -> Result<(), JobError> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let applied = usize::try_from(version).unwrap_or(usize::MAX);
    if applied > MIGRATIONS.len() {
        return Err(JobError::Corrupt(format!(
            "database schema version {version} is newer than this build"
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(applied) {
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(
            None,
            "user_version",
            i64::try_from(i + 1).unwrap_or(i64::MAX),
        )?;
        tx.commit()?;
    }
    Ok(())
}

/// Copies the WAL into the database and truncates it, dropping old page
/// images that still contain purged text.
pub(super) fn checkpoint(conn: &Connection) -> Result<(), JobError> {
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

fn write_tx(conn: &mut Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    // IMMEDIATE takes the write lock up front, avoiding deadlock-prone upgrades.
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
}

/// Webhook columns of a new job.
pub(super) struct NewWebhook {
    pub sealed: Vec<u8>,
    pub url_hash: String,
    pub max_attempts: i64,
    pub backoff_seconds: f64,
}

/// Inserts the job and its documents in one transaction.
pub(super) fn insert_job(
    conn: &mut Connection,
    id: &str,
    options_json: &str,
    webhook: Option<&NewWebhook>,
    documents: &[NewDocument],
    sealed_texts: &[Vec<u8>],
    now: i64,
) -> Result<(), JobError> {
    let tx = write_tx(conn)?;
    tx.execute(
        "INSERT INTO jobs (id, status, options_json, webhook_sealed, webhook_url_hash,
             webhook_max_attempts, webhook_backoff, document_count, created_at, updated_at)
         VALUES (?1, 'queued', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
        params![
            id,
            options_json,
            webhook.map(|w| &w.sealed),
            webhook.map(|w| &w.url_hash),
            webhook.map(|w| w.max_attempts),
            webhook.map(|w| w.backoff_seconds),
            count_i64(documents.len()),
            now,
        ],
    )?;
    {
        let mut stmt = tx.prepare(
            "INSERT INTO documents (job_id, idx, doc_id, text, status, length, text_hash)
             VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6)",
        )?;
        for (i, (doc, sealed)) in documents.iter().zip(sealed_texts).enumerate() {
            let doc_id = match doc.id.as_deref().map(str::trim) {
                Some(s) if !s.is_empty() => s.to_owned(),
                _ => i.to_string(),
            };
            stmt.execute(params![
                id,
                count_i64(i),
                doc_id,
                sealed,
                count_i64(doc.text.chars().count()),
                sha256_tag(doc.text.as_bytes()),
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

fn count_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

const JOB_COLUMNS: &str = "id, status, document_count, processed_count, failed_count,
    label_histogram_json, error_json, webhook_url_hash, webhook_max_attempts, webhook_backoff,
    delivery_state, delivery_attempts, delivery_status_code, delivery_error,
    delivery_last_attempt_at, delivery_delivered_at,
    created_at, updated_at, started_at, completed_at, expires_at";

fn job_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<JobRow> {
    Ok(JobRow {
        id: r.get(0)?,
        status: r.get(1)?,
        document_count: r.get(2)?,
        processed_count: r.get(3)?,
        failed_count: r.get(4)?,
        histogram_json: r.get(5)?,
        error_json: r.get(6)?,
        webhook_url_hash: r.get(7)?,
        webhook_max_attempts: r.get(8)?,
        webhook_backoff: r.get(9)?,
        delivery_state: r.get(10)?,
        delivery_attempts: r.get(11)?,
        delivery_status_code: r.get(12)?,
        delivery_error: r.get(13)?,
        delivery_last_attempt_at: r.get(14)?,
        delivery_delivered_at: r.get(15)?,
        created_at: r.get(16)?,
        updated_at: r.get(17)?,
        started_at: r.get(18)?,
        completed_at: r.get(19)?,
        expires_at: r.get(20)?,
    })
}

/// The job row, or `None` when unknown or expired (even if not yet swept).
fn live_job(conn: &Connection, id: &str, now: i64) -> Result<Option<JobRow>, JobError> {
    let row = conn
        .query_row(
            &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"),
            [id],
            job_row,
        )
        .optional()?;
    Ok(row.filter(|j| j.expires_at.is_none_or(|e| e > now)))
}

pub(super) fn is_live(conn: &Connection, id: &str, now: i64) -> Result<bool, JobError> {
    let expires: Option<Option<i64>> = conn
        .query_row("SELECT expires_at FROM jobs WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(matches!(expires, Some(e) if e.is_none_or(|e| e > now)))
}

/// The job record JSON (see `record::job_record`).
pub(super) fn load_record(
    conn: &Connection,
    id: &str,
    now: i64,
) -> Result<Option<Value>, JobError> {
    let Some(job) = live_job(conn, id, now)? else {
        return Ok(None);
    };
    let mut stmt = conn.prepare_cached(
        "SELECT idx, doc_id, status, length, text_hash FROM documents
         WHERE job_id = ?1 ORDER BY idx",
    )?;
    let docs = stmt
        .query_map([id], |r| {
            Ok(DocSummary {
                index: r.get(0)?,
                id: r.get(1)?,
                status: r.get(2)?,
                length: r.get(3)?,
                text_hash: r.get(4)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    record::job_record(&job, &docs).map(Some)
}

/// Oldest queued/running job for which `take` returns true.
pub(super) fn next_runnable_job(
    conn: &Connection,
    mut take: impl FnMut(&str) -> bool,
) -> Result<Option<(String, String)>, JobError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, options_json FROM jobs WHERE status IN ('queued', 'running')
         ORDER BY created_at, rowid",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        if take(&id) {
            return Ok(Some((id, row.get(1)?)));
        }
    }
    Ok(None)
}

/// A pending document's stored text: sealed (every store since sealing), or
/// plain text written by an older build and still pending.
pub(super) enum StoredText {
    Sealed(Vec<u8>),
    Plain(String),
}

/// Up to `limit` pending documents with `idx >= from`, in index order, and
/// marks the job running. Nothing is persisted about the claim itself.
pub(super) fn claim_docs(
    conn: &mut Connection,
    job_id: &str,
    from: i64,
    limit: usize,
    now: i64,
) -> Result<Vec<(i64, Option<StoredText>)>, JobError> {
    let tx = write_tx(conn)?;
    let status: Option<String> = tx
        .query_row("SELECT status FROM jobs WHERE id = ?1", [job_id], |r| {
            r.get(0)
        })
        .optional()?;
    if !matches!(status.as_deref(), Some("queued" | "running")) {
        return Ok(Vec::new());
    }
    let docs = {
        let mut stmt = tx.prepare_cached(
            "SELECT idx, text FROM documents
             WHERE job_id = ?1 AND idx >= ?2 AND status = 'pending'
             ORDER BY idx LIMIT ?3",
        )?;
        stmt.query_map(params![job_id, from, count_i64(limit)], |r| {
            use rusqlite::types::ValueRef;
            let text = match r.get_ref(1)? {
                ValueRef::Blob(b) => Some(StoredText::Sealed(b.to_vec())),
                ValueRef::Text(t) => {
                    Some(StoredText::Plain(String::from_utf8_lossy(t).into_owned()))
                }
                _ => None,
            };
            Ok((r.get(0)?, text))
        })?
        .collect::<Result<Vec<_>, _>>()?
    };
    if !docs.is_empty() {
        tx.execute(
            "UPDATE jobs SET status = 'running', started_at = ?2, updated_at = ?2
             WHERE id = ?1 AND status = 'queued'",
            params![job_id, now],
        )?;
    }
    tx.commit()?;
    Ok(docs)
}

/// Records one document's outcome exactly once, purging its source text, and
/// moves the job to its terminal state when it was the last one. Returns
/// whether a webhook delivery became due.
pub(super) fn commit_doc(
    conn: &mut Connection,
    job_id: &str,
    idx: i64,
    outcome: &Result<ProcessedDoc, DocError>,
    now: i64,
    ttl_ms: i64,
) -> Result<bool, JobError> {
    let tx = write_tx(conn)?;
    let changed = match outcome {
        Ok(doc) => {
            let entities = serde_json::to_string(&doc.entities)
                .map_err(|e| JobError::Corrupt(format!("entities not serialisable: {e}")))?;
            tx.execute(
                "UPDATE documents SET status = 'done', text = NULL, result_text = ?3,
                     entities_json = ?4, error_json = NULL
                 WHERE job_id = ?1 AND idx = ?2 AND status = 'pending'",
                params![job_id, idx, doc.text, entities],
            )?
        }
        Err(err) => tx.execute(
            "UPDATE documents SET status = 'failed', text = NULL, error_json = ?3
             WHERE job_id = ?1 AND idx = ?2 AND status = 'pending'",
            params![job_id, idx, error_json(err)],
        )?,
    };
    if changed == 0 {
        // Already recorded, or the job was cancelled/expired meanwhile.
        return Ok(false);
    }
    let (processed, failed, hist_json): (i64, i64, String) = tx.query_row(
        "SELECT processed_count, failed_count, label_histogram_json FROM jobs WHERE id = ?1",
        [job_id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let (processed, failed, hist_json) = match outcome {
        Ok(doc) if !doc.labels.is_empty() => {
            let mut hist: BTreeMap<String, i64> = serde_json::from_str(&hist_json)
                .map_err(|e| JobError::Corrupt(format!("label histogram: {e}")))?;
            for label in &doc.labels {
                *hist.entry(label.clone()).or_default() += 1;
            }
            let hist_json = serde_json::to_string(&hist)
                .map_err(|e| JobError::Corrupt(format!("label histogram: {e}")))?;
            (processed + 1, failed, hist_json)
        }
        Ok(_) => (processed + 1, failed, hist_json),
        Err(_) => (processed, failed + 1, hist_json),
    };
    tx.execute(
        "UPDATE jobs SET processed_count = ?2, failed_count = ?3, label_histogram_json = ?4,
             updated_at = ?5
         WHERE id = ?1",
        params![job_id, processed, failed, hist_json, now],
    )?;
    let deliver = finish_if_complete(&tx, job_id, now, ttl_ms)?;
    tx.commit()?;
    crate::metrics::Metrics::global()
        .job_documents
        .inc(&[if outcome.is_ok() { "ok" } else { "error" }]);
    Ok(deliver)
}

fn error_json(err: &DocError) -> String {
    // Bounded so a misbehaving processor cannot store unbounded data here.
    let code: String = err.code.chars().take(64).collect();
    let message: String = err.message.chars().take(500).collect();
    json!({ "code": code, "message": message }).to_string()
}

/// Terminal transition for a job with every document finished; used for jobs
/// that complete without a document commit (e.g. no documents). Returns
/// whether a webhook delivery became due.
pub(super) fn finish_job(
    conn: &mut Connection,
    job_id: &str,
    now: i64,
    ttl_ms: i64,
) -> Result<bool, JobError> {
    let tx = write_tx(conn)?;
    let deliver = finish_if_complete(&tx, job_id, now, ttl_ms)?;
    tx.commit()?;
    Ok(deliver)
}

/// Marks the job succeeded/failed if it is still active and all documents are
/// finished. The status guard makes the terminal transition happen once.
fn finish_if_complete(
    tx: &rusqlite::Transaction<'_>,
    job_id: &str,
    now: i64,
    ttl_ms: i64,
) -> Result<bool, JobError> {
    let row: Option<(String, i64, i64, i64)> = tx
        .query_row(
            "SELECT status, document_count, processed_count, failed_count FROM jobs WHERE id = ?1",
            [job_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()?;
    let Some((status, total, processed, failed)) = row else {
        return Ok(false);
    };
    if !matches!(status.as_str(), "queued" | "running") || processed + failed < total {
        return Ok(false);
    }
    let (status, error) = if failed > 0 {
        let error = json!({
            "code": "documents_failed",
            "message": format!("{failed} of {total} documents failed"),
        });
        ("failed", Some(error.to_string()))
    } else {
        ("succeeded", None)
    };
    terminal(tx, job_id, status, error.as_deref(), now, ttl_ms)
}

/// Sets a terminal status once (guarded) and schedules the webhook, if any.
fn terminal(
    tx: &rusqlite::Transaction<'_>,
    job_id: &str,
    status: &str,
    error_json: Option<&str>,
    now: i64,
    ttl_ms: i64,
) -> Result<bool, JobError> {
    let changed = tx.execute(
        "UPDATE jobs SET status = ?2, error_json = ?3, updated_at = ?4,
             started_at = COALESCE(started_at, ?4), completed_at = ?4, expires_at = ?5,
             delivery_state = CASE WHEN webhook_sealed IS NULL THEN NULL ELSE 'pending' END,
             delivery_attempts = 0
         WHERE id = ?1 AND status IN ('queued', 'running')",
        params![job_id, status, error_json, now, now.saturating_add(ttl_ms)],
    )?;
    if changed == 0 {
        return Ok(false);
    }
    let outcome = match status {
        "succeeded" => "succeeded",
        "failed" => "failed",
        _ => "cancelled",
    };
    crate::metrics::Metrics::global().jobs.inc(&[outcome]);
    let deliver: bool = tx.query_row(
        "SELECT webhook_sealed IS NOT NULL FROM jobs WHERE id = ?1",
        [job_id],
        |r| r.get(0),
    )?;
    Ok(deliver)
}

/// Cancels an active job, leaving the documents in `in_flight` pending so
/// they can still be recorded. `None` if the job is unknown or expired;
/// otherwise whether a webhook delivery became due.
pub(super) fn cancel(
    conn: &mut Connection,
    job_id: &str,
    in_flight: &[i64],
    now: i64,
    ttl_ms: i64,
) -> Result<Option<bool>, JobError> {
    let tx = write_tx(conn)?;
    let Some(job) = live_job(&tx, job_id, now)? else {
        return Ok(None);
    };
    if !matches!(job.status.as_str(), "queued" | "running") {
        return Ok(Some(false));
    }
    // The excluded indices are integers we hold, so formatting them is safe.
    let keep = in_flight
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    tx.execute(
        &format!(
            "UPDATE documents SET status = 'cancelled', text = NULL
             WHERE job_id = ?1 AND status = 'pending' AND idx NOT IN ({keep})"
        ),
        [job_id],
    )?;
    let deliver = terminal(&tx, job_id, "cancelled", None, now, ttl_ms)?;
    tx.commit()?;
    Ok(Some(deliver))
}

/// Up to `limit` result lines of finished documents with `idx >= from`.
pub(super) fn result_page(
    conn: &Connection,
    job_id: &str,
    from: i64,
    limit: usize,
) -> Result<Vec<(i64, Value)>, JobError> {
    let mut stmt = conn.prepare_cached(
        "SELECT idx, doc_id, status, result_text, entities_json, error_json FROM documents
         WHERE job_id = ?1 AND idx >= ?2 AND status IN ('done', 'failed')
         ORDER BY idx LIMIT ?3",
    )?;
    let rows = stmt
        .query_map(params![job_id, from, count_i64(limit)], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter()
        .map(|(idx, doc_id, status, text, entities, error)| {
            let line = record::result_line(idx, &doc_id, &status, text, entities, error)?;
            Ok((idx, line))
        })
        .collect()
}

/// Deletes expired jobs and their documents (and thereby sealed webhooks).
pub(super) fn sweep(conn: &mut Connection, now: i64) -> Result<usize, JobError> {
    let mut deleted = 0;
    loop {
        let tx = write_tx(conn)?;
        let ids = {
            let mut stmt = tx.prepare_cached(
                "SELECT id FROM jobs WHERE expires_at IS NOT NULL AND expires_at <= ?1 LIMIT 100",
            )?;
            stmt.query_map([now], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?
        };
        for id in &ids {
            tx.execute("DELETE FROM documents WHERE job_id = ?1", [id])?;
            tx.execute("DELETE FROM jobs WHERE id = ?1", [id])?;
        }
        tx.commit()?;
        crate::metrics::Metrics::global()
            .jobs
            .inc_by(&["expired"], ids.len() as u64);
        deleted += ids.len();
        if ids.len() < 100 {
            return Ok(deleted);
        }
    }
}

/// Jobs whose webhook delivery is still pending (e.g. after a crash).
pub(super) fn pending_deliveries(conn: &Connection) -> Result<Vec<String>, JobError> {
    let mut stmt =
        conn.prepare_cached("SELECT id FROM jobs WHERE delivery_state = 'pending' ORDER BY rowid")?;
    let ids = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ids)
}

/// What a delivery task needs; loaded once per delivery task.
pub(super) struct Delivery {
    pub sealed: Option<Vec<u8>>,
    pub status: String,
    pub document_count: i64,
    pub processed_count: i64,
    pub failed_count: i64,
    pub histogram_json: String,
    pub completed_at: Option<i64>,
    pub max_attempts: i64,
    pub backoff_seconds: f64,
    pub attempts: i64,
    pub last_attempt_at: Option<i64>,
}

/// The pending delivery of a job, or `None` if there is none (any more).
pub(super) fn load_delivery(conn: &Connection, job_id: &str) -> Result<Option<Delivery>, JobError> {
    let d = conn
        .query_row(
            "SELECT webhook_sealed, status, document_count, processed_count, failed_count,
                 label_histogram_json, completed_at, webhook_max_attempts, webhook_backoff,
                 delivery_attempts, delivery_last_attempt_at
             FROM jobs WHERE id = ?1 AND delivery_state = 'pending'",
            [job_id],
            |r| {
                Ok(Delivery {
                    sealed: r.get(0)?,
                    status: r.get(1)?,
                    document_count: r.get(2)?,
                    processed_count: r.get(3)?,
                    failed_count: r.get(4)?,
                    histogram_json: r.get(5)?,
                    completed_at: r.get(6)?,
                    max_attempts: r.get::<_, Option<i64>>(7)?.unwrap_or(1),
                    backoff_seconds: r.get::<_, Option<f64>>(8)?.unwrap_or(0.0),
                    attempts: r.get(9)?,
                    last_attempt_at: r.get(10)?,
                })
            },
        )
        .optional()?;
    Ok(d)
}

/// Outcome of one delivery attempt (or of giving up without one).
pub(super) struct Attempt {
    pub state: &'static str,
    pub attempts: i64,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub at: i64,
}

/// Persists a delivery attempt; a final state also deletes the sealed
/// webhook config, which is not needed any more.
pub(super) fn record_attempt(conn: &Connection, job_id: &str, a: &Attempt) -> Result<(), JobError> {
    let delivered_at = (a.state == "delivered").then_some(a.at);
    conn.execute(
        "UPDATE jobs SET delivery_state = ?2, delivery_attempts = ?3, delivery_status_code = ?4,
             delivery_error = ?5, delivery_last_attempt_at = ?6,
             delivery_delivered_at = COALESCE(?7, delivery_delivered_at),
             webhook_sealed = CASE WHEN ?2 = 'pending' THEN webhook_sealed ELSE NULL END
         WHERE id = ?1 AND delivery_state = 'pending'",
        params![
            job_id,
            a.state,
            a.attempts,
            a.status_code,
            a.error,
            a.at,
            delivered_at
        ],
    )?;
    Ok(())
}
