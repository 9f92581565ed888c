//! Webhook URL policy, Standard Webhooks signing and durable delivery.
//!
//! Deliveries are at-least-once: each attempt is persisted, a restart
//! continues with the remaining attempts, and `webhook-id` is stable per job
//! and event so receivers can deduplicate. Logs carry only the job id,
//! attempt number and status code.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

use super::record::{histogram, rfc3339};
use super::store::{self, Attempt, Delivery};
use super::{Inner, JobError, lock, now_ms};

/// Longest single sleep between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// Lower-cased host without a trailing dot or IPv6 brackets.
pub(super) fn normalize_host(host: &str) -> String {
    let h = host.trim().trim_end_matches('.').to_ascii_lowercase();
    h.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .map(str::to_owned)
        .unwrap_or(h)
}

fn host_allowed(host: &str, allowed: &[String]) -> bool {
    allowed
        .iter()
        .any(|pattern| match pattern.strip_prefix("*.") {
            Some(suffix) => host
                .strip_suffix(suffix)
                .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
            None => host == pattern,
        })
}

/// Validates a webhook URL; errors never echo the URL (it may hold tokens).
pub(super) fn check_url(url: &str, allowed: Option<&[String]>) -> Result<reqwest::Url, String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|_| "webhook url is not a valid URL".to_owned())?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("webhook url must use http or https".into());
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("webhook url must not contain credentials".into());
    }
    let host = match parsed.host_str() {
        Some(h) if !h.is_empty() => normalize_host(h),
        _ => return Err("webhook url has no host".into()),
    };
    if let Some(allowed) = allowed
        && !host_allowed(&host, allowed)
    {
        return Err("webhook host is not allowed".into());
    }
    Ok(parsed)
}

