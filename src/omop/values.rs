//! JSON values → typed CDM cells, and the deterministic ids.

use chrono::{DateTime, NaiveDate, NaiveDateTime};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::cdm::ColType;
use super::table_builder::Cell;

/// A deterministic 63-bit id: the first 8 bytes of SHA-256 over the parts joined by the unit
/// separator, as a positive integer. The same input always gets the same id, in every load.
pub fn stable_id(parts: &[&str]) -> i64 {
    let mut h = Sha256::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.update([0x1f]);
        }
        h.update(p.as_bytes());
    }
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    (u64::from_be_bytes(b) & 0x7fff_ffff_ffff_ffff) as i64
}

const EPOCH: NaiveDate = NaiveDate::from_ymd_opt(1970, 1, 1).expect("valid date");

/// Days since 1970-01-01 of a date.
pub fn days(d: NaiveDate) -> i32 {
    (d - EPOCH).num_days() as i32
}

/// `YYYY-MM-DD`, or the date part of an ISO date-time.
pub fn parse_date(s: &str) -> Option<NaiveDate> {
    let head = s.get(..10)?;
    if s.len() > 10 && !matches!(s.as_bytes()[10], b'T' | b' ') {
        return None;
    }
    NaiveDate::parse_from_str(head, "%Y-%m-%d").ok()
}

/// RFC 3339, or a naive `YYYY-MM-DD[T ]HH:MM:SS[.f]` (taken as UTC), or a bare date.
pub fn parse_timestamp_micros(s: &str) -> Option<i64> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp_micros());
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(t.and_utc().timestamp_micros());
        }
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp_micros())
}

/// Converts a JSON value to a cell of `ty`; `None` when it does not fit. Null is `Cell::Null`.
pub fn cell(ty: ColType, v: &Value) -> Option<Cell> {
    if v.is_null() {
        return Some(Cell::Null);
    }
    Some(match ty {
        ColType::Int => Cell::Int(v.as_i64()?),
        ColType::Float => Cell::Float(v.as_f64()?),
        ColType::Text => Cell::Text(v.as_str()?.to_string()),
        ColType::Date => Cell::Date(days(parse_date(v.as_str()?)?)),
        ColType::Timestamp => Cell::Timestamp(parse_timestamp_micros(v.as_str()?)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_ids_are_positive_and_deterministic() {
        let a = stable_id(&["note", "n1"]);
        assert_eq!(a, stable_id(&["note", "n1"]));
        assert_ne!(a, stable_id(&["note", "n2"]));
        assert_ne!(stable_id(&["a", "bc"]), stable_id(&["ab", "c"]));
        assert!(a >= 0);
    }

    #[test]
    fn dates_and_timestamps() {
        assert_eq!(parse_date("2024-03-01").map(days), Some(19783));
        assert_eq!(parse_date("2024-03-01T10:00:00Z").map(days), Some(19783));
        assert_eq!(parse_date("2024-03-01x"), None);
        assert_eq!(parse_date("2024-13-01"), None);
        assert_eq!(
            parse_timestamp_micros("1970-01-01T00:00:01Z"),
            Some(1_000_000)
        );
        assert_eq!(
            parse_timestamp_micros("1970-01-01 00:00:02"),
            Some(2_000_000)
        );
        assert_eq!(parse_timestamp_micros("nope"), None);
    }

    #[test]
    fn cells_check_types() {
        assert_eq!(cell(ColType::Int, &Value::from(3)), Some(Cell::Int(3)));
        assert_eq!(cell(ColType::Int, &Value::from("3")), None);
        assert_eq!(cell(ColType::Int, &Value::from(1.5)), None);
        assert_eq!(
            cell(ColType::Float, &Value::from(2)),
            Some(Cell::Float(2.0))
        );
        assert_eq!(cell(ColType::Text, &Value::Null), Some(Cell::Null));
        assert_eq!(cell(ColType::Date, &Value::from("2024-02-30")), None);
    }
}
