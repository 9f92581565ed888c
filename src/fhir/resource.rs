//! One FHIR resource de-identified.
//!
//! - Free text (narrative `text.div`, `note`/Annotation text, `comment`, `description`,
//!   `valueString`, `CodeableConcept.text`, `Reference.display`, text/* Attachment `data`…)
//!   goes through the core with the patient's known identifiers, so what the Patient resource
//!   says is removed from every note about them, whatever the model says.
//! - Structured identifiers (names, telecom, address parts, identifier values) are rewritten
//!   by the same operators as text, so a name gets the same surrogate in both.
//! - Dates (`YYYY-MM…`) shift by the patient's keyed offset, the same in every resource type
//!   of that patient; resource ids and references become keyed pseudonyms.
//! - Anything that cannot be de-identified (opaque types, non-text attachments, unsafe or
//!   broken narrative, unknown types) is rejected with a reason, never passed on.

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Map, Value};

use super::dates;
use super::patients::{PatientIndex, identifier_label};
use super::pseudonym::{Pseudonyms, type_and_id};
use super::types;
use super::xhtml;
use crate::deid::canonical_label;
use crate::deid::operators::{self, Plan, Rewriter, Target};
use crate::deidentifier::{DeidError, Deidentifier, KnownIdentifier, Prepared, Subject};
use crate::inference::{InferenceError, ModelHandle};

/// Keys whose string value is free text.
const FREE_TEXT: &[&str] = &[
    "text",
    "comment",
    "description",
    "valueString",
    "valueMarkdown",
    "title",
    "conclusion",
    "summary",
    "patientInstruction",
    "note",
    "reasonText",
    "outcomeText",
];

/// Why a resource was not passed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rejection {
    InvalidJson,
    NotAResource,
    UnknownResourceType,
    OpaqueResourceType,
    BinaryContent,
    UnsafeNarrative,
    MalformedNarrative,
    DeidentificationFailed,
}

impl Rejection {
    pub fn code(self) -> &'static str {
        match self {
            Self::InvalidJson => "invalid_json",
            Self::NotAResource => "not_a_resource",
            Self::UnknownResourceType => "unknown_resource_type",
            Self::OpaqueResourceType => "opaque_resource_type",
            Self::BinaryContent => "binary_content",
            Self::UnsafeNarrative => "unsafe_narrative",
            Self::MalformedNarrative => "malformed_narrative",
            Self::DeidentificationFailed => "deidentification_failed",
        }
    }
}

/// A rejection with the resource type, when known.
#[derive(Clone, Debug)]
pub struct Rejected {
    pub reason: Rejection,
    pub resource_type: Option<String>,
}

/// A de-identified resource.
#[derive(Debug)]
pub struct Done {
    pub resource_type: String,
    pub resource: Value,
    /// The patient's pseudonym, when the resource belongs to one.
    pub patient: Option<String>,
    /// Free-text fields scrubbed, spans rewritten in them, and of those the spans found only
    /// because the patient's structured data named them.
    pub texts: usize,
    pub spans: usize,
    pub known_added: usize,
    /// Fields dropped (photos, attachment URLs, references to nothing de-identifiable).
    pub removed: usize,
    /// The de-identified free text (strings and attachments; not the narrative, which
    /// mostly repeats the structured data), in the resource's order.
    pub free_text: Vec<String>,
}

/// De-identifies resources with prepared options, a loaded model and the pseudonym key.
pub struct ResourceDeidentifier {
    deid: Arc<Deidentifier>,
    prepared: Arc<Prepared>,
    model: Arc<ModelHandle>,
    pseudonyms: Pseudonyms,
}

enum SlotKind {
    Plain,
    Narrative(xhtml::Narrative),
    /// Base64 text of an Attachment whose `size`/`hash` must follow it.
    Attachment,
}

/// A free-text value to scrub, by JSON pointer.
struct Slot {
    pointer: String,
    text: String,
    kind: SlotKind,
}

