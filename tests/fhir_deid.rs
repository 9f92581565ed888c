//! `phiflow fhir deidentify` end to end with the real model: the HL7 FHIR R4 examples (CC0,
//! fetched by scripts/fetch-assets) and a generated population whose notes name their
//! patients, through the binary. Outputs per type (NDJSON and Parquet), rejections, the leak
//! test, references and date shifts, narrative, and kill -9 then resume to the same bytes.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use phiflow::fhir::population::{self, Population, Spec};
use phiflow::fhir::pseudonym::Pseudonyms;
use phiflow::fhir::{dates, table, xhtml};
use serde_json::{Value, json};

const SECRET: &str = "fhir-deid-test-secret";
/// The date the test exports stand at (ages over 89 are counted at it).
const REFERENCE_DATE: &str = "2026-11-25";

/// Resource types of patient data taken from the HL7 examples (terminology, conformance and
/// knowledge artifacts are not patient data; Bundles are not NDJSON resources).
const HL7_TYPES: &[&str] = &[
    "Account",
    "AdverseEvent",
    "AllergyIntolerance",
    "Appointment",
    "AuditEvent",
    "Basic",
    "Binary",
    "BodyStructure",
    "CarePlan",
    "CareTeam",
    "Claim",
    "ClinicalImpression",
    "Communication",
    "Composition",
    "Condition",
    "Consent",
    "Coverage",
    "DetectedIssue",
    "Device",
    "DiagnosticReport",
    "DocumentReference",
    "Encounter",
    "EpisodeOfCare",
    "ExplanationOfBenefit",
    "FamilyMemberHistory",
    "Flag",
    "Goal",
    "Group",
    "ImagingStudy",
    "Immunization",
    "List",
    "Location",
    "Media",
    "Medication",
    "MedicationAdministration",
    "MedicationDispense",
    "MedicationRequest",
    "MedicationStatement",
    "NutritionOrder",
    "Observation",
    "Organization",
    "Patient",
    "Person",
    "Practitioner",
    "PractitionerRole",
    "Procedure",
    "Provenance",
    "QuestionnaireResponse",
    "RelatedPerson",
    "RiskAssessment",
    "ServiceRequest",
    "Specimen",
    "Task",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The HL7 examples of [`HL7_TYPES`] as one NDJSON file per type (Observation gzipped).
fn write_hl7_examples(dir: &Path) -> usize {
    let src = root().join(".assets/fhir-examples");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&src)
        .expect("the FHIR examples are fetched (scripts/fetch-assets)")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    let mut by_type: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in names {
        let Ok(bytes) = std::fs::read(&p) else {
            continue;
        };
        if bytes.len() > 100_000 {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        let Some(t) = v["resourceType"].as_str().filter(|t| HL7_TYPES.contains(t)) else {
            continue;
        };
        by_type
            .entry(t.to_string())
            .or_default()
            .push(v.to_string());
    }
    let mut n = 0;
    for (t, lines) in by_type {
        n += lines.len();
        let body = lines.join("\n") + "\n";
        if t == "Observation" {
            let f = std::fs::File::create(dir.join(format!("hl7-{t}.ndjson.gz"))).expect("gz");
            let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
            gz.write_all(body.as_bytes()).expect("gz write");
            gz.finish().expect("gz finish");
        } else {
            std::fs::write(dir.join(format!("hl7-{t}.ndjson")), body).expect("write");
        }
    }
    n
}

/// Lines that must be rejected, each for its own reason.
fn rejected_lines() -> Vec<(String, &'static str)> {
    let pdf = json!({"resourceType": "DocumentReference", "id": "scan-1", "status": "current",
        "subject": {"reference": "Patient/pop-000000"},
        "content": [{"attachment": {"contentType": "application/pdf", "data": "JVBERi0xLjQKJcfs"}}]});
    let unsafe_narrative = json!({"resourceType": "Observation", "id": "xss-1", "status": "final",
        "code": {"text": "note"},
        "text": {"status": "generated", "div": "<div xmlns=\"http://www.w3.org/1999/xhtml\"><p>hi</p><script>alert(1)</script></div>"}});
    let broken_narrative = json!({"resourceType": "Observation", "id": "broken-1", "status": "final",
        "code": {"text": "note"},
        "text": {"status": "generated", "div": "<div xmlns=\"http://www.w3.org/1999/xhtml\"><p>unclosed"}});
    let untyped = json!({"resourceType": "DocumentReference", "id": "untyped-1", "status": "current",
        "content": [{"attachment": {"data": "SGVsbG8="}}]});
    vec![
        (pdf.to_string(), "binary_content"),
        (unsafe_narrative.to_string(), "unsafe_narrative"),
        (broken_narrative.to_string(), "malformed_narrative"),
        (untyped.to_string(), "binary_content"),
        (
            "{\"resourceType\": \"Observation\", \"id\": ".into(),
            "invalid_json",
        ),
        (
            json!({"resourceType": "Spaceship", "id": "x"}).to_string(),
            "unknown_resource_type",
        ),
    ]
}

fn population_spec() -> Spec {
    Spec {
        patients: 16,
        ..Spec::default()
    }
}

fn phiflow(input: &Path, output: &Path) -> Command {
    phiflow_at(input, output, REFERENCE_DATE)
}

/// `phiflow fhir deidentify` with the export standing at `reference`.
fn phiflow_at(input: &Path, output: &Path, reference: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_phiflow"));
    c.args(["fhir", "deidentify", "--input"])
        .arg(input)
        .arg("--output")
        .arg(output)
        .args(["--progress-interval-seconds", "1"])
        .args(["--reference-date", reference])
        .current_dir(root())
        .env("SERVICE_DEID_SECRET_KEY", SECRET)
        .env("SERVICE_DATA_DIR", common::temp_dir("fhir-deid-data"));
    c
}

fn run_ok(input: &Path, output: &Path) -> String {
    succeeds(phiflow(input, output))
}

/// Runs `phiflow`, asserts it succeeded and returns its stdout.
fn succeeds(mut command: Command) -> String {
    let out = command.output().expect("phiflow runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "phiflow failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The shared run: HL7 examples, a population and the lines to reject, de-identified once.
struct Shared {
    input: PathBuf,
    output: PathBuf,
    population: Population,
    input_lines: usize,
    stdout: String,
}

fn shared() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    S.get_or_init(|| {
        let input = common::temp_dir("fhir-deid-in");
        std::fs::create_dir_all(&input).expect("input dir");
        let hl7 = write_hl7_examples(&input);
        assert!(hl7 > 300, "{hl7} HL7 examples");
        let population = population::generate(&population_spec());
        let pop_dir = input.join("population");
        population.write(&pop_dir).expect("population written");
        for e in std::fs::read_dir(&pop_dir)
            .expect("population dir")
            .flatten()
        {
            let name = format!("pop-{}", e.file_name().to_string_lossy());
            std::fs::rename(e.path(), input.join(name)).expect("move");
        }
        std::fs::remove_dir(&pop_dir).expect("rm");
        let rejected: Vec<String> = rejected_lines().into_iter().map(|(l, _)| l).collect();
        std::fs::write(input.join("zz-rejects.ndjson"), rejected.join("\n") + "\n")
            .expect("rejects");
        let output = common::temp_dir("fhir-deid-out");
        let stdout = run_ok(&input, &output);
        Shared {
            input_lines: hl7 + population.resources() + rejected.len(),
            input,
            output,
            population,
            stdout,
        }
    })
}

fn summary(output: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(output.join("summary.json")).expect("summary.json"))
        .expect("summary is JSON")
}

fn ndjson(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("ndjson")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each output line is JSON"))
        .collect()
}

fn input_resources(input: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for s in phiflow::fhir::export::sources_in(input).expect("sources") {
        let bytes = std::fs::read(&s.path).expect("read");
        let text = if s.name.ends_with(".gz") {
            let mut d = flate2::read::GzDecoder::new(&bytes[..]);
            let mut t = String::new();
            std::io::Read::read_to_string(&mut d, &mut t).expect("gunzip");
            t
        } else {
            String::from_utf8(bytes).expect("utf-8")
        };
        out.extend(text.lines().filter_map(|l| serde_json::from_str(l).ok()));
    }
    out
}

#[test]
fn hl7_examples_and_a_population_give_ndjson_and_parquet_per_type() {
    let s = shared();
    let sum = summary(&s.output);
    let total = sum["resources_total"].as_u64().expect("total");
    let rejections = sum["rejections"].as_array().expect("rejections");
    assert_eq!(total as usize + rejections.len(), s.input_lines, "{sum:#}");
    assert!(s.stdout.contains("de-identified"), "{}", s.stdout);
    // Rejections: where and why, never the content.
    let by_reason = &sum["rejections_by_reason"];
    let mut want: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, reason) in rejected_lines() {
        *want.entry(reason).or_default() += 1;
    }
    for (reason, n) in want {
        assert!(
            by_reason[reason].as_u64().unwrap_or(0) >= n,
            "{reason}: {by_reason}"
        );
    }
    assert!(
        rejections
            .iter()
            .any(|r| r["reason"] == "opaque_resource_type"
                && r["resource_type"] == "Binary"
                && r["source"] == "hl7-Binary.ndjson"),
        "the HL7 Binary is rejected: {rejections:?}"
    );
    for r in rejections {
        assert!(r["line"].as_u64().is_some_and(|l| l >= 1));
        assert_eq!(r["sha256"].as_str().map(str::len), Some(64));
    }
    // One NDJSON and one Parquet per type, counted and hashed in the summary.
    let schema = table::schema();
    let counts = sum["resources"].as_object().expect("resources");
    assert!(counts.len() > 30, "{counts:?}");
    let outputs = sum["outputs"].as_array().expect("outputs");
    assert_eq!(outputs.len(), counts.len() * 2);
    for o in outputs {
        let path = s.output.join(o["path"].as_str().expect("path"));
        let bytes = std::fs::read(&path).expect("output file");
        assert_eq!(
            o["sha256"].as_str(),
            Some(phiflow::digest::sha256_hex(&bytes).as_str())
        );
        assert_eq!(o["bytes"].as_u64(), Some(bytes.len() as u64));
    }
    let mut sum_counts = 0;
    for (t, n) in counts {
        let n = n.as_u64().expect("count") as usize;
        sum_counts += n;
        let lines = ndjson(&s.output.join(format!("{t}.ndjson")));
        assert_eq!(lines.len(), n, "{t}");
        assert!(lines.iter().all(|r| r["resourceType"] == t.as_str()));
        let batches = table::read(&s.output.join(format!("{t}.parquet"))).expect("parquet");
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, n, "{t}");
        let ids: Vec<String> = batches
            .iter()
            .flat_map(|b| {
                assert_eq!(b.schema().fields(), schema.fields(), "{t}");
                let c = b.column_by_name("id").expect("id").as_string::<i32>();
                (0..c.len())
                    .map(|i| c.value(i).to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        let nd_ids: Vec<String> = lines
            .iter()
            .map(|r| r["id"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(ids, nd_ids, "{t}: Parquet rows follow the NDJSON");
    }
    assert_eq!(sum_counts as u64, total);
    // The analytics columns: the population's notes come out as text, vitals as numbers.
    let obs = table::read(&s.output.join("Observation.parquet")).expect("observations");
    let values: usize = obs
        .iter()
        .map(|b| {
            b.column_by_name("value_number").expect("value").len()
                - b.column_by_name("value_number")
                    .expect("value")
                    .null_count()
        })
        .sum();
    assert!(values >= s.population.people.len(), "{values}");
    let docs = table::read(&s.output.join("DocumentReference.parquet")).expect("documents");
    let texts: Vec<String> = docs
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name("text").expect("text").as_string::<i32>();
            (0..c.len())
                .filter(|&i| c.is_valid(i))
                .map(|i| c.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        texts.iter().filter(|t| t.contains("Progress note")).count() >= s.population.people.len(),
        "decoded notes in the text column"
    );
    let patients = table::read(&s.output.join("Patient.parquet")).expect("patients");
    let with_patient: usize = patients
        .iter()
        .map(|b| {
            let c = b.column_by_name("patient").expect("patient");
            c.len() - c.null_count()
        })
        .sum();
    assert_eq!(
        with_patient,
        counts["Patient"].as_u64().unwrap_or(0) as usize
    );
    // No parts left behind after a finished run.
    assert!(!s.output.join(".phiflow-parts").exists());
}

/// Every value a leak test looks for, with what it is.
fn identifiers_of_patients(resources: &[Value]) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    let mut push = |v: &Value, what: &'static str| {
        if let Some(s) = v.as_str().map(str::trim).filter(|s| s.chars().count() >= 3) {
            out.push((s.to_string(), what));
        }
    };
    for r in resources.iter().filter(|r| r["resourceType"] == "Patient") {
        for n in r["name"].as_array().into_iter().flatten() {
            push(&n["family"], "family name");
            for g in n["given"].as_array().into_iter().flatten() {
                push(g, "given name");
            }
        }
        for i in r["identifier"].as_array().into_iter().flatten() {
            push(&i["value"], "identifier value");
        }
        for t in r["telecom"].as_array().into_iter().flatten() {
            push(&t["value"], "telecom");
        }
        for a in r["address"].as_array().into_iter().flatten() {
            for l in a["line"].as_array().into_iter().flatten() {
                push(l, "street line");
            }
        }
        if let Some(b) = r["birthDate"].as_str() {
            for d in dates::renderings(b) {
                push(&Value::String(d), "birth date");
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Words the surrogate generator itself writes for names, streets and cities: finding one in
/// the output says nothing about a leak (an HL7 example patient is called John, and John is a
/// surrogate first name).
fn surrogate_words() -> BTreeSet<String> {
    use phiflow::deid::surrogates::{SeedRng, surrogate};
    let mut out = BTreeSet::new();
    for i in 0..20_000u32 {
        let mut seed = [0u8; 32];
        seed[..4].copy_from_slice(&i.to_le_bytes());
        let mut rng = SeedRng::new(seed);
        for (label, original) in [
            ("FIRST_NAME", "Zzyzx"),
            ("LAST_NAME", "Zzyzx"),
            ("STREET_ADDRESS", "12 Zzyzx Road"),
            ("CITY", "Zzyzx"),
        ] {
            if let Some(s) = surrogate(label, original, &mut rng) {
                out.extend(
                    s.split(|c: char| !c.is_alphanumeric())
                        .filter(|w| !w.is_empty())
                        .map(str::to_lowercase),
                );
            }
        }
    }
    out
}

/// Strings the input uses as codes, URIs or lot numbers: an HL7 example patient's identifier
/// `12345` is also a Medication's lot number and part of a system URI there, which no
/// de-identification changes (the population's values never collide like this).
fn non_identifying_strings(resources: &[Value]) -> String {
    fn walk(v: &Value, key: &str, out: &mut String) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, c)| walk(c, k, out)),
            Value::Array(a) => a.iter().for_each(|c| walk(c, key, out)),
            Value::String(s)
                if matches!(key, "code" | "system" | "url" | "lotNumber" | "reference") =>
            {
                out.push_str(s);
                out.push('\n');
            }
            _ => {}
        }
    }
    let mut out = String::new();
    for r in resources {
        walk(r, "", &mut out);
    }
    out
}

/// JSON string values that are whole FHIR dates blanked: every structured date is shifted by
/// construction (checked in `references_resolve_and_each_patient_moves_by_one_offset`), and a
/// shifted date may equal another patient's birth date by chance.
fn without_structured_dates(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(i) = rest.find('"') {
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        let end = rest.find('"').unwrap_or(rest.len());
        let value = &rest[..end];
        if dates::is_date(value) {
            out.push_str(&"0".repeat(value.len()));
        } else {
            out.push_str(value);
        }
        out.push('"');
        rest = rest.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// Whole-token, case-insensitive occurrences of `needles` in `hay`.
fn leaks(hay: &str, needles: &[(String, &'static str)]) -> Vec<String> {
    let ac = aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(needles.iter().map(|(n, _)| n))
        .expect("automaton");
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    ac.find_overlapping_iter(hay)
        .filter(|m| {
            !word(hay[..m.start()].chars().next_back()) && !word(hay[m.end()..].chars().next())
        })
        .map(|m| {
            let (v, what) = &needles[m.pattern().as_usize()];
            let ctx_start = hay.floor_char_boundary(m.start().saturating_sub(60));
            let ctx_end = hay.ceil_char_boundary((m.end() + 60).min(hay.len()));
            format!("{what} {v:?} in …{}…", &hay[ctx_start..ctx_end])
        })
        .collect()
}

fn parquet_strings(path: &Path) -> String {
    let mut out = String::new();
    for b in table::read(path).expect("parquet") {
        for c in b.columns() {
            if c.data_type() == &DataType::Utf8 {
                let c = c.as_string::<i32>();
                for i in (0..c.len()).filter(|&i| c.is_valid(i)) {
                    out.push_str(c.value(i));
                    out.push('\n');
                }
            }
        }
    }
    out
}

#[test]
fn no_patient_identifier_survives_anywhere() {
    let s = shared();
    let resources = input_resources(&s.input);
    let surrogates = surrogate_words();
    let codes = non_identifying_strings(&resources);
    let all = identifiers_of_patients(&resources);
    let mut needles: Vec<(String, &'static str)> = all
        .iter()
        .filter(|(v, what)| {
            let surrogate = (what.ends_with("name") || *what == "street line")
                && v.split_whitespace()
                    .all(|w| surrogates.contains(&w.to_lowercase()));
            !surrogate && leaks(&codes, &[(v.clone(), what)]).is_empty()
        })
        .cloned()
        .collect();
    // The population is held to every value, with nothing excused.
    for p in &s.population.people {
        for v in [
            &p.given, &p.family, &p.mrn, &p.ssn, &p.phone, &p.email, &p.street,
        ] {
            assert!(needles.iter().any(|(n, _)| n == v), "{v} is looked for");
        }
        let digits: String = p.phone.chars().filter(char::is_ascii_digit).collect();
        needles.push((digits, "phone digits"));
    }
    for (g, f) in &s.population.relatives {
        needles.push((g.clone(), "relative's given name"));
        needles.push((f.clone(), "relative's family name"));
    }
    eprintln!(
        "leak test: {} values of {} looked for",
        needles.len(),
        all.len()
    );
    assert!(needles.len() > 300, "{}", needles.len());
    // The scan finds what it looks for: run over the input, it finds every population
    // patient's name, MRN, phone and street.
    let input_text: String = input_resources(&s.input)
        .iter()
        .map(|r| {
            let mut line = r.to_string();
            for c in r["content"].as_array().into_iter().flatten() {
                let data = c["attachment"]["data"].as_str().unwrap_or_default();
                if let Ok(b) =
                    base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data)
                {
                    line.push_str(&String::from_utf8_lossy(&b));
                }
            }
            line
        })
        .collect();
    let hits = leaks(&input_text, &needles);
    for p in &s.population.people {
        for v in [&p.given, &p.family, &p.mrn, &p.phone, &p.street] {
            assert!(
                hits.iter().any(|h| h.contains(&format!("{v:?}"))),
                "the scan finds {v} in the input"
            );
        }
    }
    let mut found = Vec::new();
    let mut files = 0;
    for e in std::fs::read_dir(&s.output).expect("output").flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).expect("read");
        files += 1;
        let text = if name.ends_with(".parquet") {
            parquet_strings(&path)
        } else {
            String::from_utf8_lossy(&bytes).into_owned()
        };
        found.extend(
            leaks(&without_structured_dates(&text), &needles)
                .into_iter()
                .map(|l| format!("{name}: {l}")),
        );
    }
    assert!(files > 60, "{files} output files");
    assert!(
        found.is_empty(),
        "{} leaks:\n{}",
        found.len(),
        found.join("\n")
    );
    // The structured birth dates moved.
    let out_patients = ndjson(&s.output.join("Patient.ndjson"));
    let p = Pseudonyms::new(SECRET.as_bytes());
    for r in resources.iter().filter(|r| r["resourceType"] == "Patient") {
        let (Some(id), Some(b)) = (r["id"].as_str(), r["birthDate"].as_str()) else {
            continue;
        };
        let out = out_patients
            .iter()
            .find(|o| o["id"].as_str() == Some(&p.id("Patient", id)))
            .expect("patient out");
        if b.len() >= 10 {
            assert_ne!(out["birthDate"].as_str(), Some(b), "{id}");
        }
    }
}

/// Days between two `YYYY-MM-DD…` values.
fn days(from: &str, to: &str) -> i64 {
    let d = |s: &str| chrono::NaiveDate::parse_from_str(&s[..10], "%Y-%m-%d").expect("date");
    (d(to) - d(from)).num_days()
}

#[test]
fn references_resolve_and_each_patient_moves_by_one_offset() {
    let s = shared();
    let p = Pseudonyms::new(SECRET.as_bytes());
    let inputs = input_resources(&s.input);
    let in_patients: BTreeSet<&str> = inputs
        .iter()
        .filter(|r| r["resourceType"] == "Patient")
        .filter_map(|r| r["id"].as_str())
        .collect();
    let out_patients: BTreeSet<String> = ndjson(&s.output.join("Patient.ndjson"))
        .iter()
        .filter_map(|r| r["id"].as_str().map(String::from))
        .collect();
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(r) = m.get("reference").and_then(Value::as_str) {
                    out.push(r.to_string());
                }
                m.values().for_each(|c| refs(c, out));
            }
            Value::Array(a) => a.iter().for_each(|c| refs(c, out)),
            _ => {}
        }
    }
    // A reference to a patient that is in the export resolves after, one that was not does
    // not (and names the pseudonym of what it named).
    let mut resolved = 0;
    for e in std::fs::read_dir(&s.output).expect("output").flatten() {
        if !e.file_name().to_string_lossy().ends_with(".ndjson") {
            continue;
        }
        let mut out = Vec::new();
        for r in ndjson(&e.path()) {
            refs(&r, &mut out);
        }
        for r in out.iter().filter_map(|r| r.strip_prefix("Patient/")) {
            assert_eq!(r.len(), 32, "{r}");
            if out_patients.contains(r) {
                resolved += 1;
            } else {
                assert!(
                    !in_patients.iter().any(|id| p.id("Patient", id) == r),
                    "Patient/{r} names an exported patient but does not resolve"
                );
            }
        }
    }
    assert!(resolved > 200, "{resolved}");
    for id in &in_patients {
        assert!(out_patients.contains(&p.id("Patient", id)), "{id}");
    }
    // The population: one offset per patient across every type, and not zero for all.
    let out_by_id: HashMap<String, Value> = std::fs::read_dir(&s.output)
        .expect("output")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".ndjson"))
        .flat_map(|e| ndjson(&e.path()))
        .map(|r| {
            let key = format!(
                "{}/{}",
                r["resourceType"].as_str().unwrap_or_default(),
                r["id"].as_str().unwrap_or_default()
            );
            (key, r)
        })
        .collect();
    let mut offsets = BTreeSet::new();
    for person in &s.population.people {
        let mut seen = BTreeSet::new();
        for r in inputs.iter().filter(|r| {
            r["id"].as_str() == Some(&person.id)
                || r["subject"]["reference"].as_str() == Some(&format!("Patient/{}", person.id))
        }) {
            let t = r["resourceType"].as_str().expect("type");
            let key = format!("{t}/{}", p.id(t, r["id"].as_str().expect("id")));
            // The one rejected (a PDF) has no output.
            let Some(out) = out_by_id.get(&key) else {
                assert_eq!(r["id"], "scan-1");
                continue;
            };
            for ptr in [
                "/birthDate",
                "/period/start",
                "/effectiveDateTime",
                "/issued",
                "/onsetDateTime",
                "/recordedDate",
                "/authoredOn",
                "/date",
                "/content/0/attachment/creation",
            ] {
                if let (Some(a), Some(b)) = (
                    r.pointer(ptr).and_then(Value::as_str),
                    out.pointer(ptr).and_then(Value::as_str),
                ) {
                    // A birth date over 89 became a year (ages_over_89_… checks it).
                    if ptr == "/birthDate" && b.len() == 4 {
                        let at = chrono::NaiveDate::parse_from_str(REFERENCE_DATE, "%Y-%m-%d")
                            .expect("date");
                        assert!(phiflow::fhir::ages::over_89(a, at), "{a} → {b}");
                        continue;
                    }
                    seen.insert(days(a, b));
                    // The time of day and the zone stay.
                    assert_eq!(a.get(10..), b.get(10..), "{ptr}");
                }
            }
        }
        assert_eq!(seen.len(), 1, "{}: offsets {seen:?}", person.id);
        offsets.extend(seen);
    }
    assert!(offsets.iter().any(|&d| d != 0), "{offsets:?}");
    assert!(
        offsets.len() > 1,
        "offsets differ between patients: {offsets:?}"
    );
}

