//! What a bench measured, as JSON, so `scripts/plot-benches` can draw it (issue 19: results as
//! plots generated from bench output, not prose typed in by hand).
//!
//! ```ignore
//! #[path = "support/results.rs"]
//! mod results;
//! let mut report = results::Report::new("batch");
//! report.knob("PHIFLOW_BENCH_ROWS", rows);
//! report.figure("throughput", "HTTP", http_rps, "rows/s");
//! report.figure_min("HTTP / CLI", "ratio", ratio, "×", 0.9); // with the issue's target
//! report.write(); // target/bench-results/batch.json (PHIFLOW_BENCH_RESULTS: the folder)
//! ```
//!
//! Printing stays the bench's job; this only records. A failure to write is reported on stderr
//! and never fails the bench.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

use serde::Serialize;

/// Where a figure should be, when the issue names a target: at least or at most a value.
#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// Good when the value is at least this (throughput, ratios against a baseline).
    Min(f64),
    /// Good when the value is at most this (latency, memory).
    Max(f64),
}

/// One measured value: a bar in the plot of its `series`, labelled `x`.
#[derive(Serialize)]
pub struct Figure {
    pub series: String,
    pub x: String,
    pub value: f64,
    pub unit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

/// Everything one bench run measured, with what shaped the run.
#[derive(Serialize)]
pub struct Report {
    bench: String,
    /// UTC date of the run (YYYY-MM-DD).
    date: String,
    /// `debug` for `--profile dev` builds (timings not comparable), else `release`.
    profile: &'static str,
    cores: usize,
    source: String,
    /// The knobs (environment settings) that shaped the run, with their effective values.
    knobs: BTreeMap<String, String>,
    figures: Vec<Figure>,
}

impl Report {
    pub fn new(bench: &str) -> Self {
        Self {
            bench: bench.to_string(),
            date: chrono::Utc::now().format("%Y-%m-%d").to_string(),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            source: format!("measured by benches/{bench}.rs"),
            knobs: BTreeMap::new(),
            figures: Vec::new(),
        }
    }

    /// Records a setting that shaped the run (an environment knob and its effective value).
    pub fn knob(&mut self, name: &str, value: impl std::fmt::Display) -> &mut Self {
        self.knobs.insert(name.to_string(), value.to_string());
        self
    }

    /// Records a figure with no target.
    pub fn figure(&mut self, series: &str, x: &str, value: f64, unit: &str) -> &mut Self {
        self.push(series, x, value, unit, None)
    }

    /// Records a figure that should be at least `target`.
    pub fn figure_min(
        &mut self,
        series: &str,
        x: &str,
        value: f64,
        unit: &str,
        target: f64,
    ) -> &mut Self {
        self.push(series, x, value, unit, Some(Target::Min(target)))
    }

    /// Records a figure that should be at most `target`.
    pub fn figure_max(
        &mut self,
        series: &str,
        x: &str,
        value: f64,
        unit: &str,
        target: f64,
    ) -> &mut Self {
        self.push(series, x, value, unit, Some(Target::Max(target)))
    }

    fn push(
        &mut self,
        series: &str,
        x: &str,
        value: f64,
        unit: &str,
        target: Option<Target>,
    ) -> &mut Self {
        // JSON has no NaN or infinity: a figure that could not be measured is left out.
        if value.is_finite() {
            self.figures.push(Figure {
                series: series.to_string(),
                x: x.to_string(),
                value,
                unit: unit.to_string(),
                target,
            });
        } else {
            eprintln!("bench results: {series}/{x} is not a number, left out");
        }
        self
    }

    /// Adds the median of every criterion benchmark this process measured (estimates written
    /// since `since`, in the order measured) to `series`, in nanoseconds.
    pub fn criterion_medians(&mut self, series: &str, since: SystemTime) -> &mut Self {
        let mut found = Vec::new();
        collect_estimates(&criterion_dir(), since, &mut found);
        found.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        for (_, id, median_ns) in found {
            self.figure(series, &id, median_ns, "ns");
        }
        self
    }

    /// Writes `<dir>/<bench>.json`; nothing when no figure was recorded (a filtered or `--test`
    /// run).
    pub fn write(&self) {
        if self.figures.is_empty() {
            return;
        }
        let dir = results_dir();
        let path = dir.join(format!("{}.json", self.bench));
        let written = std::fs::create_dir_all(&dir)
            .map_err(|e| e.to_string())
            .and_then(|()| serde_json::to_string_pretty(self).map_err(|e| e.to_string()))
            .and_then(|json| std::fs::write(&path, json + "\n").map_err(|e| e.to_string()));
        match written {
            Ok(()) => eprintln!("bench results: {}", path.display()),
            Err(e) => eprintln!("bench results: could not write {}: {e}", path.display()),
        }
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from)
}

/// `PHIFLOW_BENCH_RESULTS`, else `target/bench-results`.
fn results_dir() -> PathBuf {
    std::env::var_os("PHIFLOW_BENCH_RESULTS")
        .map_or_else(|| target_dir().join("bench-results"), PathBuf::from)
}

/// Where criterion writes (its own order of preference, less `cargo metadata`).
fn criterion_dir() -> PathBuf {
    std::env::var_os("CRITERION_HOME").map_or_else(|| target_dir().join("criterion"), PathBuf::from)
}

/// `(written at, full id, median ns)` of each `new/estimates.json` under `dir` written since
/// `since`.
fn collect_estimates(
    dir: &std::path::Path,
    since: SystemTime,
    out: &mut Vec<(SystemTime, String, f64)>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() || path.file_name().is_some_and(|n| n == "report") {
            continue;
        }
        let estimates = path.join("new").join("estimates.json");
        let written = std::fs::metadata(&estimates).and_then(|m| m.modified());
        match written {
            Ok(at) if at >= since => {
                let read = |p: PathBuf| -> Option<serde_json::Value> {
                    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
                };
                let median =
                    read(estimates.clone()).and_then(|e| e["median"]["point_estimate"].as_f64());
                let id = read(path.join("new").join("benchmark.json"))
                    .and_then(|b| b["full_id"].as_str().map(str::to_string));
                if let (Some(median), Some(id)) = (median, id) {
                    out.push((at, id, median));
                }
            }
            Ok(_) => {}
            Err(_) => collect_estimates(&path, since, out),
        }
    }
}
