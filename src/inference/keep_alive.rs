//! `keep_alive`: how long a model stays loaded after a request.

use std::time::Duration;

/// A parsed keep-alive value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepAlive {
    /// Unload as soon as no request uses the model.
    UnloadNow,
    /// Unload after this much idle time.
    For(Duration),
    /// Never unload for idleness (LRU eviction still applies).
    Forever,
}

impl KeepAlive {
    /// Parses a JSON value: seconds (number or numeric string), a duration string made of
    /// `<number><unit>` pieces (`ms`, `s`, `m`, `h`, `d`; e.g. `1h30m`), or `-1`/`forever`.
    /// `null` is the caller's "server default" and is handled before this.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, &'static str> {
        match value {
            serde_json::Value::Number(n) => {
                let secs = n.as_f64().ok_or("keep_alive must be a finite number")?;
                Self::from_seconds(secs)
            }
            serde_json::Value::String(s) => Self::parse(s),
            _ => Err("keep_alive must be a number, a string or null"),
        }
    }

    /// Parses the string forms.
    pub fn parse(raw: &str) -> Result<Self, &'static str> {
        let s = raw.trim().to_ascii_lowercase();
        if s.is_empty() {
            return Err("keep_alive must not be blank");
        }
        if matches!(
            s.as_str(),
            "forever" | "infinite" | "infinity" | "-1" | "never"
        ) {
            return Ok(Self::Forever);
        }
        if let Ok(secs) = s.parse::<f64>() {
            return Self::from_seconds(secs);
        }
        let mut total = 0.0f64;
        let mut rest = s.as_str();
        while !rest.is_empty() {
            let num_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            if num_len == 0 {
                return Err("keep_alive duration must look like 30s, 5m, 1h30m or 500ms");
            }
            let number: f64 = rest[..num_len]
                .parse()
                .map_err(|_| "keep_alive has an invalid number")?;
            rest = &rest[num_len..];
            let unit_len = rest
                .find(|c: char| !c.is_ascii_alphabetic())
                .unwrap_or(rest.len());
            let factor = match &rest[..unit_len] {
                "ms" => 0.001,
                "s" => 1.0,
                "m" => 60.0,
                "h" => 3600.0,
                "d" => 86400.0,
                _ => return Err("keep_alive unit must be one of ms, s, m, h, d"),
            };
            rest = &rest[unit_len..];
            total += number * factor;
        }
        Self::from_seconds(total)
    }

    fn from_seconds(secs: f64) -> Result<Self, &'static str> {
        if !secs.is_finite() {
            return Err("keep_alive must be finite");
        }
        if secs == -1.0 {
            return Ok(Self::Forever);
        }
        if secs < 0.0 {
            return Err("keep_alive must be non-negative, or -1 for forever");
        }
        if secs > 10.0 * 365.0 * 86400.0 {
            return Ok(Self::Forever);
        }
        if secs == 0.0 {
            return Ok(Self::UnloadNow);
        }
        Ok(Self::For(Duration::from_secs_f64(secs)))
    }

    /// Seconds for reports: `None` for forever.
    pub fn as_secs_f64(&self) -> Option<f64> {
        match self {
            Self::UnloadNow => Some(0.0),
            Self::For(d) => Some(d.as_secs_f64()),
            Self::Forever => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_all_forms() {
        assert_eq!(KeepAlive::from_json(&json!(0)), Ok(KeepAlive::UnloadNow));
        assert_eq!(KeepAlive::from_json(&json!(-1)), Ok(KeepAlive::Forever));
        assert_eq!(
            KeepAlive::from_json(&json!(1.5)),
            Ok(KeepAlive::For(Duration::from_millis(1500)))
        );
        assert_eq!(
            KeepAlive::from_json(&json!("30")),
            Ok(KeepAlive::For(Duration::from_secs(30)))
        );
        assert_eq!(
            KeepAlive::from_json(&json!("500ms")),
            Ok(KeepAlive::For(Duration::from_millis(500)))
        );
        assert_eq!(
            KeepAlive::from_json(&json!("1h30m")),
            Ok(KeepAlive::For(Duration::from_secs(5400)))
        );
        assert_eq!(
            KeepAlive::from_json(&json!("5M")),
            Ok(KeepAlive::For(Duration::from_secs(300)))
        );
        assert_eq!(
            KeepAlive::from_json(&json!("forever")),
            Ok(KeepAlive::Forever)
        );
        assert_eq!(KeepAlive::from_json(&json!("-1")), Ok(KeepAlive::Forever));
    }

    #[test]
    fn rejects_bad_values() {
        for bad in [
            json!(-2),
            json!("-5"),
            json!("5x"),
            json!("abc"),
            json!(""),
            json!(true),
            json!([1]),
            json!("m5"),
        ] {
            assert!(KeepAlive::from_json(&bad).is_err(), "{bad}");
        }
    }
}
