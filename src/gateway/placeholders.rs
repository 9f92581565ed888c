//! Placeholders: each span becomes `<<PHI_<CATEGORY>_<TAG>_<NNNNNN>>>`, where the tag is the
//! first 8 hex digits of SHA-256 of the request id and the index counts spans in text order.
//! The mapping back lives only in this request's memory.

use std::collections::HashMap;
use std::ops::Range;

use sha2::{Digest, Sha256};

use super::policy::GatewaySpan;
use super::{Failure, ReidReason};

/// The redacted prompt and what is needed to restore an answer.
#[derive(Debug)]
pub struct Redaction {
    pub prompt: String,
    /// The request's tag (8 uppercase hex digits).
    pub tag: String,
    /// placeholder → original text
    originals: HashMap<String, String>,
    /// Byte ranges of the placeholders in `prompt`, in order.
    pub placeholder_ranges: Vec<Range<usize>>,
    /// Placeholders per category.
    pub counts: std::collections::BTreeMap<String, usize>,
}

/// The tag of a request id.
pub fn tag(request_id: &str) -> String {
    let d = Sha256::digest(request_id.as_bytes());
    d[..4].iter().map(|b| format!("{b:02X}")).collect()
}

/// Replaces `spans` (checked: in range, on boundaries, not overlapping) by placeholders.
pub fn redact(text: &str, spans: &[GatewaySpan], request_id: &str) -> Redaction {
    let tag = tag(request_id);
    let mut sorted: Vec<&GatewaySpan> = spans.iter().collect();
    sorted.sort_by_key(|s| s.start);
    let mut prompt = String::with_capacity(text.len() + spans.len() * 32);
    let mut originals = HashMap::new();
    let mut ranges = Vec::with_capacity(spans.len());
    let mut counts = std::collections::BTreeMap::new();
    let mut at = 0;
    for (i, s) in sorted.iter().enumerate() {
        prompt.push_str(&text[at..s.start]);
        let placeholder = format!("<<PHI_{}_{}_{:06}>>", s.category, tag, i + 1);
        ranges.push(prompt.len()..prompt.len() + placeholder.len());
        prompt.push_str(&placeholder);
        originals.insert(placeholder, text[s.start..s.end].to_string());
        *counts.entry(s.category.clone()).or_insert(0) += 1;
        at = s.end;
    }
    prompt.push_str(&text[at..]);
    Redaction {
        prompt,
        tag,
        originals,
        placeholder_ranges: ranges,
        counts,
    }
}

impl Redaction {
    /// The placeholders, in text order.
    pub fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.placeholder_ranges
            .iter()
            .map(|r| &self.prompt[r.clone()])
    }

    /// Whether a span the re-scan of the prompt found reaches beyond the placeholders with
    /// anything but whitespace or punctuation: then the prompt still carries an identifier.
    pub fn leaks(&self, start: usize, end: usize) -> bool {
        let p = &self.prompt;
        (start..end.min(p.len()))
            .filter(|i| p.is_char_boundary(*i))
            .filter(|i| !self.placeholder_ranges.iter().any(|r| r.contains(i)))
            .filter_map(|i| p[i..].chars().next())
            .any(char::is_alphanumeric)
    }

    /// Restores the originals in an answer. Fails closed on a well-formed placeholder this
    /// request never issued, and on any leftover trace of one (the tag, or `<<PHI`) that is not
    /// an exact placeholder: a mangled placeholder would otherwise leak into the caller's text
    /// or hide an identifier the endpoint invented.
    pub fn restore(&self, answer: &str) -> Result<String, Failure> {
        let mut out = String::with_capacity(answer.len());
        let mut rest = answer;
        while let Some(i) = rest.find("<<PHI_") {
            out.push_str(&rest[..i]);
            let tail = &rest[i..];
            let Some(end) = tail.find(">>") else {
                return Err(Failure::Reidentification(ReidReason::MangledPlaceholder));
            };
            let candidate = &tail[..end + 2];
            match self.originals.get(candidate) {
                Some(original) => out.push_str(original),
                None if is_well_formed(candidate) => {
                    return Err(Failure::Reidentification(ReidReason::UnknownPlaceholder));
                }
                None => return Err(Failure::Reidentification(ReidReason::MangledPlaceholder)),
            }
            rest = &tail[end + 2..];
        }
        out.push_str(rest);
        // What remains outside exact placeholders must carry no trace of one.
        let mut outside = String::new();
        let mut rest = answer;
        while let Some(i) = rest.find("<<PHI_") {
            outside.push_str(&rest[..i]);
            rest = rest[i..].find(">>").map_or("", |e| &rest[i + e + 2..]);
        }
        outside.push_str(rest);
        let upper = outside.to_ascii_uppercase();
        if upper.contains(&self.tag) || upper.contains("<<PHI") || upper.contains("PHI_") {
            return Err(Failure::Reidentification(ReidReason::MangledPlaceholder));
        }
        Ok(out)
    }
}

