//! Domain criteria, criteria groups and correlated criteria.

use serde_json::Value;

use super::{Obj, Parser, key, present};
use crate::cohort::circe::model::{
    Correlated, CriteriaGroup, Domain, DomainCriterion, Endpoint, GroupRule, Occurrence, PathSeg,
    Window, kind,
};

/// Circe criteria domains we do not evaluate (their events are not in the event table).
const OTHER_DOMAINS: &[&str] = &[
    "ConditionEra",
    "DeviceExposure",
    "DoseEra",
    "DrugEra",
    "Episode",
    "LocationRegion",
    "ObservationPeriod",
    "PayerPlanPeriod",
    "Specimen",
    "VisitDetail",
];

/// Attributes circe-be defines on the domain criteria we evaluate; all but `CodesetId` and
/// `First` filter events on data we do not have, so they are unsupported rather than unknown.
const CRITERION_ATTRS: &[&str] = &[
    "CorrelatedCriteria",
    "DateAdjustment",
    "OccurrenceStartDate",
    "OccurrenceEndDate",
    "Age",
    "Gender",
    "ProviderSpecialty",
    "VisitType",
    "VisitTypeExclude",
    "ConditionType",
    "ConditionTypeExclude",
    "ConditionStatus",
    "StopReason",
    "ConditionSourceConcept",
    "DrugType",
    "DrugTypeExclude",
    "Refills",
    "Quantity",
    "DaysSupply",
    "RouteConcept",
    "EffectiveDrugDose",
    "DoseUnit",
    "LotNumber",
    "DrugSourceConcept",
    "ProcedureType",
    "ProcedureTypeExclude",
    "Modifier",
    "ProcedureSourceConcept",
    "MeasurementType",
    "MeasurementTypeExclude",
    "Operator",
    "ValueAsNumber",
    "ValueAsConcept",
    "ValueAsString",
    "Unit",
    "RangeLow",
    "RangeHigh",
    "RangeLowRatio",
    "RangeHighRatio",
    "Abnormal",
    "MeasurementSourceConcept",
    "ObservationType",
    "ObservationTypeExclude",
    "Qualifier",
    "ObservationSourceConcept",
    "VisitSourceConcept",
    "VisitLength",
    "PlaceOfService",
    "PlaceOfServiceLocation",
    "DeathType",
    "DeathTypeExclude",
    "DeathSourceConcept",
];

/// Far beyond anything ATLAS produces; keeps parsing and evaluation recursion shallow.
const MAX_GROUP_DEPTH: usize = 32;

impl Parser {
    /// One-key wrapper `{<Domain>: {CodesetId, First}}`.
    pub(super) fn criterion(&mut self, v: &Value, path: &[PathSeg]) -> Option<DomainCriterion> {
        let m = self.obj(v, path)?;
        let mut entries = m.iter();
        let (name, inner) = match (entries.next(), entries.next()) {
            (Some(e), None) => e,
            _ => {
                let msg = "expected exactly one domain key";
                self.err(path.to_vec(), kind::INVALID_VALUE, msg);
                return None;
            }
        };
        let path = key(path, name);
        let Some(domain) = Domain::from_wrapper(name) else {
            if OTHER_DOMAINS.contains(&name.as_str()) {
                let msg = "this criteria domain is not evaluated";
                self.err(path, kind::UNSUPPORTED, msg);
            } else {
                self.err(path, kind::UNKNOWN_FIELD, "not a Circe criteria domain");
            }
            return None;
        };
        let im = self.obj(inner, &path)?;
        self.criterion_attrs(im, &path, domain);
        let codeset = self.codeset_ref(im, &path);
        let first = self.bool_opt(im, &path, "First");
        Some(DomainCriterion {
            domain,
            codeset: codeset?,
            first: first.ok()?.unwrap_or(false),
        })
    }

    /// Reports every attribute other than `CodesetId`/`First` that would filter events.
    fn criterion_attrs(&mut self, m: &Obj, path: &[PathSeg], domain: Domain) {
        for (k, v) in m {
            let k = k.as_str();
            let known = CRITERION_ATTRS.contains(&k);
            // Null is absent; a false `…Exclude` flag only negates a list that is absent.
            let no_op = v.is_null() || (k.ends_with("Exclude") && *v == Value::Bool(false));
            let first_ok = k == "First" && domain != Domain::Death;
            if k == "CodesetId" || first_ok || (known && no_op) || (k == "First" && v.is_null()) {
                continue;
            }
            if known {
                let msg = "criterion attribute is not evaluated";
                self.err(key(path, k), kind::UNSUPPORTED, msg);
            } else {
                let msg = "not an attribute of this criteria domain";
                self.err(key(path, k), kind::UNKNOWN_FIELD, msg);
            }
        }
    }

