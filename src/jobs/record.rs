//! JSON shapes returned to clients: the job record and the result lines.
//! Nothing here ever sees document text, the webhook URL or its secret.

use serde_json::{Map, Value, json};

use super::JobError;

/// A `jobs` row as needed for the record.
pub(super) struct JobRow {
    pub id: String,
    pub status: String,
    pub document_count: i64,
    pub processed_count: i64,
    pub failed_count: i64,
    pub histogram_json: String,
    pub error_json: Option<String>,
    pub webhook_url_hash: Option<String>,
    pub webhook_max_attempts: Option<i64>,
    pub webhook_backoff: Option<f64>,
    pub delivery_state: Option<String>,
    pub delivery_attempts: i64,
    pub delivery_status_code: Option<i64>,
    pub delivery_error: Option<String>,
    pub delivery_last_attempt_at: Option<i64>,
    pub delivery_delivered_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
    pub expires_at: Option<i64>,
}

/// Per-document part of the record.
pub(super) struct DocSummary {
    pub index: i64,
    pub id: String,
    pub status: String,
    pub length: i64,
    pub text_hash: String,
}

/// RFC 3339 UTC with whole seconds and `Z`, from Unix milliseconds.
pub(super) fn rfc3339(ms: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn time(ms: Option<i64>) -> Value {
    ms.map_or(Value::Null, |ms| Value::String(rfc3339(ms)))
}

fn parse(what: &str, s: &str) -> Result<Value, JobError> {
    serde_json::from_str(s).map_err(|e| JobError::Corrupt(format!("{what}: {e}")))
}

/// Finished documents over all documents, in percent with two decimals.
fn progress(job: &JobRow) -> f64 {
    if job.document_count <= 0 {
        return if job.status == "succeeded" {
            100.0
        } else {
            0.0
        };
    }
    let finished = (job.processed_count + job.failed_count) as f64;
    (finished * 10_000.0 / job.document_count as f64).round() / 100.0
}

/// Label histogram as a JSON object with sorted keys.
pub(super) fn histogram(json: &str) -> Result<Value, JobError> {
    let map: std::collections::BTreeMap<String, i64> = serde_json::from_str(json)
        .map_err(|e| JobError::Corrupt(format!("label histogram: {e}")))?;
    Ok(Value::Object(
        map.into_iter()
            .map(|(k, v)| (k, Value::from(v)))
            .collect::<Map<_, _>>(),
    ))
}

pub(super) fn job_record(job: &JobRow, docs: &[DocSummary]) -> Result<Value, JobError> {
    let documents: Vec<Value> = docs
        .iter()
        .map(|d| {
            json!({
                "index": d.index,
                "id": d.id,
                "status": d.status,
                "length": d.length,
                "text_hash": d.text_hash,
            })
        })
        .collect();
    let error = match &job.error_json {
        Some(e) => parse("job error", e)?,
        None => Value::Null,
    };
    let webhook = match &job.webhook_url_hash {
        Some(hash) => json!({
            "configured": true,
            "url_hash": hash,
            "max_attempts": job.webhook_max_attempts,
            "backoff_seconds": job.webhook_backoff,
        }),
        None => Value::Null,
    };
    let delivery = match &job.delivery_state {
        Some(state) => json!({
            "state": state,
            "attempts": job.delivery_attempts,
            "status_code": job.delivery_status_code,
            "error": job.delivery_error,
            "last_attempt_at": time(job.delivery_last_attempt_at),
            "delivered_at": time(job.delivery_delivered_at),
        }),
        None => Value::Null,
    };
    Ok(json!({
        "id": job.id,
        "status": job.status,
        "progress_percent": progress(job),
        "document_count": job.document_count,
        "processed_count": job.processed_count,
        "failed_count": job.failed_count,
        "label_histogram": histogram(&job.histogram_json)?,
        "documents": documents,
        "error": error,
        "webhook": webhook,
        "webhook_delivery": delivery,
        "created_at": rfc3339(job.created_at),
        "updated_at": rfc3339(job.updated_at),
        "started_at": time(job.started_at),
        "completed_at": time(job.completed_at),
        "expires_at": time(job.expires_at),
        "status_url": format!("/jobs/{}", job.id),
        "results_url": format!("/jobs/{}/results", job.id),
    }))
}

/// One NDJSON result line of a finished document.
pub(super) fn result_line(
    index: i64,
    id: &str,
    status: &str,
    text: Option<String>,
    entities: Option<String>,
    error: Option<String>,
) -> Result<Value, JobError> {
    if status == "done" {
        let entities = match entities {
            Some(e) => parse("entities", &e)?,
            None => Value::Array(Vec::new()),
        };
        Ok(json!({
            "index": index,
            "id": id,
            "status": "done",
            "deidentified_text": text.unwrap_or_default(),
            "entities": entities,
        }))
    } else {
        let error = match error {
            Some(e) => parse("document error", &e)?,
            None => Value::Null,
        };
        Ok(json!({ "index": index, "id": id, "status": status, "error": error }))
    }
}