/// `<<PHI_<CATEGORY>_<8 hex>_<6 digits>>>`.
fn is_well_formed(s: &str) -> bool {
    let Some(inner) = s.strip_prefix("<<PHI_").and_then(|t| t.strip_suffix(">>")) else {
        return false;
    };
    let parts: Vec<&str> = inner.rsplitn(3, '_').collect();
    matches!(parts.as_slice(), [index, tag, category]
        if index.len() == 6 && index.bytes().all(|b| b.is_ascii_digit())
        && tag.len() == 8 && tag.bytes().all(|b| b.is_ascii_hexdigit())
        && !category.is_empty()
        && category.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans() -> Vec<GatewaySpan> {
        let s = |start, end, c: &str| GatewaySpan {
            start,
            end,
            category: c.into(),
            label: c.into(),
            confidence: 0.99,
        };
        vec![s(11, 23, "PHONE"), s(0, 10, "NAME")]
    }

    #[test]
    fn spans_become_numbered_placeholders_in_text_order() {
        let r = redact("John Smith 617-555-0199 called", &spans(), "req-1");
        let t = tag("req-1");
        assert_eq!(t.len(), 8);
        assert_eq!(
            r.prompt,
            format!("<<PHI_NAME_{t}_000001>> <<PHI_PHONE_{t}_000002>> called")
        );
        assert_eq!(r.placeholders().count(), 2);
        assert_eq!(r.counts.get("NAME"), Some(&1));
        assert!(!r.prompt.contains("John") && !r.prompt.contains("555"));
    }

    #[test]
    fn the_tripwire_ignores_placeholders_and_their_punctuation() {
        let r = redact("John Smith 617-555-0199 called", &spans(), "req-1");
        let first = r.placeholder_ranges[0].clone();
        assert!(!r.leaks(first.start, first.end));
        assert!(!r.leaks(first.start + 3, first.end + 1)); // the placeholder and a space
        assert!(r.leaks(first.start, r.prompt.len())); // up to "called"
        assert!(r.leaks(r.prompt.len() - 6, r.prompt.len()));
        assert!(!r.leaks(5, 5));
    }

    #[test]
    fn only_known_placeholders_are_restored() {
        let r = redact("John Smith 617-555-0199 called", &spans(), "req-1");
        let t = &r.tag;
        let answer = format!("Call <<PHI_NAME_{t}_000001>> at <<PHI_PHONE_{t}_000002>>.");
        assert_eq!(
            r.restore(&answer).unwrap(),
            "Call John Smith at 617-555-0199."
        );
        assert_eq!(r.restore("No placeholders.").unwrap(), "No placeholders.");
        let reason = |a: &str| r.restore(a).unwrap_err().reason();
        assert_eq!(
            reason(&format!("<<PHI_NAME_{t}_000003>>")),
            "unknown_placeholder"
        );
        assert_eq!(
            reason("<<PHI_NAME_0000ABCD_000001>>"),
            "unknown_placeholder"
        );
        assert_eq!(
            reason(&format!("<<PHI_NAME_{t}_000001>")),
            "mangled_placeholder"
        );
        assert_eq!(
            reason(&format!("PHI_NAME_{t}_000001")),
            "mangled_placeholder"
        );
        assert_eq!(
            reason(&format!("<< PHI_NAME_{t}_000001 >>")),
            "mangled_placeholder"
        );
        assert_eq!(
            reason(&format!("<<PHI_NAME_{}_000001>>", t.to_lowercase())),
            "unknown_placeholder"
        );
        assert_eq!(reason("<<PHI_ nonsense >>"), "mangled_placeholder");
    }
}
