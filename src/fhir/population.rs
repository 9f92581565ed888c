//! A generated patient population as a FHIR bulk export (NDJSON per resource type), for tests
//! and benches: Synthea-like people ("Sumiko254 Larue605") with MRNs, phones, emails,
//! addresses and birth dates, their relatives, encounters, vitals, conditions, medication
//! requests, and (when asked) clinical notes that mention them the way notes do: full name,
//! given name alone, surname with a title, MRN, the phone in another layout, the birth date
//! as MM/DD/YYYY, the street line and the city.
//!
//! Deterministic: the same [`Spec`] gives byte-identical files, on every machine.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

use base64::Engine as _;
use serde_json::{Value, json};

/// What to generate.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub seed: u64,
    pub patients: usize,
    /// Structured resources per patient beyond the Patient (encounters, vitals, conditions,
    /// medication requests), spread over those types.
    pub structured_per_patient: usize,
    /// Clinical notes (DocumentReference) and reports (DiagnosticReport) per patient, each
    /// naming the patient; 0 for a population without free text.
    pub notes_per_patient: usize,
    /// Whether each patient has a RelatedPerson and encounters carry a narrative.
    pub relatives_and_narratives: bool,
}

impl Default for Spec {
    fn default() -> Self {
        Self {
            seed: 20251125,
            patients: 20,
            structured_per_patient: 8,
            notes_per_patient: 2,
            relatives_and_narratives: true,
        }
    }
}

/// One generated patient's identifying facts (what a leak test looks for).
#[derive(Clone, Debug)]
pub struct Person {
    pub id: String,
    pub given: String,
    pub family: String,
    pub mrn: String,
    pub ssn: String,
    pub phone: String,
    pub email: String,
    pub street: String,
    pub city: String,
    pub postal_code: String,
    /// `YYYY-MM-DD`.
    pub birth_date: String,
}

/// A generated export: NDJSON lines by resource type, and the people in it.
#[derive(Debug, Default)]
pub struct Population {
    pub lines: BTreeMap<String, Vec<String>>,
    pub people: Vec<Person>,
    /// The relatives' names (given, family).
    pub relatives: Vec<(String, String)>,
}

impl Population {
    pub fn resources(&self) -> usize {
        self.lines.values().map(Vec::len).sum()
    }

    pub fn bytes(&self) -> usize {
        self.lines
            .values()
            .flat_map(|l| l.iter().map(|s| s.len() + 1))
            .sum()
    }

    /// Writes `<Type>.ndjson` per type into `dir` (created).
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        for (t, lines) in &self.lines {
            let mut f = io::BufWriter::new(std::fs::File::create(dir.join(format!("{t}.ndjson")))?);
            for l in lines {
                f.write_all(l.as_bytes())?;
                f.write_all(b"\n")?;
            }
            f.flush()?;
        }
        Ok(())
    }
}

/// splitmix64: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const GIVEN: &[&str] = &[
    "Sumiko",
    "Darnell",
    "Odalys",
    "Kasimir",
    "Thandiwe",
    "Evander",
    "Marisol",
    "Quillon",
    "Ingeborg",
    "Tavish",
    "Renata",
    "Bertram",
    "Yesenia",
    "Leopold",
    "Ottilie",
    "Cassius",
    "Wilhelmina",
    "Anselm",
    "Esmeralda",
    "Florian",
];
const FAMILY: &[&str] = &[
    "Larue",
    "Kshlerin",
    "Okuneva",
    "Wunsch",
    "Bergstrom",
    "Hettinger",
    "Rempel",
    "Schowalter",
    "Gutkowski",
    "Mraz",
    "Dibbert",
    "Kuvalis",
    "Satterfield",
    "Ankunding",
    "Heathcote",
    "Rolfson",
    "Zulauf",
    "Bednar",
    "Wehner",
    "Jaskolski",
];
const STREETS: &[&str] = &[
    "Harbor", "Quarry", "Bramble", "Larkspur", "Foxglove", "Tamarack", "Juniper", "Wren",
];
const CITIES: &[&str] = &[
    "Port Leyden",
    "Grafton Falls",
    "Millbrook Junction",
    "Easthampton Mills",
    "Clearwater Hollow",
    "Stonebridge",
];
const CONDITIONS: &[(&str, &str)] = &[
    ("44054006", "Diabetes mellitus type 2"),
    ("38341003", "Hypertensive disorder"),
    ("195967001", "Asthma"),
    ("49436004", "Atrial fibrillation"),
    ("40055000", "Chronic sinusitis"),
];
const VITALS: &[(&str, &str, &str, f64, f64)] = &[
    ("8867-4", "Heart rate", "/min", 55.0, 110.0),
    ("8310-5", "Body temperature", "Cel", 36.0, 39.5),
    ("29463-7", "Body weight", "kg", 45.0, 120.0),
    ("2339-0", "Glucose", "mg/dL", 70.0, 240.0),
    ("9279-1", "Respiratory rate", "/min", 10.0, 28.0),
];
const DRUGS: &[(&str, &str)] = &[
    ("860975", "metformin 500 MG Oral Tablet"),
    ("314076", "lisinopril 10 MG Oral Tablet"),
    ("855332", "warfarin 5 MG Oral Tablet"),
    ("745679", "albuterol 90 MCG Inhaler"),
];

