//! Strict parsing and validation of a phenotype definition (schema `cohort.phenotype.v1`).
//!
//! The caller's JSON is walked by hand rather than through `serde` derive so that every problem
//! is reported at once, each with its exact path, and so that no message ever quotes a value the
//! caller sent (ids and vocabulary names may carry identifiers). After a successful parse every
//! reference is an index that is known to be valid, anchors are acyclic, and all enumerations are
//! Rust enums, so the evaluator never re-checks the definition.
//!
//! Shape (any other key is `unknown_field`):
//! - top: `schema_version?` (= `cohort.phenotype.v1`), `id`, `name` (non-blank),
//!   `description?`, `concept_sets` (≥ 1), `expression`.
//! - concept set: `id` (unique), `vocabulary` (non-blank), `concept_ids` (≥ 1 positive
//!   integers), `include_descendants?` (default false).
//! - node: `{operator: criterion, criterion}` | `{operator: and|or, children: [≥ 2]}` |
//!   `{operator: not, children: [1]}`, at most 32 levels deep.
//! - criterion: `id` (unique in the expression), `concept_set` (an existing set id),
//!   `occurrence? {minimum? = 1, maximum? >= minimum}`, `assertion? {negation? = [affirmed]
//!   (non-empty), temporality? = any, certainty? = any, experiencer? = any}`,
//!   `temporal? {start_date?, end_date? (YYYY-MM-DD, start <= end), anchor_criterion?,
//!   days_before?, days_after? (0..=1,000,000)}`; an anchor needs at least one of the days (the
//!   other is 0), days need an anchor, and anchors may not point at themselves or form cycles.
//!
//! Ids: `^[A-Za-z][A-Za-z0-9_-]{0,63}$`. Error kinds: `missing`, `unknown_field`, `wrong_type`,
//! `invalid_value`, `too_few_items`, `too_few_children`, `too_many_children`, `too_deep`,
//! `duplicate_id`, `dangling_reference`, `self_reference`, `cyclic_anchor`, `anchor_required`,
//! `days_required`. A reference is only reported as dangling when every id it could name was
//! readable; otherwise the broken definition is already reported and the extra error is noise.

use std::collections::HashMap;

use crate::digest::sha256_hex;
use chrono::NaiveDate;
use serde::Serialize;
use serde_json::{Map, Value};

/// The only schema version this parser accepts.
pub const SCHEMA_VERSION: &str = "cohort.phenotype.v1";
/// Deepest allowed expression node (the root is depth 1).
pub const MAX_DEPTH: usize = 32;
/// Largest `days_before` / `days_after`, about 2,700 years: keeps date arithmetic trivially safe.
pub const MAX_DAYS: u64 = 1_000_000;

/// One step of a JSON path (relative to the definition: phenotype or Circe expression).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum PathSeg {
    Key(String),
    Index(usize),
}

/// One validation problem. `msg` never contains caller-supplied text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhenotypeError {
    pub path: Vec<PathSeg>,
    /// Short snake_case code, e.g. `missing`, `unknown_field`, `dangling_reference`.
    pub kind: &'static str,
    pub msg: String,
}

/// A validated phenotype. Fields are private so that only [`parse`] can build one: indices in
/// [`Node::Criterion`], [`Criterion::concept_set`] and [`Anchor::criterion`] are always in range.
#[derive(Debug, Clone, PartialEq)]
pub struct Phenotype {
    id: String,
    name: String,
    description: Option<String>,
    concept_sets: Vec<ConceptSet>,
    criteria: Vec<Criterion>,
    expression: Node,
}

impl Phenotype {
    pub fn id(&self) -> &str {
        &self.id
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }
    pub fn concept_sets(&self) -> &[ConceptSet] {
        &self.concept_sets
    }
    /// Every criterion of the expression, in order of appearance (depth-first, document order).
    pub fn criteria(&self) -> &[Criterion] {
        &self.criteria
    }
    pub fn expression(&self) -> &Node {
        &self.expression
    }

    /// The first concept set that asks for descendants: without a hierarchy it cannot mean
    /// what it says.
    pub fn first_set_with_descendants(&self) -> Option<usize> {
        self.concept_sets.iter().position(|s| s.include_descendants)
    }

    /// Every concept a criterion can match, given how to expand roots to their descendants:
    /// events of any other concept are never needed.
    pub fn concept_filter(
        &self,
        descendants: &dyn Fn(&[i64]) -> std::collections::BTreeSet<i64>,
    ) -> std::collections::HashSet<i64> {
        let mut all = std::collections::HashSet::new();
        for set in &self.concept_sets {
            if set.include_descendants {
                all.extend(descendants(&set.concept_ids));
            } else {
                all.extend(set.concept_ids.iter().copied());
            }
        }
        all
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConceptSet {
    pub id: String,
    /// Compared case-insensitively with the event's `vocabulary_id`.
    pub vocabulary: String,
    /// As given (positive, possibly repeated).
    pub concept_ids: Vec<i64>,
    pub include_descendants: bool,
}

/// A boolean expression over criteria.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// Index into [`Phenotype::criteria`].
    Criterion(usize),
    /// At least two children.
    And(Vec<Node>),
    /// At least two children.
    Or(Vec<Node>),
    Not(Box<Node>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Criterion {
    pub id: String,
    /// Index into [`Phenotype::concept_sets`].
    pub concept_set: usize,
    pub occurrence: Occurrence,
    pub assertion: AssertionFilter,
    /// Inclusive lower bound on the event's start date.
    pub start_date: Option<NaiveDate>,
    /// Inclusive upper bound on the event's start date.
    pub end_date: Option<NaiveDate>,
    pub anchor: Option<Anchor>,
}

/// Per-patient count bounds on distinct matching events: `minimum <= count <= maximum`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    pub minimum: u64,
    /// `None` = unbounded. Always `>= minimum`.
    pub maximum: Option<u64>,
}

/// The event's start date must lie within `[a - days_before, a + days_after]` for some start date
/// `a` of a same-patient event that matches the anchor criterion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// Index into [`Phenotype::criteria`]; never the criterion itself, never on a cycle.
    pub criterion: usize,
    pub days_before: u32,
    pub days_after: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssertionFilter {
    pub negation: NegationFilter,
    /// Allowed temporalities, sorted and unique; empty = any.
    pub temporality: Vec<Temporality>,
    /// `None` = any.
    pub certainty: Option<Certainty>,
    /// `None` = any.
    pub experiencer: Option<Experiencer>,
}

/// Which mentions pass, by the event's `negated` flag. An empty list is rejected at parse time,
/// so "nothing passes" is not representable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NegationFilter {
    AffirmedOnly,
    NegatedOnly,
    Either,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Temporality {
    Recent,
    Historical,
    Hypothetical,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Certainty {
    Certain,
    Uncertain,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiencer {
    Patient,
    Family,
    Other,
}

impl Temporality {
    /// The event-table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Recent => "recent",
            Self::Historical => "historical",
            Self::Hypothetical => "hypothetical",
        }
    }
    fn parse(s: &str) -> Option<Self> {
        [Self::Recent, Self::Historical, Self::Hypothetical]
            .into_iter()
            .find(|t| t.as_str() == s)
    }
}

impl Certainty {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Certain => "certain",
            Self::Uncertain => "uncertain",
        }
    }
    fn parse(s: &str) -> Option<Self> {
        [Self::Certain, Self::Uncertain]
            .into_iter()
            .find(|t| t.as_str() == s)
    }
}

