//! JSON → [`CirceCohort`]. Parsing never stops at the first problem: every element outside the
//! exactly-evaluable subset is reported with its path, so a caller can fix them all at once.
//! Messages are fixed strings and never echo input values.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use chrono::NaiveDate;
use serde_json::{Map, Value};

use super::model::{
    CensorWindow, CirceCohort, CirceError, ConceptSet, ConceptSetItem, CriteriaGroup, DateField,
    EndStrategy, Limit, PathSeg, PrimaryCriteria, kind,
};

mod criteria;

type Obj = Map<String, Value>;
type Path = Vec<PathSeg>;

const TOP_KEYS: &[&str] = &[
    "ConceptSets",
    "PrimaryCriteria",
    "AdditionalCriteria",
    "QualifiedLimit",
    "ExpressionLimit",
    "InclusionRules",
    "EndStrategy",
    "CensoringCriteria",
    "CollapseSettings",
    "CensorWindow",
    "cdmVersionRange",
    "Title",
];

/// Parses an ATLAS / Circe cohort expression (PascalCase JSON) into the evaluable subset.
///
/// Returns every error found when any part is outside the subset or malformed.
pub fn parse(v: &Value) -> Result<CirceCohort, Vec<CirceError>> {
    let mut p = Parser::default();
    let cohort = p.cohort(v);
    match cohort {
        Some(c) if p.errors.is_empty() => Ok(c),
        _ => {
            if p.errors.is_empty() {
                p.err(vec![], kind::INVALID_VALUE, "expression could not be read");
            }
            Err(p.errors)
        }
    }
}

fn key(path: &[PathSeg], k: &str) -> Path {
    let mut p = path.to_vec();
    p.push(PathSeg::Key(k.to_owned()));
    p
}

fn index(path: &[PathSeg], i: usize) -> Path {
    let mut p = path.to_vec();
    p.push(PathSeg::Index(i));
    p
}

/// The value at `k`, with JSON null counted as absent.
fn present<'v>(m: &'v Obj, k: &str) -> Option<&'v Value> {
    m.get(k).filter(|v| !v.is_null())
}

/// `Ok(None)`: absent; `Err(())`: present with the wrong type (already reported).
type Field<T> = Result<Option<T>, ()>;

#[derive(Default)]
struct Parser {
    errors: Vec<CirceError>,
    /// Concept set id → its position in `ConceptSets`.
    codesets: HashMap<i64, usize>,
    /// Current criteria-group nesting, bounded so recursion cannot exhaust the stack.
    group_depth: usize,
}

impl Parser {
    fn err(&mut self, path: Path, kind: &'static str, msg: &str) {
        self.errors.push(CirceError {
            path,
            kind,
            msg: msg.to_owned(),
        });
    }

