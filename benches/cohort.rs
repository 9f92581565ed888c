//! OMOP load and cohort resolution at scale, and the same phenotype in DuckDB for comparison.
//!
//! Generates `PHIFLOW_COHORT_BENCH_RECORDS` records (default 1,000,000: 10% person rows, 30%
//! grounded notes with three mentions each, 40% condition rows, 20% drug rows), loads them
//! (build + Parquet), then resolves one phenotype from the stored dataset several times
//! (Parquet read + event table + evaluation + caller ids) and reports the median, the peak
//! memory of each phase, and DuckDB's median on the same Parquet files with the same answer
//! (`scripts/bench-tools` installs DuckDB; without it that part is skipped).
//! `PHIFLOW_COHORT_BENCH_RUNS` sets the number of cohort runs (default 5).
//!
//!     scripts/bench-tools && cargo bench --bench cohort

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use chrono::{Duration, NaiveDate};
use phiflow::cohort::{Hierarchy, parse_phenotype, resolve};
use phiflow::omop::{self, Source, caller_ids, cdm, cohort_data, note_hashes};
use serde_json::{Value, json};

#[path = "support/results.rs"]
mod results;

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const EDGES: [(i64, i64); 5] = [
    (201826, 443238),
    (201826, 4193704),
    (443238, 40482801),
    (46271022, 443614),
    (1503297, 1503298),
];

/// A condition concept: 15% type 2 diabetes (root or a descendant), 5% CKD, the rest other.
fn condition(r: &mut Rng) -> i64 {
    match r.below(100) {
        0..=14 => [201826, 443238, 4193704, 40482801][r.below(4) as usize],
        15..=19 => [46271022, 443614][r.below(2) as usize],
        _ => [320128, 4329847, 255848, 437663][r.below(4) as usize],
    }
}

/// A drug concept: 30% metformin (or its descendant), the rest other.
fn drug(r: &mut Rng) -> i64 {
    match r.below(100) {
        0..=29 => [1503297, 1503298][r.below(2) as usize],
        _ => [1596977, 1308216][r.below(2) as usize],
    }
}

fn date(r: &mut Rng) -> String {
    let base = NaiveDate::from_ymd_opt(2015, 1, 1).unwrap_or_default();
    (base + Duration::days(r.below(3650) as i64)).to_string()
}

const NOTE_TEXT: &str =
    "Assessment: chronic conditions reviewed; medications reconciled; plan as below today.";

fn generate(n: usize) -> String {
    let persons = (n / 10).max(1) as u64;
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = String::with_capacity(n * 260);
    for i in 0..n {
        let p = 1 + r.below(persons);
        match i % 10 {
            0 => {
                let _ = writeln!(
                    out,
                    r#"{{"table":"person","person_id":{},"gender_concept_id":{},"year_of_birth":{},"race_concept_id":0,"ethnicity_concept_id":0}}"#,
                    i / 10 + 1,
                    if r.below(2) == 0 { 8507 } else { 8532 },
                    1930 + r.below(70)
                );
            }
            1..=3 => {
                let mut entities = Vec::with_capacity(3);
                for k in 0..3 {
                    let (domain, concept, vocab) = if k < 2 {
                        ("condition", condition(&mut r), "SNOMED")
                    } else {
                        ("drug", drug(&mut r), "RxNorm")
                    };
                    let mut e = json!({"start": k * 20, "end": k * 20 + 10, "domain": domain,
                        "concept_id": concept, "vocabulary_id": vocab});
                    match r.below(100) {
                        0..=14 => e["negation"] = json!("negated"),
                        15..=19 => e["experiencer"] = json!("family"),
                        20..=24 => e["temporality"] = json!("historical"),
                        _ => {}
                    }
                    entities.push(e);
                }
                let line = json!({"note_id": i + 1, "person_id": p, "note_text": NOTE_TEXT,
                    "note_date": date(&mut r), "entities": entities});
                let _ = writeln!(out, "{line}");
            }
            4..=7 => {
                let _ = writeln!(
                    out,
                    r#"{{"table":"condition_occurrence","condition_occurrence_id":{},"person_id":{p},"condition_concept_id":{},"condition_start_date":"{}","condition_type_concept_id":32817}}"#,
                    10_000_000 + i,
                    condition(&mut r),
                    date(&mut r)
                );
            }
            _ => {
                let d = date(&mut r);
                let _ = writeln!(
                    out,
                    r#"{{"table":"drug_exposure","drug_exposure_id":{},"person_id":{p},"drug_concept_id":{},"drug_exposure_start_date":"{d}","drug_exposure_end_date":"{d}","drug_type_concept_id":32817}}"#,
                    10_000_000 + i,
                    drug(&mut r)
                );
            }
        }
    }
    out
}

fn phenotype() -> Value {
    json!({
        "id": "t2d_metformin_no_ckd", "name": "T2D on metformin without CKD",
        "concept_sets": [
            {"id": "t2d", "vocabulary": "SNOMED", "concept_ids": [201826], "include_descendants": true},
            {"id": "metformin", "vocabulary": "RxNorm", "concept_ids": [1503297], "include_descendants": true},
            {"id": "ckd", "vocabulary": "SNOMED", "concept_ids": [46271022], "include_descendants": true}
        ],
        "expression": {"operator": "and", "children": [
            {"operator": "criterion", "criterion": {"id": "t2d", "concept_set": "t2d", "occurrence": {"minimum": 2}}},
            {"operator": "criterion", "criterion": {"id": "met", "concept_set": "metformin",
                "temporal": {"anchor_criterion": "t2d", "days_before": 30, "days_after": 365}}},
            {"operator": "not", "children": [
                {"operator": "criterion", "criterion": {"id": "ckd", "concept_set": "ckd"}}]}
        ]}
    })
}