struct Walk<'a> {
    pseudonyms: &'a Pseudonyms,
    plan: &'a Plan,
    shift_days: i64,
    slots: Vec<Slot>,
    removed: usize,
    rejected: Option<Rejection>,
    /// The identifying values rewritten in the structure: a narrative or note that repeats
    /// them loses them too.
    known: Vec<KnownIdentifier>,
}

impl ResourceDeidentifier {
    pub fn new(
        deid: Arc<Deidentifier>,
        prepared: Arc<Prepared>,
        model: Arc<ModelHandle>,
        pseudonyms: Pseudonyms,
    ) -> Self {
        Self {
            deid,
            prepared,
            model,
            pseudonyms,
        }
    }

    pub fn pseudonyms(&self) -> &Pseudonyms {
        &self.pseudonyms
    }

    /// De-identifies one NDJSON line.
    pub async fn line(&self, line: &str, index: &PatientIndex) -> Result<Done, Rejected> {
        let reject = |reason, resource_type: Option<&str>| Rejected {
            reason,
            resource_type: resource_type.map(String::from),
        };
        let mut resource: Value =
            serde_json::from_str(line).map_err(|_| reject(Rejection::InvalidJson, None))?;
        let Some(rt) = resource["resourceType"].as_str().map(String::from) else {
            return Err(reject(Rejection::NotAResource, None));
        };
        if !resource.is_object() {
            return Err(reject(Rejection::NotAResource, None));
        }
        if !types::is_known(&rt) {
            return Err(reject(Rejection::UnknownResourceType, None));
        }
        if types::OPAQUE_TYPES.contains(&rt.as_str()) {
            return Err(reject(Rejection::OpaqueResourceType, Some(&rt)));
        }
        let patient = patient_of(&rt, &resource);
        // Every patient the resource names is known in its text (a mother's note that names
        // her newborn, a group of patients), its own patient first.
        let mut known: Vec<KnownIdentifier> = patient
            .as_deref()
            .map(|p| index.known(p))
            .unwrap_or_default();
        for other in patients_named(&resource) {
            if patient.as_deref() != Some(other.as_str()) {
                known.extend(index.known(&other));
            }
        }
        // Dates of a resource without a patient still move, keyed by the resource itself.
        let subject = match &patient {
            Some(p) => p.clone(),
            None => format!("{rt}/{}", resource["id"].as_str().unwrap_or_default()),
        };
        let shift_days = self.deid.subject_shift_days(&subject).unwrap_or(0);
        let plan = self.deid.plan_for(&self.prepared, Some(&subject));
        let mut walk = Walk {
            pseudonyms: &self.pseudonyms,
            plan: &plan,
            shift_days,
            slots: Vec::new(),
            removed: 0,
            rejected: None,
            known: Vec::new(),
        };
        walk.object_root(&rt, &mut resource);
        if let Some(reason) = walk.rejected {
            return Err(reject(reason, Some(&rt)));
        }
        let (slots, removed) = (walk.slots, walk.removed);
        known.extend(walk.known);
        known.extend(display_names(&resource));
        known.sort();
        known.dedup();
        let mut done = Done {
            resource_type: rt.clone(),
            resource: Value::Null,
            patient: patient.as_deref().map(|p| self.pseudonyms.id("Patient", p)),
            texts: slots.len(),
            spans: 0,
            known_added: 0,
            removed,
            free_text: Vec::new(),
        };
        let s = Subject {
            id: Some(&subject),
            known: &known,
        };
        for slot in slots {
            let new = self
                .scrub(slot.text, &slot.kind, s, &mut done)
                .await
                .map_err(|reason| reject(reason, Some(&rt)))?;
            let Some(target) = resource.pointer_mut(&slot.pointer) else {
                continue;
            };
            if !matches!(slot.kind, SlotKind::Narrative(_)) {
                done.free_text.push(new.clone());
            }
            if let SlotKind::Attachment = slot.kind {
                let encoded = base64::engine::general_purpose::STANDARD.encode(new.as_bytes());
                *target = Value::String(encoded);
                // The parent attachment's size and hash described the original.
                if let Some(parent) = slot
                    .pointer
                    .rsplit_once('/')
                    .and_then(|(p, _)| resource.pointer_mut(p))
                    .and_then(Value::as_object_mut)
                {
                    parent.insert("size".into(), Value::from(new.len()));
                    parent.remove("hash");
                }
            } else {
                *target = Value::String(new);
            }
        }
        done.resource = resource;
        Ok(done)
    }

