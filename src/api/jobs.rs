//! POST /jobs, GET /jobs/{job_id}, GET /jobs/{job_id}/results and DELETE /jobs/{job_id}:
//! durable de-identification jobs over the job store, and the processor that runs each
//! document through the same engine as /pii/deidentify.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::body::read_json_limited;
use super::detect::keep_alive_of;
use super::error::ApiError;
use super::schemas;
use super::state::AppState;
use super::validate::Violation;
use crate::deid::policy::Method;
use crate::deidentifier::{DeidError, DeidOptions, Deidentifier, Subject};
use crate::jobs::{
    BoxFut, DocError, JobError, Jobs, NewDocument, NewJob, ProcessedDoc, Processor, WebhookConfig,
};

/// De-identifies job documents with the request's options, through the core.
pub struct JobProcessor {
    pub deid: Arc<Deidentifier>,
}

fn doc_error(e: ApiError) -> DocError {
    let (code, message) = e.code_and_message();
    DocError {
        code: code.into(),
        message: message.into(),
    }
}

impl JobProcessor {
    async fn run(&self, options: Value, text: String) -> Result<ProcessedDoc, DocError> {
        let o: DeidOptions = serde_json::from_value(options.clone()).map_err(|_| DocError {
            code: "invalid_options".into(),
            message: "The stored job options do not parse".into(),
        })?;
        let deid = &self.deid;
        let fail = |e: DeidError| doc_error(e.into());
        let setup = deid.prepare(&o).map_err(fail)?;
        let model = deid
            .model(&setup, keep_alive_of(&options))
            .await
            .map_err(fail)?;
        let done = deid
            .run_patiently(&setup, &model, Arc::from(text), Subject::default())
            .await
            .map_err(fail)?;
        let labels = done
            .counts
            .iter()
            .flat_map(|(label, n)| std::iter::repeat_n(label.to_string(), *n))
            .collect();
        Ok(ProcessedDoc {
            text: done.text,
            entities: json!(done.entities),
            labels,
        })
    }
}

impl Processor for Arc<JobProcessor> {
    fn process(&self, options: &Value, text: String) -> BoxFut<Result<ProcessedDoc, DocError>> {
        let (this, options) = (self.clone(), options.clone());
        Box::pin(async move { this.run(options, text).await })
    }
}

fn jobs_of(state: &AppState) -> Result<Arc<Jobs>, ApiError> {
    if let Some(reason) = &state.jobs_unavailable {
        return Err(ApiError::StorageUnavailable {
            reason: reason.to_string(),
        });
    }
    state.jobs.clone().ok_or(ApiError::NotFound {
        code: "jobs_disabled",
        message: "This process runs without a job store",
    })
}

fn store_error(e: JobError) -> ApiError {
    use crate::jobs::StorageProblem;
    match e {
        JobError::Invalid(why) => {
            ApiError::validation_one(&[json!("body")], "value_error", why, None)
        }
        other => match other.storage_problem() {
            // A full disk is the operator's to fix, not a server fault: 507 with Retry-After.
            Some(StorageProblem::Full) => ApiError::InsufficientStorage,
            Some(problem) => ApiError::StorageUnavailable {
                reason: problem.describe().into(),
            },
            None => ApiError::Internal(other.to_string()),
        },
    }
}

/// Runs a blocking store call off the async runtime.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, JobError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(format!("job store task failed: {e}")))?
        .map_err(store_error)
}

const JOB_NOT_FOUND: ApiError = ApiError::NotFound {
    code: "job_not_found",
    message: "No such job (unknown, or expired)",
};

