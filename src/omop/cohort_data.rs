//! A load's tables → the flat event table cohorts are evaluated over, and the caller's own
//! person and note ids for the answer. Reads only the columns it needs, so from Parquet it
//! touches a fraction of the dataset.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Date32Builder, Int16Builder, Int64Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, Int64Array, RecordBatch, StringArray,
    new_null_array,
};
use arrow_schema::DataType;
use arrow_select::concat::concat_batches;
use arrow_select::filter::filter_record_batch;
use serde_json::Value;

use super::assertion::{Assertion, Experiencer, Temporality};
use super::build::hashed_id;
use super::cdm::{self, EVENT_TABLES, Table};
use super::constraints::parse_offset;
use super::dataset::{self, DatasetError, KeepIf};
use crate::cohort::events::{CohortData, event_schema, observation_period_schema};
use crate::idhash::{IdMap, IdSet};
use rayon::prelude::*;

/// Where tables come from: a load just built in memory, or a stored dataset.
pub enum Source<'a> {
    Memory(&'a [(&'static str, RecordBatch)]),
    Stored { root: &'a Path, load_id: &'a str },
}

impl Source<'_> {
    /// The named columns of a table (columns missing from the table are an error).
    fn table(&self, t: &Table, columns: &[&str]) -> Result<RecordBatch, DatasetError> {
        self.table_where(t, columns, None)
    }

    /// The named columns of the rows `keep` keeps. From Parquet the filter runs inside the
    /// reader.
    fn table_where(
        &self,
        t: &Table,
        columns: &[&str],
        keep: Option<&KeepIf<'_>>,
    ) -> Result<RecordBatch, DatasetError> {
        match self {
            Source::Memory(tables) => {
                let batch = tables
                    .iter()
                    .find(|(n, _)| *n == t.name)
                    .map(|(_, b)| b)
                    .ok_or(DatasetError::NoTable)?;
                let idx = columns
                    .iter()
                    .map(|c| batch.schema().index_of(c))
                    .collect::<Result<Vec<_>, _>>()?;
                let projected = batch.project(&idx)?;
                let Some(k) = keep else {
                    return Ok(projected);
                };
                let mask: BooleanArray = ints(batch, k.column)?
                    .iter()
                    .map(|v| Some(k.ids.contains(&v.unwrap_or(0))))
                    .collect();
                Ok(filter_record_batch(&projected, &mask)?)
            }
            Source::Stored { root, load_id } => {
                dataset::read_where(root, load_id, t.name, columns, keep)
            }
        }
    }

    /// [`Source::table_where`], from Parquet with the row groups split over the cores.
    fn table_where_split(
        &self,
        t: &Table,
        columns: &[&str],
        keep: Option<&KeepIf<'_>>,
    ) -> Result<RecordBatch, DatasetError> {
        match self {
            Source::Stored { root, load_id } => {
                dataset::read_where_split(root, load_id, t.name, columns, keep)
            }
            Source::Memory(_) => self.table_where(t, columns, keep),
        }
    }
}

fn ints<'a>(b: &'a RecordBatch, col: &str) -> Result<&'a Int64Array, DatasetError> {
    b.column_by_name(col)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .ok_or(DatasetError::BadColumn)
}

fn dates<'a>(
    b: &'a RecordBatch,
    col: &str,
) -> Result<&'a arrow_array::PrimitiveArray<Date32Type>, DatasetError> {
    b.column_by_name(col)
        .and_then(|c| c.as_primitive_opt::<Date32Type>())
        .ok_or(DatasetError::BadColumn)
}

fn strings<'a>(
    b: &'a RecordBatch,
    col: &str,
) -> Result<&'a arrow_array::StringArray, DatasetError> {
    b.column_by_name(col)
        .and_then(|c| c.as_string_opt::<i32>())
        .ok_or(DatasetError::BadColumn)
}

/// The fixed dictionaries of the event table's assertion columns, in the order of the
/// keys `Events::push` writes.
const TEMPORALITIES: [&str; 3] = ["recent", "historical", "hypothetical"];
const CERTAINTIES: [&str; 2] = ["certain", "uncertain"];
const EXPERIENCERS: [&str; 3] = ["patient", "family", "other"];

