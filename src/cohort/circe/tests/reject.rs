//! Everything outside the subset is rejected with its exact path, all at once, without echoing
//! caller values.

use serde_json::{Value, json};

use super::fixture::*;
use crate::cohort::circe::{CirceError, PathSeg, kind, parse};

/// Sorted (path, kind) pairs of the errors.
fn errors(v: &Value) -> Vec<(String, &'static str)> {
    let errs = parse(v).err().unwrap_or_default();
    let mut out: Vec<(String, &'static str)> =
        errs.iter().map(|e| (e.path_string(), e.kind)).collect();
    out.sort();
    out
}

fn pairs(expected: &[(&str, &'static str)]) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> =
        expected.iter().map(|(p, k)| (p.to_string(), *k)).collect();
    out.sort();
    out
}

#[test]
fn every_unsupported_element_is_reported_with_its_path() {
    let mut e = base();
    e["Foo"] = json!(1);
    e["ConceptSets"][1]["expression"]["items"][0]["includeMapped"] = json!(true);
    e["PrimaryCriteria"]["CriteriaList"] = json!([
        {"ConditionOccurrence": {"CodesetId": 0, "OccurrenceStartDate": {"Value": "2020-01-01", "Op": "gt"}}},
        {"DrugExposure": {"CodesetId": 42}},
        {"DrugEra": {"CodesetId": 1}},
        {"Bogus": {}},
        {"ConditionOccurrence": {"CodesetId": 0}, "DrugExposure": {"CodesetId": 1}},
        {"Measurement": {"CodesetId": 3, "ValueAsNumber": {"Value": 7, "Op": "gt"}, "Colour": "red"}}
    ]);
    e["AdditionalCriteria"] = group("ALL", None, vec![has("DrugExposure", 1, -30, 0)], vec![]);
    let mut bad = has("ConditionOccurrence", 0, -30, 0);
    bad["Criteria"]["ConditionOccurrence"]["Age"] = json!({"Value": 18, "Op": "gt"});
    bad["EndWindow"] = window(Some(0), Some(1));
    bad["RestrictVisit"] = json!(true);
    bad["Occurrence"]["IsDistinct"] = json!(true);
    let mut nested = has("DrugExposure", 1, -30, 0);
    nested["Criteria"]["DrugExposure"]["CorrelatedCriteria"] = group("ALL", None, vec![], vec![]);
    e["InclusionRules"] = json!([
        rule(group(
            "ALL",
            None,
            vec![has("DrugExposure", 1, -30, 0)],
            vec![]
        )),
        rule(group("ANY", None, vec![], vec![])),
        rule(json!({
            "Type": "ALL",
            "CriteriaList": [bad],
            "DemographicCriteriaList": [{"Age": {"Value": 18, "Op": "gte"}}],
            "Groups": [
                {"Type": "AT_LEAST", "CriteriaList": [], "Groups": []},
                group("ALL", None, vec![nested], vec![])
            ]
        })),
    ]);
    e["EndStrategy"] = json!({"CustomEra": {"DrugCodesetId": 1, "GapDays": 0, "Offset": 0}});
    e["CensoringCriteria"] = json!([crit("Death", 0)]);
    e["CollapseSettings"]["EraPad"] = json!(-1);
    e["CensorWindow"] = json!({"StartDate": "01/02/2020"});
    e["QualifiedLimit"] = json!({"Type": "Middle"});
    e["ExpressionLimit"] = json!({"Type": 3});
    use kind::*;
    let rule2 = "InclusionRules[2].expression";
    let c0 = format!("{rule2}.CriteriaList[0]");
    assert_eq!(
        errors(&e),
        pairs(&[
            ("Foo", UNKNOWN_FIELD),
            (
                "ConceptSets[1].expression.items[0].includeMapped",
                UNSUPPORTED
            ),
            (
                "PrimaryCriteria.CriteriaList[0].ConditionOccurrence.OccurrenceStartDate",
                UNSUPPORTED
            ),
            (
                "PrimaryCriteria.CriteriaList[1].DrugExposure.CodesetId",
                DANGLING_REFERENCE
            ),
            ("PrimaryCriteria.CriteriaList[2].DrugEra", UNSUPPORTED),
            ("PrimaryCriteria.CriteriaList[3].Bogus", UNKNOWN_FIELD),
            ("PrimaryCriteria.CriteriaList[4]", INVALID_VALUE),
            (
                "PrimaryCriteria.CriteriaList[5].Measurement.ValueAsNumber",
                UNSUPPORTED
            ),
            (
                "PrimaryCriteria.CriteriaList[5].Measurement.Colour",
                UNKNOWN_FIELD
            ),
            ("AdditionalCriteria", UNSUPPORTED),
            (
                &format!("{c0}.Criteria.ConditionOccurrence.Age"),
                UNSUPPORTED
            ),
            (&format!("{c0}.EndWindow"), UNSUPPORTED),
            (&format!("{c0}.RestrictVisit"), UNSUPPORTED),
            (&format!("{c0}.Occurrence.IsDistinct"), UNSUPPORTED),
            (&format!("{rule2}.DemographicCriteriaList[0]"), UNSUPPORTED),
            (&format!("{rule2}.Groups[0].Count"), MISSING),
            (
                &format!(
                    "{rule2}.Groups[1].CriteriaList[0].Criteria.DrugExposure.CorrelatedCriteria"
                ),
                UNSUPPORTED
            ),
            ("EndStrategy.CustomEra", UNSUPPORTED),
            ("CensoringCriteria[0]", UNSUPPORTED),
            ("CollapseSettings.EraPad", INVALID_VALUE),
            ("CensorWindow.StartDate", INVALID_VALUE),
            ("QualifiedLimit.Type", INVALID_VALUE),
            ("ExpressionLimit.Type", WRONG_TYPE),
        ])
    );
}

#[test]
fn the_example_path_from_the_contract() {
    let mut e = base();
    let mut c = has("ConditionOccurrence", 0, -30, 0);
    c["Criteria"]["ConditionOccurrence"]["Age"] = json!({"Value": 18, "Op": "gt"});
    let ok = rule(group("ANY", None, vec![], vec![]));
    e["InclusionRules"] = json!([ok, ok, rule(group("ALL", None, vec![c], vec![]))]);
    let errs = parse(&e).err().unwrap_or_default();
    assert_eq!(errs.len(), 1);
    let err = &errs[0];
    assert_eq!(
        err.path_string(),
        "InclusionRules[2].expression.CriteriaList[0].Criteria.ConditionOccurrence.Age"
    );
    assert_eq!(err.kind, kind::UNSUPPORTED);
    assert_eq!(
        err.path,
        vec![
            PathSeg::Key("InclusionRules".into()),
            PathSeg::Index(2),
            PathSeg::Key("expression".into()),
            PathSeg::Key("CriteriaList".into()),
            PathSeg::Index(0),
            PathSeg::Key("Criteria".into()),
            PathSeg::Key("ConditionOccurrence".into()),
            PathSeg::Key("Age".into()),
        ]
    );
    // Paths serialize as plain keys and indexes.
    let v = serde_json::to_value(err).expect("serialize");
    assert_eq!(v["path"][1], json!(2));
    assert_eq!(v["path"][0], json!("InclusionRules"));
}

#[test]
fn malformed_windows_and_occurrences() {
    let mut e = base();
    let mut coeff = has("DrugExposure", 1, -30, 0);
    coeff["StartWindow"]["Start"]["Coeff"] = json!(2);
    let mut no_coeff = has("DrugExposure", 1, -30, 0);
    no_coeff["StartWindow"]["End"] = json!({"Days": 3});
    let mut hours = has("DrugExposure", 1, -30, 0);
    hours["StartWindow"]["End"]["TimeUnit"] = json!("hour");
    let mut occ = has("DrugExposure", 1, -30, 0);
    occ["Occurrence"] = json!({"Type": 3, "Count": -1, "CountColumn": "START_DATE"});
    let mut missing = has("DrugExposure", 1, -30, 0);
    missing.as_object_mut().map(|m| {
        m.remove("StartWindow");
        m.remove("Criteria");
        m.remove("Occurrence")
    });
    e["InclusionRules"] = json!([rule(group(
        "SOME",
        None,
        vec![coeff, no_coeff, hours, occ, missing],
        vec![]
    ))]);
    use kind::*;
    let l = "InclusionRules[0].expression.CriteriaList";
    assert_eq!(
        errors(&e),
        pairs(&[
            ("InclusionRules[0].expression.Type", INVALID_VALUE),
            (&format!("{l}[0].StartWindow.Start.Coeff"), INVALID_VALUE),
            (&format!("{l}[1].StartWindow.End.Coeff"), MISSING),
            (&format!("{l}[2].StartWindow.End.TimeUnit"), UNSUPPORTED),
            (&format!("{l}[3].Occurrence.Type"), INVALID_VALUE),
            (&format!("{l}[3].Occurrence.Count"), INVALID_VALUE),
            (&format!("{l}[3].Occurrence.CountColumn"), UNSUPPORTED),
            (&format!("{l}[4].Criteria"), MISSING),
            (&format!("{l}[4].StartWindow"), MISSING),
            (&format!("{l}[4].Occurrence"), MISSING),
        ])
    );
}

#[test]
fn wrong_types_missing_keys_and_duplicates() {
    use kind::*;
    // Not an object at all.
    assert_eq!(errors(&json!([1, 2])), pairs(&[("", WRONG_TYPE)]));
    // No PrimaryCriteria.
    let mut e = base();
    e.as_object_mut().map(|m| m.remove("PrimaryCriteria"));
    assert_eq!(errors(&e), pairs(&[("PrimaryCriteria", MISSING)]));
    // Empty criteria list, missing observation window.
    let mut e = base();
    e["PrimaryCriteria"] = json!({"CriteriaList": []});
    assert_eq!(
        errors(&e),
        pairs(&[
            ("PrimaryCriteria.CriteriaList", INVALID_VALUE),
            ("PrimaryCriteria.ObservationWindow", MISSING),
        ])
    );
    // Assorted wrong types, a duplicate id, First on Death (which has no First).
    let mut e = base();
    e["ConceptSets"][0]["expression"]["items"][0]["concept"]["CONCEPT_ID"] = json!("100");
    e["ConceptSets"][1]["id"] = json!(0);
    e["ConceptSets"][2]["expression"]["items"][0]["isExcluded"] = json!("no");
    e["PrimaryCriteria"]["CriteriaList"] = json!([
        {"ConditionOccurrence": {"CodesetId": 0, "First": "yes"}},
        {"Death": {"CodesetId": 0, "First": true}},
        {"DrugExposure": {"CodesetId": 1.5}},
        {"DrugExposure": []}
    ]);
    e["PrimaryCriteria"]["ObservationWindow"]["PriorDays"] = json!(3_000_000_000_i64);
    e["InclusionRules"] = json!({});
    e["EndStrategy"] = json!({"DateOffset": {"DateField": "Whenever", "Offset": "7"}});
    e["CollapseSettings"]["CollapseType"] = json!("BLOCK");
    e["CensorWindow"] = json!("2020-01-01");
    let pc = "PrimaryCriteria.CriteriaList";
    assert_eq!(
        errors(&e),
        pairs(&[
            (
                "ConceptSets[0].expression.items[0].concept.CONCEPT_ID",
                WRONG_TYPE
            ),
            ("ConceptSets[1].id", INVALID_VALUE),
            ("ConceptSets[2].expression.items[0].isExcluded", WRONG_TYPE),
            (&format!("{pc}[0].ConditionOccurrence.First"), WRONG_TYPE),
            (&format!("{pc}[1].Death.First"), UNKNOWN_FIELD),
            (&format!("{pc}[2].DrugExposure.CodesetId"), WRONG_TYPE),
            (&format!("{pc}[3].DrugExposure"), WRONG_TYPE),
            ("PrimaryCriteria.ObservationWindow.PriorDays", INVALID_VALUE),
            ("InclusionRules", WRONG_TYPE),
            ("EndStrategy.DateOffset.DateField", INVALID_VALUE),
            ("EndStrategy.DateOffset.Offset", WRONG_TYPE),
            ("CollapseSettings.CollapseType", INVALID_VALUE),
            ("CensorWindow", WRONG_TYPE),
        ])
    );
}

#[test]
fn unknown_keys_at_every_level() {
    let mut e = base();
    e["ConceptSets"][0]["colour"] = json!(1);
    e["ConceptSets"][0]["expression"]["items"][0]["weight"] = json!(1);
    e["PrimaryCriteria"]["Extra"] = json!(1);
    e["PrimaryCriteria"]["ObservationWindow"]["Extra"] = json!(1);
    e["PrimaryCriteria"]["PrimaryCriteriaLimit"]["Extra"] = json!(1);
    let mut c = has("DrugExposure", 1, -30, 0);
    c["Extra"] = json!(1);
    c["StartWindow"]["Extra"] = json!(1);
    c["StartWindow"]["Start"]["Extra"] = json!(1);
    c["Occurrence"]["Extra"] = json!(1);
    let mut g = group("ALL", None, vec![c], vec![]);
    g["Extra"] = json!(1);
    let mut r = rule(g);
    r["Extra"] = json!(1);
    e["InclusionRules"] = json!([r]);
    e["EndStrategy"] = json!({"Sometime": {}});
    e["CollapseSettings"]["Extra"] = json!(1);
    e["CensorWindow"]["Extra"] = json!(1);
    use kind::UNKNOWN_FIELD as U;
    let x = "InclusionRules[0].expression";
    assert_eq!(
        errors(&e),
        pairs(&[
            ("ConceptSets[0].colour", U),
            ("ConceptSets[0].expression.items[0].weight", U),
            ("PrimaryCriteria.Extra", U),
            ("PrimaryCriteria.ObservationWindow.Extra", U),
            ("PrimaryCriteria.PrimaryCriteriaLimit.Extra", U),
            ("InclusionRules[0].Extra", U),
            (&format!("{x}.Extra"), U),
            (&format!("{x}.CriteriaList[0].Extra"), U),
            (&format!("{x}.CriteriaList[0].StartWindow.Extra"), U),
            (&format!("{x}.CriteriaList[0].StartWindow.Start.Extra"), U),
            (&format!("{x}.CriteriaList[0].Occurrence.Extra"), U),
            ("EndStrategy.Sometime", U),
            ("CollapseSettings.Extra", U),
            ("CensorWindow.Extra", U),
        ])
    );
}

#[test]
fn messages_never_quote_caller_values() {
    const S: &str = "ZQXJ";
    let mut e = base();
    e["Title"] = json!(S);
    e["cdmVersionRange"] = json!(S);
    e["ConceptSets"][0]["name"] = json!(S);
    e["ConceptSets"][0]["expression"]["items"][0]["concept"]["CONCEPT_NAME"] = json!(S);
    e["ConceptSets"][1]["expression"]["items"][0]["concept"]["CONCEPT_ID"] = json!(S);
    e["PrimaryCriteria"]["PrimaryCriteriaLimit"]["Type"] = json!(S);
    e["PrimaryCriteria"]["CriteriaList"] = json!([
        {"ConditionOccurrence": {"CodesetId": 987_654_321, "Age": S, "First": S}},
        {"ConditionOccurrence": {"CodesetId": S}}
    ]);
    let mut c = has("DrugExposure", 1, -30, 0);
    c["StartWindow"]["Start"]["TimeUnit"] = json!(S);
    c["StartWindow"]["End"]["Coeff"] = json!(1_234_567);
    c["Occurrence"]["CountColumn"] = json!(S);
    c["Occurrence"]["Type"] = json!(7_654_321);
    let mut r = rule(group(S, None, vec![c], vec![]));
    r["name"] = json!(S);
    r["description"] = json!(S);
    e["InclusionRules"] = json!([r]);
    e["EndStrategy"] = json!({"DateOffset": {"DateField": S, "OffsetUnit": S}});
    e["CollapseSettings"]["CollapseType"] = json!(S);
    e["CensorWindow"] = json!({"StartDate": S, "EndDate": S});
    let errs: Vec<CirceError> = parse(&e).err().unwrap_or_default();
    assert!(errs.len() >= 12, "{errs:?}");
    for err in &errs {
        for needle in [S, "987654321", "1234567", "7654321"] {
            assert!(!err.msg.contains(needle), "{err:?}");
            // The rendered form adds only the path, whose keys here are Circe's own.
            assert!(!err.to_string().contains(needle), "{err}");
        }
    }
}

#[test]
fn deeply_nested_groups_are_refused_not_overflowed() {
    let mut g = group("ALL", None, vec![], vec![]);
    for _ in 0..40 {
        g = group("ALL", None, vec![], vec![g]);
    }
    let mut e = base();
    e["InclusionRules"] = json!([rule(g)]);
    let errs = parse(&e).err().unwrap_or_default();
    // The 33rd nested group (32 levels of `Groups[0]` below the rule's expression).
    let path = format!("InclusionRules[0].expression{}", ".Groups[0]".repeat(32));
    assert_eq!(
        errs.iter()
            .map(|e| (e.path_string(), e.kind))
            .collect::<Vec<_>>(),
        vec![(path, kind::INVALID_VALUE)]
    );
}
