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

/// Something holding memory only to go faster (a cache) that can drop it when the process is
/// quiet; `false` once its owner is gone, and the hook is forgotten.
pub type QuietHook = Box<dyn Fn() -> bool + Send + Sync>;

static HOOKS: Mutex<Vec<QuietHook>> = Mutex::new(Vec::new());

/// Registers a cache to be emptied before each trim.
pub fn on_quiet(hook: QuietHook) {
    HOOKS.lock().unwrap_or_else(|p| p.into_inner()).push(hook);
}

/// Returns free heap pages to the operating system now (the process is quiet, or a model was
/// just loaded or unloaded), after the registered caches have dropped what they hold.
pub(crate) fn release() {
    HOOKS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|hook| hook());
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own free lists under its arena locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Malloc arenas a process gets when `MALLOC_ARENA_MAX` does not say otherwise.
const ARENAS: i32 = 2;

/// Caps glibc's malloc arenas (call first thing in `main`, before any thread starts).
///
/// glibc gives threads up to 8 arenas per core, and a trim cannot give back a page that one
/// live chunk pins, so every arena the HTTP, blocking-pool and inference threads touched kept
/// its own fragments after a burst. Measured with `cargo bench --profile dev --bench memory`
/// (2 cores, 48 requests at concurrency 8, recognizer caches released when quiet): RSS 5 s after
/// the burst was idle +20% with 16 arenas (glibc's default here) and −1 to +6% with 2, the
/// burst taking no longer.
/// An operator's own `MALLOC_ARENA_MAX` wins.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a glibc tunable; called before other threads exist.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, ARENAS);
        }
    }
}
