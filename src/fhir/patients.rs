//! What each patient's structured data says about them, learnt before any of their free text
//! is read: names, identifier values, phone numbers and emails, address lines, city and ZIP,
//! birth date (as notes write it), and the same for their related persons. De-identifying a
//! note then removes every one of these wherever it appears, whatever the model says.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::dates;
use super::pseudonym::type_and_id;
use crate::deidentifier::KnownIdentifier;

/// Known identifiers by patient id (the source id, not the pseudonym).
#[derive(Debug, Default)]
pub struct PatientIndex {
    by_patient: HashMap<String, BTreeSet<KnownIdentifier>>,
    /// Each Patient's `birthDate` and `deceasedDateTime`, as written: Safe Harbor's ages over
    /// 89 reach their notes too.
    life: HashMap<String, (String, Option<String>)>,
}

impl PatientIndex {
    /// Learns from a resource: a Patient (its own data) or a RelatedPerson (the patient's
    /// relative). Other types teach nothing.
    pub fn learn(&mut self, resource: &Value) {
        let owner = match resource["resourceType"].as_str() {
            Some("Patient") => resource["id"].as_str(),
            Some("RelatedPerson") => resource["patient"]["reference"]
                .as_str()
                .and_then(type_and_id)
                .filter(|(t, _)| *t == "Patient")
                .map(|(_, id)| id),
            _ => None,
        };
        let Some(owner) = owner else { return };
        if resource["resourceType"] == "Patient"
            && let Some(birth) = resource["birthDate"].as_str()
        {
            let death = resource["deceasedDateTime"].as_str().map(String::from);
            self.life
                .insert(owner.to_string(), (birth.to_string(), death));
        }
        let known = self.by_patient.entry(owner.to_string()).or_default();
        collect(resource, known);
    }

    /// The known identifiers of patient `id` (empty when unknown).
    pub fn known(&self, id: &str) -> Vec<KnownIdentifier> {
        self.by_patient
            .get(id)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Patient `id`'s `birthDate` and `deceasedDateTime`.
    pub fn life(&self, id: &str) -> Option<(&str, Option<&str>)> {
        self.life.get(id).map(|(b, d)| (b.as_str(), d.as_deref()))
    }

    pub fn patients(&self) -> usize {
        self.by_patient.len()
    }
}

fn push(known: &mut BTreeSet<KnownIdentifier>, v: &Value, label: &'static str) {
    if let Some(s) = v.as_str().map(str::trim).filter(|s| !s.is_empty()) {
        known.insert(KnownIdentifier::new(s, label));
    }
}

fn each(v: &Value) -> impl Iterator<Item = &Value> {
    match v {
        Value::Array(a) => a.iter().collect::<Vec<_>>().into_iter(),
        Value::Null => Vec::new().into_iter(),
        other => vec![other].into_iter(),
    }
}

/// The canonical label of an Identifier's value, from its system or type code.
pub fn identifier_label(id: &Value) -> &'static str {
    id.as_object()
        .map_or("OTHER_IDENTIFIER", identifier_label_of)
}

/// [`identifier_label`] of an Identifier's fields.
pub fn identifier_label_of(id: &serde_json::Map<String, Value>) -> &'static str {
    let system = id.get("system").and_then(Value::as_str).unwrap_or_default();
    let code = id
        .get("type")
        .and_then(|t| t.pointer("/coding/0/code"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    match code {
        "SS" | "SB" => "SSN",
        "MR" | "MRN" => "MEDICAL_RECORD_NUMBER",
        "DL" => "DRIVERS_LICENSE",
        "PPN" => "PASSPORT",
        "MB" | "MA" | "MC" | "SN" => "HEALTH_PLAN_NUMBER",
        "AN" => "ACCOUNT_NUMBER",
        "NPI" => "NPI",
        _ if system.ends_with("us-ssn") => "SSN",
        _ if system.ends_with("us-npi") => "NPI",
        _ => "OTHER_IDENTIFIER",
    }
}

fn collect(r: &Value, known: &mut BTreeSet<KnownIdentifier>) {
    for name in each(&r["name"]) {
        push(known, &name["family"], "LAST_NAME");
        for g in each(&name["given"]) {
            push(known, g, "FIRST_NAME");
        }
        push(known, &name["text"], "NAME");
    }
    for id in each(&r["identifier"]) {
        push(known, &id["value"], identifier_label(id));
    }
    for t in each(&r["telecom"]) {
        let label = match t["system"].as_str() {
            Some("email") => "EMAIL",
            Some("fax") => "FAX",
            Some("url") => "URL",
            _ => "PHONE",
        };
        push(known, &t["value"], label);
    }
    for a in each(&r["address"]) {
        for line in each(&a["line"]) {
            push(known, line, "STREET_ADDRESS");
        }
        push(known, &a["city"], "CITY");
        push(known, &a["district"], "CITY");
        push(known, &a["postalCode"], "ZIP_CODE");
    }
    if let Some(b) = r["birthDate"].as_str() {
        for d in dates::renderings(b) {
            known.insert(KnownIdentifier::new(d, "DATE"));
        }
    }
    // A patient's contacts (next of kin) are their household too.
    for c in each(&r["contact"]) {
        collect(c, known);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patients_and_their_relatives_are_known_by_patient_id() {
        let mut idx = PatientIndex::default();
        idx.learn(&json!({
            "resourceType": "Patient", "id": "p1",
            "name": [{"family": "Larue605", "given": ["Sumiko254", "Ann"]}],
            "identifier": [{"system": "urn:mrn", "value": "MRN-0412345"}],
            "telecom": [{"system": "phone", "value": "555-201-7788"}],
            "address": [{"line": ["12 Harbor Rd"], "city": "Port Leyden", "postalCode": "13433"}],
            "birthDate": "1961-07-04",
            "contact": [{"name": {"family": "Dravec", "given": ["Merit"]}}]
        }));
        idx.learn(&json!({
            "resourceType": "RelatedPerson", "id": "r1",
            "patient": {"reference": "Patient/p1"},
            "name": [{"text": "Sunny Ortel"}]
        }));
        idx.learn(&json!({"resourceType": "Observation", "id": "o1"}));
        let values: Vec<String> = idx.known("p1").into_iter().map(|k| k.value).collect();
        for want in [
            "Larue605",
            "Sumiko254",
            "MRN-0412345",
            "555-201-7788",
            "12 Harbor Rd",
            "Port Leyden",
            "13433",
            "07/04/1961",
            "Dravec",
            "Merit",
            "Sunny Ortel",
        ] {
            assert!(values.iter().any(|v| v == want), "{want} in {values:?}");
        }
        assert_eq!(idx.patients(), 1);
        assert!(idx.known("nobody").is_empty());
    }
}
