//! Window: cuts the token sequence into model-sized windows with overlap. Long text is never
//! truncated; windows prefer to end on a sentence start, else on a word start.

use std::ops::Range;

/// How windows are cut.
#[derive(Clone, Copy, Debug)]
pub struct WindowParams {
    /// Content tokens per window (special tokens excluded).
    pub capacity: usize,
    /// Tokens shared with the next window when a window ends inside a sentence.
    pub overlap: usize,
    pub prefer_sentences: bool,
}

/// Token ranges covering `0..n`, in order. Consecutive windows overlap by `overlap` tokens unless
/// the first ends exactly on a sentence start, where the model needs no context across it.
pub fn windows(
    n: usize,
    words: &[Option<u32>],
    sentence_starts: &[usize],
    p: WindowParams,
) -> Vec<Range<usize>> {
    let capacity = p.capacity.max(1);
    let overlap = p.overlap.min(capacity / 2);
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let hard_end = (start + capacity).min(n);
        if hard_end == n {
            out.push(start..n);
            break;
        }
        let floor = start + capacity / 2;
        let sentence_end = if p.prefer_sentences {
            let i = sentence_starts.partition_point(|&s| s <= hard_end);
            sentence_starts[..i].last().copied().filter(|&s| s > floor)
        } else {
            None
        };
        let (end, next) = match sentence_end {
            Some(s) => (s, s),
            None => {
                // End before the word that would be cut in two, when one starts late enough.
                let word_start = (floor + 1..=hard_end)
                    .rev()
                    .find(|&t| t < words.len() && (words[t].is_none() || words[t] != words[t - 1]));
                let end = word_start.unwrap_or(hard_end);
                (end, end.saturating_sub(overlap).max(start + 1))
            }
        };
        out.push(start..end);
        start = next;
    }
    out
}

/// For each token, the window in which it sits farthest from an edge (ties: the earlier window).
pub fn best_window_per_token(n: usize, windows: &[Range<usize>]) -> Vec<usize> {
    let mut best = vec![0usize; n];
    let mut best_dist = vec![-1isize; n];
    for (wi, w) in windows.iter().enumerate() {
        for t in w.clone() {
            let d = (t - w.start).min(w.end - 1 - t) as isize;
            if d > best_dist[t] {
                best_dist[t] = d;
                best[t] = wi;
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize) -> Vec<Option<u32>> {
        (0..n as u32).map(Some).collect()
    }

    fn covers(ws: &[Range<usize>], n: usize) -> bool {
        (0..n).all(|t| ws.iter().any(|w| w.contains(&t)))
    }

    #[test]
    fn short_text_is_one_window() {
        let ws = windows(
            10,
            &words(10),
            &[],
            WindowParams {
                capacity: 16,
                overlap: 4,
                prefer_sentences: true,
            },
        );
        assert_eq!(ws, vec![0..10]);
        assert!(
            windows(
                0,
                &[],
                &[],
                WindowParams {
                    capacity: 16,
                    overlap: 4,
                    prefer_sentences: true
                }
            )
            .is_empty()
        );
    }

    #[test]
    fn long_text_overlaps_and_covers_everything() {
        let n = 1000;
        let p = WindowParams {
            capacity: 100,
            overlap: 20,
            prefer_sentences: false,
        };
        let ws = windows(n, &words(n), &[], p);
        assert!(covers(&ws, n));
        for pair in ws.windows(2) {
            assert_eq!(pair[0].end - pair[1].start, 20);
            assert!(pair[0].len() <= 100);
        }
    }

    #[test]
    fn windows_end_on_sentence_starts_without_overlap() {
        let n = 300;
        let p = WindowParams {
            capacity: 100,
            overlap: 20,
            prefer_sentences: true,
        };
        let ws = windows(n, &words(n), &[30, 90, 170, 250], p);
        assert_eq!(ws[0], 0..90);
        assert_eq!(ws[1], 90..170);
        assert!(covers(&ws, n));
    }

    #[test]
    fn windows_do_not_split_words() {
        // Tokens 0..200, words of 3 tokens each.
        let w: Vec<Option<u32>> = (0..200u32).map(|t| Some(t / 3)).collect();
        let ws = windows(
            200,
            &w,
            &[],
            WindowParams {
                capacity: 100,
                overlap: 10,
                prefer_sentences: false,
            },
        );
        assert_eq!(ws[0], 0..99);
        assert!(covers(&ws, 200));
    }

    #[test]
    fn best_window_is_the_one_farthest_from_an_edge() {
        let ws = vec![0..10, 6..16];
        let best = best_window_per_token(16, &ws);
        assert_eq!(best[7], 0); // distance 2 in both: earlier wins
        assert_eq!(best[8], 1); // 1 from the end of the first, 2 from the start of the second
        assert_eq!(best[3], 0);
        assert_eq!(best[12], 1);
    }
}
