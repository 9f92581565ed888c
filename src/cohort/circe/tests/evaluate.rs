//! Primary events, limits, end strategy, collapse, censor window, evidence.

use serde_json::json;

use super::fixture::*;
use crate::cohort::circe::IndexEvidence;

/// Person 1 observed through 2020.
fn observed(d: Data, person: i64) -> Data {
    d.op(person, "2020-01-01", "2020-12-31")
}

#[test]
fn concept_sets_expand_descendants_minus_exclusions() {
    let mut e = base();
    e["ConceptSets"] = json!([
        // {100,101,102,103} minus {102}: excluding a descendant.
        concept_set(0, vec![item(100, true, false), item(102, false, true)]),
        // {100,101,102,103} minus (101 and its descendant 102).
        concept_set(1, vec![item(100, true, false), item(101, true, true)]),
        // No descendants asked for: just 100.
        concept_set(2, vec![item(100, false, false)]),
        // A leaf with descendants is just itself; 500 is not in the hierarchy.
        concept_set(3, vec![item(102, true, false), item(500, true, false)]),
        // Only exclusions: nothing.
        concept_set(4, vec![item(100, true, true)]),
    ]);
    let data = observed(Data::new(), 1)
        .cond(1, 1, 101, "2020-02-01")
        .cond(1, 2, 102, "2020-03-01")
        .cond(1, 3, 103, "2020-04-01")
        .cond(1, 4, 999, "2020-05-01");
    let r = run(&e, &data);
    let sets: Vec<(i64, Vec<i64>)> = r
        .concept_sets
        .iter()
        .map(|c| (c.id, c.expanded_concept_ids.clone()))
        .collect();
    assert_eq!(
        sets,
        vec![
            (0, vec![100, 101, 103]),
            (1, vec![100, 103]),
            (2, vec![100]),
            (3, vec![102, 500]),
            (4, vec![]),
        ]
    );
    // Set 0 matches 101 and 103; 102 is excluded and 999 is in no set.
    assert_eq!(index_ids(&r), vec![(1, 1), (1, 3)]);
}

#[test]
fn observation_window_bounds_are_inclusive() {
    let mut e = base();
    e["PrimaryCriteria"]["ObservationWindow"] = json!({"PriorDays": 30, "PostDays": 10});
    let data = observed(Data::new(), 1)
        // 2020-01-01 + 30 days = 2020-01-31: exactly the prior boundary, kept.
        .cond(1, 1, COND, "2020-01-31")
        // One day short of 30 prior days: dropped.
        .cond(1, 2, COND, "2020-01-30")
        // 2020-12-21 + 10 = 2020-12-31 = op end: kept.
        .cond(1, 3, COND, "2020-12-21")
        // + 10 = 2021-01-01 > op end: dropped.
        .cond(1, 4, COND, "2020-12-22")
        // In no observation period: dropped.
        .cond(1, 5, COND, "2021-03-01")
        // Person 2 has no observation period at all.
        .cond(2, 6, COND, "2020-06-01")
        // Person 3: the event's own period (2020) counts, not an earlier one.
        .op(3, "2019-01-01", "2019-06-30")
        .op(3, "2020-01-01", "2020-12-31")
        // 2020-01-15 is inside the 2020 period, but 2020-01-01 + 30 > 2020-01-15.
        .cond(3, 7, COND, "2020-01-15")
        // 2019-01-01 + 30 <= 2019-03-01 and 2019-03-01 + 10 <= 2019-06-30.
        .cond(3, 8, COND, "2019-03-01");
    let r = run(&e, &data);
    assert_eq!(index_ids(&r), vec![(1, 1), (1, 3), (3, 8)]);
    // Default end = op end; person 1's two periods both end 2020-12-31 and merge.
    assert_eq!(
        periods(&r),
        vec![
            p(1, "2020-01-31", "2020-12-31"),
            p(3, "2019-03-01", "2019-06-30")
        ]
    );
    assert_eq!(r.person_count, 2);
}

/// Person 1: 03-01 (id 10), 05-01 (ids 11 and 12); person 2: 04-01, 06-01; person 3: one
/// event outside observation (2019-06-01) and one inside (2020-02-01).
fn limit_data() -> Data {
    let d = observed(observed(observed(Data::new(), 1), 2), 3);
    d.cond(1, 12, 103, "2020-05-01")
        .cond(1, 10, COND, "2020-03-01")
        .cond(1, 11, COND, "2020-05-01")
        .cond(2, 21, COND, "2020-06-01")
        .cond(2, 20, COND, "2020-04-01")
        .cond(3, 30, COND, "2019-06-01")
        .cond(3, 31, COND, "2020-02-01")
}

