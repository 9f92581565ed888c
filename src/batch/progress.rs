//! Progress on stderr: rows done of the shard's total, rows per second and the time left. On a
//! terminal one line redrawn in place; otherwise (a pod's log) a log line every so often.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often a log line is written when stderr is not a terminal.
const LOG_EVERY: Duration = Duration::from_secs(15);
/// How often the terminal line is redrawn.
const DRAW_EVERY: Duration = Duration::from_millis(250);

pub struct Progress {
    total: u64,
    done: u64,
    started: Instant,
    last: Option<Instant>,
    /// Rows done when last shown.
    shown: u64,
    terminal: bool,
}

impl Progress {
    pub fn new(total: u64) -> Self {
        Self {
            total,
            done: 0,
            started: Instant::now(),
            last: None,
            shown: 0,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    pub fn add(&mut self, rows: u64) {
        self.done += rows;
        let every = if self.terminal { DRAW_EVERY } else { LOG_EVERY };
        if self.last.is_none_or(|t| t.elapsed() >= every) {
            self.show();
        }
    }

    pub fn rows_per_second(&self) -> f64 {
        self.done as f64 / self.started.elapsed().as_secs_f64().max(1e-9)
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn show(&mut self) {
        self.last = Some(Instant::now());
        self.shown = self.done;
        let line = line(self.done, self.total, self.rows_per_second());
        if self.terminal {
            let _ = write!(std::io::stderr(), "\r\x1b[K{line}");
        } else {
            tracing::info!(rows_done = self.done, rows_total = self.total, "{line}");
        }
    }

    /// The last state, then a new line on a terminal.
    pub fn finish(&mut self) {
        if self.shown != self.done || self.last.is_none() {
            self.show();
        }
        if self.terminal {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// `1234/5000 rows (24.7%) | 81.2 rows/s | ETA 46s`
fn line(done: u64, total: u64, rate: f64) -> String {
    let pct = if total == 0 {
        100.0
    } else {
        done as f64 * 100.0 / total as f64
    };
    let eta = if rate > 0.0 {
        clock(((total.saturating_sub(done)) as f64 / rate).round() as u64)
    } else {
        "?".into()
    };
    format!("{done}/{total} rows ({pct:.1}%) | {rate:.1} rows/s | ETA {eta}")
}

/// Seconds as `1h02m03s`, `2m03s` or `3s`.
fn clock(s: u64) -> String {
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_rows_rate_and_time_left() {
        assert_eq!(
            line(250, 1000, 50.0),
            "250/1000 rows (25.0%) | 50.0 rows/s | ETA 15s"
        );
        assert_eq!(line(0, 10, 0.0), "0/10 rows (0.0%) | 0.0 rows/s | ETA ?");
        assert_eq!(clock(3723), "1h02m03s");
        assert_eq!(clock(125), "2m05s");
    }
}
