//! Records → CDM 5.4 tables in Arrow. Grounded notes become note, note_nlp, clinical event,
//! person, visit, concept and source_to_concept_map rows with deterministic ids; plain rows are
//! type-checked against their table. Anything that cannot be loaded is rejected with its line
//! number and reason, never silently dropped and never echoed.

use std::collections::{BTreeMap, HashMap, HashSet};

use arrow_array::RecordBatch;
use arrow_schema::ArrowError;
use serde::Serialize;
use serde_json::{Map, Value};

use super::assertion::Assertion;
use super::cdm::{self, Table};
use super::records::{self, CallerId, GroundedNote, LineError, Record, entity, entity_field};
use super::table_builder::{Cell, TableBuilder};
use super::values::{cell, days, parse_date, stable_id};
use crate::digest::sha256_hex;

/// At most this many rejections are listed; the counts are always complete.
pub const MAX_LISTED_REJECTIONS: usize = 1000;

/// Why a record, or one entity of a note, was not loaded.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Rejection {
    pub reason: &'static str,
    pub line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'static str>,
    /// Index of the entity in its note's entity list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<i64>,
    /// The CDM domain, when the entity's label named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_note_hash: Option<String>,
}

impl Rejection {
    fn line(reason: &'static str, line: usize) -> Self {
        Self {
            reason,
            line,
            table: None,
            field: None,
            entity: None,
            start: None,
            end: None,
            domain: None,
            source_note_hash: None,
        }
    }
}

/// The built tables and the account of what was and was not loaded.
#[derive(Debug)]
pub struct Built {
    /// Every table of [`cdm::TABLES`], in that order.
    pub tables: Vec<(&'static str, RecordBatch)>,
    pub rejections: Vec<Rejection>,
    pub rejection_counts: BTreeMap<&'static str, usize>,
    pub note_hashes: Vec<String>,
    pub records: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Lines that are not records; the load is refused.
    #[error("{} line(s) are not records", .0.len())]
    Lines(Vec<LineError>),
    #[error("records_jsonl holds no records")]
    Empty,
    #[error("arrow: {0}")]
    Arrow(#[from] ArrowError),
}

/// Caps how many line errors one answer lists.
const MAX_LINE_ERRORS: usize = 100;

struct ConceptInfo {
    name: String,
    domain: &'static str,
    vocabulary: String,
    code: String,
}

struct VisitInfo {
    person: i64,
    first: i32,
    last: i32,
    source: Option<String>,
}

/// The whole build state.
struct Builder {
    tables: HashMap<&'static str, TableBuilder>,
    keys: HashMap<&'static str, HashSet<i64>>,
    note_persons: BTreeMap<i64, Option<String>>,
    visits: BTreeMap<i64, VisitInfo>,
    concepts: BTreeMap<i64, ConceptInfo>,
    stcm: HashSet<(String, String, i64, i64)>,
    rejections: Vec<Rejection>,
    counts: BTreeMap<&'static str, usize>,
    note_hashes: Vec<String>,
}

/// Parses and builds all records. Non-record lines refuse the whole load.
pub fn build(records_jsonl: &str) -> Result<Built, BuildError> {
    let mut b = Builder::new();
    let mut line_errors = Vec::new();
    let mut records = 0usize;
    for (i, line) in records_jsonl.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        records += 1;
        match records::parse_line(i + 1, line) {
            Ok(Record::Note(n)) => b.note(i + 1, *n),
            Ok(Record::Row { table, fields }) => b.plain(i + 1, table, fields),
            Err(e) => {
                if line_errors.len() < MAX_LINE_ERRORS {
                    line_errors.push(e);
                }
            }
        }
    }
    if !line_errors.is_empty() {
        return Err(BuildError::Lines(line_errors));
    }
    if records == 0 {
        return Err(BuildError::Empty);
    }
    b.finish(records)
}

impl Builder {
    fn new() -> Self {
        Self {
            tables: cdm::TABLES
                .iter()
                .map(|t| (t.name, TableBuilder::new(t)))
                .collect(),
            keys: HashMap::new(),
            note_persons: BTreeMap::new(),
            visits: BTreeMap::new(),
            concepts: BTreeMap::new(),
            stcm: HashSet::new(),
            rejections: Vec::new(),
            counts: BTreeMap::new(),
            note_hashes: Vec::new(),
        }
    }

