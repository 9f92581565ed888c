//! The gateway's audit log: one JSON line per request, chained by SHA-256 so that removing,
//! reordering or editing a line breaks every hash after it. Records hold ids, counts, reason
//! codes and hashes, never text.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The previous hash of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

pub struct AuditLog {
    path: PathBuf,
    last: Mutex<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("audit log io: {0}")]
    Io(#[from] std::io::Error),
    #[error("audit log line {0} is not a record")]
    Malformed(usize),
    #[error("audit log line {0} breaks the hash chain")]
    Broken(usize),
}

/// The hash of a record: SHA-256 over the previous hash and the record's compact JSON (object
/// keys sorted), without its own `record_hash`.
fn record_hash(previous: &str, record: &Map<String, Value>) -> String {
    let mut h = Sha256::new();
    h.update(previous.as_bytes());
    h.update(Value::Object(record.clone()).to_string().as_bytes());
    crate::digest::hex(&h.finalize())
}

impl AuditLog {
    /// Opens (or starts) the log, checking the chain it continues.
    pub fn open(path: &Path) -> Result<Self, AuditError> {
        let last = if path.exists() {
            verify(path)?.1
        } else {
            GENESIS.to_string()
        };
        Ok(Self {
            path: path.to_path_buf(),
            last: Mutex::new(last),
        })
    }

    /// Appends a record (its `previous_hash` and `record_hash` are set here) and returns
    /// `(previous_hash, record_hash)`.
    pub fn append(&self, mut record: Map<String, Value>) -> Result<(String, String), AuditError> {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        record.remove("record_hash");
        record.insert("previous_hash".into(), Value::from(last.clone()));
        let hash = record_hash(&last, &record);
        record.insert("record_hash".into(), Value::from(hash.clone()));
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let mut line = Value::Object(record).to_string();
        line.push('\n');
        f.write_all(line.as_bytes())?;
        f.sync_data()?;
        let previous = std::mem::replace(&mut *last, hash.clone());
        Ok((previous, hash))
    }
}

/// Checks every link of a log; returns the number of records and the last hash.
pub fn verify(path: &Path) -> Result<(usize, String), AuditError> {
    let f = std::fs::File::open(path)?;
    let mut last = GENESIS.to_string();
    let mut n = 0;
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let Ok(Value::Object(mut record)) = serde_json::from_str::<Value>(&line) else {
            return Err(AuditError::Malformed(i + 1));
        };
        let Some(Value::String(stored)) = record.remove("record_hash") else {
            return Err(AuditError::Malformed(i + 1));
        };
        if record.get("previous_hash").and_then(Value::as_str) != Some(last.as_str())
            || record_hash(&last, &record) != stored
        {
            return Err(AuditError::Broken(i + 1));
        }
        last = stored;
        n += 1;
    }
    Ok((n, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(status: &str) -> Map<String, Value> {
        json!({ "request_id": "r", "status": status })
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn records_chain_and_tampering_is_found() {
        let dir = std::env::temp_dir().join(format!("phiflow-audit-{}", uuid::Uuid::new_v4()));
        let path = dir.join("audit.jsonl");
        let log = AuditLog::open(&path).unwrap();
        let (p1, h1) = log.append(rec("forwarded")).unwrap();
        let (p2, h2) = log.append(rec("blocked")).unwrap();
        assert_eq!((p1.as_str(), p2.as_str()), (GENESIS, h1.as_str()));
        assert_eq!(verify(&path).unwrap(), (2, h2.clone()));
        // Reopening continues the chain.
        let (p3, _) = AuditLog::open(&path)
            .unwrap()
            .append(rec("forwarded"))
            .unwrap();
        assert_eq!(p3, h2);
        // Editing a record breaks it.
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replacen("blocked", "forwarded", 1);
        std::fs::write(&path, text).unwrap();
        assert!(matches!(verify(&path), Err(AuditError::Broken(2))));
        assert!(AuditLog::open(&path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
