//! Which recognizers can match a text at all, read from one pass over it.
//!
//! Every pattern of the table used to scan the whole text: 300-odd lazy-DFA passes per note,
//! most finding nothing, and on a GPU host the recognize stage bounded throughput. At load time
//! each regex's syntax tree gives a set of literals one of which every match must contain
//! ("mrn", "medical record" for an MRN cue; "hospital", "clinic"… for a facility); one
//! Aho-Corasick pass over the text finds which literals occur, and a pattern none of whose
//! literals occurs is not run. Patterns with no such literal (a capitalised word pair) always
//! run. The literals are kept in ASCII lower case and searched ASCII-case-insensitively, which
//! can only let more patterns run, never fewer; other characters are matched as written, each
//! case variant a case-insensitive class allows being its own literal.

use std::collections::{BTreeSet, HashMap};

use aho_corasick::{AhoCorasick, MatchKind};
use regex_syntax::hir::{Class, Hir, HirKind};

/// Most strings one set may hold: beyond it the set is given up (case variants and
/// alternations multiply quickly).
const MAX_SET: usize = 64;
/// Most characters a class may hold to be read as alternative one-character literals.
const MAX_CLASS: usize = 10;
/// Shortest literal worth a lookup: one- and two-byte literals ("a", ":", "dr") occur in
/// nearly every note and would only cost the pass time.
const MIN_LITERAL: usize = 3;

/// A set of byte strings in ASCII lower case.
type Set = BTreeSet<Vec<u8>>;

/// What a piece of a regex says about the strings it matches.
#[derive(Debug, Default)]
struct Info {
    /// The piece never takes part in a match that counts (a `veto` group).
    never: bool,
    /// Every string the piece can match, when there are few (`""` among them when it can match
    /// the empty string).
    exact: Option<Set>,
    /// Literals one of which every match contains, when known.
    required: Option<Set>,
}

impl Info {
    fn exact(set: Set) -> Self {
        let required = usable(&set).then(|| set.clone());
        Info {
            never: false,
            exact: Some(set),
            required,
        }
    }

    fn never() -> Self {
        Info {
            never: true,
            ..Info::default()
        }
    }
}

/// A set is a requirement only when none of its strings is empty.
fn usable(set: &Set) -> bool {
    !set.is_empty() && set.iter().all(|s| !s.is_empty())
}

/// How much a requirement narrows the search: longer shortest literal first, fewer literals
/// next.
fn quality(set: &Set) -> (usize, std::cmp::Reverse<usize>) {
    let shortest = set.iter().map(Vec::len).min().unwrap_or(0);
    (shortest.min(8), std::cmp::Reverse(set.len()))
}