    fn reject(&mut self, r: Rejection) {
        *self.counts.entry(r.reason).or_default() += 1;
        if self.rejections.len() < MAX_LISTED_REJECTIONS {
            self.rejections.push(r);
        }
    }

    fn table(&mut self, t: &'static Table) -> &mut TableBuilder {
        self.tables
            .entry(t.name)
            .or_insert_with(|| TableBuilder::new(t))
    }

    /// Registers a primary key; false when the table already has it.
    fn claim(&mut self, t: &'static Table, id: i64) -> bool {
        self.keys.entry(t.name).or_default().insert(id)
    }

    fn has_key(&self, t: &Table, id: i64) -> bool {
        self.keys.get(t.name).is_some_and(|k| k.contains(&id))
    }

    /// One plain CDM row: every column type-checked, required columns present, unknown
    /// columns refused, primary key unique.
    fn plain(&mut self, line: usize, table: &'static Table, fields: Map<String, Value>) {
        let reject = |reason, field| Rejection {
            table: Some(table.name),
            field,
            ..Rejection::line(reason, line)
        };
        if fields.keys().any(|k| table.index(k).is_none()) {
            return self.reject(reject("unknown_column", None));
        }
        let mut row = Vec::with_capacity(table.columns.len());
        for col in table.columns {
            let v = fields.get(col.name).unwrap_or(&Value::Null);
            match cell(col.ty, v) {
                None => return self.reject(reject("invalid_value", Some(col.name))),
                Some(Cell::Null) if col.required => {
                    return self.reject(reject("missing_required_field", Some(col.name)));
                }
                Some(c) => row.push(c),
            }
        }
        if table.name == cdm::NOTE_NLP.name
            && let Some(Cell::Text(m)) = table.index("term_modifiers").map(|i| &row[i])
            && Assertion::from_modifiers(m).is_none()
        {
            // Cohorts read assertions from here; one we cannot read is refused, not guessed.
            return self.reject(reject("invalid_value", Some("term_modifiers")));
        }
        let key_col = table.primary_key.unwrap_or("person_id");
        if let Some(Cell::Int(id)) = table.index(key_col).map(|i| &row[i]) {
            if *id < 0 {
                return self.reject(reject("invalid_value", Some(key_col)));
            }
            if !self.claim(table, *id) {
                return self.reject(reject("duplicate_id", Some(key_col)));
            }
        }
        self.table(table).append(row);
    }

    fn note(&mut self, line: usize, n: GroundedNote) {
        let (note_id, note_source) = resolve_id("note", &[], &n.note);
        let (person_id, person_source) = resolve_id("person", &[], &n.person);
        let hash = n.hash.clone().unwrap_or_else(|| match &n.text {
            Some(t) => sha256_hex(t),
            None => sha256_hex(id_text(&n.note)),
        });
        let reject_note = |reason, field| Rejection {
            table: Some("note"),
            field,
            source_note_hash: Some(hash.clone()),
            ..Rejection::line(reason, line)
        };
        let date = match n.date.as_ref() {
            None => return self.reject(reject_note("missing_required_field", Some("note_date"))),
            Some(v) => match v.as_str().and_then(parse_date) {
                Some(d) => days(d),
                None => return self.reject(reject_note("invalid_value", Some("note_date"))),
            },
        };
        if !self.claim(&cdm::NOTE, note_id) {
            return self.reject(reject_note("duplicate_id", Some("note_id")));
        }
        self.note_persons.entry(person_id).or_insert(person_source);
        let visit_id = n.visit.as_ref().map(|v| {
            let (id, source) = resolve_id("visit", &[&person_id.to_string()], v);
            let info = self.visits.entry(id).or_insert(VisitInfo {
                person: person_id,
                first: date,
                last: date,
                source,
            });
            info.first = info.first.min(date);
            info.last = info.last.max(date);
            id
        });
        let text_chars = n.text.as_ref().map(|t| t.chars().count());
        let t = self.table(&cdm::NOTE);
        let mut row = t.blank();
        t.set(&mut row, "note_id", Cell::Int(note_id));
        t.set(&mut row, "person_id", Cell::Int(person_id));
        t.set(&mut row, "note_date", Cell::Date(date));
        t.set(
            &mut row,
            "note_type_concept_id",
            Cell::Int(cdm::EHR_TYPE_CONCEPT),
        );
        t.set(&mut row, "note_class_concept_id", Cell::Int(0));
        t.set(
            &mut row,
            "note_text",
            Cell::Text(n.text.clone().unwrap_or_default()),
        );
        t.set(
            &mut row,
            "encoding_concept_id",
            Cell::Int(cdm::UTF8_CONCEPT),
        );
        t.set(&mut row, "language_concept_id", Cell::Int(0));
        if let Some(v) = visit_id {
            t.set(&mut row, "visit_occurrence_id", Cell::Int(v));
        }
        if let Some(s) = note_source {
            t.set(&mut row, "note_source_value", Cell::Text(s));
        }
        t.append(row);
        let h = self.table(&cdm::NOTE_HASH);
        h.append(vec![Cell::Int(note_id), Cell::Text(hash.clone())]);
        self.note_hashes.push(hash.clone());

        let starts = n.text.as_deref().map(|t| byte_starts(t, &n.entities));
        let ctx = NoteCtx {
            line,
            note_id,
            person_id,
            visit_id,
            date,
            text: n.text.as_deref(),
            text_chars,
            starts,
            hash: &hash,
        };
        for (i, e) in n.entities.iter().enumerate() {
            self.entity(&ctx, i, e);
        }
    }

