//! Resolution of a validated [`Phenotype`] over the Arrow event table.
//!
//! Semantics:
//! - **Concept-set expansion**: the set's `concept_ids`, plus every descendant in the
//!   [`Hierarchy`] when `include_descendants` is true (an empty hierarchy is then an error,
//!   [`ResolveError::HierarchyRequired`], rather than a silent under-count).
//! - **Set match**: an event belongs to a concept set iff its `concept_id` is in the expanded set
//!   and its `vocabulary_id` is null (OMOP concept ids are global) or equals the set's
//!   `vocabulary` case-insensitively.
//! - **Criterion match**: a set match whose assertion passes (`negated` mapped to
//!   `negated`/`affirmed` must be in the negation list, default affirmed only; temporality,
//!   certainty and experiencer must be allowed, where no filter means any), whose `start_date`
//!   is non-null and within `[start_date, end_date]` (inclusive) when the criterion has a fixed
//!   window, and, when it has an anchor, whose non-null `start_date` `e` satisfies
//!   `a - days_before <= e <= a + days_after` for the non-null `start_date` `a` of some event of
//!   the same patient matching the anchor criterion with all of that criterion's own filters
//!   (anchors of anchors included).
//! - **Occurrences**: per patient, the number of distinct `(domain_table, event_id)` criterion
//!   matches must lie in `[minimum, maximum]` (no maximum = unbounded). With `minimum` 0 a
//!   patient without any event satisfies the criterion.
//! - **Operators**: `and` / `or` are intersection / union of patient sets; `not` is the
//!   complement within `CohortData::persons` (trusted, per the contract, to hold every person
//!   with an event).
//! - **Evidence**: for each result patient, the criterion matches of every criterion that sits
//!   under an even number of `not`s, ordered by criterion (document order), then start date
//!   (nulls last), then event id, then domain table. Pointers only, never text.
//! - **Provenance**: per concept set, its requested and expanded ids and, per member concept
//!   with at least one set match (before assertion and date filters), the number of distinct
//!   patients and distinct events.
//!
//! Implementation: columns are downcast once, and the dictionary-encoded string columns are
//! compared once per distinct value, then looked up per row by key; each concept set becomes one
//! `BooleanArray` row mask (hash-set membership on the `concept_id` values slice and the
//! vocabulary's per-value verdict); each criterion ANDs that with assertion and date masks using
//! `arrow_arith`, then walks the set bits directly (`BooleanBuffer::set_indices`) rather than
//! `filter_record_batch`, because evidence needs the original row positions and copying the
//! columns buys nothing. Matches are sorted by person, so patient sets are sorted vectors
//! combined by merging. Criteria whose anchors are done run in parallel, evidence is built per
//! patient on all cores, and provenance runs beside both.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

use arrow_arith::boolean::{and, not};
use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int16Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Date32Array, Int64Array, StringArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{ArrowError, DataType};
use serde::Serialize;

use super::events::{CohortData, col, dictionary};
use super::hierarchy::Hierarchy;
use super::phenotype::{
    Anchor, AssertionFilter, Certainty, ConceptSet, Criterion, Experiencer, NegationFilter, Node,
    Phenotype, Temporality,
};
use crate::idhash::{IdMap, IdSet};
use rayon::prelude::*;

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

/// The cohort and why each patient is in it. Ids are the load's internal ids.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolution {
    /// Sorted, unique internal person ids.
    pub patients: Vec<i64>,
    /// One entry per result patient, in `patients` order.
    pub evidence: Vec<PatientEvidence>,
    /// One entry per concept set, in definition order.
    pub concept_sets: Vec<ConceptSetProvenance>,
    /// `patients.len()`.
    pub matched_patient_count: usize,
    /// Total number of [`EvidenceMatch`]es over all patients.
    pub evidence_pointer_count: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatientEvidence {
    pub person_id: i64,
    pub matches: Vec<EvidenceMatch>,
}

/// A pointer to one event that matched a criterion; note fields are null for structured rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceMatch {
    pub criterion_id: String,
    pub concept_set_id: String,
    pub concept_id: i64,
    /// The event's `vocabulary_id`.
    pub vocabulary: Option<String>,
    pub domain_table: Cow<'static, str>,
    pub event_id: i64,
    pub note_id: Option<i64>,
    pub note_nlp_id: Option<i64>,
    pub source_note_hash: Option<String>,
    /// Code-point offsets of the mention in its note.
    pub start: Option<i64>,
    pub end: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConceptSetProvenance {
    pub concept_set_id: String,
    pub vocabulary: String,
    /// As given, sorted and unique.
    pub requested_concept_ids: Vec<i64>,
    /// After descendant expansion, sorted.
    pub expanded_concept_ids: Vec<i64>,
    /// Members with at least one set match, by concept id.
    pub matched_members: Vec<MemberCount>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemberCount {
    pub concept_id: i64,
    /// Distinct patients with a set match on this concept.
    pub patient_count: usize,
    /// Distinct `(domain_table, event_id)` set matches on this concept.
    pub occurrence_count: usize,
}

/// Why a resolution could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// `concept_sets[concept_set_index]` has `include_descendants` but no ancestry was given.
    HierarchyRequired { concept_set_index: usize },
    /// The event table does not follow `event_schema()` (a bug in its producer).
    BadEventTable {
        column: &'static str,
        reason: &'static str,
    },
    /// An Arrow kernel failed; unreachable while all masks share the table's length.
    Arrow(String),
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HierarchyRequired { concept_set_index } => write!(
                f,
                "concept set {concept_set_index} includes descendants but no concept ancestry was supplied"
            ),
            Self::BadEventTable { column, reason } => {
                write!(f, "event table column {column}: {reason}")
            }
            Self::Arrow(e) => write!(f, "arrow: {e}"),
        }
    }
}

impl std::error::Error for ResolveError {}

impl From<ArrowError> for ResolveError {
    fn from(e: ArrowError) -> Self {
        Self::Arrow(e.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------------------------

/// Resolves `p` over `data`; see the module docs for the exact semantics.
pub fn resolve(
    p: &Phenotype,
    h: &Hierarchy,
    data: &CohortData,
) -> Result<Resolution, ResolveError> {
    check_hierarchy(p, h)?;
    let cols = Columns::new(data)?;
    let sets: Vec<SetEval> = p
        .concept_sets()
        .par_iter()
        .map(|s| SetEval::new(s, h, &cols))
        .collect();
    // Provenance needs only the set matches: it runs beside the criteria, whose waves leave
    // a core idle, and the evidence.
    let (resolved, concept_sets) = std::thread::scope(|s| {
        let provenance = s.spawn(|| sets.iter().map(|s| s.provenance(&cols)).collect::<Vec<_>>());
        let resolved = all_criterion_hits(p, &sets, &cols).map(|hits| {
            let patients = eval_node(p.expression(), p, &hits, &persons(&data.persons));
            let evidence = collect_evidence(p, &hits, &patients, &cols);
            (patients, evidence)
        });
        let provenance = provenance
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (resolved, provenance)
    });
    let (patients, evidence) = resolved?;
    let evidence_pointer_count = evidence.iter().map(|e| e.matches.len()).sum();
    Ok(Resolution {
        matched_patient_count: patients.len(),
        patients,
        evidence,
        concept_sets,
        evidence_pointer_count,
    })
}

fn check_hierarchy(p: &Phenotype, h: &Hierarchy) -> Result<(), ResolveError> {
    match p.first_set_with_descendants() {
        Some(i) if h.is_empty() => Err(ResolveError::HierarchyRequired {
            concept_set_index: i,
        }),
        _ => Ok(()),
    }
}

/// Sorted unique non-null person ids (the contract promises this; it is cheap to ensure).
fn persons(a: &Int64Array) -> Vec<i64> {
    let mut v: Vec<i64> = a.iter().flatten().collect();
    v.sort_unstable();
    v.dedup();
    v
}

// ---------------------------------------------------------------------------------------------
// Columns
// ---------------------------------------------------------------------------------------------

/// The event table's columns, downcast once.
struct Columns<'a> {
    len: usize,
    person: &'a [i64],
    concept: &'a [i64],
    event_id: &'a [i64],
    vocabulary: Dict<'a>,
    domain: Dict<'a>,
    start_date: &'a Date32Array,
    note_id: &'a Int64Array,
    note_nlp_id: &'a Int64Array,
    source_note_hash: &'a StringArray,
    span_start: &'a Int64Array,
    span_end: &'a Int64Array,
    negated: &'a BooleanArray,
    temporality: Dict<'a>,
    certainty: Dict<'a>,
    experiencer: Dict<'a>,
    /// `domain.rank` of every row, read by every sort of matches.
    domain_ranks: Vec<u32>,
}

/// A dictionary-encoded string column read through its keys, with each dictionary value's rank
/// among the distinct values (string order, so comparing ranks compares the strings).
struct Dict<'a> {
    keys: &'a [i16],
    nulls: Option<&'a NullBuffer>,
    /// Per key; `None` for a null dictionary value.
    values: Vec<Option<&'a str>>,
    ranks: Vec<u32>,
}

impl<'a> Dict<'a> {
    fn new(column: &'static str, a: &'a ArrayRef) -> Result<Self, ResolveError> {
        let d = bad_type(column, a.as_dictionary_opt::<Int16Type>())?;
        let strings = bad_type(column, d.values().as_string_opt::<i32>())?;
        let values: Vec<Option<&'a str>> = strings.iter().collect();
        let mut distinct: Vec<&str> = values.iter().flatten().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        let ranks = values
            .iter()
            .map(|v| v.map_or(u32::MAX, |v| distinct.partition_point(|d| *d < v) as u32))
            .collect();
        Ok(Self {
            keys: d.keys().values(),
            nulls: d.keys().nulls(),
            values,
            ranks,
        })
    }