/// The `domain_table` dictionary: the clinical tables in `EVENT_TABLES` order (key = index),
/// then visits, deaths and mentions that became no clinical event.
fn domain_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = EVENT_TABLES.iter().map(|e| e.table.name).collect();
    v.extend([
        cdm::VISIT_OCCURRENCE.name,
        cdm::DEATH.name,
        cdm::NOTE_NLP.name,
    ]);
    v
}

/// Keys into `TEMPORALITIES`, `CERTAINTIES` and `EXPERIENCERS`.
fn temporality_key(t: Temporality) -> i16 {
    match t {
        Temporality::Recent => 0,
        Temporality::Historical => 1,
        Temporality::Hypothetical => 2,
    }
}

fn certainty_key(certain: bool) -> i16 {
    i16::from(!certain)
}

fn experiencer_key(e: Experiencer) -> i16 {
    match e {
        Experiencer::Patient => 0,
        Experiencer::Family => 1,
        Experiencer::Other => 2,
    }
}

/// `domain_table` keys of the tables after the clinical ones.
const VISIT_KEY: i16 = EVENT_TABLES.len() as i16;
const DEATH_KEY: i16 = VISIT_KEY + 1;
const MENTION_KEY: i16 = VISIT_KEY + 2;

/// The dictionaries every part of one event table shares: the same `Arc`s, so that joining
/// the parts concatenates keys and never merges dictionaries.
struct Dictionaries {
    vocabulary: ArrayRef,
    domain: ArrayRef,
    temporality: ArrayRef,
    certainty: ArrayRef,
    experiencer: ArrayRef,
}

impl Dictionaries {
    fn new(vocabularies: Vec<&str>) -> Self {
        let dict = |v: &[&str]| -> ArrayRef { Arc::new(StringArray::from(v.to_vec())) };
        Self {
            vocabulary: dict(&vocabularies),
            domain: dict(&domain_names()),
            temporality: dict(&TEMPORALITIES),
            certainty: dict(&CERTAINTIES),
            experiencer: dict(&EXPERIENCERS),
        }
    }
}

/// Appends events column by column. The five low-cardinality string columns are written as
/// dictionary keys: a two-byte store per row instead of a string copy.
struct Events {
    person: Int64Builder,
    concept: Int64Builder,
    vocabulary: Int16Builder,
    domain: Int16Builder,
    event: Int64Builder,
    start: Date32Builder,
    end: Date32Builder,
    note: Int64Builder,
    nlp: Int64Builder,
    span_start: Int64Builder,
    span_end: Int64Builder,
    negated: BooleanBuilder,
    temporality: Int16Builder,
    certainty: Int16Builder,
    experiencer: Int16Builder,
}

struct Mention {
    note: i64,
    nlp: i64,
    span: Option<(i64, i64)>,
}

