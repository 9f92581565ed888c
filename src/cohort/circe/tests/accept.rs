//! Expressions as ATLAS writes them are accepted and evaluated.

use serde_json::{Value, json};

use super::fixture::*;
use crate::cohort::circe::parse;

fn atlas_concept(id: i64, name: &str, domain: &str, vocabulary: &str) -> Value {
    json!({
        "CONCEPT_ID": id,
        "CONCEPT_NAME": name,
        "STANDARD_CONCEPT": "S",
        "STANDARD_CONCEPT_CAPTION": "Standard",
        "INVALID_REASON": "V",
        "INVALID_REASON_CAPTION": "Valid",
        "CONCEPT_CODE": "44054006",
        "DOMAIN_ID": domain,
        "VOCABULARY_ID": vocabulary,
        "CONCEPT_CLASS_ID": "Clinical Finding"
    })
}

/// New type 2 diabetes with 365 days prior observation, metformin within 30 days after and
/// no prior insulin; ends 180 days after the index, eras padded by 30 days.
fn atlas_expression() -> Value {
    json!({
        "cdmVersionRange": ">=5.0.0",
        "Title": "T2DM on metformin",
        "PrimaryCriteria": {
            "CriteriaList": [
                {"ConditionOccurrence": {"CodesetId": 0, "ConditionTypeExclude": false}}
            ],
            "ObservationWindow": {"PriorDays": 365, "PostDays": 0},
            "PrimaryCriteriaLimit": {"Type": "First"}
        },
        "AdditionalCriteria": null,
        "ConceptSets": [
            {"id": 0, "name": "Type 2 diabetes mellitus", "expression": {"items": [
                {"concept": atlas_concept(100, "Type 2 diabetes mellitus", "Condition", "SNOMED"),
                 "isExcluded": false, "includeDescendants": true, "includeMapped": false}
            ]}},
            {"id": 1, "name": "Metformin", "expression": {"items": [
                {"concept": atlas_concept(200, "metformin", "Drug", "RxNorm"),
                 "isExcluded": false, "includeDescendants": false, "includeMapped": false}
            ]}},
            {"id": 2, "name": "Insulin", "expression": {"items": [
                {"concept": atlas_concept(300, "insulin", "Drug", "RxNorm"),
                 "isExcluded": false, "includeDescendants": true, "includeMapped": false}
            ]}}
        ],
        "QualifiedLimit": {"Type": "First"},
        "ExpressionLimit": {"Type": "First"},
        "InclusionRules": [
            {"name": "Metformin within 30 days", "description": null, "expression": {
                "Type": "ALL",
                "CriteriaList": [{
                    "Criteria": {"DrugExposure": {"CodesetId": 1, "DrugTypeExclude": false}},
                    "StartWindow": {"Start": {"Days": 0, "Coeff": 1}, "End": {"Days": 30, "Coeff": 1},
                                    "UseIndexEnd": false, "UseEventEnd": false},
                    "RestrictVisit": false,
                    "IgnoreObservationPeriod": false,
                    "Occurrence": {"Type": 2, "Count": 1, "IsDistinct": false}
                }],
                "DemographicCriteriaList": [],
                "Groups": []
            }},
            {"name": "No prior insulin", "description": "any time before", "expression": {
                "Type": "ALL",
                "CriteriaList": [{
                    "Criteria": {"DrugExposure": {"CodesetId": 2}},
                    "StartWindow": {"Start": {"Coeff": -1}, "End": {"Days": 1, "Coeff": -1},
                                    "UseIndexEnd": false, "UseEventEnd": false},
                    "EndWindow": null,
                    "RestrictVisit": false,
                    "IgnoreObservationPeriod": false,
                    "Occurrence": {"Type": 0, "Count": 0, "IsDistinct": false,
                                   "CountColumn": "DOMAIN_CONCEPT"}
                }],
                "DemographicCriteriaList": [],
                "Groups": []
            }}
        ],
        "EndStrategy": {"DateOffset": {"DateField": "StartDate", "Offset": 180}},
        "CensoringCriteria": [],
        "CollapseSettings": {"CollapseType": "ERA", "EraPad": 30},
        "CensorWindow": {"StartDate": null, "EndDate": null}
    })
}

