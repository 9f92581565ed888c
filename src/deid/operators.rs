//! Operators: rewrite the text, span by span, as the method and policy say.
//!
//! mask `[LABEL]` · remove · replace (surrogates of the same kind and shape, one per original) ·
//! hash (`LABEL_<hex>`, keyed HMAC-SHA256, never unkeyed) · shift_dates (one offset per request,
//! input format kept, other spans masked) · and the policy generalizations (keep, year, zip3,
//! age over 89). Every keyed choice uses one key: the configured secret (stable across requests)
//! or a random one per request.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use super::dates;
use super::labels::CanonicalLabel;
use super::policy::{Action, Method, Policy};
use super::surrogates::{SeedRng, surrogate};

/// The key behind hashes, surrogates and date surrogates.
#[derive(Clone)]
pub struct Key(Vec<u8>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    pub fn from_secret(secret: &[u8]) -> Self {
        Self(secret.to_vec())
    }

    /// A fresh random key: results link within one request only.
    pub fn random() -> Result<Self, getrandom::Error> {
        let mut k = vec![0u8; 32];
        getrandom::fill(&mut k)?;
        Ok(Self(k))
    }

    /// A subject's date shift (non-zero, -365..=365 days): a keyed HMAC of its id, so every
    /// run and every machine with the same key shifts that subject's dates alike.
    pub fn subject_shift_days(&self, subject: &str) -> i64 {
        let m = self.mac(&["date-shift", subject]);
        let mut b = [0u8; 8];
        b.copy_from_slice(&m[..8]);
        offset_from(u64::from_le_bytes(b))
    }

    fn mac(&self, parts: &[&str]) -> [u8; 32] {
        let mut m =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        for p in parts {
            m.update(p.as_bytes());
            m.update(&[0]);
        }
        m.finalize().into_bytes().into()
    }
}

/// A random non-zero day offset in -365..=365 (a zero shift would leave dates intact).
pub fn random_shift_days() -> Result<i64, getrandom::Error> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b)?;
    Ok(offset_from(u64::from_le_bytes(b)))
}

fn offset_from(r: u64) -> i64 {
    let k = (r % 730) as i64; // 0..730 → -365..=-1, 1..=365
    if k < 365 { k - 365 } else { k - 364 }
}

/// Everything the operators need for one request.
#[derive(Debug, Clone)]
pub struct Plan {
    pub method: Method,
    pub policy: Option<Arc<Policy>>,
    pub keep_mapping: bool,
    pub keep_year: bool,
    /// The offset used by `shift_dates`.
    pub shift_days: i64,
    /// Read ambiguous numeric dates day first (from the request's language).
    pub day_first: bool,
    pub key: Key,
}

/// What was done to one span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Applied {
    Mask,
    Remove,
    Replace,
    Hash,
    ShiftDates,
    Keep,
    Year,
    Zip3,
    #[serde(rename = "age_over_89")]
    AgeOver89,
}

/// One span to rewrite: byte offsets into the original, non-overlapping, in order.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub start: usize,
    pub end: usize,
    pub label: CanonicalLabel,
}

/// The outcome for one span; offsets are bytes into the de-identified text.
#[derive(Clone, Debug)]
pub struct Redaction {
    pub action: Applied,
    /// What now stands in the text (None when the span was kept).
    pub replacement: Option<String>,
    pub out_start: usize,
    pub out_end: usize,
}

/// A replacement maps back to one original, or to several when a generalization (a year, a
/// ZIP prefix, "90+") merged them.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Original {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug)]
pub struct Outcome {
    pub text: String,
    pub redactions: Vec<Redaction>,
    pub mapping: Option<BTreeMap<String, Original>>,
}

/// Rewrites `text`. Targets must be sorted and non-overlapping (the recognize stage ensures it).
pub fn apply(text: &str, targets: &[Target], plan: &Plan) -> Outcome {
    let mut r = Rewriter::new(plan);
    let mut redactions = Vec::with_capacity(targets.len());
    let text = r.push(text, targets, &mut redactions);
    Outcome {
        text,
        redactions,
        mapping: r.finish(),
    }
}

/// Rewrites a text piece by piece, in order, with the state of one request (numbering,
/// one replacement per original, the mapping): pushing a text in pieces gives exactly what
/// `apply` gives for the whole, which is what lets de-identification stream.
pub struct Rewriter<'p> {
    st: State<'p>,
    /// Bytes written so far.
    out_len: usize,
}

