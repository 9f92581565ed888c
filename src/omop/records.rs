//! One `records_jsonl` line → one record: a grounded note (NLP output with offsets and
//! concepts) or, when the object has a `table` key, one plain CDM row. Field aliases follow
//! the original service: the first alias present wins.

use serde_json::{Map, Value};

use super::cdm::{self, Table};

/// A line that is not a record at all: the whole request is refused (422 naming the line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    pub kind: &'static str,
    pub msg: &'static str,
}

/// A caller identifier: integers are used as CDM ids as they are; strings are hashed into a
/// deterministic id and kept as the source value so results can name them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallerId {
    Int(i64),
    Text(String),
}

#[derive(Debug)]
pub enum Record {
    Note(Box<GroundedNote>),
    Row {
        table: &'static Table,
        fields: Map<String, Value>,
    },
}

#[derive(Debug)]
pub struct GroundedNote {
    pub note: CallerId,
    pub person: CallerId,
    pub text: Option<String>,
    /// Raw date value; parsed (and its absence reported) by the builder.
    pub date: Option<Value>,
    pub visit: Option<CallerId>,
    pub hash: Option<String>,
    pub entities: Vec<Map<String, Value>>,
}

const NOTE_ID: &[&str] = &["note_id", "document_id", "doc_id", "source_document_id"];
const PERSON_ID: &[&str] = &[
    "person_id",
    "patient_id",
    "person_source_value",
    "subject_id",
];
const TEXT: &[&str] = &["note_text", "text", "document_text", "source_text"];
const DATE: &[&str] = &["note_date", "document_date", "date"];
const VISIT: &[&str] = &["visit_id", "encounter_id", "visit_source_value"];
const HASH: &[&str] = &["source_note_hash", "note_hash", "document_hash"];
const ENTITIES: &[&str] = &["entities", "clinical_entities", "spans", "grounded_spans"];

/// The first alias whose value is present and not null.
pub fn first<'a>(obj: &'a Map<String, Value>, aliases: &[&str]) -> Option<&'a Value> {
    aliases
        .iter()
        .find_map(|k| obj.get(*k).filter(|v| !v.is_null()))
}

/// Parses one non-blank line.
pub fn parse_line(line_no: usize, line: &str) -> Result<Record, LineError> {
    let err = |kind, msg| LineError {
        line: line_no,
        kind,
        msg,
    };
    let value: Value =
        serde_json::from_str(line).map_err(|_| err("json_invalid", "Line is not valid JSON"))?;
    let Value::Object(mut obj) = value else {
        return Err(err("model_type", "Line is not a JSON object"));
    };
    if let Some(table) = obj.remove("table") {
        let table = table.as_str().and_then(cdm::plain_table).ok_or(err(
            "unknown_table",
            "`table` names no loadable CDM 5.4 table",
        ))?;
        return Ok(Record::Row { table, fields: obj });
    }
    let id = |aliases: &[&str], what: &'static str| -> Result<CallerId, LineError> {
        match first(&obj, aliases) {
            None => Err(err("missing", what)),
            Some(v) => caller_id(v).ok_or(err("invalid_id", what)),
        }
    };
    let note = id(
        NOTE_ID,
        "A note needs a note id (non-negative integer or non-empty string)",
    )?;
    let person = id(
        PERSON_ID,
        "A note needs a person id (non-negative integer or non-empty string)",
    )?;
    let visit = match first(&obj, VISIT) {
        None => None,
        Some(v) => Some(caller_id(v).ok_or(err(
            "invalid_id",
            "A visit id is a non-negative integer or a non-empty string",
        ))?),
    };
    let text = match first(&obj, TEXT) {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(err("string_type", "Note text must be a string")),
    };
    let hash = match first(&obj, HASH) {
        None => None,
        Some(Value::String(s)) if is_sha256_hex(s) => Some(s.to_ascii_lowercase()),
        Some(_) => {
            return Err(err(
                "invalid_hash",
                "A note hash must be 64 hexadecimal characters (SHA-256)",
            ));
        }
    };
    let entities = match first(&obj, ENTITIES) {
        None => Vec::new(),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::Object(m) => out.push(m.clone()),
                    _ => return Err(err("model_type", "Every entity must be a JSON object")),
                }
            }
            out
        }
        Some(_) => return Err(err("list_type", "Entities must be a JSON array")),
    };
    let date = first(&obj, DATE).cloned();
    Ok(Record::Note(Box::new(GroundedNote {
        note,
        person,
        text,
        date,
        visit,
        hash,
        entities,
    })))
}

