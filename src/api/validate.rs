//! Declarative request validation: every violation of a request body is found and reported with
//! its location (`loc`), in the interface's HTTPValidationError form. Messages never echo input.

use serde_json::{Map, Value, json};

use crate::inference::KeepAlive;
pub use crate::validation::Violation;

/// The type of one field.
#[derive(Debug, Clone)]
pub enum Ty {
    Str,
    Bool,
    Int,
    Num,
    Enum(&'static [&'static str]),
    /// `keep_alive`: number, string or null, parsed.
    KeepAlive,
    /// A semantic version string (`MAJOR.MINOR.PATCH`).
    Semver,
    /// A nested object with its own schema.
    Object(&'static Schema),
    /// Any JSON object (open content).
    AnyObject,
    Array(&'static Ty),
}

/// A numeric bound.
#[derive(Debug, Clone, Copy)]
pub enum Bound {
    Ge(f64),
    Gt(f64),
    Le(f64),
}

/// One declared field.
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    pub nullable: bool,
    pub bounds: &'static [Bound],
    pub min_items: Option<usize>,
    pub max_items: Option<usize>,
}

impl Field {
    pub const fn opt(name: &'static str, ty: Ty) -> Self {
        Self {
            name,
            ty,
            required: false,
            nullable: false,
            bounds: &[],
            min_items: None,
            max_items: None,
        }
    }
    pub const fn req(name: &'static str, ty: Ty) -> Self {
        Self {
            required: true,
            ..Self::opt(name, ty)
        }
    }
    pub const fn nullable(self) -> Self {
        Self {
            nullable: true,
            ..self
        }
    }
    pub const fn bounded(self, bounds: &'static [Bound]) -> Self {
        Self { bounds, ..self }
    }
    pub const fn items(self, min: Option<usize>, max: Option<usize>) -> Self {
        Self {
            min_items: min,
            max_items: max,
            ..self
        }
    }
}

/// A request object: declared fields only (unknown fields are violations).
#[derive(Debug)]
pub struct Schema {
    pub name: &'static str,
    pub fields: &'static [Field],
    /// Fields that are each optional, but of which at least one must be given.
    pub one_of: &'static [&'static str],
}

/// Validates a whole request body; `Ok` only when there is no violation.
pub fn validate_body(schema: &Schema, body: &Value) -> Result<(), Vec<Violation>> {
    let mut out = Vec::new();
    validate_object(schema, body, &[json!("body")], &mut out);
    if out.is_empty() { Ok(()) } else { Err(out) }
}

/// Rewrites integral floats (`2.0`) in integer fields as integers, after validation accepted
/// them: every route then reads `2.0` as `2`, as `/v1/decisions` does, instead of a typed read
/// failing with a 422 that names no field, or a raw read falling back to a default.
pub fn normalize_ints(schema: &Schema, body: &mut Value) {
    let Some(obj) = body.as_object_mut() else {
        return;
    };
    for field in schema.fields {
        if let Some(v) = obj.get_mut(field.name) {
            normalize_value(&field.ty, v);
        }
    }
}

/// 2^53: the largest magnitude up to which a float holds every integer exactly.
const MAX_EXACT_INT: f64 = 9_007_199_254_740_992.0;

fn normalize_value(ty: &Ty, v: &mut Value) {
    match (ty, &mut *v) {
        (Ty::Int, Value::Number(n)) if !(n.is_i64() || n.is_u64()) => {
            let Some(f) = n.as_f64().filter(|f| f.is_finite() && f.fract() == 0.0) else {
                return;
            };
            // Only where every integer is exact in a float (±2^53): `9007199254740993.0` has
            // already lost its last digit, and must not become some other id. Larger values
            // stay floats, and the route refuses them, naming the field.
            if f.abs() <= MAX_EXACT_INT {
                *v = Value::from(f as i64);
            }
        }
        (Ty::Object(schema), Value::Object(_)) => normalize_ints(schema, v),
        (Ty::Array(item), Value::Array(items)) => {
            for i in items {
                normalize_value(item, i);
            }
        }
        _ => {}
    }
}

fn validate_object(schema: &Schema, value: &Value, loc: &[Value], out: &mut Vec<Violation>) {
    let Some(obj) = value.as_object() else {
        out.push(Violation::new(
            loc,
            "model_attributes_type",
            "Input should be a valid dictionary or object",
            None,
        ));
        return;
    };
    for field in schema.fields {
        let mut floc = loc.to_vec();
        floc.push(json!(field.name));
        match obj.get(field.name) {
            None if field.required => {
                out.push(Violation::new(&floc, "missing", "Field required", None))
            }
            None => {}
            // `keep_alive: null` is the interface's "server default".
            Some(Value::Null) if field.nullable || matches!(field.ty, Ty::KeepAlive) => {}
            Some(Value::Null) => out.push(type_violation(&field.ty, &floc)),
            Some(v) => validate_value(field, v, &floc, out),
        }
    }
    for key in obj.keys() {
        if !schema.fields.iter().any(|f| f.name == key) {
            let mut floc = loc.to_vec();
            floc.push(json!(key));
            out.push(Violation::new(
                &floc,
                "extra_forbidden",
                "Extra inputs are not permitted",
                None,
            ));
        }
    }
    if !schema.one_of.is_empty() && !schema.one_of.iter().any(|k| is_given(obj, k)) {
        out.push(Violation::new(
            loc,
            "value_error",
            format!(
                "Value error, one of {} must be given",
                schema.one_of.join(", ")
            ),
            Some(json!({ "fields": schema.one_of })),
        ));
    }
}