impl<'p> Rewriter<'p> {
    pub fn new(plan: &'p Plan) -> Self {
        Self {
            st: State::new(plan),
            out_len: 0,
        }
    }

    /// Rewrites the next piece. `targets` are byte offsets into `piece`, sorted and disjoint;
    /// the redactions' output offsets count from the start of the whole output.
    pub fn push(
        &mut self,
        piece: &str,
        targets: &[Target],
        redactions: &mut Vec<Redaction>,
    ) -> String {
        let mut out = String::with_capacity(piece.len());
        let mut at = 0;
        for t in targets {
            let start = t.start.max(at).min(piece.len());
            let end = t.end.clamp(start, piece.len());
            out.push_str(&piece[at..start]);
            let original = &piece[start..end];
            let (action, replacement) = self.st.rewrite(original, t.label);
            let out_start = self.out_len + out.len();
            match &replacement {
                Some(r) => out.push_str(r),
                None => out.push_str(original),
            }
            if action != Applied::Keep
                && let (true, Some(r)) = (self.st.plan.keep_mapping, &replacement)
            {
                self.st.record(r, original);
            }
            redactions.push(Redaction {
                action,
                replacement,
                out_start,
                out_end: self.out_len + out.len(),
            });
            at = end;
        }
        out.push_str(&piece[at..]);
        self.out_len += out.len();
        out
    }

    /// The mapping, when the plan keeps one.
    pub fn finish(self) -> Option<BTreeMap<String, Original>> {
        self.st.plan.keep_mapping.then_some(self.st.mapping)
    }
}

struct State<'p> {
    plan: &'p Plan,
    /// (label, original) → replacement: one original, one replacement.
    seen: HashMap<(&'static str, String), String>,
    /// Placeholders handed out per label, for numbering.
    numbered: HashMap<String, usize>,
    /// Replacements in use → the original they stand for (surrogate collisions are redrawn).
    taken: HashMap<String, String>,
    mapping: BTreeMap<String, Original>,
}

impl<'p> State<'p> {
    fn new(plan: &'p Plan) -> Self {
        Self {
            plan,
            seen: HashMap::new(),
            numbered: HashMap::new(),
            taken: HashMap::new(),
            mapping: BTreeMap::new(),
        }
    }

    fn action(&self, label: CanonicalLabel) -> Action {
        self.plan
            .policy
            .as_ref()
            .map_or(Action::Method, |p| p.action(label.name))
    }

    fn rewrite(&mut self, original: &str, label: CanonicalLabel) -> (Applied, Option<String>) {
        let action = match self.action(label) {
            Action::Method => match self.plan.method {
                Method::Mask => Action::Mask,
                Method::Remove => Action::Remove,
                Method::Replace => Action::Replace,
                Method::Hash => Action::Hash,
                Method::ShiftDates => return self.shift_dates(original, label),
            },
            a => a,
        };
        match action {
            Action::Keep => (Applied::Keep, None),
            Action::Mask | Action::Method => self.mask(original, label),
            Action::Remove => self.remove(original, label),
            Action::Replace => self.replace(original, label),
            Action::Hash => self.hash(original, label),
            Action::Year => {
                let year = dates::parse_date(original, self.plan.day_first)
                    .and_then(|d| d.year())
                    .and_then(|y| y.parse().ok())
                    .or_else(|| bare_year(original));
                match year {
                    Some(y) => year_or_older(y),
                    None => self.mask(original, label),
                }
            }
            Action::Zip3 => self.zip3(original, label),
            // Whole or decimal years ("1.5"); anything else is masked.
            Action::AgeOver89 => match original.trim().parse::<f64>() {
                Ok(a) if (0.0..90.0).contains(&a) => (Applied::Keep, None),
                Ok(a) if a >= 90.0 => (Applied::AgeOver89, Some("90+".into())),
                _ => self.mask(original, label),
            },
        }
    }

    /// `[LABEL]`; with a mapping, distinct originals of one label are numbered in text order.
    fn mask(&mut self, original: &str, label: CanonicalLabel) -> (Applied, Option<String>) {
        (Applied::Mask, Some(self.placeholder(original, label, "")))
    }

