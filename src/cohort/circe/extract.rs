//! The Arrow side: one pass over the event table picks the rows any criterion can match, and
//! everything after that works on small per-person vectors.

use std::collections::HashMap;
use std::ops::Range;

use arrow_arith::boolean::{and, is_not_null};
use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int16Type, Int64Type};
use arrow_array::{Array, BooleanArray, Int64Array, PrimitiveArray, RecordBatch, StringArray};
use arrow_buffer::BooleanBuffer;
use arrow_select::filter::filter_record_batch;
use chrono::NaiveDate;

use super::super::events::{CohortData, col};
use super::model::Domain;

/// Days since 1970-01-01 (Arrow `Date32`), widened so offsets never overflow.
pub(super) type Day = i64;

/// `Event::slot` for a concept in no concept set.
pub(super) const NO_SLOT: u32 = u32::MAX;

/// One candidate clinical event.
#[derive(Debug, Clone, Copy)]
pub(super) struct Event {
    pub(super) person: i64,
    pub(super) start: i32,
    /// Circe's end: `end_date`, or `start_date + 1` when null.
    pub(super) end: i32,
    pub(super) event_id: i64,
    pub(super) concept_id: i64,
    pub(super) domain: Domain,
    /// Row of the concept in [`Membership`], or [`NO_SLOT`].
    pub(super) slot: u32,
    /// Row in [`Candidates::batch`].
    pub(super) row: u32,
}

impl Event {
    pub(super) fn start(&self) -> Day {
        Day::from(self.start)
    }

    pub(super) fn end(&self) -> Day {
        Day::from(self.end)
    }
}

/// Which concept sets each concept belongs to, as one bitset row per concept.
pub(super) struct Membership {
    slots: HashMap<i64, u32>,
    words_per_slot: usize,
    words: Vec<u64>,
}

impl Membership {
    pub(super) fn new(expanded: &[Vec<i64>]) -> Membership {
        let words_per_slot = expanded.len().div_ceil(64).max(1);
        let mut m = Membership {
            slots: HashMap::new(),
            words_per_slot,
            words: Vec::new(),
        };
        for (set, concepts) in expanded.iter().enumerate() {
            for &c in concepts {
                let slot = m.slot_or_insert(c);
                let word = slot as usize * words_per_slot + set / 64;
                if let Some(w) = m.words.get_mut(word) {
                    *w |= 1 << (set % 64);
                }
            }
        }
        m
    }

    fn slot_or_insert(&mut self, concept: i64) -> u32 {
        let next = u32::try_from(self.slots.len()).unwrap_or(NO_SLOT);
        let slot = *self.slots.entry(concept).or_insert(next);
        if slot == next {
            self.words.resize(self.words.len() + self.words_per_slot, 0);
        }
        slot
    }

    fn slot(&self, concept: i64) -> u32 {
        self.slots.get(&concept).copied().unwrap_or(NO_SLOT)
    }

    pub(super) fn contains(&self, slot: u32, set: usize) -> bool {
        if slot == NO_SLOT {
            return false;
        }
        let word = slot as usize * self.words_per_slot + set / 64;
        self.words
            .get(word)
            .is_some_and(|w| w & (1 << (set % 64)) != 0)
    }
}

/// Which rows are worth extracting.
#[derive(Debug, Default)]
pub(super) struct Needs {
    /// Some criterion names the domain.
    pub(super) domain: [bool; 7],
    /// Some criterion of the domain has no codeset, so every concept matches.
    pub(super) any_concept: [bool; 7],
}

/// The candidate rows, filtered out of the event table.
pub(super) struct Candidates {
    /// Sorted by person, start, event id, domain.
    pub(super) events: Vec<Event>,
    /// The filtered rows, for the evidence columns of the surviving index events.
    pub(super) batch: RecordBatch,
}

/// The first and last day chrono can represent, so every output date converts.
fn day_range() -> (i32, i32) {
    (
        NaiveDate::MIN.to_epoch_days(),
        NaiveDate::MAX.to_epoch_days(),
    )
}