fn caller_id(v: &Value) -> Option<CallerId> {
    match v {
        Value::Number(n) => n.as_i64().filter(|i| *i >= 0).map(CallerId::Int),
        Value::String(s) if !s.trim().is_empty() => Some(CallerId::Text(s.clone())),
        _ => None,
    }
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Entity field aliases.
pub mod entity {
    pub const START: &[&str] = &["start", "begin", "start_offset"];
    pub const END: &[&str] = &["end", "end_offset"];
    pub const DOMAIN: &[&str] = &[
        "domain_id",
        "omop_domain",
        "domain",
        "entity_label",
        "label",
    ];
    pub const CONCEPT: &[&str] = &[
        "concept_id",
        "standard_concept_id",
        "target_concept_id",
        "note_nlp_concept_id",
    ];
    pub const SOURCE_CONCEPT: &[&str] = &["source_concept_id", "note_nlp_source_concept_id"];
    pub const VOCABULARY: &[&str] = &["vocabulary_id", "source_vocabulary_id", "system"];
    pub const CODE: &[&str] = &["concept_code", "code", "source_code"];
    pub const NAME: &[&str] = &["concept_name", "display"];
    pub const TEXT: &[&str] = &["lexical_variant", "normalized_text", "text", "mention"];
    pub const NEGATION: &[&str] = &["negation", "polarity", "negated"];
    pub const TEMPORALITY: &[&str] = &["temporality", "term_temporal"];
    pub const CERTAINTY: &[&str] = &["certainty"];
    pub const EXPERIENCER: &[&str] = &["experiencer", "subject"];
    pub const TERM_EXISTS: &[&str] = &["term_exists"];
    /// Nested objects searched after the entity itself.
    pub const NESTED: &[&str] = &["metadata", "coding", "assertion", "attributes"];
}

/// An entity field by alias, looked up in the entity and then in its nested objects.
pub fn entity_field<'a>(e: &'a Map<String, Value>, aliases: &[&str]) -> Option<&'a Value> {
    first(e, aliases).or_else(|| {
        entity::NESTED.iter().find_map(|k| match e.get(*k) {
            Some(Value::Object(m)) => first(m, aliases),
            Some(Value::Array(items)) => items
                .iter()
                .find_map(|i| i.as_object().and_then(|m| first(m, aliases))),
            _ => None,
        })
    })
}

/// The CDM domain for an entity domain label, by the original service's aliases.
pub fn canonical_domain(label: &str) -> Option<&'static str> {
    let l = label.trim().to_ascii_lowercase().replace([' ', '-'], "_");
    Some(match l.as_str() {
        "condition" | "diagnosis" | "disease" | "disorder" | "problem" | "symptom" => "Condition",
        "drug" | "medication" | "rx" | "treatment" => "Drug",
        "lab" | "lab_value" | "measurement" | "vital" | "vital_sign" | "vitals" => "Measurement",
        "procedure" | "surgery" | "operation" => "Procedure",
        "observation" | "social_history" | "finding" => "Observation",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_key_makes_a_plain_row() {
        let r = parse_line(1, r#"{"table":"person","person_id":1}"#).unwrap();
        assert!(matches!(r, Record::Row { table, .. } if table.name == "person"));
        let e = parse_line(4, r#"{"table":"phiflow_note_hash"}"#).unwrap_err();
        assert_eq!((e.line, e.kind), (4, "unknown_table"));
    }

    #[test]
    fn aliases_pick_the_first_present() {
        let r = parse_line(
            1,
            r#"{"document_id":"n1","patient_id":7,"text":"x","date":"2024-01-02","encounter_id":"v","spans":[{"start":0,"end":1}]}"#,
        )
        .unwrap();
        let Record::Note(n) = r else { panic!() };
        assert_eq!(n.note, CallerId::Text("n1".into()));
        assert_eq!(n.person, CallerId::Int(7));
        assert_eq!(n.visit, Some(CallerId::Text("v".into())));
        assert_eq!(n.entities.len(), 1);
    }

    #[test]
    fn non_records_are_line_errors() {
        assert_eq!(parse_line(2, "{").unwrap_err().kind, "json_invalid");
        assert_eq!(parse_line(3, "[1]").unwrap_err().kind, "model_type");
        assert_eq!(
            parse_line(5, r#"{"person_id":1}"#).unwrap_err().kind,
            "missing"
        );
        assert_eq!(
            parse_line(6, r#"{"note_id":-1,"person_id":1}"#)
                .unwrap_err()
                .kind,
            "invalid_id"
        );
        assert_eq!(
            parse_line(7, r#"{"note_id":1,"person_id":1,"note_hash":"abc"}"#)
                .unwrap_err()
                .kind,
            "invalid_hash"
        );
    }

    #[test]
    fn domains_map_by_alias() {
        assert_eq!(canonical_domain("Diagnosis"), Some("Condition"));
        assert_eq!(canonical_domain("vital-sign"), Some("Measurement"));
        assert_eq!(canonical_domain("gene"), None);
    }

    #[test]
    fn entity_fields_fall_back_to_nested_objects() {
        let e: Map<String, Value> =
            serde_json::from_str(r#"{"start":1,"metadata":{"negation":"negated"},"coding":[{"system":"SNOMED","code":"123"}]}"#).unwrap();
        assert_eq!(
            entity_field(&e, entity::NEGATION),
            Some(&Value::from("negated"))
        );
        assert_eq!(
            entity_field(&e, entity::VOCABULARY),
            Some(&Value::from("SNOMED"))
        );
        assert_eq!(entity_field(&e, entity::CODE), Some(&Value::from("123")));
    }
}
