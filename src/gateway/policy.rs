//! Fail-closed checks on the detected spans before anything is redacted or sent.

use super::{BlockReason, Failure};

/// One detected span: byte offsets into the prompt, its category, its confidence.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewaySpan {
    pub start: usize,
    pub end: usize,
    /// Normalized (see [`normalize_category`]).
    pub category: String,
    /// The model's raw label, normalized the same way.
    pub label: String,
    pub confidence: f32,
}

/// Uppercase, without a leading `B-`/`I-`/`E-`/`S-`, every other non-alphanumeric as `_`.
pub fn normalize_category(s: &str) -> String {
    let t = s.trim();
    let t = ["B-", "I-", "E-", "S-", "b-", "i-", "e-", "s-"]
        .iter()
        .find_map(|p| t.strip_prefix(p))
        .unwrap_or(t);
    t.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// Blocks when any span is below `min_confidence`, names a disallowed category (by its
/// category or its raw label), lies outside the text or off a character boundary, or
/// overlaps another.
pub fn check_spans(
    text: &str,
    spans: &[GatewaySpan],
    min_confidence: f32,
    disallowed: &[String],
) -> Result<(), Failure> {
    let block = |r| Err(Failure::Blocked(r));
    for s in spans {
        if s.start >= s.end
            || s.end > text.len()
            || !text.is_char_boundary(s.start)
            || !text.is_char_boundary(s.end)
        {
            return block(BlockReason::InvalidOffsets);
        }
    }
    let mut sorted: Vec<&GatewaySpan> = spans.iter().collect();
    sorted.sort_by_key(|s| (s.start, s.end));
    if sorted.windows(2).any(|w| w[1].start < w[0].end) {
        return block(BlockReason::OverlappingSpans);
    }
    if spans.iter().any(|s| s.confidence < min_confidence) {
        return block(BlockReason::ConfidenceBelowThreshold);
    }
    if spans
        .iter()
        .any(|s| disallowed.iter().any(|d| *d == s.category || *d == s.label))
    {
        return block(BlockReason::DisallowedCategory);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: usize, end: usize, category: &str, confidence: f32) -> GatewaySpan {
        GatewaySpan {
            start,
            end,
            category: category.into(),
            label: category.into(),
            confidence,
        }
    }

    #[test]
    fn categories_normalize() {
        assert_eq!(normalize_category("B-phone number"), "PHONE_NUMBER");
        assert_eq!(normalize_category(" i-Name "), "NAME");
        assert_eq!(normalize_category("email address"), "EMAIL_ADDRESS");
    }

    #[test]
    fn every_rule_fails_closed() {
        let text = "John Smith 617-555-0199";
        let ok = [span(0, 10, "NAME", 0.9), span(11, 23, "PHONE", 0.99)];
        assert_eq!(check_spans(text, &ok, 0.85, &[]), Ok(()));
        let reason = |spans: &[GatewaySpan], disallowed: &[String]| {
            check_spans(text, spans, 0.85, disallowed)
                .unwrap_err()
                .reason()
        };
        assert_eq!(
            reason(&[span(0, 10, "NAME", 0.84)], &[]),
            "redaction_confidence_below_threshold"
        );
        assert_eq!(reason(&ok, &["PHONE".into()]), "disallowed_entity_category");
        assert_eq!(
            reason(&[span(5, 99, "NAME", 0.9)], &[]),
            "invalid_entity_offsets"
        );
        assert_eq!(
            reason(&[span(5, 5, "NAME", 0.9)], &[]),
            "invalid_entity_offsets"
        );
        assert_eq!(
            reason(&[span(0, 10, "NAME", 0.9), span(5, 12, "ID", 0.9)], &[]),
            "overlapping_entity_spans"
        );
        let multi = "é";
        assert_eq!(
            check_spans(multi, &[span(1, 2, "X", 0.9)], 0.0, &[])
                .unwrap_err()
                .reason(),
            "invalid_entity_offsets"
        );
    }
}
