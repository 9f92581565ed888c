//! The typed form of a parsed Circe expression and the resolution it evaluates to.
//!
//! The cohort's fields are private to this module tree: a `CirceCohort` can only come from
//! [`super::parse`], so every codeset reference points at an existing concept set and every
//! enum-like JSON string has already been narrowed to a Rust enum.

use std::fmt;

use chrono::NaiveDate;
use serde::{Serialize, Serializer};

pub use crate::cohort::phenotype::PathSeg;

/// Why one element of the expression cannot be evaluated exactly.
///
/// `path` is relative to the Circe object; `msg` never quotes a value from the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CirceError {
    pub path: Vec<PathSeg>,
    /// One of the [`kind`] constants.
    pub kind: &'static str,
    pub msg: String,
}

/// The error kinds.
pub mod kind {
    /// A Circe feature that exists but is outside the exactly-evaluable subset.
    pub const UNSUPPORTED: &str = "unsupported";
    /// A key Circe does not define at that place.
    pub const UNKNOWN_FIELD: &str = "unknown_field";
    pub const WRONG_TYPE: &str = "wrong_type";
    pub const MISSING: &str = "missing";
    /// A `CodesetId` that names no concept set.
    pub const DANGLING_REFERENCE: &str = "dangling_reference";
    pub const INVALID_VALUE: &str = "invalid_value";
}

impl CirceError {
    /// The path in the usual dotted form, e.g. `InclusionRules[2].expression.CriteriaList[0]`.
    pub fn path_string(&self) -> String {
        let mut out = String::new();
        for seg in &self.path {
            match seg {
                PathSeg::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                PathSeg::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }
}

impl fmt::Display for CirceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{} ({})", self.msg, self.kind)
        } else {
            write!(f, "{}: {} ({})", self.path_string(), self.msg, self.kind)
        }
    }
}

impl std::error::Error for CirceError {}

/// The clinical domains Circe criteria can name and we can evaluate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Domain {
    ConditionOccurrence,
    DrugExposure,
    ProcedureOccurrence,
    Measurement,
    Observation,
    VisitOccurrence,
    Death,
}

impl Domain {
    pub const ALL: [Domain; 7] = [
        Domain::ConditionOccurrence,
        Domain::DrugExposure,
        Domain::ProcedureOccurrence,
        Domain::Measurement,
        Domain::Observation,
        Domain::VisitOccurrence,
        Domain::Death,
    ];

