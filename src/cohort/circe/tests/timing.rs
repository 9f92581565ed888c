//! Release-mode timing on synthetic data:
//! `cargo test --release -- --ignored --nocapture one_million_events`.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, BooleanArray, Date32Array, Int64Array, RecordBatch, StringArray};
use serde_json::json;

use super::fixture::*;
use crate::cohort::circe::{parse, resolve};
use crate::cohort::events::{CohortData, event_schema, observation_period_schema};

const PERSONS: i64 = 100_000;
const EVENTS_PER_PERSON: i64 = 10;
/// 2015-01-01 and 2022-12-31 as days since the epoch.
const OP_START: i32 = 16_436;
const OP_END: i32 = 19_357;

/// A small deterministic generator (64-bit LCG), to keep the data reproducible.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

fn synthetic() -> CohortData {
    let n = (PERSONS * EVENTS_PER_PERSON) as usize;
    let mut rng = Lcg(42);
    let (mut person, mut concept, mut domain, mut start, mut end) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let kinds = [
        ("condition_occurrence", [100, 101, 103, 900]),
        ("drug_exposure", [200, 300, 200, 901]),
        ("measurement", [400, 400, 902, 903]),
        ("procedure_occurrence", [500, 904, 905, 906]),
        ("note_nlp", [100, 200, 300, 400]),
    ];
    for p in 0..PERSONS {
        for k in 0..EVENTS_PER_PERSON {
            let (table, concepts) = kinds[(rng.next(5) as usize + k as usize) % kinds.len()];
            let s = OP_START + rng.next((OP_END - OP_START) as u64) as i32;
            person.push(p);
            concept.push(concepts[rng.next(4) as usize]);
            domain.push(table);
            start.push(Some(s));
            end.push((rng.next(2) == 0).then_some(s + rng.next(60) as i32));
        }
    }
    let ids: Vec<i64> = (0..n as i64).collect();
    let none = || -> ArrayRef { Arc::new(Int64Array::from(vec![None::<i64>; n])) };
    let strs = |v: &str| -> ArrayRef { Arc::new(StringArray::from(vec![v; n])) };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(person)),
        Arc::new(Int64Array::from(concept)),
        Arc::new(StringArray::from(vec![Some("SNOMED"); n])),
        Arc::new(StringArray::from(domain)),
        Arc::new(Int64Array::from(ids)),
        Arc::new(Date32Array::from(start)),
        Arc::new(Date32Array::from(end)),
        none(),
        none(),
        Arc::new(StringArray::from(vec![None::<&str>; n])),
        none(),
        none(),
        Arc::new(BooleanArray::from(vec![false; n])),
        strs("recent"),
        strs("certain"),
        strs("patient"),
    ];
    let events = RecordBatch::try_new(event_schema(), columns).expect("events");
    let persons: Vec<i64> = (0..PERSONS).collect();
    let op_columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(persons.clone())),
        Arc::new(Date32Array::from(vec![OP_START; PERSONS as usize])),
        Arc::new(Date32Array::from(vec![OP_END; PERSONS as usize])),
    ];
    CohortData {
        events,
        persons: Int64Array::from(persons),
        observation_periods: RecordBatch::try_new(observation_period_schema(), op_columns)
            .expect("ops"),
    }
}

#[test]
#[ignore = "timing; run in release with --ignored --nocapture"]
fn one_million_events() {
    let data = synthetic();
    let mut e = base();
    e["PrimaryCriteria"]["ObservationWindow"] = json!({"PriorDays": 365, "PostDays": 0});
    let no_insulin_before = corr(crit("DrugExposure", 2), window(None, Some(-1)), (0, 0));
    e["InclusionRules"] = json!([
        rule(group(
            "ALL",
            None,
            vec![has("DrugExposure", 1, -30, 30)],
            vec![]
        )),
        rule(group(
            "ANY",
            None,
            vec![no_insulin_before],
            vec![group(
                "AT_LEAST",
                Some(1),
                vec![has("Measurement", 3, -90, 0)],
                vec![]
            )]
        )),
    ]);
    e["EndStrategy"] = json!({"DateOffset": {"DateField": "EndDate", "Offset": 30}});
    e["CollapseSettings"] = json!({"CollapseType": "ERA", "EraPad": 30});
    let cohort = parse(&e).expect("parse");
    let started = Instant::now();
    let r = resolve(&cohort, &descendants, &data);
    let elapsed = started.elapsed();
    eprintln!(
        "resolve: {} events, {} persons → {} periods, {} index events, {} persons in {:?}",
        data.events.num_rows(),
        PERSONS,
        r.periods.len(),
        r.index_events.len(),
        r.person_count,
        elapsed
    );
    assert!(r.person_count > 0);
    // Every condition an index event: the widest primary-event workload.
    let all = parse(&base()).expect("parse");
    let started = Instant::now();
    let r_all = resolve(&all, &descendants, &data);
    let elapsed_all = started.elapsed();
    eprintln!(
        "resolve (all conditions, no rules): {} index events, {} periods in {:?}",
        r_all.index_events.len(),
        r_all.periods.len(),
        elapsed_all
    );
    if !cfg!(debug_assertions) {
        assert!(elapsed.as_secs_f64() < 1.0, "{elapsed:?}");
        assert!(elapsed_all.as_secs_f64() < 1.0, "{elapsed_all:?}");
    }
}