impl Events {
    /// Builders sized for `n` events, so appending never reallocates and copies.
    fn with_capacity(n: usize) -> Self {
        let keys = || Int16Builder::with_capacity(n);
        Self {
            person: Int64Builder::with_capacity(n),
            concept: Int64Builder::with_capacity(n),
            vocabulary: keys(),
            domain: keys(),
            event: Int64Builder::with_capacity(n),
            start: Date32Builder::with_capacity(n),
            end: Date32Builder::with_capacity(n),
            note: Int64Builder::with_capacity(n),
            nlp: Int64Builder::with_capacity(n),
            span_start: Int64Builder::with_capacity(n),
            span_end: Int64Builder::with_capacity(n),
            negated: BooleanBuilder::with_capacity(n),
            temporality: keys(),
            certainty: keys(),
            experiencer: keys(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        person: i64,
        concept: i64,
        vocabulary: Option<i16>,
        domain: i16,
        event: i64,
        start: Option<i32>,
        end: Option<i32>,
        mention: Option<Mention>,
        a: Assertion,
    ) {
        self.person.append_value(person);
        self.concept.append_value(concept);
        self.vocabulary.append_option(vocabulary);
        self.domain.append_value(domain);
        self.event.append_value(event);
        self.start.append_option(start);
        self.end.append_option(end);
        self.note.append_option(mention.as_ref().map(|m| m.note));
        self.nlp.append_option(mention.as_ref().map(|m| m.nlp));
        let span = mention.as_ref().and_then(|m| m.span);
        self.span_start.append_option(span.map(|s| s.0));
        self.span_end.append_option(span.map(|s| s.1));
        self.negated.append_value(a.negated);
        self.temporality
            .append_value(temporality_key(a.temporality));
        self.certainty.append_value(certainty_key(a.certain));
        self.experiencer
            .append_value(experiencer_key(a.experiencer));
    }

    fn finish(mut self, dicts: &Dictionaries) -> Result<RecordBatch, DatasetError> {
        let dict = |keys: &mut Int16Builder, values: &ArrayRef| -> Result<ArrayRef, DatasetError> {
            Ok(Arc::new(DictionaryArray::try_new(
                keys.finish(),
                Arc::clone(values),
            )?))
        };
        let rows = self.person.values_slice().len();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.person.finish()),
            Arc::new(self.concept.finish()),
            dict(&mut self.vocabulary, &dicts.vocabulary)?,
            dict(&mut self.domain, &dicts.domain)?,
            Arc::new(self.event.finish()),
            Arc::new(self.start.finish()),
            Arc::new(self.end.finish()),
            Arc::new(self.note.finish()),
            Arc::new(self.nlp.finish()),
            // Resolved for evidence pointers only (see `note_hashes`): most events never need it.
            new_null_array(&DataType::Utf8, rows),
            Arc::new(self.span_start.finish()),
            Arc::new(self.span_end.finish()),
            Arc::new(self.negated.finish()),
            dict(&mut self.temporality, &dicts.temporality)?,
            dict(&mut self.certainty, &dicts.certainty)?,
            dict(&mut self.experiencer, &dicts.experiencer)?,
        ];
        Ok(RecordBatch::try_new(event_schema(), cols)?)
    }
}

/// The tables behind the clinical, visit and death events, and everything else but mentions.
struct Rows {
    concept: RecordBatch,
    note: RecordBatch,
    events: Vec<RecordBatch>,
    visit: RecordBatch,
    death: RecordBatch,
    op: RecordBatch,
    /// Every person of the load.
    persons: RecordBatch,
    /// mention id → the clinical table of the row derived from it (`phiflow_derived_event`).
    derived: IdMap<usize>,
    /// concept id → row in `concept`
    concept_rows: IdMap<usize>,
    /// note id → row in `note`
    note_rows: IdMap<usize>,
}

