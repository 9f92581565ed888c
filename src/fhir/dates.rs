//! FHIR `date`, `dateTime` and `instant` values shifted by a patient's offset, written back in
//! the precision they came in (`2021`, `2021-04`, `2021-04-02`, `2021-04-02T10:00:00+02:00`).
//! A year alone is what Safe Harbor allows to stay, so it stays.

use chrono::{Datelike, Duration, NaiveDate};

/// Whether `s` has the shape of a FHIR date with at least a month (`YYYY-MM…`).
pub fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 7 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    if !b[5..7].iter().all(u8::is_ascii_digit) {
        return false;
    }
    match b.len() {
        7 => true,
        n if n >= 10 => {
            b[7] == b'-'
                && b[8..10].iter().all(u8::is_ascii_digit)
                && (n == 10 || (b[10] == b'T' && time_ok(&s[11..])))
        }
        _ => false,
    }
}

fn time_ok(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 5
        && b[..2].iter().all(u8::is_ascii_digit)
        && b[2] == b':'
        && b[3..5].iter().all(u8::is_ascii_digit)
        && t[5..]
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ':' | '.' | 'Z' | '+' | '-'))
}

/// `s` shifted by `days`, or None when it is not a date this can shift (a year alone, or a
/// malformed value).
pub fn shift(s: &str, days: i64) -> Option<String> {
    if !is_date(s) {
        return None;
    }
    let year: i32 = s[..4].parse().ok()?;
    let month: u32 = s[5..7].parse().ok()?;
    if s.len() == 7 {
        // A month alone moves by the shift applied to its first day.
        let d = NaiveDate::from_ymd_opt(year, month, 1)? + Duration::days(days);
        return Some(format!("{:04}-{:02}", d.year(), d.month()));
    }
    let day: u32 = s[8..10].parse().ok()?;
    let d = NaiveDate::from_ymd_opt(year, month, day)? + Duration::days(days);
    Some(format!(
        "{:04}-{:02}-{:02}{}",
        d.year(),
        d.month(),
        d.day(),
        &s[10..]
    ))
}

/// The ways a note may write a birth date, for finding it in free text.
pub fn renderings(s: &str) -> Vec<String> {
    if s.len() < 10 || !is_date(s) {
        return Vec::new();
    }
    let (Ok(y), Ok(m), Ok(d)) = (
        s[..4].parse::<i32>(),
        s[5..7].parse::<u32>(),
        s[8..10].parse::<u32>(),
    ) else {
        return Vec::new();
    };
    let Some(date) = NaiveDate::from_ymd_opt(y, m, d) else {
        return Vec::new();
    };
    let month = date.format("%B").to_string();
    let mon = date.format("%b").to_string();
    vec![
        s[..10].to_string(),
        format!("{m:02}/{d:02}/{y}"),
        format!("{m}/{d}/{y}"),
        format!("{d:02}/{m:02}/{y}"),
        format!("{m:02}-{d:02}-{y}"),
        format!("{month} {d}, {y}"),
        format!("{mon} {d}, {y}"),
        format!("{d} {month} {y}"),
        format!("{d} {mon} {y}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_keep_their_precision_and_time() {
        assert_eq!(shift("2021-04-02", 5).as_deref(), Some("2021-04-07"));
        assert_eq!(shift("2021-12-30", 5).as_deref(), Some("2022-01-04"));
        assert_eq!(
            shift("2021-04-02T10:30:00.123+02:00", -2).as_deref(),
            Some("2021-03-31T10:30:00.123+02:00")
        );
        assert_eq!(shift("2021-04", 40).as_deref(), Some("2021-05"));
        assert_eq!(shift("2021", 40), None);
        assert_eq!(shift("2021-13-01", 1), None);
        assert_eq!(shift("1234-5678", 1), None);
        assert!(!is_date("2021-04-02 and more"));
    }

    #[test]
    fn a_birth_date_is_looked_for_as_notes_write_it() {
        let r = renderings("1931-03-15");
        for want in ["03/15/1931", "3/15/1931", "March 15, 1931", "15 Mar 1931"] {
            assert!(r.iter().any(|x| x == want), "{want}");
        }
        assert!(renderings("1931").is_empty());
    }
}