/// Filters the event table down to candidate rows and reads them into sorted [`Event`]s.
/// A table that does not follow `event_schema()` yields no candidates.
pub(super) fn candidates(data: &CohortData, m: &Membership, needs: &Needs) -> Candidates {
    let empty = || Candidates {
        events: Vec::new(),
        batch: RecordBatch::new_empty(data.events.schema()),
    };
    let Some(mask) = row_mask(&data.events, m, needs) else {
        return empty();
    };
    let Ok(batch) = filter_record_batch(&data.events, &mask) else {
        return empty();
    };
    let mut events = read_events(&batch, m).unwrap_or_default();
    events.sort_unstable_by_key(|e| (e.person, e.start, e.event_id, e.domain));
    Candidates { events, batch }
}

/// Rows of a needed domain, with a needed concept, and a start date.
fn row_mask(events: &RecordBatch, m: &Membership, needs: &Needs) -> Option<BooleanArray> {
    let concept = events
        .column_by_name(col::CONCEPT_ID)?
        .as_primitive_opt::<Int64Type>()?;
    let domain = Domains::of(events)?;
    let start = events.column_by_name(col::START_DATE)?;
    start.as_primitive_opt::<Date32Type>()?;
    let wanted = BooleanBuffer::collect_bool(events.num_rows(), |i| {
        if concept.is_null(i) {
            return false;
        }
        let Some(d) = domain.row(i) else {
            return false;
        };
        let d = d.index();
        needs.domain[d] && (needs.any_concept[d] || m.slot(concept.value(i)) != NO_SLOT)
    });
    and(&BooleanArray::new(wanted, None), &is_not_null(start).ok()?).ok()
}

/// The `domain_table` column as Circe domains: each dictionary value is mapped once.
struct Domains<'a> {
    keys: &'a PrimitiveArray<Int16Type>,
    /// Per dictionary value; `None` for a table Circe has no domain for.
    domains: Vec<Option<Domain>>,
}

impl<'a> Domains<'a> {
    fn of(batch: &'a RecordBatch) -> Option<Self> {
        let d = batch
            .column_by_name(col::DOMAIN_TABLE)?
            .as_dictionary_opt::<Int16Type>()?;
        let values = d.values().as_string_opt::<i32>()?;
        Some(Self {
            keys: d.keys(),
            domains: values
                .iter()
                .map(|v| v.and_then(Domain::from_table))
                .collect(),
        })
    }

    fn row(&self, i: usize) -> Option<Domain> {
        if self.keys.is_null(i) {
            return None;
        }
        let k = usize::try_from(self.keys.value(i)).ok()?;
        self.domains.get(k).copied().flatten()
    }
}

fn read_events(batch: &RecordBatch, m: &Membership) -> Option<Vec<Event>> {
    let int = |name| batch.column_by_name(name)?.as_primitive_opt::<Int64Type>();
    let date = |name| batch.column_by_name(name)?.as_primitive_opt::<Date32Type>();
    let (person, concept, event_id) = (
        int(col::PERSON_ID)?,
        int(col::CONCEPT_ID)?,
        int(col::EVENT_ID)?,
    );
    let (start, end) = (date(col::START_DATE)?, date(col::END_DATE)?);
    let domain = Domains::of(batch)?;
    let (min_day, max_day) = day_range();
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let ids_valid = person.is_valid(i) && event_id.is_valid(i) && start.is_valid(i);
        let s = start.value(i);
        // `s < max_day` leaves room for the default end `s + 1`.
        if !ids_valid || s < min_day || s >= max_day {
            continue;
        }
        let Some(d) = domain.row(i) else {
            continue;
        };
        let c = concept.value(i);
        out.push(Event {
            person: person.value(i),
            start: s,
            end: if end.is_valid(i) { end.value(i) } else { s + 1 },
            event_id: event_id.value(i),
            concept_id: c,
            domain: d,
            slot: m.slot(c),
            row: u32::try_from(i).ok()?,
        });
    }
    Some(out)
}