fn is_given(obj: &Map<String, Value>, key: &str) -> bool {
    match obj.get(key) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(_) => true,
    }
}

fn type_violation(ty: &Ty, loc: &[Value]) -> Violation {
    let (kind, msg) = match ty {
        Ty::Str | Ty::Semver => ("string_type", "Input should be a valid string".to_string()),
        Ty::Bool => ("bool_type", "Input should be a valid boolean".to_string()),
        Ty::Int => ("int_type", "Input should be a valid integer".to_string()),
        Ty::Num => ("float_type", "Input should be a valid number".to_string()),
        Ty::Enum(allowed) => (
            "literal_error",
            format!("Input should be {}", quoted_list(allowed)),
        ),
        Ty::KeepAlive => (
            "keep_alive_type",
            "Input should be a number, a duration string or null".to_string(),
        ),
        Ty::Object(_) | Ty::AnyObject => (
            "model_type",
            "Input should be a valid dictionary or object".to_string(),
        ),
        Ty::Array(_) => ("list_type", "Input should be a valid list".to_string()),
    };
    let ctx = match ty {
        Ty::Enum(allowed) => Some(json!({ "expected": quoted_list(allowed) })),
        _ => None,
    };
    Violation::new(loc, kind, msg, ctx)
}

fn quoted_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("'{s}'")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

fn as_int(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.as_f64(),
        Value::Number(n) => n.as_f64().filter(|f| f.fract() == 0.0 && f.is_finite()),
        _ => None,
    }
}