    /// One free-text value through the core (waiting out a full queue).
    async fn scrub(
        &self,
        text: String,
        kind: &SlotKind,
        subject: Subject<'_>,
        done: &mut Done,
    ) -> Result<String, Rejection> {
        let failed = |e: DeidError| {
            tracing::warn!(error = %e, "free text could not be de-identified");
            Rejection::DeidentificationFailed
        };
        match kind {
            SlotKind::Plain | SlotKind::Attachment => {
                let d = self
                    .deid
                    .run_patiently(&self.prepared, &self.model, Arc::from(text), subject)
                    .await
                    .map_err(failed)?;
                done.spans += d.entities.len();
                done.known_added += d.known_added;
                Ok(d.text)
            }
            SlotKind::Narrative(n) => {
                let (joined, ranges) = n.joined();
                let found = self
                    .detect_patiently(joined, subject)
                    .await
                    .map_err(failed)?;
                done.spans += found.spans.len();
                done.known_added += found.known_added;
                let plan = self.deid.plan_for(&self.prepared, subject.id);
                let mut rewriter = Rewriter::new(&plan);
                let mut reds = Vec::new();
                let texts: Vec<String> = ranges
                    .iter()
                    .map(|r| {
                        let targets: Vec<Target> = found
                            .spans
                            .iter()
                            .filter(|s| s.end > r.start && s.start < r.end)
                            .map(|s| Target {
                                start: s.start.max(r.start) - r.start,
                                end: s.end.min(r.end) - r.start,
                                label: canonical_label(&s.label),
                            })
                            .collect();
                        rewriter.push(&found.text[r.clone()], &targets, &mut reds)
                    })
                    .collect();
                Ok(n.rebuild(&texts))
            }
        }
    }

    async fn detect_patiently(
        &self,
        text: String,
        subject: Subject<'_>,
    ) -> Result<crate::deidentifier::Detected, DeidError> {
        let text: Arc<str> = Arc::from(text);
        let started = tokio::time::Instant::now();
        loop {
            match self
                .deid
                .detect(&self.prepared, &self.model, text.clone(), subject)
                .await
            {
                Err(DeidError::Inference(InferenceError::QueueFull { retry_after_secs }))
                    if started.elapsed() < std::time::Duration::from_secs(300) =>
                {
                    tokio::time::sleep(std::time::Duration::from_secs(retry_after_secs.max(1)))
                        .await;
                }
                other => return other,
            }
        }
    }
}

/// The source id of the patient a resource belongs to: its own id for a Patient; else the
/// patient its `subject`, `patient`, `beneficiary` or `individual` names; else the first
/// Patient reference anywhere in it.
pub fn patient_of(rt: &str, r: &Value) -> Option<String> {
    if rt == "Patient" {
        return r["id"].as_str().map(String::from);
    }
    let patient_ref = |v: &Value| {
        v["reference"]
            .as_str()
            .and_then(type_and_id)
            .filter(|(t, _)| *t == "Patient")
            .map(|(_, id)| id.to_string())
    };
    for key in ["subject", "patient", "beneficiary", "individual"] {
        if let Some(id) = patient_ref(&r[key]) {
            return Some(id);
        }
    }
    fn any(v: &Value, f: &dyn Fn(&Value) -> Option<String>) -> Option<String> {
        match v {
            Value::Object(m) => f(v).or_else(|| m.values().find_map(|c| any(c, f))),
            Value::Array(a) => a.iter().find_map(|c| any(c, f)),
            _ => None,
        }
    }
    any(r, &patient_ref)
}