impl Experiencer {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Patient => "patient",
            Self::Family => "family",
            Self::Other => "other",
        }
    }
    fn parse(s: &str) -> Option<Self> {
        [Self::Patient, Self::Family, Self::Other]
            .into_iter()
            .find(|t| t.as_str() == s)
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

const TOP_KEYS: &[&str] = &[
    "schema_version",
    "id",
    "name",
    "description",
    "concept_sets",
    "expression",
];
const SET_KEYS: &[&str] = &["id", "vocabulary", "concept_ids", "include_descendants"];
const CRITERION_KEYS: &[&str] = &["id", "concept_set", "occurrence", "assertion", "temporal"];
const OCCURRENCE_KEYS: &[&str] = &["minimum", "maximum"];
const ASSERTION_KEYS: &[&str] = &["negation", "temporality", "certainty", "experiencer"];
const TEMPORAL_KEYS: &[&str] = &[
    "start_date",
    "end_date",
    "anchor_criterion",
    "days_before",
    "days_after",
];

type Path = Vec<PathSeg>;

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

/// Error sink shared by the whole walk.
#[derive(Default)]
struct Errors(Vec<PhenotypeError>);

impl Errors {
    fn push(&mut self, path: Path, kind: &'static str, msg: &str) {
        self.0.push(PhenotypeError {
            path,
            kind,
            msg: msg.to_owned(),
        });
    }
}

/// A criterion as first read: pieces that failed are `None`; anchors are still names.
struct RawCriterion {
    path: Path,
    id: Option<String>,
    concept_set: Option<usize>,
    occurrence: Option<Occurrence>,
    assertion: Option<AssertionFilter>,
    dates: Option<(Option<NaiveDate>, Option<NaiveDate>)>,
    anchor: Option<Option<RawAnchor>>,
}

struct RawAnchor {
    name: String,
    days_before: u32,
    days_after: u32,
}

/// Parse state: errors plus what later cross-checks need.
struct Parser {
    errs: Errors,
    /// Concept-set id -> index of its first definition.
    set_ids: HashMap<String, usize>,
    /// Every concept set's id was read, so a failed lookup really is dangling (otherwise the
    /// broken set is already reported and a dangling error would only be noise).
    set_ids_complete: bool,
    criteria: Vec<RawCriterion>,
    /// Same for criterion ids: no criterion id or subtree was lost to an earlier error.
    criterion_ids_complete: bool,
}

/// Parses and validates a phenotype, returning every problem found.
pub fn parse(v: &Value) -> Result<Phenotype, Vec<PhenotypeError>> {
    let mut p = Parser {
        errs: Errors::default(),
        set_ids: HashMap::new(),
        set_ids_complete: false,
        criteria: Vec::new(),
        criterion_ids_complete: true,
    };
    let built = p.top(v);
    let anchors = p.resolve_anchors();
    match (built, p.errs.0.is_empty()) {
        (Some(top), true) => finish(top, p.criteria, anchors).ok_or_else(internal_error),
        _ => Err(p.errs.0),
    }
}

/// Should be unreachable: a piece was missing although no error was recorded.
fn internal_error() -> Vec<PhenotypeError> {
    vec![PhenotypeError {
        path: Vec::new(),
        kind: "invalid_value",
        msg: "phenotype could not be validated".to_owned(),
    }]
}

/// The top-level pieces, before criteria are finalised.
struct Top {
    id: String,
    name: String,
    description: Option<String>,
    concept_sets: Vec<ConceptSet>,
    expression: Node,
}

fn finish(top: Top, raw: Vec<RawCriterion>, anchors: Vec<Option<usize>>) -> Option<Phenotype> {
    let criteria = raw
        .into_iter()
        .zip(anchors)
        .map(|(c, a)| finish_criterion(c, a))
        .collect::<Option<Vec<_>>>()?;
    Some(Phenotype {
        id: top.id,
        name: top.name,
        description: top.description,
        concept_sets: top.concept_sets,
        criteria,
        expression: top.expression,
    })
}

fn finish_criterion(c: RawCriterion, anchor_idx: Option<usize>) -> Option<Criterion> {
    let (start_date, end_date) = c.dates?;
    let anchor = match c.anchor? {
        None => None,
        Some(a) => Some(Anchor {
            criterion: anchor_idx?,
            days_before: a.days_before,
            days_after: a.days_after,
        }),
    };
    Some(Criterion {
        id: c.id?,
        concept_set: c.concept_set?,
        occurrence: c.occurrence?,
        assertion: c.assertion?,
        start_date,
        end_date,
        anchor,
    })
}

impl Parser {
    fn top(&mut self, v: &Value) -> Option<Top> {
        let path: Path = Vec::new();
        let m = self.object(v, &path, TOP_KEYS)?;
        if let Some(sv) = m.get("schema_version") {
            let p = key(&path, "schema_version");
            if self.string(sv, &p).is_some_and(|s| s != SCHEMA_VERSION) {
                self.errs
                    .push(p, "invalid_value", "unsupported schema_version");
            }
        }
        let id = self
            .required(m, &path, "id")
            .and_then(|(v, p)| self.id(v, &p));
        let name = self
            .required(m, &path, "name")
            .and_then(|(v, p)| self.non_empty(v, &p));
        let description = match m.get("description") {
            None => Some(None),
            Some(d) => self
                .string(d, &key(&path, "description"))
                .map(|s| Some(s.to_owned())),
        };
        let concept_sets = self
            .required(m, &path, "concept_sets")
            .and_then(|(v, p)| self.concept_sets(v, &p));
        // Parsed even when the concept sets failed, to report expression errors too.
        let expression = self
            .required(m, &path, "expression")
            .and_then(|(v, p)| self.node(v, &p, 1));
        Some(Top {
            id: id?,
            name: name?,
            description: description?,
            concept_sets: concept_sets?,
            expression: expression?,
        })
    }

    // -- generic JSON helpers ------------------------------------------------------------------

    /// An object whose keys are all in `allowed`; each unknown key is reported at its own path.
    fn object<'a>(
        &mut self,
        v: &'a Value,
        path: &[PathSeg],
        allowed: &[&str],
    ) -> Option<&'a Map<String, Value>> {
        let Some(m) = v.as_object() else {
            self.errs
                .push(path.to_vec(), "wrong_type", "expected an object");
            return None;
        };
        for k in m.keys().filter(|k| !allowed.contains(&k.as_str())) {
            self.errs
                .push(key(path, k), "unknown_field", "unknown field");
        }
        Some(m)
    }

    fn required<'a>(
        &mut self,
        m: &'a Map<String, Value>,
        path: &[PathSeg],
        k: &str,
    ) -> Option<(&'a Value, Path)> {
        let p = key(path, k);
        match m.get(k) {
            Some(v) => Some((v, p)),
            None => {
                self.errs.push(p, "missing", "required field is missing");
                None
            }
        }
    }

    fn string<'a>(&mut self, v: &'a Value, path: &[PathSeg]) -> Option<&'a str> {
        let s = v.as_str();
        if s.is_none() {
            self.errs
                .push(path.to_vec(), "wrong_type", "expected a string");
        }
        s
    }

    fn non_empty(&mut self, v: &Value, path: &[PathSeg]) -> Option<String> {
        let s = self.string(v, path)?;
        if s.trim().is_empty() {
            self.errs
                .push(path.to_vec(), "invalid_value", "must not be empty");
            return None;
        }
        Some(s.to_owned())
    }

    fn id(&mut self, v: &Value, path: &[PathSeg]) -> Option<String> {
        let s = self.string(v, path)?;
        if !is_valid_id(s) {
            self.errs.push(
                path.to_vec(),
                "invalid_value",
                "id must start with a letter and contain 1-64 letters, digits, '_' or '-'",
            );
            return None;
        }
        Some(s.to_owned())
    }

    fn array<'a>(&mut self, v: &'a Value, path: &[PathSeg]) -> Option<&'a Vec<Value>> {
        let a = v.as_array();
        if a.is_none() {
            self.errs
                .push(path.to_vec(), "wrong_type", "expected an array");
        }
        a
    }

    fn bool(&mut self, v: &Value, path: &[PathSeg]) -> Option<bool> {
        let b = v.as_bool();
        if b.is_none() {
            self.errs
                .push(path.to_vec(), "wrong_type", "expected a boolean");
        }
        b
    }

    /// A JSON integer `>= 0` (floats such as `1.0` are rejected).
    fn count(&mut self, v: &Value, path: &[PathSeg]) -> Option<u64> {
        match v {
            Value::Number(n) if n.is_u64() => n.as_u64(),
            Value::Number(n) if n.is_i64() => {
                self.errs
                    .push(path.to_vec(), "invalid_value", "must be zero or greater");
                None
            }
            _ => {
                self.errs
                    .push(path.to_vec(), "wrong_type", "expected an integer");
                None
            }
        }
    }

    fn date(&mut self, v: &Value, path: &[PathSeg]) -> Option<NaiveDate> {
        let s = self.string(v, path)?;
        let d = parse_iso_date(s);
        if d.is_none() {
            self.errs.push(
                path.to_vec(),
                "invalid_value",
                "expected a valid calendar date as YYYY-MM-DD",
            );
        }
        d
    }

    // -- concept sets --------------------------------------------------------------------------

    fn concept_sets(&mut self, v: &Value, path: &[PathSeg]) -> Option<Vec<ConceptSet>> {
        let items = self.array(v, path)?;
        if items.is_empty() {
            self.errs.push(
                path.to_vec(),
                "too_few_items",
                "at least one concept set is required",
            );
            return None;
        }
        self.set_ids_complete = true;
        let sets: Vec<Option<ConceptSet>> = items
            .iter()
            .enumerate()
            .map(|(i, s)| self.concept_set(s, &index(path, i), i))
            .collect();
        sets.into_iter().collect()
    }

    fn concept_set(&mut self, v: &Value, path: &[PathSeg], idx: usize) -> Option<ConceptSet> {
        let Some(m) = self.object(v, path, SET_KEYS) else {
            self.set_ids_complete = false;
            return None;
        };
        let id = self.required(m, path, "id").and_then(|(v, p)| {
            let id = self.id(v, &p)?;
            if self.set_ids.contains_key(&id) {
                self.errs
                    .push(p, "duplicate_id", "duplicate concept set id");
            } else {
                self.set_ids.insert(id.clone(), idx);
            }
            Some(id)
        });
        self.set_ids_complete &= id.is_some();
        let vocabulary = self
            .required(m, path, "vocabulary")
            .and_then(|(v, p)| self.non_empty(v, &p));
        let concept_ids = self
            .required(m, path, "concept_ids")
            .and_then(|(v, p)| self.concept_ids(v, &p));
        let include_descendants = match m.get("include_descendants") {
            None => Some(false),
            Some(b) => self.bool(b, &key(path, "include_descendants")),
        };
        Some(ConceptSet {
            id: id?,
            vocabulary: vocabulary?,
            concept_ids: concept_ids?,
            include_descendants: include_descendants?,
        })
    }

    fn concept_ids(&mut self, v: &Value, path: &[PathSeg]) -> Option<Vec<i64>> {
        let items = self.array(v, path)?;
        if items.is_empty() {
            self.errs.push(
                path.to_vec(),
                "too_few_items",
                "at least one concept id is required",
            );
            return None;
        }
        let ids: Vec<Option<i64>> = items
            .iter()
            .enumerate()
            .map(|(i, c)| self.concept_id(c, &index(path, i)))
            .collect();
        ids.into_iter().collect()
    }

    fn concept_id(&mut self, v: &Value, path: &[PathSeg]) -> Option<i64> {
        let n = self.count(v, path)?;
        match i64::try_from(n) {
            Ok(id) if id > 0 => Some(id),
            _ => {
                self.errs.push(
                    path.to_vec(),
                    "invalid_value",
                    "concept id must be a positive 64-bit integer",
                );
                None
            }
        }
    }

    // -- expression ----------------------------------------------------------------------------

    /// Parses one node. Every exit that skips a subtree marks criterion ids incomplete, since
    /// the skipped part may define ids that anchors refer to.
    fn node(&mut self, v: &Value, path: &[PathSeg], depth: usize) -> Option<Node> {
        if depth > MAX_DEPTH {
            self.errs.push(
                path.to_vec(),
                "too_deep",
                "expression is nested more than 32 levels deep",
            );
            return self.lost();
        }
        let Some(m) = v.as_object() else {
            self.errs
                .push(path.to_vec(), "wrong_type", "expected an object");
            return self.lost();
        };
        let op_path = key(path, "operator");
        let op = m.get("operator").map(|o| self.string(o, &op_path));
        let allowed: &[&str] = match op {
            Some(Some("criterion")) => &["operator", "criterion"],
            Some(Some("and" | "or" | "not")) => &["operator", "children"],
            _ => &["operator", "criterion", "children"],
        };
        self.object(v, path, allowed);
        match op {
            None => {
                self.errs
                    .push(op_path, "missing", "required field is missing");
                self.lost()
            }
            Some(None) => self.lost(),
            Some(Some("criterion")) => match self.required(m, path, "criterion") {
                Some((cv, cp)) => Some(Node::Criterion(self.criterion(cv, &cp))),
                None => self.lost(),
            },
            Some(Some(op @ ("and" | "or" | "not"))) => match self.required(m, path, "children") {
                Some((cv, cp)) => self.operator(op, cv, &cp, depth),
                None => self.lost(),
            },
            Some(Some(_)) => {
                self.errs.push(
                    op_path,
                    "invalid_value",
                    "operator must be one of criterion, and, or, not",
                );
                self.lost()
            }
        }
    }

    fn lost(&mut self) -> Option<Node> {
        self.criterion_ids_complete = false;
        None
    }

    fn operator(&mut self, op: &str, v: &Value, path: &[PathSeg], depth: usize) -> Option<Node> {
        let Some(items) = self.array(v, path) else {
            return self.lost();
        };
        let (min, max) = if op == "not" { (1, 1) } else { (2, usize::MAX) };
        if items.len() < min {
            let msg = if op == "not" {
                "not takes exactly one child"
            } else {
                "and/or take at least two children"
            };
            self.errs.push(path.to_vec(), "too_few_children", msg);
        } else if items.len() > max {
            self.errs.push(
                path.to_vec(),
                "too_many_children",
                "not takes exactly one child",
            );
        }
        // Children are walked even when the count is wrong, to report their errors too.
        let children: Vec<Option<Node>> = items
            .iter()
            .enumerate()
            .map(|(i, c)| self.node(c, &index(path, i), depth + 1))
            .collect();
        let mut children: Vec<Node> = children.into_iter().collect::<Option<_>>()?;
        if items.len() < min || items.len() > max {
            return None;
        }
        match op {
            "and" => Some(Node::And(children)),
            "or" => Some(Node::Or(children)),
            _ => children.pop().map(|c| Node::Not(Box::new(c))),
        }
    }

    /// Registers the criterion (even a broken one) and returns its index.
    fn criterion(&mut self, v: &Value, path: &[PathSeg]) -> usize {
        let mut raw = RawCriterion {
            path: path.to_vec(),
            id: None,
            concept_set: None,
            occurrence: None,
            assertion: None,
            dates: None,
            anchor: None,
        };
        if let Some(m) = self.object(v, path, CRITERION_KEYS) {
            raw.id = self
                .required(m, path, "id")
                .and_then(|(v, p)| self.id(v, &p));
            raw.concept_set = self
                .required(m, path, "concept_set")
                .and_then(|(v, p)| self.set_reference(v, &p));
            raw.occurrence = match m.get("occurrence") {
                None => Some(Occurrence {
                    minimum: 1,
                    maximum: None,
                }),
                Some(o) => self.occurrence(o, &key(path, "occurrence")),
            };
            raw.assertion = match m.get("assertion") {
                None => Some(default_assertion()),
                Some(a) => self.assertion(a, &key(path, "assertion")),
            };
            match m.get("temporal") {
                None => {
                    raw.dates = Some((None, None));
                    raw.anchor = Some(None);
                }
                Some(t) => self.temporal(t, &key(path, "temporal"), &mut raw),
            }
        }
        self.criterion_ids_complete &= raw.id.is_some();
        self.criteria.push(raw);
        self.criteria.len() - 1
    }

    fn set_reference(&mut self, v: &Value, path: &[PathSeg]) -> Option<usize> {
        let name = self.string(v, path)?;
        let idx = self.set_ids.get(name).copied();
        if idx.is_none() && self.set_ids_complete {
            self.errs.push(
                path.to_vec(),
                "dangling_reference",
                "no concept set has this id",
            );
        }
        idx
    }

    fn occurrence(&mut self, v: &Value, path: &[PathSeg]) -> Option<Occurrence> {
        let m = self.object(v, path, OCCURRENCE_KEYS)?;
        let minimum = match m.get("minimum") {
            None => Some(1),
            Some(n) => self.count(n, &key(path, "minimum")),
        };
        let maximum = match m.get("maximum") {
            None => Some(None),
            Some(n) => self.count(n, &key(path, "maximum")).map(Some),
        };
        let (minimum, maximum) = (minimum?, maximum?);
        if maximum.is_some_and(|max| max < minimum) {
            self.errs.push(
                key(path, "maximum"),
                "invalid_value",
                "maximum must be greater than or equal to minimum",
            );
            return None;
        }
        Some(Occurrence { minimum, maximum })
    }

    fn assertion(&mut self, v: &Value, path: &[PathSeg]) -> Option<AssertionFilter> {
        let m = self.object(v, path, ASSERTION_KEYS)?;
        let negation = match m.get("negation") {
            None => Some(NegationFilter::AffirmedOnly),
            Some(n) => self.negation(n, &key(path, "negation")),
        };
        let temporality = match m.get("temporality") {
            None => Some(Vec::new()),
            Some(t) => self.temporality(t, &key(path, "temporality")),
        };
        let certainty = match m.get("certainty") {
            None => Some(None),
            Some(c) => self
                .enum_value(
                    c,
                    &key(path, "certainty"),
                    Certainty::parse,
                    "certain, uncertain",
                )
                .map(Some),
        };
        let experiencer = match m.get("experiencer") {
            None => Some(None),
            Some(e) => self
                .enum_value(
                    e,
                    &key(path, "experiencer"),
                    Experiencer::parse,
                    "patient, family, other",
                )
                .map(Some),
        };
        Some(AssertionFilter {
            negation: negation?,
            temporality: temporality?,
            certainty: certainty?,
            experiencer: experiencer?,
        })
    }

    /// A string that must be one of a fixed list; `allowed` is our own text, never the input.
    fn enum_value<T>(
        &mut self,
        v: &Value,
        path: &[PathSeg],
        parse: fn(&str) -> Option<T>,
        allowed: &str,
    ) -> Option<T> {
        let s = self.string(v, path)?;
        let t = parse(s);
        if t.is_none() {
            self.errs.push(
                path.to_vec(),
                "invalid_value",
                &format!("must be one of: {allowed}"),
            );
        }
        t
    }

    fn enum_list<T: Ord>(
        &mut self,
        v: &Value,
        path: &[PathSeg],
        parse: fn(&str) -> Option<T>,
        allowed: &str,
    ) -> Option<Vec<T>> {
        let items = self.array(v, path)?;
        let values: Vec<Option<T>> = items
            .iter()
            .enumerate()
            .map(|(i, x)| self.enum_value(x, &index(path, i), parse, allowed))
            .collect();
        let mut values: Vec<T> = values.into_iter().collect::<Option<_>>()?;
        values.sort();
        values.dedup();
        Some(values)
    }

    fn negation(&mut self, v: &Value, path: &[PathSeg]) -> Option<NegationFilter> {
        let values = self.enum_list(v, path, parse_negation, "affirmed, negated")?;
        match values.as_slice() {
            [false] => Some(NegationFilter::AffirmedOnly),
            [true] => Some(NegationFilter::NegatedOnly),
            [false, true] => Some(NegationFilter::Either),
            _ => {
                self.errs.push(
                    path.to_vec(),
                    "too_few_items",
                    "negation must list at least one value",
                );
                None
            }
        }
    }

    fn temporality(&mut self, v: &Value, path: &[PathSeg]) -> Option<Vec<Temporality>> {
        self.enum_list(
            v,
            path,
            Temporality::parse,
            "recent, historical, hypothetical",
        )
    }

    fn temporal(&mut self, v: &Value, path: &[PathSeg], raw: &mut RawCriterion) {
        let Some(m) = self.object(v, path, TEMPORAL_KEYS) else {
            return;
        };
        let start = self.optional_date(m, path, "start_date");
        let end = self.optional_date(m, path, "end_date");
        if let (Some(Some(s)), Some(Some(e))) = (start, end)
            && s > e
        {
            self.errs.push(
                key(path, "end_date"),
                "invalid_value",
                "end_date must not be before start_date",
            );
        } else if let (Some(s), Some(e)) = (start, end) {
            raw.dates = Some((s, e));
        }
        raw.anchor = self.anchor(m, path);
    }

    fn optional_date(
        &mut self,
        m: &Map<String, Value>,
        path: &[PathSeg],
        k: &str,
    ) -> Option<Option<NaiveDate>> {
        match m.get(k) {
            None => Some(None),
            Some(d) => self.date(d, &key(path, k)).map(Some),
        }
    }

    fn days(&mut self, m: &Map<String, Value>, path: &[PathSeg], k: &str) -> Option<Option<u32>> {
        let Some(v) = m.get(k) else {
            return Some(None);
        };
        let p = key(path, k);
        let n = self.count(v, &p)?;
        match u32::try_from(n) {
            Ok(d) if n <= MAX_DAYS => Some(Some(d)),
            _ => {
                self.errs
                    .push(p, "invalid_value", "must be at most 1000000 days");
                None
            }
        }
    }

    fn anchor(&mut self, m: &Map<String, Value>, path: &[PathSeg]) -> Option<Option<RawAnchor>> {
        let before = self.days(m, path, "days_before");
        let after = self.days(m, path, "days_after");
        let name = m
            .get("anchor_criterion")
            .map(|a| self.string(a, &key(path, "anchor_criterion")));
        let (before, after) = (before?, after?);
        let Some(name) = name else {
            if before.is_some() || after.is_some() {
                let k = if before.is_some() {
                    "days_before"
                } else {
                    "days_after"
                };
                self.errs.push(
                    key(path, k),
                    "anchor_required",
                    "days_before/days_after require anchor_criterion",
                );
                return None;
            }
            return Some(None);
        };
        let name = name?;
        if before.is_none() && after.is_none() {
            self.errs.push(
                key(path, "anchor_criterion"),
                "days_required",
                "anchor_criterion requires days_before and/or days_after",
            );
            return None;
        }
        Some(Some(RawAnchor {
            name: name.to_owned(),
            days_before: before.unwrap_or(0),
            days_after: after.unwrap_or(0),
        }))
    }

    // -- cross-checks over all criteria --------------------------------------------------------

    /// Checks criterion-id uniqueness, anchor targets and anchor cycles. Returns each criterion's
    /// resolved anchor index (`None` when it has none or it could not be resolved).
    fn resolve_anchors(&mut self) -> Vec<Option<usize>> {
        let ids = unique_criterion_ids(&self.criteria, &mut self.errs);
        let mut targets = vec![None; self.criteria.len()];
        for (i, c) in self.criteria.iter().enumerate() {
            let Some(Some(a)) = &c.anchor else { continue };
            let p = key(&key(&c.path, "temporal"), "anchor_criterion");
            match ids.get(a.name.as_str()) {
                None if !self.criterion_ids_complete => {}
                None => self.errs.push(
                    p,
                    "dangling_reference",
                    "no criterion in the expression has this id",
                ),
                Some(&t) if t == i => {
                    self.errs
                        .push(p, "self_reference", "a criterion cannot anchor on itself")
                }
                Some(&t) => targets[i] = Some(t),
            }
        }
        for start in anchor_cycles(&targets) {
            let p = key(
                &key(&self.criteria[start].path, "temporal"),
                "anchor_criterion",
            );
            self.errs
                .push(p, "cyclic_anchor", "anchor criteria form a cycle");
        }
        targets
    }
}