    fn entity(&mut self, ctx: &NoteCtx<'_>, index: usize, e: &Map<String, Value>) {
        let start_v = entity_field(e, entity::START);
        let end_v = entity_field(e, entity::END);
        let domain = entity_field(e, entity::DOMAIN)
            .and_then(Value::as_str)
            .and_then(records::canonical_domain);
        let mut rej = Rejection {
            table: Some("note_nlp"),
            entity: Some(index),
            domain,
            source_note_hash: Some(ctx.hash.to_string()),
            start: start_v.and_then(Value::as_i64),
            end: end_v.and_then(Value::as_i64),
            ..Rejection::line("", ctx.line)
        };
        let (Some(start_v), Some(end_v)) = (start_v, end_v) else {
            rej.reason = "missing_offset";
            return self.reject(rej);
        };
        let (Some(start), Some(end)) = (start_v.as_i64(), end_v.as_i64()) else {
            rej.reason = "invalid_offset";
            return self.reject(rej);
        };
        if start < 0 || end < start || ctx.text_chars.is_some_and(|n| end as u64 > n as u64) {
            rej.reason = "invalid_offset";
            return self.reject(rej);
        }
        let Some(domain) = domain else {
            rej.reason = "unsupported_domain";
            return self.reject(rej);
        };
        let concept_id = match entity_field(e, entity::CONCEPT) {
            None => Some(0),
            Some(v) => concept_number(v),
        };
        let source_concept_id = match entity_field(e, entity::SOURCE_CONCEPT) {
            None => Some(0),
            Some(v) => concept_number(v),
        };
        let (Some(concept_id), Some(source_concept_id)) = (concept_id, source_concept_id) else {
            rej.reason = "invalid_concept";
            return self.reject(rej);
        };
        let Ok(assertion) = Assertion::from_entity(e) else {
            rej.reason = "invalid_assertion";
            return self.reject(rej);
        };
        let text_field = |aliases| entity_field(e, aliases).and_then(Value::as_str);
        let nlp_id = stable_id(&[
            "note_nlp",
            &ctx.note_id.to_string(),
            &start.to_string(),
            &end.to_string(),
            domain,
            &concept_id.to_string(),
        ]);
        if !self.claim(&cdm::NOTE_NLP, nlp_id) {
            rej.reason = "duplicate_span";
            return self.reject(rej);
        }
        let take = ((end - start) as usize).min(LEXICAL_MAX_CHARS);
        let lexical: String = match text_field(entity::TEXT) {
            Some(given) => given.chars().take(LEXICAL_MAX_CHARS).collect(),
            None => match (ctx.text, &ctx.starts) {
                (Some(t), Some(starts)) => starts
                    .get(&(start as usize))
                    .map(|b| t[*b..].chars().take(take).collect())
                    .unwrap_or_default(),
                _ => String::new(),
            },
        };
        let vocabulary = text_field(entity::VOCABULARY).map(str::to_string);
        let code = text_field(entity::CODE).map(str::to_string);
        if concept_id != 0
            && let Some(vocab) = &vocabulary
        {
            self.concepts
                .entry(concept_id)
                .or_insert_with(|| ConceptInfo {
                    name: text_field(entity::NAME)
                        .map(str::to_string)
                        .or_else(|| code.clone())
                        .unwrap_or_else(|| concept_id.to_string()),
                    domain,
                    vocabulary: vocab.clone(),
                    code: code.clone().unwrap_or_else(|| concept_id.to_string()),
                });
            if let Some(code) = &code {
                self.stcm
                    .insert((code.clone(), vocab.clone(), source_concept_id, concept_id));
            }
        }

        let t = self.table(&cdm::NOTE_NLP);
        let mut row = t.blank();
        t.set(&mut row, "note_nlp_id", Cell::Int(nlp_id));
        t.set(&mut row, "note_id", Cell::Int(ctx.note_id));
        t.set(&mut row, "offset", Cell::Text(format!("{start}-{end}")));
        t.set(&mut row, "lexical_variant", Cell::Text(lexical));
        t.set(&mut row, "note_nlp_concept_id", Cell::Int(concept_id));
        t.set(
            &mut row,
            "note_nlp_source_concept_id",
            Cell::Int(source_concept_id),
        );
        t.set(&mut row, "nlp_date", Cell::Date(ctx.date));
        let exists = if assertion.asserted() { "Y" } else { "N" };
        t.set(&mut row, "term_exists", Cell::Text(exists.into()));
        t.set(
            &mut row,
            "term_temporal",
            Cell::Text(assertion.temporality.as_str().into()),
        );
        t.set(
            &mut row,
            "term_modifiers",
            Cell::Text(assertion.modifiers()),
        );
        t.append(row);

        if assertion.asserted()
            && let Some(et) = cdm::event_table_for_domain(domain)
        {
            if !self.claim(et.table, nlp_id) {
                // A plain row already holds this id: the mention stays in note_nlp alone.
                rej.reason = "duplicate_id";
                rej.table = Some(et.table.name);
                return self.reject(rej);
            }
            let link = self.table(&cdm::DERIVED_EVENT);
            link.append(vec![
                Cell::Int(nlp_id),
                Cell::Text(et.table.name.into()),
                Cell::Int(concept_id),
            ]);
            let t = self.table(et.table);
            let mut row = t.blank();
            if let Some(pk) = et.table.primary_key {
                t.set(&mut row, pk, Cell::Int(nlp_id));
            }
            t.set(&mut row, "person_id", Cell::Int(ctx.person_id));
            t.set(&mut row, et.concept, Cell::Int(concept_id));
            t.set(&mut row, et.start_date, Cell::Date(ctx.date));
            if et.table.name == cdm::DRUG_EXPOSURE.name {
                // Required by the CDM; a mention has no duration of its own.
                t.set(&mut row, "drug_exposure_end_date", Cell::Date(ctx.date));
            }
            t.set(&mut row, et.type_concept, Cell::Int(cdm::NLP_TYPE_CONCEPT));
            if let Some(v) = ctx.visit_id {
                t.set(&mut row, "visit_occurrence_id", Cell::Int(v));
            }
            t.append(row);
        }
    }