/// Tags balance (a small XML check beside the parser's own).
fn balanced(div: &str) -> bool {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = div;
    while let Some(i) = rest.find('<') {
        let Some(j) = rest[i..].find('>') else {
            return false;
        };
        let tag = &rest[i + 1..i + j];
        rest = &rest[i + j + 1..];
        if tag.ends_with('/') {
            continue;
        }
        let name = tag
            .trim_start_matches('/')
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        if tag.starts_with('/') {
            if stack.pop().as_deref() != Some(name.as_str()) {
                return false;
            }
        } else {
            stack.push(name);
        }
    }
    stack.is_empty() && !rest.contains('>')
}

#[test]
fn narrative_stays_well_formed_and_unsafe_narrative_is_rejected() {
    let s = shared();
    let mut narratives = 0;
    for e in std::fs::read_dir(&s.output).expect("output").flatten() {
        if !e.file_name().to_string_lossy().ends_with(".ndjson") {
            continue;
        }
        for r in ndjson(&e.path()) {
            if let Some(div) = r["text"]["div"].as_str() {
                narratives += 1;
                assert!(div.starts_with("<div"), "{div}");
                assert!(xhtml::parse(div).is_ok(), "{div}");
                assert!(balanced(div), "{div}");
                assert!(!div.contains("<!--") && !div.contains("<script"));
            }
        }
    }
    assert!(narratives > 300, "{narratives}");
    let sum = summary(&s.output);
    let reasons: Vec<&str> = sum["rejections"]
        .as_array()
        .expect("rejections")
        .iter()
        .filter(|r| r["source"] == "zz-rejects.ndjson")
        .filter_map(|r| r["reason"].as_str())
        .collect();
    let want: Vec<&str> = rejected_lines().iter().map(|(_, r)| *r).collect();
    assert_eq!(reasons, want);
    // The population's encounter narratives still say what they said, without the name.
    let enc = ndjson(&s.output.join("Encounter.ndjson"));
    assert!(
        enc.iter()
            .filter_map(|r| r["text"]["div"].as_str())
            .any(|d| d.contains("Check-up for <b>") && d.contains("&amp; family")),
        "narrative text kept around the names"
    );
}