fn read_rows(src: &Source<'_>, wanted: Option<&Arc<IdSet>>) -> Result<Rows, DatasetError> {
    let keep = |column: &'static str| wanted.map(|ids| KeepIf { column, ids });
    let mut events = Vec::with_capacity(EVENT_TABLES.len());
    for et in &EVENT_TABLES {
        let pk = et.table.primary_key.unwrap_or("person_id");
        let mut cols = vec![pk, "person_id", et.concept, et.start_date];
        cols.extend(et.end_date);
        events.push(src.table_where(et.table, &cols, keep(et.concept).as_ref())?);
    }
    let links = src.table_where(
        &cdm::DERIVED_EVENT,
        &["note_nlp_id", "event_table"],
        keep("concept_id").as_ref(),
    )?;
    let (link_ids, link_tables) = (
        ints(&links, "note_nlp_id")?,
        strings(&links, "event_table")?,
    );
    let mut derived = IdMap::with_capacity_and_hasher(links.num_rows(), Default::default());
    // Links come in runs of one table (the file is clustered by concept): compare the name
    // with the previous row's before searching.
    let mut last: Option<(&str, Option<usize>)> = None;
    for r in 0..links.num_rows() {
        let name = link_tables.value(r);
        let t = match last {
            Some((n, t)) if n == name => t,
            _ => EVENT_TABLES.iter().position(|e| e.table.name == name),
        };
        last = Some((name, t));
        if let Some(t) = t {
            derived.insert(link_ids.value(r), t);
        }
    }
    let visit = src.table_where(
        &cdm::VISIT_OCCURRENCE,
        &[
            "visit_occurrence_id",
            "person_id",
            "visit_concept_id",
            "visit_start_date",
            "visit_end_date",
        ],
        keep("visit_concept_id").as_ref(),
    )?;
    let death = src.table_where(
        &cdm::DEATH,
        &["person_id", "death_date", "cause_concept_id"],
        keep("cause_concept_id").as_ref(),
    )?;
    let concept = src.table(&cdm::CONCEPT, &["concept_id", "vocabulary_id"])?;
    let c_ids = ints(&concept, "concept_id")?;
    let concept_rows = (0..concept.num_rows())
        .map(|r| (c_ids.value(r), r))
        .collect();
    let note = src.table(&cdm::NOTE, &["note_id", "person_id", "note_date"])?;
    let n_ids = ints(&note, "note_id")?;
    let note_rows = (0..note.num_rows()).map(|r| (n_ids.value(r), r)).collect();
    Ok(Rows {
        concept,
        note,
        concept_rows,
        note_rows,
        events,
        visit,
        death,
        op: src.table(
            &cdm::OBSERVATION_PERIOD,
            &[
                "person_id",
                "observation_period_start_date",
                "observation_period_end_date",
            ],
        )?,
        persons: src.table(&cdm::PERSON_INDEX, &["person_id"])?,
        derived,
    })
}

/// The kept mentions, each with its assertion. `term_modifiers` is checked when rows are
/// loaded, so one that does not parse means the dataset was changed behind our back: an error,
/// never a guess.
fn read_mentions(
    src: &Source<'_>,
    wanted: Option<&Arc<IdSet>>,
) -> Result<(RecordBatch, Vec<Assertion>), DatasetError> {
    let keep = wanted.map(|ids| KeepIf {
        column: "note_nlp_concept_id",
        ids,
    });
    let nlp = src.table_where(
        &cdm::NOTE_NLP,
        &[
            "note_nlp_id",
            "note_id",
            "offset",
            "note_nlp_concept_id",
            "term_exists",
            "term_modifiers",
        ],
        keep.as_ref(),
    )?;
    let (exists, modifiers) = (
        strings(&nlp, "term_exists")?,
        strings(&nlp, "term_modifiers")?,
    );
    // A load has a handful of distinct modifier strings: parse each once, found again by a
    // short scan (cheaper than hashing every row's string); a map takes over should there be
    // many.
    let mut few: Vec<(&str, Option<Assertion>)> = Vec::new();
    let mut many: HashMap<&str, Option<Assertion>> = HashMap::new();
    let mut parsed = |m| match few.iter().find(|(s, _)| *s == m) {
        Some((_, a)) => *a,
        None if few.len() < 16 => {
            let a = Assertion::from_modifiers(m);
            few.push((m, a));
            a
        }
        None => *many
            .entry(m)
            .or_insert_with(|| Assertion::from_modifiers(m)),
    };
    let mut assertions = Vec::with_capacity(nlp.num_rows());
    for r in 0..nlp.num_rows() {
        let mut a = if modifiers.is_valid(r) {
            parsed(modifiers.value(r)).ok_or(DatasetError::Invalid("note_nlp.term_modifiers"))?
        } else {
            Assertion::default()
        };
        // `term_exists = 'N'` without a reason in the modifiers: the term is absent.
        if exists.is_valid(r) && exists.value(r) == "N" && a.asserted() {
            a.negated = true;
        }
        assertions.push(a);
    }
    Ok((nlp, assertions))
}

/// Lookups shared by the event passes.
struct Lookups<'a> {
    /// concept id → row in the concept table
    concepts: &'a IdMap<usize>,
    /// concept table row → key of its `vocabulary_id` in `dicts.vocabulary`
    vocab_keys: Vec<Option<i16>>,
    dicts: Dictionaries,
    /// note id → row in the note table
    notes: &'a IdMap<usize>,
    note_person: &'a Int64Array,
    note_date: &'a arrow_array::PrimitiveArray<Date32Type>,
}