    /// Rows implied by the notes that no plain row supplied: persons, visits, concepts (with
    /// concept 0, "No matching concept"), and the source-to-concept map.
    fn finish(mut self, records: usize) -> Result<Built, BuildError> {
        for (id, source) in std::mem::take(&mut self.note_persons) {
            if self.has_key(&cdm::PERSON, id) {
                continue;
            }
            let t = self.table(&cdm::PERSON);
            let mut row = t.blank();
            t.set(&mut row, "person_id", Cell::Int(id));
            for c in [
                "gender_concept_id",
                "race_concept_id",
                "ethnicity_concept_id",
            ] {
                t.set(&mut row, c, Cell::Int(0));
            }
            if let Some(s) = source {
                t.set(&mut row, "person_source_value", Cell::Text(s));
            }
            t.append(row);
        }
        for (id, v) in std::mem::take(&mut self.visits) {
            if self.has_key(&cdm::VISIT_OCCURRENCE, id) {
                continue;
            }
            let t = self.table(&cdm::VISIT_OCCURRENCE);
            let mut row = t.blank();
            t.set(&mut row, "visit_occurrence_id", Cell::Int(id));
            t.set(&mut row, "person_id", Cell::Int(v.person));
            t.set(&mut row, "visit_concept_id", Cell::Int(0));
            t.set(&mut row, "visit_start_date", Cell::Date(v.first));
            t.set(&mut row, "visit_end_date", Cell::Date(v.last));
            t.set(
                &mut row,
                "visit_type_concept_id",
                Cell::Int(cdm::EHR_TYPE_CONCEPT),
            );
            if let Some(s) = v.source {
                t.set(&mut row, "visit_source_value", Cell::Text(s));
            }
            t.append(row);
        }
        let (valid_from, valid_to) = validity();
        let mut concepts = std::mem::take(&mut self.concepts);
        concepts.entry(0).or_insert(ConceptInfo {
            name: "No matching concept".into(),
            domain: "Metadata",
            vocabulary: "None".into(),
            code: "No matching concept".into(),
        });
        for (id, c) in concepts {
            if self.has_key(&cdm::CONCEPT, id) {
                continue;
            }
            let t = self.table(&cdm::CONCEPT);
            let mut row = t.blank();
            t.set(&mut row, "concept_id", Cell::Int(id));
            t.set(&mut row, "concept_name", Cell::Text(c.name));
            t.set(&mut row, "domain_id", Cell::Text(c.domain.into()));
            t.set(&mut row, "vocabulary_id", Cell::Text(c.vocabulary));
            t.set(&mut row, "concept_class_id", Cell::Text("Undefined".into()));
            t.set(&mut row, "concept_code", Cell::Text(c.code));
            t.set(&mut row, "valid_start_date", Cell::Date(valid_from));
            t.set(&mut row, "valid_end_date", Cell::Date(valid_to));
            t.append(row);
        }
        let mut stcm: Vec<_> = std::mem::take(&mut self.stcm).into_iter().collect();
        stcm.sort();
        for (code, vocab, source, target) in stcm {
            let t = self.table(&cdm::SOURCE_TO_CONCEPT_MAP);
            let mut row = t.blank();
            t.set(&mut row, "source_code", Cell::Text(code));
            t.set(&mut row, "source_concept_id", Cell::Int(source));
            t.set(&mut row, "source_vocabulary_id", Cell::Text(vocab.clone()));
            t.set(&mut row, "target_concept_id", Cell::Int(target));
            t.set(&mut row, "target_vocabulary_id", Cell::Text(vocab));
            t.set(&mut row, "valid_start_date", Cell::Date(valid_from));
            t.set(&mut row, "valid_end_date", Cell::Date(valid_to));
            t.append(row);
        }
        let mut tables = Vec::with_capacity(cdm::TABLES.len());
        for t in cdm::TABLES {
            if t.name == cdm::PERSON_INDEX.name {
                continue;
            }
            let builder = self
                .tables
                .remove(t.name)
                .unwrap_or_else(|| TableBuilder::new(t));
            tables.push((t.name, builder.finish()?));
        }
        for (name, batch) in tables.iter_mut() {
            if let Some(column) = concept_column(name) {
                *batch = sorted_by(batch, column)?;
            }
        }
        let index = person_index(&tables)?;
        let at = cdm::TABLES
            .iter()
            .position(|t| t.name == cdm::PERSON_INDEX.name)
            .unwrap_or(tables.len());
        tables.insert(at, (cdm::PERSON_INDEX.name, index));
        let mut note_hashes = self.note_hashes;
        note_hashes.sort();
        note_hashes.dedup();
        Ok(Built {
            tables,
            rejections: self.rejections,
            rejection_counts: self.counts,
            note_hashes,
            records,
        })
    }
}

/// The concept column a table is clustered by: cohorts filter on it, and sorted rows give
/// each Parquet row group a narrow concept range to skip by.
fn concept_column(table: &str) -> Option<&'static str> {
    if table == cdm::NOTE_NLP.name {
        return Some("note_nlp_concept_id");
    }
    if table == cdm::DERIVED_EVENT.name {
        return Some("concept_id");
    }
    cdm::EVENT_TABLES
        .iter()
        .find(|e| e.table.name == table)
        .map(|e| e.concept)
}