/// Peak resident memory (VmHWM) in MB.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Resets VmHWM to the current RSS (Linux `clear_refs` 5), so each phase's peak is its own.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let n: usize = std::env::var("PHIFLOW_COHORT_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let runs: usize = std::env::var("PHIFLOW_COHORT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let root = std::env::temp_dir().join(format!("phiflow-cohort-bench-{}", std::process::id()));

    let t = Instant::now();
    let records = generate(n);
    println!(
        "generated {n} records ({:.0} MB JSONL) in {:.2} s",
        records.len() as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    reset_peak();
    let t = Instant::now();
    let report = omop::load(&omop::root(&root), &records, false, None).expect("load");
    let load_s = t.elapsed().as_secs_f64();
    let load_peak = peak_rss_mb();
    let rejected: usize = report.rejection_counts.values().sum();
    println!(
        "load: {load_s:.2} s ({:.0} records/s), peak RSS {load_peak:.0} MB (the JSONL text included), {} rows in all tables, {rejected} rejected",
        n as f64 / load_s,
        report.row_counts.values().sum::<usize>()
    );
    let load_id = report.load_id.clone();
    drop(records);
    drop(report);
    let mut record = results::Report::new("cohort");
    record
        .knob("PHIFLOW_COHORT_BENCH_RECORDS", n)
        .knob("PHIFLOW_COHORT_BENCH_RUNS", runs)
        .figure("load", &format!("{n} records"), load_s, "s")
        .figure("peak RSS", "load", load_peak, "MB");

    let definition = phenotype();
    let parsed = parse_phenotype(&definition).expect("phenotype");
    let hierarchy = Hierarchy::new(&EDGES);
    let src = Source::Stored {
        root: &omop::root(&root),
        load_id: &load_id,
    };
    reset_peak();
    let (mut totals, mut reads, mut evals) = (Vec::new(), Vec::new(), Vec::new());
    let mut result = None;
    let mut events = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let concepts = parsed.concept_filter(&|roots| hierarchy.descendants_with_self(roots));
        let data = cohort_data(&src, Some(&concepts)).expect("cohort data");
        let read = t.elapsed().as_secs_f64();
        let t2 = Instant::now();
        let r = resolve(&parsed, &hierarchy, &data).expect("resolve");
        let wanted: HashSet<i64> = r.patients.iter().copied().collect();
        let ids = caller_ids(&src, &cdm::PERSON, "person", &wanted).expect("ids");
        let notes: HashSet<i64> = r
            .evidence
            .iter()
            .flat_map(|e| e.matches.iter().filter_map(|m| m.note_id))
            .collect();
        let hashes = note_hashes(&src, &notes).expect("hashes");
        assert_eq!(hashes.len(), notes.len());
        evals.push(t2.elapsed().as_secs_f64());
        reads.push(read);
        totals.push(t.elapsed().as_secs_f64());
        events = data.events.num_rows();
        assert_eq!(ids.len(), r.patients.len());
        result = Some(r);
    }
    let cohort_peak = peak_rss_mb();
    let r = result.expect("at least one run");
    let ours = median(totals);
    let (read_median, eval_median) = (median(reads.clone()), median(evals.clone()));
    println!(
        "cohort (phiflow, from Parquet): median {ours:.3} s over {runs} runs (read + event table {:.3} s, evaluate + caller ids + note hashes {:.3} s), {events} events, {} patients, {} evidence pointers, peak RSS {cohort_peak:.0} MB",
        median(reads),
        median(evals),
        r.patients.len(),
        r.evidence_pointer_count
    );
    record
        .figure("peak RSS", "cohort", cohort_peak, "MB")
        .figure("cohort time (median)", "phiflow", ours, "s")
        .figure(
            "phiflow cohort phases (median)",
            "read + event table",
            read_median,
            "s",
        )
        .figure(
            "phiflow cohort phases (median)",
            "evaluate + ids + hashes",
            eval_median,
            "s",
        );

    let python = Path::new(".assets/tools/bench-venv/bin/python");
    if !python.is_file() {
        println!("duckdb: skipped (run scripts/bench-tools to install it)");
    } else {
        let set = |id: &str| {
            r.concept_sets
                .iter()
                .find(|c| c.concept_set_id == id)
                .map(|c| c.expanded_concept_ids.clone())
                .unwrap_or_default()
        };
        let params = json!({"t2d": set("t2d"), "metformin": set("metformin"), "ckd": set("ckd")});
        let dir = omop::root(&root).join(&load_id);
        let out = Command::new(python)
            .arg("benches/cohort_duckdb.py")
            .arg(&dir)
            .arg(params.to_string())
            .arg(runs.to_string())
            .output()
            .expect("run duckdb");
        if !out.status.success() {
            println!("duckdb: failed: {}", String::from_utf8_lossy(&out.stderr));
        } else {
            let d: Value = serde_json::from_slice(&out.stdout).expect("duckdb json");
            let theirs = d["median_s"].as_f64().unwrap_or(f64::NAN);
            let same = d["ids"]
                .as_array()
                .map(|ids| ids.iter().filter_map(Value::as_i64).collect::<Vec<_>>() == r.patients);
            println!(
                "cohort (DuckDB {} SQL, {} threads, same Parquet): median {theirs:.3} s, {} patients, same patients: {}",
                d["version"].as_str().unwrap_or("?"),
                d["threads"],
                d["count"],
                same.unwrap_or(false)
            );
            println!("ratio phiflow/DuckDB: {:.2}", ours / theirs);
            // Issue 19: no slower than DuckDB on the same files.
            record
                .figure("cohort time (median)", "DuckDB SQL", theirs, "s")
                .figure_max("phiflow / DuckDB time", "cohort", ours / theirs, "×", 1.0);
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    record.write();
}