/// Standard Webhooks signature header value:
/// `v1,<base64 HMAC-SHA256(key, "{msg_id}.{timestamp}.{body}")>`, where key
/// is the base64-decoded part after `whsec_` (or the raw secret bytes).
pub fn sign(secret: &str, msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|b64| STANDARD.decode(b64).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec());
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = match Hmac::<Sha256>::new_from_slice(&key) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC takes keys of any length"),
    };
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// Spawns deliveries left pending by a previous process.
pub(super) fn start_redelivery(inner: &Arc<Inner>) {
    let task_inner = Arc::clone(inner);
    inner.spawn(async move {
        match task_inner
            .blocking(|i| i.db(|c| store::pending_deliveries(c)))
            .await
        {
            Ok(ids) => {
                for id in ids {
                    spawn_delivery(&task_inner, id);
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot list pending webhook deliveries"),
        }
    });
}

/// Starts the delivery task of a job unless one runs already or we stop
/// (the pending state in the DB makes the next open deliver it).
pub(super) fn spawn_delivery(inner: &Arc<Inner>, job_id: String) {
    if inner.stopping() || !lock(&inner.delivering).insert(job_id.clone()) {
        return;
    }
    let task_inner = Arc::clone(inner);
    inner.spawn(async move {
        let _guard = DeliveringGuard {
            inner: Arc::clone(&task_inner),
            job_id: job_id.clone(),
        };
        if let Err(e) = deliver(&task_inner, &job_id).await {
            tracing::error!(job_id = %job_id, error = %e, "webhook delivery stopped");
        }
    });
}

struct DeliveringGuard {
    inner: Arc<Inner>,
    job_id: String,
}

impl Drop for DeliveringGuard {
    fn drop(&mut self) {
        lock(&self.inner.delivering).remove(&self.job_id);
    }
}

/// Delay before the attempt after `attempts` failed ones.
fn backoff(backoff_seconds: f64, attempts: i64) -> Duration {
    let exp = i32::try_from(attempts.saturating_sub(1).clamp(0, 62)).unwrap_or(62);
    let secs = backoff_seconds * 2f64.powi(exp);
    if !secs.is_finite() || secs >= MAX_BACKOFF.as_secs_f64() {
        MAX_BACKOFF
    } else {
        Duration::from_secs_f64(secs.max(0.0))
    }
}

fn event_type(status: &str) -> &'static str {
    match status {
        "succeeded" => "job.succeeded",
        "failed" => "job.failed",
        _ => "job.cancelled",
    }
}

/// The event body: counts and histogram only, no document data.
fn body(job_id: &str, d: &Delivery) -> Result<Vec<u8>, JobError> {
    let completed_at = rfc3339(d.completed_at.unwrap_or_else(now_ms));
    let body = json!({
        "type": event_type(&d.status),
        "timestamp": completed_at,
        "data": {
            "job_id": job_id,
            "status": d.status,
            "document_count": d.document_count,
            "processed_count": d.processed_count,
            "failed_count": d.failed_count,
            "label_histogram": histogram(&d.histogram_json)?,
            "completed_at": completed_at,
        },
    });
    serde_json::to_vec(&body).map_err(|e| JobError::Corrupt(format!("webhook body: {e}")))
}

async fn persist(inner: &Arc<Inner>, job_id: &str, attempt: Attempt) -> Result<(), JobError> {
    let job_id = job_id.to_owned();
    inner
        .blocking(move |i| i.db(|c| store::record_attempt(c, &job_id, &attempt)))
        .await
}

/// Gives up without a further attempt (config unreadable or host disallowed).
async fn give_up(
    inner: &Arc<Inner>,
    job_id: &str,
    d: &Delivery,
    reason: &str,
) -> Result<(), JobError> {
    tracing::warn!(job_id = %job_id, reason, "webhook delivery abandoned");
    let attempt = Attempt {
        state: "failed",
        attempts: d.attempts,
        status_code: None,
        error: Some(reason.to_owned()),
        at: d.last_attempt_at.unwrap_or_else(now_ms),
    };
    persist(inner, job_id, attempt).await
}

async fn deliver(inner: &Arc<Inner>, job_id: &str) -> Result<(), JobError> {
    let id = job_id.to_owned();
    let Some(d) = inner
        .blocking(move |i| i.db(|c| store::load_delivery(c, &id)))
        .await?
    else {
        return Ok(());
    };
    let Some(sealed) = d.sealed.as_deref() else {
        return give_up(inner, job_id, &d, "webhook config missing").await;
    };
    let config = match inner.sealer.unseal_webhook(job_id, sealed) {
        Ok(c) => c,
        Err(_) => return give_up(inner, job_id, &d, "webhook config cannot be unsealed").await,
    };
    // Re-checked: the allow-list may have changed since the job was submitted.
    let url = match check_url(&config.url, inner.settings.allowed_hosts.as_deref()) {
        Ok(url) => url,
        Err(reason) => return give_up(inner, job_id, &d, &reason).await,
    };
    let body = body(job_id, &d)?;
    let msg_id = format!("msg_{job_id}_{}", event_type(&d.status).replace('.', "_"));
    let mut shutdown = inner.shutdown_tx.subscribe();
    let mut attempts = d.attempts;
    let mut last_attempt_at = d.last_attempt_at;
    while attempts < d.max_attempts {
        if let Some(last) = last_attempt_at
            && attempts > 0
        {
            let due = last.saturating_add(
                i64::try_from(backoff(d.backoff_seconds, attempts).as_millis()).unwrap_or(i64::MAX),
            );
            let wait = Duration::from_millis(u64::try_from(due - now_ms()).unwrap_or(0));
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = shutdown.wait_for(|stop| *stop) => return Ok(()),
            }
        }
        if inner.stopping() {
            return Ok(());
        }
        attempts += 1;
        let timestamp = chrono::Utc::now().timestamp();
        let result = inner
            .http
            .post(url.clone())
            .header("content-type", "application/json")
            .header("webhook-id", &msg_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header(
                "webhook-signature",
                sign(&config.secret, &msg_id, timestamp, &body),
            )
            .timeout(inner.settings.webhook_timeout)
            .body(body.clone())
            .send()
            .await;
        let (status_code, error) = match result {
            Ok(resp) if resp.status().is_success() => {
                (Some(i64::from(resp.status().as_u16())), None)
            }
            Ok(resp) => {
                let code = resp.status().as_u16();
                (Some(i64::from(code)), Some(format!("http status {code}")))
            }
            Err(e) if e.is_timeout() => (None, Some("timeout".to_owned())),
            Err(e) if e.is_connect() => (None, Some("connection failed".to_owned())),
            Err(_) => (None, Some("request failed".to_owned())),
        };
        let delivered = error.is_none();
        let state = if delivered {
            "delivered"
        } else if attempts >= d.max_attempts {
            "failed"
        } else {
            "pending"
        };
        tracing::info!(job_id = %job_id, attempt = attempts, status_code, state, "webhook attempt");
        crate::metrics::Metrics::global()
            .webhook_deliveries
            .inc(&[if state == "pending" { "retry" } else { state }]);
        let at = now_ms();
        last_attempt_at = Some(at);
        persist(
            inner,
            job_id,
            Attempt {
                state,
                attempts,
                status_code,
                error,
                at,
            },
        )
        .await?;
        if state != "pending" {
            return Ok(());
        }
    }
    // Attempts were already used up (e.g. by a previous process).
    give_up(inner, job_id, &d, "attempts exhausted").await
}
