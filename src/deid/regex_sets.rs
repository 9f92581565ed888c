//! Match caches for the recognizer table that are given back when inference goes quiet.
//!
//! A `Regex` keeps a match cache (lazy DFA, NFA simulation state) for each thread that used it
//! at once and never frees them: with a hundred recognizers run on the blocking pool's threads,
//! they held about 29 MB after a burst of long notes (heaptrack), which a heap trim cannot give
//! back. A clone of a `Regex` shares the compiled program and starts with no cache, so a search
//! takes a whole set of clones from this pool (one thread at a time per set, one cache per
//! regex), puts it back when done, and every set is dropped when the heap trimmer says the
//! process is quiet (`inference::heap`). The first note after a quiet spell builds its caches
//! again; under steady load the sets are kept.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use regex::Regex;

/// Most idle sets kept; a search beyond them builds a set and drops it afterwards.
const KEPT: usize = 16;

/// Sets of regex clones, one regex per recognizer, in the table's order.
#[derive(Debug)]
pub struct RegexSets {
    /// The compiled regexes the sets are cloned from (their own caches stay unused).
    source: Vec<Regex>,
    idle: Mutex<Vec<Vec<Regex>>>,
    /// Bumped when the sets are dropped: a set taken before is dropped when it comes back.
    epoch: AtomicU64,
}

/// A set taken from the pool; returned to it on drop.
pub struct Taken<'a> {
    pool: &'a RegexSets,
    set: Vec<Regex>,
    epoch: u64,
}

impl std::ops::Deref for Taken<'_> {
    type Target = [Regex];
    fn deref(&self) -> &[Regex] {
        &self.set
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        if self.pool.epoch.load(Ordering::Acquire) != self.epoch {
            return;
        }
        let mut idle = self.pool.lock();
        if idle.len() < KEPT {
            idle.push(std::mem::take(&mut self.set));
        }
    }
}

impl RegexSets {
    /// A pool over `source`, registered to be emptied whenever the process goes quiet.
    pub fn new(source: Vec<Regex>) -> Arc<Self> {
        let pool = Arc::new(Self {
            source,
            idle: Mutex::new(Vec::new()),
            epoch: AtomicU64::new(0),
        });
        let weak = Arc::downgrade(&pool);
        crate::inference::on_quiet(Box::new(move || match weak.upgrade() {
            Some(pool) => {
                pool.release();
                true
            }
            None => false,
        }));
        pool
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<Regex>>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A set for one search: an idle one, or fresh clones.
    pub fn take(&self) -> Taken<'_> {
        let epoch = self.epoch.load(Ordering::Acquire);
        let set = self.lock().pop().unwrap_or_else(|| self.source.clone());
        Taken {
            pool: self,
            set,
            epoch,
        }
    }

    /// Drops every idle set and any set in use once it comes back.
    pub fn release(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        let sets = std::mem::take(&mut *self.lock());
        drop(sets);
    }

    /// Idle sets kept (for tests).
    #[cfg(test)]
    fn idle(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_are_reused_bounded_and_released() {
        let pool = RegexSets::new(vec![Regex::new(r"\d+").unwrap()]);
        {
            let a = pool.take();
            let b = pool.take();
            assert_eq!(a[0].find("ab 12").map(|m| m.as_str()), Some("12"));
            assert_eq!(b.len(), 1);
        }
        assert_eq!(pool.idle(), 2);
        let held = pool.take();
        pool.release();
        assert_eq!(pool.idle(), 0);
        drop(held);
        assert_eq!(pool.idle(), 0, "a set taken before a release is dropped");
        let sets: Vec<_> = (0..KEPT + 3).map(|_| pool.take()).collect();
        drop(sets);
        assert_eq!(pool.idle(), KEPT);
    }
}
