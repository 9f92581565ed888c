//! A load's tables → the flat event table cohorts are evaluated over, and the caller's own
//! person and note ids for the answer. Reads only the columns it needs, so from Parquet it
//! touches a fraction of the dataset.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Date32Builder, Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch};
use arrow_select::filter::filter_record_batch;
use serde_json::Value;

use super::assertion::Assertion;
use super::build::hashed_id;
use super::cdm::{self, EVENT_TABLES, Table};
use super::constraints::parse_offset;
use super::dataset::{self, DatasetError, KeepIf};
use crate::cohort::events::{CohortData, event_schema, observation_period_schema};

/// Where tables come from: a load just built in memory, or a stored dataset.
pub enum Source<'a> {
    Memory(&'a [(&'static str, RecordBatch)]),
    Stored { root: &'a Path, load_id: &'a str },
}

impl Source<'_> {
    /// The named columns of a table (columns missing from the table are an error).
    fn table(&self, t: &Table, columns: &[&str]) -> Result<RecordBatch, DatasetError> {
        self.table_where(t, columns, None).map(|(b, _)| b)
    }

    /// The named columns of the rows `keep` keeps, and the values of `keep.collect` over all
    /// rows. From Parquet the filter runs inside the reader.
    fn table_where(
        &self,
        t: &Table,
        columns: &[&str],
        keep: Option<&KeepIf<'_>>,
    ) -> Result<(RecordBatch, Vec<i64>), DatasetError> {
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
                    return Ok((projected, Vec::new()));
                };
                let collected = match k.collect {
                    Some(c) => ints(batch, c)?.iter().flatten().collect(),
                    None => Vec::new(),
                };
                let mask: BooleanArray = ints(batch, k.column)?
                    .iter()
                    .map(|v| Some(k.ids.contains(&v.unwrap_or(0))))
                    .collect();
                Ok((filter_record_batch(&projected, &mask)?, collected))
            }
            Source::Stored { root, load_id } => {
                dataset::read_where(root, load_id, t.name, columns, keep)
            }
        }
    }
}

fn ints<'a>(b: &'a RecordBatch, col: &str) -> Result<&'a Int64Array, DatasetError> {
    b.column_by_name(col)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .ok_or(DatasetError::NoTable)
}

fn dates<'a>(
    b: &'a RecordBatch,
    col: &str,
) -> Result<&'a arrow_array::PrimitiveArray<Date32Type>, DatasetError> {
    b.column_by_name(col)
        .and_then(|c| c.as_primitive_opt::<Date32Type>())
        .ok_or(DatasetError::NoTable)
}

fn strings<'a>(
    b: &'a RecordBatch,
    col: &str,
) -> Result<&'a arrow_array::StringArray, DatasetError> {
    b.column_by_name(col)
        .and_then(|c| c.as_string_opt::<i32>())
        .ok_or(DatasetError::NoTable)
}

/// Appends events column by column.
#[derive(Default)]
struct Events {
    person: Int64Builder,
    concept: Int64Builder,
    vocabulary: StringBuilder,
    domain: StringBuilder,
    event: Int64Builder,
    start: Date32Builder,
    end: Date32Builder,
    note: Int64Builder,
    nlp: Int64Builder,
    hash: StringBuilder,
    span_start: Int64Builder,
    span_end: Int64Builder,
    negated: BooleanBuilder,
    temporality: StringBuilder,
    certainty: StringBuilder,
    experiencer: StringBuilder,
}

struct Mention<'a> {
    note: i64,
    nlp: i64,
    hash: Option<&'a str>,
    span: Option<(i64, i64)>,
}

impl Events {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        person: i64,
        concept: i64,
        vocabulary: Option<&str>,
        domain: &str,
        event: i64,
        start: Option<i32>,
        end: Option<i32>,
        mention: Option<Mention<'_>>,
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
        self.hash
            .append_option(mention.as_ref().and_then(|m| m.hash));
        let span = mention.as_ref().and_then(|m| m.span);
        self.span_start.append_option(span.map(|s| s.0));
        self.span_end.append_option(span.map(|s| s.1));
        self.negated.append_value(a.negated);
        self.temporality.append_value(a.temporality.as_str());
        self.certainty.append_value(a.certainty_str());
        self.experiencer.append_value(a.experiencer.as_str());
    }

    fn finish(mut self) -> Result<RecordBatch, DatasetError> {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.person.finish()),
            Arc::new(self.concept.finish()),
            Arc::new(self.vocabulary.finish()),
            Arc::new(self.domain.finish()),
            Arc::new(self.event.finish()),
            Arc::new(self.start.finish()),
            Arc::new(self.end.finish()),
            Arc::new(self.note.finish()),
            Arc::new(self.nlp.finish()),
            Arc::new(self.hash.finish()),
            Arc::new(self.span_start.finish()),
            Arc::new(self.span_end.finish()),
            Arc::new(self.negated.finish()),
            Arc::new(self.temporality.finish()),
            Arc::new(self.certainty.finish()),
            Arc::new(self.experiencer.finish()),
        ];
        Ok(RecordBatch::try_new(event_schema(), cols)?)
    }
}