fn numbered(rng: &mut Rng, list: &[&str]) -> String {
    format!("{}{}", rng.pick(list), 100 + rng.below(900))
}

fn date(rng: &mut Rng, from_year: u64, years: u64) -> (u64, u64, u64) {
    (
        from_year + rng.below(years),
        1 + rng.below(12),
        1 + rng.below(28),
    )
}

fn iso((y, m, d): (u64, u64, u64)) -> String {
    format!("{y:04}-{m:02}-{d:02}")
}

fn person(rng: &mut Rng, i: usize) -> Person {
    let given = numbered(rng, GIVEN);
    let family = numbered(rng, FAMILY);
    let (a, b, c) = (
        200 + rng.below(800),
        200 + rng.below(800),
        rng.below(10_000),
    );
    Person {
        id: format!("pop-{i:06}"),
        email: format!(
            "{}.{}@mail.example.org",
            given.to_lowercase(),
            family.to_lowercase()
        ),
        given,
        family,
        mrn: format!("MRN{:07}", 1_000_000 + rng.below(9_000_000)),
        ssn: format!(
            "{:03}-{:02}-{:04}",
            100 + rng.below(665),
            10 + rng.below(89),
            1000 + rng.below(9000)
        ),
        phone: format!("{a}-{b}-{c:04}"),
        street: format!(
            "{} {} {}",
            100 + rng.below(9900),
            rng.pick(STREETS),
            rng.pick(&["Street", "Road", "Lane", "Avenue"])
        ),
        city: rng.pick(CITIES).to_string(),
        postal_code: format!("{:05}", 10_000 + rng.below(89_999)),
        birth_date: iso(date(rng, 1930, 75)),
    }
}

