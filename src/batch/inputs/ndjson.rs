//! NDJSON input (one JSON object per line; blank lines skipped). The columns are the keys seen
//! in the input, in order of first appearance; a value is kept as written: a string as its
//! text, anything else (number, boolean, object, array) as its JSON text, null or absent as null.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::text::{self, Cursor, Rows};

/// A JSON object's entries in the order written.
#[derive(Debug)]
struct Object<V>(Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Object<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Visit<V> {
            type Value = Object<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = m.next_entry::<String, V>()? {
                    entries.push(entry);
                }
                Ok(Object(entries))
            }
        }
        d.deserialize_map(Visit(PhantomData))
    }
}

/// Why a line is not a row, without its content.
fn line_error(line: u64, e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let what = match e.classify() {
        Category::Data => "is not a JSON object",
        Category::Syntax | Category::Eof => "is not valid JSON",
        Category::Io => "cannot be read",
    };
    format!("line {line} {what} (column {})", e.column())
}

/// Calls `each(line_number, line)` for every non-blank line.
fn for_lines(
    path: &Path,
    gz: bool,
    mut each: impl FnMut(u64, &str) -> Result<bool, String>,
) -> Result<(), String> {
    let mut input = text::open(path, gz)?;
    let mut buf = String::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        line += 1;
        match input.read_line(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(format!("line {line} is not valid UTF-8"));
            }
            Err(e) => return Err(format!("cannot read line {line}: {e}")),
        }
        if !buf.trim().is_empty() && !each(line, &buf)? {
            return Ok(());
        }
    }
}

/// Checks every line and returns the keys (in order of first appearance) and the row count.
pub fn scan(path: &Path, gz: bool, keys: &mut Vec<String>) -> Result<u64, String> {
    let mut rows = 0u64;
    let mut seen: std::collections::HashSet<String> = keys.iter().cloned().collect();
    for_lines(path, gz, |line, s| {
        let obj: Object<IgnoredAny> = serde_json::from_str(s).map_err(|e| line_error(line, &e))?;
        for (k, _) in obj.0 {
            if !seen.contains(&k) {
                seen.insert(k.clone());
                keys.push(k);
            }
        }
        rows += 1;
        Ok(true)
    })?;
    Ok(rows)
}

/// Reads the owned rows (`ranges`, by row number) into batches of `batch_rows` rows.
pub fn read(
    path: &Path,
    gz: bool,
    schema: &SchemaRef,
    ranges: &[Range<u64>],
    batch_rows: usize,
    mut emit: impl FnMut(RecordBatch) -> Result<(), String>,
) -> Result<(), String> {
    let index: std::collections::HashMap<&str, usize> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name().as_str(), i))
        .collect();
    let mut cursor = Cursor::new(ranges);
    let mut rows = Rows::new(schema.clone());
    let mut row = 0u64;
    let mut values: Vec<Option<String>> = vec![None; index.len()];
    for_lines(path, gz, |line, s| {
        let owned = cursor.owns(row);
        row += 1;
        if !owned {
            return Ok(!cursor.done());
        }
        let obj: Object<&RawValue> = serde_json::from_str(s).map_err(|e| line_error(line, &e))?;
        values.iter_mut().for_each(|v| *v = None);
        for (k, raw) in obj.0 {
            let Some(&col) = index.get(k.as_str()) else {
                return Err(format!("line {line} has a key the scan did not see"));
            };
            values[col] = value_text(raw).map_err(|e| line_error(line, &e))?;
        }
        rows.push(values.iter().map(|v| v.as_deref()));
        if rows.len() >= batch_rows {
            emit(rows.take()?)?;
        }
        Ok(true)
    })?;
    if !rows.is_empty() {
        emit(rows.take()?)?;
    }
    Ok(())
}

/// A value as a column holds it: strings unescaped, null as null, the rest as written.
fn value_text(raw: &RawValue) -> Result<Option<String>, serde_json::Error> {
    let s = raw.get();
    Ok(match s.as_bytes().first() {
        Some(b'"') => Some(serde_json::from_str::<String>(s)?),
        _ if s == "null" => None,
        _ => Some(s.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_kept_as_written() {
        let obj: Object<&RawValue> = serde_json::from_str(
            r#"{"b": "x\ny", "a": 7, "c": null, "d": {"z": 1, "a": [1.50]}, "e": true}"#,
        )
        .unwrap();
        let got: Vec<(String, Option<String>)> = obj
            .0
            .into_iter()
            .map(|(k, v)| (k, value_text(v).unwrap()))
            .collect();
        let want = [
            ("b", Some("x\ny")),
            ("a", Some("7")),
            ("c", None),
            ("d", Some(r#"{"z": 1, "a": [1.50]}"#)),
            ("e", Some("true")),
        ];
        assert_eq!(got, want.map(|(k, v)| (k.to_string(), v.map(String::from))));
    }

    #[test]
    fn a_bad_line_is_named_without_its_content() {
        let e = serde_json::from_str::<Object<IgnoredAny>>(r#"["Secret Name"]"#).unwrap_err();
        let msg = line_error(3, &e);
        assert!(msg.starts_with("line 3 is not a JSON object"), "{msg}");
        let e = serde_json::from_str::<Object<IgnoredAny>>(r#"{"a": "Secret"#).unwrap_err();
        let msg = line_error(4, &e);
        assert!(
            msg.starts_with("line 4 is not valid JSON") && !msg.contains("Secret"),
            "{msg}"
        );
    }
}
