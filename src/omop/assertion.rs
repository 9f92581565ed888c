//! Assertion attributes of a mention (negation, temporality, certainty, experiencer), their
//! parsing from the many spellings NLP systems use, and their encoding in `note_nlp`.

use serde_json::{Map, Value};

use super::records::{entity, entity_field};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Temporality {
    Recent,
    Historical,
    Hypothetical,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Experiencer {
    Patient,
    Family,
    Other,
}

/// The assertion of one mention. Defaults: affirmed, recent, certain, patient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assertion {
    pub negated: bool,
    pub temporality: Temporality,
    pub certain: bool,
    pub experiencer: Experiencer,
}

impl Default for Assertion {
    fn default() -> Self {
        Self {
            negated: false,
            temporality: Temporality::Recent,
            certain: true,
            experiencer: Experiencer::Patient,
        }
    }
}

impl Temporality {
    pub fn as_str(self) -> &'static str {
        match self {
            Temporality::Recent => "recent",
            Temporality::Historical => "historical",
            Temporality::Hypothetical => "hypothetical",
        }
    }
}

impl Experiencer {
    pub fn as_str(self) -> &'static str {
        match self {
            Experiencer::Patient => "patient",
            Experiencer::Family => "family",
            Experiencer::Other => "other",
        }
    }
}

impl Assertion {
    /// Whether the mention asserts the concept for this patient: affirmed, certain, not
    /// hypothetical, experienced by the patient. Only such mentions become clinical event rows
    /// (and `term_exists = 'Y'`); the others stay in `note_nlp`.
    pub fn asserted(&self) -> bool {
        !self.negated
            && self.certain
            && self.temporality != Temporality::Hypothetical
            && self.experiencer == Experiencer::Patient
    }

    pub fn certainty_str(&self) -> &'static str {
        if self.certain { "certain" } else { "uncertain" }
    }

    pub fn negation_str(&self) -> &'static str {
        if self.negated { "negated" } else { "affirmed" }
    }

    /// `note_nlp.term_modifiers`.
    pub fn modifiers(&self) -> String {
        format!(
            "negation={};temporality={};certainty={};experiencer={}",
            self.negation_str(),
            self.temporality.as_str(),
            self.certainty_str(),
            self.experiencer.as_str()
        )
    }

    /// Reads `term_modifiers` back: `key=value` pairs separated by `;` (keys and values in any
    /// case; absent keys keep their defaults; other keys are ignored). A value or a pair it does
    /// not understand is `None`: refused rather than guessed.
    pub fn from_modifiers(s: &str) -> Option<Self> {
        let mut a = Self::default();
        for part in s.split(';').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=')?;
            match k.trim().to_ascii_lowercase().as_str() {
                "negation" => a.negated = negation(v)?,
                "temporality" => a.temporality = temporality(v)?,
                "certainty" => a.certain = certainty(v)?,
                "experiencer" => a.experiencer = experiencer(v)?,
                _ => {}
            }
        }
        Some(a)
    }

    /// The assertion of a grounded entity; `Err` when a value is present but not understood.
    pub fn from_entity(e: &Map<String, Value>) -> Result<Self, ()> {
        let mut a = Self::default();
        if let Some(v) = entity_field(e, entity::TERM_EXISTS) {
            a.negated = !flag(
                v,
                &["y", "yes", "true", "present"],
                &["n", "no", "false", "absent"],
            )?;
        }
        if let Some(v) = entity_field(e, entity::NEGATION) {
            a.negated = match v {
                Value::Bool(b) => *b,
                Value::String(s) => negation(s).ok_or(())?,
                _ => return Err(()),
            };
        }
        if let Some(v) = entity_field(e, entity::TEMPORALITY) {
            a.temporality = v.as_str().and_then(temporality).ok_or(())?;
        }
        if let Some(v) = entity_field(e, entity::CERTAINTY) {
            a.certain = v.as_str().and_then(certainty).ok_or(())?;
        }
        if let Some(v) = entity_field(e, entity::EXPERIENCER) {
            a.experiencer = v.as_str().and_then(experiencer).ok_or(())?;
        }
        Ok(a)
    }
}

fn norm(s: &str) -> String {
    s.trim().to_ascii_lowercase().replace([' ', '-'], "_")
}

fn flag(v: &Value, yes: &[&str], no: &[&str]) -> Result<bool, ()> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) => {
            let s = norm(s);
            if yes.contains(&s.as_str()) {
                Ok(true)
            } else if no.contains(&s.as_str()) {
                Ok(false)
            } else {
                Err(())
            }
        }
        _ => Err(()),
    }
}

fn negation(s: &str) -> Option<bool> {
    match norm(s).as_str() {
        "negated" | "negative" | "absent" | "true" | "yes" | "neg" => Some(true),
        "affirmed" | "positive" | "present" | "false" | "no" | "pos" => Some(false),
        _ => None,
    }
}

fn temporality(s: &str) -> Option<Temporality> {
    Some(match norm(s).as_str() {
        "recent" | "current" | "present" => Temporality::Recent,
        "historical" | "history" | "past" => Temporality::Historical,
        "hypothetical" | "future" | "conditional" => Temporality::Hypothetical,
        _ => return None,
    })
}

fn certainty(s: &str) -> Option<bool> {
    match norm(s).as_str() {
        "certain" | "definite" | "confirmed" | "positive" => Some(true),
        "uncertain" | "possible" | "probable" | "hedged" | "suspected" => Some(false),
        _ => None,
    }
}

fn experiencer(s: &str) -> Option<Experiencer> {
    Some(match norm(s).as_str() {
        "patient" | "self" | "subject" => Experiencer::Patient,
        "family" | "family_member" | "relative" => Experiencer::Family,
        "other" => Experiencer::Other,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ent(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn defaults_and_spellings() {
        assert_eq!(Assertion::from_entity(&ent("{}")), Ok(Assertion::default()));
        let a = Assertion::from_entity(&ent(
            r#"{"polarity":"negative","temporality":"past","certainty":"possible","experiencer":"family member"}"#,
        ))
        .unwrap();
        assert!(a.negated && !a.certain);
        assert_eq!(a.temporality, Temporality::Historical);
        assert_eq!(a.experiencer, Experiencer::Family);
        assert!(!a.asserted());
        assert!(
            Assertion::from_entity(&ent(r#"{"term_exists":"N"}"#))
                .unwrap()
                .negated
        );
        assert!(
            Assertion::from_entity(&ent(r#"{"negation":true}"#))
                .unwrap()
                .negated
        );
        assert_eq!(
            Assertion::from_entity(&ent(r#"{"certainty":"maybe"}"#)),
            Err(())
        );
    }

    #[test]
    fn modifiers_round_trip() {
        let a = Assertion {
            negated: true,
            temporality: Temporality::Hypothetical,
            certain: false,
            experiencer: Experiencer::Other,
        };
        assert_eq!(Assertion::from_modifiers(&a.modifiers()), Some(a));
        assert_eq!(Assertion::from_modifiers(""), Some(Assertion::default()));
        assert_eq!(Assertion::from_modifiers("negation=perhaps"), None);
    }
}