fn patient_json(p: &Person) -> Value {
    json!({
        "resourceType": "Patient",
        "id": p.id,
        "meta": {"lastUpdated": "2024-01-15T10:00:00Z"},
        "identifier": [
            {"system": "http://hospital.example.org/mrn", "value": p.mrn,
             "type": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/v2-0203", "code": "MR"}]}},
            {"system": "http://hl7.org/fhir/sid/us-ssn", "value": p.ssn}
        ],
        "name": [{"use": "official", "family": p.family, "given": [p.given], "prefix": ["Mx."]}],
        "telecom": [
            {"system": "phone", "value": p.phone, "use": "home"},
            {"system": "email", "value": p.email}
        ],
        "gender": "unknown",
        "birthDate": p.birth_date,
        "address": [{"line": [p.street], "city": p.city, "state": "MA", "postalCode": p.postal_code, "country": "US"}]
    })
}

fn slashed(iso: &str) -> String {
    // YYYY-MM-DD as MM/DD/YYYY.
    format!("{}/{}/{}", &iso[5..7], &iso[8..10], &iso[..4])
}

fn other_phone_layout(phone: &str) -> String {
    let d: String = phone.chars().filter(char::is_ascii_digit).collect();
    format!("({}) {} {}", &d[..3], &d[3..6], &d[6..])
}

/// A clinical note naming its patient in the ways notes do.
fn note(rng: &mut Rng, p: &Person, relative: Option<&(String, String)>) -> String {
    let (_, condition) = CONDITIONS[rng.below(CONDITIONS.len() as u64) as usize];
    let title = rng.pick(&["Mr.", "Ms.", "Mx."]);
    let mut s = format!(
        "Progress note\n\nPatient: {} {} (MRN: {}), DOB {}.\n{} {} is seen today for follow-up of {}. \
         {} reports feeling better since the last visit and denies chest pain.\n",
        p.given,
        p.family,
        p.mrn,
        slashed(&p.birth_date),
        title,
        p.family,
        condition.to_lowercase(),
        p.given,
    );
    s.push_str(&format!(
        "Lives at {}, {}. Best contact number {}; email {}.\n",
        p.street,
        p.city,
        other_phone_layout(&p.phone),
        p.email
    ));
    if let Some((g, f)) = relative {
        s.push_str(&format!(
            "Accompanied by {g} {f}, who helps with medications.\n"
        ));
    }
    s.push_str(&format!(
        "Plan: continue current therapy, recheck labs in {} weeks. Discussed with {} at length.\n",
        2 + rng.below(10),
        p.given
    ));
    s
}

/// The population for `spec`.
pub fn generate(spec: &Spec) -> Population {
    let mut rng = Rng(spec.seed);
    let mut pop = Population::default();
    let add = |pop: &mut Population, v: Value| {
        let t = v["resourceType"].as_str().unwrap_or("Basic").to_string();
        pop.lines.entry(t).or_default().push(v.to_string());
    };
    let mut n = 0usize;
    let mut next_id = |prefix: &str| {
        n += 1;
        format!("{prefix}-{n:07}")
    };
    for i in 0..spec.patients {
        let p = person(&mut rng, i);
        add(&mut pop, patient_json(&p));
        let subject = json!({"reference": format!("Patient/{}", p.id)});
        let relative = spec
            .relatives_and_narratives
            .then(|| (numbered(&mut rng, GIVEN), numbered(&mut rng, FAMILY)));
        if let Some((g, f)) = &relative {
            add(
                &mut pop,
                json!({
                    "resourceType": "RelatedPerson",
                    "id": next_id("rp"),
                    "patient": subject,
                    "relationship": [{"coding": [{"system": "http://terminology.hl7.org/CodeSystem/v3-RoleCode", "code": "DAU"}]}],
                    "name": [{"family": f, "given": [g]}],
                    "telecom": [{"system": "phone", "value": format!("555-{:03}-{:04}", rng.below(1000), rng.below(10_000))}]
                }),
            );
            pop.relatives.push((g.clone(), f.clone()));
        }
        let mut encounter = None;
        for k in 0..spec.structured_per_patient {
            let when = iso(date(&mut rng, 2015, 9));
            let v = match k % 4 {
                0 => {
                    let id = next_id("enc");
                    encounter = Some(id.clone());
                    let mut e = json!({
                        "resourceType": "Encounter",
                        "id": id,
                        "status": "finished",
                        "class": {"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "AMB"},
                        "type": [{"coding": [{"system": "http://snomed.info/sct", "code": "185349003", "display": "Encounter for check up"}]}],
                        "subject": subject,
                        "period": {"start": format!("{when}T09:00:00-05:00"), "end": format!("{when}T09:30:00-05:00")}
                    });
                    if spec.relatives_and_narratives {
                        e["text"] = json!({
                            "status": "generated",
                            "div": format!(
                                "<div xmlns=\"http://www.w3.org/1999/xhtml\"><p>Check-up for <b>{} {}</b> &amp; family, {}.</p></div>",
                                p.given, p.family, p.city
                            )
                        });
                    }
                    e
                }
                1 => {
                    let (code, display, unit, lo, hi) =
                        VITALS[rng.below(VITALS.len() as u64) as usize];
                    let value = lo + (hi - lo) * (rng.below(1000) as f64 / 1000.0);
                    let mut o = json!({
                        "resourceType": "Observation",
                        "id": next_id("obs"),
                        "status": "final",
                        "category": [{"coding": [{"system": "http://terminology.hl7.org/CodeSystem/observation-category", "code": "vital-signs"}]}],
                        "code": {"coding": [{"system": "http://loinc.org", "code": code, "display": display}]},
                        "subject": subject,
                        "effectiveDateTime": format!("{when}T09:10:00-05:00"),
                        "issued": format!("{when}T11:00:00.000-05:00"),
                        "valueQuantity": {"value": (value * 10.0).round() / 10.0, "unit": unit, "system": "http://unitsofmeasure.org", "code": unit}
                    });
                    if let Some(e) = &encounter {
                        o["encounter"] = json!({"reference": format!("Encounter/{e}")});
                    }
                    o
                }
                2 => {
                    let (code, display) = CONDITIONS[rng.below(CONDITIONS.len() as u64) as usize];
                    json!({
                        "resourceType": "Condition",
                        "id": next_id("cond"),
                        "clinicalStatus": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/condition-clinical", "code": "active"}]},
                        "code": {"coding": [{"system": "http://snomed.info/sct", "code": code, "display": display}]},
                        "subject": subject,
                        "onsetDateTime": format!("{when}T00:00:00-05:00"),
                        "recordedDate": when
                    })
                }
                _ => {
                    let (code, display) = DRUGS[rng.below(DRUGS.len() as u64) as usize];
                    json!({
                        "resourceType": "MedicationRequest",
                        "id": next_id("mr"),
                        "status": "active",
                        "intent": "order",
                        "medicationCodeableConcept": {"coding": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": code, "display": display}]},
                        "subject": subject,
                        "authoredOn": when,
                        "dosageInstruction": [{"timing": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "d"}}}]
                    })
                }
            };
            add(&mut pop, v);
        }
        for k in 0..spec.notes_per_patient {
            let when = iso(date(&mut rng, 2015, 9));
            let text = note(&mut rng, &p, relative.as_ref());
            let v = if k % 2 == 0 {
                json!({
                    "resourceType": "DocumentReference",
                    "id": next_id("doc"),
                    "status": "current",
                    "type": {"coding": [{"system": "http://loinc.org", "code": "11506-3", "display": "Progress note"}]},
                    "subject": subject,
                    "date": format!("{when}T16:00:00-05:00"),
                    "description": format!("Progress note for {} {}", p.given, p.family),
                    "content": [{"attachment": {
                        "contentType": "text/plain; charset=utf-8",
                        "data": base64::engine::general_purpose::STANDARD.encode(text.as_bytes()),
                        "size": text.len(),
                        "creation": when
                    }}]
                })
            } else {
                json!({
                    "resourceType": "DiagnosticReport",
                    "id": next_id("dr"),
                    "status": "final",
                    "code": {"coding": [{"system": "http://loinc.org", "code": "24323-8", "display": "Comprehensive metabolic panel"}]},
                    "subject": subject,
                    "effectiveDateTime": format!("{when}T08:00:00-05:00"),
                    "issued": format!("{when}T12:00:00-05:00"),
                    "conclusion": text
                })
            };
            add(&mut pop, v);
        }
        pop.people.push(p);
    }
    pop
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_spec_gives_the_same_population_and_notes_name_their_patient() {
        let spec = Spec {
            patients: 5,
            ..Spec::default()
        };
        let (a, b) = (generate(&spec), generate(&spec));
        assert_eq!(a.lines, b.lines);
        assert_eq!(a.people.len(), 5);
        let p = &a.people[0];
        assert!(p.given.chars().last().is_some_and(|c| c.is_ascii_digit()));
        let reports = a.lines["DiagnosticReport"].join("\n");
        for want in [&p.mrn, &p.given, &p.family, &p.city, &p.street] {
            assert!(reports.contains(want.as_str()), "{want}");
        }
        assert!(reports.contains(&slashed(&p.birth_date)));
        assert!(reports.contains(&other_phone_layout(&p.phone)));
        assert_eq!(a.lines["Patient"].len(), 5);
        assert!(a.lines.contains_key("DocumentReference"));
        let bare = generate(&Spec {
            notes_per_patient: 0,
            relatives_and_narratives: false,
            ..spec
        });
        assert!(!bare.lines.contains_key("DocumentReference"));
        assert!(!bare.lines["Encounter"].join("").contains("\"div\""));
    }
}
