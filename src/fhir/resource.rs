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
use chrono::NaiveDate;
use serde_json::{Map, Value};

use super::ages;
use super::dates;
use super::patients::{PatientIndex, identifier_label_of};
use super::pseudonym::{Pseudonyms, type_and_id};
use super::types;
use super::xhtml;
use crate::deid::canonical_label;
use crate::deid::operators::{self, Plan, Rewriter, Target};
use crate::deid::policy::Action;
use crate::deidentifier::{
    DeidError, DeidOptions, Deidentifier, KnownIdentifier, Prepared, Subject,
};
use crate::inference::{KeepAlive, ModelHandle};

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

/// The label of a plain string element that holds an identifier: Safe Harbor (I) health plan
/// numbers and (M) device identifiers and serial numbers.
fn string_identifier(key: &str) -> Option<&'static str> {
    match key {
        "subscriberId" => Some("HEALTH_PLAN_NUMBER"),
        "serialNumber" | "deviceIdentifier" | "carrierHRF" | "carrierAIDC" => Some("DEVICE_ID"),
        _ => None,
    }
}

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
    /// Ages over 89 (birth dates, Age values) put in the "90 or older" category.
    pub ages_aggregated: usize,
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

/// A free-text value de-identified: the text, the spans rewritten in it and how many of those
/// only the patient's structured data gave.
struct Scrubbed {
    text: String,
    spans: usize,
    known_added: usize,
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
    /// Whether ages over 89 are aggregated (the policy generalises ages).
    ages: bool,
    ages_aggregated: usize,
    slots: Vec<Slot>,
    removed: usize,
    rejected: Option<Rejection>,
    /// The identifying values rewritten in the structure: a narrative or note that repeats
    /// them loses them too.
    known: Vec<KnownIdentifier>,
    /// The source ids of the Patients the resource references, as met.
    patients: Vec<String>,
    /// The JSON pointer of the value being walked.
    path: String,
}

/// Why a resource de-identifier could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(
        "SERVICE_DEID_SECRET_KEY is not set: resource pseudonyms and date shifts are keyed by it"
    )]
    NoSecretKey,
    #[error(transparent)]
    Deid(#[from] DeidError),
}

impl ResourceDeidentifier {
    /// From an engine and options: the key checked, the options resolved, the model loaded.
    /// The CLI and the ingestion job build theirs this way, so both give the same bytes.
    pub async fn build(
        deid: Arc<Deidentifier>,
        options: &DeidOptions,
        keep_alive: Option<KeepAlive>,
    ) -> Result<Self, SetupError> {
        let pseudonyms = Pseudonyms::new(deid.secret_key().ok_or(SetupError::NoSecretKey)?);
        let prepared = deid.prepare(options)?;
        let model = deid.model(&prepared, keep_alive).await?;
        Ok(Self::new(
            deid,
            Arc::new(prepared),
            Arc::new(model),
            pseudonyms,
        ))
    }

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