    /// The Circe wrapper key, e.g. `ConditionOccurrence`.
    pub fn wrapper(self) -> &'static str {
        match self {
            Domain::ConditionOccurrence => "ConditionOccurrence",
            Domain::DrugExposure => "DrugExposure",
            Domain::ProcedureOccurrence => "ProcedureOccurrence",
            Domain::Measurement => "Measurement",
            Domain::Observation => "Observation",
            Domain::VisitOccurrence => "VisitOccurrence",
            Domain::Death => "Death",
        }
    }

    /// The event table's `domain_table` value.
    pub fn table(self) -> &'static str {
        match self {
            Domain::ConditionOccurrence => "condition_occurrence",
            Domain::DrugExposure => "drug_exposure",
            Domain::ProcedureOccurrence => "procedure_occurrence",
            Domain::Measurement => "measurement",
            Domain::Observation => "observation",
            Domain::VisitOccurrence => "visit_occurrence",
            Domain::Death => "death",
        }
    }

    pub fn from_wrapper(s: &str) -> Option<Domain> {
        Domain::ALL.into_iter().find(|d| d.wrapper() == s)
    }

    /// `None` for `note_nlp` and anything else Circe never matches.
    pub fn from_table(s: &str) -> Option<Domain> {
        // A literal match: this runs once per event row.
        match s {
            "condition_occurrence" => Some(Domain::ConditionOccurrence),
            "drug_exposure" => Some(Domain::DrugExposure),
            "procedure_occurrence" => Some(Domain::ProcedureOccurrence),
            "measurement" => Some(Domain::Measurement),
            "observation" => Some(Domain::Observation),
            "visit_occurrence" => Some(Domain::VisitOccurrence),
            "death" => Some(Domain::Death),
            _ => None,
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A concept set as ATLAS writes it (only what changes the expansion is kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ConceptSet {
    pub(super) id: i64,
    pub(super) items: Vec<ConceptSetItem>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ConceptSetItem {
    pub(super) concept_id: i64,
    pub(super) is_excluded: bool,
    pub(super) include_descendants: bool,
}

/// A domain criterion: events of `domain` whose concept is in the concept set at index
/// `codeset` of the cohort (`None`: Circe's "any event of the domain"), optionally only the
/// person's earliest one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct DomainCriterion {
    pub(super) domain: Domain,
    pub(super) codeset: Option<usize>,
    pub(super) first: bool,
}

/// Which events per person a limit keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Limit {
    First,
    Last,
    All,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PrimaryCriteria {
    pub(super) criteria: Vec<DomainCriterion>,
    pub(super) prior_days: i64,
    pub(super) post_days: i64,
    pub(super) limit: Limit,
}

/// How many of a group's children must pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GroupRule {
    All,
    Any,
    AtLeast(u64),
    AtMost(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CriteriaGroup {
    pub(super) rule: GroupRule,
    pub(super) criteria: Vec<Correlated>,
    pub(super) groups: Vec<CriteriaGroup>,
}

/// A correlated criterion: count the person's events of `criterion` inside `window` around
/// the index event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Correlated {
    pub(super) criterion: DomainCriterion,
    pub(super) window: Window,
    pub(super) occurrence: Occurrence,
    pub(super) ignore_observation_period: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Window {
    pub(super) start: Endpoint,
    pub(super) end: Endpoint,
    pub(super) use_index_end: bool,
    pub(super) use_event_end: bool,
}

/// One side of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
    /// `Days * Coeff` days from the index date.
    Days(i64),
    /// No `Days`. Circe then bounds by the index's observation period: its start when
    /// `Coeff` is -1, its end otherwise (and not at all with `IgnoreObservationPeriod`).
    Unbounded { toward_past: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Occurrence {
    Exactly(u64),
    AtMost(u64),
    AtLeast(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DateField {
    StartDate,
    EndDate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EndStrategy {
    /// Circe's default: the end of the index event's observation period.
    ObservationPeriodEnd,
    /// The index event's date plus `offset` days, capped at its observation period end.
    DateOffset { field: DateField, offset: i64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct CensorWindow {
    pub(super) start: Option<NaiveDate>,
    pub(super) end: Option<NaiveDate>,
}

/// A Circe expression inside the exactly-evaluable subset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CirceCohort {
    pub(super) concept_sets: Vec<ConceptSet>,
    pub(super) primary: PrimaryCriteria,
    /// `None` when Circe skips the qualified limit: it only applies it when
    /// `AdditionalCriteria` is present (circe-be `buildExpressionQuery`).
    pub(super) qualified_limit: Option<Limit>,
    pub(super) expression_limit: Limit,
    pub(super) inclusion_rules: Vec<CriteriaGroup>,
    pub(super) end_strategy: EndStrategy,
    pub(super) era_pad: i64,
    pub(super) censor_window: CensorWindow,
}

impl CirceCohort {
    /// The concept set ids, in expression order.
    pub fn concept_set_ids(&self) -> Vec<i64> {
        self.concept_sets.iter().map(|c| c.id).collect()
    }

    pub fn inclusion_rule_count(&self) -> usize {
        self.inclusion_rules.len()
    }

    /// Every concept any criterion can match (a superset: exclusions are ignored), or `None`
    /// when some criterion has no codeset and so matches every event of its domain. Lets the
    /// caller skip reading events no criterion can use.
    pub fn concept_filter(
        &self,
        descendants: &dyn Fn(&[i64]) -> std::collections::BTreeSet<i64>,
    ) -> Option<std::collections::HashSet<i64>> {
        fn all_coded(g: &CriteriaGroup) -> bool {
            g.criteria.iter().all(|c| c.criterion.codeset.is_some())
                && g.groups.iter().all(all_coded)
        }
        let coded = self.primary.criteria.iter().all(|c| c.codeset.is_some())
            && self.inclusion_rules.iter().all(all_coded);
        coded.then(|| {
            let mut all = std::collections::HashSet::new();
            for set in &self.concept_sets {
                // One closure per set over all its roots, not one per item.
                let (deep, flat): (Vec<&ConceptSetItem>, Vec<&ConceptSetItem>) =
                    set.items.iter().partition(|i| i.include_descendants);
                let roots: Vec<i64> = deep.iter().map(|i| i.concept_id).collect();
                if !roots.is_empty() {
                    all.extend(descendants(&roots));
                }
                all.extend(flat.iter().map(|i| i.concept_id));
            }
            all
        })
    }

    /// The index of the first concept set with an item that asks for descendants (which then
    /// needs a hierarchy).
    pub fn first_set_with_descendants(&self) -> Option<usize> {
        self.concept_sets
            .iter()
            .position(|c| c.items.iter().any(|i| i.include_descendants))
    }
}

/// Serializes a date as `YYYY-MM-DD` (chrono's `serde` feature is not enabled).
fn iso_date<S: Serializer>(d: &NaiveDate, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(d)
}

/// One cohort era of a person (both ends inclusive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CohortPeriod {
    pub person_id: i64,
    #[serde(serialize_with = "iso_date")]
    pub start_date: NaiveDate,
    #[serde(serialize_with = "iso_date")]
    pub end_date: NaiveDate,
}

/// An index event that survived the expression limit, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexEvidence {
    pub person_id: i64,
    pub domain_table: &'static str,
    pub event_id: i64,
    pub concept_id: i64,
    #[serde(serialize_with = "iso_date")]
    pub start_date: NaiveDate,
    pub note_id: Option<i64>,
    pub note_nlp_id: Option<i64>,
    pub source_note_hash: Option<String>,
    /// Span of the mention in its note (code points), for note-derived events.
    pub start: Option<i64>,
    pub end: Option<i64>,
}

/// How many qualified index events, and persons (by ATLAS's "best event" rule), pass one
/// inclusion rule on its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleStat {
    pub index: usize,
    pub person_count: usize,
    pub event_count: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConceptSetExpansion {
    pub id: i64,
    /// Sorted ascending.
    pub expanded_concept_ids: Vec<i64>,
}

/// The evaluated cohort.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CirceResolution {
    /// Sorted by person, then start.
    pub periods: Vec<CohortPeriod>,
    /// Sorted by person, then start, then event id.
    pub index_events: Vec<IndexEvidence>,
    pub inclusion_rules: Vec<RuleStat>,
    pub concept_sets: Vec<ConceptSetExpansion>,
    /// Distinct persons with at least one period.
    pub person_count: usize,
}
