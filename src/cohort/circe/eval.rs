//! Evaluation of a parsed expression, person by person, following circe-be's generated SQL:
//! primary events → qualified events → inclusion rules → expression limit → end strategy →
//! era collapse → censor window.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};

use chrono::NaiveDate;

use super::super::events::CohortData;
use super::extract::{
    self, Candidates, Day, Event, EvidenceColumns, Membership, Needs, ObservationPeriods,
};
use super::model::{
    CirceCohort, CirceResolution, CohortPeriod, ConceptSet, ConceptSetExpansion, Correlated,
    CriteriaGroup, DateField, DomainCriterion, EndStrategy, Endpoint, GroupRule, IndexEvidence,
    Limit, Occurrence, RuleStat, Window,
};

/// Evaluates `c` over `data`. `descendants(roots)` must return the roots plus all their
/// descendants in the caller's concept hierarchy.
///
/// A table that does not follow the `events` contract is read as empty rather than failing.
pub fn resolve(
    c: &CirceCohort,
    descendants: &dyn Fn(&[i64]) -> BTreeSet<i64>,
    data: &CohortData,
) -> CirceResolution {
    let expanded: Vec<Vec<i64>> = c
        .concept_sets
        .iter()
        .map(|cs| expand(cs, descendants).into_iter().collect())
        .collect();
    let plan = Plan::new(c);
    let membership = Membership::new(&expanded);
    let candidates = extract::candidates(data, &membership, &plan.needs());
    let ops = ObservationPeriods::read(&data.observation_periods);
    let mut acc = Accumulator::new(c.inclusion_rules.len());
    let mut lists = vec![Vec::new(); plan.specs.len()];
    for person_events in candidates.events.chunk_by(|a, b| a.person == b.person) {
        plan.fill_lists(person_events, &membership, &mut lists);
        let person = Person {
            events: person_events,
            lists: &lists,
        };
        evaluate_person(c, &plan, &person, &ops, &mut acc);
    }
    acc.finish(c, &expanded, &candidates)
}

/// Included concepts (and descendants where flagged) minus the excluded ones, expanded alike.
fn expand(cs: &ConceptSet, descendants: &dyn Fn(&[i64]) -> BTreeSet<i64>) -> BTreeSet<i64> {
    let side = |excluded: bool| {
        let items = cs.items.iter().filter(|i| i.is_excluded == excluded);
        let mut set: BTreeSet<i64> = items
            .clone()
            .filter(|i| !i.include_descendants)
            .map(|i| i.concept_id)
            .collect();
        let roots: Vec<i64> = items
            .filter(|i| i.include_descendants)
            .map(|i| i.concept_id)
            .collect();
        if !roots.is_empty() {
            set.extend(descendants(&roots));
            // The contract says roots are included; do not rely on it.
            set.extend(roots);
        }
        set
    };
    let excluded = side(true);
    side(false).difference(&excluded).copied().collect()
}

/// The expression with each distinct domain criterion numbered, so per-person event lists
/// are built once per criterion rather than once per use.
struct Plan {
    specs: Vec<DomainCriterion>,
    /// Spec numbers per domain, for matching an event against only its domain's criteria.
    by_domain: [Vec<usize>; 7],
    primary: Vec<usize>,
    rules: Vec<PlanGroup>,
}

struct PlanGroup {
    rule: GroupRule,
    criteria: Vec<PlanCorrelated>,
    groups: Vec<PlanGroup>,
}

struct PlanCorrelated {
    spec: usize,
    window: Window,
    occurrence: Occurrence,
    check_op: bool,
}

impl Plan {
    fn new(c: &CirceCohort) -> Plan {
        let mut ids = HashMap::new();
        let mut specs = Vec::new();
        let mut intern = |d: DomainCriterion| {
            *ids.entry(d).or_insert_with(|| {
                specs.push(d);
                specs.len() - 1
            })
        };
        let mut primary: Vec<usize> = c.primary.criteria.iter().map(|d| intern(*d)).collect();
        primary.sort_unstable();
        primary.dedup();
        let rules = c
            .inclusion_rules
            .iter()
            .map(|g| PlanGroup::new(g, &mut intern))
            .collect();
        let mut by_domain: [Vec<usize>; 7] = Default::default();
        for (i, s) in specs.iter().enumerate() {
            by_domain[s.domain.index()].push(i);
        }
        Plan {
            specs,
            by_domain,
            primary,
            rules,
        }
    }

    fn needs(&self) -> Needs {
        let mut n = Needs::default();
        for s in &self.specs {
            n.domain[s.domain.index()] = true;
            n.any_concept[s.domain.index()] |= s.codeset.is_none();
        }
        n
    }