    /// `Some(None)`: no `CodesetId` (Circe then matches every event of the domain).
    fn codeset_ref(&mut self, m: &Obj, path: &[PathSeg]) -> Option<Option<usize>> {
        let id = self.i32_opt(m, path, "CodesetId").ok()?;
        let Some(id) = id else {
            return Some(None);
        };
        match self.codesets.get(&id) {
            Some(pos) => Some(Some(*pos)),
            None => {
                let msg = "names no concept set";
                self.err(key(path, "CodesetId"), kind::DANGLING_REFERENCE, msg);
                None
            }
        }
    }

    pub(super) fn group(&mut self, v: &Value, path: &[PathSeg]) -> Option<CriteriaGroup> {
        if self.group_depth >= MAX_GROUP_DEPTH {
            let msg = "criteria groups are nested too deeply";
            self.err(path.to_vec(), kind::INVALID_VALUE, msg);
            return None;
        }
        self.group_depth += 1;
        let group = self.group_body(v, path);
        self.group_depth -= 1;
        group
    }

    fn group_body(&mut self, v: &Value, path: &[PathSeg]) -> Option<CriteriaGroup> {
        let m = self.obj(v, path)?;
        let known = [
            "Type",
            "Count",
            "CriteriaList",
            "DemographicCriteriaList",
            "Groups",
        ];
        self.only_keys(m, path, &known);
        let rule = self.group_rule(m, path);
        let list = self.arr_opt(m, path, "CriteriaList").ok()?;
        let list = list.map(Vec::as_slice).unwrap_or_default();
        let criteria = self.each(list, &key(path, "CriteriaList"), |p, v, path| {
            p.correlated(v, path)
        });
        let msg = "demographic criteria are not evaluated";
        self.reject_elements(m, path, "DemographicCriteriaList", msg);
        let groups = self.arr_opt(m, path, "Groups").ok()?;
        let groups = groups.map(Vec::as_slice).unwrap_or_default();
        let groups = self.each(groups, &key(path, "Groups"), |p, v, path| p.group(v, path));
        Some(CriteriaGroup {
            rule: rule?,
            criteria: criteria?,
            groups: groups?,
        })
    }

    fn group_rule(&mut self, m: &Obj, path: &[PathSeg]) -> Option<GroupRule> {
        let ty = self.str_opt(m, path, "Type");
        let ty = self.required(ty, path, "Type");
        let count = self.i32_opt(m, path, "Count").ok()?;
        let upper = ty?.to_ascii_uppercase();
        let at = |p: &mut Parser| -> Option<u64> {
            let n = p.required(Ok(count), path, "Count")?;
            let n = u64::try_from(n).ok();
            if n.is_none() {
                p.err(
                    key(path, "Count"),
                    kind::INVALID_VALUE,
                    "must not be negative",
                );
            }
            n
        };
        match upper.as_str() {
            "ALL" => Some(GroupRule::All),
            "ANY" => Some(GroupRule::Any),
            "AT_LEAST" => at(self).map(GroupRule::AtLeast),
            "AT_MOST" => at(self).map(GroupRule::AtMost),
            _ => {
                let msg = "expected ALL, ANY, AT_LEAST or AT_MOST";
                self.err(key(path, "Type"), kind::INVALID_VALUE, msg);
                None
            }
        }
    }

    fn correlated(&mut self, v: &Value, path: &[PathSeg]) -> Option<Correlated> {
        let m = self.obj(v, path)?;
        let known = [
            "Criteria",
            "StartWindow",
            "EndWindow",
            "Occurrence",
            "RestrictVisit",
            "IgnoreObservationPeriod",
        ];
        self.only_keys(m, path, &known);
        let criterion = self
            .req_value(m, path, "Criteria")
            .and_then(|c| self.criterion(c, &key(path, "Criteria")));
        let window = self
            .req_value(m, path, "StartWindow")
            .and_then(|w| self.window(w, &key(path, "StartWindow")));
        if present(m, "EndWindow").is_some() {
            let msg = "end windows are not evaluated";
            self.err(key(path, "EndWindow"), kind::UNSUPPORTED, msg);
        }
        let occurrence = self
            .req_value(m, path, "Occurrence")
            .and_then(|o| self.occurrence(o, &key(path, "Occurrence")));
        if let Ok(Some(true)) = self.bool_opt(m, path, "RestrictVisit") {
            let msg = "visit restriction is not evaluated";
            self.err(key(path, "RestrictVisit"), kind::UNSUPPORTED, msg);
        }
        let ignore_op = self.bool_opt(m, path, "IgnoreObservationPeriod");
        Some(Correlated {
            criterion: criterion?,
            window: window?,
            occurrence: occurrence?,
            ignore_observation_period: ignore_op.ok()?.unwrap_or(false),
        })
    }