/// Every file under `dir` (relative path → bytes).
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(dir)
                    .expect("rel")
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

#[test]
fn a_run_killed_mid_way_resumes_to_the_same_bytes() {
    // A population spread over several files (one part each), notes in every file.
    let pop = population::generate(&Spec {
        seed: 7,
        patients: 24,
        ..Spec::default()
    });
    let input = common::temp_dir("fhir-kill-in");
    std::fs::create_dir_all(&input).expect("input");
    let all: Vec<&String> = pop.lines.values().flatten().collect();
    let chunks = 8;
    for k in 0..chunks {
        let lines: Vec<&str> = all
            .iter()
            .skip(k)
            .step_by(chunks)
            .map(|s| s.as_str())
            .collect();
        std::fs::write(
            input.join(format!("chunk-{k}.ndjson")),
            lines.join("\n") + "\n",
        )
        .expect("chunk");
    }
    let killed = common::temp_dir("fhir-kill-out");
    let mut child = phiflow(&input, &killed)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let parts = killed.join(".phiflow-parts");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let done = std::fs::read_dir(&parts)
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        let n = e.file_name().to_string_lossy().into_owned();
                        n.starts_with("part-") && n.ends_with(".json")
                    })
                    .count()
            })
            .unwrap_or(0);
        if done >= 2 {
            break;
        }
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the run ended before it could be killed"
        );
        assert!(Instant::now() < deadline, "no part after 5 minutes");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("kill -9");
    child.wait().expect("reaped");
    assert!(
        !killed.join("summary.json").exists(),
        "killed before it finished"
    );
    let parts_before = std::fs::read_dir(&parts).expect("parts").count();
    assert!(parts_before >= 4, "{parts_before}");
    run_ok(&input, &killed);
    let straight = common::temp_dir("fhir-straight-out");
    run_ok(&input, &straight);
    let (a, b) = (tree(&killed), tree(&straight));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "same files"
    );
    for (name, bytes) in &a {
        assert!(bytes == &b[name], "{name} differs after resuming");
    }
    assert!(a.contains_key("summary.json") && a.contains_key("DocumentReference.parquet"));
}