impl Lookups<'_> {
    fn vocabulary(&self, c: i64) -> Option<i16> {
        self.concepts
            .get(&c)
            .and_then(|r| self.vocab_keys.get(*r).copied().flatten())
    }
}

/// The distinct vocabularies of the concept table (first appearance order) and, per concept
/// row, the key of its own.
fn vocabulary_keys(vocab: &StringArray) -> Result<(Vec<&str>, Vec<Option<i16>>), DatasetError> {
    let mut distinct: Vec<&str> = Vec::new();
    let mut index: HashMap<&str, i16> = HashMap::new();
    let mut keys = Vec::with_capacity(vocab.len());
    for v in vocab.iter() {
        let key = match v {
            None => None,
            Some(v) => Some(match index.get(v) {
                Some(k) => *k,
                None => {
                    let k = i16::try_from(distinct.len())
                        .map_err(|_| DatasetError::Invalid("concept.vocabulary_id"))?;
                    distinct.push(v);
                    index.insert(v, k);
                    k
                }
            }),
        };
        keys.push(key);
    }
    Ok((distinct, keys))
}

/// Events of the mentions in `range`, and the clinical rows they stand for as
/// `(table in EVENT_TABLES, row id)`: a mention the load derived a clinical row from is that
/// row's event.
fn mention_events(
    nlp: &RecordBatch,
    assertions: &[Assertion],
    range: std::ops::Range<usize>,
    lk: &Lookups<'_>,
    derived: &IdMap<usize>,
) -> Result<(RecordBatch, Vec<(usize, i64)>), DatasetError> {
    let (ids, notes, offsets, concepts) = (
        ints(nlp, "note_nlp_id")?,
        ints(nlp, "note_id")?,
        strings(nlp, "offset")?,
        ints(nlp, "note_nlp_concept_id")?,
    );
    let mut ev = Events::with_capacity(range.len());
    let mut claimed = Vec::new();
    for r in range {
        let note_id = notes.value(r);
        // A mention of a note the load does not have belongs to no one; validation reports it.
        let Some(&nr) = lk.notes.get(&note_id) else {
            continue;
        };
        let (a, id) = (assertions[r], ids.value(r));
        let table = derived.get(&id).copied();
        claimed.extend(table.map(|t| (t, id)));
        let concept = if concepts.is_valid(r) {
            concepts.value(r)
        } else {
            0
        };
        let mention = Mention {
            note: note_id,
            nlp: id,
            span: offsets
                .is_valid(r)
                .then(|| parse_offset(offsets.value(r)))
                .flatten(),
        };
        ev.push(
            lk.note_person.value(nr),
            concept,
            lk.vocabulary(concept),
            table.map_or(MENTION_KEY, table_key),
            id,
            lk.note_date.is_valid(nr).then(|| lk.note_date.value(nr)),
            None,
            Some(mention),
            a,
        );
    }
    Ok((ev.finish(&lk.dicts)?, claimed))
}

/// The `domain_table` key of clinical table `t` of `EVENT_TABLES` (a handful: it fits).
fn table_key(t: usize) -> i16 {
    i16::try_from(t).unwrap_or(i16::MAX)
}

/// The parts of the row events, built side by side: each clinical table, then visits and
/// deaths together.
#[derive(Clone, Copy)]
enum RowPart {
    Clinical(usize),
    VisitsAndDeaths,
}