/// Builds the cohort data of a load. With `concepts`, only events of those concepts are kept
/// (a definition can match no other), while every person still counts for `not`.
pub fn cohort_data(
    src: &Source<'_>,
    concepts: Option<&HashSet<i64>>,
) -> Result<CohortData, DatasetError> {
    let wanted = concepts.map(|c| Arc::new(c.clone()));
    let keep = |column: &'static str, collect: Option<&'static str>| {
        wanted.as_ref().map(|ids| KeepIf {
            column,
            ids,
            collect,
        })
    };
    let concept = src.table(&cdm::CONCEPT, &["concept_id", "vocabulary_id", "domain_id"])?;
    let (c_ids, c_vocab, c_domain) = (
        ints(&concept, "concept_id")?,
        strings(&concept, "vocabulary_id")?,
        strings(&concept, "domain_id")?,
    );
    let concepts: HashMap<i64, usize> = (0..concept.num_rows())
        .map(|r| (c_ids.value(r), r))
        .collect();
    let vocabulary = |c: i64| concepts.get(&c).map(|r| c_vocab.value(*r));
    let domain = |c: i64| concepts.get(&c).map(|r| c_domain.value(*r));

    let note = src.table(&cdm::NOTE, &["note_id", "person_id", "note_date"])?;
    let (n_ids, n_person, n_date) = (
        ints(&note, "note_id")?,
        ints(&note, "person_id")?,
        dates(&note, "note_date")?,
    );
    let notes: HashMap<i64, usize> = (0..note.num_rows()).map(|r| (n_ids.value(r), r)).collect();
    let mut persons: HashSet<i64> = HashSet::new();
    let mut ev = Events::default();

    // Clinical rows derived from a mention share the mention's id and carry the NLP type
    // concept; they are represented once, through the mention.
    let mut derived: HashMap<&'static str, HashSet<i64>> = HashMap::new();
    let mut event_batches = Vec::with_capacity(EVENT_TABLES.len());
    for et in &EVENT_TABLES {
        let pk = et.table.primary_key.unwrap_or("person_id");
        let mut cols = vec![pk, "person_id", et.concept, et.start_date, et.type_concept];
        cols.extend(et.end_date);
        let (b, seen) = src.table_where(
            et.table,
            &cols,
            keep(et.concept, Some("person_id")).as_ref(),
        )?;
        persons.extend(seen);
        let (ids, types) = (ints(&b, pk)?, ints(&b, et.type_concept)?);
        let set = derived.entry(et.table.name).or_default();
        for r in 0..b.num_rows() {
            if types.value(r) == cdm::NLP_TYPE_CONCEPT {
                set.insert(ids.value(r));
            }
        }
        event_batches.push((et, b));
    }

    let (nlp, _) = src.table_where(
        &cdm::NOTE_NLP,
        &[
            "note_nlp_id",
            "note_id",
            "offset",
            "note_nlp_concept_id",
            "term_exists",
            "term_modifiers",
        ],
        keep("note_nlp_concept_id", None).as_ref(),
    )?;
    let (nlp_ids, nlp_notes, offsets, nlp_concepts, exists, modifiers) = (
        ints(&nlp, "note_nlp_id")?,
        ints(&nlp, "note_id")?,
        strings(&nlp, "offset")?,
        ints(&nlp, "note_nlp_concept_id")?,
        strings(&nlp, "term_exists")?,
        strings(&nlp, "term_modifiers")?,
    );
    // Hashes only of the notes whose mentions are kept.
    let mentioned = Arc::new(nlp_notes.values().iter().copied().collect::<HashSet<i64>>());
    let (hashes, _) = src.table_where(
        &cdm::NOTE_HASH,
        &["note_id", "source_note_hash"],
        Some(&KeepIf {
            column: "note_id",
            ids: &mentioned,
            collect: None,
        }),
    )?;
    let (h_ids, h_vals) = (
        ints(&hashes, "note_id")?,
        strings(&hashes, "source_note_hash")?,
    );
    let hash_of: HashMap<i64, &str> = (0..hashes.num_rows())
        .map(|r| (h_ids.value(r), h_vals.value(r)))
        .collect();

    let mut mention_ids: HashSet<(&'static str, i64)> = HashSet::new();
    for r in 0..nlp.num_rows() {
        let note_id = nlp_notes.value(r);
        // A mention of a note the load does not have belongs to no one; validation reports it.
        let Some(&nr) = notes.get(&note_id) else {
            continue;
        };
        let person = n_person.value(nr);
        let date = n_date.is_valid(nr).then(|| n_date.value(nr));
        let concept = if nlp_concepts.is_valid(r) {
            nlp_concepts.value(r)
        } else {
            0
        };
        let exists_flag = exists.is_valid(r).then(|| exists.value(r));
        let mut a = modifiers
            .is_valid(r)
            .then(|| Assertion::from_modifiers(modifiers.value(r)))
            .flatten()
            .unwrap_or_default();
        if exists_flag == Some("N") && a.asserted() {
            a.negated = true;
        }
        let id = nlp_ids.value(r);
        let table = (exists_flag == Some("Y") && a.asserted())
            .then(|| domain(concept).and_then(cdm::event_table_for_domain))
            .flatten()
            .map(|et| et.table.name)
            .filter(|t| derived.get(t).is_some_and(|s| s.contains(&id)));
        if let Some(t) = table {
            mention_ids.insert((t, id));
        }
        let mention = Mention {
            note: note_id,
            nlp: id,
            hash: hash_of.get(&note_id).copied(),
            span: offsets
                .is_valid(r)
                .then(|| parse_offset(offsets.value(r)))
                .flatten(),
        };
        persons.insert(person);
        ev.push(
            person,
            concept,
            vocabulary(concept),
            table.unwrap_or("note_nlp"),
            id,
            date,
            None,
            Some(mention),
            a,
        );
    }

    for (et, b) in &event_batches {
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
            if mention_ids.contains(&(et.table.name, id)) {
                continue;
            }
            let c = cs.value(r);
            persons.insert(ps.value(r));
            ev.push(
                ps.value(r),
                c,
                vocabulary(c),
                et.table.name,
                id,
                Some(starts.value(r)),
                ends.filter(|e| e.is_valid(r)).map(|e| e.value(r)),
                None,
                Assertion::default(),
            );
        }
    }

    let (visit, seen) = src.table_where(
        &cdm::VISIT_OCCURRENCE,
        &[
            "visit_occurrence_id",
            "person_id",
            "visit_concept_id",
            "visit_start_date",
            "visit_end_date",
        ],
        keep("visit_concept_id", Some("person_id")).as_ref(),
    )?;
    persons.extend(seen);
    let (v_ids, v_ps, v_cs, v_s, v_e) = (
        ints(&visit, "visit_occurrence_id")?,
        ints(&visit, "person_id")?,
        ints(&visit, "visit_concept_id")?,
        dates(&visit, "visit_start_date")?,
        dates(&visit, "visit_end_date")?,
    );
    for r in 0..visit.num_rows() {
        let c = v_cs.value(r);
        persons.insert(v_ps.value(r));
        ev.push(
            v_ps.value(r),
            c,
            vocabulary(c),
            cdm::VISIT_OCCURRENCE.name,
            v_ids.value(r),
            Some(v_s.value(r)),
            Some(v_e.value(r)),
            None,
            Assertion::default(),
        );
    }

    let (death, seen) = src.table_where(
        &cdm::DEATH,
        &["person_id", "death_date", "cause_concept_id"],
        keep("cause_concept_id", Some("person_id")).as_ref(),
    )?;
    persons.extend(seen);
    let (d_ps, d_dates, d_cs) = (
        ints(&death, "person_id")?,
        dates(&death, "death_date")?,
        ints(&death, "cause_concept_id")?,
    );
    for r in 0..death.num_rows() {
        let c = if d_cs.is_valid(r) { d_cs.value(r) } else { 0 };
        persons.insert(d_ps.value(r));
        ev.push(
            d_ps.value(r),
            c,
            vocabulary(c),
            cdm::DEATH.name,
            d_ps.value(r),
            Some(d_dates.value(r)),
            None,
            None,
            Assertion::default(),
        );
    }

    let person = src.table(&cdm::PERSON, &["person_id"])?;
    persons.extend(ints(&person, "person_id")?.values().iter().copied());
    persons.extend(n_person.values().iter().copied());

    let op = src.table(
        &cdm::OBSERVATION_PERIOD,
        &[
            "person_id",
            "observation_period_start_date",
            "observation_period_end_date",
        ],
    )?;
    persons.extend(ints(&op, "person_id")?.values().iter().copied());
    let observation_periods = RecordBatch::try_new(
        observation_period_schema(),
        vec![
            op.column_by_name("person_id")
                .cloned()
                .ok_or(DatasetError::NoTable)?,
            op.column_by_name("observation_period_start_date")
                .cloned()
                .ok_or(DatasetError::NoTable)?,
            op.column_by_name("observation_period_end_date")
                .cloned()
                .ok_or(DatasetError::NoTable)?,
        ],
    )?;

    let mut persons: Vec<i64> = persons.into_iter().collect();
    persons.sort_unstable();
    Ok(CohortData {
        events: ev.finish()?,
        persons: Int64Array::from(persons),
        observation_periods,
    })
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
    let b = src.table(table, &[id_col, source_col])?;
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
