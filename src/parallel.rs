//! How many cores this process may use. Data parallelism itself is rayon's (`par_iter`), which
//! the tokenizer already builds in: the hand-written scoped-thread map it replaced gave nothing
//! rayon does not.

/// The cores this process may use (1 when unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