    /// Nothing; with a mapping, a numbered `[LABEL_REMOVED]` so the text can be restored.
    fn remove(&mut self, original: &str, label: CanonicalLabel) -> (Applied, Option<String>) {
        if self.plan.keep_mapping {
            (
                Applied::Remove,
                Some(self.placeholder(original, label, "_REMOVED")),
            )
        } else {
            (Applied::Remove, Some(String::new()))
        }
    }

    fn placeholder(&mut self, original: &str, label: CanonicalLabel, suffix: &str) -> String {
        if !self.plan.keep_mapping {
            return format!("[{}{suffix}]", label.name);
        }
        let key = (label.name, format!("{suffix}\0{original}"));
        if let Some(p) = self.seen.get(&key) {
            return p.clone();
        }
        let n = self
            .numbered
            .entry(format!("{}{suffix}", label.name))
            .or_insert(0);
        *n += 1;
        let p = if *n == 1 {
            format!("[{}{suffix}]", label.name)
        } else {
            format!("[{}{suffix}_{n}]", label.name)
        };
        self.seen.insert(key, p.clone());
        p
    }

    /// The identity of an original for consistency: case and surrounding space do not matter.
    fn norm(original: &str) -> String {
        original.trim().to_lowercase()
    }

    fn replace(&mut self, original: &str, label: CanonicalLabel) -> (Applied, Option<String>) {
        let norm = Self::norm(original);
        if let Some(r) = self.seen.get(&(label.name, norm.clone())) {
            return (Applied::Replace, Some(r.clone()));
        }
        for attempt in 0..16u32 {
            let n = attempt.to_string();
            let seed = self.plan.key.mac(&["surrogate", label.name, &norm, &n]);
            let candidate = if label.name == "DATE" {
                let days = offset_from(u64::from_le_bytes(first8(&seed)));
                dates::parse_date(original, self.plan.day_first).map(|d| d.shifted(days, false))
            } else {
                surrogate(label.name, original, &mut SeedRng::new(seed))
            };
            let Some(c) = candidate else {
                return self.mask(original, label);
            };
            let clash = self.taken.get(&c).is_some_and(|o| Self::norm(o) != norm);
            if !clash && Self::norm(&c) != norm {
                self.taken.insert(c.clone(), original.to_string());
                self.seen.insert((label.name, norm), c.clone());
                return (Applied::Replace, Some(c));
            }
        }
        self.mask(original, label)
    }

    fn hash(&mut self, original: &str, label: CanonicalLabel) -> (Applied, Option<String>) {
        let mac = self
            .plan
            .key
            .mac(&["hash", label.name, &Self::norm(original)]);
        let hex: String = mac[..8].iter().map(|b| format!("{b:02x}")).collect();
        (Applied::Hash, Some(format!("{}_{hex}", label.name)))
    }

    fn shift_dates(&mut self, original: &str, label: CanonicalLabel) -> (Applied, Option<String>) {
        if label.name == "DATE"
            && let Some(d) = dates::parse_date(original, self.plan.day_first)
        {
            return (
                Applied::ShiftDates,
                Some(d.shifted(self.plan.shift_days, self.plan.keep_year)),
            );
        }
        self.mask(original, label)
    }

    /// The first three digits of a US ZIP code ("02139" or "02139-4307"); anything else the
    /// model called a ZIP (a year, a foreign postcode, a code) is masked whole, since keeping
    /// three of its digits would keep part of an identifier.
    fn zip3(&mut self, original: &str, label: CanonicalLabel) -> (Applied, Option<String>) {
        let zip = original.trim();
        let bytes = zip.as_bytes();
        let us_zip = bytes.len() >= 5
            && bytes[..5].iter().all(u8::is_ascii_digit)
            && (bytes.len() == 5
                || (bytes.len() == 10
                    && bytes[5] == b'-'
                    && bytes[6..].iter().all(u8::is_ascii_digit)));
        if !us_zip {
            return self.mask(original, label);
        }
        let digits = zip[..3].to_string();
        let restricted = self
            .plan
            .policy
            .as_ref()
            .is_some_and(|p| p.zip3_restricted(&digits));
        let zip3 = if restricted {
            "000".to_string()
        } else {
            digits
        };
        (Applied::Zip3, Some(zip3))
    }

