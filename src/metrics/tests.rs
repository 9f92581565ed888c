use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::*;

#[test]
fn counter_exposition_with_escaping() {
    let r = Registry::new();
    let c = r.counter_vec(
        "test_requests_total",
        "Help with \\ backslash\nand newline \"quoted\".",
        ["route", "status"],
    );
    c.inc(&["/b", "200"]);
    c.inc_by(&["/a", "500"], 3);
    c.inc(&["q\"uo\\te\nnl", "200"]);
    let expected = "\
# HELP test_requests_total Help with \\\\ backslash\\nand newline \"quoted\".
# TYPE test_requests_total counter
test_requests_total{route=\"/a\",status=\"500\"} 3
test_requests_total{route=\"/b\",status=\"200\"} 1
test_requests_total{route=\"q\\\"uo\\\\te\\nnl\",status=\"200\"} 1
";
    assert_eq!(r.render(), expected);
}

#[test]
fn gauge_and_unlabelled_exposition() {
    let r = Registry::new();
    let g = r.gauge("test_in_flight", "In flight.");
    let gv = r.gauge_vec("test_values", "Odd values.", ["k"]);
    g.set(2.5);
    {
        let _guard = g.inc_guard();
        assert_eq!(g.get(), 3.5);
    }
    gv.set(&["nan"], f64::NAN);
    gv.set(&["pinf"], f64::INFINITY);
    gv.set(&["ninf"], f64::NEG_INFINITY);
    gv.set(&["neg"], -1.25);
    gv.set(&["big"], 1e21);
    gv.set(&["tiny"], 1e-7);
    let expected = "\
# HELP test_in_flight In flight.
# TYPE test_in_flight gauge
test_in_flight 2.5
# HELP test_values Odd values.
# TYPE test_values gauge
test_values{k=\"big\"} 1000000000000000000000
test_values{k=\"nan\"} NaN
test_values{k=\"neg\"} -1.25
test_values{k=\"ninf\"} -Inf
test_values{k=\"pinf\"} +Inf
test_values{k=\"tiny\"} 0.0000001
";
    assert_eq!(r.render(), expected);
}

#[test]
fn histogram_exposition_is_cumulative() {
    let r = Registry::new();
    // Unsorted with a duplicate and explicit +Inf: normalised away.
    let h = r.histogram_vec(
        "test_seconds",
        "Latency.",
        ["route"],
        &[1.0, 0.5, 0.5, f64::INFINITY],
    );
    for v in [0.1, 0.5, 0.7, 3.0] {
        h.observe(&["/x"], v);
    }
    let plain = r.histogram("test_plain", "No labels.", &[0.25]);
    plain.observe(0.25);
    plain.observe(f64::NAN);
    let expected = "\
# HELP test_plain No labels.
# TYPE test_plain histogram
test_plain_bucket{le=\"0.25\"} 1
test_plain_bucket{le=\"+Inf\"} 2
test_plain_sum NaN
test_plain_count 2
# HELP test_seconds Latency.
# TYPE test_seconds histogram
test_seconds_bucket{route=\"/x\",le=\"0.5\"} 2
test_seconds_bucket{route=\"/x\",le=\"1\"} 3
test_seconds_bucket{route=\"/x\",le=\"+Inf\"} 4
test_seconds_sum{route=\"/x\"} 4.3
test_seconds_count{route=\"/x\"} 4
";
    assert_eq!(r.render(), expected);
}

#[test]
fn empty_families_are_omitted() {
    let r = Registry::new();
    let _c = r.counter_vec("test_unused_total", "Unused.", ["a"]);
    assert_eq!(r.render(), "");
}

#[test]
fn registration_is_get_or_create_and_conflicts_are_detached() {
    let r = Registry::new();
    let a = r.counter_vec("test_total", "A.", ["x"]);
    let b = r.counter_vec("test_total", "B.", ["x"]);
    a.inc(&["1"]);
    b.inc(&["1"]);
    assert_eq!(a.with(&["1"]).get(), 2);
    // Same name, different type: works, but not exported twice.
    let g = r.gauge("test_total", "Conflict.");
    g.set(9.0);
    assert_eq!(r.render().matches("# TYPE test_total").count(), 1);
    assert!(!r.render().contains(" 9\n"));
}

#[test]
fn invalid_names_are_sanitized() {
    let r = Registry::new();
    r.counter_vec("9bad-name", "x", ["bad-label"]).inc(&["v"]);
    r.histogram_vec("test_h", "x", ["le"], &[1.0])
        .observe(&["v"], 0.5);
    let out = r.render();
    assert!(out.contains("_9bad_name{bad_label=\"v\"} 1\n"), "{out}");
    assert!(
        out.contains("test_h_bucket{le_=\"v\",le=\"1\"} 1\n"),
        "{out}"
    );
    check_exposition(&out);
}

#[test]
fn concurrent_increments_are_exact() {
    const THREADS: usize = 8;
    const ITERS: u64 = 10_000;
    let r = Arc::new(Registry::new());
    let c = r.counter_vec("test_total", "x", ["t"]);
    let h = r.histogram_vec("test_seconds", "x", ["t"], &[0.5]);
    let g = r.gauge("test_gauge", "x");
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            let (c, h, g) = (c.clone(), h.clone(), g.clone());
            thread::spawn(move || {
                // Half the threads create their own series mid-flight.
                let own = format!("t{i}");
                for _ in 0..ITERS {
                    c.inc(&["shared"]);
                    c.inc(&[&own]);
                    h.observe(&["shared"], 1.0);
                    g.add(1.0);
                }
            })
        })
        .collect();
    for w in workers {
        assert!(w.join().is_ok());
    }
    let total = THREADS as u64 * ITERS;
    assert_eq!(c.with(&["shared"]).get(), total);
    assert_eq!(c.with(&["t3"]).get(), ITERS);
    assert_eq!(h.with(&["shared"]).count(), total);
    assert_eq!(h.with(&["shared"]).sum(), total as f64);
    assert_eq!(g.get(), total as f64);
    let out = r.render();
    assert!(out.contains(&format!("test_total{{t=\"shared\"}} {total}\n")));
    check_exposition(&out);
}

#[test]
fn series_cap_folds_into_other() {
    let r = Registry::with_max_series(3);
    let c = r.counter_vec("test_total", "x", ["a", "b"]);
    for i in 0..10 {
        c.inc(&[&format!("v{i}"), "x"]);
    }
    // Existing series keep counting after the cap is hit.
    c.inc(&["v0", "x"]);
    assert_eq!(c.series_count(), 4);
    assert_eq!(c.with(&["v0", "x"]).get(), 2);
    assert_eq!(c.with(&["other", "other"]).get(), 7);
    assert_eq!(c.with(&["v9", "x"]).get(), 7); // folded handle
    assert_eq!(c.series_count(), 4);
    let expected = "\
# HELP test_total x
# TYPE test_total counter
test_total{a=\"other\",b=\"other\"} 7
test_total{a=\"v0\",b=\"x\"} 2
test_total{a=\"v1\",b=\"x\"} 1
test_total{a=\"v2\",b=\"x\"} 1
";
    assert_eq!(r.render(), expected);
}

#[test]
fn allow_list_and_method_normalisation() {
    let allow = ["Patient", "Observation"];
    assert_eq!(allow_listed("Patient", &allow), "Patient");
    assert_eq!(allow_listed("patient", &allow), "other");
    assert_eq!(method_label("GET"), "GET");
    assert_eq!(method_label("PROPFIND"), "other");

    let m = Metrics::with_version("1.2.3");
    m.record_ingested_resources(&allow, "Observation", 5);
    m.record_ingested_resources(&allow, "Evil\"Type", 2);
    let out = m.render();
    assert!(out.contains("phiflow_ingested_resources_total{resource_type=\"Observation\"} 5\n"));
    assert!(out.contains("phiflow_ingested_resources_total{resource_type=\"other\"} 2\n"));
    assert!(out.contains("phiflow_build_info{version=\"1.2.3\"} 1\n"));
}

#[test]
fn timers_record_on_drop_unless_discarded() {
    let r = Registry::new();
    let h = r.histogram("test_seconds", "x", &LATENCY_BUCKETS);
    drop(h.start_timer());
    let secs = h.start_timer().observe();
    assert!(secs >= 0.0);
    h.start_timer().discard();
    assert_eq!(h.count(), 2);
}

#[test]
fn global_is_a_singleton() {
    let a: *const Metrics = Metrics::global();
    let b: *const Metrics = Metrics::global();
    assert_eq!(a, b);
}

#[test]
fn phiflow_render_is_valid_exposition() {
    let m = Metrics::new();
    m.observe_http("/v1/deid", "POST", "200", Duration::from_millis(12));
    m.observe_http(UNMATCHED_ROUTE, "BREW", "404", Duration::from_micros(3));
    {
        let _in_flight = m.http_in_flight.inc_guard();
    }
    m.auth_failures.inc(&["invalid"]);
    m.inference_queue_depth.set(&["model-a"], 17.0);
    m.inference_batches.inc(&["model-a"]);
    m.inference_batch_size.observe(&["model-a"], 24.0);
    m.inference_batch_padding_ratio.observe(&["model-a"], 0.12);
    m.inference_batch_seconds.observe(&["model-a"], 0.042);
    m.inference_queue_rejections.inc(&["model-a"]);
    m.model_loads.inc(&["model-a", "ok"]);
    m.model_load_seconds.observe(&["model-a"], 3.2);
    m.model_evictions.inc(&["model-a", "keep_alive"]);
    m.models_resident.set(1.0);
    m.models_resident_bytes.set(4.5e8);
    m.jobs.inc(&["accepted"]);
    m.job_documents.inc_by(&["ok"], 10);
    m.jobs_running.inc();
    m.webhook_deliveries.inc(&["retry"]);
    m.ingestions.inc(&["ok"]);
    m.record_ingested_resources(&["Patient"], "Patient", 1);
    m.stream_records.inc(&["/v1/stream", "chunk"]);
    m.inference_queue_depth.set(&["weird\"\\\nmodel"], f64::NAN);

    let out = m.render();
    check_exposition(&out);
    for family in [
        "phiflow_http_requests_total",
        "phiflow_http_request_duration_seconds",
        "phiflow_http_requests_in_flight",
        "phiflow_auth_failures_total",
        "phiflow_inference_queue_depth",
        "phiflow_inference_batches_total",
        "phiflow_inference_batch_size",
        "phiflow_inference_batch_padding_ratio",
        "phiflow_inference_batch_seconds",
        "phiflow_inference_queue_rejections_total",
        "phiflow_model_loads_total",
        "phiflow_model_load_seconds",
        "phiflow_model_evictions_total",
        "phiflow_models_resident",
        "phiflow_models_resident_bytes",
        "phiflow_jobs_total",
        "phiflow_job_documents_total",
        "phiflow_jobs_running",
        "phiflow_webhook_deliveries_total",
        "phiflow_ingestions_total",
        "phiflow_ingested_resources_total",
        "phiflow_stream_records_total",
        "phiflow_build_info",
    ] {
        assert!(
            out.contains(&format!("# TYPE {family} ")),
            "missing {family}"
        );
    }
    assert!(out.contains(
        "phiflow_http_requests_total{route=\"unmatched\",method=\"other\",status=\"404\"} 1\n"
    ));
    assert!(out.contains("phiflow_auth_failures_total{reason=\"certificate\"} 0\n"));
    assert!(out.contains("phiflow_http_requests_in_flight 0\n"));
    assert!(out.contains(
        "phiflow_http_request_duration_seconds_bucket{route=\"/v1/deid\",method=\"POST\",le=\"0.025\"} 1\n"
    ));
    assert!(out.contains("phiflow_inference_batch_size_bucket{model=\"model-a\",le=\"16\"} 0\n"));
    assert!(out.contains("phiflow_inference_batch_size_bucket{model=\"model-a\",le=\"32\"} 1\n"));
    assert_eq!(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
}

#[test]
fn checker_rejects_bad_lines() {
    for bad in [
        "9x 1\n",
        "x{a=\"b} 1\n",
        "x{a=\"\\t\"} 1\n",
        "x{a=b} 1\n",
        "x 1.2.3\n",
        "x inf\n",
        "x{a=\"b\",} 1\n",
        "x  1\n",
        "x 1 \n",
    ] {
        assert!(parse_sample(bad.trim_end_matches('\n')).is_err(), "{bad:?}");
    }
    assert!(parse_sample("x{a=\"q\\\"\\\\\\n\",b=\"\"} -Inf").is_ok());
}

// ---------------------------------------------------------------------------
// Hand-written exposition checker:
// `^[a-zA-Z_:][a-zA-Z0-9_:]*(\{name="escaped",...\})? <float>$`
// ---------------------------------------------------------------------------

/// Validates every line; panics (test-only) with the offending line.
fn check_exposition(text: &str) {
    assert!(text.ends_with('\n'), "exposition must end with a newline");
    let mut typed: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let kind = parts.next().unwrap_or("");
            let name = parts.next().unwrap_or("");
            let tail = parts.next().unwrap_or("");
            assert!(is_metric_name(name), "bad comment name: {line:?}");
            match kind {
                "HELP" => {}
                "TYPE" => {
                    assert!(
                        matches!(tail, "counter" | "gauge" | "histogram"),
                        "bad TYPE: {line:?}"
                    );
                    assert!(
                        typed.iter().all(|(n, _)| n != name),
                        "duplicate TYPE: {line:?}"
                    );
                    typed.push((name.to_owned(), tail.to_owned()));
                }
                _ => panic!("unknown comment: {line:?}"),
            }
            continue;
        }
        let (name, labels) = match parse_sample(line) {
            Ok(v) => v,
            Err(e) => panic!("bad sample line {line:?}: {e}"),
        };
        // Every sample belongs to the most recent TYPE block.
        let (family, kind) = typed.last().cloned().unwrap_or_default();
        let ok = if kind == "histogram" {
            let has_le = labels.iter().any(|(k, _)| k == "le");
            (name == format!("{family}_bucket") && has_le)
                || ((name == format!("{family}_sum") || name == format!("{family}_count"))
                    && !has_le)
        } else {
            name == family
        };
        assert!(ok, "sample outside its family block: {line:?}");
        for (k, v) in &labels {
            if k == "le" {
                assert!(parse_float(v).is_some(), "bad le: {line:?}");
            }
        }
    }
}

type Labels = Vec<(String, String)>;

fn parse_sample(line: &str) -> Result<(String, Labels), String> {
    let name_end = line.find(['{', ' ']).ok_or("no value")?;
    let name = &line[..name_end];
    if !is_metric_name(name) {
        return Err(format!("bad metric name {name:?}"));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(body)?;
        labels = parsed;
        rest = after;
    }
    let value = rest.strip_prefix(' ').ok_or("missing space before value")?;
    parse_float(value).ok_or_else(|| format!("bad value {value:?}"))?;
    Ok((name.to_owned(), labels))
}

/// Parses `k="v",k2="v2"}` and returns the labels and the text after `}`.
fn parse_labels(mut s: &str) -> Result<(Labels, &str), String> {
    let mut out = Vec::new();
    loop {
        let eq = s.find('=').ok_or("label without '='")?;
        let key = &s[..eq];
        if !is_label_name(key) {
            return Err(format!("bad label name {key:?}"));
        }
        s = s[eq + 1..]
            .strip_prefix('"')
            .ok_or("unquoted label value")?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let close = loop {
            match chars.next() {
                None => return Err("unterminated label value".into()),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => return Err(format!("bad escape {other:?}")),
                },
                Some((_, c)) => value.push(c),
            }
        };
        out.push((key.to_owned(), value));
        s = &s[close + 1..];
        if let Some(after) = s.strip_prefix('}') {
            return Ok((out, after));
        }
        s = s.strip_prefix(',').ok_or("expected ',' or '}'")?;
        if s.starts_with('}') {
            return Err("trailing comma".into());
        }
    }
}

fn parse_float(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "+Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => {
            // Plain decimal/exponent only; Rust would also accept "inf"/"nan".
            let digits = s.trim_start_matches(['-', '+']);
            if digits.is_empty() || !digits.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            let ok = s
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'));
            if ok { s.parse().ok() } else { None }
        }
    }
}

fn is_metric_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}
