//! Batch requests: 1..=32 requests, bounded in total text, each validated like a single request
//! with `loc`s such as `["body","requests",2,"options",0]`.

use serde_json::{Value, json};

use super::request::{DecisionRequest, at};
use crate::validation::Violation;

pub const MAX_BATCH_REQUESTS: usize = 32;
/// Characters over every request's `input_text` plus options (as sent, before trimming).
pub const MAX_BATCH_CHARS: usize = 131_072;

fn text_chars(request: &Value) -> usize {
    let input = request["input_text"]
        .as_str()
        .map_or(0, |s| s.chars().count());
    let options: usize = request["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| s.chars().count())
        .sum();
    input + options
}

/// Parses `{"requests": [...]}`; `Ok` only when there is no violation anywhere.
pub fn parse_batch(body: &Value) -> Result<Vec<DecisionRequest>, Vec<Violation>> {
    let loc = [json!("body")];
    let Some(obj) = body.as_object() else {
        return Err(vec![Violation::new(
            &loc,
            "model_attributes_type",
            "Input should be a valid dictionary or object",
            None,
        )]);
    };
    let mut out = Vec::new();
    for key in obj.keys().filter(|k| k.as_str() != "requests") {
        out.push(Violation::new(
            &at(&loc, key.as_str()),
            "extra_forbidden",
            "Extra inputs are not permitted",
            None,
        ));
    }
    let rloc = at(&loc, "requests");
    let items = match obj.get("requests") {
        Some(Value::Array(items)) => items,
        Some(_) => {
            out.push(Violation::new(
                &rloc,
                "list_type",
                "Input should be a valid list",
                None,
            ));
            return Err(out);
        }
        None => {
            out.push(Violation::new(&rloc, "missing", "Field required", None));
            return Err(out);
        }
    };
    if items.is_empty() {
        out.push(Violation::new(
            &rloc,
            "too_short",
            "List should have at least 1 item",
            Some(json!({ "min_length": 1, "actual_length": 0 })),
        ));
    }
    if items.len() > MAX_BATCH_REQUESTS {
        out.push(Violation::new(
            &rloc,
            "too_long",
            format!("List should have at most {MAX_BATCH_REQUESTS} items"),
            Some(json!({ "max_length": MAX_BATCH_REQUESTS, "actual_length": items.len() })),
        ));
    }
    let total: usize = items.iter().map(text_chars).sum();
    if total > MAX_BATCH_CHARS {
        out.push(Violation::new(
            &rloc,
            "too_long",
            format!("Requests should have at most {MAX_BATCH_CHARS} characters of input_text and options in total"),
            Some(json!({ "max_chars": MAX_BATCH_CHARS, "actual_chars": total })),
        ));
    }
    let mut requests = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        match DecisionRequest::parse_at(item, &at(&rloc, index)) {
            Ok(request) => requests.push(request),
            Err(violations) => out.extend(violations),
        }
    }
    if out.is_empty() {
        Ok(requests)
    } else {
        Err(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Value {
        json!({"mode": "boolean_choice", "input_text": text, "options": ["yes", "no"]})
    }

    #[test]
    fn parses_in_order() {
        let r = parse_batch(&json!({"requests": [one("a"), one("b")]})).unwrap_or_default();
        assert_eq!(
            r.iter().map(|r| r.input_text()).collect::<Vec<_>>(),
            ["a", "b"]
        );
    }

    #[test]
    fn locations_are_nested() {
        let body = json!({"requests": [one("a"), one("b"),
            {"mode": "fixed_choice", "input_text": "c", "options": ["x", "\u{1}"]}], "x": 1});
        let v = parse_batch(&body).err().unwrap_or_default();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].loc, [json!("body"), json!("x")]);
        assert_eq!(
            v[1].loc,
            [
                json!("body"),
                json!("requests"),
                json!(2),
                json!("options"),
                json!(1)
            ]
        );
        assert_eq!(v[1].kind, "control_character");
    }

    #[test]
    fn count_and_total_limits() {
        let kinds = |body: Value| -> Vec<&'static str> {
            parse_batch(&body)
                .err()
                .unwrap_or_default()
                .iter()
                .map(|v| v.kind)
                .collect()
        };
        assert_eq!(kinds(json!({"requests": []})), ["too_short"]);
        assert_eq!(kinds(json!({})), ["missing"]);
        assert_eq!(kinds(json!({"requests": {}})), ["list_type"]);
        assert!(kinds(json!({"requests": vec![one("a"); 32]})).is_empty());
        assert_eq!(kinds(json!({"requests": vec![one("a"); 33]})), ["too_long"]);
        // 16 × (8192 + 3 + 2) = 131152 > 131072; 16 × (8185 + 5) = 131040 fits.
        let big = one(&"a".repeat(8192));
        let v = parse_batch(&json!({"requests": vec![big; 16]}))
            .err()
            .unwrap_or_default();
        assert_eq!(v.len(), 1);
        assert_eq!(
            v[0].ctx,
            Some(json!({"max_chars": 131072, "actual_chars": 131152}))
        );
        assert!(kinds(json!({"requests": vec![one(&"a".repeat(8185)); 16]})).is_empty());
        assert_eq!(kinds(json!({"requests": [5]})), ["model_attributes_type"]);
    }
}