/// Events of the clinical rows no mention stands for (`claimed`: per table, the ids mentions
/// stand for), or of visits and deaths.
fn row_events(
    rows: &Rows,
    claimed: &[IdSet],
    lk: &Lookups<'_>,
    part: RowPart,
) -> Result<RecordBatch, DatasetError> {
    let RowPart::Clinical(t) = part else {
        return visit_and_death_events(rows, lk);
    };
    let (et, b) = (&EVENT_TABLES[t], &rows.events[t]);
    let mut ev = Events::with_capacity(b.num_rows());
    let pk = et.table.primary_key.unwrap_or("person_id");
    let (ids, ps, cs, starts) = (
        ints(b, pk)?,
        ints(b, "person_id")?,
        ints(b, et.concept)?,
        dates(b, et.start_date)?,
    );
    let ends = et.end_date.map(|c| dates(b, c)).transpose()?;
    for r in 0..b.num_rows() {
        let id = ids.value(r);
        if claimed[t].contains(&id) {
            continue;
        }
        let c = cs.value(r);
        ev.push(
            ps.value(r),
            c,
            lk.vocabulary(c),
            table_key(t),
            id,
            Some(starts.value(r)),
            ends.filter(|e| e.is_valid(r)).map(|e| e.value(r)),
            None,
            Assertion::default(),
        );
    }
    ev.finish(&lk.dicts)
}

fn visit_and_death_events(rows: &Rows, lk: &Lookups<'_>) -> Result<RecordBatch, DatasetError> {
    let mut ev = Events::with_capacity(rows.visit.num_rows() + rows.death.num_rows());
    let v = &rows.visit;
    let (v_ids, v_ps, v_cs, v_s, v_e) = (
        ints(v, "visit_occurrence_id")?,
        ints(v, "person_id")?,
        ints(v, "visit_concept_id")?,
        dates(v, "visit_start_date")?,
        dates(v, "visit_end_date")?,
    );
    for r in 0..v.num_rows() {
        let c = v_cs.value(r);
        ev.push(
            v_ps.value(r),
            c,
            lk.vocabulary(c),
            VISIT_KEY,
            v_ids.value(r),
            Some(v_s.value(r)),
            Some(v_e.value(r)),
            None,
            Assertion::default(),
        );
    }
    let d = &rows.death;
    let (d_ps, d_dates, d_cs) = (
        ints(d, "person_id")?,
        dates(d, "death_date")?,
        ints(d, "cause_concept_id")?,
    );
    for r in 0..d.num_rows() {
        let c = if d_cs.is_valid(r) { d_cs.value(r) } else { 0 };
        ev.push(
            d_ps.value(r),
            c,
            lk.vocabulary(c),
            DEATH_KEY,
            d_ps.value(r),
            Some(d_dates.value(r)),
            None,
            None,
            Assertion::default(),
        );
    }
    ev.finish(&lk.dicts)
}

/// Builds the cohort data of a load. With `concepts`, only events of those concepts are kept
/// (a definition can match no other), while every person still counts for `not`. Reading and
/// the event passes run on two threads.
pub fn cohort_data(
    src: &Source<'_>,
    concepts: Option<&HashSet<i64>>,
) -> Result<CohortData, DatasetError> {
    let wanted: Option<Arc<IdSet>> = concepts.map(|c| Arc::new(c.iter().copied().collect()));
    let (mentions, rows) = std::thread::scope(|s| {
        let mentions = s.spawn(|| read_mentions(src, wanted.as_ref()));
        let rows = read_rows(src, wanted.as_ref());
        (mentions.join(), rows)
    });
    let (nlp, assertions) = mentions.map_err(|_| DatasetError::Poisoned)??;
    let rows = rows?;

    let (vocabularies, vocab_keys) = vocabulary_keys(strings(&rows.concept, "vocabulary_id")?)?;
    let lk = Lookups {
        concepts: &rows.concept_rows,
        vocab_keys,
        dicts: Dictionaries::new(vocabularies),
        notes: &rows.note_rows,
        note_person: ints(&rows.note, "person_id")?,
        note_date: dates(&rows.note, "note_date")?,
    };
    // Mentions in two halves side by side; then the rows they stand for are known, and the
    // clinical tables, visits and deaths are built side by side.
    let n = nlp.num_rows();
    let halves = [0..n / 2, n / 2..n];
    let mut parts = Vec::new();
    let mut claimed_pairs = Vec::new();
    let halves: Vec<_> = halves
        .par_iter()
        .map(|r| mention_events(&nlp, &assertions, r.clone(), &lk, &rows.derived))
        .collect();
    for part in halves {
        let (batch, claimed) = part?;
        parts.push(batch);
        claimed_pairs.push(claimed);
    }
    let tables: Vec<usize> = (0..EVENT_TABLES.len()).collect();
    let claimed: Vec<IdSet> = tables
        .par_iter()
        .map(|&t| {
            claimed_pairs
                .iter()
                .flatten()
                .filter(|(table, _)| *table == t)
                .map(|(_, id)| *id)
                .collect()
        })
        .collect();
    let row_parts: Vec<RowPart> = tables
        .iter()
        .map(|&t| RowPart::Clinical(t))
        .chain([RowPart::VisitsAndDeaths])
        .collect();
    let row_parts: Vec<_> = row_parts
        .par_iter()
        .map(|&p| row_events(&rows, &claimed, &lk, p))
        .collect();
    for part in row_parts {
        parts.push(part?);
    }
    let events = concat_batches(&event_schema(), &parts)?;

    let op = &rows.op;
    let column = |name| {
        op.column_by_name(name)
            .cloned()
            .ok_or(DatasetError::BadColumn)
    };
    let observation_periods = RecordBatch::try_new(
        observation_period_schema(),
        vec![
            column("person_id")?,
            column("observation_period_start_date")?,
            column("observation_period_end_date")?,
        ],
    )?;
    Ok(CohortData {
        events,
        persons: ints(&rows.persons, "person_id")?.clone(),
        observation_periods,
    })
}