fn validate_value(field: &Field, v: &Value, loc: &[Value], out: &mut Vec<Violation>) {
    let number = match (&field.ty, v) {
        (Ty::Str, Value::String(_)) => None,
        (Ty::Bool, Value::Bool(_)) => None,
        (Ty::Int, _) if as_int(v).is_some() => as_int(v),
        (Ty::Num, Value::Number(n)) => n.as_f64(),
        (Ty::Enum(allowed), Value::String(s)) => {
            if !allowed.contains(&s.as_str()) {
                out.push(type_violation(&field.ty, loc));
            }
            None
        }
        (Ty::KeepAlive, Value::Number(_) | Value::String(_)) => {
            if let Err(why) = KeepAlive::from_json(v) {
                out.push(Violation::new(
                    loc,
                    "value_error",
                    format!("Value error, {why}"),
                    None,
                ));
            }
            None
        }
        (Ty::Semver, Value::String(s)) => {
            if !is_semver(s) {
                out.push(Violation::new(
                    loc,
                    "string_pattern_mismatch",
                    "Input should be a semantic version MAJOR.MINOR.PATCH",
                    None,
                ));
            }
            None
        }
        (Ty::Object(schema), Value::Object(_)) => {
            validate_object(schema, v, loc, out);
            None
        }
        (Ty::AnyObject, Value::Object(_)) => None,
        (Ty::Array(item_ty), Value::Array(items)) => {
            if let Some(min) = field.min_items.filter(|&m| items.len() < m) {
                out.push(Violation::new(
                    loc,
                    "too_short",
                    format!(
                        "List should have at least {min} item{}",
                        if min == 1 { "" } else { "s" }
                    ),
                    Some(json!({ "min_length": min, "actual_length": items.len() })),
                ));
            }
            if let Some(max) = field.max_items.filter(|&m| items.len() > m) {
                out.push(Violation::new(
                    loc,
                    "too_long",
                    format!("List should have at most {max} items"),
                    Some(json!({ "max_length": max, "actual_length": items.len() })),
                ));
            }
            for (i, item) in items.iter().enumerate() {
                let mut iloc = loc.to_vec();
                iloc.push(json!(i));
                let f = Field::opt("item", Ty::clone(item_ty));
                if item.is_null() {
                    out.push(type_violation(&f.ty, &iloc));
                } else {
                    validate_value(&f, item, &iloc, out);
                }
            }
            None
        }
        _ => {
            out.push(type_violation(&field.ty, loc));
            return;
        }
    };
    if let Some(x) = number {
        for b in field.bounds {
            let (ok, kind, msg, ctx) = match *b {
                Bound::Ge(m) => (
                    x >= m,
                    "greater_than_equal",
                    format!("Input should be greater than or equal to {}", fmt_num(m)),
                    json!({ "ge": m }),
                ),
                Bound::Gt(m) => (
                    x > m,
                    "greater_than",
                    format!("Input should be greater than {}", fmt_num(m)),
                    json!({ "gt": m }),
                ),
                Bound::Le(m) => (
                    x <= m,
                    "less_than_equal",
                    format!("Input should be less than or equal to {}", fmt_num(m)),
                    json!({ "le": m }),
                ),
            };
            if !ok {
                out.push(Violation::new(loc, kind, msg, Some(ctx)));
            }
        }
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// One semver parser for the whole service (the decision contract's, strict on pre-release
/// and build identifiers too).
fn is_semver(s: &str) -> bool {
    crate::decisions::version::parse_semver(s).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    static INNER: Schema = Schema {
        name: "Inner",
        fields: &[Field::req("url", Ty::Str)],
        one_of: &[],
    };
    static S: Schema = Schema {
        name: "T",
        fields: &[
            Field::req("text", Ty::Str),
            Field::opt("n", Ty::Int).bounded(&[Bound::Ge(1.0), Bound::Le(10.0)]),
            Field::opt("x", Ty::Num).nullable(),
            Field::opt("mode", Ty::Enum(&["a", "b"])),
            Field::opt("hook", Ty::Object(&INNER)).nullable(),
            Field::opt("list", Ty::Array(&Ty::Object(&INNER))).items(Some(1), Some(2)),
            Field::opt("keep_alive", Ty::KeepAlive),
        ],
        one_of: &[],
    };

    fn locs(v: Value) -> Vec<(String, &'static str)> {
        validate_body(&S, &v)
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                (
                    e.loc
                        .iter()
                        .map(|l| l.to_string().trim_matches('"').to_string())
                        .collect::<Vec<_>>()
                        .join("."),
                    e.kind,
                )
            })
            .collect()
    }

    #[test]
    fn accepts_valid() {
        assert!(locs(json!({"text": "a", "n": 3, "x": null, "mode": "b", "hook": {"url": "u"}, "list": [{"url": "u"}], "keep_alive": "5m"})).is_empty());
        assert!(locs(json!({"text": "a", "n": 3.0, "keep_alive": null})).is_empty());
    }

    #[test]
    fn lists_every_violation() {
        let got = locs(
            json!({"n": 0, "x": "s", "mode": "c", "extra": 1, "hook": {"uri": 1}, "list": [], "keep_alive": "5 parsecs"}),
        );
        assert_eq!(
            got,
            vec![
                ("body.text".into(), "missing"),
                ("body.n".into(), "greater_than_equal"),
                ("body.x".into(), "float_type"),
                ("body.mode".into(), "literal_error"),
                ("body.hook.url".into(), "missing"),
                ("body.hook.uri".into(), "extra_forbidden"),
                ("body.list".into(), "too_short"),
                ("body.keep_alive".into(), "value_error"),
                ("body.extra".into(), "extra_forbidden"),
            ]
        );
    }

    #[test]
    fn types_are_strict() {
        let got = locs(json!({"text": 5, "n": true, "list": [{"url": "u"}, 3, {"url": "v"}]}));
        assert_eq!(
            got,
            vec![
                ("body.text".into(), "string_type"),
                ("body.n".into(), "int_type"),
                ("body.list".into(), "too_long"),
                ("body.list.1".into(), "model_type"),
            ]
        );
        assert_eq!(
            locs(json!([1])),
            vec![("body".into(), "model_attributes_type")]
        );
        assert_eq!(
            locs(json!({"text": "a", "n": 2.5})),
            vec![("body.n".into(), "int_type")]
        );
    }

    #[test]
    fn integral_floats_become_integers() {
        let mut v =
            json!({"text": "a", "n": 3.0, "x": 2.0, "hook": {"url": "u"}, "list": [{"url": "u"}]});
        assert!(validate_body(&S, &v).is_ok());
        normalize_ints(&S, &mut v);
        assert!(v["n"].as_i64() == Some(3));
        // A number field stays a float.
        assert!(v["x"].is_f64());
        let mut list = json!({"text": "a", "n": 2.5});
        normalize_ints(&S, &mut list);
        assert!(list["n"].is_f64());
        // Beyond 2^53 a float no longer holds the integer the caller wrote: left alone.
        let mut big = json!({"text": "a", "n": 1.0e19});
        normalize_ints(&S, &mut big);
        assert!(big["n"].is_f64());
    }

    #[test]
    fn semver() {
        assert!(is_semver("1.0.0") && is_semver("1.2.3-rc.1"));
        assert!(!is_semver("1.0") && !is_semver("01.0.0") && !is_semver("a.b.c"));
    }
}