    /// The row's dictionary slot; `None` for a null row.
    fn key(&self, row: usize) -> Option<usize> {
        if self.nulls.is_some_and(|n| n.is_null(row)) {
            return None;
        }
        usize::try_from(self.keys[row])
            .ok()
            .filter(|k| *k < self.values.len())
    }

    fn value(&self, row: usize) -> Option<&'a str> {
        self.key(row).and_then(|k| self.values[k])
    }

    /// `u32::MAX` for null.
    fn rank(&self, row: usize) -> u32 {
        self.key(row).map_or(u32::MAX, |k| self.ranks[k])
    }

    /// `f` of every dictionary value, to be looked up per row by [`Dict::get`].
    fn per_value<T>(&self, f: impl Fn(&str) -> T) -> Vec<Option<T>> {
        self.values.iter().map(|v| v.map(&f)).collect()
    }

    /// The row's entry of a `per_value` table; `None` for a null row or value.
    fn get<T: Copy>(&self, table: &[Option<T>], row: usize) -> Option<T> {
        self.key(row).and_then(|k| table[k])
    }

    /// Every row has a non-null value.
    fn complete(&self) -> bool {
        let values_complete = self.values.iter().all(Option::is_some);
        if values_complete && self.nulls.is_none_or(|n| n.null_count() == 0) {
            return true;
        }
        (0..self.keys.len()).all(|r| self.value(r).is_some())
    }
}

impl<'a> Columns<'a> {
    fn new(data: &'a CohortData) -> Result<Self, ResolveError> {
        let b = &data.events;
        let get = |name: &'static str, ty: DataType| -> Result<&'a ArrayRef, ResolveError> {
            let c = b.column_by_name(name).ok_or(ResolveError::BadEventTable {
                column: name,
                reason: "missing",
            })?;
            if *c.data_type() != ty {
                return Err(ResolveError::BadEventTable {
                    column: name,
                    reason: "unexpected data type",
                });
            }
            Ok(c)
        };
        let int = |name: &'static str| -> Result<&'a Int64Array, ResolveError> {
            bad_type(
                name,
                get(name, DataType::Int64)?.as_primitive_opt::<Int64Type>(),
            )
        };
        let dense = |name: &'static str| -> Result<&'a [i64], ResolveError> {
            let a = int(name)?;
            no_nulls(name, a)?;
            Ok(a.values().as_ref())
        };
        let dict = |name: &'static str| Dict::new(name, get(name, dictionary())?);
        let complete = |name: &'static str| -> Result<Dict<'a>, ResolveError> {
            let d = dict(name)?;
            if !d.complete() {
                return Err(ResolveError::BadEventTable {
                    column: name,
                    reason: "unexpected nulls",
                });
            }
            Ok(d)
        };
        // Checked in schema order, so the first problem reported is the first column's.
        let person = dense(col::PERSON_ID)?;
        let concept = dense(col::CONCEPT_ID)?;
        let vocabulary = dict(col::VOCABULARY_ID)?;
        let domain = complete(col::DOMAIN_TABLE)?;
        let event_id = dense(col::EVENT_ID)?;
        let start_date = get(col::START_DATE, DataType::Date32)?;
        let start_date = bad_type(col::START_DATE, start_date.as_primitive_opt::<Date32Type>())?;
        let note_id = int(col::NOTE_ID)?;
        let note_nlp_id = int(col::NOTE_NLP_ID)?;
        let source_note_hash = get(col::SOURCE_NOTE_HASH, DataType::Utf8)?;
        let source_note_hash = bad_type(
            col::SOURCE_NOTE_HASH,
            source_note_hash.as_string_opt::<i32>(),
        )?;
        let span_start = int(col::SPAN_START)?;
        let span_end = int(col::SPAN_END)?;
        let negated = get(col::NEGATED, DataType::Boolean)?;
        let negated = bad_type(col::NEGATED, negated.as_boolean_opt())?;
        no_nulls(col::NEGATED, negated)?;
        Ok(Self {
            len: b.num_rows(),
            person,
            concept,
            event_id,
            vocabulary,
            start_date,
            note_id,
            note_nlp_id,
            source_note_hash,
            span_start,
            span_end,
            negated,
            temporality: complete(col::TEMPORALITY)?,
            certainty: complete(col::CERTAINTY)?,
            experiencer: complete(col::EXPERIENCER)?,
            domain_ranks: (0..b.num_rows()).map(|r| domain.rank(r)).collect(),
            domain,
        })
    }

    fn start(&self, row: usize) -> Option<i32> {
        self.start_date
            .is_valid(row)
            .then(|| self.start_date.value(row))
    }

    fn domain_rank(&self, row: usize) -> u32 {
        self.domain_ranks[row]
    }
}

fn bad_type<T>(column: &'static str, a: Option<T>) -> Result<T, ResolveError> {
    a.ok_or(ResolveError::BadEventTable {
        column,
        reason: "unexpected array type",
    })
}

fn no_nulls(column: &'static str, a: &dyn Array) -> Result<(), ResolveError> {
    if a.null_count() > 0 {
        return Err(ResolveError::BadEventTable {
            column,
            reason: "unexpected nulls",
        });
    }
    Ok(())
}

/// A null-free mask from a per-row predicate.
fn mask(len: usize, f: impl FnMut(usize) -> bool) -> BooleanArray {
    BooleanArray::new(BooleanBuffer::collect_bool(len, f), None)
}

/// Case-insensitive equality without allocating (ASCII fast path, Unicode lower-casing else).
fn eq_ignore_case(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b);
    }
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

// ---------------------------------------------------------------------------------------------
// Concept sets
// ---------------------------------------------------------------------------------------------

/// A concept set with its expansion and its per-row set-match mask.
struct SetEval<'p> {
    set: &'p ConceptSet,
    expanded: Vec<i64>,
    /// Rows whose concept is in the expanded set and whose vocabulary is null or equal.
    matches: BooleanArray,
}

impl<'p> SetEval<'p> {
    fn new(set: &'p ConceptSet, h: &Hierarchy, cols: &Columns) -> Self {
        let expanded: Vec<i64> = if set.include_descendants {
            h.descendants_with_self(&set.concept_ids)
                .into_iter()
                .collect()
        } else {
            let mut v = set.concept_ids.clone();
            v.sort_unstable();
            v.dedup();
            v
        };
        let ids: IdSet = expanded.iter().copied().collect();
        let vocab = set.vocabulary.as_str();
        // Compared once per distinct vocabulary, then looked up per row; null matches any.
        let equal = cols.vocabulary.per_value(|v| eq_ignore_case(v, vocab));
        let matches = mask(cols.len, |i| {
            ids.contains(&cols.concept[i]) && cols.vocabulary.get(&equal, i).unwrap_or(true)
        });
        Self {
            set,
            expanded,
            matches,
        }
    }