/// Criterion id -> index of its first occurrence; later repeats are `duplicate_id` errors.
fn unique_criterion_ids<'a>(
    criteria: &'a [RawCriterion],
    errs: &mut Errors,
) -> HashMap<&'a str, usize> {
    let mut ids: HashMap<&str, usize> = HashMap::new();
    for (i, c) in criteria.iter().enumerate() {
        let Some(id) = &c.id else { continue };
        if ids.contains_key(id.as_str()) {
            errs.push(key(&c.path, "id"), "duplicate_id", "duplicate criterion id");
        } else {
            ids.insert(id, i);
        }
    }
    ids
}

fn default_assertion() -> AssertionFilter {
    AssertionFilter {
        negation: NegationFilter::AffirmedOnly,
        temporality: Vec::new(),
        certainty: None,
        experiencer: None,
    }
}

/// `"negated"` -> `true`, `"affirmed"` -> `false`.
fn parse_negation(s: &str) -> Option<bool> {
    match s {
        "affirmed" => Some(false),
        "negated" => Some(true),
        _ => None,
    }
}

/// For a graph where each node has at most one out-edge, returns the smallest index on each
/// cycle (so each cycle is reported once, at its first criterion in document order).
fn anchor_cycles(targets: &[Option<usize>]) -> Vec<usize> {
    // 0 = unvisited, 1 = on the current walk, 2 = done.
    let mut state = vec![0u8; targets.len()];
    let mut found = Vec::new();
    for start in 0..targets.len() {
        let mut walk = Vec::new();
        let mut cur = Some(start);
        while let Some(n) = cur {
            match state.get(n) {
                Some(0) => {
                    state[n] = 1;
                    walk.push(n);
                    cur = targets[n];
                }
                Some(1) => {
                    let from = walk.iter().position(|&w| w == n).unwrap_or(0);
                    found.extend(walk[from..].iter().min());
                    cur = None;
                }
                _ => cur = None,
            }
        }
        for n in walk {
            state[n] = 2;
        }
    }
    found.sort_unstable();
    found
}

