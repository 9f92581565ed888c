//! Correlated-criteria windows, observation-period checks and occurrence counts. Every person
//! has one index condition on 2020-03-01 (event id = person × 100) and is observed
//! 2020-01-01..2020-12-31 unless a test says otherwise.

use serde_json::{Value, json};

use super::fixture::*;

fn indexed(persons: std::ops::RangeInclusive<i64>) -> Data {
    let mut d = Data::new();
    for person in persons {
        d = d
            .op(person, "2020-01-01", "2020-12-31")
            .cond(person, person * 100, COND, "2020-03-01");
    }
    d
}

/// Persons whose index event passes the single rule `criterion`.
fn passing(criterion: Value, data: &Data) -> Vec<i64> {
    let mut e = base();
    e["InclusionRules"] = json!([rule(group("ALL", None, vec![criterion], vec![]))]);
    run(&e, data)
        .index_events
        .iter()
        .map(|x| x.person_id)
        .collect()
}

fn drug_in(w: Value) -> Value {
    corr(crit("DrugExposure", 1), w, (2, 1))
}

fn flag(mut w: Value, key: &str) -> Value {
    w[key] = json!(true);
    w
}

fn ignoring_op(mut c: Value) -> Value {
    c["IgnoreObservationPeriod"] = json!(true);
    c
}

#[test]
fn window_before_index_is_inclusive() {
    // 30 days before to the index day: [2020-01-31, 2020-03-01] (February 2020 has 29 days).
    let data = indexed(1..=4)
        .drug(1, 101, DRUG, "2020-01-31") // exactly 30 days before: in
        .drug(2, 201, DRUG, "2020-01-30") // 31 days before: out
        .drug(3, 301, DRUG, "2020-03-01") // index day: in
        .drug(4, 401, DRUG, "2020-03-02"); // after: out
    assert_eq!(passing(has("DrugExposure", 1, -30, 0), &data), vec![1, 3]);
}

#[test]
fn window_after_index() {
    // 1 to 7 days after: [03-02, 03-08].
    let data = indexed(1..=4)
        .drug(1, 101, DRUG, "2020-03-01")
        .drug(2, 201, DRUG, "2020-03-02")
        .drug(3, 301, DRUG, "2020-03-08")
        .drug(4, 401, DRUG, "2020-03-09");
    assert_eq!(passing(has("DrugExposure", 1, 1, 7), &data), vec![2, 3]);
}

#[test]
fn use_index_end_anchors_on_the_index_end_date() {
    let mut data = Data::new();
    for person in 1..=4 {
        data = data.op(person, "2020-01-01", "2020-12-31");
    }
    let data = data
        // Persons 1, 2: index 03-01 ending 03-10, so [0, 5] days from the end = [03-10, 03-15].
        .event(
            1,
            "condition_occurrence",
            100,
            COND,
            "2020-03-01",
            Some("2020-03-10"),
        )
        .drug(1, 101, DRUG, "2020-03-12") // in
        .event(
            2,
            "condition_occurrence",
            200,
            COND,
            "2020-03-01",
            Some("2020-03-10"),
        )
        .drug(2, 201, DRUG, "2020-03-04") // before 03-10: out (though in [03-01, 03-06])
        // Persons 3, 4: null index end → 03-02, so [03-02, 03-07].
        .cond(3, 300, COND, "2020-03-01")
        .drug(3, 301, DRUG, "2020-03-07") // in
        .cond(4, 400, COND, "2020-03-01")
        .drug(4, 401, DRUG, "2020-03-08"); // out
    let w = flag(window(Some(0), Some(5)), "UseIndexEnd");
    assert_eq!(passing(drug_in(w), &data), vec![1, 3]);
    // Anchored on the start instead, [03-01, 03-06]: only person 2's 03-04 drug.
    assert_eq!(passing(drug_in(window(Some(0), Some(5))), &data), vec![2]);
}

#[test]
fn use_event_end_tests_the_correlated_end_date() {
    let data = indexed(1..=5)
        // [0, 10] days on the drug's end = end in [03-01, 03-11].
        .event(
            1,
            "drug_exposure",
            101,
            DRUG,
            "2020-02-20",
            Some("2020-03-05"),
        ) // in
        .drug(2, 201, DRUG, "2020-02-29") // null end → 03-01: in
        .event(
            3,
            "drug_exposure",
            301,
            DRUG,
            "2020-03-05",
            Some("2020-03-20"),
        ) // out
        .event(
            4,
            "drug_exposure",
            401,
            DRUG,
            "2020-02-10",
            Some("2020-02-28"),
        ) // out
        // End in the window, but the start (2019) is outside the index's observation period.
        .event(
            5,
            "drug_exposure",
            501,
            DRUG,
            "2019-12-20",
            Some("2020-03-05"),
        );
    let w = flag(window(Some(0), Some(10)), "UseEventEnd");
    assert_eq!(passing(drug_in(w), &data), vec![1, 2]);
    // On start dates instead only person 3's drug (starts 03-05) is in [03-01, 03-11].
    assert_eq!(passing(drug_in(window(Some(0), Some(10))), &data), vec![3]);
}