/// The SHA-256 of some notes' text (what evidence pointers name a note by).
pub fn note_hashes(
    src: &Source<'_>,
    notes: &HashSet<i64>,
) -> Result<HashMap<i64, String>, DatasetError> {
    let ids: Arc<IdSet> = Arc::new(notes.iter().copied().collect());
    let b = src.table_where_split(
        &cdm::NOTE_HASH,
        &["note_id", "source_note_hash"],
        Some(&KeepIf {
            column: "note_id",
            ids: &ids,
        }),
    )?;
    let (n, h) = (ints(&b, "note_id")?, strings(&b, "source_note_hash")?);
    Ok((0..b.num_rows())
        .map(|r| (n.value(r), h.value(r).to_string()))
        .collect())
}

/// The caller's own ids for some internal ids: a string id the caller gave (kept as the source
/// value it hashes to), else the integer id itself.
pub fn caller_ids(
    src: &Source<'_>,
    table: &'static Table,
    kind: &str,
    wanted: &HashSet<i64>,
) -> Result<HashMap<i64, Value>, DatasetError> {
    let (id_col, source_col) = match table.name {
        "person" => ("person_id", "person_source_value"),
        _ => ("note_id", "note_source_value"),
    };
    let b = src.table_where_split(table, &[id_col, source_col], None)?;
    let (ids, sources) = (ints(&b, id_col)?, strings(&b, source_col)?);
    let mut out: HashMap<i64, Value> = wanted.iter().map(|i| (*i, Value::from(*i))).collect();
    for r in 0..b.num_rows() {
        let id = ids.value(r);
        if !wanted.contains(&id) || sources.is_null(r) {
            continue;
        }
        let s = sources.value(r);
        if hashed_id(kind, s) == id {
            out.insert(id, Value::from(s));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_keys_name_their_values() {
        use Experiencer::*;
        use Temporality::*;
        for t in [Recent, Historical, Hypothetical] {
            assert_eq!(TEMPORALITIES[temporality_key(t) as usize], t.as_str());
        }
        for e in [Patient, Family, Other] {
            assert_eq!(EXPERIENCERS[experiencer_key(e) as usize], e.as_str());
        }
        for certain in [true, false] {
            let a = Assertion {
                certain,
                ..Assertion::default()
            };
            assert_eq!(
                CERTAINTIES[certainty_key(certain) as usize],
                a.certainty_str()
            );
        }
        let domains = domain_names();
        for (t, et) in EVENT_TABLES.iter().enumerate() {
            assert_eq!(domains[table_key(t) as usize], et.table.name);
        }
        assert_eq!(domains[VISIT_KEY as usize], "visit_occurrence");
        assert_eq!(domains[DEATH_KEY as usize], "death");
        assert_eq!(domains[MENTION_KEY as usize], "note_nlp");
    }
}
