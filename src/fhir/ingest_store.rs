//! Ingestion jobs in the job store's SQLite database (their own tables, created if missing):
//! the request without its private key, the state, the last progress and the summary. The
//! private key sits sealed in a table of its own while the job runs, so a restart can resume
//! it, and is deleted when the job ends.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use crate::jobs::JobError;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS fhir_ingestions (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    request_json TEXT NOT NULL,
    progress_json TEXT NOT NULL DEFAULT '{}',
    summary_json TEXT,
    error_json TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    completed_at INTEGER
);
CREATE TABLE IF NOT EXISTS fhir_ingestion_secrets (
    id TEXT PRIMARY KEY,
    sealed BLOB NOT NULL
);
"#;

/// One stored ingestion.
#[derive(Clone, Debug)]
pub struct Row {
    pub id: String,
    pub status: String,
    pub request: Value,
    pub progress: Value,
    pub summary: Option<Value>,
    pub error: Option<Value>,
    pub created_at: i64,
    pub updated_at: i64,
    pub completed_at: Option<i64>,
}

pub struct Store {
    conn: Mutex<Connection>,
}

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn json(s: Option<String>) -> Option<Value> {
    s.and_then(|s| serde_json::from_str(&s).ok())
}

impl Store {
    pub fn open(path: &Path) -> Result<Self, JobError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA secure_delete=ON;",
        )?;
        conn.execute_batch(SCHEMA)?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn insert(&self, id: &str, request: &Value, sealed_key: &[u8]) -> Result<(), JobError> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        let t = now();
        tx.execute(
            "INSERT INTO fhir_ingestions (id, status, request_json, created_at, updated_at)
             VALUES (?1, 'running', ?2, ?3, ?3)",
            params![id, request.to_string(), t],
        )?;
        tx.execute(
            "INSERT INTO fhir_ingestion_secrets (id, sealed) VALUES (?1, ?2)",
            params![id, sealed_key],
        )?;
        tx.commit()?;
        Ok(())
    }

    pub fn get(&self, id: &str) -> Result<Option<Row>, JobError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT id, status, request_json, progress_json, summary_json, error_json,
                        created_at, updated_at, completed_at
                 FROM fhir_ingestions WHERE id = ?1",
                params![id],
                |r| {
                    Ok(Row {
                        id: r.get(0)?,
                        status: r.get(1)?,
                        request: json(r.get(2)?).unwrap_or(Value::Null),
                        progress: json(r.get(3)?).unwrap_or(Value::Null),
                        summary: json(r.get(4)?),
                        error: json(r.get(5)?),
                        created_at: r.get(6)?,
                        updated_at: r.get(7)?,
                        completed_at: r.get(8)?,
                    })
                },
            )
            .optional()?)
    }

    /// Ids of ingestions still running (to resume at start-up).
    pub fn running(&self) -> Result<Vec<String>, JobError> {
        let c = self.conn();
        let mut st = c.prepare(
            "SELECT id FROM fhir_ingestions WHERE status = 'running' ORDER BY created_at",
        )?;
        let ids = st
            .query_map([], |r| r.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(ids)
    }

    pub fn sealed_key(&self, id: &str) -> Result<Option<Vec<u8>>, JobError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT sealed FROM fhir_ingestion_secrets WHERE id = ?1",
                params![id],
                |r| r.get(0),
            )
            .optional()?)
    }

    pub fn progress(&self, id: &str, progress: &Value) -> Result<(), JobError> {
        self.conn().execute(
            "UPDATE fhir_ingestions SET progress_json = ?2, updated_at = ?3
             WHERE id = ?1 AND status = 'running'",
            params![id, progress.to_string(), now()],
        )?;
        Ok(())
    }

    /// Ends a running ingestion (succeeded, failed or cancelled) and deletes its sealed key.
    /// False when it had already ended.
    pub fn finish(
        &self,
        id: &str,
        status: &str,
        progress: &Value,
        summary: Option<&Value>,
        error: Option<&Value>,
    ) -> Result<bool, JobError> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        let t = now();
        let n = tx.execute(
            "UPDATE fhir_ingestions SET status = ?2, progress_json = ?3, summary_json = ?4,
                    error_json = ?5, updated_at = ?6, completed_at = ?6
             WHERE id = ?1 AND status = 'running'",
            params![
                id,
                status,
                progress.to_string(),
                summary.map(Value::to_string),
                error.map(Value::to_string),
                t
            ],
        )?;
        tx.execute(
            "DELETE FROM fhir_ingestion_secrets WHERE id = ?1",
            params![id],
        )?;
        tx.commit()?;
        Ok(n == 1)
    }
}