fn with_primary_limit(limit: &str) -> serde_json::Value {
    let mut e = base();
    e["PrimaryCriteria"]["PrimaryCriteriaLimit"] = json!({ "Type": limit });
    e
}

#[test]
fn primary_limit_first_last_all() {
    // First: earliest per person; person 3's 2019 event is outside observation, so the
    // limit (applied after the window check) picks 2020-02-01.
    let r = run(&with_primary_limit("First"), &limit_data());
    assert_eq!(index_ids(&r), vec![(1, 10), (2, 20), (3, 31)]);
    // Last: latest start; ids 11 and 12 tie on 05-01 and Circe orders ties by event id
    // ascending, so 11.
    let r = run(&with_primary_limit("Last"), &limit_data());
    assert_eq!(index_ids(&r), vec![(1, 11), (2, 21), (3, 31)]);
    let r = run(&with_primary_limit("All"), &limit_data());
    let all = vec![(1, 10), (1, 11), (1, 12), (2, 20), (2, 21), (3, 31)];
    assert_eq!(index_ids(&r), all);
    // A missing PrimaryCriteriaLimit is circe-be's default, First.
    let mut e = base();
    e["PrimaryCriteria"]
        .as_object_mut()
        .map(|m| m.remove("PrimaryCriteriaLimit"));
    assert_eq!(
        index_ids(&run(&e, &limit_data())),
        vec![(1, 10), (2, 20), (3, 31)]
    );
}

#[test]
fn first_in_criterion_picks_earliest_before_the_window_check() {
    let mut e = base();
    e["PrimaryCriteria"]["CriteriaList"] =
        json!([{"ConditionOccurrence": {"CodesetId": 0, "First": true}}]);
    let data = limit_data()
        .op(4, "2020-01-01", "2020-12-31")
        .cond(4, 41, COND, "2020-03-01")
        .cond(4, 40, COND, "2020-03-01");
    let r = run(&e, &data);
    // Person 1: 10 is earliest; person 2: 20; person 3: the earliest (30, 2019) is outside
    // observation and nothing replaces it; person 4: same-day tie goes to event id 40.
    assert_eq!(index_ids(&r), vec![(1, 10), (2, 20), (4, 40)]);
}

#[test]
fn criteria_match_domain_and_concept_and_skip_note_nlp() {
    let mut e = base();
    e["PrimaryCriteria"]["CriteriaList"] =
        json!([crit("ConditionOccurrence", 0), crit("DrugExposure", 1)]);
    let data = observed(Data::new(), 1)
        // A drug row carrying a condition concept matches neither criterion.
        .event(1, "drug_exposure", 1, COND, "2020-03-01", None)
        // A condition row carrying the drug concept: neither.
        .cond(1, 2, DRUG, "2020-03-02")
        .drug(1, 3, DRUG, "2020-04-01")
        .cond(1, 4, 101, "2020-02-01")
        // A mention that became no clinical event is never matched.
        .event(1, "note_nlp", 5, COND, "2020-01-15", None)
        .event(1, "measurement", 6, COND, "2020-01-16", None)
        // A row without a start date cannot be placed and is skipped.
        .undated(1, "condition_occurrence", 7, COND);
    let r = run(&e, &data);
    // Ordered by start: condition 4 (02-01), then drug 3 (04-01).
    assert_eq!(index_ids(&r), vec![(1, 4), (1, 3)]);
    let tables: Vec<&str> = r.index_events.iter().map(|x| x.domain_table).collect();
    assert_eq!(tables, vec!["condition_occurrence", "drug_exposure"]);
}

#[test]
fn criterion_without_codeset_matches_every_event_of_its_domain() {
    let mut e = base();
    e["PrimaryCriteria"]["CriteriaList"] = json!([{"ProcedureOccurrence": {}}]);
    let data = observed(Data::new(), 1)
        .event(1, "procedure_occurrence", 1, 777, "2020-02-01", None)
        .event(1, "procedure_occurrence", 2, PROC, "2020-03-01", None)
        .cond(1, 3, COND, "2020-01-10");
    // Both procedures (any concept), not the condition.
    assert_eq!(index_ids(&run(&e, &data)), vec![(1, 1), (1, 2)]);
}