    fn record(&mut self, replacement: &str, original: &str) {
        match self.mapping.get_mut(replacement) {
            None => {
                self.mapping
                    .insert(replacement.to_string(), Original::One(original.to_string()));
            }
            Some(Original::One(o)) if o != original => {
                let first = std::mem::take(o);
                self.mapping.insert(
                    replacement.to_string(),
                    Original::Many(vec![first, original.to_string()]),
                );
            }
            Some(Original::Many(v)) if !v.iter().any(|o| o == original) => {
                v.push(original.to_string());
            }
            _ => {}
        }
    }
}

fn first8(b: &[u8; 32]) -> [u8; 8] {
    let mut out = [0u8; 8];
    out.copy_from_slice(&b[..8]);
    out
}

/// A year written alone ("born in 1931"), four digits.
fn bare_year(original: &str) -> Option<i32> {
    let t = original.trim();
    (t.len() == 4 && t.bytes().all(|b| b.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten()
}

/// A date reduced to its year, unless that year shows an age over 89 (HIPAA Safe Harbor
/// §164.514(b)(2)(i)(C): such dates, year included, join one category): a year 90 or more
/// before the current one becomes `"<that year> or earlier"`, the same for every such year.
fn year_or_older(year: i32) -> (Applied, Option<String>) {
    use chrono::Datelike;
    let oldest = chrono::Utc::now().year() - 90;
    if year <= oldest {
        (Applied::AgeOver89, Some(format!("{oldest} or earlier")))
    } else {
        (Applied::Year, Some(format!("{year:04}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deid::canonical_label;
    use crate::deid::policy::Policies;

    fn plan(method: Method) -> Plan {
        Plan {
            method,
            policy: None,
            keep_mapping: false,
            keep_year: false,
            shift_days: 30,
            day_first: false,
            key: Key::from_secret(b"test key"),
        }
    }

    /// Runs the operators over `text` with the given (substring, label) targets.
    fn run(text: &str, targets: &[(&str, &str)], plan: &Plan) -> Outcome {
        let mut ts = Vec::new();
        let mut from = 0;
        for (s, l) in targets {
            let i = from + text[from..].find(s).expect("target in text");
            ts.push(Target {
                start: i,
                end: i + s.len(),
                label: canonical_label(l),
            });
            from = i + s.len();
        }
        apply(text, &ts, plan)
    }

    const NOTE: &str = "Ann Lee (DOB 03/15/1950) called 617-555-0143; Ann again.";
    const TARGETS: &[(&str, &str)] = &[
        ("Ann", "FIRST_NAME"),
        ("Lee", "LAST_NAME"),
        ("03/15/1950", "DATE"),
        ("617-555-0143", "PHONE"),
        ("Ann", "FIRST_NAME"),
    ];

    #[test]
    fn rewriting_in_pieces_equals_rewriting_whole() {
        let mut p = plan(Method::Replace);
        p.keep_mapping = true;
        let whole = run(NOTE, TARGETS, &p);
        let all = {
            let mut ts = Vec::new();
            let mut from = 0;
            for (s, l) in TARGETS {
                let i = from + NOTE[from..].find(s).expect("target");
                ts.push(Target {
                    start: i,
                    end: i + s.len(),
                    label: canonical_label(l),
                });
                from = i + s.len();
            }
            ts
        };
        for cut in [0, 8, 25, NOTE.len()] {
            let mut r = Rewriter::new(&p);
            let mut reds = Vec::new();
            let (a, b): (Vec<Target>, Vec<Target>) = all.iter().partition(|t| t.end <= cut);
            let b: Vec<Target> = b
                .into_iter()
                .map(|t| Target {
                    start: t.start - cut,
                    end: t.end - cut,
                    ..t
                })
                .collect();
            let text = r.push(&NOTE[..cut], &a, &mut reds) + &r.push(&NOTE[cut..], &b, &mut reds);
            assert_eq!(text, whole.text, "cut at {cut}");
            assert_eq!(r.finish(), whole.mapping);
            let spans: Vec<(usize, usize)> =
                reds.iter().map(|r| (r.out_start, r.out_end)).collect();
            let expected: Vec<(usize, usize)> = whole
                .redactions
                .iter()
                .map(|r| (r.out_start, r.out_end))
                .collect();
            assert_eq!(spans, expected);
        }
    }

    #[test]
    fn mask_and_numbered_mapping() {
        let o = run(NOTE, TARGETS, &plan(Method::Mask));
        assert_eq!(
            o.text,
            "[FIRST_NAME] [LAST_NAME] (DOB [DATE]) called [PHONE]; [FIRST_NAME] again."
        );
        assert!(o.mapping.is_none());
        let mut p = plan(Method::Mask);
        p.keep_mapping = true;
        let o = run(
            "Ann met Bob and Ann",
            &[
                ("Ann", "FIRST_NAME"),
                ("Bob", "FIRST_NAME"),
                ("Ann", "FIRST_NAME"),
            ],
            &p,
        );
        assert_eq!(o.text, "[FIRST_NAME] met [FIRST_NAME_2] and [FIRST_NAME]");
        let m = o.mapping.expect("mapping");
        assert_eq!(m["[FIRST_NAME]"], Original::One("Ann".into()));
        assert_eq!(m["[FIRST_NAME_2]"], Original::One("Bob".into()));
    }

    #[test]
    fn remove_and_its_reversible_form() {
        let o = run(NOTE, TARGETS, &plan(Method::Remove));
        assert_eq!(o.text, "  (DOB ) called ;  again.");
        let mut p = plan(Method::Remove);
        p.keep_mapping = true;
        let o = run(NOTE, TARGETS, &p);
        assert!(
            o.text
                .starts_with("[FIRST_NAME_REMOVED] [LAST_NAME_REMOVED]"),
            "{}",
            o.text
        );
    }

    #[test]
    fn replace_is_consistent_keyed_and_shaped() {
        let p = plan(Method::Replace);
        let a = run(NOTE, TARGETS, &p);
        let b = run(NOTE, TARGETS, &p);
        assert_eq!(a.text, b.text, "same key, same surrogates");
        let r = |o: &Outcome, i: usize| o.redactions[i].replacement.clone().expect("replaced");
        assert_eq!(r(&a, 0), r(&a, 4), "same original, same surrogate");
        assert_ne!(r(&a, 0), "Ann");
        let date = r(&a, 2);
        assert!(
            dates::parse_date(&date, false).is_some() && date.len() == 10,
            "{date}"
        );
        assert_ne!(date, "03/15/1950");
        let phone = r(&a, 3);
        assert_eq!(phone.len(), 12, "{phone}");
        assert_eq!(phone.chars().filter(|c| *c == '-').count(), 2);
        let mut other = plan(Method::Replace);
        other.key = Key::from_secret(b"another key");
        assert_ne!(
            run(NOTE, TARGETS, &other).text,
            a.text,
            "a different key, different surrogates"
        );
    }

    #[test]
    fn hash_is_keyed() {
        let o = run(NOTE, TARGETS, &plan(Method::Hash));
        let h = o.redactions[0].replacement.clone().expect("hash");
        assert!(
            h.starts_with("FIRST_NAME_") && h.len() == "FIRST_NAME_".len() + 16,
            "{h}"
        );
        assert_eq!(o.redactions[4].replacement.as_deref(), Some(h.as_str()));
        let mut other = plan(Method::Hash);
        other.key = Key::from_secret(b"another key");
        let h2 = run(NOTE, TARGETS, &other).redactions[0].replacement.clone();
        assert_ne!(h2.as_deref(), Some(h.as_str()));
    }

    #[test]
    fn shift_dates_keeps_the_format_and_masks_the_rest() {
        let o = run(NOTE, TARGETS, &plan(Method::ShiftDates));
        assert_eq!(
            o.text,
            "[FIRST_NAME] [LAST_NAME] (DOB 04/14/1950) called [PHONE]; [FIRST_NAME] again."
        );
        assert_eq!(o.redactions[2].action, Applied::ShiftDates);
        let mut p = plan(Method::ShiftDates);
        p.shift_days = 20;
        p.keep_year = true;
        let o = run("seen 2021-12-25", &[("2021-12-25", "DATE")], &p);
        assert_eq!(o.text, "seen 2021-01-14");
        let o = run("seen last spring", &[("last spring", "DATE")], &p);
        assert_eq!(o.text, "seen [DATE]");
    }

    #[test]
    fn safe_harbor_generalizations() {
        let policies = Policies::builtin().expect("policies");
        let mut p = plan(Method::Mask);
        p.policy = policies.get("hipaa_safe_harbor");
        let o = run(
            "92 and 45 y/o, seen 03/15/2021, ZIP 02139 and 03601, Texas",
            &[
                ("92", "AGE"),
                ("45", "AGE"),
                ("03/15/2021", "DATE"),
                ("02139", "ZIP_CODE"),
                ("03601", "ZIP_CODE"),
                ("Texas", "STATE"),
            ],
            &p,
        );
        assert_eq!(o.text, "90+ and 45 y/o, seen 2021, ZIP 021 and 000, Texas");
        let actions: Vec<_> = o.redactions.iter().map(|r| r.action).collect();
        assert_eq!(
            actions,
            [
                Applied::AgeOver89,
                Applied::Keep,
                Applied::Year,
                Applied::Zip3,
                Applied::Zip3,
                Applied::Keep
            ]
        );
        // Infants' ages come with a decimal.
        let o = run(
            "a 1.5 year old and a 92.5 year old",
            &[("1.5", "AGE"), ("92.5", "AGE")],
            &p,
        );
        assert_eq!(o.text, "a 1.5 year old and a 90+ year old");
    }

    #[test]
    fn a_phone_surrogate_never_keeps_the_line_number() {
        // One draw in a hundred lands on the original's line without the check; 300 keys make
        // that all but certain to happen at least once.
        for k in 0..300u32 {
            let mut p = plan(Method::Replace);
            p.key = Key::from_secret(format!("key {k}").as_bytes());
            let o = run(
                "Call (617) 555-0143 now",
                &[("(617) 555-0143", "PHONE")],
                &p,
            );
            assert!(!o.text.contains("0143"), "key {k}: {}", o.text);
        }
    }

    #[test]
    fn only_a_us_zip_keeps_three_digits() {
        let policies = Policies::builtin().expect("policies");
        let mut p = plan(Method::Mask);
        p.policy = policies.get("hipaa_safe_harbor");
        let o = run(
            "02139-4307, 1015 CJ, 2089, 6612",
            &[
                ("02139-4307", "ZIP_CODE"),
                ("1015 CJ", "ZIP_CODE"),
                ("2089", "ZIP_CODE"),
                ("6612", "ZIP_CODE"),
            ],
            &p,
        );
        assert_eq!(o.text, "021, [ZIP_CODE], [ZIP_CODE], [ZIP_CODE]");
    }

    #[test]
    fn years_showing_an_age_over_89_join_one_category() {
        use chrono::Datelike;
        let policies = Policies::builtin().expect("policies");
        let mut p = plan(Method::Mask);
        p.policy = policies.get("hipaa_safe_harbor");
        let oldest = chrono::Utc::now().year() - 90;
        let (old, older, young) = (oldest, oldest - 7, oldest + 1);
        let text = format!("DOB 03/15/{older}, born in {old}, born in {young}");
        let o = run(
            &text,
            &[
                (&format!("03/15/{older}"), "DATE"),
                (&old.to_string(), "DATE"),
                (&young.to_string(), "DATE"),
            ],
            &p,
        );
        assert_eq!(
            o.text,
            format!("DOB {oldest} or earlier, born in {oldest} or earlier, born in {young}")
        );
        let actions: Vec<_> = o.redactions.iter().map(|r| r.action).collect();
        assert_eq!(
            actions,
            [Applied::AgeOver89, Applied::AgeOver89, Applied::Year]
        );
    }

    #[test]
    fn generalized_mapping_lists_every_original() {
        let policies = Policies::builtin().expect("policies");
        let mut p = plan(Method::Mask);
        p.policy = policies.get("hipaa_safe_harbor");
        p.keep_mapping = true;
        let o = run(
            "03/15/2021 and 04/01/2021",
            &[("03/15/2021", "DATE"), ("04/01/2021", "DATE")],
            &p,
        );
        assert_eq!(
            o.mapping.expect("mapping")["2021"],
            Original::Many(vec!["03/15/2021".into(), "04/01/2021".into()])
        );
    }

    #[test]
    fn output_offsets_point_at_replacements() {
        let o = run(NOTE, TARGETS, &plan(Method::Mask));
        for r in &o.redactions {
            assert_eq!(
                Some(&o.text[r.out_start..r.out_end]),
                r.replacement.as_deref()
            );
        }
    }

    #[test]
    fn random_offsets_are_never_zero() {
        for r in [0u64, 364, 365, 729, 730, u64::MAX] {
            let d = offset_from(r);
            assert!(d != 0 && (-365..=365).contains(&d), "{r} → {d}");
        }
    }
}
