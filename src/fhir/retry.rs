//! When to try again, and how long to wait: `Retry-After` (delta seconds or HTTP-date),
//! exponential backoff for transient failures, and a name for a transport failure that never
//! includes the URL (reqwest's own messages do, and a file URL may carry a signed query).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Retries of one request (a kick-off, one poll, one file) on transient failures: connect
/// errors, timeouts, broken bodies, 5xx, 429.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    /// Wait before the second attempt; doubled each time after.
    pub initial_backoff: Duration,
    /// Cap on one backoff wait.
    pub max_backoff: Duration,
    /// Cap on one `Retry-After` wait the server asks for.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
    /// Backoff after failed attempt number `attempt` (1-based): initial × 2^(attempt-1), capped.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(20);
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }

    /// The wait before the next attempt: the server's `Retry-After` when it gave one (capped),
    /// else the backoff.
    pub fn wait(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        match retry_after {
            Some(d) => d.min(self.max_retry_after),
            None => self.backoff(attempt),
        }
    }
}

/// Parses a `Retry-After` value: delta seconds (`120`, also `1.5`) or an HTTP-date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`, a date in the past meaning now).
pub fn parse_retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(86_400.0)));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = at.with_timezone(&chrono::Utc) - now;
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// The `Retry-After` of a response, when present and valid.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, chrono::Utc::now())
}

/// Whether a status is worth another attempt.
pub fn is_transient_status(status: reqwest::StatusCode) -> bool {
    status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS
}

/// A short, URL-free name for a transport failure.
pub fn transport_kind(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_body() {
        "response body broken off"
    } else if e.is_decode() {
        "response body could not be decoded"
    } else if e.is_request() {
        "request could not be sent"
    } else {
        "transport error"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_and_http_dates() {
        let now = chrono::DateTime::parse_from_rfc3339("2015-10-21T07:27:00Z")
            .expect("date")
            .with_timezone(&chrono::Utc);
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO),
            "a past date means now"
        );
        assert_eq!(parse_retry_after("-5", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(5),
        };
        assert_eq!(p.backoff(1), Duration::from_millis(100));
        assert_eq!(p.backoff(3), Duration::from_millis(400));
        assert_eq!(p.backoff(9), Duration::from_secs(1));
        assert_eq!(p.backoff(u32::MAX), Duration::from_secs(1));
        assert_eq!(
            p.wait(1, Some(Duration::from_secs(60))),
            Duration::from_secs(5)
        );
    }
}