#[test]
fn unbounded_before_stops_at_observation_start_unless_ignored() {
    // "All days before" to the index day.
    let data = indexed(1..=3)
        .drug(1, 101, DRUG, "2020-01-01") // op start: in
        .drug(2, 201, DRUG, "2019-12-31") // before observation: out
        .drug(3, 301, DRUG, "2020-03-02"); // after index: out
    let c = drug_in(window(None, Some(0)));
    assert_eq!(passing(c.clone(), &data), vec![1]);
    // Without the observation-period check the unbounded side is open.
    assert_eq!(passing(ignoring_op(c), &data), vec![1, 2]);
}

#[test]
fn unbounded_after_stops_at_observation_end_even_for_event_ends() {
    let data = indexed(1..=3)
        .drug(1, 101, DRUG, "2020-12-31") // op end: in
        .drug(2, 201, DRUG, "2021-01-05") // after observation: out
        // Starts inside, ends after observation.
        .event(
            3,
            "drug_exposure",
            301,
            DRUG,
            "2020-12-20",
            Some("2021-01-10"),
        );
    let c = drug_in(window(Some(0), None));
    assert_eq!(passing(c.clone(), &data), vec![1, 3]);
    assert_eq!(passing(ignoring_op(c), &data), vec![1, 2, 3]);
    // circe-be bounds a Days-less side by the op end even when testing event ends, so
    // person 3's drug (ending 2021-01-10) fails with UseEventEnd. Person 1's null end is
    // 2021-01-01, also past the op end.
    let ends = drug_in(flag(window(Some(0), None), "UseEventEnd"));
    assert_eq!(passing(ends, &data), Vec::<i64>::new());
}

#[test]
fn ignore_observation_period_with_a_bounded_window() {
    let data = indexed(1..=2)
        // 365 days before 2020-03-01 is 2019-03-02, so 2019-12-15 is in the window but
        // before observation.
        .drug(1, 101, DRUG, "2019-12-15")
        // Person 2 also has a 2019 period; the drug is in it, not in the index's period.
        .op(2, "2019-01-01", "2019-06-30")
        .drug(2, 201, DRUG, "2019-03-15");
    let c = has("DrugExposure", 1, -365, 0);
    assert_eq!(passing(c.clone(), &data), Vec::<i64>::new());
    assert_eq!(passing(ignoring_op(c), &data), vec![1, 2]);
}

#[test]
fn occurrence_exactly_at_most_at_least() {
    // Drugs in [-30, 0] = [01-31, 03-01]: person 1 none, 2 one, 3 two, 4 three (plus one on
    // 01-01, outside the window).
    let data = indexed(1..=4)
        .drug(2, 201, DRUG, "2020-02-10")
        .drug(3, 301, DRUG, "2020-02-10")
        .drug(3, 302, DRUG, "2020-02-20")
        .drug(4, 401, DRUG, "2020-02-05")
        .drug(4, 402, DRUG, "2020-02-10")
        .drug(4, 403, DRUG, "2020-02-10")
        .drug(4, 404, DRUG, "2020-01-01");
    let occ = |ty, n| corr(crit("DrugExposure", 1), window(Some(-30), Some(0)), (ty, n));
    // Exactly 0 = "no such event".
    assert_eq!(passing(occ(0, 0), &data), vec![1]);
    assert_eq!(passing(occ(0, 2), &data), vec![3]);
    assert_eq!(passing(occ(1, 1), &data), vec![1, 2]);
    assert_eq!(passing(occ(2, 2), &data), vec![3, 4]);
    // Two same-day drugs are two distinct events.
    assert_eq!(passing(occ(0, 3), &data), vec![4]);
}

#[test]
fn the_index_event_counts_as_its_own_correlated_event() {
    let mut data = indexed(1..=1).cond(1, 101, COND, "2020-02-15");
    data = data.op(9, "2020-01-01", "2020-12-31");
    // At least two set-0 conditions in [-30, 0]: for the 03-01 index, itself and 02-15;
    // for the 02-15 index, only itself ([01-16, 02-15]).
    let c = corr(
        crit("ConditionOccurrence", 0),
        window(Some(-30), Some(0)),
        (2, 2),
    );
    let mut e = base();
    e["InclusionRules"] = json!([rule(group("ALL", None, vec![c], vec![]))]);
    assert_eq!(index_ids(&run(&e, &data)), vec![(1, 100)]);
}

#[test]
fn first_in_a_correlated_criterion_counts_only_the_earliest() {
    // The person's first drug ever is 2020-01-05, outside [-30, 0]; a later drug is inside.
    let data = indexed(1..=1)
        .drug(1, 101, DRUG, "2020-01-05")
        .drug(1, 102, DRUG, "2020-02-20");
    let first = json!({"DrugExposure": {"CodesetId": 1, "First": true}});
    let c = corr(first, window(Some(-30), Some(0)), (2, 1));
    assert_eq!(passing(c, &data), Vec::<i64>::new());
    assert_eq!(passing(has("DrugExposure", 1, -30, 0), &data), vec![1]);
}
