//! Worker pool and expiry sweeper.
//!
//! Each worker owns one job at a time (oldest first) and keeps up to
//! `doc_concurrency` of its documents in flight. Claims live only in memory,
//! so documents a crash interrupts stay pending and are redone on restart;
//! workers find queued/running jobs in the DB, which also resumes old jobs.
//!
//! A full disk is waited out, not retried hot: a document whose result cannot
//! be written keeps its result in memory and retries the write with back-off
//! (the model never re-runs for it), the job claims nothing new meanwhile and
//! says `"waiting_for": "storage"`, and work resumes when a write succeeds.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::task::{JoinHandle, JoinSet};

use super::{
    DocError, Inner, ProcessedDoc, STORAGE_RETRY_MAX, STORAGE_RETRY_MIN, lock, now_ms, store,
    webhook,
};

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
    let mut storage_backoff = STORAGE_RETRY_MIN;
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
                if clean {
                    storage_backoff = STORAGE_RETRY_MIN;
                } else if inner.storage.is_waiting(&job_id) {
                    // Waiting for space: back off, so a full disk costs no CPU.
                    tokio::select! {
                        _ = tokio::time::sleep(storage_backoff) => {}
                        _ = shutdown.wait_for(|stop| *stop) => return,
                    }
                    storage_backoff = (storage_backoff * 2).min(STORAGE_RETRY_MAX);
                } else {
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
        // While the job waits for storage, nothing new is claimed: the documents in flight
        // retry their writes, and the model runs for no document it cannot record.
        if !exhausted
            && !inner.stopping()
            && !inner.storage.is_waiting(job_id)
            && tasks.len() < limit
        {
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
                    inner.storage.resumed(job_id);
                    exhausted = docs.len() < want;
                    for (idx, stored) in docs {
                        cursor = idx + 1;
                        let text = unseal(inner, job_id, idx, stored);
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
                    match e.storage_problem() {
                        Some(problem) => inner.storage.wait(job_id, problem),
                        None => {
                            tracing::error!(job_id = %job_id, error = %e, "cannot claim documents")
                        }
                    }
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
            Ok(true) => {
                truncate_wal(inner).await;
                webhook::spawn_delivery(inner, job_id.to_owned())
            }
            Ok(false) => {}
            Err(e) => {
                tracing::error!(job_id = %job_id, error = %e, "cannot finish job");
                clean = false;
            }
        }
    }
    clean
}

/// A claimed document's text, opened. A blob that does not open (another key) fails the
/// document rather than the job.
fn unseal(
    inner: &Inner,
    job_id: &str,
    idx: i64,
    stored: Option<store::StoredText>,
) -> Result<String, DocError> {
    match stored {
        Some(store::StoredText::Plain(text)) => Ok(text),
        Some(store::StoredText::Sealed(blob)) => {
            inner.sealer.unseal_text(job_id, idx, &blob).ok_or_else(|| {
                tracing::error!(job_id = %job_id, index = idx, "sealed document text does not open");
                DocError {
                    code: "sealed_text_unreadable".into(),
                    message: "the stored text does not open under the current seal key".into(),
                }
            })
        }
        None => Err(DocError {
            code: "missing_text".into(),
            message: "document text is missing".into(),
        }),
    }
}

/// Checkpoints and truncates the WAL after a job finished (its purged texts' page images
/// go with it).
async fn truncate_wal(inner: &Arc<Inner>) {
    let _ = inner
        .blocking(|i| {
            i.truncate_wal();
            Ok(())
        })
        .await;
}

/// Processes and records one document. Returns false on a database error
/// (the document stays pending). While storage is full the write is retried
/// with back-off, keeping the result: the document is never processed twice.
async fn process_doc(
    inner: Arc<Inner>,
    claim: ClaimGuard,
    options: Arc<Value>,
    text: Result<String, DocError>,
) -> bool {
    let (job_id, idx) = claim.key.clone();
    let outcome: Result<ProcessedDoc, DocError> = match text {
        Err(e) => Err(e),
        Ok(text) => {
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
    let outcome = Arc::new(outcome);
    let mut shutdown = inner.shutdown_tx.subscribe();
    let mut backoff = STORAGE_RETRY_MIN;
    let committed = loop {
        let ttl = inner.ttl_ms();
        let (id, out) = (job_id.clone(), Arc::clone(&outcome));
        let committed = inner
            .blocking(move |i| i.db(|c| store::commit_doc(c, &id, idx, &out, now_ms(), ttl)))
            .await;
        match committed {
            Err(e) if !inner.stopping() => match e.storage_problem() {
                Some(problem) => {
                    inner.storage.wait(&job_id, problem);
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        // Left pending: redone after restart.
                        _ = shutdown.wait_for(|stop| *stop) => return true,
                    }
                    backoff = (backoff * 2).min(STORAGE_RETRY_MAX);
                }
                None => break Err(e),
            },
            other => break other,
        }
    };
    drop(claim);
    match committed {
        Ok(deliver) => {
            inner.storage.resumed(&job_id);
            if deliver {
                truncate_wal(&inner).await;
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
            Ok(n) => {
                tracing::info!(jobs = n, "expired jobs deleted");
                truncate_wal(&inner).await;
            }
            Err(e) => tracing::error!(error = %e, "expiry sweep failed"),
        }
    }
}