#[test]
fn qualified_limit_applies_only_with_additional_criteria() {
    let data = observed(Data::new(), 1)
        .cond(1, 10, COND, "2020-03-01")
        .cond(1, 11, COND, "2020-05-01");
    let mut e = base();
    e["QualifiedLimit"] = json!({"Type": "Last"});
    // circe-be only adds the qualified-limit filter when AdditionalCriteria is present, so
    // with none both primary events stay.
    assert_eq!(index_ids(&run(&e, &data)), vec![(1, 10), (1, 11)]);
    // An empty AdditionalCriteria group is present: Last keeps 05-01.
    e["AdditionalCriteria"] = group("ALL", None, vec![], vec![]);
    assert_eq!(index_ids(&run(&e, &data)), vec![(1, 11)]);
    e["QualifiedLimit"] = json!({"Type": "First"});
    assert_eq!(index_ids(&run(&e, &data)), vec![(1, 10)]);
    // Absent QualifiedLimit defaults to First.
    e.as_object_mut().map(|m| m.remove("QualifiedLimit"));
    assert_eq!(index_ids(&run(&e, &data)), vec![(1, 10)]);
}

#[test]
fn expression_limit_applies_after_inclusion_rules() {
    // Rule: no drug of set 1 from 30 days before to the index day.
    let no_recent_drug = corr(crit("DrugExposure", 1), window(Some(-30), Some(0)), (0, 0));
    let data = observed(Data::new(), 1)
        // 03-01's window is [01-31, 03-01] and holds the 02-15 drug: fails the rule.
        .cond(1, 10, COND, "2020-03-01")
        // [04-01, 05-01] and [06-01, 07-01] hold no drug: pass.
        .cond(1, 11, COND, "2020-05-01")
        .cond(1, 12, COND, "2020-07-01")
        .drug(1, 90, DRUG, "2020-02-15");
    let mut e = base();
    e["InclusionRules"] = json!([rule(group("ALL", None, vec![no_recent_drug], vec![]))]);
    for (limit, expected) in [
        ("First", vec![(1, 11)]),
        ("Last", vec![(1, 12)]),
        ("All", vec![(1, 11), (1, 12)]),
    ] {
        e["ExpressionLimit"] = json!({ "Type": limit });
        let r = run(&e, &data);
        assert_eq!(index_ids(&r), expected, "{limit}");
        // Two of the three qualified events pass; one person.
        assert_eq!(rule_counts(&r), vec![(2, 1)]);
    }
}

/// Person 1: index 03-01 ending 03-10; person 2: index 03-01, null end (so 03-02);
/// person 3: index 12-28, null end (12-29). All observed through 2020-12-31.
fn end_data() -> Data {
    let d = observed(observed(observed(Data::new(), 1), 2), 3);
    d.event(
        1,
        "condition_occurrence",
        1,
        COND,
        "2020-03-01",
        Some("2020-03-10"),
    )
    .cond(2, 2, COND, "2020-03-01")
    .cond(3, 3, COND, "2020-12-28")
}

fn with_end(strategy: serde_json::Value) -> serde_json::Value {
    let mut e = base();
    e["EndStrategy"] = strategy;
    e
}

#[test]
fn default_end_is_observation_period_end() {
    let r = run(&base(), &end_data());
    let expected = vec![
        p(1, "2020-03-01", "2020-12-31"),
        p(2, "2020-03-01", "2020-12-31"),
        p(3, "2020-12-28", "2020-12-31"),
    ];
    assert_eq!(periods(&r), expected);
    // A null EndStrategy is the same default.
    assert_eq!(periods(&run(&with_end(json!(null)), &end_data())), expected);
}

#[test]
fn date_offset_from_start_date_capped_at_op_end() {
    let e = with_end(json!({"DateOffset": {"DateField": "StartDate", "Offset": 7}}));
    // 03-01 + 7 = 03-08 for persons 1 and 2; 12-28 + 7 = 2021-01-04, capped to 12-31.
    assert_eq!(
        periods(&run(&e, &end_data())),
        vec![
            p(1, "2020-03-01", "2020-03-08"),
            p(2, "2020-03-01", "2020-03-08"),
            p(3, "2020-12-28", "2020-12-31"),
        ]
    );
}

#[test]
fn date_offset_from_end_date_uses_start_plus_one_when_null() {
    let e = with_end(json!({"DateOffset": {"DateField": "EndDate", "Offset": 7}}));
    // 03-10 + 7 = 03-17; null end → 03-02, + 7 = 03-09; 12-29 + 7 capped to 12-31.
    assert_eq!(
        periods(&run(&e, &end_data())),
        vec![
            p(1, "2020-03-01", "2020-03-17"),
            p(2, "2020-03-01", "2020-03-09"),
            p(3, "2020-12-28", "2020-12-31"),
        ]
    );
}