fn better(a: Option<Set>, b: Option<Set>) -> Option<Set> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if quality(&b) > quality(&a) { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// Every concatenation of a string of `a` with one of `b`, unless there would be too many.
fn product(a: &Set, b: &Set) -> Option<Set> {
    if a.len().saturating_mul(b.len()) > MAX_SET {
        return None;
    }
    Some(
        a.iter()
            .flat_map(|x| {
                b.iter().map(move |y| {
                    let mut s = x.clone();
                    s.extend_from_slice(y);
                    s
                })
            })
            .collect(),
    )
}

/// The characters of a small class as one-character strings, ASCII letters lower-cased (so
/// `[Aa]` is one string; a class of more than twice [`MAX_CLASS`] characters is not read).
fn class_strings(class: &Class) -> Option<Set> {
    let mut out = Set::new();
    match class {
        Class::Unicode(c) => {
            for r in c.ranges() {
                let n = (r.end() as u32 - r.start() as u32) as usize + 1;
                if out.len() + n > MAX_CLASS * 2 {
                    return None;
                }
                for c in r.start()..=r.end() {
                    let mut buf = [0u8; 4];
                    let s = c.to_ascii_lowercase().encode_utf8(&mut buf);
                    out.insert(s.as_bytes().to_vec());
                }
            }
        }
        Class::Bytes(c) => {
            for r in c.ranges() {
                if out.len() + (r.end() - r.start()) as usize + 1 > MAX_CLASS * 2 {
                    return None;
                }
                for b in r.start()..=r.end() {
                    out.insert(vec![b.to_ascii_lowercase()]);
                }
            }
        }
    }
    (!out.is_empty() && out.len() <= MAX_CLASS).then_some(out)
}

fn info(hir: &Hir, vetoed: &dyn Fn(&str) -> bool) -> Info {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Info::exact(Set::from([Vec::new()])),
        HirKind::Literal(lit) => Info::exact(Set::from([lit.0.to_ascii_lowercase()])),
        HirKind::Class(class) => match class_strings(class) {
            Some(set) => Info::exact(set),
            None => Info::default(),
        },
        HirKind::Capture(c) if c.name.as_deref().is_some_and(vetoed) => Info::never(),
        HirKind::Capture(c) => info(&c.sub, vetoed),
        HirKind::Repetition(rep) => {
            let sub = info(&rep.sub, vetoed);
            if sub.never {
                return if rep.min == 0 {
                    Info::exact(Set::from([Vec::new()]))
                } else {
                    Info::never()
                };
            }
            if rep.min == 0 {
                // Optional: the piece may be absent, so it requires nothing.
                let exact = match (&sub.exact, rep.max) {
                    (Some(e), Some(1)) => {
                        let mut e = e.clone();
                        e.insert(Vec::new());
                        Some(e)
                    }
                    _ => None,
                };
                return Info {
                    exact,
                    ..Info::default()
                };
            }
            let exact = match (&sub.exact, rep.max) {
                (Some(e), Some(max)) if max == rep.min && max <= 4 => {
                    let mut acc = Some(Set::from([Vec::new()]));
                    for _ in 0..max {
                        acc = acc.and_then(|a| product(&a, e));
                    }
                    acc
                }
                _ => None,
            };
            match exact {
                Some(e) => {
                    let mut i = Info::exact(e);
                    i.required = better(i.required, sub.required);
                    i
                }
                None => Info {
                    required: sub.required,
                    ..Info::default()
                },
            }
        }
        HirKind::Concat(parts) => {
            let mut best: Option<Set> = None;
            // The run of consecutive exact pieces, multiplied out.
            let mut run: Option<Set> = Some(Set::from([Vec::new()]));
            let mut whole_exact = true;
            for part in parts {
                let i = info(part, vetoed);
                if i.never {
                    return Info::never();
                }
                best = better(best, i.required.clone());
                match (&run, &i.exact) {
                    (Some(r), Some(e)) => match product(r, e) {
                        Some(p) => run = Some(p),
                        None => {
                            whole_exact = false;
                            best = better(best, run.take().filter(usable));
                            run = Some(e.clone());
                        }
                    },
                    (_, Some(e)) => run = Some(e.clone()),
                    (_, None) => {
                        whole_exact = false;
                        best = better(best, run.take().filter(usable));
                    }
                }
            }
            if whole_exact && let Some(r) = run {
                let mut i = Info::exact(r);
                i.required = better(i.required, best);
                return i;
            }
            Info {
                required: better(best, run.filter(usable)),
                ..Info::default()
            }
        }
        HirKind::Alternation(branches) => {
            let infos: Vec<Info> = branches
                .iter()
                .map(|b| info(b, vetoed))
                .filter(|i| !i.never)
                .collect();
            if infos.is_empty() {
                return Info::never();
            }
            let exact = infos.iter().try_fold(Set::new(), |mut acc, i| {
                acc.extend(i.exact.as_ref()?.iter().cloned());
                (acc.len() <= MAX_SET).then_some(acc)
            });
            let required = infos.iter().try_fold(Set::new(), |mut acc, i| {
                acc.extend(i.required.as_ref()?.iter().cloned());
                Some(acc)
            });
            match exact {
                Some(e) => {
                    let mut i = Info::exact(e);
                    i.required = better(i.required, required);
                    i
                }
                None => Info {
                    required,
                    ..Info::default()
                },
            }
        }
    }
}

/// Literals one of which every match of `regex` that counts contains, each at least
/// [`MIN_LITERAL`] bytes: a match in which a group `vetoed` names takes part does not count.
/// `None` when there is no such set (or the regex does not parse here, which the caller's
/// `Regex::new` reports).
pub fn required_literals(regex: &str, vetoed: &dyn Fn(&str) -> bool) -> Option<Vec<Vec<u8>>> {
    let hir = regex_syntax::parse(regex).ok()?;
    let set = info(&hir, vetoed).required?;
    set.iter()
        .all(|s| s.len() >= MIN_LITERAL)
        .then(|| set.into_iter().collect())
}

/// The literals of a whole table and, per pattern, the ones it needs.
#[derive(Debug)]
pub struct Prefilter {
    /// Every pattern's literals, each once; `None` when no pattern has any.
    searcher: Option<AhoCorasick>,
    /// Per pattern, in table order: the literal ids one of which must occur, or `None` for a
    /// pattern that always runs.
    needs: Vec<Option<Box<[u32]>>>,
}