#[test]
fn full_atlas_expression_is_accepted_and_evaluated() {
    let mut data = Data::new();
    for person in 1..=3 {
        data = data.op(person, "2019-01-01", "2021-12-31");
    }
    let data = data
        // Person 1: index 2020-03-01 (2019-01-01 + 365 = 2020-01-01 <= it); metformin 9 days
        // later; no insulin. End 03-01 + 180 = 2020-08-28.
        .cond(1, 1, 101, "2020-03-01")
        .drug(1, 2, DRUG, "2020-03-10")
        // Person 2: metformin in time, but insulin on 02-01 is before the index (window
        // from the op start to 1 day before): fails rule 1.
        .cond(2, 3, COND, "2020-05-01")
        .drug(2, 4, DRUG, "2020-05-05")
        .drug(2, 5, INSULIN, "2020-02-01")
        // Person 3: the 2019-06-01 condition lacks 365 prior days, so First takes
        // 2020-06-01; metformin 06-15. End 06-01 + 180 = 2020-11-28.
        .cond(3, 6, COND, "2019-06-01")
        .cond(3, 7, COND, "2020-06-01")
        .drug(3, 8, DRUG, "2020-06-15");
    let r = run(&atlas_expression(), &data);
    assert_eq!(
        periods(&r),
        vec![
            p(1, "2020-03-01", "2020-08-28"),
            p(3, "2020-06-01", "2020-11-28")
        ]
    );
    assert_eq!(index_ids(&r), vec![(1, 1), (3, 7)]);
    assert_eq!(r.person_count, 2);
    // Rule 0 passes for all three qualified events; rule 1 for persons 1 and 3.
    assert_eq!(rule_counts(&r), vec![(3, 3), (2, 2)]);
}

#[test]
fn nulls_and_no_op_defaults_count_as_absent() {
    let mut e = base();
    e["AdditionalCriteria"] = json!(null);
    e["EndStrategy"] = json!(null);
    e["CensorWindow"] = json!(null);
    e["CollapseSettings"] = json!(null);
    e["QualifiedLimit"] = json!(null);
    e["CensoringCriteria"] = json!(null);
    e["Title"] = json!(null);
    e["PrimaryCriteria"]["CriteriaList"] = json!([
        {"ConditionOccurrence": {"CodesetId": 0, "First": null, "Age": null,
                                 "ConditionTypeExclude": false, "OccurrenceStartDate": null}},
        {"Death": {"CodesetId": 0, "DeathTypeExclude": false}},
        {"VisitOccurrence": {"CodesetId": 0, "VisitTypeExclude": false}}
    ]);
    e["InclusionRules"] = json!([{"name": null, "expression": {
        "Type": "any",
        "Count": null,
        "CriteriaList": [{
            "Criteria": {"Measurement": {"CodesetId": 3}},
            "StartWindow": {"Start": {"Days": 0, "Coeff": 1, "TimeUnit": "day", "TimeUnitValue": 0},
                            "End": {"Days": 1, "Coeff": 1}},
            "EndWindow": null,
            "RestrictVisit": null,
            "IgnoreObservationPeriod": null,
            "Occurrence": {"Type": 2, "Count": 1, "IsDistinct": null, "CountColumn": null}
        }],
        "DemographicCriteriaList": null,
        "Groups": null
    }}]);
    let cohort = parse(&e).unwrap_or_else(|errs| panic!("{errs:?}"));
    assert_eq!(cohort.inclusion_rule_count(), 1);
    assert_eq!(cohort.concept_set_ids(), vec![0, 1, 2, 3, 4]);
    // Death and visit criteria evaluate like the others.
    let data = Data::new()
        .op(1, "2020-01-01", "2020-12-31")
        .event(1, "death", 1, COND, "2020-05-01", None)
        .event(
            1,
            "visit_occurrence",
            2,
            101,
            "2020-04-01",
            Some("2020-04-03"),
        )
        .event(1, "measurement", 3, LAB, "2020-04-02", None);
    let r = run(&e, &data);
    // Only the visit (04-01) has a measurement in [0, 1] days; the death has none.
    assert_eq!(index_ids(&r), vec![(1, 2)]);
}

#[test]
fn date_offset_accepts_the_newer_unit_keys() {
    let mut e = base();
    e["EndStrategy"] =
        json!({"DateOffset": {"DateField": "EndDate", "OffsetUnitValue": 3, "OffsetUnit": "day"}});
    let data = Data::new()
        .op(1, "2020-01-01", "2020-12-31")
        .cond(1, 1, COND, "2020-03-01");
    // Null end → 03-02, + 3 days.
    assert_eq!(
        periods(&run(&e, &data)),
        vec![p(1, "2020-03-01", "2020-03-05")]
    );
}