/// Checks what the schema cannot (document texts, the webhook's URL and secret) and moves the
/// documents out of the body: a job body may be large, so its texts are never copied.
fn check_job(
    raw: &mut Value,
    jobs: &Jobs,
    max_text_chars: usize,
) -> Result<(Vec<NewDocument>, Option<WebhookConfig>), ApiError> {
    let mut violations = Vec::new();
    let docs = match raw.get_mut("documents").map(Value::take) {
        Some(Value::Array(docs)) => docs,
        _ => Vec::new(),
    };
    if docs.is_empty() {
        violations.push(Violation::new(
            &[json!("body"), json!("documents")],
            "too_short",
            "List should have at least 1 item",
            Some(json!({ "min_length": 1 })),
        ));
    }
    let mut documents = Vec::with_capacity(docs.len());
    for (i, mut d) in docs.into_iter().enumerate() {
        let loc = [json!("body"), json!("documents"), json!(i), json!("text")];
        let text = match d.get_mut("text").map(Value::take) {
            Some(Value::String(t)) => t,
            _ => {
                violations.push(Violation::new(&loc, "missing", "Field required", None));
                continue;
            }
        };
        if text.is_empty() {
            violations.push(Violation::new(
                &loc,
                "string_too_short",
                "String should have at least 1 character",
                Some(json!({ "min_length": 1 })),
            ));
        } else if text.chars().count() > max_text_chars {
            violations.push(Violation::new(
                &loc,
                "string_too_long",
                format!("String should have at most {max_text_chars} characters"),
                Some(json!({ "max_length": max_text_chars })),
            ));
        }
        let id = d.get("id").and_then(Value::as_str).map(String::from);
        documents.push(NewDocument { id, text });
    }
    let webhook = match raw.get("webhook").filter(|w| !w.is_null()) {
        None => None,
        Some(w) => {
            let url = w["url"].as_str().unwrap_or_default().to_string();
            if let Err(why) = jobs.check_webhook_url(&url) {
                violations.push(Violation::new(
                    &[json!("body"), json!("webhook"), json!("url")],
                    "url_not_allowed",
                    why,
                    None,
                ));
            }
            let secret = w["secret"].as_str().unwrap_or_default().to_string();
            if secret.trim().is_empty() {
                violations.push(Violation::new(
                    &[json!("body"), json!("webhook"), json!("secret")],
                    "string_too_short",
                    "The webhook secret must not be blank",
                    None,
                ));
            }
            Some(WebhookConfig {
                url,
                secret,
                max_attempts: w["max_attempts"].as_u64().unwrap_or(3) as u32,
                backoff_seconds: w["backoff_seconds"].as_f64().unwrap_or(0.5),
            })
        }
    };
    if violations.is_empty() {
        Ok((documents, webhook))
    } else {
        Err(ApiError::Validation(violations))
    }
}

pub async fn create(State(state): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let jobs = jobs_of(&state)?;
    let raw = read_json_limited(
        req,
        &schemas::DEIDENTIFY_JOB,
        state.settings.max_stream_body_bytes,
        None,
    )
    .await?;
    let mut options = raw;
    let (documents, webhook) = check_job(&mut options, &jobs, state.settings.max_text_chars)?;
    if let Some(o) = options.as_object_mut() {
        o.remove("documents");
        o.remove("webhook");
    }
    let parsed: DeidOptions = serde_json::from_value(options.clone()).map_err(|_| {
        ApiError::validation_one(
            &[json!("body")],
            "value_error",
            "Value error, the request does not match its schema",
            None,
        )
    })?;
    // Resolve now: conflicts are the caller's 422, not a failed job later.
    let setup = state.deid.prepare(&parsed)?;
    // The same name check as the one-shot routes: a malformed name is a 422 on `model_name`.
    state.registry.files(&setup.model_name)?;
    // One date offset for the whole job, so a patient's documents stay consistent.
    if setup.resolved.plan.method == Method::ShiftDates
        && parsed.date_shift_days.is_none()
        && let Some(o) = options.as_object_mut()
    {
        o.insert(
            "date_shift_days".into(),
            json!(setup.resolved.plan.shift_days),
        );
    }
    let record = blocking(move || {
        jobs.submit(NewJob {
            options,
            documents,
            webhook,
        })
    })
    .await?;
    let location = record["status_url"].as_str().unwrap_or("/jobs").to_string();
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        Json(record),
    )
        .into_response())
}

pub async fn get(
    State(state): State<AppState>,
    Path(job_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let jobs = jobs_of(&state)?;
    blocking(move || jobs.get(&job_id))
        .await?
        .map(Json)
        .ok_or(JOB_NOT_FOUND)
}

pub async fn cancel(
    State(state): State<AppState>,
    Path(job_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let jobs = jobs_of(&state)?;
    blocking(move || jobs.cancel(&job_id))
        .await?
        .map(Json)
        .ok_or(JOB_NOT_FOUND)
}

/// The finished documents' output as NDJSON, in document order, read page by page.
pub async fn results(
    State(state): State<AppState>,
    Path(job_id): Path<String>,
) -> Result<Response, ApiError> {
    let jobs = jobs_of(&state)?;
    let mut pages = blocking(move || jobs.results(&job_id))
        .await?
        .ok_or(JOB_NOT_FOUND)?;
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    tokio::spawn(async move {
        loop {
            let page = tokio::task::spawn_blocking(move || {
                let p = pages.next_page();
                (pages, p)
            })
            .await;
            let Ok((back, page)) = page else { return };
            pages = back;
            let lines = match page {
                Ok(Some(lines)) => lines,
                Ok(None) => return,
                Err(e) => {
                    tracing::error!(error = %e, "reading job results failed");
                    let record = json!({ "type": "error", "error": {
                        "code": "internal_error", "message": "Reading the results failed" } });
                    let _ = tx.send(Bytes::from(format!("{record}\n"))).await;
                    return;
                }
            };
            let mut buf = Vec::new();
            for line in lines {
                if serde_json::to_writer(&mut buf, &line).is_ok() {
                    buf.push(b'\n');
                }
            }
            if tx.send(Bytes::from(buf)).await.is_err() {
                return;
            }
        }
    });
    Ok(super::stream::ndjson(rx))
}