/// `^[A-Za-z][A-Za-z0-9_-]{0,63}$`, checked by hand.
pub fn is_valid_id(s: &str) -> bool {
    let b = s.as_bytes();
    matches!(b.first(), Some(c) if c.is_ascii_alphabetic())
        && b.len() <= 64
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
}

/// Strict `YYYY-MM-DD` (exactly ten characters, zero-padded) naming a real calendar day.
pub fn parse_iso_date(s: &str) -> Option<NaiveDate> {
    let b = s.as_bytes();
    let shape_ok = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shape_ok {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<u32>().ok();
    let year = i32::try_from(num(0..4)?).ok()?;
    NaiveDate::from_ymd_opt(year, num(5..7)?, num(8..10)?)
}

// ---------------------------------------------------------------------------------------------
// Definition hash
// ---------------------------------------------------------------------------------------------

/// SHA-256 (lower-case hex) of the phenotype as compact JSON with object keys sorted by their
/// UTF-8 bytes at every level, so that key order and whitespace in the request do not change
/// the hash. Strings and numbers are written exactly as `serde_json` writes them.
pub fn definition_sha256(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    sha256_hex(out.as_bytes())
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, val)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(k, out);
                out.push(':');
                write_canonical(val, out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, val) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(val, out);
            }
            out.push(']');
        }
        Value::String(s) => write_json_string(s, out),
        // Scalars have no keys to sort; `Display` writes serde_json's compact form.
        other => out.push_str(&other.to_string()),
    }
}