#[test]
fn end_before_start_drops_the_period_but_not_the_index_event() {
    let e = with_end(json!({"DateOffset": {"DateField": "StartDate", "Offset": -1}}));
    let r = run(&e, &end_data());
    // Every end is the day before its start: Circe's `end_date >= start_date` join drops it.
    assert_eq!(periods(&r), vec![]);
    assert_eq!(r.person_count, 0);
    assert_eq!(index_ids(&r), vec![(1, 1), (2, 2), (3, 3)]);
}

/// Index events end 5 days after they start (DateOffset), era pad `pad`.
fn era_expr(pad: i64) -> serde_json::Value {
    let mut e = with_end(json!({"DateOffset": {"DateField": "StartDate", "Offset": 5}}));
    e["CollapseSettings"] = json!({"CollapseType": "ERA", "EraPad": pad});
    e
}

fn era_data() -> Data {
    let d = observed(observed(observed(Data::new(), 1), 2), 3);
    // Person 1: 03-01..03-06 and 03-11..03-16 — a 5-day gap after the first end.
    d.cond(1, 1, COND, "2020-03-01")
        .cond(1, 2, COND, "2020-03-11")
        // Person 2: 03-01..03-06 and 03-03..03-08 overlap.
        .cond(2, 3, COND, "2020-03-01")
        .cond(2, 4, COND, "2020-03-03")
        // Person 3: 03-01..03-06 and 03-07..03-12 — adjacent days.
        .cond(3, 5, COND, "2020-03-01")
        .cond(3, 6, COND, "2020-03-07")
}

#[test]
fn era_pad_merges_at_exactly_pad_days() {
    // Pad 5: 03-11 <= 03-06 + 5 → person 1 merges; everything else merges too.
    assert_eq!(
        periods(&run(&era_expr(5), &era_data())),
        vec![
            p(1, "2020-03-01", "2020-03-16"),
            p(2, "2020-03-01", "2020-03-08"),
            p(3, "2020-03-01", "2020-03-12"),
        ]
    );
    // Pad 4: 03-11 > 03-06 + 4 → person 1 stays split; person 3's 03-07 <= 03-10 merges.
    assert_eq!(
        periods(&run(&era_expr(4), &era_data())),
        vec![
            p(1, "2020-03-01", "2020-03-06"),
            p(1, "2020-03-11", "2020-03-16"),
            p(2, "2020-03-01", "2020-03-08"),
            p(3, "2020-03-01", "2020-03-12"),
        ]
    );
    // Pad 0: overlaps merge (person 2), adjacent days do not (person 3: 03-07 > 03-06).
    assert_eq!(
        periods(&run(&era_expr(0), &era_data())),
        vec![
            p(1, "2020-03-01", "2020-03-06"),
            p(1, "2020-03-11", "2020-03-16"),
            p(2, "2020-03-01", "2020-03-08"),
            p(3, "2020-03-01", "2020-03-06"),
            p(3, "2020-03-07", "2020-03-12"),
        ]
    );
}

#[test]
fn era_merge_compares_with_the_running_end() {
    let e = with_end(json!({"DateOffset": {"DateField": "EndDate", "Offset": 0}}));
    let data = observed(Data::new(), 1)
        .event(
            1,
            "condition_occurrence",
            1,
            COND,
            "2020-03-01",
            Some("2020-03-20"),
        )
        .event(
            1,
            "condition_occurrence",
            2,
            COND,
            "2020-03-05",
            Some("2020-03-08"),
        )
        .event(
            1,
            "condition_occurrence",
            3,
            COND,
            "2020-03-15",
            Some("2020-03-18"),
        );
    // 03-15 is after the previous row's end (03-08) but inside the era's end (03-20).
    assert_eq!(
        periods(&run(&e, &data)),
        vec![p(1, "2020-03-01", "2020-03-20")]
    );
}

fn censor_data() -> Data {
    let mut d = Data::new();
    for person in 1..=5 {
        d = observed(d, person);
    }
    // Periods (start + 5): 03-01..03-06, 01-10..01-15, 03-10..03-15, 02-28..03-04,
    // 02-29..03-05.
    d.cond(1, 1, COND, "2020-03-01")
        .cond(2, 2, COND, "2020-01-10")
        .cond(3, 3, COND, "2020-03-10")
        .cond(4, 4, COND, "2020-02-28")
        .cond(5, 5, COND, "2020-02-29")
}

