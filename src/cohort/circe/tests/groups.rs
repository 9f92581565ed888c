//! Group types, nesting, and ATLAS's per-rule counts.

use serde_json::json;

use super::fixture::*;

#[test]
fn group_types_and_nesting() {
    // One index event (03-01) with a set-1 drug on 02-20 and a set-3 measurement on 02-25,
    // and no set-2 drug. So over [-30, 0]: A passes, B fails, C passes.
    let data = Data::new()
        .op(1, "2020-01-01", "2020-12-31")
        .cond(1, 1, COND, "2020-03-01")
        .drug(1, 2, DRUG, "2020-02-20")
        .event(1, "measurement", 3, LAB, "2020-02-25", None);
    let a = || has("DrugExposure", 1, -30, 0);
    let b = || has("DrugExposure", 2, -30, 0);
    let c = || has("Measurement", 3, -30, 0);
    let rules = vec![
        group("ALL", None, vec![a(), b()], vec![]), // 0: B fails → 0
        group("ALL", None, vec![a(), c()], vec![]), // 1: both pass → 1
        group("ANY", None, vec![a(), b()], vec![]), // 2: A passes → 1
        group("ANY", None, vec![b()], vec![]),      // 3: nothing passes → 0
        group("AT_LEAST", Some(2), vec![a(), b(), c()], vec![]), // 4: 2 of 3 → 1
        group("AT_LEAST", Some(3), vec![a(), b(), c()], vec![]), // 5: 2 < 3 → 0
        group("AT_MOST", Some(1), vec![a(), b(), c()], vec![]), // 6: 2 > 1 → 0
        group("AT_MOST", Some(2), vec![a(), b(), c()], vec![]), // 7: 2 <= 2 → 1
        group("AT_MOST", Some(0), vec![b()], vec![]), // 8: 0 <= 0 → 1
        // 9: A and (B or C) → 1
        group(
            "ALL",
            None,
            vec![a()],
            vec![group("ANY", None, vec![b(), c()], vec![])],
        ),
        // 10: A and (B and C) → 0
        group(
            "ALL",
            None,
            vec![a()],
            vec![group("ALL", None, vec![b(), c()], vec![])],
        ),
        // 11: an empty group passes → 1
        group("ALL", None, vec![], vec![]),
        // 12: only sub-groups: (B) or (C) → 1
        group(
            "ANY",
            None,
            vec![],
            vec![
                group("ALL", None, vec![b()], vec![]),
                group("ALL", None, vec![c()], vec![]),
            ],
        ),
        // 13: at least one of {B, (at most 0 of C)}: B fails and C passes once → 0
        group(
            "AT_LEAST",
            Some(1),
            vec![b()],
            vec![group("AT_MOST", Some(0), vec![c()], vec![])],
        ),
    ];
    let mut e = base();
    e["InclusionRules"] = json!(rules.into_iter().map(rule).collect::<Vec<_>>());
    let r = run(&e, &data);
    let expected = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1, 0];
    // One event of one person: event and person counts are the same 0/1.
    let counts: Vec<(usize, usize)> = expected.iter().map(|&n| (n, n)).collect();
    assert_eq!(rule_counts(&r), counts);
    // Not every rule passes, so the cohort is empty.
    assert_eq!(r.periods, vec![]);
    assert_eq!(r.index_events, vec![]);
}

#[test]
fn rule_counts_use_atlas_best_event_per_person() {
    // r0: set-1 drug in [-5, 0]; r1: set-2 drug in [-5, 0]; r2: set-3 lab in [-5, 0].
    let mut e = base();
    e["InclusionRules"] = json!([
        rule(group(
            "ALL",
            None,
            vec![has("DrugExposure", 1, -5, 0)],
            vec![]
        )),
        rule(group(
            "ALL",
            None,
            vec![has("DrugExposure", 2, -5, 0)],
            vec![]
        )),
        rule(group(
            "ALL",
            None,
            vec![has("Measurement", 3, -5, 0)],
            vec![]
        )),
    ]);
    let mut data = Data::new();
    for person in 1..=3 {
        data = data.op(person, "2020-01-01", "2020-12-31");
    }
    let data = data
        // Person 1: event 1 (03-01) passes r0 and r1; event 4 (06-01) passes r2.
        .cond(1, 1, COND, "2020-03-01")
        .drug(1, 2, DRUG, "2020-02-28")
        .drug(1, 3, INSULIN, "2020-02-28")
        .cond(1, 4, COND, "2020-06-01")
        .event(1, "measurement", 5, LAB, "2020-05-30", None)
        // Person 2: event 6 passes r0.
        .cond(2, 6, COND, "2020-03-01")
        .drug(2, 7, DRUG, "2020-02-28")
        // Person 3: event 8 (03-01) passes r2 only, event 10 (04-01) r1 only; equal rule
        // counts, so the best event is the one whose first passed rule is lower: event 10.
        .cond(3, 8, COND, "2020-03-01")
        .event(3, "measurement", 9, LAB, "2020-02-28", None)
        .cond(3, 10, COND, "2020-04-01")
        .drug(3, 11, INSULIN, "2020-03-30");
    let r = run(&e, &data);
    // Events: r0 {1, 6}, r1 {1, 10}, r2 {4, 8}. Persons by best event (1 → event 1,
    // 2 → event 6, 3 → event 10): r0 {1, 2}, r1 {1, 3}, r2 none.
    assert_eq!(rule_counts(&r), vec![(2, 2), (2, 2), (2, 0)]);
    let indices: Vec<usize> = r.inclusion_rules.iter().map(|s| s.index).collect();
    assert_eq!(indices, vec![0, 1, 2]);
    // No event passes all three rules.
    assert_eq!(r.person_count, 0);
}