fn write_json_string(s: &str, out: &mut String) {
    out.push_str(&Value::String(s.to_owned()).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A valid phenotype exercising most features.
    fn base() -> Value {
        json!({
            "schema_version": "cohort.phenotype.v1",
            "id": "t2dm",
            "name": "Type 2 diabetes on metformin",
            "description": "test",
            "concept_sets": [
                {"id": "dm", "vocabulary": "SNOMED", "concept_ids": [201826]},
                {"id": "met", "vocabulary": "RxNorm", "concept_ids": [1503297, 1503297],
                 "include_descendants": true}
            ],
            "expression": {"operator": "and", "children": [
                {"operator": "criterion", "criterion": {"id": "dx", "concept_set": "dm"}},
                {"operator": "criterion", "criterion": {
                    "id": "rx", "concept_set": "met",
                    "temporal": {"anchor_criterion": "dx", "days_after": 365}}}
            ]}
        })
    }

    /// `v` with the value at JSON pointer `ptr` set (objects: inserted; arrays: replaced).
    fn set(mut v: Value, ptr: &str, new: Value) -> Value {
        let (parent, last) = ptr.rsplit_once('/').unwrap();
        match v.pointer_mut(parent).unwrap() {
            Value::Object(m) => {
                m.insert(last.to_owned(), new);
            }
            Value::Array(a) => a[last.parse::<usize>().unwrap()] = new,
            _ => panic!("bad pointer"),
        }
        v
    }

    fn remove(mut v: Value, ptr: &str) -> Value {
        let (parent, last) = ptr.rsplit_once('/').unwrap();
        v.pointer_mut(parent)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove(last);
        v
    }

    fn dotted(path: &[PathSeg]) -> String {
        path.iter()
            .map(|s| match s {
                PathSeg::Key(k) => k.clone(),
                PathSeg::Index(i) => i.to_string(),
            })
            .collect::<Vec<_>>()
            .join(".")
    }

    /// All errors as `(dotted path, kind)`, in report order.
    fn errs(v: &Value) -> Vec<(String, &'static str)> {
        let e = parse(v).expect_err("expected errors");
        e.iter().map(|e| (dotted(&e.path), e.kind)).collect()
    }

    fn one(path: &str, kind: &'static str) -> Vec<(String, &'static str)> {
        vec![(path.to_owned(), kind)]
    }

    const C0: &str = "/expression/children/0/criterion";
    const C1: &str = "/expression/children/1/criterion";
    const P0: &str = "expression.children.0.criterion";
    const P1: &str = "expression.children.1.criterion";

    fn crit(id: &str, set: &str) -> Value {
        json!({"operator": "criterion", "criterion": {"id": id, "concept_set": set}})
    }

    fn anchored(id: &str, anchor: &str) -> Value {
        json!({"operator": "criterion", "criterion": {"id": id, "concept_set": "dm",
            "temporal": {"anchor_criterion": anchor, "days_before": 1}}})
    }

    // -- valid input -------------------------------------------------------------------------

    #[test]
    fn parses_valid_phenotype_into_typed_form() {
        let p = parse(&base()).unwrap();
        assert_eq!(p.id(), "t2dm");
        assert_eq!(p.name(), "Type 2 diabetes on metformin");
        assert_eq!(p.description(), Some("test"));
        assert_eq!(p.concept_sets().len(), 2);
        let met = &p.concept_sets()[1];
        assert_eq!(met.vocabulary, "RxNorm");
        // Repeats are kept as given; provenance reports them sorted-unique.
        assert_eq!(met.concept_ids, vec![1503297, 1503297]);
        assert!(met.include_descendants);
        assert!(!p.concept_sets()[0].include_descendants);
        assert_eq!(
            p.expression(),
            &Node::And(vec![Node::Criterion(0), Node::Criterion(1)])
        );
        let dx = &p.criteria()[0];
        assert_eq!(dx.id, "dx");
        assert_eq!(dx.concept_set, 0);
        // Defaults: minimum 1, no maximum, affirmed only, any temporality/certainty/experiencer.
        assert_eq!(
            dx.occurrence,
            Occurrence {
                minimum: 1,
                maximum: None
            }
        );
        assert_eq!(dx.assertion, default_assertion());
        assert_eq!((dx.start_date, dx.end_date, dx.anchor), (None, None, None));
        // Only days_after given: days_before means 0.
        assert_eq!(
            p.criteria()[1].anchor,
            Some(Anchor {
                criterion: 0,
                days_before: 0,
                days_after: 365
            })
        );
    }

    #[test]
    fn parses_all_optional_criterion_parts() {
        let v = set(
            base(),
            &format!("{C0}/occurrence"),
            json!({"minimum": 0, "maximum": 0}),
        );
        let v = set(
            v,
            &format!("{C0}/assertion"),
            json!({"negation": ["negated", "affirmed"], "temporality": ["historical", "recent", "historical"],
                   "certainty": "uncertain", "experiencer": "family"}),
        );
        let v = set(
            v,
            &format!("{C0}/temporal"),
            json!({"start_date": "2020-02-29", "end_date": "2020-02-29"}),
        );
        let p = parse(&v).unwrap();
        let c = &p.criteria()[0];
        assert_eq!(
            c.occurrence,
            Occurrence {
                minimum: 0,
                maximum: Some(0)
            }
        );
        assert_eq!(
            c.assertion,
            AssertionFilter {
                negation: NegationFilter::Either,
                // Sorted and deduplicated.
                temporality: vec![Temporality::Recent, Temporality::Historical],
                certainty: Some(Certainty::Uncertain),
                experiencer: Some(Experiencer::Family),
            }
        );
        // start == end is allowed (a one-day window).
        assert_eq!(c.start_date, NaiveDate::from_ymd_opt(2020, 2, 29));
        assert_eq!(c.end_date, NaiveDate::from_ymd_opt(2020, 2, 29));
    }

    #[test]
    fn negation_lists_map_to_filters() {
        for (list, want) in [
            (json!(["affirmed"]), NegationFilter::AffirmedOnly),
            (json!(["negated"]), NegationFilter::NegatedOnly),
            (json!(["negated", "negated"]), NegationFilter::NegatedOnly),
            (json!(["affirmed", "negated"]), NegationFilter::Either),
        ] {
            let v = set(
                base(),
                &format!("{C0}/assertion"),
                json!({ "negation": list }),
            );
            assert_eq!(parse(&v).unwrap().criteria()[0].assertion.negation, want);
        }
    }

    #[test]
    fn nested_expression_and_document_order() {
        // or(a, not(and(b, c))): criteria are numbered depth-first in document order.
        let v = set(
            base(),
            "/expression",
            json!({"operator": "or", "children": [
                crit("a", "dm"),
                {"operator": "not", "children": [
                    {"operator": "and", "children": [crit("b", "dm"), crit("c", "met")]}
                ]}
            ]}),
        );
        let p = parse(&v).unwrap();
        let ids: Vec<&str> = p.criteria().iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(
            p.expression(),
            &Node::Or(vec![
                Node::Criterion(0),
                Node::Not(Box::new(Node::And(vec![
                    Node::Criterion(1),
                    Node::Criterion(2)
                ])))
            ])
        );
    }

    #[test]
    fn schema_version_is_optional() {
        assert!(parse(&remove(base(), "/schema_version")).is_ok());
        assert_eq!(
            errs(&set(
                base(),
                "/schema_version",
                json!("cohort.phenotype.v2")
            )),
            one("schema_version", "invalid_value")
        );
        assert_eq!(
            errs(&set(base(), "/schema_version", json!(1))),
            one("schema_version", "wrong_type")
        );
    }

    // -- top level ---------------------------------------------------------------------------

    #[test]
    fn top_level_must_be_object() {
        assert_eq!(errs(&json!([])), one("", "wrong_type"));
        assert_eq!(errs(&json!(null)), one("", "wrong_type"));
    }

    #[test]
    fn all_missing_fields_reported_at_once() {
        assert_eq!(
            errs(&json!({})),
            vec![
                ("id".to_owned(), "missing"),
                ("name".to_owned(), "missing"),
                ("concept_sets".to_owned(), "missing"),
                ("expression".to_owned(), "missing"),
            ]
        );
    }

    #[test]
    fn id_rules() {
        assert!(is_valid_id("a"));
        assert!(is_valid_id("A_b-9"));
        assert!(is_valid_id(&"a".repeat(64)));
        assert!(!is_valid_id(&"a".repeat(65)));
        assert!(!is_valid_id(""));
        assert!(!is_valid_id("1abc"));
        assert!(!is_valid_id("_abc"));
        assert!(!is_valid_id("a b"));
        assert!(!is_valid_id("a.b"));
        assert!(!is_valid_id("é"));
        assert_eq!(
            errs(&set(base(), "/id", json!("9lives"))),
            one("id", "invalid_value")
        );
        assert_eq!(errs(&set(base(), "/id", json!(7))), one("id", "wrong_type"));
        assert_eq!(
            errs(&set(base(), "/concept_sets/1/id", json!("has space"))),
            // The criterion naming "met" is not also reported: the set table is broken.
            one("concept_sets.1.id", "invalid_value")
        );
    }

    #[test]
    fn name_and_description() {
        assert_eq!(
            errs(&set(base(), "/name", json!("  "))),
            one("name", "invalid_value")
        );
        assert_eq!(
            errs(&set(base(), "/name", json!(null))),
            one("name", "wrong_type")
        );
        assert_eq!(
            errs(&set(base(), "/description", json!(1))),
            one("description", "wrong_type")
        );
    }

    // -- concept sets ------------------------------------------------------------------------

    #[test]
    fn concept_sets_shape() {
        assert_eq!(
            errs(&set(base(), "/concept_sets", json!({}))),
            one("concept_sets", "wrong_type")
        );
        // References into a broken set list are not reported as dangling (pure noise).
        assert_eq!(
            errs(&set(base(), "/concept_sets", json!([]))),
            one("concept_sets", "too_few_items")
        );
        assert_eq!(
            errs(&set(base(), "/concept_sets/0", json!("dm"))),
            one("concept_sets.0", "wrong_type")
        );
        assert_eq!(
            errs(&remove(base(), "/concept_sets")),
            one("concept_sets", "missing")
        );
    }

    #[test]
    fn duplicate_concept_set_id() {
        // The second "dm" is the duplicate; references resolve to the first.
        let v = set(base(), "/concept_sets/1/id", json!("dm"));
        assert_eq!(
            errs(&v),
            vec![
                ("concept_sets.1.id".to_owned(), "duplicate_id"),
                // "met" no longer exists.
                (format!("{P1}.concept_set"), "dangling_reference"),
            ]
        );
    }

    #[test]
    fn concept_set_fields() {
        let v = remove(base(), "/concept_sets/0/vocabulary");
        assert_eq!(errs(&v), one("concept_sets.0.vocabulary", "missing"));
        let v = set(base(), "/concept_sets/0/vocabulary", json!(""));
        assert_eq!(errs(&v), one("concept_sets.0.vocabulary", "invalid_value"));
        let v = remove(base(), "/concept_sets/0/concept_ids");
        assert_eq!(errs(&v), one("concept_sets.0.concept_ids", "missing"));
        let v = set(base(), "/concept_sets/0/concept_ids", json!([]));
        assert_eq!(errs(&v), one("concept_sets.0.concept_ids", "too_few_items"));
        let v = set(base(), "/concept_sets/0/include_descendants", json!("yes"));
        assert_eq!(
            errs(&v),
            one("concept_sets.0.include_descendants", "wrong_type")
        );
    }

    #[test]
    fn concept_ids_must_be_positive_integers() {
        // 0 and -3: not positive; 1.5 and "7": not integers; 2^63: beyond i64; 5: fine.
        let v = set(
            base(),
            "/concept_sets/0/concept_ids",
            json!([0, -3, 1.5, "7", 9_223_372_036_854_775_808u64, 5]),
        );
        let p = "concept_sets.0.concept_ids";
        assert_eq!(
            errs(&v),
            vec![
                (format!("{p}.0"), "invalid_value"),
                (format!("{p}.1"), "invalid_value"),
                (format!("{p}.2"), "wrong_type"),
                (format!("{p}.3"), "wrong_type"),
                (format!("{p}.4"), "invalid_value"),
            ]
        );
    }

    // -- unknown fields ----------------------------------------------------------------------

    #[test]
    fn unknown_fields_everywhere() {
        let v = set(base(), "/extra", json!(1));
        let v = set(v, "/concept_sets/0/codes", json!([]));
        let v = set(v, "/expression/children/0/children", json!([]));
        let v = set(v, &format!("{C1}/temporal/window"), json!(3));
        let v = set(v, &format!("{C0}/occurrence"), json!({"min": 1}));
        let v = set(v, &format!("{C0}/assertion"), json!({"polarity": "x"}));
        let v = set(v, &format!("{C0}/note"), json!("x"));
        assert_eq!(
            errs(&v),
            vec![
                ("extra".to_owned(), "unknown_field"),
                ("concept_sets.0.codes".to_owned(), "unknown_field"),
                // A criterion node takes no children.
                ("expression.children.0.children".to_owned(), "unknown_field"),
                (format!("{P0}.note"), "unknown_field"),
                (format!("{P0}.occurrence.min"), "unknown_field"),
                (format!("{P0}.assertion.polarity"), "unknown_field"),
                (format!("{P1}.temporal.window"), "unknown_field"),
            ]
        );
    }

    #[test]
    fn operator_node_rejects_criterion_key() {
        let v = set(base(), "/expression/criterion", json!({}));
        assert_eq!(errs(&v), one("expression.criterion", "unknown_field"));
    }

    // -- expression --------------------------------------------------------------------------

    #[test]
    fn operator_errors() {
        let v = set(base(), "/expression/operator", json!("xor"));
        assert_eq!(errs(&v), one("expression.operator", "invalid_value"));
        let v = set(base(), "/expression/operator", json!(["and"]));
        assert_eq!(errs(&v), one("expression.operator", "wrong_type"));
        let v = remove(base(), "/expression/operator");
        assert_eq!(errs(&v), one("expression.operator", "missing"));
        let v = set(base(), "/expression", json!([]));
        assert_eq!(errs(&v), one("expression", "wrong_type"));
        let v = remove(base(), "/expression/children");
        assert_eq!(errs(&v), one("expression.children", "missing"));
        let v = set(base(), "/expression/children", json!({}));
        assert_eq!(errs(&v), one("expression.children", "wrong_type"));
        let v = set(base(), "/expression", json!({"operator": "criterion"}));
        assert_eq!(errs(&v), one("expression.criterion", "missing"));
    }

    #[test]
    fn and_or_need_two_children() {
        for op in ["and", "or"] {
            let v = set(
                base(),
                "/expression",
                json!({"operator": op, "children": [crit("a", "dm")]}),
            );
            assert_eq!(errs(&v), one("expression.children", "too_few_children"));
            let v = set(
                base(),
                "/expression",
                json!({"operator": op, "children": []}),
            );
            assert_eq!(errs(&v), one("expression.children", "too_few_children"));
        }
    }

    #[test]
    fn not_needs_exactly_one_child() {
        let two = json!({"operator": "not", "children": [crit("a", "dm"), crit("b", "dm")]});
        assert_eq!(
            errs(&set(base(), "/expression", two)),
            one("expression.children", "too_many_children")
        );
        let none = json!({"operator": "not", "children": []});
        assert_eq!(
            errs(&set(base(), "/expression", none)),
            one("expression.children", "too_few_children")
        );
        let ok = json!({"operator": "not", "children": [crit("a", "dm")]});
        assert!(parse(&set(base(), "/expression", ok)).is_ok());
    }

    #[test]
    fn children_errors_reported_even_when_count_is_wrong() {
        let v = set(
            base(),
            "/expression",
            json!({"operator": "and", "children": [crit("a", "nope")]}),
        );
        assert_eq!(
            errs(&v),
            vec![
                ("expression.children".to_owned(), "too_few_children"),
                (
                    "expression.children.0.criterion.concept_set".to_owned(),
                    "dangling_reference"
                ),
            ]
        );
    }

    /// `levels` nested `not`s around one criterion: the criterion node is at depth levels + 1.
    fn nested_nots(levels: usize) -> Value {
        let mut node = crit("a", "dm");
        for _ in 0..levels {
            node = json!({"operator": "not", "children": [node]});
        }
        set(base(), "/expression", node)
    }

    #[test]
    fn depth_is_capped_at_32() {
        // 31 nots + the criterion = depth 32: accepted.
        assert!(parse(&nested_nots(31)).is_ok());
        // 32 nots: the criterion node is at depth 33, under 32 (children, 0) steps.
        let path = format!("expression{}", ".children.0".repeat(32));
        assert_eq!(errs(&nested_nots(32)), one(&path, "too_deep"));
        // Much deeper input still yields one error at the first level past the cap.
        assert_eq!(errs(&nested_nots(100)), one(&path, "too_deep"));
    }

    // -- criteria ----------------------------------------------------------------------------

    #[test]
    fn criterion_required_fields() {
        let v = set(base(), "/expression/children/0/criterion", json!({}));
        assert_eq!(
            errs(&v),
            // "rx" anchors on "dx", whose id is lost: not reported as dangling on top.
            vec![
                (format!("{P0}.id"), "missing"),
                (format!("{P0}.concept_set"), "missing"),
            ]
        );
        let v = set(base(), "/expression/children/0/criterion", json!("dx"));
        assert_eq!(errs(&v), one(P0, "wrong_type"));
        // A subtree that could not be walked hides ids too.
        let v = set(
            base(),
            "/expression/children/0",
            json!({"operator": "nand"}),
        );
        assert_eq!(
            errs(&v),
            one("expression.children.0.operator", "invalid_value")
        );
        // But a dangling anchor next to an unrelated error is still reported.
        let v = set(base(), "/name", json!(""));
        let v = set(v, &format!("{C1}/temporal/anchor_criterion"), json!("zz"));
        assert_eq!(
            errs(&v),
            vec![
                ("name".to_owned(), "invalid_value"),
                (
                    format!("{P1}.temporal.anchor_criterion"),
                    "dangling_reference"
                ),
            ]
        );
    }

    #[test]
    fn duplicate_criterion_id() {
        let v = set(base(), &format!("{C1}/id"), json!("dx"));
        // The later one is the duplicate. "dx" then anchors on the first "dx", which is not
        // itself, so no further error.
        assert_eq!(errs(&v), one(&format!("{P1}.id"), "duplicate_id"));
    }

    #[test]
    fn dangling_concept_set() {
        let v = set(base(), &format!("{C0}/concept_set"), json!("nope"));
        assert_eq!(
            errs(&v),
            one(&format!("{P0}.concept_set"), "dangling_reference")
        );
        let v = set(base(), &format!("{C0}/concept_set"), json!(0));
        assert_eq!(errs(&v), one(&format!("{P0}.concept_set"), "wrong_type"));
    }

    #[test]
    fn occurrence_rules() {
        let at = |o: Value| errs(&set(base(), &format!("{C0}/occurrence"), o));
        assert_eq!(
            at(json!({"minimum": -1})),
            one(&format!("{P0}.occurrence.minimum"), "invalid_value")
        );
        assert_eq!(
            at(json!({"minimum": 1.5})),
            one(&format!("{P0}.occurrence.minimum"), "wrong_type")
        );
        // maximum 0 with the default minimum 1 is a contradiction.
        assert_eq!(
            at(json!({"maximum": 0})),
            one(&format!("{P0}.occurrence.maximum"), "invalid_value")
        );
        assert_eq!(
            at(json!({"minimum": 3, "maximum": 2})),
            one(&format!("{P0}.occurrence.maximum"), "invalid_value")
        );
        assert_eq!(at(json!(2)), one(&format!("{P0}.occurrence"), "wrong_type"));
        let ok = set(
            base(),
            &format!("{C0}/occurrence"),
            json!({"minimum": 2, "maximum": 2}),
        );
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn assertion_rules() {
        let at = |a: Value| errs(&set(base(), &format!("{C0}/assertion"), a));
        let p = format!("{P0}.assertion");
        assert_eq!(
            at(json!({"negation": []})),
            one(&format!("{p}.negation"), "too_few_items")
        );
        assert_eq!(
            at(json!({"negation": "affirmed"})),
            one(&format!("{p}.negation"), "wrong_type")
        );
        assert_eq!(
            at(json!({"negation": ["affirmed", "maybe"]})),
            one(&format!("{p}.negation.1"), "invalid_value")
        );
        assert_eq!(
            at(json!({"temporality": ["recent", "future"]})),
            one(&format!("{p}.temporality.1"), "invalid_value")
        );
        assert_eq!(
            at(json!({"certainty": "probable"})),
            one(&format!("{p}.certainty"), "invalid_value")
        );
        assert_eq!(
            at(json!({"certainty": ["certain"]})),
            one(&format!("{p}.certainty"), "wrong_type")
        );
        assert_eq!(
            at(json!({"experiencer": "sibling"})),
            one(&format!("{p}.experiencer"), "invalid_value")
        );
        // Values are case-sensitive.
        assert_eq!(
            at(json!({"experiencer": "Patient"})),
            one(&format!("{p}.experiencer"), "invalid_value")
        );
    }

    #[test]
    fn iso_dates() {
        assert_eq!(
            parse_iso_date("2020-02-29"),
            NaiveDate::from_ymd_opt(2020, 2, 29)
        );
        for bad in [
            "2021-02-29",
            "2020-13-01",
            "2020-00-10",
            "2020-1-05",
            "20200105",
            "2020-01-05T00:00:00",
            "2020/01/05",
            "+020-01-05",
            "",
        ] {
            assert_eq!(parse_iso_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn temporal_date_rules() {
        let at = |t: Value| errs(&set(base(), &format!("{C0}/temporal"), t));
        let p = format!("{P0}.temporal");
        assert_eq!(
            at(json!({"start_date": "2020-02-30"})),
            one(&format!("{p}.start_date"), "invalid_value")
        );
        assert_eq!(
            at(json!({"end_date": 20200101})),
            one(&format!("{p}.end_date"), "wrong_type")
        );
        assert_eq!(
            at(json!({"start_date": "2020-01-02", "end_date": "2020-01-01"})),
            one(&format!("{p}.end_date"), "invalid_value")
        );
        assert_eq!(at(json!([])), one(&p, "wrong_type"));
    }

    #[test]
    fn days_and_anchor_go_together() {
        let at = |t: Value| errs(&set(base(), &format!("{C1}/temporal"), t));
        let p = format!("{P1}.temporal");
        assert_eq!(
            at(json!({"days_before": 3})),
            one(&format!("{p}.days_before"), "anchor_required")
        );
        assert_eq!(
            at(json!({"days_after": 3})),
            one(&format!("{p}.days_after"), "anchor_required")
        );
        assert_eq!(
            at(json!({"anchor_criterion": "dx"})),
            one(&format!("{p}.anchor_criterion"), "days_required")
        );
        assert_eq!(
            at(json!({"anchor_criterion": "dx", "days_before": -1})),
            one(&format!("{p}.days_before"), "invalid_value")
        );
        assert_eq!(
            at(json!({"anchor_criterion": "dx", "days_after": 1_000_001})),
            one(&format!("{p}.days_after"), "invalid_value")
        );
        assert_eq!(
            at(json!({"anchor_criterion": 5, "days_after": 1})),
            one(&format!("{p}.anchor_criterion"), "wrong_type")
        );
        // Both days given, plus a fixed window: all allowed together.
        let v = set(
            base(),
            &format!("{C1}/temporal"),
            json!({"anchor_criterion": "dx", "days_before": 7, "days_after": 0,
                   "start_date": "2020-01-01"}),
        );
        let p = parse(&v).unwrap();
        let anchor = p.criteria()[1].anchor.unwrap();
        assert_eq!((anchor.days_before, anchor.days_after), (7, 0));
    }

    #[test]
    fn dangling_and_self_anchor() {
        let v = set(
            base(),
            &format!("{C1}/temporal/anchor_criterion"),
            json!("nope"),
        );
        assert_eq!(
            errs(&v),
            one(
                &format!("{P1}.temporal.anchor_criterion"),
                "dangling_reference"
            )
        );
        let v = set(
            base(),
            &format!("{C1}/temporal/anchor_criterion"),
            json!("rx"),
        );
        assert_eq!(
            errs(&v),
            one(&format!("{P1}.temporal.anchor_criterion"), "self_reference")
        );
    }

    #[test]
    fn two_cycle_anchor() {
        // a -> b -> a: reported once, at the first criterion of the cycle.
        let v = set(
            base(),
            "/expression",
            json!({"operator": "and", "children": [anchored("a", "b"), anchored("b", "a")]}),
        );
        assert_eq!(
            errs(&v),
            one(&format!("{P0}.temporal.anchor_criterion"), "cyclic_anchor")
        );
    }

    #[test]
    fn three_cycle_anchor_with_a_tail_and_a_separate_chain() {
        // x -> a -> b -> c -> a: x leads into the cycle but is not on it; the error is at "a"
        // (children.1). y -> z is a fine chain.
        let v = set(
            base(),
            "/expression",
            json!({"operator": "or", "children": [
                anchored("x", "a"), anchored("a", "b"), anchored("b", "c"), anchored("c", "a"),
                anchored("y", "z"), crit("z", "dm")
            ]}),
        );
        assert_eq!(
            errs(&v),
            one(
                "expression.children.1.criterion.temporal.anchor_criterion",
                "cyclic_anchor"
            )
        );
    }

    #[test]
    fn anchor_may_point_forward() {
        // "rx" (first) anchors on "dx" (second), nested under not: any position is fine.
        let v = set(
            base(),
            "/expression",
            json!({"operator": "and", "children": [
                anchored("rx", "dx"),
                {"operator": "not", "children": [crit("dx", "met")]}
            ]}),
        );
        let p = parse(&v).unwrap();
        assert_eq!(p.criteria()[0].anchor.unwrap().criterion, 1);
    }

    #[test]
    fn many_errors_collected_together() {
        let v = set(base(), "/id", json!(""));
        let v = set(v, "/concept_sets/0/concept_ids", json!([-1]));
        let v = set(v, &format!("{C0}/occurrence"), json!({"minimum": "1"}));
        let v = set(v, &format!("{C1}/temporal/anchor_criterion"), json!("zz"));
        assert_eq!(
            errs(&v),
            vec![
                ("id".to_owned(), "invalid_value"),
                ("concept_sets.0.concept_ids.0".to_owned(), "invalid_value"),
                (format!("{P0}.occurrence.minimum"), "wrong_type"),
                (
                    format!("{P1}.temporal.anchor_criterion"),
                    "dangling_reference"
                ),
            ]
        );
    }

    #[test]
    fn messages_never_echo_caller_values() {
        let s = "SECRETzz";
        let v = json!({
            "schema_version": s,
            "id": format!("{s} id"),
            "name": 5,
            s: 1,
            "concept_sets": [
                {"id": s, "vocabulary": s, "concept_ids": [s]},
                {"id": s, "vocabulary": "", "concept_ids": [1], s: true}
            ],
            "expression": {"operator": "or", "children": [
                {"operator": s},
                {"operator": "criterion", "criterion": {"id": s, "concept_set": format!("{s}x"),
                    "assertion": {"negation": [s], "temporality": [s], "certainty": s, "experiencer": s},
                    "temporal": {"start_date": s, "end_date": s, "anchor_criterion": format!("{s}y"),
                                 "days_before": s}}},
                {"operator": "criterion", "criterion": {"id": s, "concept_set": s,
                    "temporal": {"anchor_criterion": s, "days_after": 1}}}
            ]}
        });
        let e = parse(&v).unwrap_err();
        assert!(e.len() >= 15, "{e:?}");
        for err in &e {
            assert!(!err.msg.contains("SECRET"), "{err:?}");
            assert!(!err.msg.is_empty());
        }
    }

    #[test]
    fn errors_serialise_with_mixed_path_segments() {
        let v = set(base(), &format!("{C0}/id"), json!(1));
        let e = parse(&v).unwrap_err();
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!([{"path": ["expression", "children", 0, "criterion", "id"],
                    "kind": "wrong_type", "msg": "expected a string"}])
        );
    }

    // -- definition hash ---------------------------------------------------------------------

    #[test]
    fn definition_hash_is_canonical() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":[true,null,"x\"y"],"c":{"z":1.5,"y":-2}}"#).unwrap();
        let b: Value = serde_json::from_str(
            "{ \"c\" : {\"y\":-2, \"z\":1.5}, \"a\":[true,null,\"x\\\"y\"], \"b\":1 }",
        )
        .unwrap();
        // Canonical text: {"a":[true,null,"x\"y"],"b":1,"c":{"y":-2,"z":1.5}}; its SHA-256 from
        // `printf '%s' '<text>' | sha256sum`.
        let want = "15293ce4ae179ec609bc2bbe2f767a5f267f38277e4a4652f886925f49abe0e8";
        assert_eq!(definition_sha256(&a), want);
        assert_eq!(definition_sha256(&b), want);
        let mut canonical = String::new();
        write_canonical(&a, &mut canonical);
        assert_eq!(
            canonical,
            r#"{"a":[true,null,"x\"y"],"b":1,"c":{"y":-2,"z":1.5}}"#
        );
        // Array order matters; any value change changes the hash.
        let c: Value =
            serde_json::from_str(r#"{"b":1,"a":[null,true,"x\"y"],"c":{"z":1.5,"y":-2}}"#).unwrap();
        assert_ne!(definition_sha256(&c), want);
        assert_eq!(definition_sha256(&base()).len(), 64);
    }
}