/// Observation periods, grouped per person and sorted by start.
pub(super) struct ObservationPeriods {
    periods: Vec<(i64, Day, Day)>,
    by_person: HashMap<i64, Range<usize>>,
}

impl ObservationPeriods {
    /// Reads the table; rows with nulls, a start after the end, or unrepresentable dates are
    /// skipped, and a table that does not follow the schema counts as empty.
    pub(super) fn read(batch: &RecordBatch) -> ObservationPeriods {
        let mut periods = read_periods(batch).unwrap_or_default();
        periods.sort_unstable();
        let mut by_person = HashMap::new();
        let mut from = 0;
        for chunk in periods.chunk_by(|a, b| a.0 == b.0) {
            if let Some(&(person, _, _)) = chunk.first() {
                by_person.insert(person, from..from + chunk.len());
            }
            from += chunk.len();
        }
        ObservationPeriods { periods, by_person }
    }

    /// The person's periods as `(start, end)`, sorted.
    pub(super) fn of(&self, person: i64) -> impl Iterator<Item = (Day, Day)> + '_ {
        let range = self.by_person.get(&person).cloned().unwrap_or_default();
        self.periods
            .get(range)
            .unwrap_or_default()
            .iter()
            .map(|&(_, s, e)| (s, e))
    }
}

fn read_periods(batch: &RecordBatch) -> Option<Vec<(i64, Day, Day)>> {
    let person = batch
        .column_by_name("person_id")?
        .as_primitive_opt::<Int64Type>()?;
    let date = |name| batch.column_by_name(name)?.as_primitive_opt::<Date32Type>();
    let (start, end) = (date("start_date")?, date("end_date")?);
    let (min_day, max_day) = day_range();
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        if person.is_null(i) || start.is_null(i) || end.is_null(i) {
            continue;
        }
        let (s, e) = (start.value(i), end.value(i));
        if s <= e && s >= min_day && e <= max_day {
            out.push((person.value(i), Day::from(s), Day::from(e)));
        }
    }
    Some(out)
}

/// The note provenance columns of the candidate batch.
pub(super) struct EvidenceColumns<'a> {
    note_id: Option<&'a Int64Array>,
    note_nlp_id: Option<&'a Int64Array>,
    hash: Option<&'a StringArray>,
    span_start: Option<&'a Int64Array>,
    span_end: Option<&'a Int64Array>,
}

/// Note provenance of one candidate row.
pub(super) struct Provenance {
    pub(super) note_id: Option<i64>,
    pub(super) note_nlp_id: Option<i64>,
    pub(super) source_note_hash: Option<String>,
    pub(super) span_start: Option<i64>,
    pub(super) span_end: Option<i64>,
}

impl<'a> EvidenceColumns<'a> {
    pub(super) fn new(batch: &'a RecordBatch) -> EvidenceColumns<'a> {
        let int = |name| batch.column_by_name(name)?.as_primitive_opt::<Int64Type>();
        EvidenceColumns {
            note_id: int(col::NOTE_ID),
            note_nlp_id: int(col::NOTE_NLP_ID),
            hash: batch
                .column_by_name(col::SOURCE_NOTE_HASH)
                .and_then(|c| c.as_string_opt::<i32>()),
            span_start: int(col::SPAN_START),
            span_end: int(col::SPAN_END),
        }
    }

    pub(super) fn provenance(&self, row: u32) -> Provenance {
        let i = row as usize;
        let int = |a: Option<&Int64Array>| {
            a.filter(|a| i < a.len() && a.is_valid(i))
                .map(|a| a.value(i))
        };
        Provenance {
            note_id: int(self.note_id),
            note_nlp_id: int(self.note_nlp_id),
            source_note_hash: self
                .hash
                .filter(|a| i < a.len() && a.is_valid(i))
                .map(|a| a.value(i).to_owned()),
            span_start: int(self.span_start),
            span_end: int(self.span_end),
        }
    }
}