#[test]
fn censor_window_clips_and_drops() {
    let mut e = era_expr(0);
    e["CensorWindow"] = json!({"StartDate": "2020-03-05", "EndDate": "2020-03-12"});
    let r = run(&e, &censor_data());
    // 1: [03-05, 03-06]; 2: ends before the window, dropped; 3: [03-10, 03-12];
    // 4: ends 03-04 < 03-05, dropped; 5: ends exactly 03-05, one day kept.
    assert_eq!(
        periods(&r),
        vec![
            p(1, "2020-03-05", "2020-03-06"),
            p(3, "2020-03-10", "2020-03-12"),
            p(5, "2020-03-05", "2020-03-05"),
        ]
    );
    assert_eq!(r.person_count, 3);
    // Only a start date: ends are untouched.
    e["CensorWindow"] = json!({"StartDate": "2020-03-05"});
    assert_eq!(
        periods(&run(&e, &censor_data())),
        vec![
            p(1, "2020-03-05", "2020-03-06"),
            p(3, "2020-03-10", "2020-03-15"),
            p(5, "2020-03-05", "2020-03-05"),
        ]
    );
    // Only an end date (03-03): 3 starts after it and is dropped; 1, 4, 5 end at 03-03.
    e["CensorWindow"] = json!({"EndDate": "2020-03-03"});
    assert_eq!(
        periods(&run(&e, &censor_data())),
        vec![
            p(1, "2020-03-01", "2020-03-03"),
            p(2, "2020-01-10", "2020-01-15"),
            p(4, "2020-02-28", "2020-03-03"),
            p(5, "2020-02-29", "2020-03-03"),
        ]
    );
}

#[test]
fn evidence_carries_note_provenance_and_note_nlp_rows_are_ignored() {
    let mut e = base();
    e["PrimaryCriteria"]["PrimaryCriteriaLimit"] = json!({"Type": "First"});
    let data = observed(observed(Data::new(), 1), 2)
        // The note_nlp mention is earlier but never matched, so First picks the note-derived
        // condition occurrence.
        .noted(
            1,
            "note_nlp",
            8,
            COND,
            "2020-03-01",
            (55, 67, "h-1", 30, 40),
        )
        .noted(
            1,
            "condition_occurrence",
            7,
            101,
            "2020-04-01",
            (55, 66, "h-1", 10, 20),
        )
        .cond(2, 9, COND, "2020-05-01");
    let r = run(&e, &data);
    assert_eq!(
        r.index_events,
        vec![
            IndexEvidence {
                person_id: 1,
                domain_table: "condition_occurrence",
                event_id: 7,
                concept_id: 101,
                start_date: date("2020-04-01"),
                note_id: Some(55),
                note_nlp_id: Some(66),
                source_note_hash: Some("h-1".to_owned()),
                start: Some(10),
                end: Some(20),
            },
            IndexEvidence {
                person_id: 2,
                domain_table: "condition_occurrence",
                event_id: 9,
                concept_id: COND,
                start_date: date("2020-05-01"),
                note_id: None,
                note_nlp_id: None,
                source_note_hash: None,
                start: None,
                end: None,
            },
        ]
    );
    // Dates serialize as ISO strings.
    let v = serde_json::to_value(&r).expect("serialize");
    assert_eq!(v["periods"][0]["start_date"], json!("2020-04-01"));
    assert_eq!(v["index_events"][0]["start_date"], json!("2020-04-01"));
}

#[test]
fn malformed_tables_read_as_empty() {
    use arrow_array::{Int64Array, RecordBatch};
    use std::sync::Arc;
    let mut data = observed(Data::new(), 1)
        .cond(1, 1, COND, "2020-03-01")
        .build();
    // An event table that is not the contract's schema.
    let bad = RecordBatch::try_from_iter([(
        "person_id",
        Arc::new(Int64Array::from(vec![1])) as arrow_array::ArrayRef,
    )])
    .expect("batch");
    data.events = bad.clone();
    let cohort = crate::cohort::circe::parse(&base()).expect("parse");
    let r = crate::cohort::circe::resolve(&cohort, &descendants, &data);
    assert_eq!(r.periods, vec![]);
    data.observation_periods = bad;
    let r = crate::cohort::circe::resolve(&cohort, &descendants, &data);
    assert_eq!(r.person_count, 0);
}