    /// Per criterion, the positions (in `events`) of the person's matching events, in
    /// (start, event id) order; a `First` criterion keeps only the earliest.
    fn fill_lists(&self, events: &[Event], m: &Membership, lists: &mut [Vec<u32>]) {
        lists.iter_mut().for_each(Vec::clear);
        for (pos, e) in (0u32..).zip(events) {
            for &s in &self.by_domain[e.domain.index()] {
                let (Some(spec), Some(list)) = (self.specs.get(s), lists.get_mut(s)) else {
                    continue;
                };
                let in_set = spec.codeset.is_none_or(|cs| m.contains(e.slot, cs));
                // A `First` criterion is full once it holds the earliest event.
                let room = !spec.first || list.is_empty();
                if in_set && room {
                    list.push(pos);
                }
            }
        }
    }
}

impl PlanGroup {
    fn new(g: &CriteriaGroup, intern: &mut impl FnMut(DomainCriterion) -> usize) -> PlanGroup {
        PlanGroup {
            rule: g.rule,
            criteria: g
                .criteria
                .iter()
                .map(|c| PlanCorrelated::new(c, intern))
                .collect(),
            groups: g.groups.iter().map(|s| PlanGroup::new(s, intern)).collect(),
        }
    }
}

impl PlanCorrelated {
    fn new(c: &Correlated, intern: &mut impl FnMut(DomainCriterion) -> usize) -> PlanCorrelated {
        PlanCorrelated {
            spec: intern(c.criterion),
            window: c.window,
            occurrence: c.occurrence,
            check_op: !c.ignore_observation_period,
        }
    }
}

/// One person's candidate events and their per-criterion lists.
struct Person<'a> {
    events: &'a [Event],
    lists: &'a [Vec<u32>],
}

impl Person<'_> {
    fn event(&self, pos: u32) -> Option<&Event> {
        self.events.get(pos as usize)
    }

    fn list(&self, spec: usize) -> &[u32] {
        self.lists.get(spec).map(Vec::as_slice).unwrap_or_default()
    }
}

/// An index event: a position in the person's events and its observation period.
#[derive(Debug, Clone, Copy)]
struct Index {
    pos: u32,
    start: Day,
    end: Day,
    op_start: Day,
    op_end: Day,
}

/// One person through the whole pipeline; results go into `acc`.
fn evaluate_person(
    c: &CirceCohort,
    plan: &Plan,
    person: &Person<'_>,
    ops: &ObservationPeriods,
    acc: &mut Accumulator,
) {
    let Some(first) = person.events.first() else {
        return;
    };
    let mut index = primary_events(c, plan, person, ops, first.person);
    apply_limit(&mut index, c.primary.limit);
    if let Some(limit) = c.qualified_limit {
        apply_limit(&mut index, limit);
    }
    let mut included = acc.inclusion(plan, person, &index);
    apply_limit(&mut included, c.expression_limit);
    acc.index_events(person, &included);
    let rows = included
        .iter()
        .filter_map(|ix| cohort_row(c.end_strategy, ix))
        .collect();
    acc.periods(first.person, collapse(rows, c.era_pad), c);
}

/// Events of any primary criterion inside an observation period with the prior/post days.
/// Observation periods should not overlap; if they do, the earliest containing one is used.
fn primary_events(
    c: &CirceCohort,
    plan: &Plan,
    person: &Person<'_>,
    ops: &ObservationPeriods,
    person_id: i64,
) -> Vec<Index> {
    let mut positions: Vec<u32> = plan
        .primary
        .iter()
        .flat_map(|&s| person.list(s).iter().copied())
        .collect();
    // Position order is (start, event id, domain); one event matched twice counts once.
    positions.sort_unstable();
    positions.dedup();
    let (prior, post) = (c.primary.prior_days, c.primary.post_days);
    positions
        .into_iter()
        .filter_map(|pos| {
            let e = person.event(pos)?;
            let (start, end) = (e.start(), e.end());
            let (op_start, op_end) = ops.of(person_id).find(|&(s, e)| s <= start && start <= e)?;
            let fits = op_start + prior <= start && start + post <= op_end;
            fits.then_some(Index {
                pos,
                start,
                end,
                op_start,
                op_end,
            })
        })
        .collect()
}

/// Keeps the person's first or last event (by start; ties by event id ascending, as Circe's
/// `ORDER BY start_date [DESC], event_id`), or all. `v` is in (start, event id) order.
fn apply_limit(v: &mut Vec<Index>, limit: Limit) {
    match limit {
        Limit::All => {}
        Limit::First => v.truncate(1),
        Limit::Last => {
            let last_start = v.iter().map(|ix| ix.start).max();
            if let Some(keep) = v.iter().copied().find(|ix| Some(ix.start) == last_start) {
                *v = vec![keep];
            }
        }
    }
}

