//! Worker pool and expiry sweeper.
//!
//! Each worker owns one job at a time (oldest first) and keeps up to
//! `doc_concurrency` of its documents in flight. Claims live only in memory,
//! so documents a crash interrupts stay pending and are redone on restart;
//! workers find queued/running jobs in the DB, which also resumes old jobs.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::task::{JoinHandle, JoinSet};

use super::{DocError, Inner, ProcessedDoc, lock, now_ms, store, webhook};

/// Fallback poll for work in case a wake-up was missed.
const POLL: Duration = Duration::from_secs(5);
/// Pause after a database error before touching the job again.
const ERROR_PAUSE: Duration = Duration::from_secs(1);

pub(super) fn start(inner: &Arc<Inner>) {
    for _ in 0..inner.settings.workers {
        inner.spawn(worker_loop(Arc::clone(inner)));
    }
    inner.spawn(sweeper(Arc::clone(inner)));
}

/// Removes a job from the active set when its worker is done or aborted.
struct ActiveGuard {
    inner: Arc<Inner>,
    job_id: String,
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        lock(&self.inner.active_jobs).remove(&self.job_id);
    }
}

/// Removes a document claim when its task ends, even if aborted.
struct ClaimGuard {
    inner: Arc<Inner>,
    key: (String, i64),
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        lock(&self.inner.in_flight).remove(&self.key);
    }
}

