//! How many cores this process may use, and the gate in front of the request path's CPU work.
//! Data parallelism itself is rayon's (`par_iter`), which the tokenizer already builds in.

use std::sync::OnceLock;

use tokio::sync::Semaphore;

/// The cores this process may use (1 when unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `f` on tokio's blocking pool once one of [`cores`] slots is free.
///
/// Without the gate every concurrent request got its own blocking thread: 256 requests in flight
/// ran about 550 threads on 16 cores (measured on an H200 host), and the switching between them
/// and their contention for the recognizers' regex caches left the GPU 15-25% busy. Waiting for a
/// slot is asynchronous, so a waiting request holds no thread.
pub async fn on_cpu<T, F>(f: F) -> Result<T, tokio::task::JoinError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    static SLOTS: OnceLock<Semaphore> = OnceLock::new();
    let slots = SLOTS.get_or_init(|| Semaphore::new(cores()));
    // The semaphore is never closed, so acquiring cannot fail; run ungated if it ever did.
    let _slot = slots.acquire().await.ok();
    tokio::task::spawn_blocking(f).await
}
