//! Safe Harbor's ages over 89 (45 CFR 164.514(b)(2)(i)(C)) in structured fields: every age
//! over 89, and every date element (the year included) that shows one, goes into a single
//! "90 or older" category.
//!
//! - A person's `birthDate` (Patient, RelatedPerson, Practitioner, Person) that makes them 90
//!   or older at the export's reference date (for a patient who died, at `deceasedDateTime`)
//!   becomes the year alone that makes the age exactly 90 then (reference year − 90), marked
//!   with the [`EXTENSION_URL`] extension on `_birthDate`. A year alone is not shifted, so no
//!   shift can bring the true year back; shifting a full date could not hide it anyway.
//! - An Age (`onsetAge`, `abatementAge`, `ageAge`, `performedAge`, …, and an Observation of
//!   the patient's age) of 90 years or more becomes `{"value": 90, "comparator": ">=",
//!   "unit": "years", "code": "a"}`; a Range of ages loses its bounds over 89 (a low bound
//!   becomes 90, a high bound goes, so the range reads "90 or older").
//!
//! Applied only when the policy generalises ages (`AGE = "age_over_89"`, as
//! `hipaa_safe_harbor` does), like the text pipeline's "90+".

use chrono::{Datelike, Duration, NaiveDate};
use serde_json::{Map, Value, json};

/// Marks a `birthDate` that stands for "90 or older" (a FHIR primitive extension).
pub const EXTENSION_URL: &str = "https://phiflow.dev/fhir/StructureDefinition/age-90-or-older";

/// Resource types whose `birthDate` is a person's.
pub const PERSON_TYPES: &[&str] = &["Patient", "RelatedPerson", "Practitioner", "Person"];

/// LOINC codes of an Observation whose value is the patient's age.
const AGE_OBSERVATIONS: &[&str] = &["30525-0", "21612-7", "29553-5"];

/// The first and last day a FHIR date (`YYYY`, `YYYY-MM`, `YYYY-MM-DD…`) can stand for.
pub fn day_range(s: &str) -> Option<(NaiveDate, NaiveDate)> {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if !digits(0..4) {
        return None;
    }
    let y: i32 = s[..4].parse().ok()?;
    if b.len() == 4 {
        return Some((
            NaiveDate::from_ymd_opt(y, 1, 1)?,
            NaiveDate::from_ymd_opt(y, 12, 31)?,
        ));
    }
    if b.get(4) != Some(&b'-') || !digits(5..7) {
        return None;
    }
    let m: u32 = s[5..7].parse().ok()?;
    let first = NaiveDate::from_ymd_opt(y, m, 1)?;
    if b.len() == 7 {
        let next = if m == 12 {
            NaiveDate::from_ymd_opt(y + 1, 1, 1)?
        } else {
            NaiveDate::from_ymd_opt(y, m + 1, 1)?
        };
        return Some((first, next.pred_opt()?));
    }
    if b.get(7) != Some(&b'-') || !digits(8..10) {
        return None;
    }
    let d = NaiveDate::from_ymd_opt(y, m, s[8..10].parse().ok()?)?;
    Some((d, d))
}

/// Whole years from `born` to `at` (0 when `at` is earlier).
pub fn age_at(born: NaiveDate, at: NaiveDate) -> i32 {
    let mut years = at.year() - born.year();
    if (at.month(), at.day()) < (born.month(), born.day()) {
        years -= 1;
    }
    years.max(0)
}

/// Whether someone born on `birth` (a FHIR date, perhaps a year alone) may be over 89 at `at`:
/// the earliest day `birth` can stand for is taken, so a year alone counts as its 1 January.
pub fn over_89(birth: &str, at: NaiveDate) -> bool {
    day_range(birth).is_some_and(|(first, _)| age_at(first, at) > 89)
}

/// `birthDate` of a person resource aggregated when it shows an age over 89 at `reference`
/// (a patient who died: at `deceasedDateTime`, its last possible day). `shift_days` is the
/// subject's date shift: the aggregated year counts from the death date as it will be written,
/// so the output reads "90 at death". Returns whether it changed anything.
pub fn aggregate_birth_date(
    resource: &mut Map<String, Value>,
    reference: NaiveDate,
    shift_days: i64,
) -> bool {
    let Some(birth) = resource.get("birthDate").and_then(Value::as_str) else {
        return false;
    };
    let death = resource.get("deceasedDateTime").and_then(Value::as_str);
    let Some(year) = aggregated_birth_year(birth, death, reference, shift_days) else {
        return false;
    };
    resource.insert("birthDate".into(), Value::String(year));
    mark(resource, "_birthDate");
    true
}