/// Words that a patient's `display` holds but that name no one.
const NOT_NAMES: &[&str] = &[
    "patient", "the", "mr", "mrs", "ms", "mx", "dr", "miss", "baby", "unknown", "anonymous",
    "and", "of", "jr", "sr",
];

/// The words of the name a resource gives its patient (`subject.display` and the like): the
/// patient may be outside the export, yet their name goes from the resource's text too.
fn display_names(r: &Value) -> Vec<KnownIdentifier> {
    let mut out = Vec::new();
    for key in ["subject", "patient", "beneficiary", "individual"] {
        let reference = &r[key];
        let to_patient = reference["reference"]
            .as_str()
            .is_none_or(|x| type_and_id(x).is_some_and(|(t, _)| t == "Patient"));
        let Some(display) = reference["display"].as_str().filter(|_| to_patient) else {
            continue;
        };
        let words: Vec<&str> = display
            .split(|c: char| !c.is_alphabetic() && c != '\'' && c != '-')
            .filter(|w| {
                w.chars().count() >= 3
                    && w.chars().next().is_some_and(char::is_uppercase)
                    && !NOT_NAMES.contains(&w.to_lowercase().as_str())
            })
            .collect();
        for (i, w) in words.iter().enumerate() {
            let label = if i + 1 == words.len() {
                "LAST_NAME"
            } else {
                "FIRST_NAME"
            };
            out.push(KnownIdentifier::new(*w, label));
        }
    }
    out
}

/// The source ids of every Patient a resource references (and its own id for a Patient),
/// sorted and without repeats.
pub fn patients_named(r: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some((t, id)) = m
                    .get("reference")
                    .and_then(Value::as_str)
                    .and_then(type_and_id)
                    && t == "Patient"
                {
                    out.push(id.to_string());
                }
                m.values().for_each(|c| walk(c, out));
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if r["resourceType"] == "Patient"
        && let Some(id) = r["id"].as_str()
    {
        out.push(id.to_string());
    }
    walk(r, &mut out);
    out.sort();
    out.dedup();
    out
}