fn group_passes(g: &PlanGroup, person: &Person<'_>, ix: &Index) -> bool {
    let children = g.criteria.len() + g.groups.len();
    if children == 0 {
        return true;
    }
    let passed = g
        .criteria
        .iter()
        .filter(|c| correlated_passes(c, person, ix))
        .count()
        + g.groups
            .iter()
            .filter(|s| group_passes(s, person, ix))
            .count();
    let passed = passed as u64;
    match g.rule {
        GroupRule::All => passed == children as u64,
        GroupRule::Any => passed > 0,
        GroupRule::AtLeast(n) => passed >= n,
        GroupRule::AtMost(n) => passed <= n,
    }
}

fn correlated_passes(c: &PlanCorrelated, person: &Person<'_>, ix: &Index) -> bool {
    let n = count_in_window(c, person, ix);
    match c.occurrence {
        Occurrence::Exactly(k) => n == k,
        Occurrence::AtMost(k) => n <= k,
        Occurrence::AtLeast(k) => n >= k,
    }
}

/// The window as bounds on the correlated event's date. A side without `Days` falls back to
/// the index's observation period (start for `Coeff` -1, end otherwise), as circe-be's
/// `getWindowedCriteriaQuery` does, or is open with `IgnoreObservationPeriod`.
fn window_bounds(w: &Window, ix: &Index, check_op: bool) -> (Option<Day>, Option<Day>) {
    let anchor = if w.use_index_end { ix.end } else { ix.start };
    let bound = |ep: Endpoint| match ep {
        Endpoint::Days(d) => Some(anchor + d),
        Endpoint::Unbounded { toward_past } => {
            check_op.then_some(if toward_past { ix.op_start } else { ix.op_end })
        }
    };
    (bound(w.start), bound(w.end))
}

/// Distinct correlated events in the window (and the index's observation period unless
/// ignored). Lists are sorted by start, so start-date bounds are two binary searches.
fn count_in_window(c: &PlanCorrelated, person: &Person<'_>, ix: &Index) -> u64 {
    let (lo, hi) = window_bounds(&c.window, ix, c.check_op);
    let (mut start_lo, mut start_hi) = (Day::MIN, Day::MAX);
    if c.check_op {
        (start_lo, start_hi) = (ix.op_start, ix.op_end);
    }
    if !c.window.use_event_end {
        start_lo = start_lo.max(lo.unwrap_or(Day::MIN));
        start_hi = start_hi.min(hi.unwrap_or(Day::MAX));
    }
    if start_lo > start_hi {
        return 0;
    }
    let list = person.list(c.spec);
    let start_of = |pos: &u32| person.event(*pos).map_or(Day::MAX, Event::start);
    let from = list.partition_point(|p| start_of(p) < start_lo);
    let to = list.partition_point(|p| start_of(p) <= start_hi);
    let in_start_range = list.get(from..to).unwrap_or_default();
    if !c.window.use_event_end {
        return in_start_range.len() as u64;
    }
    let end_fits = |e: &Event| lo.is_none_or(|l| e.end() >= l) && hi.is_none_or(|h| e.end() <= h);
    in_start_range
        .iter()
        .filter_map(|p| person.event(*p))
        .filter(|e| end_fits(e))
        .count() as u64
}

/// The index event's (start, end) per the end strategy; `None` when the end falls before the
/// start (Circe's `CE.end_date >= I.start_date` join drops the row).
fn cohort_row(strategy: EndStrategy, ix: &Index) -> Option<(Day, Day)> {
    let end = match strategy {
        EndStrategy::ObservationPeriodEnd => ix.op_end,
        EndStrategy::DateOffset { field, offset } => {
            let date = match field {
                DateField::StartDate => ix.start,
                DateField::EndDate => ix.end,
            };
            (date + offset).min(ix.op_end)
        }
    };
    (end >= ix.start).then_some((ix.start, end))
}

/// Merges periods whose start is at most `pad` days after the running end, as Circe's era
/// constructor does (pad the ends, merge overlaps, un-pad).
fn collapse(mut rows: Vec<(Day, Day)>, pad: i64) -> Vec<(Day, Day)> {
    rows.sort_unstable();
    let mut eras: Vec<(Day, Day)> = Vec::new();
    for (start, end) in rows {
        match eras.last_mut() {
            Some(last) if start <= last.1 + pad => last.1 = last.1.max(end),
            _ => eras.push((start, end)),
        }
    }
    eras
}