    /// Counts per member concept over set matches. A `(domain, event)` pair appears once in
    /// the event table (its contract), so each matching row is one occurrence.
    fn provenance(&self, cols: &Columns) -> ConceptSetProvenance {
        // Occurrences first, so each member's person set is allocated once at its final size.
        let mut occurrences: IdMap<usize> = IdMap::default();
        for r in self.matches.values().set_indices() {
            *occurrences.entry(cols.concept[r]).or_default() += 1;
        }
        let mut per_concept: IdMap<(usize, IdSet)> = occurrences
            .into_iter()
            .map(|(c, n)| {
                (
                    c,
                    (n, IdSet::with_capacity_and_hasher(n, Default::default())),
                )
            })
            .collect();
        for r in self.matches.values().set_indices() {
            if let Some(e) = per_concept.get_mut(&cols.concept[r]) {
                e.1.insert(cols.person[r]);
            }
        }
        let mut matched_members: Vec<MemberCount> = per_concept
            .into_iter()
            .map(|(concept_id, (occurrences, persons))| MemberCount {
                concept_id,
                patient_count: persons.len(),
                occurrence_count: occurrences,
            })
            .collect();
        matched_members.sort_unstable_by_key(|m| m.concept_id);
        let mut requested = self.set.concept_ids.clone();
        requested.sort_unstable();
        requested.dedup();
        ConceptSetProvenance {
            concept_set_id: self.set.id.clone(),
            vocabulary: self.set.vocabulary.clone(),
            requested_concept_ids: requested,
            expanded_concept_ids: self.expanded.clone(),
            matched_members,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Criteria
// ---------------------------------------------------------------------------------------------

/// One criterion match: a row, keyed for grouping by person.
#[derive(Debug, Clone, Copy)]
struct Hit {
    person: i64,
    event_id: i64,
    /// `Columns::domain_rank` of the row, kept here so sorting reads no other memory.
    domain: u32,
    /// The hit's start date, if any (anchors and evidence order by it).
    start: Option<i32>,
    row: usize,
}

/// Matches of every criterion, each sorted by (person, event, domain) and unique per event.
/// Criteria run in waves: all whose anchor is done (or who have none) at once, in parallel.
fn all_criterion_hits(
    p: &Phenotype,
    sets: &[SetEval],
    cols: &Columns,
) -> Result<Vec<Vec<Hit>>, ResolveError> {
    let criteria = p.criteria();
    let mut hits: Vec<Option<Vec<Hit>>> = vec![None; criteria.len()];
    loop {
        let ready: Vec<usize> = (0..criteria.len())
            .filter(|&i| {
                hits[i].is_none()
                    && criteria[i]
                        .anchor
                        .is_none_or(|a| hits[a.criterion].is_some())
            })
            .collect();
        // Done, or only cyclic anchors left (parsing rejects those).
        if ready.is_empty() {
            break;
        }
        let wave: Vec<_> = ready
            .par_iter()
            .map(|&i| {
                let c = &criteria[i];
                let anchor = c
                    .anchor
                    .map(|a| (AnchorDates::new(hits[a.criterion].as_deref()), a));
                criterion_hits(c, &sets[c.concept_set], anchor.as_ref(), cols)
            })
            .collect();
        for (i, h) in ready.into_iter().zip(wave) {
            hits[i] = Some(h?);
        }
    }
    Ok(hits.into_iter().map(Option::unwrap_or_default).collect())
}

/// The start dates of an anchor criterion's matches, per person, sorted and unique.
struct AnchorDates {
    dates: Vec<i32>,
    /// person → range in `dates`
    by_person: IdMap<(usize, usize)>,
}

impl AnchorDates {
    /// From hits sorted by person: each person's few dates are sorted on their own.
    fn new(hits: Option<&[Hit]>) -> Self {
        let hits = hits.unwrap_or_default();
        let mut dates = Vec::with_capacity(hits.len());
        let mut by_person = IdMap::default();
        for chunk in hits.chunk_by(|a, b| a.person == b.person) {
            let from = dates.len();
            dates.extend(chunk.iter().filter_map(|h| h.start));
            dates[from..].sort_unstable();
            let mut unique = from;
            for i in from..dates.len() {
                if unique == from || dates[unique - 1] != dates[i] {
                    dates[unique] = dates[i];
                    unique += 1;
                }
            }
            dates.truncate(unique);
            if unique > from {
                by_person.insert(chunk[0].person, (from, unique));
            }
        }
        Self { dates, by_person }
    }

    /// Some anchor date `a` of the person satisfies `a - before <= e <= a + after`, i.e.
    /// `a` lies in `[e - after, e + before]`.
    fn admit(&self, a: Anchor, person: i64, start: Option<i32>) -> bool {
        let (Some(e), Some(&(from, to))) = (start.map(i64::from), self.by_person.get(&person))
        else {
            return false;
        };
        let lo = e - i64::from(a.days_after);
        let hi = e + i64::from(a.days_before);
        let own = &self.dates[from..to];
        let first = own.partition_point(|&d| i64::from(d) < lo);
        own.get(first).is_some_and(|&d| i64::from(d) <= hi)
    }
}

/// Rows matching `c`: set match, assertion, fixed window (all as Arrow masks), then the anchor.
fn criterion_hits(
    c: &Criterion,
    set: &SetEval,
    anchor: Option<&(AnchorDates, Anchor)>,
    cols: &Columns,
) -> Result<Vec<Hit>, ResolveError> {
    let mut m = set.matches.clone();
    for extra in assertion_masks(&c.assertion, cols)? {
        m = and(&m, &extra)?;
    }
    if let Some(w) = window_mask(c, cols) {
        m = and(&m, &w)?;
    }
    let mut hits: Vec<Hit> = m
        .values()
        .set_indices()
        .filter(|&r| anchor.is_none_or(|(dates, a)| dates.admit(*a, cols.person[r], cols.start(r))))
        .map(|r| Hit {
            person: cols.person[r],
            event_id: cols.event_id[r],
            domain: cols.domain_rank(r),
            start: cols.start(r),
            row: r,
        })
        .collect();
    sort_unique_events(&mut hits);
    Ok(hits)
}

/// Sorts by (person, event_id, domain, row) and keeps one hit per (person, domain, event).
fn sort_unique_events(hits: &mut Vec<Hit>) {
    hits.sort_unstable_by_key(|h| (h.person, h.event_id, h.domain, h.row));
    hits.dedup_by_key(|h| (h.person, h.event_id, h.domain));
}

/// One mask per assertion filter that actually restricts anything.
fn assertion_masks(f: &AssertionFilter, cols: &Columns) -> Result<Vec<BooleanArray>, ResolveError> {
    let mut out = Vec::new();
    let negated = BooleanArray::new(cols.negated.values().clone(), None);
    match f.negation {
        NegationFilter::AffirmedOnly => out.push(not(&negated)?),
        NegationFilter::NegatedOnly => out.push(negated),
        NegationFilter::Either => {}
    }
    if !f.temporality.is_empty() {
        let allowed: Vec<&str> = f.temporality.iter().map(|t| temporality_name(*t)).collect();
        out.push(value_mask(&cols.temporality, |v| allowed.contains(&v)));
    }
    if let Some(c) = f.certainty {
        out.push(value_mask(&cols.certainty, |v| v == certainty_name(c)));
    }
    if let Some(e) = f.experiencer {
        out.push(value_mask(&cols.experiencer, |v| v == experiencer_name(e)));
    }
    Ok(out)
}

/// Rows whose value `allowed` accepts, decided once per dictionary value.
fn value_mask(d: &Dict, allowed: impl Fn(&str) -> bool) -> BooleanArray {
    let table = d.per_value(allowed);
    mask(d.keys.len(), |i| d.get(&table, i).unwrap_or(false))
}

fn temporality_name(t: Temporality) -> &'static str {
    match t {
        Temporality::Recent => "recent",
        Temporality::Historical => "historical",
        Temporality::Hypothetical => "hypothetical",
    }
}

fn certainty_name(c: Certainty) -> &'static str {
    match c {
        Certainty::Certain => "certain",
        Certainty::Uncertain => "uncertain",
    }
}

fn experiencer_name(e: Experiencer) -> &'static str {
    match e {
        Experiencer::Patient => "patient",
        Experiencer::Family => "family",
        Experiencer::Other => "other",
    }
}

/// Rows with a non-null start date inside the criterion's inclusive fixed window, if it has one.
fn window_mask(c: &Criterion, cols: &Columns) -> Option<BooleanArray> {
    if c.start_date.is_none() && c.end_date.is_none() {
        return None;
    }
    let epoch = chrono::NaiveDate::default(); // 1970-01-01, Date32's day zero
    let lo = c.start_date.map_or(i64::MIN, |d| (d - epoch).num_days());
    let hi = c.end_date.map_or(i64::MAX, |d| (d - epoch).num_days());
    let days = cols.start_date.values();
    Some(mask(cols.len, |i| {
        cols.start_date.is_valid(i) && (lo..=hi).contains(&i64::from(days[i]))
    }))
}

// ---------------------------------------------------------------------------------------------
// Expression
// ---------------------------------------------------------------------------------------------

/// Patients satisfying `node`, sorted and unique.
fn eval_node(node: &Node, p: &Phenotype, hits: &[Vec<Hit>], universe: &[i64]) -> Vec<i64> {
    match node {
        Node::Criterion(i) => satisfying(&p.criteria()[*i], &hits[*i], universe),
        Node::And(children) => children
            .iter()
            .map(|c| eval_node(c, p, hits, universe))
            .reduce(|a, b| intersect(&a, &b))
            .unwrap_or_default(),
        Node::Or(children) => children
            .iter()
            .map(|c| eval_node(c, p, hits, universe))
            .reduce(|a, b| union(&a, &b))
            .unwrap_or_default(),
        Node::Not(child) => difference(universe, &eval_node(child, p, hits, universe)),
    }
}

/// Patients whose distinct-event count lies within the criterion's occurrence bounds.
fn satisfying(c: &Criterion, hits: &[Hit], universe: &[i64]) -> Vec<i64> {
    let counts = per_person_counts(hits);
    let max = c.occurrence.maximum.unwrap_or(u64::MAX);
    let in_range = |n: u64| c.occurrence.minimum <= n && n <= max;
    let matched: Vec<i64> = counts
        .iter()
        .filter(|&&(_, n)| in_range(n))
        .map(|&(p, _)| p)
        .collect();
    if c.occurrence.minimum > 0 {
        return matched;
    }
    // Zero matches also satisfy: everyone without a hit qualifies.
    let with_hits: Vec<i64> = counts.iter().map(|&(p, _)| p).collect();
    union(&difference(universe, &with_hits), &matched)
}

/// `(person, count)` from hits sorted by person and unique per event.
fn per_person_counts(hits: &[Hit]) -> Vec<(i64, u64)> {
    let mut out: Vec<(i64, u64)> = Vec::new();
    for h in hits {
        match out.last_mut() {
            Some((p, n)) if *p == h.person => *n += 1,
            _ => out.push((h.person, 1)),
        }
    }
    out
}

fn intersect(a: &[i64], b: &[i64]) -> Vec<i64> {
    merge(a, b, false, true, false)
}

fn union(a: &[i64], b: &[i64]) -> Vec<i64> {
    merge(a, b, true, true, true)
}

fn difference(a: &[i64], b: &[i64]) -> Vec<i64> {
    merge(a, b, true, false, false)
}