fn pointer_push(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

impl Walk<'_> {
    /// A structured value rewritten as the operators rewrite text of that label.
    fn rewrite(&self, value: &str, label: &str) -> String {
        let target = Target {
            start: 0,
            end: value.len(),
            label: canonical_label(label),
        };
        operators::apply(value, &[target], self.plan).text
    }

    fn rewrite_at(&mut self, v: &mut Value, label: &'static str) {
        if let Some(s) = v.as_str().filter(|s| !s.trim().is_empty()) {
            self.known.push(KnownIdentifier::new(s.trim(), label));
            *v = Value::String(self.rewrite(s, label));
        }
    }

    fn object_root(&mut self, rt: &str, v: &mut Value) {
        if let Some(m) = v.as_object_mut() {
            if let Some(id) = m.get("id").and_then(Value::as_str) {
                let p = self.pseudonyms.id(rt, id);
                m.insert("id".into(), Value::String(p));
            }
            self.fields(m, "", true);
        }
    }

    fn value(&mut self, v: &mut Value, path: &str, key: &str) {
        match v {
            // A contained resource keeps its local id: references to it are local.
            Value::Object(m) => self.fields(m, path, false),
            Value::Array(a) => {
                for (i, item) in a.iter_mut().enumerate() {
                    let p = format!("{path}/{i}");
                    self.value(item, &p, key);
                }
            }
            Value::String(s) => {
                if dates::is_date(s)
                    && let Some(shifted) = dates::shift(s, self.shift_days)
                {
                    *s = shifted;
                }
            }
            _ => {}
        }
    }

    fn fields(&mut self, m: &mut Map<String, Value>, path: &str, root: bool) {
        let is_coding = m.contains_key("system") || m.contains_key("code");
        // An Attachment: text/* data is scrubbed, anything else is opaque.
        if let Some(ct) = m.get("contentType").and_then(Value::as_str) {
            if let Some(data) = m.get("data").and_then(Value::as_str) {
                let text = ct
                    .to_ascii_lowercase()
                    .starts_with("text/")
                    .then(|| {
                        base64::engine::general_purpose::STANDARD
                            .decode(data.trim())
                            .ok()
                    })
                    .flatten()
                    .and_then(|b| String::from_utf8(b).ok());
                match text {
                    Some(text) => self.slots.push(Slot {
                        pointer: pointer_push(path, "data"),
                        text,
                        kind: SlotKind::Attachment,
                    }),
                    None => {
                        self.rejected = Some(Rejection::BinaryContent);
                        return;
                    }
                }
            }
            if m.remove("url").is_some() {
                self.removed += 1;
            }
        } else if m.get("data").is_some_and(Value::is_string) {
            // SampledData's `data` is numbers; a Signature's is opaque and dropped; any other
            // `data` (an Attachment that does not say what it holds) is not passed on.
            let sampled = m.contains_key("origin") || m.contains_key("dimensions");
            let signature = m.contains_key("sigFormat") || m.contains_key("who");
            if signature {
                m.remove("data");
                self.removed += 1;
            } else if !sampled {
                self.rejected = Some(Rejection::BinaryContent);
                return;
            }
        }
        let keys: Vec<String> = m.keys().cloned().collect();
        for key in keys {
            let p = pointer_push(path, &key);
            match key.as_str() {
                "photo" => {
                    m.remove(&key);
                    self.removed += 1;
                    continue;
                }
                // A string is a Reference's reference; an object (Consent's
                // `actor.reference`) is a Reference itself, walked like any element.
                "reference" if m.get(&key).is_some_and(Value::is_string) => {
                    match m
                        .get(&key)
                        .and_then(Value::as_str)
                        .map(|r| self.pseudonyms.reference(r))
                    {
                        Some(Some(r)) => {
                            m.insert(key, Value::String(r));
                        }
                        Some(None) => {
                            m.remove(&key);
                            self.removed += 1;
                        }
                        None => {}
                    }
                    continue;
                }
                _ => {}
            }
            let Some(v) = m.get_mut(&key) else { continue };
            match key.as_str() {
                "resourceType" | "data" | "contentType" => {}
                "id" if root => {}
                "name" | "valueHumanName" if !v.is_string() => self.names(v, &p),
                // A name as a plain string (an organisation, a location, a device) may name
                // a person or a place: free text.
                "name" | "authorString" => self.free_text(v, p),
                "telecom" | "valueContactPoint" => self.telecoms(v, &p),
                "address" | "valueAddress" => self.addresses(v, &p),
                "identifier" | "valueIdentifier" => self.identifiers(v, &p),
                "div" => match v.as_str().map(xhtml::parse) {
                    Some(Ok(n)) => self.slots.push(Slot {
                        pointer: p,
                        text: String::new(),
                        kind: SlotKind::Narrative(n),
                    }),
                    Some(Err(xhtml::XhtmlError::Unsafe(_))) => {
                        self.rejected = Some(Rejection::UnsafeNarrative)
                    }
                    Some(Err(xhtml::XhtmlError::Malformed)) => {
                        self.rejected = Some(Rejection::MalformedNarrative)
                    }
                    None => {}
                },
                "display" if !is_coding => self.free_text(v, p),
                k if FREE_TEXT.contains(&k) && v.is_string() => self.free_text(v, p),
                _ => self.value(v, &p, &key),
            }
            if self.rejected.is_some() {
                return;
            }
        }
    }

    fn free_text(&mut self, v: &Value, pointer: String) {
        if let Some(s) = v.as_str().filter(|s| !s.trim().is_empty()) {
            self.slots.push(Slot {
                pointer,
                text: s.to_string(),
                kind: SlotKind::Plain,
            });
        }
    }

    fn each<'v>(v: &'v mut Value) -> Vec<&'v mut Value> {
        match v {
            Value::Array(a) => a.iter_mut().collect(),
            Value::Object(_) => vec![v],
            _ => Vec::new(),
        }
    }

    fn names(&mut self, v: &mut Value, path: &str) {
        let array = v.is_array();
        for (i, n) in Self::each(v).into_iter().enumerate() {
            let p = if array {
                format!("{path}/{i}")
            } else {
                path.to_string()
            };
            self.rewrite_at(&mut n["family"], "LAST_NAME");
            if let Some(given) = n.get_mut("given").and_then(Value::as_array_mut) {
                for g in given {
                    self.rewrite_at(g, "FIRST_NAME");
                }
            }
            self.rewrite_at(&mut n["text"], "NAME");
            if let Some(o) = n.as_object_mut() {
                o.retain(|_, v| !v.is_null());
                self.fields_except(o, &p, &["family", "given", "text"]);
            }
        }
    }

    fn telecoms(&mut self, v: &mut Value, path: &str) {
        let array = v.is_array();
        for (i, t) in Self::each(v).into_iter().enumerate() {
            let p = if array {
                format!("{path}/{i}")
            } else {
                path.to_string()
            };
            let label = match t["system"].as_str() {
                Some("email") => "EMAIL",
                Some("fax") => "FAX",
                Some("url") => "URL",
                Some("phone" | "sms" | "pager") => "PHONE",
                _ => "OTHER_IDENTIFIER",
            };
            self.rewrite_at(&mut t["value"], label);
            if let Some(o) = t.as_object_mut() {
                o.retain(|_, v| !v.is_null());
                self.fields_except(o, &p, &["value"]);
            }
        }
    }

    fn addresses(&mut self, v: &mut Value, path: &str) {
        let array = v.is_array();
        for (i, a) in Self::each(v).into_iter().enumerate() {
            let p = if array {
                format!("{path}/{i}")
            } else {
                path.to_string()
            };
            if let Some(lines) = a.get_mut("line").and_then(Value::as_array_mut) {
                for l in lines {
                    self.rewrite_at(l, "STREET_ADDRESS");
                }
            }
            self.rewrite_at(&mut a["city"], "CITY");
            self.rewrite_at(&mut a["district"], "CITY");
            self.rewrite_at(&mut a["postalCode"], "ZIP_CODE");
            self.rewrite_at(&mut a["text"], "STREET_ADDRESS");
            if let Some(o) = a.as_object_mut() {
                o.retain(|_, v| !v.is_null());
                self.fields_except(o, &p, &["line", "city", "district", "postalCode", "text"]);
            }
        }
    }

    fn identifiers(&mut self, v: &mut Value, path: &str) {
        let array = v.is_array();
        for (i, id) in Self::each(v).into_iter().enumerate() {
            let p = if array {
                format!("{path}/{i}")
            } else {
                path.to_string()
            };
            let label = identifier_label(id);
            self.rewrite_at(&mut id["value"], label);
            if let Some(o) = id.as_object_mut() {
                o.retain(|_, v| !v.is_null());
                self.fields_except(o, &p, &["value"]);
            }
        }
    }

    /// The other fields of an element whose identifying fields were just rewritten.
    fn fields_except(&mut self, m: &mut Map<String, Value>, path: &str, done: &[&str]) {
        let mut rest: Map<String, Value> = Map::new();
        let keys: Vec<String> = m
            .keys()
            .filter(|k| !done.contains(&k.as_str()))
            .cloned()
            .collect();
        for k in keys {
            if let Some(v) = m.remove(&k) {
                rest.insert(k, v);
            }
        }
        self.fields(&mut rest, path, false);
        m.extend(rest);
    }
}
