//! Data parallelism on scoped threads for the cohort path, whose passes are short (tens of
//! milliseconds) and CPU-bound: a thread pool would add a dependency for no gain.

/// The cores this process may use (1 when unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `f` over `items`, in order, split into one contiguous chunk per available core (the first
/// on the calling thread). A panicking chunk propagates its panic, as a sequential map would.
pub fn map<'a, T: Sync, R: Send>(items: &'a [T], f: impl Fn(&'a T) -> R + Sync) -> Vec<R> {
    let threads = cores();
    if threads < 2 || items.len() < 2 {
        return items.iter().map(&f).collect();
    }
    let size = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|s| {
        let mut chunks = items.chunks(size);
        let first = chunks.next().unwrap_or_default();
        let others: Vec<_> = chunks
            .map(|c| s.spawn(move || c.iter().map(f).collect::<Vec<R>>()))
            .collect();
        let mut out: Vec<R> = first.iter().map(f).collect();
        for h in others {
            match h.join() {
                Ok(part) => out.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

/// `f` over `items`, in order, one thread per item: for a few parts of uneven size, which the
/// scheduler then balances over the cores.
pub fn each<'a, T: Sync, R: Send>(items: &'a [T], f: impl Fn(&'a T) -> R + Sync) -> Vec<R> {
    if items.len() < 2 {
        return items.iter().map(&f).collect();
    }
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = items[1..].iter().map(|i| s.spawn(move || f(i))).collect();
        let mut out = vec![f(&items[0])];
        for h in handles {
            match h.join() {
                Ok(r) => out.push(r),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_order_for_any_length() {
        for n in [0usize, 1, 2, 3, 7, 100] {
            let items: Vec<usize> = (0..n).collect();
            assert_eq!(
                super::map(&items, |i| i * 2),
                (0..n).map(|i| i * 2).collect::<Vec<_>>()
            );
        }
    }
}