/// Aborts the processor task when the document task is aborted (shutdown).
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn worker_loop(inner: Arc<Inner>) {
    let mut shutdown = inner.shutdown_tx.subscribe();
    loop {
        if inner.stopping() {
            return;
        }
        // Picking and registering the job happen under the DB lock, so two
        // workers never take the same job.
        let picked = inner
            .blocking(|i| {
                i.db(|conn| {
                    let mut active = lock(&i.active_jobs);
                    let job = store::next_runnable_job(conn, |id| !active.contains(id))?;
                    if let Some((id, _)) = &job {
                        active.insert(id.clone());
                    }
                    Ok(job)
                })
            })
            .await;
        match picked {
            Ok(Some((job_id, options_json))) => {
                let guard = ActiveGuard {
                    inner: Arc::clone(&inner),
                    job_id: job_id.clone(),
                };
                // Another job may be waiting for another idle worker.
                inner.wake.notify_one();
                let options = serde_json::from_str(&options_json).unwrap_or_else(|e| {
                    tracing::error!(job_id = %job_id, error = %e, "stored options unreadable");
                    Value::Null
                });
                let clean = run_job(&inner, &job_id, Arc::new(options)).await;
                drop(guard);
                if !clean {
                    tokio::time::sleep(ERROR_PAUSE).await;
                }
            }
            Ok(None) => {
                tokio::select! {
                    _ = inner.wake.notified() => {}
                    _ = tokio::time::sleep(POLL) => {}
                    _ = shutdown.wait_for(|stop| *stop) => return,
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot pick a job");
                tokio::time::sleep(ERROR_PAUSE).await;
            }
        }
    }
}

/// Works off one job. Returns false if a database error interrupted it (the
/// job stays active in the DB and is picked up again).
async fn run_job(inner: &Arc<Inner>, job_id: &str, options: Arc<Value>) -> bool {
    let _running = crate::metrics::Metrics::global().jobs_running.inc_guard();
    let limit = inner.settings.doc_concurrency;
    let mut cursor = 0i64;
    let mut exhausted = false;
    let mut clean = true;
    let mut tasks: JoinSet<bool> = JoinSet::new();
    loop {
        if !exhausted && !inner.stopping() && tasks.len() < limit {
            let want = limit - tasks.len();
            let id = job_id.to_owned();
            let claimed = inner
                .blocking(move |i| {
                    i.db(|conn| {
                        // Checked under the DB lock: `shutdown` takes it after
                        // setting the flag, so it sees every claim made.
                        if i.stopping() {
                            return Ok(Vec::new());
                        }
                        let docs = store::claim_docs(conn, &id, cursor, want, now_ms())?;
                        let mut in_flight = lock(&i.in_flight);
                        for (idx, _) in &docs {
                            in_flight.insert((id.clone(), *idx));
                        }
                        Ok(docs)
                    })
                })
                .await;
            match claimed {
                Ok(docs) => {
                    exhausted = docs.len() < want;
                    for (idx, text) in docs {
                        cursor = idx + 1;
                        let claim = ClaimGuard {
                            inner: Arc::clone(inner),
                            key: (job_id.to_owned(), idx),
                        };
                        tasks.spawn(process_doc(
                            Arc::clone(inner),
                            claim,
                            Arc::clone(&options),
                            text,
                        ));
                    }
                }
                Err(e) => {
                    tracing::error!(job_id = %job_id, error = %e, "cannot claim documents");
                    exhausted = true;
                    clean = false;
                }
            }
        }
        match tasks.join_next().await {
            Some(Ok(ok)) => clean &= ok,
            Some(Err(_)) => clean = false,
            None => break,
        }
    }
    if clean && !inner.stopping() {
        // Completes jobs that finish without a document commit (no documents,
        // or only cancelled ones) and is a no-op otherwise.
        let id = job_id.to_owned();
        let ttl = inner.ttl_ms();
        match inner
            .blocking(move |i| i.db(|c| store::finish_job(c, &id, now_ms(), ttl)))
            .await
        {
            Ok(true) => webhook::spawn_delivery(inner, job_id.to_owned()),
            Ok(false) => {}
            Err(e) => {
                tracing::error!(job_id = %job_id, error = %e, "cannot finish job");
                clean = false;
            }
        }
    }
    clean
}

/// Processes and records one document. Returns false on a database error
/// (the document stays pending).
async fn process_doc(
    inner: Arc<Inner>,
    claim: ClaimGuard,
    options: Arc<Value>,
    text: Option<String>,
) -> bool {
    let (job_id, idx) = claim.key.clone();
    let outcome: Result<ProcessedDoc, DocError> = match text {
        None => Err(DocError {
            code: "missing_text".into(),
            message: "document text is missing".into(),
        }),
        Some(text) => {
            let fut = inner.processor.process(&options, text);
            // Own task, so a panicking processor fails this document only.
            let mut handle = AbortOnDrop(inner.runtime.spawn(fut));
            match (&mut handle.0).await {
                Ok(r) => r,
                Err(e) if e.is_panic() => {
                    tracing::error!(job_id = %job_id, index = idx, "processor panicked");
                    Err(DocError {
                        code: "internal_error".into(),
                        message: "processing failed unexpectedly".into(),
                    })
                }
                // Cancelled only when the runtime shuts down: leave it pending.
                Err(_) => return true,
            }
        }
    };
    if let Err(e) = &outcome {
        tracing::debug!(job_id = %job_id, index = idx, code = %e.code, "document failed");
    }
    let ttl = inner.ttl_ms();
    let id = job_id.clone();
    let committed = inner
        .blocking(move |i| i.db(|c| store::commit_doc(c, &id, idx, &outcome, now_ms(), ttl)))
        .await;
    drop(claim);
    match committed {
        Ok(deliver) => {
            if deliver {
                webhook::spawn_delivery(&inner, job_id);
            }
            true
        }
        Err(e) => {
            tracing::error!(job_id = %job_id, index = idx, error = %e, "cannot record document");
            false
        }
    }
}

/// Deletes expired jobs at start and every min(ttl, 60 s) (at least 1 s).
async fn sweeper(inner: Arc<Inner>) {
    let period = inner
        .settings
        .ttl
        .clamp(Duration::from_secs(1), Duration::from_secs(60));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match inner
            .blocking(|i| i.db(|c| store::sweep(c, now_ms())))
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(jobs = n, "expired jobs deleted"),
            Err(e) => tracing::error!(error = %e, "expiry sweep failed"),
        }
    }
}