#[test]
fn without_the_secret_key_it_says_which_setting_is_missing() {
    let input = common::temp_dir("fhir-nokey-in");
    std::fs::create_dir_all(&input).expect("input");
    std::fs::write(input.join("Patient.ndjson"), "{}\n").expect("write");
    let out = phiflow(&input, &common::temp_dir("fhir-nokey-out"))
        .env_remove("SERVICE_DEID_SECRET_KEY")
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("SERVICE_DEID_SECRET_KEY"), "{stderr}");
    // And an input folder without NDJSON is named as such.
    let empty = common::temp_dir("fhir-empty-in");
    std::fs::create_dir_all(&empty).expect("empty");
    let out = phiflow(&empty, &common::temp_dir("fhir-empty-out"))
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no *.ndjson"));
}

/// A fixture with people on both sides of 90, living and dead, and ages in other resources.
fn ages_fixture(dir: &Path) {
    std::fs::create_dir_all(dir).expect("input");
    let patients = [
        json!({"resourceType": "Patient", "id": "old-95", "birthDate": "1931-03-15",
               "name": [{"family": "Quillfeather", "given": ["Ottoline"]}]}),
        json!({"resourceType": "Patient", "id": "just-90", "birthDate": "1936-06-30"}),
        json!({"resourceType": "Patient", "id": "still-89", "birthDate": "1936-07-01"}),
        json!({"resourceType": "Patient", "id": "died-at-95", "birthDate": "1900-01-10",
               "deceasedDateTime": "1995-05-01T10:00:00Z"}),
        json!({"resourceType": "Patient", "id": "died-at-60", "birthDate": "1920-01-10",
               "deceasedDateTime": "1980-01-11"}),
    ];
    let lines = |v: &[Value]| v.iter().map(|r| r.to_string() + "\n").collect::<String>();
    std::fs::write(dir.join("Patient.ndjson"), lines(&patients)).expect("patients");
    let subject = |id: &str| json!({"reference": format!("Patient/{id}")});
    let others = [
        json!({"resourceType": "Condition", "id": "c-1", "subject": subject("old-95"),
               "code": {"text": "Hip fracture"}, "recordedDate": "2026-01-02",
               "onsetAge": {"value": 93, "unit": "years", "system": "http://unitsofmeasure.org", "code": "a"}}),
        json!({"resourceType": "Condition", "id": "c-2", "subject": subject("still-89"),
               "code": {"text": "Cataract"},
               "onsetAge": {"value": 45, "unit": "years", "system": "http://unitsofmeasure.org", "code": "a"}}),
        json!({"resourceType": "Observation", "id": "o-age", "status": "final", "subject": subject("old-95"),
               "code": {"coding": [{"system": "http://loinc.org", "code": "30525-0", "display": "Age"}]},
               "effectiveDateTime": "2026-01-02", "valueQuantity": {"value": 94, "unit": "a"}}),
        json!({"resourceType": "FamilyMemberHistory", "id": "f-1", "status": "completed",
               "patient": subject("still-89"), "relationship": {"text": "mother"},
               "ageRange": {"low": {"value": 91, "code": "a"}, "high": {"value": 99, "code": "a"}}}),
        json!({"resourceType": "Encounter", "id": "e-1", "status": "finished", "subject": subject("old-95"),
               "class": {"code": "AMB"}, "period": {"start": "2026-01-02T09:00:00Z"}}),
        json!({"resourceType": "DiagnosticReport", "id": "d-1", "status": "final", "subject": subject("old-95"),
               "code": {"text": "Discharge summary"},
               "conclusion": "Ottoline Quillfeather (DOB 03/15/1931) is a 93-year-old woman, born in 1931, \
                              admitted after a fall. Age 93. Discharged home."}),
    ];
    std::fs::write(dir.join("Other.ndjson"), lines(&others)).expect("others");
}

