//! The request-validation violation that the REST routes, the decision library and its MCP tool
//! all report: one entry of the interface's HTTPValidationError `detail`. It lives outside `api`
//! so the libraries that share it do not depend on the HTTP layer.

use serde::Serialize;
use serde_json::Value;

/// Longest location segment echoed back, in characters: an unknown key is caller input, and the
/// README promises input is never echoed whole.
pub const MAX_LOC_CHARS: usize = 64;

/// One entry of `detail`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Violation {
    pub loc: Vec<Value>,
    pub msg: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctx: Option<Value>,
}

impl Violation {
    /// A violation at `loc`. String segments are capped and escaped (see [`loc_segment`]), so a
    /// caller's unknown key can neither be echoed whole nor carry markup or control characters.
    pub fn new(
        loc: &[Value],
        kind: &'static str,
        msg: impl Into<String>,
        ctx: Option<Value>,
    ) -> Self {
        Self {
            loc: loc
                .iter()
                .map(|seg| match seg {
                    Value::String(s) => Value::String(loc_segment(s)),
                    other => other.clone(),
                })
                .collect(),
            msg: msg.into(),
            kind,
            ctx,
        }
    }
}

/// A location segment as echoed: ASCII letters, digits, space and `_ - . / : @ $ #` stay; every
/// other character becomes `\u{hex}`; more than [`MAX_LOC_CHARS`] output characters end in `…`.
pub fn loc_segment(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || " _-./:@$#".contains(c);
    if s.len() <= MAX_LOC_CHARS && s.chars().all(plain) {
        return s.to_owned();
    }
    let mut out = String::new();
    for c in s.chars() {
        let piece = if plain(c) {
            c.to_string()
        } else {
            format!("\\u{{{:x}}}", u32::from(c))
        };
        if out.chars().count() + piece.chars().count() > MAX_LOC_CHARS {
            out.push('…');
            break;
        }
        out.push_str(&piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The decision library (REST, library and MCP alike) must not reach into the HTTP layer.
    #[test]
    fn decisions_do_not_depend_on_api() {
        fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).expect("dir").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    sources(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let mut files = Vec::new();
        sources(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/decisions"),
            &mut files,
        );
        assert!(!files.is_empty());
        for file in files {
            let text = std::fs::read_to_string(&file).expect("source");
            assert!(
                !text.contains("crate::api"),
                "{} depends on api",
                file.display()
            );
        }
    }

    #[test]
    fn declared_names_pass_unchanged() {
        for s in ["body", "model_name", "webhook", "ConceptSets", "a.b-c/d"] {
            assert_eq!(loc_segment(s), s);
        }
        let v = Violation::new(
            &[json!("body"), json!(3), json!("text")],
            "missing",
            "m",
            None,
        );
        assert_eq!(v.loc, vec![json!("body"), json!(3), json!("text")]);
    }

    #[test]
    fn unknown_keys_are_capped_and_escaped() {
        let long = "PATIENT_JANE_DOE_".repeat(50);
        let seg = loc_segment(&long);
        assert!(seg.chars().count() <= MAX_LOC_CHARS + 1 && seg.ends_with('…'));
        assert!(!seg.contains(&long[..100]));
        assert_eq!(loc_segment("<script>"), "\\u{3c}script\\u{3e}");
        assert_eq!(loc_segment("a\"\n"), "a\\u{22}\\u{a}");
        let v = Violation::new(&[json!("body"), json!(long)], "extra_forbidden", "m", None);
        assert!(v.loc[1].as_str().is_some_and(|s| s.len() < 80));
    }
}