    /// De-identifies one NDJSON line; `reference` is the date the export stands at (ages over
    /// 89 are counted at it).
    pub async fn line(
        &self,
        line: &str,
        index: &PatientIndex,
        reference: NaiveDate,
    ) -> Result<Done, Rejected> {
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
        // Dates of a resource without a patient still move, keyed by the resource itself.
        let subject = match &patient {
            Some(p) => p.clone(),
            None => format!("{rt}/{}", resource["id"].as_str().unwrap_or_default()),
        };
        let plan = self.deid.plan_for(&self.prepared, Some(&subject));
        let aggregate_ages = generalises_ages(&plan);
        let mut ages_aggregated = 0;
        if aggregate_ages {
            if ages::PERSON_TYPES.contains(&rt.as_str())
                && let Some(m) = resource.as_object_mut()
                && ages::aggregate_birth_date(m, reference, plan.shift_days)
            {
                ages_aggregated += 1;
            }
            if rt == "Observation"
                && ages::is_age_observation(&resource)
                && let Some(q) = resource
                    .get_mut("valueQuantity")
                    .and_then(Value::as_object_mut)
                && ages::aggregate_age(q)
            {
                ages_aggregated += 1;
            }
        }
        let mut walk = Walk {
            pseudonyms: &self.pseudonyms,
            plan: &plan,
            shift_days: plan.shift_days,
            ages: aggregate_ages,
            ages_aggregated,
            slots: Vec::new(),
            removed: 0,
            rejected: None,
            known: Vec::new(),
            patients: Vec::new(),
            path: String::new(),
        };
        walk.object_root(&rt, &mut resource);
        if let Some(reason) = walk.rejected {
            return Err(reject(reason, Some(&rt)));
        }
        let (slots, removed, ages_aggregated) = (walk.slots, walk.removed, walk.ages_aggregated);
        // What the text must lose, whatever the model says: the identifiers of every patient
        // the resource names (its own first; a mother's note names her newborn), the values
        // its own structure held, and the name it gives its patient.
        let mut known: Vec<KnownIdentifier> = Vec::new();
        if !slots.is_empty() {
            known.extend(
                patient
                    .as_deref()
                    .map(|p| index.known(p))
                    .unwrap_or_default(),
            );
            let mut others = walk.patients;
            others.sort();
            others.dedup();
            for other in others {
                if patient.as_deref() != Some(other.as_str()) {
                    known.extend(index.known(&other));
                }
            }
            known.extend(walk.known);
            known.extend(display_names(&resource));
            known.sort();
            known.dedup();
        }
        let mut done = Done {
            resource_type: rt.clone(),
            resource: Value::Null,
            patient: patient.as_deref().map(|p| self.pseudonyms.id("Patient", p)),
            texts: slots.len(),
            spans: 0,
            known_added: 0,
            removed,
            ages_aggregated,
            free_text: Vec::new(),
        };
        let s = Subject {
            id: Some(&subject),
            known: &known,
        };
        // The true birth year of a patient over 89, wherever their texts still show it, and
        // the year that stands for it in the structured data.
        let birth_year = patient
            .as_deref()
            .filter(|_| aggregate_ages && !slots.is_empty())
            .and_then(|p| index.life(p))
            .and_then(|(birth, death)| {
                let instead =
                    ages::aggregated_birth_year(birth, death, reference, plan.shift_days)?;
                Some((birth.get(..4)?.to_string(), instead))
            });
        // The resource's texts go to the model together, not one after the other: a note and
        // its description fill the same batches.
        let mut slots = slots;
        let texts: Vec<String> = slots
            .iter_mut()
            .map(|slot| std::mem::take(&mut slot.text))
            .collect();
        let scrubbed = futures_util::future::join_all(
            slots
                .iter()
                .zip(texts)
                .map(|(slot, text)| self.scrub(text, &slot.kind, s)),
        )
        .await;
        for (slot, scrubbed) in slots.into_iter().zip(scrubbed) {
            let new = scrubbed.map_err(|reason| reject(reason, Some(&rt)))?;
            done.spans += new.spans;
            done.known_added += new.known_added;
            let new = match &birth_year {
                Some((year, instead)) => ages::replace_year(&new.text, year, instead),
                None => new.text,
            };
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
    ) -> Result<Scrubbed, Rejection> {
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
                Ok(Scrubbed {
                    spans: d.entities.len(),
                    known_added: d.known_added,
                    text: d.text,
                })
            }
            SlotKind::Narrative(n) => {
                let (joined, ranges) = n.joined();
                let found = self
                    .detect_patiently(joined, subject)
                    .await
                    .map_err(failed)?;
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
                Ok(Scrubbed {
                    text: n.rebuild(&texts),
                    spans: found.spans.len(),
                    known_added: found.known_added,
                })
            }
        }
    }

    async fn detect_patiently(
        &self,
        text: String,
        subject: Subject<'_>,
    ) -> Result<crate::deidentifier::Detected, DeidError> {
        self.deid
            .detect_patiently(&self.prepared, &self.model, Arc::from(text), subject)
            .await
    }
}