    fn obj<'v>(&mut self, v: &'v Value, path: &[PathSeg]) -> Option<&'v Obj> {
        let o = v.as_object();
        if o.is_none() {
            self.err(path.to_vec(), kind::WRONG_TYPE, "expected an object");
        }
        o
    }

    /// Reports every key of `m` outside `known`.
    fn only_keys(&mut self, m: &Obj, path: &[PathSeg], known: &[&str]) {
        for k in m.keys() {
            if !known.contains(&k.as_str()) {
                self.err(
                    key(path, k),
                    kind::UNKNOWN_FIELD,
                    "not a key Circe defines here",
                );
            }
        }
    }

    fn typed<'v, T>(
        &mut self,
        m: &'v Obj,
        path: &[PathSeg],
        k: &str,
        want: &str,
        read: impl Fn(&'v Value) -> Option<T>,
    ) -> Field<T> {
        let Some(v) = present(m, k) else {
            return Ok(None);
        };
        match read(v) {
            Some(t) => Ok(Some(t)),
            None => {
                self.err(key(path, k), kind::WRONG_TYPE, want);
                Err(())
            }
        }
    }

    fn bool_opt(&mut self, m: &Obj, path: &[PathSeg], k: &str) -> Field<bool> {
        self.typed(m, path, k, "expected a boolean", Value::as_bool)
    }

    fn str_opt<'v>(&mut self, m: &'v Obj, path: &[PathSeg], k: &str) -> Field<&'v str> {
        self.typed(m, path, k, "expected a string", Value::as_str)
    }

    fn arr_opt<'v>(&mut self, m: &'v Obj, path: &[PathSeg], k: &str) -> Field<&'v Vec<Value>> {
        self.typed(m, path, k, "expected an array", Value::as_array)
    }

    fn i64_opt(&mut self, m: &Obj, path: &[PathSeg], k: &str) -> Field<i64> {
        self.typed(m, path, k, "expected an integer", Value::as_i64)
    }

    /// Circe declares these as Java `int`/`Integer`, so larger values are not Circe values.
    fn i32_opt(&mut self, m: &Obj, path: &[PathSeg], k: &str) -> Field<i64> {
        let v = self.i64_opt(m, path, k)?;
        match v {
            Some(n) if i32::try_from(n).is_err() => {
                self.err(key(path, k), kind::INVALID_VALUE, "integer out of range");
                Err(())
            }
            _ => Ok(v),
        }
    }

    /// Turns an absent required field into a `missing` error.
    fn required<T>(&mut self, f: Field<T>, path: &[PathSeg], k: &str) -> Option<T> {
        match f {
            Ok(Some(t)) => Some(t),
            Ok(None) => {
                self.err(key(path, k), kind::MISSING, "required");
                None
            }
            Err(()) => None,
        }
    }

    fn req_value<'v>(&mut self, m: &'v Obj, path: &[PathSeg], k: &str) -> Option<&'v Value> {
        self.required(Ok(present(m, k)), path, k)
    }

    /// Parses every element; `None` if any element failed.
    fn each<T>(
        &mut self,
        arr: &[Value],
        path: &[PathSeg],
        mut f: impl FnMut(&mut Parser, &Value, &[PathSeg]) -> Option<T>,
    ) -> Option<Vec<T>> {
        let mut out = Some(Vec::with_capacity(arr.len()));
        for (i, v) in arr.iter().enumerate() {
            match (f(self, v, &index(path, i)), out.as_mut()) {
                (Some(t), Some(o)) => o.push(t),
                (None, _) => out = None,
                _ => {}
            }
        }
        out
    }

    /// Every element of an optional list is unsupported (e.g. `CensoringCriteria`).
    fn reject_elements(&mut self, m: &Obj, path: &[PathSeg], k: &str, msg: &str) {
        if let Ok(Some(arr)) = self.arr_opt(m, path, k) {
            for i in 0..arr.len() {
                self.err(index(&key(path, k), i), kind::UNSUPPORTED, msg);
            }
        }
    }

    fn cohort(&mut self, v: &Value) -> Option<CirceCohort> {
        let root: &[PathSeg] = &[];
        let m = self.obj(v, root)?;
        self.only_keys(m, root, TOP_KEYS);
        let concept_sets = self.concept_sets(m);
        let primary = self.primary(m);
        let additional = self.additional_present(m);
        let qualified = self.limit(m, root, "QualifiedLimit");
        let expression_limit = self.limit(m, root, "ExpressionLimit");
        let inclusion_rules = self.inclusion_rules(m);
        let end_strategy = self.end_strategy(m);
        let era_pad = self.collapse(m);
        let censor_window = self.censor_window(m);
        self.reject_elements(
            m,
            root,
            "CensoringCriteria",
            "censoring criteria are not evaluated",
        );
        let qualified_limit = if additional? { Some(qualified?) } else { None };
        Some(CirceCohort {
            concept_sets: concept_sets?,
            primary: primary?,
            qualified_limit,
            expression_limit: expression_limit?,
            inclusion_rules: inclusion_rules?,
            end_strategy: end_strategy?,
            era_pad: era_pad?,
            censor_window: censor_window?,
        })
    }

    fn concept_sets(&mut self, m: &Obj) -> Option<Vec<ConceptSet>> {
        let path = key(&[], "ConceptSets");
        let arr = self.arr_opt(m, &[], "ConceptSets").ok()?;
        let arr = arr.map(Vec::as_slice).unwrap_or_default();
        self.each(arr, &path, |p, v, path| p.concept_set(v, path))
    }

    fn concept_set(&mut self, v: &Value, path: &[PathSeg]) -> Option<ConceptSet> {
        let m = self.obj(v, path)?;
        self.only_keys(m, path, &["id", "name", "expression"]);
        let id = self.i32_opt(m, path, "id");
        let id = self.required(id, path, "id");
        if let (Some(id), Some(PathSeg::Index(pos))) = (id, path.last()) {
            if let Entry::Vacant(slot) = self.codesets.entry(id) {
                slot.insert(*pos);
            } else {
                let msg = "duplicate concept set id";
                self.err(key(path, "id"), kind::INVALID_VALUE, msg);
            }
        }
        let expr = self.req_value(m, path, "expression");
        let items = expr.and_then(|e| self.concept_set_items(e, &key(path, "expression")));
        Some(ConceptSet {
            id: id?,
            items: items?,
        })
    }

    fn concept_set_items(&mut self, v: &Value, path: &[PathSeg]) -> Option<Vec<ConceptSetItem>> {
        let m = self.obj(v, path)?;
        self.only_keys(m, path, &["items"]);
        let arr = self.arr_opt(m, path, "items").ok()?;
        let arr = arr.map(Vec::as_slice).unwrap_or_default();
        self.each(arr, &key(path, "items"), |p, v, path| {
            p.concept_set_item(v, path)
        })
    }

    fn concept_set_item(&mut self, v: &Value, path: &[PathSeg]) -> Option<ConceptSetItem> {
        let m = self.obj(v, path)?;
        let known = [
            "concept",
            "isExcluded",
            "includeDescendants",
            "includeMapped",
        ];
        self.only_keys(m, path, &known);
        let concept = self.req_value(m, path, "concept");
        let concept_id = concept.and_then(|c| {
            let cp = key(path, "concept");
            // Other concept fields (name, vocabulary, …) are descriptive only.
            let cm = self.obj(c, &cp)?;
            let id = self.i64_opt(cm, &cp, "CONCEPT_ID");
            self.required(id, &cp, "CONCEPT_ID")
        });
        let is_excluded = self.bool_opt(m, path, "isExcluded");
        let include_descendants = self.bool_opt(m, path, "includeDescendants");
        if let Ok(Some(true)) = self.bool_opt(m, path, "includeMapped") {
            let msg = "mapped concepts need a concept_relationship table";
            self.err(key(path, "includeMapped"), kind::UNSUPPORTED, msg);
        }
        Some(ConceptSetItem {
            concept_id: concept_id?,
            is_excluded: is_excluded.ok()?.unwrap_or(false),
            include_descendants: include_descendants.ok()?.unwrap_or(false),
        })
    }

    fn primary(&mut self, m: &Obj) -> Option<PrimaryCriteria> {
        let root: &[PathSeg] = &[];
        let v = self.req_value(m, root, "PrimaryCriteria")?;
        let path = key(root, "PrimaryCriteria");
        let pm = self.obj(v, &path)?;
        let known = ["CriteriaList", "ObservationWindow", "PrimaryCriteriaLimit"];
        self.only_keys(pm, &path, &known);
        let list = self.arr_opt(pm, &path, "CriteriaList");
        let list = self.required(list, &path, "CriteriaList");
        let list_path = key(&path, "CriteriaList");
        if list.is_some_and(|l| l.is_empty()) {
            let msg = "needs at least one criterion";
            self.err(list_path.clone(), kind::INVALID_VALUE, msg);
        }
        let criteria =
            list.and_then(|l| self.each(l, &list_path, |p, v, path| p.criterion(v, path)));
        let window = self.observation_window(pm, &path);
        let limit = self.limit(pm, &path, "PrimaryCriteriaLimit");
        let (prior_days, post_days) = window?;
        Some(PrimaryCriteria {
            criteria: criteria?,
            prior_days,
            post_days,
            limit: limit?,
        })
    }

    fn observation_window(&mut self, m: &Obj, path: &[PathSeg]) -> Option<(i64, i64)> {
        let v = self.req_value(m, path, "ObservationWindow")?;
        let path = key(path, "ObservationWindow");
        let wm = self.obj(v, &path)?;
        self.only_keys(wm, &path, &["PriorDays", "PostDays"]);
        let prior = self.i32_opt(wm, &path, "PriorDays");
        let post = self.i32_opt(wm, &path, "PostDays");
        Some((prior.ok()?.unwrap_or(0), post.ok()?.unwrap_or(0)))
    }

    /// A `{Type}` limit; absent means `First` (circe-be `ResultLimit` default).
    fn limit(&mut self, m: &Obj, path: &[PathSeg], k: &str) -> Option<Limit> {
        let Some(v) = present(m, k) else {
            return Some(Limit::First);
        };
        let path = key(path, k);
        let lm = self.obj(v, &path)?;
        self.only_keys(lm, &path, &["Type"]);
        let ty = self.str_opt(lm, &path, "Type").ok()?;
        match ty.map(str::to_ascii_lowercase).as_deref() {
            None | Some("first") => Some(Limit::First),
            Some("last") => Some(Limit::Last),
            Some("all") => Some(Limit::All),
            Some(_) => {
                let msg = "expected First, Last or All";
                self.err(key(&path, "Type"), kind::INVALID_VALUE, msg);
                None
            }
        }
    }

    /// `Some(true)` for an empty group: Circe then applies the qualified limit.
    fn additional_present(&mut self, m: &Obj) -> Option<bool> {
        let Some(v) = present(m, "AdditionalCriteria") else {
            return Some(false);
        };
        let path = key(&[], "AdditionalCriteria");
        let gm = self.obj(v, &path)?;
        let lists = ["CriteriaList", "DemographicCriteriaList", "Groups"];
        let non_empty = lists
            .iter()
            .any(|k| matches!(present(gm, k), Some(Value::Array(a)) if !a.is_empty()));
        if non_empty {
            let msg = "additional criteria are not evaluated";
            self.err(path, kind::UNSUPPORTED, msg);
            return None;
        }
        self.group(v, &path)?;
        Some(true)
    }

    fn inclusion_rules(&mut self, m: &Obj) -> Option<Vec<CriteriaGroup>> {
        let arr = self.arr_opt(m, &[], "InclusionRules").ok()?;
        let arr = arr.map(Vec::as_slice).unwrap_or_default();
        self.each(arr, &key(&[], "InclusionRules"), |p, v, path| {
            let rm = p.obj(v, path)?;
            p.only_keys(rm, path, &["name", "description", "expression"]);
            let expr = p.req_value(rm, path, "expression")?;
            p.group(expr, &key(path, "expression"))
        })
    }

    fn end_strategy(&mut self, m: &Obj) -> Option<EndStrategy> {
        let Some(v) = present(m, "EndStrategy") else {
            return Some(EndStrategy::ObservationPeriodEnd);
        };
        let path = key(&[], "EndStrategy");
        let em = self.obj(v, &path)?;
        let mut entries = em.iter();
        let (name, inner) = match (entries.next(), entries.next()) {
            (Some(e), None) => e,
            _ => {
                let msg = "expected exactly one end strategy key";
                self.err(path, kind::INVALID_VALUE, msg);
                return None;
            }
        };
        let path = key(&path, name);
        match name.as_str() {
            "DateOffset" => self.date_offset(inner, &path),
            "CustomEra" => {
                let msg = "custom era end strategies are not evaluated";
                self.err(path, kind::UNSUPPORTED, msg);
                None
            }
            _ => {
                self.err(path, kind::UNKNOWN_FIELD, "not a Circe end strategy");
                None
            }
        }
    }

    fn date_offset(&mut self, v: &Value, path: &[PathSeg]) -> Option<EndStrategy> {
        let m = self.obj(v, path)?;
        let known = ["DateField", "Offset", "OffsetUnit", "OffsetUnitValue"];
        self.only_keys(m, path, &known);
        let field = match self.str_opt(m, path, "DateField").ok()? {
            None | Some("StartDate") => Some(DateField::StartDate),
            Some("EndDate") => Some(DateField::EndDate),
            Some(_) => {
                let msg = "expected StartDate or EndDate";
                self.err(key(path, "DateField"), kind::INVALID_VALUE, msg);
                None
            }
        };
        if let Ok(Some(unit)) = self.str_opt(m, path, "OffsetUnit")
            && !unit.eq_ignore_ascii_case("day")
        {
            let msg = "only day offsets are evaluated";
            self.err(key(path, "OffsetUnit"), kind::UNSUPPORTED, msg);
        }
        let offset = self.i32_opt(m, path, "Offset").ok()?;
        let unit_value = self.i32_opt(m, path, "OffsetUnitValue").ok()?;
        if let (Some(a), Some(b)) = (offset, unit_value)
            && a != b
        {
            let msg = "disagrees with Offset";
            self.err(key(path, "OffsetUnitValue"), kind::INVALID_VALUE, msg);
        }
        Some(EndStrategy::DateOffset {
            field: field?,
            offset: offset.or(unit_value).unwrap_or(0),
        })
    }

    /// The era pad; collapsing itself always happens in Circe.
    fn collapse(&mut self, m: &Obj) -> Option<i64> {
        let Some(v) = present(m, "CollapseSettings") else {
            return Some(0);
        };
        let path = key(&[], "CollapseSettings");
        let cm = self.obj(v, &path)?;
        self.only_keys(cm, &path, &["CollapseType", "EraPad"]);
        if let Ok(Some(t)) = self.str_opt(cm, &path, "CollapseType")
            && t != "ERA"
        {
            self.err(
                key(&path, "CollapseType"),
                kind::INVALID_VALUE,
                "expected ERA",
            );
        }
        let pad = self.i32_opt(cm, &path, "EraPad").ok()?.unwrap_or(0);
        if pad < 0 {
            self.err(
                key(&path, "EraPad"),
                kind::INVALID_VALUE,
                "must not be negative",
            );
            return None;
        }
        Some(pad)
    }

    fn censor_window(&mut self, m: &Obj) -> Option<CensorWindow> {
        let Some(v) = present(m, "CensorWindow") else {
            return Some(CensorWindow::default());
        };
        let path = key(&[], "CensorWindow");
        let cm = self.obj(v, &path)?;
        self.only_keys(cm, &path, &["StartDate", "EndDate"]);
        let start = self.iso_date(cm, &path, "StartDate");
        let end = self.iso_date(cm, &path, "EndDate");
        Some(CensorWindow {
            start: start?,
            end: end?,
        })
    }

    fn iso_date(&mut self, m: &Obj, path: &[PathSeg], k: &str) -> Option<Option<NaiveDate>> {
        let Some(s) = self.str_opt(m, path, k).ok()? else {
            return Some(None);
        };
        match NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            Ok(d) => Some(Some(d)),
            Err(_) => {
                self.err(
                    key(path, k),
                    kind::INVALID_VALUE,
                    "expected a YYYY-MM-DD date",
                );
                None
            }
        }
    }
}