/// The year that stands for `birth` when it shows an age over 89 at `reference` (or at
/// `death`, its last possible day): the year of 90 then, counted from the death date as it
/// will be written (shifted by `shift_days` when it has a month). None when the age is 89 or
/// less, or `birth` is not a date.
pub fn aggregated_birth_year(
    birth: &str,
    death: Option<&str>,
    reference: NaiveDate,
    shift_days: i64,
) -> Option<String> {
    let death =
        death.and_then(|d| day_range(d).map(|(_, last)| (last.min(reference), d.len() > 4)));
    let at = death.map_or(reference, |(d, _)| d);
    if !over_89(birth, at) {
        return None;
    }
    // A death date with a month moves by the shift; a year alone stays.
    let shown_at = match death {
        Some((d, true)) => d + Duration::days(shift_days),
        Some((d, false)) => d,
        None => reference,
    };
    Some(format!("{:04}", shown_at.year() - 90))
}

/// `text` with every standalone `year` (not inside a longer number) written `instead`: the
/// birth year of someone over 89 that a note still shows (Safe Harbor's date generalisation
/// keeps the year of "DOB 03/15/1931"; "born in 1931" may not be detected at all).
pub fn replace_year(text: &str, year: &str, instead: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (at, _) in text.match_indices(year) {
        let before = at.checked_sub(1).and_then(|i| b.get(i));
        let after = b.get(at + year.len());
        if before.is_some_and(u8::is_ascii_digit) || after.is_some_and(u8::is_ascii_digit) {
            continue;
        }
        out.push_str(&text[last..at]);
        out.push_str(instead);
        last = at + year.len();
    }
    out.push_str(&text[last..]);
    out
}

/// Adds the "90 or older" extension to the primitive element `key` (`_birthDate`), keeping
/// what it held.
fn mark(resource: &mut Map<String, Value>, key: &str) {
    let element = resource
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()));
    if !element.is_object() {
        *element = Value::Object(Map::new());
    }
    let Some(element) = element.as_object_mut() else {
        return;
    };
    let ext = element
        .entry("extension")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !ext.is_array() {
        *ext = Value::Array(Vec::new());
    }
    if let Some(list) = ext.as_array_mut()
        && !list.iter().any(|e| e["url"] == EXTENSION_URL)
    {
        list.push(json!({"url": EXTENSION_URL, "valueCode": "90-or-older"}));
    }
}

/// Units of time (UCUM codes and the words `unit` uses) as their number per year.
fn per_year(unit: &str) -> Option<f64> {
    Some(match unit.trim().to_ascii_lowercase().as_str() {
        "a" | "y" | "yr" | "yrs" | "year" | "years" => 1.0,
        "mo" | "month" | "months" => 12.0,
        "wk" | "week" | "weeks" => 365.25 / 7.0,
        "d" | "day" | "days" => 365.25,
        "h" | "hour" | "hours" => 365.25 * 24.0,
        "min" | "minute" | "minutes" => 365.25 * 24.0 * 60.0,
        _ => return None,
    })
}

/// A Quantity's age in whole years, when it is in units of time.
fn years_of(q: &Map<String, Value>) -> Option<f64> {
    let value = q.get("value").and_then(Value::as_f64)?;
    let unit = q
        .get("code")
        .and_then(Value::as_str)
        .and_then(per_year)
        .or_else(|| q.get("unit").and_then(Value::as_str).and_then(per_year))?;
    Some((value / unit).floor())
}

/// An Age of 90 years or more as "90 or older". Returns whether it changed.
pub fn aggregate_age(q: &mut Map<String, Value>) -> bool {
    if !years_of(q).is_some_and(|y| y > 89.0) {
        return false;
    }
    q.insert("value".into(), json!(90));
    q.insert("comparator".into(), json!(">="));
    q.insert("unit".into(), json!("years"));
    q.insert("system".into(), json!("http://unitsofmeasure.org"));
    q.insert("code".into(), json!("a"));
    true
}

/// A Range of ages with bounds over 89 read as "90 or older": a low bound becomes 90 years,
/// a high bound goes. Returns whether it changed.
pub fn aggregate_age_range(r: &mut Map<String, Value>) -> bool {
    let over = |k: &str, r: &Map<String, Value>| {
        r.get(k)
            .and_then(Value::as_object)
            .and_then(years_of)
            .is_some_and(|y| y > 89.0)
    };
    let (low, high) = (over("low", r), over("high", r));
    if high {
        r.remove("high");
    }
    if low {
        r.insert(
            "low".into(),
            json!({"value": 90, "unit": "years", "system": "http://unitsofmeasure.org", "code": "a"}),
        );
    }
    low || high
}