/// Whether the plan's policy puts ages over 89 in one category (`AGE = "age_over_89"`).
fn generalises_ages(plan: &Plan) -> bool {
    plan.policy
        .as_ref()
        .is_some_and(|p| p.action("AGE") == Action::AgeOver89)
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
    "patient",
    "the",
    "mr",
    "mrs",
    "ms",
    "mx",
    "dr",
    "miss",
    "baby",
    "unknown",
    "anonymous",
    "and",
    "of",
    "jr",
    "sr",
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

    fn rewrite_at(&mut self, v: Option<&mut Value>, label: &'static str) {
        let Some(v) = v else { return };
        if let Some(s) = v.as_str().filter(|s| !s.trim().is_empty()) {
            self.known.push(KnownIdentifier::new(s.trim(), label));
            *v = Value::String(self.rewrite(s, label));
        }
    }

    /// Descends into `key` (JSON pointer escaping); [`Walk::leave`] with the mark goes back.
    fn enter(&mut self, key: &str) -> usize {
        let mark = self.path.len();
        self.path.push('/');
        if key.contains(['~', '/']) {
            self.path
                .push_str(&key.replace('~', "~0").replace('/', "~1"));
        } else {
            self.path.push_str(key);
        }
        mark
    }

    fn enter_index(&mut self, i: usize) -> usize {
        use std::fmt::Write as _;
        let mark = self.path.len();
        let _ = write!(self.path, "/{i}");
        mark
    }

    fn leave(&mut self, mark: usize) {
        self.path.truncate(mark);
    }

    fn object_root(&mut self, rt: &str, v: &mut Value) {
        if let Some(m) = v.as_object_mut() {
            if let Some(id) = m.get("id").and_then(Value::as_str) {
                let p = self.pseudonyms.id(rt, id);
                m.insert("id".into(), Value::String(p));
            }
            self.fields(m, true, &[]);
        }
    }

    fn value(&mut self, v: &mut Value) {
        match v {
            // A contained resource keeps its local id: references to it are local.
            Value::Object(m) => self.fields(m, false, &[]),
            Value::Array(a) => {
                for (i, item) in a.iter_mut().enumerate() {
                    let mark = self.enter_index(i);
                    self.value(item);
                    self.leave(mark);
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

    /// An object's fields, but those in `skip` (already rewritten by the caller).
    fn fields(&mut self, m: &mut Map<String, Value>, root: bool, skip: &[&str]) {
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
                    Some(text) => {
                        let mark = self.enter("data");
                        self.slots.push(Slot {
                            pointer: self.path.clone(),
                            text,
                            kind: SlotKind::Attachment,
                        });
                        self.leave(mark);
                    }
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
        let mut dropped: Vec<String> = Vec::new();
        for (key, v) in m.iter_mut() {
            if skip.contains(&key.as_str()) {
                continue;
            }
            match key.as_str() {
                "photo" => {
                    dropped.push(key.clone());
                    self.removed += 1;
                    continue;
                }
                // A string is a Reference's reference; an object (Consent's
                // `actor.reference`) is a Reference itself, walked like any element.
                "reference" if v.is_string() => {
                    let r = v.as_str().unwrap_or_default();
                    if let Some(("Patient", id)) = type_and_id(r) {
                        self.patients.push(id.to_string());
                    }
                    match self.pseudonyms.reference(r) {
                        Some(r) => *v = Value::String(r),
                        None => {
                            dropped.push(key.clone());
                            self.removed += 1;
                        }
                    }
                    continue;
                }
                _ => {}
            }
            let mark = self.enter(key);
            match key.as_str() {
                "resourceType" | "data" | "contentType" => {}
                "id" if root => {}
                "name" | "valueHumanName" if !v.is_string() => self.each(v, Self::name),
                // A name as a plain string (an organisation, a location, a device) may name
                // a person or a place: free text.
                "name" | "authorString" => self.free_text(v),
                "telecom" | "valueContactPoint" => self.each(v, Self::telecom),
                "address" | "valueAddress" => self.each(v, Self::address),
                "identifier" | "valueIdentifier" => self.each(v, Self::identifier),
                // Identifier and Address elements under other names
                // (Specimen.accessionIdentifier, Claim.accident.locationAddress).
                k if k.ends_with("Identifier") && !v.is_string() => self.each(v, Self::identifier),
                k if k.ends_with("Address") && !v.is_string() => self.each(v, Self::address),
                k if v.is_string() && string_identifier(k).is_some() => {
                    let label = string_identifier(k).unwrap_or("OTHER_IDENTIFIER");
                    self.rewrite_at(Some(v), label);
                }
                "div" => match v.as_str().map(xhtml::parse) {
                    Some(Ok(n)) => self.slots.push(Slot {
                        pointer: self.path.clone(),
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
                "display" if !is_coding => self.free_text(v),
                // Age (`onsetAge`, `ageAge`…) and Range (`onsetRange`…) values over 89 years.
                k if self.ages && k.ends_with("Age") && v.is_object() => {
                    if let Some(q) = v.as_object_mut()
                        && ages::aggregate_age(q)
                    {
                        self.ages_aggregated += 1;
                    }
                    self.value(v)
                }
                k if self.ages && k.ends_with("Range") && v.is_object() => {
                    if let Some(r) = v.as_object_mut()
                        && ages::aggregate_age_range(r)
                    {
                        self.ages_aggregated += 1;
                    }
                    self.value(v)
                }
                k if FREE_TEXT.contains(&k) && v.is_string() => self.free_text(v),
                _ => self.value(v),
            }
            self.leave(mark);
            if self.rejected.is_some() {
                return;
            }
        }
        for k in dropped {
            m.remove(&k);
        }
    }

    fn free_text(&mut self, v: &Value) {
        if let Some(s) = v.as_str().filter(|s| !s.trim().is_empty()) {
            self.slots.push(Slot {
                pointer: self.path.clone(),
                text: s.to_string(),
                kind: SlotKind::Plain,
            });
        }
    }

    /// `f` on each element of an array (or on a lone object).
    fn each(&mut self, v: &mut Value, f: fn(&mut Self, &mut Map<String, Value>)) {
        match v {
            Value::Array(a) => {
                for (i, item) in a.iter_mut().enumerate() {
                    if let Some(o) = item.as_object_mut() {
                        let mark = self.enter_index(i);
                        f(self, o);
                        self.leave(mark);
                    }
                }
            }
            Value::Object(o) => f(self, o),
            _ => {}
        }
    }

    fn name(&mut self, n: &mut Map<String, Value>) {
        self.rewrite_at(n.get_mut("family"), "LAST_NAME");
        if let Some(given) = n.get_mut("given").and_then(Value::as_array_mut) {
            for g in given {
                self.rewrite_at(Some(g), "FIRST_NAME");
            }
        }
        self.rewrite_at(n.get_mut("text"), "NAME");
        self.fields(n, false, &["family", "given", "text"]);
    }

    fn telecom(&mut self, t: &mut Map<String, Value>) {
        let label = match t.get("system").and_then(Value::as_str) {
            Some("email") => "EMAIL",
            Some("fax") => "FAX",
            Some("url") => "URL",
            Some("phone" | "sms" | "pager") => "PHONE",
            _ => "OTHER_IDENTIFIER",
        };
        self.rewrite_at(t.get_mut("value"), label);
        self.fields(t, false, &["value"]);
    }

    fn address(&mut self, a: &mut Map<String, Value>) {
        if let Some(lines) = a.get_mut("line").and_then(Value::as_array_mut) {
            for l in lines {
                self.rewrite_at(Some(l), "STREET_ADDRESS");
            }
        }
        self.rewrite_at(a.get_mut("city"), "CITY");
        self.rewrite_at(a.get_mut("district"), "CITY");
        self.rewrite_at(a.get_mut("postalCode"), "ZIP_CODE");
        self.rewrite_at(a.get_mut("text"), "STREET_ADDRESS");
        self.fields(
            a,
            false,
            &["line", "city", "district", "postalCode", "text"],
        );
    }

    fn identifier(&mut self, id: &mut Map<String, Value>) {
        let label = identifier_label_of(id);
        self.rewrite_at(id.get_mut("value"), label);
        self.fields(id, false, &["value"]);
    }
}