fn to_date(d: Day) -> Option<NaiveDate> {
    i32::try_from(d).ok().and_then(NaiveDate::from_epoch_days)
}

/// Results gathered across persons.
struct Accumulator {
    periods: Vec<CohortPeriod>,
    /// Surviving index events; their note provenance is read once, at the end.
    index_events: Vec<Event>,
    rule_events: Vec<usize>,
    rule_persons: Vec<usize>,
    passes: Vec<bool>,
    best: Vec<bool>,
}

impl Accumulator {
    fn new(rules: usize) -> Accumulator {
        Accumulator {
            periods: Vec::new(),
            index_events: Vec::new(),
            rule_events: vec![0; rules],
            rule_persons: vec![0; rules],
            passes: vec![false; rules],
            best: vec![false; rules],
        }
    }

    /// Evaluates every rule on every qualified event, counts passes as ATLAS does (events;
    /// persons by their "best" event: most rules passed, then lowest first passed rule, then
    /// earliest), and returns the events that pass all rules.
    fn inclusion(&mut self, plan: &Plan, person: &Person<'_>, qualified: &[Index]) -> Vec<Index> {
        let mut included = Vec::with_capacity(qualified.len());
        let mut best_key = None;
        for ix in qualified {
            for (pass, rule) in self.passes.iter_mut().zip(&plan.rules) {
                *pass = group_passes(rule, person, ix);
            }
            for (n, pass) in self.rule_events.iter_mut().zip(&self.passes) {
                *n += usize::from(*pass);
            }
            let passed = self.passes.iter().filter(|p| **p).count();
            let min_rule = self.passes.iter().position(|p| *p).unwrap_or(0);
            let key = (Reverse(passed), min_rule, ix.start);
            if best_key.is_none_or(|b| key < b) {
                best_key = Some(key);
                self.best.clone_from(&self.passes);
            }
            if passed == self.passes.len() {
                included.push(*ix);
            }
        }
        if best_key.is_some() {
            for (n, pass) in self.rule_persons.iter_mut().zip(&self.best) {
                *n += usize::from(*pass);
            }
        }
        included
    }

    fn index_events(&mut self, person: &Person<'_>, included: &[Index]) {
        let events = included.iter().filter_map(|ix| person.event(ix.pos));
        self.index_events.extend(events.copied());
    }

    /// Clips to the censor window (dropping periods left empty) and records them.
    fn periods(&mut self, person_id: i64, eras: Vec<(Day, Day)>, c: &CirceCohort) {
        let window_start = c.censor_window.start.map(|d| Day::from(d.to_epoch_days()));
        let window_end = c.censor_window.end.map(|d| Day::from(d.to_epoch_days()));
        for (start, end) in eras {
            let start = window_start.map_or(start, |w| start.max(w));
            let end = window_end.map_or(end, |w| end.min(w));
            if start > end {
                continue;
            }
            if let (Some(start_date), Some(end_date)) = (to_date(start), to_date(end)) {
                self.periods.push(CohortPeriod {
                    person_id,
                    start_date,
                    end_date,
                });
            }
        }
    }

    fn finish(self, c: &CirceCohort, expanded: &[Vec<i64>], cand: &Candidates) -> CirceResolution {
        let columns = EvidenceColumns::new(&cand.batch);
        let index_events = self
            .index_events
            .iter()
            .filter_map(|e| evidence(e, &columns))
            .collect();
        let mut persons: Vec<i64> = self.periods.iter().map(|p| p.person_id).collect();
        persons.dedup();
        let rule_stats = (0..self.rule_events.len())
            .map(|index| RuleStat {
                index,
                person_count: self.rule_persons.get(index).copied().unwrap_or(0),
                event_count: self.rule_events.get(index).copied().unwrap_or(0),
            })
            .collect();
        let concept_sets = c
            .concept_sets
            .iter()
            .zip(expanded)
            .map(|(cs, ids)| ConceptSetExpansion {
                id: cs.id,
                expanded_concept_ids: ids.clone(),
            })
            .collect();
        CirceResolution {
            periods: self.periods,
            index_events,
            inclusion_rules: rule_stats,
            concept_sets,
            person_count: persons.len(),
        }
    }
}

fn evidence(e: &Event, columns: &EvidenceColumns<'_>) -> Option<IndexEvidence> {
    let p = columns.provenance(e.row);
    Some(IndexEvidence {
        person_id: e.person,
        domain_table: e.domain.table(),
        event_id: e.event_id,
        concept_id: e.concept_id,
        start_date: to_date(e.start())?,
        note_id: p.note_id,
        note_nlp_id: p.note_nlp_id,
        source_note_hash: p.source_note_hash,
        start: p.span_start,
        end: p.span_end,
    })
}