/// The rows of `batch` ordered by an integer column (stable; nulls first).
fn sorted_by(batch: &RecordBatch, column: &str) -> Result<RecordBatch, ArrowError> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    let Some(values) = batch
        .column_by_name(column)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
    else {
        return Ok(batch.clone());
    };
    let mut order: Vec<u32> = (0..batch.num_rows() as u32).collect();
    order.sort_by_key(|&i| {
        values
            .is_valid(i as usize)
            .then(|| values.value(i as usize))
    });
    arrow_select::take::take_record_batch(batch, &arrow_array::UInt32Array::from(order))
}

/// The `phiflow_person` table: the person ids of every table that has them.
fn person_index(tables: &[(&'static str, RecordBatch)]) -> Result<RecordBatch, ArrowError> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    let mut ids: Vec<i64> = Vec::new();
    for (_, b) in tables {
        if let Some(c) = b
            .column_by_name("person_id")
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
        {
            ids.extend(c.iter().flatten());
        }
    }
    ids.sort_unstable();
    ids.dedup();
    RecordBatch::try_new(
        cdm::PERSON_INDEX.schema(),
        vec![std::sync::Arc::new(arrow_array::Int64Array::from(ids))],
    )
}

struct NoteCtx<'a> {
    line: usize,
    note_id: i64,
    person_id: i64,
    visit_id: Option<i64>,
    date: i32,
    text: Option<&'a str>,
    text_chars: Option<usize>,
    /// Byte offset of each entity start (code points), found in one pass over the text.
    starts: Option<HashMap<usize, usize>>,
    hash: &'a str,
}

/// CDM `note_nlp.lexical_variant` is varchar(250).
const LEXICAL_MAX_CHARS: usize = 250;

/// Byte offsets of the entities' start positions (in code points), in one pass over the text,
/// so a note with many entities costs its length once, not once per entity.
fn byte_starts(text: &str, entities: &[Map<String, Value>]) -> HashMap<usize, usize> {
    let mut wanted: Vec<usize> = entities
        .iter()
        .filter_map(|e| entity_field(e, entity::START)?.as_u64())
        .filter_map(|s| usize::try_from(s).ok())
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut out = HashMap::with_capacity(wanted.len());
    let mut next = wanted.iter().peekable();
    for (i, (byte, _)) in text.char_indices().chain([(text.len(), ' ')]).enumerate() {
        while next.peek().is_some_and(|w| **w == i) {
            out.insert(i, byte);
            next.next();
        }
        if next.peek().is_none() {
            break;
        }
    }
    out
}

/// A caller id as a CDM id and, for a string id, the source value it is kept under.
pub fn resolve_id(kind: &str, scope: &[&str], id: &CallerId) -> (i64, Option<String>) {
    match id {
        CallerId::Int(i) => (*i, None),
        CallerId::Text(s) => {
            let mut parts = vec![kind];
            parts.extend_from_slice(scope);
            parts.push(s);
            (stable_id(&parts), Some(s.clone()))
        }
    }
}

/// The deterministic id a string person or note id gets (used to tell, from a stored
/// dataset, whether a source value is the caller's own id).
pub fn hashed_id(kind: &str, s: &str) -> i64 {
    stable_id(&[kind, s])
}

fn id_text(id: &CallerId) -> String {
    match id {
        CallerId::Int(i) => i.to_string(),
        CallerId::Text(s) => s.clone(),
    }
}

/// A concept id: a non-negative integer, or a string of digits (NLP systems often emit those).
fn concept_number(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().filter(|i| *i >= 0),
        Value::String(s) => s.trim().parse::<i64>().ok().filter(|i| *i >= 0),
        _ => None,
    }
}

/// The conventional validity range of a current concept: 1970-01-01 to 2099-12-31.
fn validity() -> (i32, i32) {
    let to = chrono::NaiveDate::from_ymd_opt(2099, 12, 31).map_or(47481, days);
    (0, to)
}