fn by_source_id(output: &Path, t: &str) -> HashMap<String, Value> {
    let p = Pseudonyms::new(SECRET.as_bytes());
    let out = ndjson(&output.join(format!("{t}.ndjson")));
    [
        "old-95",
        "just-90",
        "still-89",
        "died-at-95",
        "died-at-60",
        "c-1",
        "c-2",
        "o-age",
        "f-1",
        "e-1",
        "d-1",
    ]
    .iter()
    .filter_map(|id| {
        let pseudonym = p.id(t, id);
        out.iter()
            .find(|r| r["id"] == pseudonym.as_str())
            .map(|r| (id.to_string(), r.clone()))
    })
    .collect()
}

#[test]
fn ages_over_89_are_aggregated_in_structured_fields() {
    let input = common::temp_dir("fhir-ages-in");
    ages_fixture(&input);
    let output = common::temp_dir("fhir-ages-out");
    // At the reference date (2026-11-25) "just-90" and "still-89" are both 90; the run at an
    // earlier date below tells them apart.
    run_ok(&input, &output);
    let patients = by_source_id(&output, "Patient");
    let extension = |p: &Value| {
        p["_birthDate"]["extension"][0]["url"] == phiflow::fhir::ages::EXTENSION_URL
            && p["_birthDate"]["extension"][0]["valueCode"] == "90-or-older"
    };
    let old = &patients["old-95"];
    assert_eq!(old["birthDate"], "1936", "reference year − 90");
    assert!(extension(old), "{old}");
    let mut without_id = old.clone();
    without_id["id"] = Value::Null;
    assert!(!without_id.to_string().contains("1931"), "{without_id}");
    // Died at 95: 90 at the death date as written (shifted).
    let dead = &patients["died-at-95"];
    let death = dead["deceasedDateTime"].as_str().expect("death");
    let death_year: i32 = death[..4].parse().expect("year");
    assert_eq!(dead["birthDate"], format!("{}", death_year - 90));
    assert!(extension(dead));
    // Died at 60: the birth date is a date, shifted like the death date.
    let young_dead = &patients["died-at-60"];
    let b = young_dead["birthDate"].as_str().expect("birth");
    assert_eq!(b.len(), 10, "{b}");
    assert_eq!(
        days("1920-01-10", b),
        days(
            "1980-01-11",
            young_dead["deceasedDateTime"].as_str().expect("death")
        )
    );
    assert!(young_dead.get("_birthDate").is_none());
    // Ages in the other resources of the patient.
    let conditions = by_source_id(&output, "Condition");
    let onset = &conditions["c-1"]["onsetAge"];
    assert_eq!(
        (onset["value"].clone(), onset["comparator"].clone()),
        (json!(90), json!(">="))
    );
    assert_eq!(conditions["c-2"]["onsetAge"]["value"], 45);
    let obs = by_source_id(&output, "Observation");
    assert_eq!(obs["o-age"]["valueQuantity"]["value"], 90);
    assert_eq!(obs["o-age"]["valueQuantity"]["comparator"], ">=");
    let fmh = by_source_id(&output, "FamilyMemberHistory");
    assert_eq!(
        fmh["f-1"]["ageRange"],
        json!({"low": {"value": 90, "unit": "years",
        "system": "http://unitsofmeasure.org", "code": "a"}})
    );
    // The patient's other dates still move by the patient's one offset.
    let enc = by_source_id(&output, "Encounter");
    let cond_date = conditions["c-1"]["recordedDate"].as_str().expect("date");
    assert_eq!(
        days("2026-01-02", cond_date),
        days(
            "2026-01-02",
            enc["e-1"]["period"]["start"].as_str().expect("start")
        )
    );
    // The patient's notes: ages as "90+" (the pipeline), and the birth year the date's
    // generalisation would keep ("DOB 1931") or the model would miss ("born in 1931") as the
    // structured data's year.
    let reports = by_source_id(&output, "DiagnosticReport");
    let note = reports["d-1"]["conclusion"].as_str().expect("conclusion");
    assert!(
        !note.contains("1931") && !note.contains(" 93") && !note.contains("93-year"),
        "{note}"
    );
    assert!(note.contains("1936") && note.contains("90+"), "{note}");
    let s = summary(&output);
    assert_eq!(s["reference_date"], REFERENCE_DATE);
    // Birth dates of old-95, just-90, still-89 (90 on 2026-07-01), died-at-95; c-1, o-age, f-1.
    assert_eq!(s["ages_aggregated"], 7, "{s}");

    // At an earlier reference date "still-89" keeps a (shifted) birth date and "just-90" does
    // not; without a policy nothing is aggregated.
    let earlier = common::temp_dir("fhir-ages-earlier");
    succeeds(phiflow_at(&input, &earlier, "2026-06-30"));
    let patients = by_source_id(&earlier, "Patient");
    assert_eq!(patients["just-90"]["birthDate"], "1936");
    assert_eq!(
        patients["still-89"]["birthDate"].as_str().map(str::len),
        Some(10)
    );
    let none = common::temp_dir("fhir-ages-none");
    let mut no_policy = phiflow(&input, &none);
    no_policy.args(["--policy", "none"]);
    succeeds(no_policy);
    let patients = by_source_id(&none, "Patient");
    assert_eq!(
        patients["old-95"]["birthDate"].as_str().map(str::len),
        Some(10)
    );
    assert_eq!(summary(&none)["ages_aggregated"], 0);
    // A bad reference date is named.
    let out = phiflow_at(&input, &common::temp_dir("fhir-ages-bad"), "25/11/2026")
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--reference-date"));
}
