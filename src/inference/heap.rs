//! Gives freed heap memory back to the operating system once inference goes quiet.
//!
//! The sessions' arenas are shrunk when a queue empties (`queue.rs`), which frees their regions
//! with `free`; glibc keeps freed chunks in its per-thread heaps, so without a trim the process
//! stays near its peak after a burst. A trim costs a few milliseconds, so it runs once, on its
//! own thread, after every queue has been idle for [`QUIET`], never while a batch runs.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

/// How long every queue must stay idle before the heap is trimmed.
const QUIET: Duration = Duration::from_millis(500);

struct Trimmer {
    /// Batches running in any queue.
    running: AtomicUsize,
    /// Bumped when a batch starts; a trim waits for it to stand still.
    epoch: AtomicU64,
    /// Set when a trim is wanted; the thread waits on it.
    wanted: Mutex<bool>,
    wake: Condvar,
}

static TRIMMER: OnceLock<&'static Trimmer> = OnceLock::new();

fn trimmer() -> &'static Trimmer {
    TRIMMER.get_or_init(|| {
        let t: &'static Trimmer = Box::leak(Box::new(Trimmer {
            running: AtomicUsize::new(0),
            epoch: AtomicU64::new(0),
            wanted: Mutex::new(false),
            wake: Condvar::new(),
        }));
        // Without the thread nothing is trimmed, which is only a memory cost.
        let _ = std::thread::Builder::new()
            .name("heap-trim".into())
            .spawn(move || t.run());
        t
    })
}

impl Trimmer {
    fn run(&self) {
        loop {
            {
                let mut wanted = self.wanted.lock().unwrap_or_else(|p| p.into_inner());
                while !*wanted {
                    wanted = self.wake.wait(wanted).unwrap_or_else(|p| p.into_inner());
                }
                *wanted = false;
            }
            // Wait for a quiet spell: no batch started and none running for `QUIET`.
            loop {
                let epoch = self.epoch.load(Ordering::Acquire);
                std::thread::sleep(QUIET);
                if self.running.load(Ordering::Acquire) == 0
                    && self.epoch.load(Ordering::Acquire) == epoch
                {
                    release();
                    break;
                }
            }
        }
    }

    fn want(&self) {
        *self.wanted.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.wake.notify_one();
    }
}

/// A batch is about to run.
pub(crate) fn batch_started() {
    let t = trimmer();
    t.epoch.fetch_add(1, Ordering::AcqRel);
    t.running.fetch_add(1, Ordering::AcqRel);
}

/// A batch has finished; once every queue has been quiet for a while the heap is trimmed.
pub(crate) fn batch_finished() {
    let t = trimmer();
    if t.running.fetch_sub(1, Ordering::AcqRel) == 1 {
        t.want();
    }
}

/// Returns free heap pages to the operating system now (a model was just unloaded).
pub(crate) fn release() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own free lists under its arena locks.
    unsafe {
        libc::malloc_trim(0);
    }
}