    fn window(&mut self, v: &Value, path: &[PathSeg]) -> Option<Window> {
        let m = self.obj(v, path)?;
        self.only_keys(m, path, &["Start", "End", "UseIndexEnd", "UseEventEnd"]);
        let start = self
            .req_value(m, path, "Start")
            .and_then(|e| self.endpoint(e, &key(path, "Start")));
        let end = self
            .req_value(m, path, "End")
            .and_then(|e| self.endpoint(e, &key(path, "End")));
        let use_index_end = self.bool_opt(m, path, "UseIndexEnd");
        let use_event_end = self.bool_opt(m, path, "UseEventEnd");
        Some(Window {
            start: start?,
            end: end?,
            use_index_end: use_index_end.ok()?.unwrap_or(false),
            use_event_end: use_event_end.ok()?.unwrap_or(false),
        })
    }

    fn endpoint(&mut self, v: &Value, path: &[PathSeg]) -> Option<Endpoint> {
        let m = self.obj(v, path)?;
        self.only_keys(m, path, &["Days", "Coeff", "TimeUnit", "TimeUnitValue"]);
        let days = self.i32_opt(m, path, "Days");
        let coeff = self.i32_opt(m, path, "Coeff");
        let coeff = self.required(coeff, path, "Coeff");
        if coeff.is_some_and(|c| c != 1 && c != -1) {
            self.err(key(path, "Coeff"), kind::INVALID_VALUE, "expected -1 or 1");
        }
        if let Ok(Some(unit)) = self.str_opt(m, path, "TimeUnit")
            && !unit.eq_ignore_ascii_case("day")
        {
            let msg = "only day windows are evaluated";
            self.err(key(path, "TimeUnit"), kind::UNSUPPORTED, msg);
        }
        let days = days.ok()?;
        if let Ok(Some(tv)) = self.i32_opt(m, path, "TimeUnitValue")
            && Some(tv) != days
        {
            let msg = "a time unit value other than Days is not evaluated";
            self.err(key(path, "TimeUnitValue"), kind::UNSUPPORTED, msg);
        }
        let coeff = coeff.filter(|c| *c == 1 || *c == -1)?;
        Some(match days {
            Some(d) => Endpoint::Days(d * coeff),
            None => Endpoint::Unbounded {
                toward_past: coeff == -1,
            },
        })
    }

    fn occurrence(&mut self, v: &Value, path: &[PathSeg]) -> Option<Occurrence> {
        let m = self.obj(v, path)?;
        self.only_keys(m, path, &["Type", "Count", "IsDistinct", "CountColumn"]);
        let ty = self.i32_opt(m, path, "Type");
        let ty = self.required(ty, path, "Type");
        let count = self.i32_opt(m, path, "Count");
        let count = self.required(count, path, "Count");
        let count = count.and_then(|c| {
            let n = u64::try_from(c).ok();
            if n.is_none() {
                self.err(
                    key(path, "Count"),
                    kind::INVALID_VALUE,
                    "must not be negative",
                );
            }
            n
        });
        if let Ok(Some(true)) = self.bool_opt(m, path, "IsDistinct") {
            let msg = "distinct occurrence counts are not evaluated";
            self.err(key(path, "IsDistinct"), kind::UNSUPPORTED, msg);
        }
        if let Ok(Some(col)) = self.str_opt(m, path, "CountColumn")
            && col != "DOMAIN_CONCEPT"
        {
            let msg = "only DOMAIN_CONCEPT counts are evaluated";
            self.err(key(path, "CountColumn"), kind::UNSUPPORTED, msg);
        }
        let make = match ty? {
            0 => Occurrence::Exactly,
            1 => Occurrence::AtMost,
            2 => Occurrence::AtLeast,
            _ => {
                let msg = "expected 0 (exactly), 1 (at most) or 2 (at least)";
                self.err(key(path, "Type"), kind::INVALID_VALUE, msg);
                return None;
            }
        };
        Some(make(count?))
    }
}