/// Whether an Observation's `code` says its value is the patient's age.
pub fn is_age_observation(resource: &Value) -> bool {
    resource["code"]["coding"].as_array().is_some_and(|c| {
        c.iter().any(|coding| {
            coding["system"] == "http://loinc.org"
                && coding["code"]
                    .as_str()
                    .is_some_and(|code| AGE_OBSERVATIONS.contains(&code))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").expect("date")
    }

    #[test]
    fn ages_count_whole_years_from_the_earliest_possible_birth_day() {
        let at = day("2026-06-30");
        assert!(over_89("1936-06-30", at), "90 on the day");
        assert!(!over_89("1936-07-01", at), "89 until tomorrow");
        assert!(over_89("1931-03-15T08:00:00Z", at));
        assert!(over_89("1936", at), "a year alone may be 1 January");
        assert!(!over_89("1937", at));
        assert!(over_89("1936-06", at));
        assert!(!over_89("1936-07", at));
        assert!(!over_89("not a date", at));
        assert_eq!(
            day_range("2024-02"),
            Some((day("2024-02-01"), day("2024-02-29")))
        );
    }

    #[test]
    fn a_birth_date_over_89_becomes_the_year_of_90_with_the_extension() {
        let at = day("2026-06-30");
        let mut p = json!({"resourceType": "Patient", "birthDate": "1931-03-15",
                           "_birthDate": {"id": "b"}});
        assert!(aggregate_birth_date(
            p.as_object_mut().expect("object"),
            at,
            120
        ));
        assert_eq!(p["birthDate"], "1936");
        assert_eq!(p["_birthDate"]["id"], "b");
        assert_eq!(p["_birthDate"]["extension"][0]["url"], EXTENSION_URL);
        // Again: still the one extension.
        aggregate_birth_date(p.as_object_mut().expect("object"), at, 120);
        assert_eq!(
            p["_birthDate"]["extension"].as_array().map(Vec::len),
            Some(1)
        );

        let mut young = json!({"birthDate": "1936-07-01"});
        assert!(!aggregate_birth_date(
            young.as_object_mut().expect("object"),
            at,
            5
        ));
        assert_eq!(young["birthDate"], "1936-07-01");
    }

    #[test]
    fn a_birth_year_in_text_is_replaced_where_it_stands_alone() {
        assert_eq!(
            replace_year(
                "DOB 1931, born in 1931; MRN 19310, 21931, 1931.",
                "1931",
                "1936"
            ),
            "DOB 1936, born in 1936; MRN 19310, 21931, 1936."
        );
    }

    #[test]
    fn the_dead_are_aged_at_their_death() {
        let at = day("2026-06-30");
        // 95 at death in 1995: 90 at the death date as written (shifted 300 days).
        let mut old = json!({"birthDate": "1900-01-01", "deceasedDateTime": "1995-05-01"});
        assert!(aggregate_birth_date(
            old.as_object_mut().expect("object"),
            at,
            300
        ));
        assert_eq!(old["birthDate"], "1906");
        // 60 at death: the birth date stays (and is shifted like any date).
        let mut young = json!({"birthDate": "1920-01-01", "deceasedDateTime": "1980-01-01"});
        assert!(!aggregate_birth_date(
            young.as_object_mut().expect("object"),
            at,
            300
        ));
    }

    #[test]
    fn ages_and_ranges_of_ages_over_89_read_90_or_older() {
        let mut a = json!({"value": 93, "unit": "years", "system": "http://unitsofmeasure.org", "code": "a"});
        assert!(aggregate_age(a.as_object_mut().expect("object")));
        assert_eq!(a["value"], 90);
        assert_eq!(a["comparator"], ">=");
        let mut months = json!({"value": 1100, "unit": "mo"});
        assert!(aggregate_age(months.as_object_mut().expect("object")));
        assert_eq!(months["code"], "a");
        for keep in [
            json!({"value": 89.9, "code": "a"}),
            json!({"value": 95, "unit": "mg"}),
            json!({"value": 40, "unit": "years"}),
        ] {
            let mut k = keep.clone();
            assert!(!aggregate_age(k.as_object_mut().expect("object")));
            assert_eq!(k, keep);
        }
        let mut r = json!({"low": {"value": 85, "code": "a"}, "high": {"value": 95, "code": "a"}});
        assert!(aggregate_age_range(r.as_object_mut().expect("object")));
        assert_eq!(r, json!({"low": {"value": 85, "code": "a"}}));
        let mut r = json!({"low": {"value": 92, "code": "a"}});
        assert!(aggregate_age_range(r.as_object_mut().expect("object")));
        assert_eq!(r["low"]["value"], 90);
    }
}
