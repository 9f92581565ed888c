//! Text exposition primitives (Prometheus text format 0.0.4): name checks,
//! escaping and float spelling. Kept separate so the rules live in one place.

use std::fmt::Write as _;

/// True for a valid metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
pub(super) fn is_valid_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// True for a valid label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
pub(super) fn is_valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Maps an arbitrary string onto the allowed alphabet instead of failing, so
/// registration stays infallible (names are code constants; tests pin them).
fn sanitize(name: &str, allow_colon: bool) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    for (i, c) in name.chars().enumerate() {
        let ok = c.is_ascii_alphabetic()
            || c == '_'
            || (allow_colon && c == ':')
            || (i > 0 && c.is_ascii_digit());
        if i == 0 && c.is_ascii_digit() {
            out.push('_');
            out.push(c);
        } else {
            out.push(if ok { c } else { '_' });
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

pub(super) fn sanitize_metric_name(name: &str) -> String {
    if is_valid_metric_name(name) {
        name.to_owned()
    } else {
        sanitize(name, true)
    }
}

pub(super) fn sanitize_label_name(name: &str) -> String {
    if is_valid_label_name(name) {
        name.to_owned()
    } else {
        sanitize(name, false)
    }
}

/// Escapes a label value: `\` → `\\`, `"` → `\"`, newline → `\n`.
pub(super) fn escape_label_value(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Escapes HELP text: `\` → `\\`, newline → `\n` (quotes stay literal).
pub(super) fn escape_help(help: &str, out: &mut String) {
    for c in help.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Writes a float the way Prometheus parses it: `NaN`, `+Inf`, `-Inf`, else
/// Rust's shortest round-trip decimal (never exponent form, which Go's
/// `ParseFloat` would also accept, but plain decimals are easier to read).
pub(super) fn write_f64(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v == f64::INFINITY {
        out.push_str("+Inf");
    } else if v == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else {
        // Writing to a String cannot fail.
        let _ = write!(out, "{v}");
    }
}

/// Writes an integer sample value.
pub(super) fn write_u64(out: &mut String, v: u64) {
    let _ = write!(out, "{v}");
}

/// Renders `a="x",b="y"` (no braces) for a series; done once per series at
/// creation so exposition is just string copies.
pub(super) fn render_label_pairs(names: &[Box<str>], values: &[Box<str>]) -> Box<str> {
    let mut out = String::new();
    for (i, (n, v)) in names.iter().zip(values).enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(n);
        out.push_str("=\"");
        escape_label_value(v, &mut out);
        out.push('"');
    }
    out.into_boxed_str()
}

/// Writes one sample line: `name{labels} value` (braces omitted when empty).
pub(super) fn write_sample_prefix(out: &mut String, name: &str, suffix: &str, labels: &str) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() {
        out.push('{');
        out.push_str(labels);
        out.push('}');
    }
    out.push(' ');
}