/// Merge of two sorted unique lists keeping elements only in `a`, in both, or only in `b`.
fn merge(a: &[i64], b: &[i64], only_a: bool, both: bool, only_b: bool) -> Vec<i64> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let ord = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match ord {
            Ordering::Less => {
                if only_a {
                    out.push(a[i]);
                }
                i += 1;
            }
            Ordering::Greater => {
                if only_b {
                    out.push(b[j]);
                }
                j += 1;
            }
            Ordering::Equal => {
                if both {
                    out.push(a[i]);
                }
                i += 1;
                j += 1;
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Evidence
// ---------------------------------------------------------------------------------------------

/// Criterion indices under an even number of `not`s, in document order.
fn positive_criteria(node: &Node) -> Vec<usize> {
    let mut out = Vec::new();
    let mut stack = vec![(node, false)];
    while let Some((n, negated)) = stack.pop() {
        match n {
            Node::Criterion(i) if !negated => out.push(*i),
            Node::Criterion(_) => {}
            Node::And(c) | Node::Or(c) => stack.extend(c.iter().map(|c| (c, negated))),
            Node::Not(c) => stack.push((c, !negated)),
        }
    }
    out.sort_unstable();
    out
}

fn collect_evidence(
    p: &Phenotype,
    hits: &[Vec<Hit>],
    patients: &[i64],
    cols: &Columns,
) -> Vec<PatientEvidence> {
    let positive = positive_criteria(p.expression());
    patients
        .par_iter()
        .map(|&person| {
            let mut matches = Vec::new();
            for &ci in &positive {
                let c = &p.criteria()[ci];
                let set_id = &p.concept_sets()[c.concept_set].id;
                let mut own = person_hits(&hits[ci], person).to_vec();
                own.sort_unstable_by_key(evidence_order);
                matches.extend(own.iter().map(|h| pointer(&c.id, set_id, h.row, cols)));
            }
            PatientEvidence {
                person_id: person,
                matches,
            }
        })
        .collect()
}

/// The hits of `person` within hits sorted by person.
fn person_hits(hits: &[Hit], person: i64) -> &[Hit] {
    let from = hits.partition_point(|h| h.person < person);
    let len = hits[from..].partition_point(|h| h.person == person);
    &hits[from..from + len]
}

/// Start date (nulls last), then event id, then domain table.
fn evidence_order(h: &Hit) -> (bool, i32, i64, u32) {
    (
        h.start.is_none(),
        h.start.unwrap_or(0),
        h.event_id,
        h.domain,
    )
}

fn pointer(criterion_id: &str, set_id: &str, r: usize, cols: &Columns) -> EvidenceMatch {
    EvidenceMatch {
        criterion_id: criterion_id.to_owned(),
        concept_set_id: set_id.to_owned(),
        concept_id: cols.concept[r],
        vocabulary: cols.vocabulary.value(r).map(str::to_owned),
        domain_table: domain_name(cols.domain.value(r).unwrap_or_default()),
        event_id: cols.event_id[r],
        note_id: opt_i64(cols.note_id, r),
        note_nlp_id: opt_i64(cols.note_nlp_id, r),
        source_note_hash: opt_str(cols.source_note_hash, r).map(str::to_owned),
        start: opt_i64(cols.span_start, r),
        end: opt_i64(cols.span_end, r),
    }
}

/// Known table names are borrowed statics: no allocation for the common case.
fn domain_name(s: &str) -> Cow<'static, str> {
    const KNOWN: [&str; 8] = [
        "condition_occurrence",
        "drug_exposure",
        "procedure_occurrence",
        "measurement",
        "observation",
        "visit_occurrence",
        "death",
        "note_nlp",
    ];
    match KNOWN.iter().find(|k| **k == s) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(s.to_owned()),
    }
}

fn opt_i64(a: &Int64Array, r: usize) -> Option<i64> {
    a.is_valid(r).then(|| a.value(r))
}