/// The literals found in one text.
pub struct Seen<'a> {
    prefilter: &'a Prefilter,
    found: Vec<bool>,
}

impl Seen<'_> {
    /// Whether pattern `i` (in table order) can match the text.
    pub fn may_match(&self, i: usize) -> bool {
        match self.prefilter.needs.get(i) {
            Some(Some(ids)) => ids.iter().any(|&id| self.found[id as usize]),
            _ => true,
        }
    }
}

impl Prefilter {
    /// The prefilter for the regexes of a table, in its order; a match in which a group
    /// `vetoed` names takes part finds nothing.
    pub fn new<'a>(
        regexes: impl IntoIterator<Item = &'a str>,
        vetoed: &dyn Fn(&str) -> bool,
    ) -> Self {
        let mut ids: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut needs = Vec::new();
        for regex in regexes {
            needs.push(required_literals(regex, vetoed).map(|lits| {
                lits.into_iter()
                    .map(|l| {
                        let next = ids.len() as u32;
                        *ids.entry(l).or_insert(next)
                    })
                    .collect()
            }));
        }
        let mut literals: Vec<(u32, Vec<u8>)> = ids.into_iter().map(|(l, i)| (i, l)).collect();
        literals.sort();
        let searcher = (!literals.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::Standard)
                    .build(literals.iter().map(|(_, l)| l))
                    .ok()
            })
            .flatten();
        if searcher.is_none() {
            // Without a searcher every pattern runs (the literals' automaton failed to build).
            needs.iter_mut().for_each(|n| *n = None);
        }
        Self { searcher, needs }
    }

    /// One pass over `text`: which literals occur in it.
    pub fn scan(&self, text: &str) -> Seen<'_> {
        // Without a searcher no pattern needs a literal, so nothing is looked up.
        let mut found = Vec::new();
        if let Some(ac) = &self.searcher {
            found.resize(ac.patterns_len(), false);
            for m in ac.find_overlapping_iter(text) {
                found[m.pattern().as_usize()] = true;
            }
        }
        Seen {
            prefilter: self,
            found,
        }
    }

    /// How many patterns have literals to be gated by.
    #[cfg(test)]
    fn gated(&self) -> usize {
        self.needs.iter().filter(|n| n.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(regex: &str) -> Option<Vec<String>> {
        required_literals(regex, &|g| g.starts_with("veto")).map(|v| {
            v.into_iter()
                .map(|s| String::from_utf8(s).unwrap())
                .collect()
        })
    }

    #[test]
    fn literals_every_match_needs() {
        assert_eq!(
            lits(r"(?i)\b(?:mrn|medical record)\s*:?\s*(?P<id>\d{6,})"),
            Some(vec!["medical record".into(), "mrn".into()])
        );
        assert_eq!(
            lits(r"\b[A-Z][a-z]+ Hospital\b"),
            Some(vec![" hospital".into()])
        );
        assert_eq!(
            lits(r"Dr\.?\s+[A-Z]\w+"),
            None,
            "\"dr\" is too short to be worth a lookup"
        );
        assert_eq!(lits(r"\b[A-Z][a-z]+\s+[A-Z][a-z]+\b"), None);
        assert_eq!(lits(r"(?:abc)?def"), Some(vec!["def".into()]));
        assert_eq!(
            lits(r"x(?:abc|de)"),
            Some(vec!["xabc".into(), "xde".into()])
        );
        assert_eq!(lits(r"abc|\d+"), None, "one branch needs no literal");
        assert_eq!(lits(r"(?:room|rm)\s*\d+"), None, "\"rm\" is too short");
        // Case-insensitive letters fold to ASCII lower case; the Kelvin sign a case-insensitive
        // "k" also matches is kept as written.
        let k = lits(r"(?i)kin").unwrap();
        assert!(k.contains(&"kin".to_string()) && k.contains(&"\u{212A}in".to_string()));
    }

    #[test]
    fn a_pattern_runs_when_one_of_its_literals_occurs_in_any_case() {
        let p = Prefilter::new(
            [r"(?i)\bmrn:\s*\d+", r"\d{3}-\d{4}", r"Ward\s+\d+"],
            &|_| false,
        );
        assert_eq!(p.gated(), 2);
        let seen = p.scan("MRN: 123 and 555-1234");
        assert!(seen.may_match(0) && seen.may_match(1) && !seen.may_match(2));
        let seen = p.scan("ward 4");
        assert!(!seen.may_match(0) && seen.may_match(1) && seen.may_match(2));
    }
}