fn opt_str(a: &StringArray, r: usize) -> Option<&str> {
    a.is_valid(r).then(|| a.value(r))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, BooleanArray, Date32Array, DictionaryArray, Int64Array, RecordBatch, StringArray,
    };
    use chrono::NaiveDate;
    use serde_json::{Value, json};

    use super::super::events::{event_schema, observation_period_schema};
    use super::super::phenotype::parse;
    use super::*;

    // -- test data builder -------------------------------------------------------------------

    /// One event row; structured defaults unless changed.
    #[derive(Clone)]
    struct Ev {
        person: i64,
        concept: i64,
        vocab: Option<&'static str>,
        domain: &'static str,
        event_id: i64,
        start: Option<&'static str>,
        /// (note_id, note_nlp_id, source_note_hash, span_start, span_end)
        note: Option<(i64, i64, &'static str, i64, i64)>,
        negated: bool,
        temporality: &'static str,
        certainty: &'static str,
        experiencer: &'static str,
    }

    /// Event `event_id` of `person` with `concept` (SNOMED, condition_occurrence) on `date`.
    fn ev(event_id: i64, person: i64, concept: i64, date: &'static str) -> Ev {
        Ev {
            person,
            concept,
            vocab: Some("SNOMED"),
            domain: "condition_occurrence",
            event_id,
            start: Some(date),
            note: None,
            negated: false,
            temporality: "recent",
            certainty: "certain",
            experiencer: "patient",
        }
    }

    impl Ev {
        fn vocab(mut self, v: Option<&'static str>) -> Self {
            self.vocab = v;
            self
        }
        fn domain(mut self, d: &'static str) -> Self {
            self.domain = d;
            self
        }
        fn undated(mut self) -> Self {
            self.start = None;
            self
        }
        fn negated(mut self) -> Self {
            self.negated = true;
            self
        }
        fn temporality(mut self, t: &'static str) -> Self {
            self.temporality = t;
            self
        }
        fn certainty(mut self, c: &'static str) -> Self {
            self.certainty = c;
            self
        }
        fn experiencer(mut self, e: &'static str) -> Self {
            self.experiencer = e;
            self
        }
        fn note(mut self, note_id: i64, nlp_id: i64, hash: &'static str, s: i64, e: i64) -> Self {
            self.note = Some((note_id, nlp_id, hash, s, e));
            self
        }
    }

    fn days(date: &str) -> i32 {
        let d = NaiveDate::parse_from_str(date, "%Y-%m-%d").unwrap();
        (d - NaiveDate::default()).num_days() as i32
    }

    fn events_batch(evs: &[Ev]) -> RecordBatch {
        let i64s = |f: &dyn Fn(&Ev) -> Option<i64>| -> ArrayRef {
            Arc::new(evs.iter().map(f).collect::<Int64Array>())
        };
        let strs = |f: &dyn Fn(&Ev) -> Option<&'static str>| -> ArrayRef {
            Arc::new(evs.iter().map(f).collect::<StringArray>())
        };
        let dict = |f: &dyn Fn(&Ev) -> Option<&'static str>| -> ArrayRef {
            Arc::new(evs.iter().map(f).collect::<DictionaryArray<Int16Type>>())
        };
        let columns: Vec<ArrayRef> = vec![
            i64s(&|e| Some(e.person)),
            i64s(&|e| Some(e.concept)),
            dict(&|e| e.vocab),
            dict(&|e| Some(e.domain)),
            i64s(&|e| Some(e.event_id)),
            Arc::new(
                evs.iter()
                    .map(|e| e.start.map(days))
                    .collect::<Date32Array>(),
            ),
            Arc::new(evs.iter().map(|_| None::<i32>).collect::<Date32Array>()),
            i64s(&|e| e.note.map(|n| n.0)),
            i64s(&|e| e.note.map(|n| n.1)),
            strs(&|e| e.note.map(|n| n.2)),
            i64s(&|e| e.note.map(|n| n.3)),
            i64s(&|e| e.note.map(|n| n.4)),
            Arc::new(
                evs.iter()
                    .map(|e| Some(e.negated))
                    .collect::<BooleanArray>(),
            ),
            dict(&|e| Some(e.temporality)),
            dict(&|e| Some(e.certainty)),
            dict(&|e| Some(e.experiencer)),
        ];
        RecordBatch::try_new(event_schema(), columns).unwrap()
    }

    fn data(persons: &[i64], evs: &[Ev]) -> CohortData {
        CohortData {
            events: events_batch(evs),
            persons: Int64Array::from(persons.to_vec()),
            observation_periods: RecordBatch::new_empty(observation_period_schema()),
        }
    }

    // -- phenotype builder -------------------------------------------------------------------

    fn cs(id: &str, vocab: &str, ids: &[i64]) -> Value {
        json!({"id": id, "vocabulary": vocab, "concept_ids": ids})
    }

    fn cs_desc(id: &str, vocab: &str, ids: &[i64]) -> Value {
        json!({"id": id, "vocabulary": vocab, "concept_ids": ids, "include_descendants": true})
    }

    fn crit(id: &str, set: &str) -> Value {
        crit_x(id, set, json!({}))
    }

    /// A criterion with extra keys (occurrence, assertion, temporal).
    fn crit_x(id: &str, set: &str, extra: Value) -> Value {
        let mut c = json!({"id": id, "concept_set": set});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        json!({"operator": "criterion", "criterion": c})
    }

    fn and(children: Vec<Value>) -> Value {
        json!({"operator": "and", "children": children})
    }

    fn or(children: Vec<Value>) -> Value {
        json!({"operator": "or", "children": children})
    }

    fn not(child: Value) -> Value {
        json!({"operator": "not", "children": [child]})
    }

    fn pheno(sets: Vec<Value>, expr: Value) -> Phenotype {
        parse(&json!({"id": "p", "name": "P", "concept_sets": sets, "expression": expr})).unwrap()
    }

    /// The two standard sets: "dm" = SNOMED {100}, "rx" = RxNorm {200}.
    fn std_sets() -> Vec<Value> {
        vec![cs("dm", "SNOMED", &[100]), cs("rx", "RxNorm", &[200])]
    }

    fn rx(event_id: i64, person: i64, date: &'static str) -> Ev {
        ev(event_id, person, 200, date)
            .vocab(Some("RxNorm"))
            .domain("drug_exposure")
    }

    fn run(p: &Phenotype, d: &CohortData) -> Resolution {
        resolve(p, &Hierarchy::default(), d).unwrap()
    }

    fn patients(p: &Phenotype, d: &CohortData) -> Vec<i64> {
        run(p, d).patients
    }

    /// `(criterion_id, event_id)` of one patient's evidence, in order.
    fn evidence_of(r: &Resolution, person: i64) -> Vec<(String, i64)> {
        r.evidence
            .iter()
            .find(|e| e.person_id == person)
            .unwrap()
            .matches
            .iter()
            .map(|m| (m.criterion_id.clone(), m.event_id))
            .collect()
    }

    // -- operators ---------------------------------------------------------------------------

    /// p1: dm+rx, p2: dm only, p3: rx only, p4: no events; a dm event of another concept on p3.
    fn four_people() -> CohortData {
        data(
            &[1, 2, 3, 4],
            &[
                ev(1, 1, 100, "2020-01-01"),
                rx(2, 1, "2020-01-02"),
                ev(3, 2, 100, "2020-01-01"),
                rx(4, 3, "2020-01-01"),
                ev(5, 3, 999, "2020-01-01"),
            ],
        )
    }

    #[test]
    fn single_criterion() {
        // dm matches events 1 (p1) and 3 (p2); p3's concept 999 is not in the set.
        let p = pheno(std_sets(), crit("dx", "dm"));
        assert_eq!(patients(&p, &four_people()), vec![1, 2]);
    }

    #[test]
    fn and_or() {
        // dm = {1, 2}, rx = {1, 3}.
        let p = pheno(std_sets(), and(vec![crit("dx", "dm"), crit("m", "rx")]));
        assert_eq!(patients(&p, &four_people()), vec![1]); // {1,2} ∩ {1,3}
        let p = pheno(std_sets(), or(vec![crit("dx", "dm"), crit("m", "rx")]));
        assert_eq!(patients(&p, &four_people()), vec![1, 2, 3]); // {1,2} ∪ {1,3}
    }

    #[test]
    fn not_is_relative_to_all_persons() {
        // persons {1,2,3,4} minus dm {1,2} = {3,4}; p4 has no events at all and still counts.
        let p = pheno(std_sets(), not(crit("dx", "dm")));
        assert_eq!(patients(&p, &four_people()), vec![3, 4]);
        // not(not(x)) = x.
        let p = pheno(std_sets(), not(not(crit("dx", "dm"))));
        assert_eq!(patients(&p, &four_people()), vec![1, 2]);
    }

    #[test]
    fn not_inside_and() {
        // dm {1,2} ∩ not rx ({1..4} \ {1,3} = {2,4}) = {2}.
        let p = pheno(
            std_sets(),
            and(vec![crit("dx", "dm"), not(crit("m", "rx"))]),
        );
        let r = run(&p, &four_people());
        assert_eq!(r.patients, vec![2]);
        // Only dx is positive: p2's evidence is event 3 alone.
        assert_eq!(evidence_of(&r, 2), vec![("dx".to_owned(), 3)]);
    }

    #[test]
    fn nested_or_inside_not_inside_and() {
        // or(dm, rx) = {1,2,3}; not(...) = {4}; and(not(...), not(dm)) = {4} ∩ {3,4} = {4}.
        let p = pheno(
            std_sets(),
            and(vec![
                not(or(vec![crit("a", "dm"), crit("b", "rx")])),
                not(crit("c", "dm")),
            ]),
        );
        let r = run(&p, &four_people());
        assert_eq!(r.patients, vec![4]);
        // Every criterion is under one `not`: no evidence.
        assert_eq!(evidence_of(&r, 4), vec![]);
        assert_eq!(r.evidence_pointer_count, 0);
    }

    #[test]
    fn persons_input_is_deduplicated() {
        // Unsorted, repeated persons behave as the set {1,2,3,4}.
        let mut d = four_people();
        d.persons = Int64Array::from(vec![4, 1, 3, 1, 2]);
        let p = pheno(std_sets(), not(crit("dx", "dm")));
        assert_eq!(patients(&p, &d), vec![3, 4]);
    }

    // -- occurrences -------------------------------------------------------------------------

    /// dm events: p1 ×1, p2 ×2, p3 ×3, p4 none.
    fn counts_data() -> CohortData {
        data(
            &[1, 2, 3, 4],
            &[
                ev(1, 1, 100, "2020-01-01"),
                ev(2, 2, 100, "2020-01-01"),
                ev(3, 2, 100, "2020-01-02"),
                ev(4, 3, 100, "2020-01-01"),
                ev(5, 3, 100, "2020-01-02"),
                ev(6, 3, 100, "2020-01-03"),
            ],
        )
    }

    fn with_occurrence(o: Value) -> Phenotype {
        pheno(std_sets(), crit_x("dx", "dm", json!({ "occurrence": o })))
    }

    #[test]
    fn occurrence_bounds() {
        let d = counts_data();
        // counts: p1=1, p2=2, p3=3, p4=0.
        let cases: [(Value, Vec<i64>); 7] = [
            (json!({}), vec![1, 2, 3]),                        // >= 1
            (json!({"minimum": 2}), vec![2, 3]),               // >= 2
            (json!({"minimum": 3}), vec![3]),                  // exact lower bound
            (json!({"minimum": 2, "maximum": 2}), vec![2]),    // exactly 2
            (json!({"minimum": 1, "maximum": 2}), vec![1, 2]), // 1..=2
            (json!({"minimum": 0, "maximum": 0}), vec![4]),    // "none"
            (json!({"minimum": 0}), vec![1, 2, 3, 4]),         // anyone
        ];
        for (o, want) in cases {
            assert_eq!(patients(&with_occurrence(o.clone()), &d), want, "{o}");
        }
        // 0..=1: p1 (1) and p4 (0).
        assert_eq!(
            patients(&with_occurrence(json!({"minimum": 0, "maximum": 1})), &d),
            vec![1, 4]
        );
    }

    #[test]
    fn occurrences_count_distinct_domain_event_pairs() {
        // p1: event 7 twice in condition_occurrence (one event), and event 7 in observation
        // (another event): 2 distinct. p2: events 8 and 9: 2 distinct.
        let d = data(
            &[1, 2],
            &[
                ev(7, 1, 100, "2020-01-01"),
                ev(7, 1, 100, "2020-01-05"),
                ev(7, 1, 100, "2020-01-01").domain("observation"),
                ev(8, 2, 100, "2020-01-01"),
                ev(9, 2, 100, "2020-01-01"),
            ],
        );
        let p = with_occurrence(json!({"minimum": 2, "maximum": 2}));
        let r = run(&p, &d);
        assert_eq!(r.patients, vec![1, 2]);
        // The duplicate row is not repeated as evidence: event 7 (condition), event 7
        // (observation); same date, same id, so ordered by domain name.
        let p1: Vec<(i64, String)> = r.evidence[0]
            .matches
            .iter()
            .map(|m| (m.event_id, m.domain_table.to_string()))
            .collect();
        assert_eq!(
            p1,
            vec![
                (7, "condition_occurrence".to_owned()),
                (7, "observation".to_owned())
            ]
        );
        // Two rows of p1 plus two of p2.
        assert_eq!(r.evidence_pointer_count, 4);
    }

    // -- assertion filters -------------------------------------------------------------------

    #[test]
    fn negation_filter() {
        // p1: affirmed; p2: negated only; p3: one of each.
        let d = data(
            &[1, 2, 3],
            &[
                ev(1, 1, 100, "2020-01-01"),
                ev(2, 2, 100, "2020-01-01").negated(),
                ev(3, 3, 100, "2020-01-01"),
                ev(4, 3, 100, "2020-01-01").negated(),
            ],
        );
        let with = |a: Value| pheno(std_sets(), crit_x("dx", "dm", json!({ "assertion": a })));
        // Default: affirmed only.
        assert_eq!(patients(&with(json!({})), &d), vec![1, 3]);
        assert_eq!(
            patients(&with(json!({"negation": ["negated"]})), &d),
            vec![2, 3]
        );
        assert_eq!(
            patients(&with(json!({"negation": ["affirmed", "negated"]})), &d),
            vec![1, 2, 3]
        );
        // p3's evidence under the default filter is the affirmed event 3 only.
        assert_eq!(
            evidence_of(&run(&with(json!({})), &d), 3),
            vec![("dx".to_owned(), 3)]
        );
    }

    /// p1 recent/certain/patient, p2 historical/uncertain/family, p3 hypothetical/certain/other.
    fn assertion_data() -> CohortData {
        data(
            &[1, 2, 3],
            &[
                ev(1, 1, 100, "2020-01-01"),
                ev(2, 2, 100, "2020-01-01")
                    .temporality("historical")
                    .certainty("uncertain")
                    .experiencer("family"),
                ev(3, 3, 100, "2020-01-01")
                    .temporality("hypothetical")
                    .experiencer("other"),
            ],
        )
    }

    fn with_assertion(a: Value) -> Phenotype {
        pheno(std_sets(), crit_x("dx", "dm", json!({ "assertion": a })))
    }

    #[test]
    fn temporality_filter() {
        let d = assertion_data();
        assert_eq!(patients(&with_assertion(json!({})), &d), vec![1, 2, 3]);
        assert_eq!(
            patients(&with_assertion(json!({"temporality": []})), &d),
            vec![1, 2, 3]
        );
        assert_eq!(
            patients(&with_assertion(json!({"temporality": ["historical"]})), &d),
            vec![2]
        );
        assert_eq!(
            patients(
                &with_assertion(json!({"temporality": ["recent", "hypothetical"]})),
                &d
            ),
            vec![1, 3]
        );
    }

    #[test]
    fn certainty_filter() {
        let d = assertion_data();
        assert_eq!(
            patients(&with_assertion(json!({"certainty": "uncertain"})), &d),
            vec![2]
        );
        assert_eq!(
            patients(&with_assertion(json!({"certainty": "certain"})), &d),
            vec![1, 3]
        );
    }

    #[test]
    fn experiencer_filter() {
        let d = assertion_data();
        assert_eq!(
            patients(&with_assertion(json!({"experiencer": "family"})), &d),
            vec![2]
        );
        assert_eq!(
            patients(&with_assertion(json!({"experiencer": "patient"})), &d),
            vec![1]
        );
        assert_eq!(
            patients(&with_assertion(json!({"experiencer": "other"})), &d),
            vec![3]
        );
        // Filters combine: certain AND not historical-only... certain + other = p3 only.
        assert_eq!(
            patients(
                &with_assertion(json!({"certainty": "certain", "experiencer": "other"})),
                &d
            ),
            vec![3]
        );
    }

    #[test]
    fn unknown_assertion_strings_fail_restrictive_filters_only() {
        // A row with an out-of-vocabulary temporality passes "any" but no explicit list.
        let d = data(&[1], &[ev(1, 1, 100, "2020-01-01").temporality("future")]);
        assert_eq!(patients(&with_assertion(json!({})), &d), vec![1]);
        let all = json!({"temporality": ["recent", "historical", "hypothetical"]});
        assert_eq!(patients(&with_assertion(all), &d), Vec::<i64>::new());
    }

    // -- fixed date windows ------------------------------------------------------------------

    /// p1 on the start bound, p2 on the end bound, p3 a day before, p4 a day after, p5 undated.
    fn window_data() -> CohortData {
        data(
            &[1, 2, 3, 4, 5],
            &[
                ev(1, 1, 100, "2020-01-01"),
                ev(2, 2, 100, "2020-12-31"),
                ev(3, 3, 100, "2019-12-31"),
                ev(4, 4, 100, "2021-01-01"),
                ev(5, 5, 100, "2020-06-01").undated(),
            ],
        )
    }

    fn with_temporal(t: Value) -> Phenotype {
        pheno(std_sets(), crit_x("dx", "dm", json!({ "temporal": t })))
    }

    #[test]
    fn fixed_window_inclusive_bounds_and_nulls() {
        let d = window_data();
        let both = json!({"start_date": "2020-01-01", "end_date": "2020-12-31"});
        assert_eq!(patients(&with_temporal(both), &d), vec![1, 2]);
        // Open-ended: from 2020-06-01 catches p2 (2020-12-31) and p4 (2021-01-01).
        let from = json!({"start_date": "2020-06-01"});
        assert_eq!(patients(&with_temporal(from), &d), vec![2, 4]);
        // Until 2019-12-31 catches p3 only; p5's null date never passes a window.
        let until = json!({"end_date": "2019-12-31"});
        assert_eq!(patients(&with_temporal(until), &d), vec![3]);
        // A one-day window.
        let day = json!({"start_date": "2021-01-01", "end_date": "2021-01-01"});
        assert_eq!(patients(&with_temporal(day), &d), vec![4]);
        // Without a window the undated event counts.
        assert_eq!(patients(&with_temporal(json!({})), &d), vec![1, 2, 3, 4, 5]);
    }

    // -- anchored windows --------------------------------------------------------------------

    /// dm on 2020-06-10 for p1..p5; rx: p1 06-01 (9 days before), p2 05-31 (10 before),
    /// p3 05-30 (11 before), p4 06-11 (1 after), p5 06-10 (same day).
    /// p6: rx 06-10 but no dm. p7: undated dm + rx 06-10. p8: dm 06-10 + undated rx.
    fn anchor_data() -> CohortData {
        let dm = |e, p| ev(e, p, 100, "2020-06-10");
        data(
            &[1, 2, 3, 4, 5, 6, 7, 8],
            &[
                dm(1, 1),
                dm(2, 2),
                dm(3, 3),
                dm(4, 4),
                dm(5, 5),
                dm(7, 7).undated(),
                dm(8, 8),
                rx(11, 1, "2020-06-01"),
                rx(12, 2, "2020-05-31"),
                rx(13, 3, "2020-05-30"),
                rx(14, 4, "2020-06-11"),
                rx(15, 5, "2020-06-10"),
                rx(16, 6, "2020-06-10"),
                rx(17, 7, "2020-06-10"),
                rx(18, 8, "2020-06-10").undated(),
            ],
        )
    }

    /// rx anchored on dx with the given days; dx has minimum 0 so only rx decides.
    fn anchored_rx(days: Value) -> Phenotype {
        let mut t = json!({"anchor_criterion": "dx"});
        for (k, v) in days.as_object().unwrap() {
            t[k] = v.clone();
        }
        pheno(
            std_sets(),
            and(vec![
                crit_x("m", "rx", json!({ "temporal": t })),
                crit_x("dx", "dm", json!({"occurrence": {"minimum": 0}})),
            ]),
        )
    }

    #[test]
    fn anchor_days_before() {
        // a - 10 <= e <= a: 05-31..=06-10 → p1 (06-01), p2 (05-31, bound), p5 (same day).
        let p = anchored_rx(json!({"days_before": 10}));
        assert_eq!(patients(&p, &anchor_data()), vec![1, 2, 5]);
    }

    #[test]
    fn anchor_days_after() {
        // a <= e <= a + 1: 06-10..=06-11 → p4 (06-11, bound), p5 (same day).
        let p = anchored_rx(json!({"days_after": 1}));
        assert_eq!(patients(&p, &anchor_data()), vec![4, 5]);
        // days_after 0 alone means the same day only.
        let p = anchored_rx(json!({"days_after": 0}));
        assert_eq!(patients(&p, &anchor_data()), vec![5]);
    }

    #[test]
    fn anchor_days_both() {
        // 05-31..=06-11 → p1, p2, p4, p5. Never p3 (11 days before), p6 (no anchor event),
        // p7 (anchor undated), p8 (event undated).
        let p = anchored_rx(json!({"days_before": 10, "days_after": 1}));
        let r = run(&p, &anchor_data());
        assert_eq!(r.patients, vec![1, 2, 4, 5]);
        // Evidence: criterion m then dx (document order).
        assert_eq!(
            evidence_of(&r, 2),
            vec![("m".to_owned(), 12), ("dx".to_owned(), 2)]
        );
    }

    #[test]
    fn anchor_uses_any_of_several_anchor_dates() {
        // p1 has dm on 2020-01-01 and 2020-06-10; rx on 06-05 is within 10 days before the
        // second one only.
        let d = data(
            &[1],
            &[
                ev(1, 1, 100, "2020-01-01"),
                ev(2, 1, 100, "2020-06-10"),
                rx(3, 1, "2020-06-05"),
            ],
        );
        let p = anchored_rx(json!({"days_before": 10}));
        assert_eq!(patients(&p, &d), vec![1]);
        let p = anchored_rx(json!({"days_after": 10}));
        assert_eq!(patients(&p, &d), Vec::<i64>::new());
    }

    #[test]
    fn anchor_applies_its_own_filters() {
        // dx only counts from 2021-01-01 and affirmed. rx within 5 days after dx.
        // p1: dm 2020-06-10 (before dx window) + rx 06-12 → no anchor → out.
        // p2: dm 2021-03-01 + rx 03-02 → in.
        // p3: negated dm 2021-03-01 + rx 03-02 → anchor filtered out → out.
        let d = data(
            &[1, 2, 3],
            &[
                ev(1, 1, 100, "2020-06-10"),
                rx(2, 1, "2020-06-12"),
                ev(3, 2, 100, "2021-03-01"),
                rx(4, 2, "2021-03-02"),
                ev(5, 3, 100, "2021-03-01").negated(),
                rx(6, 3, "2021-03-02"),
            ],
        );
        let p = pheno(
            std_sets(),
            and(vec![
                crit_x(
                    "m",
                    "rx",
                    json!({"temporal": {"anchor_criterion": "dx", "days_after": 5}}),
                ),
                crit_x(
                    "dx",
                    "dm",
                    json!({"occurrence": {"minimum": 0},
                           "temporal": {"start_date": "2021-01-01"}}),
                ),
            ]),
        );
        assert_eq!(patients(&p, &d), vec![2]);
    }

    #[test]
    fn anchor_ignores_the_anchor_occurrence_bounds() {
        // dx requires 2 events as a criterion, but as an anchor any single match is a date.
        // p1: one dm 2020-01-01 and rx 2020-01-02 → m matches; dx (count 1) fails.
        let d = data(&[1], &[ev(1, 1, 100, "2020-01-01"), rx(2, 1, "2020-01-02")]);
        let p = pheno(
            std_sets(),
            or(vec![
                crit_x(
                    "m",
                    "rx",
                    json!({"temporal": {"anchor_criterion": "dx", "days_after": 1}}),
                ),
                crit_x("dx", "dm", json!({"occurrence": {"minimum": 2}})),
            ]),
        );
        let r = run(&p, &d);
        assert_eq!(r.patients, vec![1]);
        // Evidence lists every positive criterion's matches, including dx's single event
        // although dx's own count was not met.
        assert_eq!(
            evidence_of(&r, 1),
            vec![("m".to_owned(), 2), ("dx".to_owned(), 1)]
        );
    }

    #[test]
    fn chained_anchors() {
        // c (300) within 30 days after b (200), b within 30 days after a (100). c comes first
        // in the document, so anchors must be evaluated out of order.
        // p1: a 01-01, b 01-20 (19 after), c 02-10 (21 after b) → in.
        // p2: a 01-01, b 03-01 (60 after: b fails), c 03-05 → out.
        // p3: no a, b 01-20, c 02-10 → b fails → out.
        let d = data(
            &[1, 2, 3],
            &[
                ev(1, 1, 100, "2020-01-01"),
                ev(2, 1, 200, "2020-01-20"),
                ev(3, 1, 300, "2020-02-10"),
                ev(4, 2, 100, "2020-01-01"),
                ev(5, 2, 200, "2020-03-01"),
                ev(6, 2, 300, "2020-03-05"),
                ev(8, 3, 200, "2020-01-20"),
                ev(9, 3, 300, "2020-02-10"),
            ],
        );
        let after =
            |anchor: &str| json!({"temporal": {"anchor_criterion": anchor, "days_after": 30}});
        let zero = json!({"occurrence": {"minimum": 0}});
        let mut b = after("a");
        b["occurrence"] = json!({"minimum": 0});
        let p = pheno(
            vec![
                cs("sa", "SNOMED", &[100]),
                cs("sb", "SNOMED", &[200]),
                cs("sc", "SNOMED", &[300]),
            ],
            and(vec![
                crit_x("c", "sc", after("b")),
                crit_x("a", "sa", zero),
                crit_x("b", "sb", b),
            ]),
        );
        let r = run(&p, &d);
        assert_eq!(r.patients, vec![1]);
        assert_eq!(
            evidence_of(&r, 1),
            vec![
                ("c".to_owned(), 3),
                ("a".to_owned(), 1),
                ("b".to_owned(), 2)
            ]
        );
    }

    // -- vocabulary --------------------------------------------------------------------------

    #[test]
    fn vocabulary_matching() {
        // Set "Snomed" {100}: p1 "snomed" (case differs) → in; p2 "ICD10CM" → out;
        // p3 null vocabulary, id alone → in; p4 SNOMED but concept 101 → out.
        let d = data(
            &[1, 2, 3, 4],
            &[
                ev(1, 1, 100, "2020-01-01").vocab(Some("snomed")),
                ev(2, 2, 100, "2020-01-01").vocab(Some("ICD10CM")),
                ev(3, 3, 100, "2020-01-01").vocab(None),
                ev(4, 4, 101, "2020-01-01"),
            ],
        );
        let p = pheno(vec![cs("dm", "Snomed", &[100])], crit("dx", "dm"));
        let r = run(&p, &d);
        assert_eq!(r.patients, vec![1, 3]);
        // Evidence reports the event's own vocabulary, null included.
        assert_eq!(
            r.evidence[0].matches[0].vocabulary.as_deref(),
            Some("snomed")
        );
        assert_eq!(r.evidence[1].matches[0].vocabulary, None);
    }

    #[test]
    fn case_insensitive_comparison() {
        assert!(eq_ignore_case("SNOMED", "snomed"));
        assert!(eq_ignore_case("RxNorm", "RXNORM"));
        assert!(!eq_ignore_case("RxNorm", "RxNorm Extension"));
        assert!(eq_ignore_case("ÄBC", "äbc"));
        assert!(!eq_ignore_case("ÄBC", "abc"));
    }

    // -- hierarchy ---------------------------------------------------------------------------

    fn run_h(p: &Phenotype, edges: &[(i64, i64)], d: &CohortData) -> Resolution {
        resolve(p, &Hierarchy::new(edges), d).unwrap()
    }

    #[test]
    fn descendants_chain() {
        // 100 → 101 → 102. p1 has 102, p2 has 101, p3 has 103 (unrelated).
        let d = data(
            &[1, 2, 3],
            &[
                ev(1, 1, 102, "2020-01-01"),
                ev(2, 2, 101, "2020-01-01"),
                ev(3, 3, 103, "2020-01-01"),
            ],
        );
        let edges = [(100, 101), (101, 102)];
        let p = pheno(vec![cs_desc("dm", "SNOMED", &[100])], crit("dx", "dm"));
        let r = run_h(&p, &edges, &d);
        assert_eq!(r.patients, vec![1, 2]);
        assert_eq!(r.concept_sets[0].expanded_concept_ids, vec![100, 101, 102]);
        // Without include_descendants the hierarchy is ignored: nobody has 100 itself.
        let p = pheno(vec![cs("dm", "SNOMED", &[100])], crit("dx", "dm"));
        let r = run_h(&p, &edges, &d);
        assert_eq!(r.patients, Vec::<i64>::new());
        assert_eq!(r.concept_sets[0].expanded_concept_ids, vec![100]);
    }

    #[test]
    fn descendants_diamond_and_cycle() {
        // Diamond 10→20, 10→30, 20→40, 30→40: from 20 we get {20, 40}; p1 (30) out, p2 (40) in.
        let d = data(
            &[1, 2],
            &[ev(1, 1, 30, "2020-01-01"), ev(2, 2, 40, "2020-01-01")],
        );
        let diamond = [(10, 20), (10, 30), (20, 40), (30, 40)];
        let p = pheno(vec![cs_desc("s", "SNOMED", &[20])], crit("c", "s"));
        let r = run_h(&p, &diamond, &d);
        assert_eq!(r.patients, vec![2]);
        assert_eq!(r.concept_sets[0].expanded_concept_ids, vec![20, 40]);
        // From 10: {10, 20, 30, 40}, 40 once.
        let p = pheno(vec![cs_desc("s", "SNOMED", &[10])], crit("c", "s"));
        let r = run_h(&p, &diamond, &d);
        assert_eq!(r.patients, vec![1, 2]);
        assert_eq!(r.concept_sets[0].expanded_concept_ids, vec![10, 20, 30, 40]);
        // Cycle 30→40→50→30 from 40: {30, 40, 50}, terminates.
        let p = pheno(vec![cs_desc("s", "SNOMED", &[40])], crit("c", "s"));
        let r = run_h(&p, &[(30, 40), (40, 50), (50, 30)], &d);
        assert_eq!(r.patients, vec![1, 2]);
        assert_eq!(r.concept_sets[0].expanded_concept_ids, vec![30, 40, 50]);
    }

    #[test]
    fn include_descendants_without_hierarchy_is_an_error() {
        // Set 1 asks for descendants; no edges supplied.
        let p = pheno(
            vec![cs("dm", "SNOMED", &[100]), cs_desc("rx", "RxNorm", &[200])],
            crit("dx", "dm"),
        );
        assert_eq!(
            resolve(&p, &Hierarchy::default(), &four_people()),
            Err(ResolveError::HierarchyRequired {
                concept_set_index: 1
            })
        );
        // With any edge at all it resolves.
        assert!(resolve(&p, &Hierarchy::new(&[(1, 2)]), &four_people()).is_ok());
    }

    // -- provenance --------------------------------------------------------------------------

    #[test]
    fn provenance_counts() {
        // Set {102, 100, 100, 101} SNOMED. Set matches (before assertion filters):
        //   100: p1 e1, p1 e2, p2 e4, p4 e6 (null vocabulary) → 3 patients, 4 occurrences
        //   101: p1 e3 (negated, still a set match) → 1 patient, 1 occurrence
        //   101: p2 e5 is ICD10CM → not a set match
        //   102: nothing → omitted
        // The criterion (affirmed only) matches e1, e2, e4, e6 → patients [1, 2, 4].
        let d = data(
            &[1, 2, 3, 4],
            &[
                ev(1, 1, 100, "2020-01-01"),
                ev(2, 1, 100, "2020-01-02"),
                ev(3, 1, 101, "2020-01-03").negated(),
                ev(4, 2, 100, "2020-01-01"),
                ev(5, 2, 101, "2020-01-01").vocab(Some("ICD10CM")),
                ev(6, 4, 100, "2020-01-01").vocab(None),
                ev(7, 3, 555, "2020-01-01"),
            ],
        );
        let p = pheno(
            vec![
                cs("dm", "SNOMED", &[102, 100, 100, 101]),
                cs("rx", "RxNorm", &[200]),
            ],
            crit("dx", "dm"),
        );
        let r = run(&p, &d);
        assert_eq!(r.patients, vec![1, 2, 4]);
        assert_eq!(r.matched_patient_count, 3);
        assert_eq!(r.evidence_pointer_count, 4);
        assert_eq!(
            r.concept_sets,
            vec![
                ConceptSetProvenance {
                    concept_set_id: "dm".to_owned(),
                    vocabulary: "SNOMED".to_owned(),
                    requested_concept_ids: vec![100, 101, 102],
                    expanded_concept_ids: vec![100, 101, 102],
                    matched_members: vec![
                        MemberCount {
                            concept_id: 100,
                            patient_count: 3,
                            occurrence_count: 4
                        },
                        MemberCount {
                            concept_id: 101,
                            patient_count: 1,
                            occurrence_count: 1
                        },
                    ],
                },
                // A set no criterion uses still gets provenance (here: no matches).
                ConceptSetProvenance {
                    concept_set_id: "rx".to_owned(),
                    vocabulary: "RxNorm".to_owned(),
                    requested_concept_ids: vec![200],
                    expanded_concept_ids: vec![200],
                    matched_members: vec![],
                },
            ]
        );
    }

    // -- evidence ----------------------------------------------------------------------------

    #[test]
    fn evidence_pointers_and_order() {
        // p1's dm matches: e7 03-01 structured, e5 03-01 from a note, e3 01-01, e9 undated,
        // plus a negated note_nlp mention e4 (excluded by the default negation filter).
        // Order: date, nulls last, then event id → e3, e5, e7, e9.
        let d = data(
            &[1],
            &[
                ev(7, 1, 100, "2020-03-01"),
                ev(5, 1, 100, "2020-03-01").note(900, 901, "h1", 10, 20),
                ev(3, 1, 100, "2020-01-01"),
                ev(9, 1, 100, "2020-01-01").undated(),
                ev(4, 1, 100, "2020-02-01")
                    .domain("note_nlp")
                    .negated()
                    .note(900, 902, "h1", 30, 35),
            ],
        );
        let p = pheno(std_sets(), crit("dx", "dm"));
        let r = run(&p, &d);
        assert_eq!(r.evidence.len(), 1);
        assert_eq!(r.evidence[0].person_id, 1);
        let ids: Vec<i64> = r.evidence[0].matches.iter().map(|m| m.event_id).collect();
        assert_eq!(ids, vec![3, 5, 7, 9]);
        assert_eq!(
            r.evidence[0].matches[1],
            EvidenceMatch {
                criterion_id: "dx".to_owned(),
                concept_set_id: "dm".to_owned(),
                concept_id: 100,
                vocabulary: Some("SNOMED".to_owned()),
                domain_table: Cow::Borrowed("condition_occurrence"),
                event_id: 5,
                note_id: Some(900),
                note_nlp_id: Some(901),
                source_note_hash: Some("h1".to_owned()),
                start: Some(10),
                end: Some(20),
            }
        );
        // Structured rows serialise their note fields as null.
        let v = serde_json::to_value(&r.evidence[0].matches[0]).unwrap();
        assert_eq!(
            v,
            json!({"criterion_id": "dx", "concept_set_id": "dm", "concept_id": 100,
                   "vocabulary": "SNOMED", "domain_table": "condition_occurrence", "event_id": 3,
                   "note_id": null, "note_nlp_id": null, "source_note_hash": null,
                   "start": null, "end": null})
        );
        // Asking for negated mentions finds the note_nlp row.
        let p = pheno(
            std_sets(),
            crit_x("dx", "dm", json!({"assertion": {"negation": ["negated"]}})),
        );
        let r = run(&p, &d);
        let m = &r.evidence[0].matches;
        assert_eq!(m.len(), 1);
        assert_eq!(
            (
                m[0].domain_table.as_ref(),
                m[0].note_nlp_id,
                m[0].start,
                m[0].end
            ),
            ("note_nlp", Some(902), Some(30), Some(35))
        );
    }

    #[test]
    fn evidence_follows_criterion_order_then_date() {
        // or(rx-criterion "m", dm-criterion "dx"): p1 has both; m first although its event
        // is later.
        let d = data(
            &[1],
            &[
                rx(1, 1, "2021-01-01"),
                ev(2, 1, 100, "2020-01-01"),
                ev(3, 1, 100, "2019-01-01"),
            ],
        );
        let p = pheno(std_sets(), or(vec![crit("m", "rx"), crit("dx", "dm")]));
        let r = run(&p, &d);
        assert_eq!(
            evidence_of(&r, 1),
            vec![
                ("m".to_owned(), 1),
                ("dx".to_owned(), 3),
                ("dx".to_owned(), 2)
            ]
        );
        let m = &r.evidence[0].matches;
        assert_eq!(
            (m[0].concept_set_id.as_str(), m[0].vocabulary.as_deref()),
            ("rx", Some("RxNorm"))
        );
        assert_eq!(r.evidence_pointer_count, 3);
    }

    #[test]
    fn resolution_serialises() {
        let p = pheno(std_sets(), crit("dx", "dm"));
        let v = serde_json::to_value(run(&p, &four_people())).unwrap();
        assert_eq!(v["patients"], json!([1, 2]));
        assert_eq!(v["matched_patient_count"], json!(2));
        assert_eq!(v["evidence_pointer_count"], json!(2));
        assert_eq!(v["evidence"][1]["person_id"], json!(2));
        assert_eq!(
            v["concept_sets"][0]["matched_members"],
            json!([{"concept_id": 100, "patient_count": 2, "occurrence_count": 2}])
        );
    }

    // -- robustness --------------------------------------------------------------------------

    #[test]
    fn empty_event_table() {
        // No events: a positive criterion is empty, its negation is everyone.
        let d = data(&[1, 2], &[]);
        assert_eq!(
            patients(&pheno(std_sets(), crit("dx", "dm")), &d),
            Vec::<i64>::new()
        );
        assert_eq!(
            patients(&pheno(std_sets(), not(crit("dx", "dm"))), &d),
            vec![1, 2]
        );
    }

    #[test]
    fn malformed_event_table_is_an_error() {
        let mut d = four_people();
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "person_id",
            DataType::Int64,
            false,
        )]));
        d.events = RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![1]))]).unwrap();
        let p = pheno(std_sets(), crit("dx", "dm"));
        assert_eq!(
            resolve(&p, &Hierarchy::default(), &d),
            Err(ResolveError::BadEventTable {
                column: "concept_id",
                reason: "missing"
            })
        );
    }

    #[test]
    fn wrong_column_type_and_nulls_are_errors() {
        let p = pheno(std_sets(), crit("dx", "dm"));
        let base = four_people().events;
        let replace = |name: &str, array: ArrayRef, nullable: bool| {
            let schema = base.schema();
            let i = schema.index_of(name).unwrap();
            let mut fields: Vec<arrow_schema::Field> =
                schema.fields().iter().map(|f| f.as_ref().clone()).collect();
            fields[i] = arrow_schema::Field::new(name, array.data_type().clone(), nullable);
            let mut cols = base.columns().to_vec();
            cols[i] = array;
            let events =
                RecordBatch::try_new(Arc::new(arrow_schema::Schema::new(fields)), cols).unwrap();
            CohortData {
                events,
                ..four_people()
            }
        };
        let as_i32: ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![100; 5]));
        assert_eq!(
            resolve(
                &p,
                &Hierarchy::default(),
                &replace("concept_id", as_i32, false)
            ),
            Err(ResolveError::BadEventTable {
                column: "concept_id",
                reason: "unexpected data type"
            })
        );
        let with_null: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(1),
            None,
            Some(2),
            Some(3),
            Some(3),
        ]));
        assert_eq!(
            resolve(
                &p,
                &Hierarchy::default(),
                &replace("person_id", with_null, true)
            ),
            Err(ResolveError::BadEventTable {
                column: "person_id",
                reason: "unexpected nulls"
            })
        );
        let plain_strings: ArrayRef = Arc::new(StringArray::from(vec!["condition_occurrence"; 5]));
        assert_eq!(
            resolve(
                &p,
                &Hierarchy::default(),
                &replace("domain_table", plain_strings, false)
            ),
            Err(ResolveError::BadEventTable {
                column: "domain_table",
                reason: "unexpected data type"
            })
        );
        // A key pointing at a null dictionary value is a null row too.
        let null_value: ArrayRef = Arc::new(
            DictionaryArray::<Int16Type>::try_new(
                vec![0i16, 0, 1, 0, 0].into(),
                Arc::new(StringArray::from(vec![Some("condition_occurrence"), None])),
            )
            .unwrap(),
        );
        assert_eq!(
            resolve(
                &p,
                &Hierarchy::default(),
                &replace("domain_table", null_value, false)
            ),
            Err(ResolveError::BadEventTable {
                column: "domain_table",
                reason: "unexpected nulls"
            })
        );
        assert_eq!(
            ResolveError::HierarchyRequired {
                concept_set_index: 2
            }
            .to_string(),
            "concept set 2 includes descendants but no concept ancestry was supplied"
        );
    }

    #[test]
    fn sliced_event_table() {
        // A batch that is a slice of a larger one (non-zero offsets) resolves the same way:
        // rows 1..4 of four_people are rx p1, dm p2, rx p3 → dm = {2}.
        let mut d = four_people();
        d.events = d.events.slice(1, 3);
        let p = pheno(std_sets(), crit("dx", "dm"));
        let r = run(&p, &d);
        assert_eq!(r.patients, vec![2]);
        assert_eq!(evidence_of(&r, 2), vec![("dx".to_owned(), 3)]);
    }
}
