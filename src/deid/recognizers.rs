//! Deterministic recognizers: one table of regex patterns with validators and context words,
//! loaded from `pipelines/recognizers/*.toml` and checked at start-up. They find what the model
//! does not know (dates, ages, record numbers…) and re-find what it misses.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use regex::Regex;
use serde::Deserialize;

use super::gazetteer::Gazetteer;
use super::labels;
use super::prefilter::Prefilter;
use super::regex_sets::RegexSets;
use super::script_places::ScriptPlaces;
use super::validators::Validator;

/// Why a recognizer file was refused.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct RecognizerError {
    pub file: String,
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    version: String,
    #[serde(default)]
    vars: BTreeMap<String, String>,
    /// Gazetteer name → file (relative to the working directory, else to the repository root
    /// above `pipelines/recognizers`), as written by scripts/fetch-assets.
    #[serde(default)]
    gazetteers: BTreeMap<String, String>,
    /// Short word lists written in the table itself, used like gazetteers (`gaz_<name>`,
    /// `nogaz_<name>`): a hash lookup after the match costs less than an alternation of the
    /// same words inside a regex, whose capture search runs on every match.
    #[serde(default)]
    word_lists: BTreeMap<String, Vec<String>>,
    /// Gazetteers that make a one-word name an ordinary word (see
    /// [`Recognizers::is_ordinary_word`]).
    ordinary_words: Option<OrdinaryWordsSpec>,
    /// What makes a text clinical, for patterns marked `clinical_only`.
    clinical_text: Option<ClinicalTextSpec>,
    /// Gazetteers of towns, for the stage rules that find a town by what stands around it (see
    /// [`Recognizers::is_listed_town`]).
    town_lists: Option<Vec<String>>,
    /// Places named in scripts other than Latin, found by a list rather than a pattern (see
    /// [`ScriptPlaces`]).
    script_places: Option<ScriptPlacesSpec>,
    #[serde(default)]
    pattern: Vec<PatternSpec>,
}

/// What a place found by [`ScriptPlaces`] is reported as: the gazetteer and a pattern's fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptPlacesSpec {
    id: String,
    list: String,
    label: String,
    score: f32,
    #[serde(default)]
    priority: i32,
}

/// A text is clinical when at least `min_cues` different words of `cues` occur in it as whole
/// words, in any case.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClinicalTextSpec {
    min_cues: usize,
    cues: Vec<String>,
}

/// [`ClinicalTextSpec`], loaded.
#[derive(Debug)]
struct ClinicalText {
    min_cues: usize,
    cues: HashSet<String>,
    /// The longest cue, in bytes: a longer word is no cue and is not lower-cased.
    longest: usize,
}

impl ClinicalText {
    fn holds(&self, text: &str) -> bool {
        let mut seen: Vec<&str> = Vec::with_capacity(self.min_cues);
        let mut word = String::new();
        for w in text.split(|c: char| !c.is_alphanumeric()) {
            if w.is_empty() || w.len() > self.longest {
                continue;
            }
            word.clear();
            word.extend(w.chars().flat_map(char::to_lowercase));
            if let Some(cue) = self.cues.get(word.as_str())
                && !seen.contains(&cue.as_str())
            {
                seen.push(cue);
                if seen.len() >= self.min_cues {
                    return true;
                }
            }
        }
        false
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OrdinaryWordsSpec {
    /// Word lists (English words, drug names).
    lists: Vec<String>,
    /// Name lists: a word listed there is never ordinary.
    unless: Vec<String>,
    /// Name lists that keep a name found by its context although all its words are in `lists`
    /// ("Will Baker" stays, "Vital Signs" does not).
    #[serde(default)]
    keep_phrases: Vec<String>,
}

/// The gazetteers [`Recognizers::is_ordinary_word`] reads.
#[derive(Debug, Default)]
struct OrdinaryWords {
    lists: Vec<Arc<Gazetteer>>,
    unless: Vec<Arc<Gazetteer>>,
    keep_phrases: Vec<Arc<Gazetteer>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatternSpec {
    id: String,
    label: String,
    regex: String,
    score: f32,
    #[serde(default)]
    priority: i32,
    validator: Option<Validator>,
    #[serde(default)]
    context: Vec<String>,
    #[serde(default)]
    context_boost: f32,
    #[serde(default)]
    requires_context: bool,
    context_chars: Option<usize>,
    #[serde(default)]
    merge_only: bool,
    #[serde(default)]
    labelled: bool,
    #[serde(default)]
    clinical_only: bool,
}

/// One pattern: what a match of its regex (at the same index in `Recognizers::regexes`) means.
#[derive(Debug)]
struct Pattern {
    id: Arc<str>,
    label: &'static str,
    score: f32,
    priority: i32,
    validator: Option<Validator>,
    context: Vec<String>,
    context_boost: f32,
    requires_context: bool,
    context_chars: usize,
    merge_only: bool,
    /// The match itself holds the label naming the identifier ("SSN: …").
    labelled: bool,
    /// Only searched in clinical text ([`ClinicalText`]): what it finds is an identifier in a
    /// note but mostly a public name elsewhere (a business named by its trade).
    clinical_only: bool,
    /// Capture groups whose name starts with `veto`: one taking part drops the match.
    vetoes: Vec<usize>,
    /// Capture groups named `gaz_<name>` with their gazetteer: each taking part must be
    /// listed there (its longest listed word prefix; the identifier is cut to match).
    gated: Vec<(usize, Arc<Gazetteer>)>,
    /// Capture groups named `gazx_<name>` with their gazetteer: each taking part must be
    /// listed whole ("Broken Arrow", never its first word alone).
    whole: Vec<(usize, Arc<Gazetteer>)>,
    /// Capture groups named `nogaz_<name>` with their gazetteer: one taking part whose text is
    /// listed there drops the match (a surname that is also an English word).
    excluded: Vec<(usize, Arc<Gazetteer>)>,
}

/// Score kept by a labelled value that fails a checksum or issuing-rule validator: the label
/// says what it is, the checksum only that it may be mistyped or invented.
const FAILED_CHECKSUM_FACTOR: f32 = 0.8;

/// One recognizer finding, in byte offsets of the text it was found in.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub start: usize,
    pub end: usize,
    /// A canonical label.
    pub label: &'static str,
    pub score: f32,
    pub pattern: Arc<str>,
    pub priority: i32,
    /// Only joins model fragments; never added on its own.
    pub merge_only: bool,
    /// The match holds the label or the title naming what it found ("SSN:", "Dr."): a name
    /// found so stands even when all its words are ordinary words ("Dr. Hall").
    pub labelled: bool,
}

/// The loaded pattern table.
#[derive(Debug)]
pub struct Recognizers {
    patterns: Vec<Pattern>,
    /// The patterns' regexes, in order, with match caches given back when the process is quiet.
    regexes: Arc<RegexSets>,
    /// Which patterns can match a text at all, from the literals their matches need.
    prefilter: Prefilter,
    /// The versions of the loaded files, joined: reported with sweep results.
    pub version: String,
    /// Patterns left out because a gazetteer they need is not installed (run
    /// scripts/fetch-assets), as `pattern id (gazetteer)`.
    pub inactive: Vec<String>,
    /// `None` when the table names none or a list it names is not installed.
    ordinary: Option<OrdinaryWords>,
    clinical: Option<ClinicalText>,
    /// Empty when the table names none or a list it names is not installed.
    towns: Vec<Arc<Gazetteer>>,
    /// `None` when the table names none or its list is not installed.
    script_places: Option<(ScriptPlaces, Finding)>,
}

const DEFAULT_CONTEXT_CHARS: usize = 40;

impl Recognizers {
    /// Loads every `*.toml` file of `dir`, in name order.
    pub fn load(dir: &Path) -> Result<Self, RecognizerError> {
        let root = dir.parent().and_then(Path::parent);
        let sources =
            crate::datafiles::read_toml_dir(dir, "recognizers").map_err(|e| RecognizerError {
                file: e.file,
                message: e.message,
            })?;
        if sources.is_empty() {
            return Err(RecognizerError {
                file: dir.display().to_string(),
                message: "no recognizer files (*.toml)".into(),
            });
        }
        Self::from_sources(&sources, |path| {
            let path = Path::new(path);
            let text = std::fs::read_to_string(path).or_else(|e| match root {
                Some(r) if path.is_relative() => std::fs::read_to_string(r.join(path)),
                _ => Err(e),
            });
            text.ok().map(|t| Gazetteer::from_lines(&t))
        })
        .inspect(|table| {
            if !table.inactive.is_empty() {
                tracing::warn!(
                    patterns = ?table.inactive,
                    "recognizer patterns left out: gazetteers not installed (run scripts/fetch-assets)"
                );
            }
        })
    }

    /// Builds the table from (file name, TOML text) pairs; `gazetteer` reads a gazetteer file
    /// by its path (`None`: not installed, and the patterns needing it are left out).
    pub fn from_sources(
        sources: &[(String, String)],
        gazetteer: impl Fn(&str) -> Option<Gazetteer>,
    ) -> Result<Self, RecognizerError> {
        let mut patterns = Vec::new();
        // Each pattern's compiled regex, in the same order (the sets the searches borrow).
        let mut regexes = Vec::new();
        let mut versions = Vec::new();
        let mut ids = HashSet::new();
        let mut inactive = Vec::new();
        let mut gazetteers: BTreeMap<String, Option<Arc<Gazetteer>>> = BTreeMap::new();
        let mut ordinary = None;
        let mut clinical = None;
        let mut towns = Vec::new();
        let mut script_places = None;
        for (file, src) in sources {
            let err = |message: String| RecognizerError {
                file: file.clone(),
                message,
            };
            let spec: FileSpec = toml::from_str(src).map_err(|e| err(e.to_string()))?;
            versions.push(spec.version);
            for (name, path) in &spec.gazetteers {
                let g = gazetteer(path).filter(|g| !g.is_empty()).map(Arc::new);
                gazetteers.insert(name.clone(), g);
            }
            for (name, words) in &spec.word_lists {
                if gazetteers.contains_key(name) {
                    return Err(err(format!("word list `{name}` has a gazetteer's name")));
                }
                let list = Gazetteer::from_words(words.iter().map(String::as_str));
                gazetteers.insert(name.clone(), Some(Arc::new(list)));
            }
            if let Some(o) = &spec.ordinary_words {
                let pick = |names: &[String]| -> Result<Option<Vec<Arc<Gazetteer>>>, _> {
                    names
                        .iter()
                        .map(|n| match gazetteers.get(n) {
                            None => Err(err(format!("ordinary_words: unknown gazetteer `{n}`"))),
                            Some(g) => Ok(g.clone()),
                        })
                        .collect::<Result<Option<Vec<_>>, _>>()
                };
                ordinary = match (pick(&o.lists)?, pick(&o.unless)?, pick(&o.keep_phrases)?) {
                    (Some(lists), Some(unless), Some(keep_phrases)) => Some(OrdinaryWords {
                        lists,
                        unless,
                        keep_phrases,
                    }),
                    _ => {
                        inactive.push("ordinary_words (a list is not installed)".into());
                        None
                    }
                };
            }
            for name in spec.town_lists.iter().flatten() {
                match gazetteers.get(name) {
                    None => return Err(err(format!("town_lists: unknown gazetteer `{name}`"))),
                    Some(Some(g)) => towns.push(g.clone()),
                    Some(None) => inactive.push(format!("town_lists ({name})")),
                }
            }
            if let Some(sp) = &spec.script_places {
                if script_places.is_some() {
                    return Err(err("script_places is defined in two files".into()));
                }
                if !labels::is_canonical(&sp.label) || !(0.0..=1.0).contains(&sp.score) {
                    return Err(err(
                        "script_places: the label must be canonical and the score within 0..1"
                            .into(),
                    ));
                }
                match gazetteers.get(&sp.list) {
                    None => {
                        return Err(err(format!(
                            "script_places: unknown gazetteer `{}`",
                            sp.list
                        )));
                    }
                    Some(None) => inactive.push(format!("{} ({})", sp.id, sp.list)),
                    Some(Some(list)) => {
                        let finder = ScriptPlaces::new(list).map_err(&err)?;
                        // The finding every place is reported as, placed by `find`.
                        let finding = Finding {
                            start: 0,
                            end: 0,
                            label: labels::canonical_label(&sp.label).name,
                            score: sp.score,
                            pattern: Arc::from(sp.id.as_str()),
                            priority: sp.priority,
                            merge_only: false,
                            labelled: false,
                        };
                        script_places = Some((finder, finding));
                    }
                }
            }
            if let Some(c) = spec.clinical_text {
                if clinical.is_some() {
                    return Err(err("clinical_text is defined in two files".into()));
                }
                if c.min_cues == 0 || c.cues.len() < c.min_cues {
                    return Err(err(
                        "clinical_text: min_cues must be 1..=number of cues".into()
                    ));
                }
                let cues: HashSet<String> = c.cues.iter().map(|w| w.to_lowercase()).collect();
                clinical = Some(ClinicalText {
                    min_cues: c.min_cues,
                    longest: cues.iter().map(String::len).max().unwrap_or(0),
                    cues,
                });
            }
            for p in spec.pattern {
                let at = |m: String| err(format!("pattern `{}`: {m}", p.id));
                if !ids.insert(p.id.clone()) {
                    return Err(at("duplicate id".into()));
                }
                if !labels::is_canonical(&p.label) {
                    return Err(at(format!("`{}` is not a canonical label", p.label)));
                }
                if !(0.0..=1.0).contains(&p.score) {
                    return Err(at("score must be within 0..1".into()));
                }
                let source = expand(&p.regex, &spec.vars).map_err(at)?;
                let regex = Regex::new(&source).map_err(|e| at(e.to_string()))?;
                if p.requires_context && p.context.is_empty() {
                    return Err(at("requires_context without context words".into()));
                }
                let (mut gated, mut whole, mut excluded) = (Vec::new(), Vec::new(), Vec::new());
                let mut missing = None;
                for (i, name) in regex.capture_names().enumerate() {
                    let (g, into) = match name {
                        Some(n) if n.starts_with("gaz_") => (&n[4..], &mut gated),
                        Some(n) if n.starts_with("gazx_") => (&n[5..], &mut whole),
                        Some(n) if n.starts_with("nogaz_") => (&n[6..], &mut excluded),
                        _ => continue,
                    };
                    match gazetteers.get(g) {
                        None => return Err(at(format!("unknown gazetteer `{g}`"))),
                        Some(None) => missing = Some(g.to_string()),
                        Some(Some(list)) => into.push((i, list.clone())),
                    }
                }
                if let Some(g) = missing {
                    inactive.push(format!("{} ({g})", p.id));
                    continue;
                }
                patterns.push(Pattern {
                    id: Arc::from(p.id.as_str()),
                    label: labels::canonical_label(&p.label).name,
                    score: p.score,
                    priority: p.priority,
                    validator: p.validator,
                    context: p.context.iter().map(|w| w.to_lowercase()).collect(),
                    context_boost: p.context_boost,
                    requires_context: p.requires_context,
                    context_chars: p.context_chars.unwrap_or(DEFAULT_CONTEXT_CHARS),
                    merge_only: p.merge_only,
                    labelled: p.labelled,
                    clinical_only: p.clinical_only,
                    vetoes: regex
                        .capture_names()
                        .enumerate()
                        .filter(|(_, n)| n.is_some_and(|n| n.starts_with("veto")))
                        .map(|(i, _)| i)
                        .collect(),
                    gated,
                    whole,
                    excluded,
                });
                regexes.push(regex);
            }
        }
        if clinical.is_none()
            && let Some(p) = patterns.iter().find(|p| p.clinical_only)
        {
            return Err(RecognizerError {
                file: "recognizers".into(),
                message: format!("pattern `{}`: clinical_only without clinical_text", p.id),
            });
        }
        Ok(Self {
            prefilter: Prefilter::new(regexes.iter().map(Regex::as_str), &|group| {
                group.starts_with("veto")
            }),
            regexes: RegexSets::new(regexes),
            patterns,
            version: versions.join("+"),
            inactive,
            ordinary,
            clinical,
            towns,
            script_places,
        })
    }

    /// Whether `phrase` is a town in one of the table's `town_lists` ("Evendale", "Prenzlauer
    /// Berg"). False without the lists.
    pub fn is_listed_town(&self, phrase: &str) -> bool {
        self.towns.iter().any(|g| g.contains(phrase))
    }

    /// Whether every word of `phrase` is an ordinary word ([`Self::is_ordinary_word`]):
    /// "Attending Provider", "Vital Signs". False for a phrase with no word.
    pub fn is_ordinary_phrase(&self, phrase: &str) -> bool {
        every_word(phrase, |w| self.is_ordinary_word(w))
    }

    /// Whether `word` is an ordinary word and no name: listed in an ordinary-word list (see
    /// [`Self::is_common_word`]) and in no name list. "ABDOMEN", "Zantac" and "Provider" are;
    /// "Will", "Baker" and "Berg" are not. False without the lists.
    pub fn is_ordinary_word(&self, word: &str) -> bool {
        self.ordinary.is_some() && !self.is_listed_name(word) && self.is_common_word(word)
    }

    /// Whether `word` is in a name list and in no ordinary-word list: "Maddie", "Flanagan";
    /// not "Will", "Hope" or "Baker". False without the lists.
    pub fn is_name_and_no_word(&self, word: &str) -> bool {
        self.is_listed_name(word) && !self.is_common_word(word)
    }

    /// Whether the name lists are loaded and none holds `word`: "HTN", "Zantac"; not "Lee".
    /// False without the lists.
    pub fn is_unlisted_name(&self, word: &str) -> bool {
        self.ordinary.is_some() && !self.is_listed_name(word)
    }

    /// Whether `word` is in one of the name lists that keep a word from being ordinary.
    fn is_listed_name(&self, word: &str) -> bool {
        self.ordinary
            .as_ref()
            .is_some_and(|o| o.unless.iter().any(|g| g.contains(word)))
    }

    /// Whether a name found by its context is a heading or a role: every word is in an
    /// ordinary-word list, names or not, and none is in a `keep_phrases` list ("Vital Signs",
    /// "Lab Test", "Attending Provider"; "Will Baker" and "Baker, John" stay).
    pub fn is_common_phrase(&self, phrase: &str) -> bool {
        let Some(o) = &self.ordinary else {
            return false;
        };
        every_word(phrase, |w| {
            self.is_common_word(w) && !o.keep_phrases.iter().any(|g| g.contains(w))
        })
    }

    /// Whether `word` (three letters or more) is in an ordinary-word list as written or without
    /// an "s", "es", "ing" or "ed" ending ("Signs", "Attending"), a name or not ("Golden").
    pub fn is_common_word(&self, word: &str) -> bool {
        let Some(o) = &self.ordinary else {
            return false;
        };
        if word.chars().count() < 3 || !word.chars().all(char::is_alphabetic) {
            return false;
        }
        let lower = word.to_lowercase();
        let stems = ["s", "es", "ing", "ed"]
            .iter()
            .filter_map(|e| lower.strip_suffix(e))
            .filter(|s| s.chars().count() >= 3);
        std::iter::once(lower.as_str())
            .chain(stems)
            .any(|w| o.lists.iter().any(|g| g.contains(w)))
    }

    /// The shipped English files, as `from_sources` takes them.
    #[cfg(test)]
    fn shipped_sources() -> [(String, String); 2] {
        [
            (
                "en.toml".into(),
                include_str!("../../pipelines/recognizers/en.toml").into(),
            ),
            (
                "en_recall.toml".into(),
                include_str!("../../pipelines/recognizers/en_recall.toml").into(),
            ),
        ]
    }

    /// The shipped English table.
    #[cfg(test)]
    pub fn builtin() -> Result<Self, RecognizerError> {
        Self::from_sources(&Self::shipped_sources(), |_| None)
    }

    /// The shipped English table with small stand-in gazetteers (the real ones are fetched).
    #[cfg(test)]
    pub fn builtin_with_stand_in_gazetteers() -> Self {
        Self::from_sources(&Self::shipped_sources(), |path| {
            let list = match path.rsplit('/').next() {
                Some("given_names.txt") => {
                    "RICHARD\nSUNNY\nMARCUS\nWILL\nHOPE\nJOHN\nEMILY\nMERCY\nANNA\nCALLIOPE\nBERND\nECHO\nGI\nIN"
                }
                Some("surnames.txt") => {
                    "SMITH\nGENERAL\nORTEL\nOROZCO\nJOHNSON\nROMANI\nKELLY\nBROWN\nLUDWIG\nVITAL\nBAKER\nFRANCE"
                }
                Some("us_places.txt") => "PORT LEYDEN\nCHICAGO\nHARROW\nEMILY\nWELLS\nLYME",
                Some("english_words.txt") => {
                    "ABDOMEN\nSOFT\nPROVIDER\nATTEND\nSIGN\nVITAL\nLAB\nTEST\nWILL\nHOPE\nCALLIOPE\nBROWN\nBAKER\nYES\nASSESSMENT\nVERIFIED\nRIVER\nDECEASED\nALIVE"
                }
                Some("drugs.txt") => "ZANTAC\nLASIX",
                Some("world_places.txt") => {
                    "DOHA\nLAGOS\nFOLEY\nREADING\nBORDEAUX\nMANILA\nHONDA\nMONTREAL"
                }
                Some("town_words.txt") => "READING",
                Some("world_towns.txt") => "TUAM\nCROWS NEST\nKELLY\nBATH",
                Some("script_places.txt") => "東京\n서울\n부산\nКазань\nजयपुर",
                _ => return None,
            };
            Some(Gazetteer::from_lines(list))
        })
        .expect("shipped recognizers load")
    }

    /// Whether `text` is clinical by the loaded files' `[clinical_text]` cues (never without).
    pub fn is_clinical(&self, text: &str) -> bool {
        self.clinical.as_ref().is_some_and(|c| c.holds(text))
    }

    /// Every validated finding, overlaps resolved: higher priority wins, then higher score,
    /// then the longer match, then the earlier one; a named place holding whole named places
    /// replaces them (see below). Sorted by start. Whether the text is clinical is worked out
    /// when the first `clinical_only` pattern is reached.
    pub fn find(&self, text: &str) -> Vec<Finding> {
        self.find_gated(text, None)
    }

    /// [`Recognizers::find`] for a caller that already knows whether the text is clinical
    /// ([`Recognizers::is_clinical`]); `text` may be a same-length reading of it.
    pub fn find_known(&self, text: &str, clinical: bool) -> Vec<Finding> {
        self.find_gated(text, Some(clinical))
    }

    fn find_gated(&self, text: &str, mut clinical: Option<bool>) -> Vec<Finding> {
        let mut all = Vec::new();
        let regexes = self.regexes.take();
        let seen = self.prefilter.scan(text);
        for (i, (p, regex)) in self.patterns.iter().zip(regexes.iter()).enumerate() {
            if !seen.may_match(i) {
                continue;
            }
            if p.clinical_only && !*clinical.get_or_insert_with(|| self.is_clinical(text)) {
                continue;
            }
            let names = labels::canonical_label(p.label).hipaa_class == "A_NAMES";
            let mut at = 0;
            while let Some(caps) = text.get(at..).and_then(|_| regex.captures_at(text, at)) {
                let Some(m) = caps.name("id").or_else(|| caps.get(0)) else {
                    break;
                };
                // The one character a match reads after its identifier to see that it ends
                // there can be the one the next identifier needs before it ("Doha/Lagos",
                // "Fatih/İstanbul"): the next search starts before it. Longer context after an
                // identifier is read on purpose (the credentials after a name) and is skipped.
                let whole = caps.get(0).map_or(m, |w| w);
                let boundary = text[m.end()..whole.end()].chars().nth(1).is_none();
                at = if boundary && m.end() > whole.start() {
                    m.end()
                } else if whole.end() > whole.start() {
                    whole.end()
                } else {
                    next_char(text, whole.end())
                };
                // A `veto` group that took part says the match is something else (a dose's
                // unit after a number, a code system's name before it).
                if p.vetoes.iter().any(|&i| caps.get(i).is_some()) {
                    continue;
                }
                let mut m_end = m.end();
                if !p.gated.is_empty() && !gazetteers_agree(text, &caps, &p.gated, &mut m_end) {
                    continue;
                }
                let listed = |(i, g): &(usize, Arc<Gazetteer>)| {
                    caps.get(*i).is_some_and(|c| g.contains(c.as_str()))
                };
                if p.excluded.iter().any(listed)
                    || p.whole
                        .iter()
                        .any(|w| caps.get(w.0).is_some() && !listed(w))
                {
                    continue;
                }
                let (start, mut end) = trim_match(text, m.start(), m_end);
                if names {
                    end = start + without_possessive(&text[start..end]).len();
                }
                if start >= end {
                    continue;
                }
                let value = &text[start..end];
                let has_context = !p.context.is_empty()
                    && has_context_word(text, caps.get(0).map_or(start, |m| m.start()), p);
                if p.requires_context && !has_context {
                    continue;
                }
                let mut score = if has_context {
                    (p.score + p.context_boost).min(1.0)
                } else {
                    p.score
                };
                if let Some(v) = p.validator
                    && !v.check(value)
                {
                    // A checksum never vetoes a value its label or context names: "SSN:
                    // 000412345" is still the patient's SSN, only less certainly well formed.
                    if v.is_checksum() && (p.labelled || has_context) {
                        score *= FAILED_CHECKSUM_FACTOR;
                    } else {
                        continue;
                    }
                }
                all.push(Finding {
                    start,
                    end,
                    label: p.label,
                    score,
                    pattern: p.id.clone(),
                    priority: p.priority,
                    merge_only: p.merge_only,
                    labelled: p.labelled,
                });
            }
        }
        if let Some((finder, finding)) = &self.script_places {
            all.extend(finder.find(text).into_iter().map(|(start, end)| Finding {
                start,
                end,
                ..finding.clone()
            }));
        }
        all.sort_by(|a, b| {
            b.priority
                .cmp(&a.priority)
                .then(b.score.total_cmp(&a.score))
                .then((b.end - b.start).cmp(&(a.end - a.start)))
                .then(a.start.cmp(&b.start))
        });
        // Accepted findings are disjoint, so those overlapping `f` are one run ending with the
        // last one starting before `f.end`.
        let mut taken: BTreeMap<usize, Finding> = BTreeMap::new();
        for mut f in all {
            // A named place that holds whole places found by higher-ranked patterns takes
            // their place: "NYC Health Center" outranked by "NYC" would leave "Health Center"
            // standing. Only words naming places: a ZIP code or a state inside a wider finding
            // keeps its own label, which policies treat apart. A facility named for a street
            // holds the street's name ("Lakeview Terrace Care Center").
            let holds = |t: &Finding| {
                let inside =
                    f.start <= t.start && t.end <= f.end && t.end - t.start < f.end - f.start;
                if f.merge_only || !inside {
                    return false;
                }
                let places = matches!(t.label, "CITY" | "LOCATION")
                    && matches!(f.label, "CITY" | "LOCATION");
                let street_name = f.label == "ORGANIZATION"
                    && t.label == "STREET_ADDRESS"
                    && !text[t.start..t.end].contains(|c: char| c.is_ascii_digit());
                // A facility named for a person, or whose first words read as one ("DON VALLEY
                // GENERAL HOSPITAL"), is one facility; a name its title or label found stays,
                // and so does one a sentence's end follows ("Ezra Goldberg's EpiPen. School").
                let named_for = f.label == "ORGANIZATION"
                    && !t.labelled
                    && labels::canonical_label(t.label).hipaa_class == "A_NAMES"
                    && !text[t.end..f.end].contains(". ");
                places || street_name || named_for
            };
            // Two findings of one facility or place that share words are one name:
            // "Children's Hospital" and "Hospital Los Angeles" make "Children's Hospital Los
            // Angeles".
            let joins = |t: &Finding| {
                !f.merge_only
                    && !t.merge_only
                    && t.label == f.label
                    && matches!(f.label, "ORGANIZATION" | "LOCATION")
            };
            let overlapping: Vec<usize> = taken
                .range(..f.end)
                .rev()
                .take_while(|(_, t)| t.end > f.start)
                .map(|(&k, _)| k)
                .collect();
            if overlapping.iter().all(|k| holds(&taken[k])) {
                for k in &overlapping {
                    taken.remove(k);
                }
            } else if overlapping.iter().all(|k| joins(&taken[k])) {
                for k in overlapping {
                    if let Some(t) = taken.remove(&k) {
                        // The higher-ranked finding keeps its pattern and score.
                        f = Finding {
                            start: t.start.min(f.start),
                            end: t.end.max(f.end),
                            ..t
                        };
                    }
                }
            } else {
                continue;
            }
            taken.insert(f.start, f);
        }
        taken.into_values().collect()
    }
}

/// The byte offset of the character after the one at `at` (past the end: `text.len() + 1`,
/// where no search starts).
fn next_char(text: &str, at: usize) -> usize {
    text.get(at..)
        .and_then(|rest| rest.chars().next())
        .map_or(text.len() + 1, |c| at + c.len_utf8())
}

/// Whether every gazetteer group taking part is listed (its longest listed word prefix);
/// when a group ends where the identifier ends, the identifier is cut to the listed prefix.
fn gazetteers_agree(
    text: &str,
    caps: &regex::Captures,
    gated: &[(usize, Arc<Gazetteer>)],
    id_end: &mut usize,
) -> bool {
    for (i, list) in gated {
        let Some(g) = caps.get(*i) else {
            continue;
        };
        let Some(len) = list.longest_prefix(&text[g.start()..g.end()]) else {
            return false;
        };
        if g.end() == *id_end {
            *id_end = g.start() + len;
        }
    }
    true
}

/// Whether `phrase` has a word (a run of letters) and `f` holds for each.
fn every_word(phrase: &str, f: impl Fn(&str) -> bool) -> bool {
    let mut words = phrase
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .peekable();
    words.peek().is_some() && words.all(f)
}

/// A name without its possessive ending or a dash after it ("Thorne's" → "Thorne",
/// "Rush--" → "Rush"): neither names anyone.
fn without_possessive(name: &str) -> &str {
    let name = name.trim_end_matches('-');
    ["'s", "’s", "'", "’"]
        .iter()
        .find_map(|p| name.strip_suffix(p))
        .filter(|n| !n.is_empty())
        .unwrap_or(name)
}

/// Replaces `{{name}}` with the file's variable of that name.
fn expand(regex: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(regex.len());
    let mut rest = regex;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let j = after
            .find("}}")
            .ok_or_else(|| "unclosed `{{` in regex".to_string())?;
        let name = &after[..j];
        let value = vars
            .get(name)
            .ok_or_else(|| format!("unknown variable `{name}`"))?;
        out.push_str(value);
        rest = &after[j + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Drops surrounding whitespace and trailing sentence punctuation (a URL or plate at the end of
/// a sentence does not own the full stop; an unbalanced closing bracket is not part of it).
fn trim_match(text: &str, mut start: usize, mut end: usize) -> (usize, usize) {
    let s = &text[start..end];
    start += s.len() - s.trim_start().len();
    loop {
        let s = &text[start..end];
        let Some(c) = s.chars().next_back() else {
            break;
        };
        let unbalanced = |open: char, close: char| {
            c == close && s.matches(open).count() < s.matches(close).count()
        };
        if c.is_whitespace()
            || matches!(c, ',' | ';' | ':' | '!' | '?' | '"' | '\'' | '”' | '’')
            || (c == '.' && !s.ends_with("..") && !is_abbreviation_dot(s))
            || unbalanced('(', ')')
            || unbalanced('[', ']')
        {
            end -= c.len_utf8();
        } else {
            break;
        }
    }
    (start, end)
}

/// A final dot that belongs to the match: "St." or "p.m." (a letter right before, and either a
/// short word or another dot in the last word).
pub(crate) fn is_abbreviation_dot(s: &str) -> bool {
    let body = &s[..s.len() - 1];
    let last_word = body.rsplit([' ', '\t']).next().unwrap_or(body);
    let letters = last_word.chars().all(|c| c.is_alphabetic() || c == '.');
    letters
        && !last_word.contains('/')
        && (last_word.contains('.') || last_word.chars().count() <= 4)
}

/// Whether one of the pattern's context words stands, as a whole word, just before the match:
/// within `context_chars`, on the same line, and after the previous number (so a label such as
/// "Fax:" does not also claim the next number on the line).
fn has_context_word(text: &str, match_start: usize, p: &Pattern) -> bool {
    let before = &text[..match_start];
    let from = before
        .char_indices()
        .rev()
        .nth(p.context_chars.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    let mut window = &before[from..];
    if let Some(nl) = window.rfind('\n') {
        window = &window[nl + 1..];
    }
    if let Some(d) = window.rfind(|c: char| c.is_ascii_digit()) {
        window = &window[d + 1..];
    }
    let window = window.to_lowercase();
    p.context.iter().any(|w| contains_word(&window, w))
}

fn contains_word(hay: &str, word: &str) -> bool {
    hay.match_indices(word).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Recognizers {
        Recognizers::builtin().expect("shipped recognizers load")
    }

    /// (pattern id, label, text) of every finding of the shipped table without gazetteers.
    fn found(text: &str) -> Vec<(String, &'static str, String)> {
        found_with(&table(), text)
    }

    fn finds(text: &str, label: &str, value: &str) {
        finds_in(&table(), text, label, value);
    }

    /// The prefilter skips only patterns that could have found nothing: over the synthetic
    /// corpus and every tuned probe set (the held-out sets stay unread), no pattern it skips on
    /// a text has a match there in which no veto group takes part.
    #[test]
    fn the_prefilter_skips_no_pattern_that_could_find_something() {
        let r = Recognizers::builtin_with_stand_in_gazetteers();
        let mut files = vec![std::path::PathBuf::from("tests/data/deid_eval.jsonl")];
        for entry in std::fs::read_dir("tests/data/probes").expect("probe sets") {
            let path = entry.expect("probe set").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.ends_with(".jsonl") && !name.starts_with("heldout") {
                files.push(path);
            }
        }
        let regexes = r.regexes.take();
        let (mut texts, mut skipped) = (0, 0);
        for file in &files {
            let set = std::fs::read_to_string(file).expect("probe set reads");
            for (k, doc) in crate::eval::from_jsonl(&set)
                .expect("probe set parses")
                .iter()
                .enumerate()
            {
                texts += 1;
                let seen = r.prefilter.scan(&doc.text);
                for (i, (p, regex)) in r.patterns.iter().zip(regexes.iter()).enumerate() {
                    if seen.may_match(i) {
                        continue;
                    }
                    skipped += 1;
                    let counted = regex
                        .captures_iter(&doc.text)
                        .any(|c| !p.vetoes.iter().any(|&v| c.get(v).is_some()));
                    assert!(
                        !counted,
                        "`{}` skipped on text {k} of {}",
                        p.id,
                        file.display()
                    );
                }
            }
        }
        assert!(
            files.len() > 20 && texts > 2000,
            "{} files, {texts} texts",
            files.len()
        );
        assert!(
            skipped > texts * 50,
            "the prefilter skips {skipped} pattern runs on {texts} texts"
        );
    }

    fn finds_no(text: &str, label: &str) {
        finds_none_in(&table(), text, label);
    }

    /// `t` finds `value` as `label` in `text`.
    fn finds_in(t: &Recognizers, text: &str, label: &str, value: &str) {
        let got = found_with(t, text);
        assert!(
            got.iter().any(|(_, l, v)| *l == label && v == value),
            "expected {label} `{value}` in {text:?}, got {got:?}"
        );
    }

    /// `t` finds nothing labelled `label` in `text`.
    fn finds_none_in(t: &Recognizers, text: &str, label: &str) {
        let got = found_with(t, text);
        assert!(
            got.iter().all(|(_, l, _)| *l != label),
            "expected no {label} in {text:?}, got {got:?}"
        );
    }

    /// No finding `t` makes in `text` comes from one of the patterns `ids`.
    fn found_by_none_of(t: &Recognizers, text: &str, ids: &[&str]) {
        let got = found_with(t, text);
        assert!(
            got.iter().all(|(p, ..)| !ids.contains(&p.as_str())),
            "{text}: {got:?}"
        );
    }

    /// `s` inside a text with enough clinical cue words for the `clinical_only` patterns.
    fn note(s: &str) -> String {
        format!("Pt seen in clinic, BP 128/80, on metformin 500 mg. {s}")
    }

    fn finds_nothing(text: &str) {
        let got = found(text);
        assert!(got.is_empty(), "expected nothing in {text:?}, got {got:?}");
    }

    #[test]
    fn dates_in_clinical_forms() {
        for (t, v) in [
            ("seen on 2021-03-15 in clinic", "2021-03-15"),
            ("DOB: 03/15/1950.", "03/15/1950"),
            ("dated 3/15/21, signed", "3/15/21"),
            ("on 15.03.2021 she", "15.03.2021"),
            ("admitted March 15, 2021 with", "March 15, 2021"),
            ("admitted Mar. 15 2021 with", "Mar. 15 2021"),
            ("on 15-Mar-2021 the", "15-Mar-2021"),
            ("on 15 MARCH 2021 the", "15 MARCH 2021"),
            ("on the 3rd of May 2021 we", "3rd of May 2021"),
            ("since May 3rd, 2021.", "May 3rd, 2021"),
            ("last seen 05/2021 by", "05/2021"),
            ("last seen May 2021 by", "May 2021"),
            ("on Monday, March 15, 2021 at", "Monday, March 15, 2021"),
            ("on Sept 3, 2021 at", "Sept 3, 2021"),
        ] {
            finds(t, "DATE", v);
        }
    }

    #[test]
    fn clinical_numbers_are_not_dates_or_times() {
        for t in [
            "BP 120/80, HR 72, SpO2 98%",
            "take 5 mg twice",
            "3/4 tablets",
            "ratio 1:2",
            "A1c 7.2",
            "ICD E11.9",
            "Gleason 3+4",
            "in 2019 she moved",
            "for 3 days",
            "may 2 tablets be given",
        ] {
            finds_nothing(t);
        }
    }

    #[test]
    fn times_and_ages() {
        finds("arrived at 10:30 today", "TIME", "10:30");
        finds("arrived at 2:30 PM today", "TIME", "2:30 PM");
        finds("at 0830 hours", "TIME", "0830 hours");
        finds("a 92 y/o woman", "AGE", "92");
        finds("aged 91, lives alone", "AGE", "91");
        finds("45-year-old man", "AGE", "45");
        finds("67 yo M", "AGE", "67");
        finds("Age: 88", "AGE", "88");
        finds_nothing("given 130 units");
    }

    #[test]
    fn contacts() {
        finds("call (617) 555-0143 now", "PHONE", "(617) 555-0143");
        finds("call 617-555-0143.", "PHONE", "617-555-0143");
        finds("call 617.555.0143.", "PHONE", "617.555.0143");
        finds("call +1 617 555 0143.", "PHONE", "+1 617 555 0143");
        finds("UK +44 20 7946 0958.", "PHONE", "+44 20 7946 0958");
        finds(
            "Tel: 617-555-0143, Fax: 617-555-0199",
            "FAX",
            "617-555-0199",
        );
        finds(
            "Tel: 617-555-0143, Fax: 617-555-0199",
            "PHONE",
            "617-555-0143",
        );
        finds(
            "Fax: 617-555-0199, tel 617-555-0143",
            "PHONE",
            "617-555-0143",
        );
        finds("phone 6175550143", "PHONE", "6175550143");
        // Not a phone without a cue; the Safe Harbor catch-all still removes it.
        finds("order 6175550143", "OTHER_IDENTIFIER", "6175550143");
        finds(
            "mail john.smith@example.com.",
            "EMAIL",
            "john.smith@example.com",
        );
        finds(
            "mail josé.muñoz@hospital.org",
            "EMAIL",
            "josé.muñoz@hospital.org",
        );
        finds(
            "see https://portal.example.org/u/jsmith.",
            "URL",
            "https://portal.example.org/u/jsmith",
        );
        finds("(www.johnsmithblog.net)", "URL", "www.johnsmithblog.net");
        finds("from 192.168.10.20 at", "IP_ADDRESS", "192.168.10.20");
        finds(
            "from 2001:db8::8a2e:370:7334 at",
            "IP_ADDRESS",
            "2001:db8::8a2e:370:7334",
        );
        finds("MAC 00:1A:2B:3C:4D:5E", "MAC_ADDRESS", "00:1A:2B:3C:4D:5E");
        finds_nothing("version 1.2.3");
        assert!(
            found("at 10:30:15 sharp")
                .iter()
                .all(|(_, l, _)| *l == "TIME")
        );
    }

    #[test]
    fn numbers_with_checksums() {
        finds("SSN 123-45-6789", "SSN", "123-45-6789");
        finds("ssn: 123456789", "SSN", "123456789");
        // Not a valid SSN, but a unique number of an SSN's shape all the same.
        assert!(
            found("value 666-12-3456")
                .iter()
                .all(|(p, ..)| p != "ssn_dashed")
        );
        finds(
            "card 4111 1111 1111 1111 on file",
            "CREDIT_CARD",
            "4111 1111 1111 1111",
        );
        // A failed Luhn check under a "card" cue lowers the score; it no longer vetoes.
        let weak = table().find("card 4111 1111 1111 1112 on file");
        let strong = table().find("card 4111 1111 1111 1111 on file");
        assert!(weak.len() == 1 && strong.len() == 1 && weak[0].score < strong[0].score);
        assert!(
            found("4111 1111 1111 1112")
                .iter()
                .all(|(_, l, _)| *l != "CREDIT_CARD")
        );
        finds(
            "IBAN GB82 WEST 1234 5698 7654 32.",
            "IBAN",
            "GB82 WEST 1234 5698 7654 32",
        );
        finds("NPI: 1234567893", "NPI", "1234567893");
        // Labelled: the failed check lowers the score, the NPI stays.
        let npi = table().find("NPI: 1234567890");
        assert!(npi.len() == 1 && npi[0].score < 0.95 * 0.9, "{npi:?}");
        finds("DEA AB1234563", "LICENSE_NUMBER", "AB1234563");
        finds("VIN 1HGCM82633A004352", "VEHICLE_ID", "1HGCM82633A004352");
        finds(
            "car 1HGCM82633A004352 parked",
            "VEHICLE_ID",
            "1HGCM82633A004352",
        );
    }

    #[test]
    fn record_numbers_need_their_context() {
        finds("MRN: 4829173", "MEDICAL_RECORD_NUMBER", "4829173");
        finds(
            "medical record #A1234567",
            "MEDICAL_RECORD_NUMBER",
            "A1234567",
        );
        finds(
            "Member ID: XJH123456789",
            "HEALTH_PLAN_NUMBER",
            "XJH123456789",
        );
        finds("Medicaid # 99887766A", "HEALTH_PLAN_NUMBER", "99887766A");
        finds("Acct #: 00123456789", "ACCOUNT_NUMBER", "00123456789");
        finds("DL# S123-4567-8901", "DRIVERS_LICENSE", "S123-4567-8901");
        finds("medical license MD123456", "LICENSE_NUMBER", "MD123456");
        finds("license plate ABC-1234 seen", "LICENSE_PLATE", "ABC-1234");
        finds("pacemaker serial PM-88231-XZ", "DEVICE_ID", "PM-88231-XZ");
        finds(
            "fingerprint template ID FP-00912-AC",
            "BIOMETRIC_ID",
            "FP-00912-AC",
        );
        finds(
            "photograph on file: IMG_20210315_0932.jpg",
            "PHOTO",
            "IMG_20210315_0932.jpg",
        );
        finds("portal username jsmith82", "USERNAME", "jsmith82");
        finds("passport number X12345678", "PASSPORT", "X12345678");
        finds("EIN 12-3456789", "TAX_ID", "12-3456789");
        finds_nothing("plan of care discussed");
        finds_nothing("attached report.pdf");
    }

    #[test]
    fn places_names_and_organizations() {
        finds("Boston, MA 02139-4307", "ZIP_CODE", "02139-4307");
        finds("Boston, MA 02139", "CITY", "Boston");
        finds_no("Abdomen  Soft, ND, NT. + bowel sounds.", "CITY");
        finds(
            "visited Cedar Falls Med Center, IA on",
            "CITY",
            "Cedar Falls Med Center",
        );
        finds("ZIP 02139", "ZIP_CODE", "02139");
        finds_nothing("glucose 02139");
        finds(
            "lives at 123 Main Street with",
            "STREET_ADDRESS",
            "123 Main Street",
        );
        finds("4 Elm St. Apt 4B", "STREET_ADDRESS", "4 Elm St.");
        finds("4 Elm St. Apt 4B", "SECONDARY_ADDRESS", "Apt 4B");
        finds("lives in São Paulo now", "CITY", "São Paulo");
        finds(
            "admitted to St. Mary's Medical Center.",
            "ORGANIZATION",
            "St. Mary's Medical Center",
        );
        // Two findings of one facility that share a word are one name.
        finds(
            "treated at Children's Hospital Los Angeles on March 15",
            "ORGANIZATION",
            "Children's Hospital Los Angeles",
        );
        finds_no(
            "Patient: Kevin Pérez    Hospital No. 975646301",
            "ORGANIZATION",
        );
        finds("seen by Dr. José Muñoz today", "NAME", "José Muñoz");
        // A middle initial with its full stop between two capitalized words, neither listed.
        finds(
            "Koppány C. Szabados Musical instrument tuner",
            "NAME",
            "Koppány C. Szabados",
        );
        finds_no("Took Vitamin D. Feels better", "NAME");
        finds_no("see Report A. The results were", "NAME");
        // A name's possessive ending or a dash after it is not the name.
        finds("will contact Dr. Thorne's service", "NAME", "Thorne");
        finds(
            "the cardiologist, Dr. Xavier Rush-- and we",
            "NAME",
            "Xavier Rush",
        );
        finds("Emergency contact: Zoë Ångström", "NAME", "Zoë Ångström");
    }

    #[test]
    fn context_patterns_for_places_organizations_names_and_ids() {
        let by = |text: &str, id: &str, value: &str| {
            let got = found(text);
            assert!(
                got.iter().any(|(p, _, v)| p == id && v == value),
                "expected {id} `{value}` in {text:?}, got {got:?}"
            );
        };
        by(
            "190 Cortés Boulevard, #59, Anchorage",
            "secondary_hash",
            "#59",
        );
        by(
            "sleeps at a shelter on Chestnut Way.",
            "street_context",
            "Chestnut Way.",
        );
        by(
            "walks down Maple Avenue daily",
            "street_name",
            "Maple Avenue",
        );
        by(
            "Camping trip to Riverside Park last month",
            "place_context",
            "Riverside Park",
        );
        by("fell at Quabbin Reservoir", "landmark", "Quabbin Reservoir");
        by(
            "DISCHARGE SUMMARY\nClinique Sainte-Thérèse\n",
            "facility_prefix",
            "Clinique Sainte-Thérèse",
        );
        // A business is found as an employer, by its cue, and by its legal form.
        by(
            "Employer notified: Bluewater Seafood Co., supervisor",
            "organization_context",
            "Bluewater Seafood Co.",
        );
        by(
            "Her employer, Acme Logistics Inc., was notified.",
            "organization_context",
            "Acme Logistics Inc.",
        );
        by(
            "He retired from Boeing Company in 2010.",
            "organization_context",
            "Boeing Company",
        );
        by(
            "works at Pioneer Valley Outfitters as a clerk",
            "organization_context",
            "Pioneer Valley Outfitters",
        );
        // A trade word names a business in any text, not only in a clinical note.
        by(
            "works at Pioneer Valley Credit Union as a teller",
            "business_trade",
            "Pioneer Valley Credit Union",
        );
        finds_no(
            "a pacemaker made by Medtronic Inc. was placed",
            "ORGANIZATION",
        );
        by(
            "study ID STDY-5255-377 today",
            "other_id_context",
            "STDY-5255-377",
        );
        by(
            "Reviewed by O. Oyelaran, MD.",
            "name_credential",
            "O. Oyelaran",
        );
        by("Dear Lê, Thị Lan MD,", "name_credential", "Lê, Thị Lan");
        by("Patient: P. Singh    MR# 7242277", "name_role", "P. Singh");
        by(
            "Chart label for JONES, LINDA, MRN",
            "name_caps_last_first",
            "JONES, LINDA",
        );
        by("transmitter ID 43PQ79 paired", "device_serial", "43PQ79");
        by("palm vein template PV-7218-367", "biometric", "PV-7218-367");
        by(
            "app account user name: melissa.rossi; data",
            "username",
            "melissa.rossi",
        );
        by("DOB 11/4/1922; 91 years of age", "age_suffix", "91");
        for quiet in [
            "Boston, MA 02139 and Springfield, IL",
            "the plan of care",
            "A1c 7.2, LDL 130",
        ] {
            assert!(
                found(quiet)
                    .iter()
                    .all(|(p, _, _)| p != "name_credential" && p != "other_id_context"),
                "{quiet}: {:?}",
                found(quiet)
            );
        }
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let bad = |src: &str| {
            Recognizers::from_sources(&[("x.toml".into(), src.into())], |_| None)
                .unwrap_err()
                .to_string()
        };
        let head = "version = \"t\"\n[[pattern]]\nid = \"a\"\nscore = 0.5\n";
        assert!(bad(&format!("{head}label = \"NOPE\"\nregex = \"x\"\n")).contains("canonical"));
        assert!(bad(&format!("{head}label = \"DATE\"\nregex = \"(\"\n")).contains("pattern `a`"));
        assert!(
            bad(&format!(
                "{head}label = \"DATE\"\nregex = \"{{{{nope}}}}\"\n"
            ))
            .contains("unknown variable")
        );
        assert!(
            bad(&format!(
                "{head}label = \"DATE\"\nregex = \"x\"\nvalidator = \"magic\"\n"
            ))
            .contains("magic")
        );
        let twice = format!(
            "{head}label = \"DATE\"\nregex = \"x\"\n{}label = \"DATE\"\nregex = \"y\"\n",
            &head[14..]
        );
        assert!(bad(&twice).contains("duplicate"));
        assert!(
            bad(&format!(
                "{head}label = \"DATE\"\nregex = \"x\"\nclinical_only = true\n"
            ))
            .contains("clinical_only without clinical_text")
        );
        assert!(
            bad("version = \"t\"\n[clinical_text]\nmin_cues = 3\ncues = [\"mg\"]\n")
                .contains("min_cues")
        );
    }

    #[test]
    fn a_clinical_text_holds_enough_different_cue_words() {
        let c = ClinicalText {
            min_cues: 3,
            cues: ["pt", "mg", "bp"].map(String::from).into(),
            longest: 2,
        };
        assert!(c.holds("Pt on lisinopril 10 MG daily, BP 140/90."));
        // One cue three times is one cue.
        assert!(!c.holds("mg, mg and mg"));
        assert!(!c.holds("Pt left early; ran 5 km."));
        // Whole words only: "mg" inside "mgmt" is no cue.
        assert!(!c.holds("pt mgmt, bp"));
    }

    #[test]
    fn word_lists_in_the_table_gate_like_gazetteers() {
        let src = |list: &str| {
            format!(
                "version = \"t\"\n[word_lists]\n{list} = [\"Foley\", \"Cushing\"]\n\
                 [[pattern]]\nid = \"town\"\nlabel = \"CITY\"\nscore = 0.5\n\
                 regex = \"(?P<id>(?P<nogaz_eponyms>[A-Z][a-z]+))\"\n"
            )
        };
        let t = Recognizers::from_sources(&[("t.toml".into(), src("eponyms"))], |_| None)
            .expect("table loads");
        let words: Vec<_> = t
            .find("Foley Leeds CUSHING Cushing")
            .into_iter()
            .map(|f| f.start)
            .collect();
        assert_eq!(words, [6]);
        let clash = src("eponyms").replacen(
            "\n[word_lists]",
            "\n[gazetteers]\neponyms = \"x.txt\"\n[word_lists]",
            1,
        );
        let err = Recognizers::from_sources(&[("t.toml".into(), clash)], |_| None).unwrap_err();
        assert!(err.to_string().contains("gazetteer's name"), "{err}");
    }

    /// A Unicode `\b` makes the regex crate's lazy DFA give up at the first non-ASCII byte and
    /// search the rest with a slower engine; `(?-u:\b)` or a consumed non-letter keep it.
    #[test]
    fn shipped_patterns_use_no_unicode_word_boundary() {
        for (file, src) in Recognizers::shipped_sources() {
            let spec: FileSpec = toml::from_str(&src).expect("shipped file parses");
            for p in spec.pattern {
                let regex = expand(&p.regex, &spec.vars).expect("vars expand");
                let ascii = regex.replace("(?-u:\\b)", "").replace("(?-u:\\B)", "");
                assert!(
                    !ascii.contains("\\b") && !ascii.contains("\\B"),
                    "{file}: pattern `{}` has a Unicode word boundary",
                    p.id
                );
            }
        }
        let t = with_gazetteers();
        let has = |text: &str, label: &str, value: &str| finds_in(&t, text, label, value);
        let has_no = |text: &str, label: &str| finds_none_in(&t, text, label);
        // A state code or credential directly before an accented capital is part of a word.
        has_no("Patient: BROWN, INÉS    MRN 00006230", "CITY");
        has_no("Spoke with ØDEGAARD, MAŁGORZATA today", "CITY");
        has("Patient: BROWN, INÉS    MRN", "NAME", "BROWN, INÉS");
        has("Born in Montréal; moved to", "CITY", "Montréal");
        has("lives in Lyon, France.", "CITY", "Lyon");
        has(
            "email ana.ruíz@example.com now",
            "EMAIL",
            "ana.ruíz@example.com",
        );
        has_no("Montreal Cognitive Assessment 26/30", "CITY");
    }

    #[test]
    fn a_wider_place_replaces_the_places_it_holds_and_nothing_else_does() {
        let src = |inner: &str, outer: &str| {
            format!(
                "version = \"t\"\n\
                 [[pattern]]\nid = \"inner\"\nlabel = \"{inner}\"\nregex = \"NYC|33653\"\nscore = 0.9\npriority = 9\n\
                 [[pattern]]\nid = \"outer\"\nlabel = \"{outer}\"\nregex = \"NYC Health Center|FL 33653\"\nscore = 0.5\npriority = 1\n"
            )
        };
        let spans = |inner: &str, outer: &str, text: &str| {
            let t = Recognizers::from_sources(&[("t.toml".into(), src(inner, outer))], |_| None)
                .expect("table loads");
            t.find(text)
                .into_iter()
                .map(|f| (f.pattern.to_string(), text[f.start..f.end].to_string()))
                .collect::<Vec<_>>()
        };
        let text = "seen at the NYC Health Center";
        assert_eq!(
            spans("CITY", "LOCATION", text),
            [("outer".into(), "NYC Health Center".into())]
        );
        // A ZIP code keeps its label inside a wider finding; a name is not a place.
        assert_eq!(
            spans("ZIP_CODE", "SECONDARY_ADDRESS", "Tampa, FL 33653"),
            [("inner".into(), "33653".into())]
        );
        assert_eq!(
            spans("FIRST_NAME", "NAME", text),
            [("inner".into(), "NYC".into())]
        );
    }

    #[test]
    fn every_finding_carries_its_pattern_and_score() {
        let f = table().find("DOB 03/15/1950");
        assert_eq!(f.len(), 1);
        assert_eq!(&*f[0].pattern, "date_numeric");
        assert!(f[0].score > 0.85);
    }

    fn with_gazetteers() -> Recognizers {
        Recognizers::builtin_with_stand_in_gazetteers()
    }

    fn found_with(t: &Recognizers, text: &str) -> Vec<(String, &'static str, String)> {
        t.find(text)
            .into_iter()
            .map(|f| {
                (
                    f.pattern.to_string(),
                    f.label,
                    text[f.start..f.end].to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn labelled_values_stand_whatever_their_checksum() {
        finds("SSN: 000412345 on file", "SSN", "000412345");
        finds("SSN 987-65-4321.", "SSN", "987-65-4321");
        finds(
            "Professional ID: 304118822.",
            "OTHER_IDENTIFIER",
            "304118822",
        );
        finds("identifier 0391234 noted", "OTHER_IDENTIFIER", "0391234");
        finds(
            "Identity confirmed with 0412233.",
            "OTHER_IDENTIFIER",
            "0412233",
        );
        finds("Report: LAB-00412345", "OTHER_IDENTIFIER", "LAB-00412345");
        finds(
            "MRN 0412345/67 today",
            "MEDICAL_RECORD_NUMBER",
            "0412345/67",
        );
        finds(
            "MRN: UCLA-T1D-2023?",
            "MEDICAL_RECORD_NUMBER",
            "UCLA-T1D-2023",
        );
        finds("call 555-123-4567 today", "PHONE", "555-123-4567");
        finds("case #JH-998877.", "MEDICAL_RECORD_NUMBER", "JH-998877");
        // Shape validators still veto: no digits, no identifier.
        let got = found("Patient ID: PENDING");
        assert!(got.iter().all(|(p, ..)| p != "id_labelled"), "{got:?}");
    }

    #[test]
    fn the_safe_harbor_catch_all_spares_clinical_numbers() {
        finds("ref 20394857 on the form", "OTHER_IDENTIFIER", "20394857");
        finds("tracking QX-789012 sent", "OTHER_IDENTIFIER", "QX-789012");
        finds("kept as RX-87654321.", "OTHER_IDENTIFIER", "RX-87654321");
        finds("code 12345XJ here", "OTHER_IDENTIFIER", "12345XJ");
        for t in [
            "platelets 250000 /uL",
            "vitamin D 50000 IU weekly",
            "NDC 0002-1433-80 dispensed",
            "enrolled in NCT01234567",
            "IRB protocol 2023-0551 approved",
            "CPT 99213, ICD-10 E11.9",
            "gave 1000000 units",
            "BP 120/80, HR 72, SpO2 98%",
            "from 2019-2021 she",
        ] {
            let got = found(t);
            assert!(
                got.iter()
                    .all(|(p, ..)| p != "unique_number" && p != "unique_code"),
                "{t}: {got:?}"
            );
        }
    }

    #[test]
    fn dates_without_a_year_need_a_date_word() {
        for (t, v) in [
            ("Admitted 3/14 to 4 West; discharged 3/19.", "3/14"),
            ("Admitted 3/14 to 4 West; discharged 3/19.", "3/19"),
            ("Labs on 12/5: WBC 11.2", "12/5"),
            ("clinic on Thursday, 4/12. CXR", "4/12"),
            ("Extubated 2/17 at 21:10", "2/17"),
            ("Pulmonary clinic with Dr. Tsai 4/2.", "4/2"),
            ("Echocardiogram 4/89: EF 55%.", "4/89"),
            ("CXR from 11-Mar showed", "11-Mar"),
            ("seen by Dr. T. in Boston last December?", "last December"),
            ("seen last week at Baylor", "last week"),
            ("symptoms since March, worse", "March"),
        ] {
            finds(t, "DATE", v);
        }
        for t in [
            "take 1/2 tab at night",
            "strength 5/5 in all extremities",
            "pain 7/10, grade 2/6 murmur",
            "decreased in 1/3 of patients",
            "on 3/4/5 ratio",
            "BP 132/84 on arrival",
            "in March 2021 she",
            "for the past week",
            "travelling to Brazil next week",
            "follow up next month",
        ] {
            let got = found(t);
            assert!(
                got.iter()
                    .all(|(p, ..)| !p.starts_with("date_slash") && p != "date_relative"),
                "{t}: {got:?}"
            );
        }
    }

    #[test]
    fn ages_over_89_after_turned_or_in_words() {
        finds("He turned 91 last spring", "AGE", "91");
        finds("She is ninety-two years old", "AGE", "ninety-two");
        let got = found("the knee turned 90 degrees; dose turned 10 mg");
        assert!(got.iter().all(|(_, l, _)| *l != "AGE"), "{got:?}");
        // A person as the subject, or an ordinal birthday.
        finds("I'm 92.", "AGE", "92");
        finds("my dad, who is 94, lives alone", "AGE", "94");
        finds("She is now 91 and", "AGE", "91");
        finds("for her 90th birthday", "AGE", "90th");
        finds("for her 45th birthday", "AGE", "45");
        finds("This 1.5 year old boy", "AGE", "1.5");
        finds("My brother just turned 7", "AGE", "7");
        finds("at the age of forty-five, she", "AGE", "forty-five");
        finds("I'm ninety two and", "AGE", "ninety two");
        finds_no("she is twenty minutes late", "AGE");
        for quiet in [
            "She is 2 weeks postpartum",
            "He is 100% sure",
            "I'm 5'7\" tall",
            "he is 6 feet tall",
            "She was 3 of 4 in line",
            "It is 94 today",
        ] {
            finds_no(quiet, "AGE");
        }
    }

    #[test]
    fn pagers_extensions_handles_pins_and_coordinates() {
        finds("Pager 4-4012 after hours", "PHONE", "4-4012");
        finds("ext. 5521 for the desk", "PHONE", "5521");
        finds("call x4-3391 with questions", "PHONE", "4-3391");
        finds(
            "Her Instagram is @lila.moves today",
            "USERNAME",
            "@lila.moves",
        );
        finds("my PIN is 4821.", "OTHER_IDENTIFIER", "4821");
        finds("Her CVV is 123 and", "CREDIT_CARD", "123");
        finds("card expires 11/26.", "DATE", "11/26");
        finds("password: Tardis#1963.", "OTHER_IDENTIFIER", "Tardis#1963");
        finds(
            "Coordinates 40.7128, -74.0060 were logged",
            "LOCATION",
            "40.7128, -74.0060",
        );
        let got = found("email jo@example.org and x10 magnification");
        assert!(
            got.iter()
                .all(|(_, l, _)| *l != "USERNAME" && *l != "PHONE"),
            "{got:?}"
        );
    }

    #[test]
    fn phones_in_national_layouts_with_a_cue() {
        finds("mobile: 516 466 638.", "PHONE", "516 466 638");
        finds("fax 24 984734 today", "FAX", "24 984734");
        finds("reach her on 20-33-70-48.", "PHONE", "20-33-70-48");
        finds("5164666381 mobile", "PHONE", "5164666381");
        finds("work 0161 555 0199.", "PHONE", "0161 555 0199");
        let got = found("cell count 150000 today");
        assert!(got.iter().all(|(_, l, _)| *l != "PHONE"), "{got:?}");
    }

    #[test]
    fn military_and_postal_addresses() {
        finds(
            "Send to PSC 4115, Box 2231, APO AE 09012 now",
            "STREET_ADDRESS",
            "PSC 4115, Box 2231, APO AE 09012",
        );
        finds(
            "at Unit 7712 Box 118, DPO AP 96522.",
            "STREET_ADDRESS",
            "Unit 7712 Box 118, DPO AP 96522",
        );
        finds(
            "CMR 402, APO AE 09180",
            "STREET_ADDRESS",
            "CMR 402, APO AE 09180",
        );
        finds(
            "mail to P.O. Box 1234 please",
            "STREET_ADDRESS",
            "P.O. Box 1234",
        );
        finds(
            "address: 42 Harrow Lane",
            "STREET_ADDRESS",
            "42 Harrow Lane",
        );
    }

    #[test]
    fn names_and_places_from_context() {
        finds("accompanied by Sunny Ortel today", "NAME", "Sunny Ortel");
        finds("she was born in 1931 in Ohio", "DATE", "1931");
        finds("YOB: 1931.", "DATE", "1931");
        finds("(MRN: #SF-998877)?", "MEDICAL_RECORD_NUMBER", "#SF-998877");
        finds(
            "Brief history: Lê Thị Lan is a 19-yr-old",
            "NAME",
            "Lê Thị Lan",
        );
        finds(
            "Triage Trần Thị Hoa    medical record",
            "NAME",
            "Trần Thị Hoa",
        );
        finds("seen with Nguyen Van An.", "NAME", "Nguyen Van An");
        finds("son Đặng Văn Hùng called", "NAME", "Đặng Văn Hùng");
        finds(
            "SUBJECTIVE: M. Brontë is a 36 year old man",
            "NAME",
            "M. Brontë",
        );
        finds_no("a Le Fort fracture, Do Not Resuscitate", "NAME");
        finds("her mother died at 96 of a stroke", "AGE", "96");
        finds("father passed away at the age of 93.", "AGE", "93");
        finds_no("he died at 10:30 on the ward", "AGE");
        finds_no("died at 36 weeks gestation", "AGE");
        finds("her relative, Merit Dravec, called", "NAME", "Merit Dravec");
        finds("seen by Dr. John L. at noon", "NAME", "John L.");
        finds("Mgmt for Mr. W., who", "NAME", "W.");
        finds("treated at St. Vincent's on", "LOCATION", "St. Vincent's");
        finds(
            "last seen at Cedar Crest on May 2",
            "LOCATION",
            "Cedar Crest",
        );
        finds(
            "surgery at Houston Memorial.",
            "LOCATION",
            "Houston Memorial",
        );
        finds(
            "records from Boston General were",
            "ORGANIZATION",
            "Boston General",
        );
        finds(
            "seen at Elm Street Clinic on",
            "ORGANIZATION",
            "Elm Street Clinic",
        );
        finds("admitted Aug 10, '23 for", "DATE", "Aug 10, '23");
        let got = found("Social History: lives alone");
        assert!(got.iter().all(|(_, l, _)| *l != "NAME"), "{got:?}");
        finds_nothing("St. John's wort daily");
    }

    #[test]
    fn chains_insurers_codes_and_dates_of_session_17() {
        let org = "ORGANIZATION";
        finds("sent to Walgreens #04417 in", org, "Walgreens");
        finds("seen at CVS MinuteClinic in Lenox", org, "MinuteClinic");
        finds(
            "Ins: Anthem Blue Cross Blue Shield of Georgia, ID",
            org,
            "Anthem Blue Cross Blue Shield of Georgia",
        );
        finds("at Our Lady of Grace parish", org, "Our Lady of Grace");
        finds(
            "member of the American Legion Post 14;",
            org,
            "American Legion Post 14",
        );
        finds(
            "HIGH DESERT FAMILY MEDICINE\n",
            org,
            "HIGH DESERT FAMILY MEDICINE",
        );
        finds(
            "en la Iglesia de San Juan el Real.",
            org,
            "Iglesia de San Juan el Real",
        );
        finds_no("Keep a Target heart rate", org);
        finds_no("Covered by Medicare Part B", org);
        finds(
            "report, number LPD24-01447.",
            "OTHER_IDENTIFIER",
            "LPD24-01447",
        );
        finds(
            "medical record number 5 5 0 2 1 9 8, date",
            "MEDICAL_RECORD_NUMBER",
            "5 5 0 2 1 9 8",
        );
        finds(
            "MRN HH 0449 1122 Age",
            "MEDICAL_RECORD_NUMBER",
            "HH 0449 1122",
        );
        finds("Last 4: 2207 DOB", "SSN", "2207");
        finds("SSN xxx-xx-4417 (partial)", "SSN", "xxx-xx-4417");
        // Gated on the English word list: no user name is an English word.
        let listed = Recognizers::builtin_with_stand_in_gazetteers();
        finds_in(
            &listed,
            "Transcribed: kmoody 09/27/2023",
            "USERNAME",
            "kmoody",
        );
        finds_none_in(&listed, "Account locked after three tries", "USERNAME");
        finds_none_in(&listed, "viewed by provider today", "USERNAME");
        let date = "DATE";
        finds("date of visit: october 12 2023.", date, "october 12 2023");
        finds("recheck november 2nd.", date, "november 2nd");
        finds("FOLLOW UP ON NOVEMBER 22ND.", date, "NOVEMBER 22ND");
        finds(
            "appointment on the twenty-second. We",
            date,
            "twenty-second",
        );
        finds(
            "date of service july fourth 2023.",
            date,
            "july fourth 2023",
        );
        finds("event monitor (3/9-4/8) without", date, "4/8");
        finds("to the floor 1/28 evening", date, "1/28");
        finds("Recheck INR and 11/01.", date, "11/01");
        finds("TT14T4471 18MAR DL 1872", date, "18MAR");
        finds_no("on the first dose of", date);
        finds_no("you may 2 tabs daily", date);
        finds_no("Strength 4/5-5/5 in the legs", date);
        finds_no("MMSE 12/30 today", date);
        finds("Memorial for Evelyn Strand (99) set", "AGE", "99");
        finds("Peggy Lindqvist, 97, of Duluth", "AGE", "97");
        finds("my dad who's 91 and", "AGE", "91");
        finds_no("she's 96 lbs", "AGE");
        finds("Call Marcus at (404) 555-0189.", "NAME", "Marcus");
    }

    #[test]
    fn trades_roles_roads_and_ages_of_session_18() {
        let org = "ORGANIZATION";
        finds(
            &note("He drives for Prairie Farms Dairy at night."),
            org,
            "Prairie Farms Dairy",
        );
        finds(&note("Retired Calumet Steel worker."), org, "Calumet Steel");
        finds(
            &note("Arrived by Pike County Ambulance 07:02."),
            org,
            "Pike County Ambulance",
        );
        finds_no(&note("Sent to Blood Bank for crossmatch."), org);
        finds_no(
            &note("Works at Kawai Musical Instruments Manufacturing Co. Ltd."),
            "LOCATION",
        );
        // In any text since session 20: the shop or the employer of the writer; not a sentence's
        // end before a trade ("Arthur Bell. Coffee morning") or a national scheme.
        finds(
            "Plumber invoice from High Country Plumbing attached.",
            org,
            "High Country Plumbing",
        );
        finds_no(
            "for the family of Arthur Bell. Coffee morning on Friday",
            org,
        );
        finds_no("Your National Insurance number is on the letter.", org);
        finds("a job at St. Anne Foods and", org, "St. Anne Foods");
        finds(
            "PHYSICAL THERAPY Summit Sports & Spine PT - Bend clinic",
            org,
            "Summit Sports & Spine PT",
        );
        finds(
            "from work (Palmetto Tire & Auto).",
            org,
            "Palmetto Tire & Auto",
        );
        finds_no("Obstetrics & Gynecology consult", org);
        finds_no("Physical Medicine & Rehabilitation", org);
        finds_no("Procter & Gamble shares rose", org);
        finds(
            "she is a barista at Zeitgeist Coffee in",
            org,
            "Zeitgeist Coffee",
        );
        finds("a line cook at the Barking Crab.", org, "Barking Crab");
        finds_no("a nurse at the ED overnight", org);
        finds("72 y/o male, retired BNSF conductor, who", org, "BNSF");
        finds(
            "former Consol Energy underground miner",
            org,
            "Consol Energy",
        );
        let listed = Recognizers::builtin_with_stand_in_gazetteers();
        finds_in(
            &listed,
            "Report: Hospital for Special Surgery, New York",
            org,
            "Hospital for Special Surgery",
        );
        finds_in(
            &listed,
            "at St. Luke's Hospital for John D. on",
            org,
            "St. Luke's Hospital",
        );
        let road = "STREET_ADDRESS";
        finds("collision on I-84 westbound", road, "I-84");
        finds("LOCATION: Hwy 58 MP 21, eastbound", road, "Hwy 58 MP 21");
        finds(
            "on I-40 at mile marker 231 near",
            road,
            "I-40 at mile marker 231",
        );
        finds("Lives off Rt. 218.", road, "Rt. 218");
        finds_no("Had I-131 therapy in 2019.", road);
        finds_no("It cost US 2 dollars.", road);
        let age = "AGE";
        finds_in(&listed, "Harold is 91; Faith is 88.", age, "91");
        finds_in(&listed, "my grandma rosa is 96 and", age, "96");
        finds_in(&listed, "she's like 96. I have a key", age, "96");
        finds_none_in(&listed, "Provider is 95 today", age);
        finds_none_in(&listed, "he is 92 kg", age);
        finds("who died last week at 99. She", age, "99");
        finds("lived to 103 and died in Racine", age, "103");
        finds("Happy 90th to my nani", age, "90th");
        finds("for Auntie Kamala's 95th on the 9th", age, "95th");
        finds("celebrating the 90th birthday of", age, "90th");
        finds_no("the clinic's 100th anniversary", age);
        finds("hij wordt 90!!", age, "90");
        finds("zum 100. Geburtstag am", age, "100");
        finds("si Lola Pacita ay 94 taong gulang", age, "94");
        finds("Hep B 3/12; 2-month vaccines 4/10;", "DATE", "4/10");
        finds("worked fev/2015 – dez/2022 at", "DATE", "fev/2015");
        finds(
            "on the twenty-first of September at",
            "DATE",
            "twenty-first of September",
        );
        finds(
            "Date of birth: 22 / 07 / 2001 Address",
            "DATE",
            "22 / 07 / 2001",
        );
        finds("(yes - Fourth of July baby)", "DATE", "Fourth of July");
        finds("birthday on St David's Day and", "DATE", "St David's Day");
        // In a clinical text, an unlisted word after "through", "via" or "with" is a vendor.
        let vendor =
            "Pt on home O2, dx COPD, meds reviewed. Concentrator ordered through Oxyvantis.";
        finds_in(&listed, vendor, org, "Oxyvantis");
        finds_none_in(
            &listed,
            "Pt on home O2, dx COPD, meds reviewed. FHR 140 by Doppler.",
            org,
        );
        finds_none_in(&listed, "Shipped through Oxyvantis today.", org);
        finds(
            "the UMWA Local 1638 retiree breakfasts",
            org,
            "UMWA Local 1638",
        );
        finds(
            "deployments to FOB Salerno and Camp Buehring. Now",
            "LOCATION",
            "Camp Buehring",
        );
        finds("MRI from Luke AFB clinic", "LOCATION", "Luke AFB");
        finds("in the Highlands neighborhood.", "CITY", "Highlands");
        finds("County: Lee Date of birth", "CITY", "Lee");
        finds(
            "SUMMIT FAMILY DENTAL & ORTHODONTICS 1290 W. Ute Ave",
            org,
            "SUMMIT FAMILY DENTAL & ORTHODONTICS",
        );
        finds(
            "Fax from TRI-CITIES NEPHROLOGY, P.C. 7115",
            org,
            "TRI-CITIES NEPHROLOGY, P.C.",
        );
        let loc = "LOCATION";
        finds("transport to MGH via LRTA", loc, "MGH");
        finds(
            "a second opinion at \"mass general\" -",
            loc,
            "mass general",
        );
        finds("treated at wills eye with", loc, "wills eye");
        finds("Images pushed to UCSF (3/11)", loc, "UCSF");
        // A brand that is also a listed town is no place.
        finds_none_in(&listed, "He drives a Honda now", "CITY");
        finds_in(&listed, "a stopover in Doha", "CITY", "Doha");
    }

    #[test]
    fn grouped_numbers_kin_plates_and_months_of_session_19() {
        let listed = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, label, value) in [
            (
                "Folder no: GVH 2210-448-7 Patient",
                "MEDICAL_RECORD_NUMBER",
                "GVH 2210-448-7",
            ),
            (
                "Hosp no: VRP 118-774 Status",
                "MEDICAL_RECORD_NUMBER",
                "VRP 118-774",
            ),
            (
                "OHIP 4582 771 093 KT   Chart",
                "HEALTH_PLAN_NUMBER",
                "4582 771 093 KT",
            ),
            (
                "Medicare No: 2123 45670 1   IRN 2",
                "HEALTH_PLAN_NUMBER",
                "2123 45670 1",
            ),
            (
                "NHIA enrolment no.: FCT/0442/18873/A  Thank",
                "HEALTH_PLAN_NUMBER",
                "FCT/0442/18873/A",
            ),
            (
                "Our Ref: CSH/MED/23/0917 12th October",
                "OTHER_IDENTIFIER",
                "CSH/MED/23/0917",
            ),
            (
                "Midwife: Shona Baird, RM (NMC PIN 18A2231S)",
                "LICENSE_NUMBER",
                "18A2231S",
            ),
            ("TNMC Reg. 98814", "LICENSE_NUMBER", "98814"),
            (
                "Aadhaar (for ABHA) : xxxx xxxx 8812",
                "SSN",
                "xxxx xxxx 8812",
            ),
            ("NI number QQ 12 34 56 C has", "SSN", "QQ 12 34 56 C"),
            (
                "Two-wheeler (TN 09 BX 4471) skid",
                "LICENSE_PLATE",
                "TN 09 BX 4471",
            ),
            (
                "Veicolo targa FG 418 KT, intestato",
                "LICENSE_PLATE",
                "FG 418 KT",
            ),
            (
                "Card on file ending 0071. Special",
                "ACCOUNT_NUMBER",
                "0071",
            ),
            (
                "Switch (02) 4222 5000  DISCHARGE",
                "PHONE",
                "(02) 4222 5000",
            ),
            (
                "Dr Tomasz Wróblewski, FY2, bleep 2281, 16/02",
                "PHONE",
                "2281",
            ),
            ("DOB 1/19/1933 (91 y)   Acct", "AGE", "91"),
            (
                "files TALLCHIEF_R_FACE_LOBL_20240123.jpg",
                "PHOTO",
                "TALLCHIEF_R_FACE_LOBL_20240123.jpg",
            ),
            ("(ID photo 23-04417-01)", "PHOTO", "23-04417-01"),
            ("guy came out aug 3, charged", "DATE", "aug 3"),
            ("se me acabaron en diciembre y", "DATE", "diciembre"),
            ("(diagnosi marzo 2019).", "DATE", "marzo 2019"),
            ("Mum Losa present.", "NAME", "Losa"),
            ("Agent (Lovely): Thanks", "FIRST_NAME", "Lovely"),
            ("bilateral (Dr. Hall) Age 71", "NAME", "Hall"),
            ("wt 104 kg (up 5 kg since Oct). JVP", "DATE", "Oct"),
            ("Dr. Brandt, last seen February.", "DATE", "February"),
            ("RTC 4 weeks, 10/4.", "DATE", "10/4"),
            ("Nkechi Eze 38F w/ sickle cell", "NAME", "Nkechi Eze"),
            (
                "at Hospice of the Valley.",
                "ORGANIZATION",
                "Hospice of the Valley",
            ),
            (
                "contact 207.555.0614.  Ines Aldana-Brooks, PMHNP-BC",
                "NAME",
                "Ines Aldana-Brooks",
            ),
        ] {
            finds_in(&listed, text, label, value);
        }
        // A family history's entry, a street's "Dr.", a month's day with its unit, May the verb.
        finds_none_in(&listed, "Mother: Yes. Father Soft at 80.", "NAME");
        finds_none_in(&listed, "our new home on Pinecrest Dr. Thanks for", "NAME");
        finds_none_in(&listed, "I may 3 times", "DATE");
        finds_none_in(&listed, "dec 2 mg", "DATE");
        finds_none_in(&listed, "Group: NCMCD-04 Secondary", "HEALTH_PLAN_NUMBER");
        finds_none_in(&listed, "the UMWA Local 1638 retirees", "PHONE");
        // "PT" is physical therapy as often as a credential.
        finds_none_in(&listed, "She will need HH PT/OT and a nurse visit", "NAME");
        // Businesses by trade in a clinical text.
        for (text, value) in [
            (
                "Referral to Lewis County Office for the Aging.",
                "Lewis County Office for the Aging",
            ),
            (
                "Fitting at Cedar Rapids Hearing & Balance.",
                "Cedar Rapids Hearing & Balance",
            ),
            ("Towed to Ace Towing in Remsen.", "Ace Towing"),
        ] {
            finds_in(&listed, &note(text), "ORGANIZATION", value);
        }
        finds_none_in(
            &listed,
            &note("a grant through the local Area Agency on Aging"),
            "ORGANIZATION",
        );
    }

    #[test]
    fn towns_initials_relatives_employers_and_postcodes_of_session_21() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        // A small town after a word that says place; an initial and a listed surname inside a
        // line; a lower-case given name after the relative or carer it is.
        for (text, label, value) in [
            ("Her son is a curate in Tuam and", "CITY", "Tuam"),
            ("works out past Crows Nest; he", "CITY", "Crows Nest"),
            ("Agent note (J. Orozco): escalated", "NAME", "J. Orozco"),
            ("the rehab nurse emily is to ring", "FIRST_NAME", "emily"),
        ] {
            finds_in(&t, text, label, value);
        }
        // No surname or English word as a town, no list letter, side or word after an initial,
        // no word that stands after a relative as often as a name.
        for (text, label) in [
            ("a letter from Kelly about it", "CITY"),
            ("Plan:\nB. Johnson protocol", "NAME"),
            ("downgoing on the R. Ortel sign", "NAME"),
            ("cultures grew A. Brown colonies", "NAME"),
            ("my son will ring tomorrow", "FIRST_NAME"),
        ] {
            finds_none_in(&t, text, label);
        }
        // An employer after the words that name one.
        let org = "ORGANIZATION";
        finds(
            "an employee of Cauvery Infotech Pvt Ltd since",
            org,
            "Cauvery Infotech Pvt Ltd",
        );
        finds(
            "Fit note issued; employer is Rame Head Fishing today",
            org,
            "Rame Head Fishing",
        );
        finds(
            "Empresa: Envases Manzanares, nº 4",
            org,
            "Envases Manzanares",
        );
        // UK postcodes by their shape; a code with a letter they never use is none.
        finds(
            "27 Wellington Crescent, Harrogate HG1 4QT.",
            "ZIP_CODE",
            "HG1 4QT",
        );
        finds("London SW1A 2AA", "ZIP_CODE", "SW1A 2AA");
        finds_no("batch QA1 4CV passed", "ZIP_CODE");
    }

    #[test]
    fn addresses_accounts_logs_and_dictations_of_session_22() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        // A town right after the place of care or the shop it names.
        for (text, label, value) in [
            (
                "referral from St Jarlath Clinic Tuam - seen",
                "CITY",
                "Tuam",
            ),
            ("scripts from Kelly Pharmacy Tuam);", "CITY", "Tuam"),
        ] {
            finds_in(&t, text, label, value);
        }
        // Not a surname after a facility, nor a town the sentence goes on after.
        for (text, label) in [
            ("seen at the Hospital Kelly, ward 4", "CITY"),
            ("Regional Hospital Tuam based physio", "CITY"),
        ] {
            finds_none_in(&t, text, label);
        }
        for (text, label, value) in [
            // Boxes, bags and rural routes with their town; a box alone is none.
            (
                "Private Bag X3, Tygerberg",
                "STREET_ADDRESS",
                "Private Bag X3",
            ),
            ("DOB 19.04.1966 RD 3, Ahipara", "STREET_ADDRESS", "RD 3"),
            (
                "Addr: RR 2 Box 19A       Memphis",
                "STREET_ADDRESS",
                "RR 2 Box 19A",
            ),
            // National numbers with their trunk zero; an IBAN whose check digits fail.
            ("consents - 07700 900 374", "PHONE", "07700 900 374"),
            (
                "Guardian: M. Stone (03) 5320 4419.",
                "PHONE",
                "(03) 5320 4419",
            ),
            ("Magadi,98805 55123,4471", "PHONE", "98805 55123"),
            (
                "IBAN DE12 3705 0299 0001 2345 67;",
                "ACCOUNT_NUMBER",
                "DE12 3705 0299 0001 2345 67",
            ),
            (
                "Account number: 0112 4471 8890 01 Customer",
                "ACCOUNT_NUMBER",
                "0112 4471 8890 01",
            ),
            // Users named by a log's or a forum's layout.
            (
                "Posted by u/maple_budgeter in",
                "USERNAME",
                "maple_budgeter",
            ),
            (
                "Accepted password for a.zielinska from 10.0.0.1",
                "USERNAME",
                "a.zielinska",
            ),
            (
                "Group <Staff> User <jpereira> IP <10.0.0.2>",
                "USERNAME",
                "jpereira",
            ),
            // Dictated years, record numbers and phones; a range's first day; a dated entry.
            (
                "date of birth the ninth of May nineteen thirty one hospital",
                "DATE",
                "ninth of May nineteen thirty one",
            ),
            (
                "date of service february twenty first twenty twenty four preoperative",
                "DATE",
                "february twenty first twenty twenty four",
            ),
            (
                "hospital number M four four seven two nine one full stop",
                "MEDICAL_RECORD_NUMBER",
                "M four four seven two nine one",
            ),
            (
                "telephone oh seven seven double oh nine double oh three two one his",
                "PHONE",
                "oh seven seven double oh nine double oh three two one",
            ),
            ("ward between 16 and 29 November 2022", "DATE", "16"),
            ("Paper goods: Deacon Ray Stone", "NAME", "Ray Stone"),
            ("Bed 22 - Mdm Lee Ah Moi, 90 y.o.", "NAME", "Lee Ah Moi"),
            ("02/06 1545 - LVM for pt", "DATE", "02/06"),
        ] {
            finds(text, label, value);
        }
        for (text, label) in [
            ("see Box 3 of the form", "STREET_ADDRESS"),
            ("BP 118/72, RR 16, SpO2 97%", "STREET_ADDRESS"),
            ("Dose 0.5 mg; ref 2024 0315", "PHONE"),
            ("one or two of the five seven cases", "PHONE"),
            ("insulin: increase 4 u/kg/h for 6 h", "USERNAME"),
        ] {
            finds_no(text, label);
        }
    }

    #[test]
    fn signoffs_holidays_and_months_of_session_23() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, label, value) in [
            // Initials that sign, type or read back a note.
            ("[RK/mdw  D: 09/19/2024 16:05", "NAME", "RK"),
            ("[RK/mdw  D: 09/19/2024 16:05", "NAME", "mdw"),
            ("MD. Transcribed 10/30/23 kjb. Report faxed", "NAME", "kjb"),
            ("Typed: 24.06.24 (km)  Dr Tariq", "NAME", "km"),
            ("talking about Edna. — HA 03/02/25 14:10", "NAME", "HA"),
            ("To Pod B. - jm RN", "NAME", "jm"),
            ("passed on to chaplaincy. RW\n", "NAME", "RW"),
            ("called to Dr. Okafor 09:52 by JD, read back", "NAME", "JD"),
            // Holidays in any case, with a spoken year; months alone in lower case.
            (
                "went up to 100mg on boxing day. im fine",
                "DATE",
                "boxing day",
            ),
            (
                "quit on new years day twenty twenty",
                "DATE",
                "new years day twenty twenty",
            ),
            ("admitted 31/12/2023 (Hogmanay) 23:50", "DATE", "Hogmanay"),
            ("sleeping a lot since november, dr says", "DATE", "november"),
            (
                "renting since march 2023. the ceiling",
                "DATE",
                "march 2023",
            ),
        ] {
            finds_in(&t, text, label, value);
        }
        for (text, label) in [
            // Acronyms that end a line or follow "by", greetings and things named for a day.
            ("EDD 1/24/2024. LMP 3/20/24", "NAME"),
            ("Cardiology Clinic - HCM\nMurmur 3/6", "NAME"),
            ("seen by PT at 14:00", "NAME"),
            ("transcribed 8/12/2024 at 2:59am", "NAME"),
            ("Merry Christmas and a Happy Diwali!", "DATE"),
            ("Update your Christmas card lists", "DATE"),
            ("Service of thanksgiving at Southwark", "DATE"),
            ("she may come in march or may not", "DATE"),
        ] {
            finds_none_in(&t, text, label);
        }
    }

    #[test]
    fn ranks_signoffs_dates_and_title_towns_of_session_24() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, label, value) in [
            // A surname after a rank, or after "doctor" as dictation spells it.
            (
                "notified by FHP Trooper Casillas (#1187)",
                "NAME",
                "Casillas",
            ),
            ("brought by police (Ofc. Reyes, #3318)", "NAME", "Reyes"),
            (
                "anesthesia doctor Raines general endotracheal",
                "NAME",
                "Raines",
            ),
            // Listed given names that are words, signing off or inside a sentence.
            (
                "my sugars been high\nthx hope m\n--- Reply",
                "FIRST_NAME",
                "hope",
            ),
            (
                "IMG_4471.HEIC attached\n-will\n---- reply",
                "FIRST_NAME",
                "will",
            ),
            ("twins, Hope and Will, on Sunday", "FIRST_NAME", "Will"),
            ("Son (Emeka) calling from Lagos", "FIRST_NAME", "Emeka"),
            // A letter's reference: the author's initials and the typist's.
            ("Dictated: AR/kjh   Job 4471902", "NAME", "AR"),
            ("Dictated: AR/kjh   Job 4471902", "NAME", "kjh"),
            // Dates: month and day shorthand, months after a verb, ordinals, holidays.
            ("Ix (04/09): NS1 Ag POSITIVE", "DATE", "04/09"),
            ("blood cx 4/1 E. coli", "DATE", "4/1"),
            ("darbepoetin started June, sevelamer", "DATE", "June"),
            ("Quarter: Jan-Mar 2024 Support", "DATE", "Jan"),
            ("lab ticket, 18th 9am. Red flags", "DATE", "18th"),
            (
                "short arm cast on the ninth period she reports",
                "DATE",
                "ninth",
            ),
            (
                "short of breath on Election Day. CXR",
                "DATE",
                "Election Day",
            ),
            ("2024/02/03（節分）日勤", "DATE", "節分"),
            // The town ending a title line, after a postcode, before an airport's code.
            ("ST. JARLATH'S HOSPITAL, TUAM\nWARD NOTE", "CITY", "TUAM"),
            ("Hinterhaus 2. OG 10435 Bath  Rechnung", "CITY", "Bath"),
            ("Sat 04 Jan 2025  Tuam (NOC) 11:25", "CITY", "Tuam"),
            // Handles heading a Discord or Slack export; a payee; an insurer by its label.
            (
                "kaylee_b — 11/14/2023 9:02 PM\nok who",
                "USERNAME",
                "kaylee_b",
            ),
            (
                "#random\n\ngrace.k  9:31 AM\nmiss you",
                "USERNAME",
                "grace.k",
            ),
            (
                "Rent – Standing order to J WHITTAKER (ref FLAT2)",
                "NAME",
                "J WHITTAKER",
            ),
            (
                "Ins: DentaGuard PPO, Sub ID DG-55810274",
                "ORGANIZATION",
                "DentaGuard PPO",
            ),
            ("Police (PC Hughes, South Wales Police", "NAME", "Hughes"),
            // Korean and Japanese names by their role or title of address.
            ("보호자: 아들 정대현 (010-5555-7714)", "NAME", "정대현"),
            ("소화기내과 최동훈 교수님께 전화", "NAME", "최동훈"),
            ("循環器内科　松本 健一 先生 御侍史", "NAME", "松本 健一"),
        ] {
            finds_in(&t, text, label, value);
        }
        for (text, label) in [
            ("the deputy said he would call", "NAME"),
            ("ID: Blood cx 2/2 GNR, E. coli", "DATE"),
            ("discharged June Hale to rehab", "DATE"),
            ("the Will of the deceased", "FIRST_NAME"),
            ("thanks doc\nsee you", "FIRST_NAME"),
            ("Interpreter (Swahili) by video", "FIRST_NAME"),
            ("history of Bell's palsy (G51.0)", "FIRST_NAME"),
            ("fluent in German and English", "FIRST_NAME"),
            ("IMSS, Hermosillo, Tuam\nNOTA", "CITY"),
            ("moved there in 2019 Bath.", "CITY"),
            ("#agenda\nRegistration  9:00 AM\n", "USERNAME"),
            ("Ins: Medicare A/B", "ORGANIZATION"),
            ("Insurance: Member ID: XPG620747263.", "ORGANIZATION"),
        ] {
            finds_none_in(&t, text, label);
        }
    }

    #[test]
    fn relatives_neighbourhoods_and_title_line_organizations_of_session_25() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, label, value) in [
            // A relative's name that is a word, after a kinship word inside a sentence; a name
            // after a care role, also in brackets.
            ("self and son River, 4, at home", "NAME", "River"),
            ("called charge RN (Marcus) 00:24", "NAME", "Marcus"),
            ("lives with moko Tamati and", "NAME", "Tamati"),
            // Neighbourhoods by the word that says so; towns split by a slash.
            (
                "Calle 5, Col. Crédito Constructor, 03940",
                "CITY",
                "Col. Crédito Constructor",
            ),
            (
                "Admiralty Way, Lekki Phase 1, Lagos",
                "CITY",
                "Lekki Phase 1",
            ),
            (
                "Evet, Caferağa Mah., 34710 Kadıköy",
                "CITY",
                "Caferağa Mah.",
            ),
            (
                "around the Alberta Arts District is",
                "CITY",
                "Alberta Arts District",
            ),
            (
                "No: 245 D: 7, Kadıköy/İstanbul. Saat",
                "CITY",
                "Kadıköy/İstanbul",
            ),
            ("1842 – São Paulo/SP – 01310-200", "CITY", "São Paulo"),
            // The organization a clinical document's capital title line opens with.
            (
                "BARWON HEALTH — Community Palliative Care\nPatient: J. Doe  MRN 4471203\nDx: COPD",
                "LOCATION",
                "BARWON HEALTH",
            ),
        ] {
            finds_in(&t, text, label, value);
        }
        for (text, label) in [
            ("campus, Tuesdays/Thursdays, and", "CITY"),
            ("Answer, Yes/No. Thanks", "CITY"),
            ("FLOWSHEET - Med/Surg, 4 West", "CITY"),
            ("Therapie: Zantac/Lasix 40 mg", "CITY"),
            (
                "ANTICOAGULATION CLINIC - PHARMACIST NOTE\nPatient: J. Doe  MRN 4471203\nINR 2.4",
                "LOCATION",
            ),
            (
                "DISCHARGE SUMMARY — PAGE 1\nPatient: J. Doe  MRN 4471203\nDx: COPD",
                "LOCATION",
            ),
        ] {
            finds_none_in(&t, text, label);
        }
        // A family history's status word after a kinship word is no name, headed or not.
        for text in [
            "Mother: Deceased at 60",
            "mother Deceased at 60, father Alive.",
        ] {
            let got = found_with(&t, text);
            assert!(got.iter().all(|(p, ..)| p != "name_kin_word"), "{got:?}");
        }
    }

    #[test]
    fn ages_months_days_and_last_fours_of_session_26() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, label, value) in [
            // Ages over 89 after a titled surname, in a bracket, after a clause, labelled.
            ("Mrs Blackwood is 91 and very deaf", "AGE", "91"),
            ("lives with wife (Bea, 91), drives", "AGE", "91"),
            ("my mother, who lives with me, is 97. We", "AGE", "97"),
            ("Age: ninety-one     MRN: 4471", "AGE", "ninety-one"),
            ("Age at death: 98   Patient ID", "AGE", "98"),
            ("advanced age (103), CKD 3b", "AGE", "103"),
            ("in her 98th year. Predeceased", "AGE", "98th"),
            ("who will turn 100 on her birthday", "AGE", "100"),
            // Months paired, cut years, a month after "the"; ordinal days ending a phrase.
            ("Toombs Produce April-July - please", "DATE", "April-July"),
            ("TTE Jan '24), T2DM", "DATE", "Jan '24"),
            ("disputes the March invoice", "DATE", "March"),
            ("Perfect, booked the 14th. One more", "DATE", "14th"),
            (
                "told him on the 4th and 11th. Nothing",
                "DATE",
                "4th and 11th",
            ),
            // Last fours and short bleeps.
            (
                "Cliente: 55. Card ends 6613. Gestor",
                "ACCOUNT_NUMBER",
                "6613",
            ),
            ("SSN (last 4) 6628     TRICARE", "ACCOUNT_NUMBER", "6628"),
            (
                "paid by credit card xx4417) Delivery",
                "ACCOUNT_NUMBER",
                "xx4417",
            ),
            ("our CNS (bleep 611), will phone", "PHONE", "611"),
            // Wards by their suffix, places a distance away, a news dateline's town.
            ("3-4-12 Daido, Tennoji-ku, Osaka", "CITY", "Tennoji-ku"),
            ("from home ~14 mi N of Chinle (no street", "CITY", "Chinle"),
            // The town on a CV line and before a Turkish case ending; nicknames and birth names.
            (
                "Account Executive, BrightPath PR, Bristol — Jul 2016",
                "CITY",
                "Bristol",
            ),
            ("Babaannem Lagos'ta doğdu, 1933", "CITY", "Lagos"),
            ("their daughter Anna (Annie) Kowalska", "NAME", "Annie"),
            ("Bridget Duggan (née Moloney), Listowel", "NAME", "Moloney"),
        ] {
            finds_in(&t, text, label, value);
        }
        for (text, label) in [
            ("Sats, is 94% on air", "AGE"),
            ("her room on the 6th floor is quiet", "DATE"),
            ("the 3rd time this week", "DATE"),
            ("skips in the 3rd and 4th cogs", "DATE"),
            ("POLICE APPEAL - MISSING PERSON", "CITY"),
            ("the May Queen parade", "DATE"),
            ("pager 611 mg", "PHONE"),
            ("Lab Manager, Lab — Jan 2020", "CITY"),
        ] {
            finds_none_in(&t, text, label);
        }
        // A role, a relative or an English word in the bracket is no nickname.
        for text in [
            "Emily (Deceased) at 60",
            "Emily (Mum) called",
            "Emily (Pharm), SAPC",
        ] {
            found_by_none_of(&t, text, &["name_given_bracket"]);
        }
    }

    #[test]
    fn cities_names_and_dates_of_session_28() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        let city = "CITY";
        for (text, value) in [
            // Cities in capitals, on a ticket or a letterhead.
            ("08NOV TK 711 DOHA 05:25 -> MANILA 10:35", "DOHA"),
            ("08NOV TK 711 DOHA 05:25 -> MANILA 10:35", "MANILA"),
            // A city in quotes, in a SQL row, or joined to the next by a dash.
            ("'Chapinero', 'Lagos', '1983-07-25'", "Lagos"),
            ("tickets (Lagos–Doha) and TAP 1019", "Lagos"),
            ("tickets (Lagos-Doha) and TAP 1019", "Lagos"),
            // A city that scores and devices are named for, named for itself.
            ("Title: Moving to Berlin from Ireland", "Berlin"),
            ("Current: Ledgerline Payments, Toronto, 4 yrs", "Toronto"),
            ("Reji Varghese (Houston, USA)", "Houston"),
        ] {
            finds_in(&t, text, city, value);
        }
        // The score, the scale, the device and the number keep the eponym; a city in capitals
        // that starts the name of a court, a state or a paper, a clinical acronym and a
        // tonometer stay.
        for text in [
            "GCS: Glasgow Coma Scale 15",
            "GCS: Glasgow 15",
            "Device: Boston Scientific ICD",
            "score: Glasgow-Blatchford 14",
            "Pathology: Nottingham grade 2",
            "model: Seattle HF model 88%",
            "IN THE MAGISTRATE COURT OF LAGOS STATE IN THE OGBA DIVISION",
            "TB screen: IGRA (QFT-Plus) negative",
            "IOP 16/15 (Doha-Pen)",
        ] {
            found_by_none_of(
                &t,
                text,
                &[
                    "place_eponym_city",
                    "place_world_capitals",
                    "place_world_capitals_words",
                    "place_world_joined",
                ],
            );
        }
        // A name with the father's name, a name someone is said to have, a surname with its
        // particles after a label.
        finds_in(
            &t,
            "NOK: daughter Kavitha d/o Rajendran, hp 8133 4471",
            "NAME",
            "Kavitha d/o Rajendran",
        );
        finds_in(
            &t,
            "Worker (Ms. Priya d/o Suppiah) and",
            "NAME",
            "Priya d/o Suppiah",
        );
        finds_in(
            &t,
            "her moms number, her name is Hope. got it",
            "FIRST_NAME",
            "Hope",
        );
        finds_in(
            &t,
            "Patient: Van der Berg, Mei    MRN 00062847",
            "NAME",
            "Van der Berg, Mei",
        );
        finds_in(
            &t,
            "Bed 7 - Caguioa, Lorenzo, 81/M, Hosp. No. SRAH-0219876",
            "NAME",
            "Caguioa, Lorenzo",
        );
        finds_in(
            &t,
            "Bed A - LEBLANC, Merit J.  \"Mert\"   71 M   MRN 4490217",
            "NAME",
            "LEBLANC, Merit J.",
        );
        found_by_none_of(
            &t,
            "Ich bin Lukas, 27, Softwareentwickler",
            &["name_child_of"],
        );
        // Companies by the forms large and small firms share; an Irish county, a holding's or a
        // fund's name and a layout column are none.
        for (text, value) in [
            (
                "Employer: Razorback Freight Lines, Inc.      DER: Cody",
                "Razorback Freight Lines, Inc.",
            ),
            (
                "I was fired from Coastal Brew Co. on April 12",
                "Coastal Brew Co.",
            ),
            (
                "Employer: Hanbit Semiconductor Co., Ltd., Icheon",
                "Hanbit Semiconductor Co., Ltd.",
            ),
            (
                "Employer: Bluewave Networks (Pty) Ltd. From",
                "Bluewave Networks (Pty) Ltd.",
            ),
        ] {
            finds_in(&t, text, "ORGANIZATION", value);
        }
        for text in [
            "Address: Cloonfad, Kilkelly, Co. Mayo F12 K7C9",
            "Residential Secure Income PLC and Bagir Group Ltd. today",
            "The Asia Pacific Fund Inc. is a 501(c)3",
            "Reviewed by: Ishaan Mehta, CCDS    Co-signed: G. Kulkarni",
        ] {
            found_by_none_of(&t, text, &["business_incorporated"]);
        }
        // Day and month before a time of day; a lab value before a time is none.
        finds_in(
            &t,
            "my flight lands 14.07 23:40 at arlanda",
            "DATE",
            "14.07",
        );
        finds_in(&t, "op 13-06 om 02:14 in Schiebroek", "DATE", "13-06");
        finds_none_in(&t, "Hb 12.1 08:00 stable", "DATE");
    }

    #[test]
    fn references_plates_phones_dates_and_doors_of_session_29() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, label, value) in [
            // References numbered by slashes; a unit, a setting and a date are none (below).
            (
                "lab no. MCS/24/3318. Bed 14",
                "OTHER_IDENTIFIER",
                "MCS/24/3318",
            ),
            (
                "(MCCD no. 4471/KATH/24)",
                "OTHER_IDENTIFIER",
                "4471/KATH/24",
            ),
            (
                "Re: Application S.24/1187/FUL for",
                "OTHER_IDENTIFIER",
                "S.24/1187/FUL",
            ),
            // A log's user, bare.
            (
                "account locked user=tnakamura lock_id=LCK-00912",
                "USERNAME",
                "tnakamura",
            ),
            // Last digits with no card named, and after masking bullets.
            (
                "my debit card lost. It ends in 2251. Bank: ok",
                "ACCOUNT_NUMBER",
                "2251",
            ),
            (
                "Payment: Mastercard •••• 5521 The class",
                "ACCOUNT_NUMBER",
                "5521",
            ),
            // A British registration by its shape, and after "reg was".
            ("our van (FY68 WLK) is due MOT", "LICENSE_PLATE", "FY68 WLK"),
            ("reg was YD19 XKP btw", "LICENSE_PLATE", "YD19 XKP"),
            // Phones in continental digit groups.
            ("Barış Aydın, 0532 418 77 09", "PHONE", "0532 418 77 09"),
            (
                "Responsable : 06 55 44 71 88 Adresse",
                "PHONE",
                "06 55 44 71 88",
            ),
            (
                "Jal., C.P. 44110 Cel. 33 5555 7421 ·",
                "PHONE",
                "33 5555 7421",
            ),
            // Postal codes after a box and after "C.P.".
            ("HOSPITAL P.O. Box 92-40200, Kisii", "ZIP_CODE", "40200"),
            ("Guadalajara, Jal., C.P. 44110 Cel.", "ZIP_CODE", "44110"),
            // A door after the house number.
            (
                "Av. Rivadavia 5120, 3° B, Caballito",
                "STREET_ADDRESS",
                "3° B",
            ),
            (
                "Rua Augusta 1234, apto 52, São Paulo",
                "STREET_ADDRESS",
                "apto 52",
            ),
            // Month and day after a word that dates an event, and the first of a pair.
            ("absent on 10/3, 10/7 and 10/8 without", "DATE", "10/8"),
            ("likely hemiarthroplasty 1/8 or 1/9. Fascia", "DATE", "1/8"),
        ] {
            finds_in(&t, text, label, value);
        }
        for (text, ids) in [
            ("bolus = BG/100 rounded", &["reference_slashed"][..]),
            ("PRVC 450/14/PEEP 8/FiO2 35%", &["reference_slashed"]),
            ("the lease ends in 2025.", &["last_digits_any"]),
            ("Blasts 2% by aspirate; CD34 IHC < 2%", &["plate_uk_shape"]),
            (
                "Shift 05/27/23 0700-1900 Infant",
                &["phone_groups_european"],
            ),
            ("Temp 37, 2° C rise", &["address_unit_foreign"]),
            (
                "Strength 4/5 and 5/5 bilat",
                &["date_slash_after_cue", "date_slash_pair_first"],
            ),
            ("ERP homework done 5/7 days", &["date_slash_after_cue"]),
            ("pt reports stopped 2/12 ago", &["date_slash_after_cue"]),
            ("user=anon ip=2001:db8::23", &["username_log_key"]),
            ("  pool_size: 20   ssl: true", &["username_speaker"]),
            ("WARN auth.LoginService - Failed", &["username"]),
        ] {
            found_by_none_of(&t, text, ids);
        }
    }

    #[test]
    fn names_in_brackets_and_quotes_banks_branches_and_dashed_dates_of_session_30() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, label, value) in [
            // An organization in brackets after the word for what it is to the person.
            (
                "Pt keen to get back to her church (Oakshaw Trinity) and",
                "ORGANIZATION",
                "Oakshaw Trinity",
            ),
            (
                "the lender (First Midwest Savings) still needs",
                "ORGANIZATION",
                "First Midwest Savings",
            ),
            // Banks, cafés and clinics named after the word for their kind, "École" included.
            (
                "Estimados señores de Banco Levante: Les",
                "ORGANIZATION",
                "Banco Levante",
            ),
            (
                "Clinique médicale Vanier — fax",
                "ORGANIZATION",
                "Clinique médicale Vanier",
            ),
            (
                "inscrite à l'École Lavallée pour",
                "ORGANIZATION",
                "École Lavallée",
            ),
            // A chain's branch by its town, and a practice named as a surgery.
            ("Home O2: Lincare Tuam -- concentrator", "CITY", "Tuam"),
            (
                "GP: Beech Grove Surgery (Dr Mallinson)",
                "LOCATION",
                "Beech Grove Surgery",
            ),
            // Names in brackets after a relative, introduced in a message, given as nicknames.
            ("my mum (Bev) says to ask", "NAME", "Bev"),
            ("hey its will, can u", "FIRST_NAME", "will"),
            ("Pt: goes by \"Preacher\" (legal name", "NAME", "Preacher"),
            ("Member: Landry, Theophile \"Theo\"    DOB", "NAME", "Theo"),
            // Month and day with a dash after a word that dates an event.
            ("AF on apixaban (last dose 02-10 at 2000h)", "DATE", "02-10"),
        ] {
            finds_in(&t, text, label, value);
        }
        for (text, ids) in [
            (
                "TRANSITIONAL CARE MANAGEMENT (TCM) -- 2",
                &["organization_bracketed"][..],
            ),
            (
                "the parish office (Mon-Fri, 9am-4pm)",
                &["organization_bracketed"],
            ),
            (
                "with mother and sister (Vietnamese) - Dr.",
                &["name_relation_bracketed"],
            ),
            ("She says it's fine. It's May.", &["name_this_is"]),
            ("drinking (on 10-12 beers/day)", &["date_dash_after_cue"]),
            (
                "Admit to Pediatric Surgery via OR. Date Of Surgery: 1/2",
                &["surgery_named"],
            ),
            ("Mood \"OK.\" Affect mildly", &["name_nickname_between"]),
        ] {
            found_by_none_of(&t, text, ids);
        }
    }

    #[test]
    fn towns_before_state_codes_chains_in_lower_case_and_initials_of_session_31() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, label, value) in [
            // A listed US place before a state's code without a comma.
            (
                "Dr. Amir Haddad, Chicago IL\n--- Addendum",
                "CITY",
                "Chicago",
            ),
            (
                "Teague VAMC, Port Leyden NY\nProgress Note",
                "CITY",
                "Port Leyden",
            ),
            // A chain in lower case after "the", "from" or "at".
            ("flovent, the cvs on dyer said", "ORGANIZATION", "cvs"),
            (
                "tried the lotrimin from walgreens for 3 days",
                "ORGANIZATION",
                "walgreens",
            ),
            // A hospital by its initials, a police force by its initials before a rank.
            (
                "Expecting transfer from RNSH ICU ~0900.",
                "LOCATION",
                "RNSH",
            ),
            ("per ortho reg Dr Ng (RDH). Escort", "LOCATION", "RDH"),
            ("by RSPD Officer Amy Traxler; returned", "LOCATION", "RSPD"),
        ] {
            finds_in(&t, text, label, value);
        }
        for (text, ids) in [
            // Clinical abbreviations and ministries of the same shape.
            (
                "hemolysis labs sent (LDH, plasma free Hgb)",
                &["hospital_initials"][..],
            ),
            (
                "Na 131 (SIADH vs cerebral salt wasting)",
                &["hospital_initials"],
            ),
            ("drug test (DOH-accredited lab)", &["hospital_initials"]),
            ("30 y/o G1P1, PPD #1 s/p SVD", &["police_initials"]),
            // Codes that are words or titles after a capitalized word.
            ("Agency ID: BRVN-20447", &["town_state_code"][..]),
            ("Chicago MD signed", &["town_state_code"]),
            (
                "assessment at home instead of the ward",
                &["business_chain_lower"],
            ),
        ] {
            found_by_none_of(&t, text, ids);
        }
    }

    #[test]
    fn months_holidays_and_east_asian_names_of_session_32() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, value) in [
            ("Plans to fast for Ramadan (expected", "Ramadan"),
            ("Our Matariki quiz night raised", "Matariki"),
            ("Date: 05/03/2024 (Oaks Day) 19:40", "Oaks Day"),
            ("wie gaat er mee naar koningsdag in Utrecht", "koningsdag"),
        ] {
            finds_in(&t, text, "DATE", value);
        }
        // Names in Chinese, Japanese and Korean before a title, as a chat's speaker, after a role.
        for (text, value) in [
            ("王伟先生，您预订的2024年10月1日", "王伟"),
            ("开学典礼。 李欣怡妈妈：收到", "李欣怡"),
            ("担任の高橋先生にも伝えておきます", "高橋"),
            ("ゆいちゃんも一緒に行っていい？", "ゆい"),
            ("[김민지] [오후 3:12] 다들 다음주", "김민지"),
            ("박서연 고객님, 주문하신 상품이", "박서연"),
            ("배송기사: 김민호 010-5557-2041", "김민호"),
        ] {
            finds_in(&t, text, "NAME", value);
        }
        // A business before the kind of place it is.
        for (text, value) in [
            (
                "working at the Duke Energy plant out by Seneca",
                "Duke Energy",
            ),
            (
                "send to the Hornbacher's pharmacy on 32nd Ave",
                "Hornbacher's",
            ),
        ] {
            finds_in(&t, text, "ORGANIZATION", value);
        }
        for (text, ids) in [
            ("我妈妈说明天来", &["name_chinese_title"][..]),
            ("payslips in the HR portal", &["business_before_its_kind"]),
            (
                "皆さん、お母さん、おばあちゃん、店長さん",
                &["name_japanese_honorific"],
            ),
        ] {
            found_by_none_of(&t, text, ids);
        }
        for (text, value) in [
            ("see u on march 3 — mehmet", "march 3"),
            ("tetanus last given in march of 2016 at", "march of 2016"),
            ("Ingeniero de campo (jul 2014 - dic 2018)", "jul 2014"),
            ("Ingeniero de campo (jul 2014 - dic 2018)", "dic 2018"),
            ("Haarlem | editie november 2024", "november 2024"),
            ("Data: gio 19 set 2024, 18:02", "19 set 2024"),
        ] {
            finds_in(&t, text, "DATE", value);
        }
        for (text, ids) in [
            ("can march 5 miles a day", &["date_month_day_lower"][..]),
            ("you may 2x daily", &["date_month_day_lower"]),
            ("a set of 2024 cards", &["date_month_year_any_case"]),
        ] {
            found_by_none_of(&t, text, ids);
        }
    }

    #[test]
    fn a_coined_word_before_a_trade_names_a_company() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, value) in [
            (
                "Works in a silk weaving unit (Kamakshi Silks). O/E",
                "Kamakshi Silks",
            ),
            ("I work for Ledgerline Payments now", "Ledgerline Payments"),
        ] {
            finds_in(&t, text, "ORGANIZATION", value);
        }
        // An ordinary word before the trade is a discipline or a product; a role after it makes
        // a certification.
        for text in [
            "Senior Software Engineer, 6 years",
            "River Tours leave at noon",
            "Certifications: AWS Solutions Architect Associate",
        ] {
            found_by_none_of(&t, text, &["business_coined_trade"]);
        }
    }

    #[test]
    fn legal_forms_and_facilities_named_for_people_of_session_27() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        let org = "ORGANIZATION";
        for (text, value) in [
            // Businesses by the legal forms small firms use.
            (
                "Works for Kaveri Infotech Pvt Ltd in Pune",
                "Kaveri Infotech Pvt Ltd",
            ),
            (
                "attorney Meredith Sato, Esq., Sato & Pruitt LLP, 36 E 4th St",
                "Sato & Pruitt LLP",
            ),
            (
                "landlord Möbelhaus Rheinblick GmbH.",
                "Möbelhaus Rheinblick GmbH.",
            ),
            (
                "employer Aceros del Norte S.A. de C.V. (Monterrey)",
                "Aceros del Norte S.A. de C.V.",
            ),
            // A facility whose first words read as a name is one facility.
            (
                "JOHN SMITH GENERAL HOSPITAL - DISCHARGE SUMMARY",
                "JOHN SMITH GENERAL HOSPITAL",
            ),
            // More trades and clubs, and services by what they do.
            (
                "Laid off from Trident Seafoods in September",
                "Trident Seafoods",
            ),
            (
                "our landlord, Brightstone Properties, says",
                "Brightstone Properties",
            ),
            (
                "a member of Hawes Rambling Club since",
                "Hawes Rambling Club",
            ),
            (
                "alarm installed by Kingdom Telecare Services, account",
                "Kingdom Telecare Services",
            ),
            (
                "guard with Sundown Security Services for ten years",
                "Sundown Security Services",
            ),
        ] {
            finds_in(&t, text, org, value);
        }
        finds_none_in(&t, "Hope Nakashima, Quality Assurance, starting", org);
        // A letter's reference initials: a word's spelling stays a name, a wide gap leads
        // them in; a unit inside a sentence is none.
        finds_in(&t, "Blue Ridge Family Practice\nFAG/dmc", "NAME", "FAG");
        finds_in(
            &t,
            "transcribed 02/15/2024 14:30  AZ/rlh  Job 5512904",
            "NAME",
            "AZ",
        );
        finds_in(
            &t,
            "transcribed 02/15/2024 14:30  PC/rlh  Job 5512904",
            "NAME",
            "rlh",
        );
        finds_none_in(&t, "Heparin 5000 IU/ml given", "NAME");
        finds_none_in(
            &t,
            "JOHN SMITH GENERAL HOSPITAL - DISCHARGE SUMMARY",
            "NAME",
        );
        // Listed companies' forms are left to business_incorporated; a layout column and a
        // number's label are no facility.
        for text in [
            "I bought Apple Inc. shares",
            "Neogen Corporation reported",
            "Patient: Troy PENGELLY        Hosp No: RTI8842107",
            "Name: Rafanan, Young Jun C. Hosp. No.: 044127",
        ] {
            found_by_none_of(&t, text, &["business_legal_form", "facility_more"]);
        }
    }

    #[test]
    fn callers_cv_lines_venues_and_trades_of_session_20() {
        let org = "ORGANIZATION";
        // The place a caller is from; a desk of the place itself is none.
        finds(
            "Hi, it's Karen from Kwik Fit, just ringing about your car.",
            org,
            "Kwik Fit",
        );
        finds("this is Hunter from Allstate, calling for", org, "Allstate");
        finds_no("This is Kim from Billing about your bill.", org);
        // The employer on a CV's line, before its town or its dates.
        finds(
            "Senior Account Manager, Harrow & Finch Communications, London — Sept 2019",
            org,
            "Harrow & Finch Communications",
        );
        finds(
            "Software Engineer — Bazaarvoice, Austin (06/2016–02/2020)",
            org,
            "Bazaarvoice",
        );
        finds_no("Line Supervisor, Night Shift (employee ID CF-20981)", org);
        // A venue named with "The".
        finds(
            "Party is at The Red Lion, High Street.",
            org,
            "The Red Lion",
        );
        finds_no("See you at The End of the road", org);
        // Trades of care and of work, in any text.
        for (text, value) in [
            (
                "Transport: Holston Valley Rescue Squad unit",
                "Holston Valley Rescue Squad",
            ),
            (
                "drove for Pemberton Haulage for twenty years",
                "Pemberton Haulage",
            ),
            (
                "Placed at Magnolia Springs Group Home, 2210",
                "Magnolia Springs Group Home",
            ),
            (
                "seen by Franklin Mountain Youth Services today",
                "Franklin Mountain Youth Services",
            ),
            (
                "works nights at Androscoggin Poultry Processing",
                "Androscoggin Poultry Processing",
            ),
        ] {
            finds(text, org, value);
        }
        finds_no("Newborn Nursery Admission Exam", org);
        finds_no("Palantir Technologies songwriter", org);
        // Greetings and labels that name a business; care vendors by their chain's name.
        finds(
            "AGENT: Thank you for calling Pinnacle Card Services, my name is",
            org,
            "Pinnacle Card Services",
        );
        finds(
            "Merchant: Skyline Electronics Online",
            org,
            "Skyline Electronics Online",
        );
        finds_no("Welcome to the team, Blessing!", org);
        finds("oxygen set up by Lincare on Friday", org, "Lincare");
        // Booking codes carry few digits; ranges of days; a card by its brand; "Ph" before a
        // number; the town of an address line abroad.
        for (text, label, value) in [
            (
                "Flight (booking ref QX7RTM) return",
                "OTHER_IDENTIFIER",
                "QX7RTM",
            ),
            (
                "Return flight 27/12, PNR XJ4K9M.",
                "OTHER_IDENTIFIER",
                "XJ4K9M",
            ),
            (
                "Hotel booking CPB/24/9981, 22-27 Dec",
                "OTHER_IDENTIFIER",
                "CPB/24/9981",
            ),
            (
                "trip to Vienna (2–5 October). Thanks",
                "DATE",
                "2–5 October",
            ),
            ("absent Nov 4–8 for a family trip", "DATE", "Nov 4–8"),
            ("Card on file: Visa ending 7740", "ACCOUNT_NUMBER", "7740"),
            ("Ph (02) 5555 1300   Fax", "PHONE", "(02) 5555 1300"),
            (
                "45 Morgan Street, Wagga Wagga NSW 2650",
                "CITY",
                "Wagga Wagga",
            ),
            (
                "Cloonagh, Belcarra, Castlebar, Co. Mayo F23",
                "CITY",
                "Castlebar",
            ),
        ] {
            finds(text, label, value);
        }
        finds_no("conf call at noon ref BXKQT", "OTHER_IDENTIFIER");
        finds_no("the pH 7.31 and PH 7.2", "PHONE");
        // A listed town after "out of" or "via"; a lower-case given name introducing a texter.
        let listed = Recognizers::builtin_with_stand_in_gazetteers();
        finds_in(
            &listed,
            "drives a rig out of Port Leyden weekly",
            "CITY",
            "Port Leyden",
        );
        finds_in(
            &listed,
            "hey its emily from next door",
            "FIRST_NAME",
            "emily",
        );
        finds_none_in(&listed, "it's far from perfect", "FIRST_NAME");
        // A name in its own script inside Latin text.
        finds("my halmeoni 김순자 is 93", "NAME", "김순자");
        // Facilities abroad in capitals or named head first; a day of the stay is no place.
        for (text, value) in [
            (
                "KLINIKUM NÜRNBERG NORD Medizinische",
                "KLINIKUM NÜRNBERG NORD",
            ),
            ("HOSPITAL GENERAL DE ZONA No. 2", "HOSPITAL GENERAL DE ZONA"),
            ("une stimulation au CHU de Lille dans", "CHU de Lille"),
            (
                "woont in Zorgcentrum De Linde in Zwolle",
                "Zorgcentrum De Linde",
            ),
        ] {
            finds(text, org, value);
        }
        finds_no("HOSPITAL COURSE: stable.", org);
        finds_none_in(&listed, "Hospital Day 3 progress note", "CITY");
        // A franchise named for its town, in a clinical text; a person's tie to a town is none.
        finds_in(
            &listed,
            &note("Aide from Comfort Keepers of Port Leyden missed a visit."),
            org,
            "Comfort Keepers of Port Leyden",
        );
        finds_none_in(&listed, &note("Resident of Port Leyden, lives alone."), org);
        finds_none_in(
            &listed,
            "Felicity Grange of Port Leyden welcome a daughter",
            org,
        );
        // Days as deeds and web logs write them; councils and stations by their town.
        finds(
            "Signed this 15th day of April, 2024 before me",
            "DATE",
            "15th day of April, 2024",
        );
        finds("- - [12/Mar/2024:10:21:09 +0100]", "DATE", "12/Mar/2024");
        finds(
            "handed it in to Rathmines Garda Station today",
            org,
            "Rathmines Garda Station",
        );
    }

    #[test]
    fn general_text_and_dictation_shapes() {
        finds(
            "On 1996-08-28 17:25:42.212442, the",
            "DATE",
            "1996-08-28 17:25:42.212442",
        );
        finds("Fax: 728-326-8424x5088", "PHONE", "728-326-8424x5088");
        finds("registered 0478 79 92 20. Could", "PHONE", "0478 79 92 20");
        finds("You can call 23 517670", "PHONE", "23 517670");
        finds("They're not answering at 25 470375", "PHONE", "25 470375");
        finds(
            "stop receiving messages to 78 427 062",
            "PHONE",
            "78 427 062",
        );
        finds("Desk: 144-914-7660", "PHONE", "144-914-7660");
        finds_no("call 2 times a day", "PHONE");
        finds(
            "ltd psc 7898, box 5625 apo aa 47588",
            "STREET_ADDRESS",
            "psc 7898, box 5625 apo aa 47588",
        );
        finds(
            "The title refers to Stubben 149 street in",
            "STREET_ADDRESS",
            "Stubben 149",
        );
        finds(
            "refers to Viale delle Province 119 street",
            "STREET_ADDRESS",
            "Viale delle Province 119",
        );
        finds(
            "He lives on Rua Forno 44.",
            "STREET_ADDRESS",
            "Rua Forno 44",
        );
        finds_no("The tumour is at Stage 4 now", "STREET_ADDRESS");
        finds("Written when he was 66.", "AGE", "66");
        finds_no("when he was 6 weeks old", "AGE");
        finds("M.D.\nXGT:holmes\n \nDD: 04/07/69", "NAME", "holmes");
        finds("   GPP/church/olinger  \n", "NAME", "church/olinger");
        finds(
            "FILBERT BRIGHT, M.D.    FB59      D:07/20/83",
            "USERNAME",
            "FB59",
        );
        finds(
            "____________    XW277/90683 \n",
            "OTHER_IDENTIFIER",
            "XW277/90683",
        );
    }

    #[test]
    fn possessive_surnames_and_lone_given_names_need_a_list_and_no_word() {
        let t = with_gazetteers();
        let has = |text: &str, label: &str, value: &str| finds_in(&t, text, label, value);
        has("(though Kelly's song was about", "LAST_NAME", "Kelly");
        has("Why is Bernd so impulsive?", "FIRST_NAME", "Bernd");
        has("a 20yo female, Anna, seen in clinic", "NAME", "Anna");
        // A given name that is a word, capitalized inside a sentence, is a name there.
        has("why is Will so sure", "FIRST_NAME", "Will");
        for quiet in [
            // A surname that is an English word, an eponym, a month.
            "Brown's cow was sold",
            "a recent Ludwig's angina treated",
            "Kelly's syndrome",
            "since March's visit",
            // A given name that is a word, in lower case or after an article.
            "why is will so sure",
            "read the Will to them",
        ] {
            let got = found_with(&t, quiet);
            assert!(
                got.iter().all(|(_, l, _)| !l.contains("NAME")),
                "{quiet}: {got:?}"
            );
        }
    }

    #[test]
    fn holidays_quarters_month_parts_and_days_of_the_month_are_dates() {
        finds("cough since Christmas Eve, worse", "DATE", "Christmas Eve");
        finds(
            "seen on Thanksgiving 2021 in the ED",
            "DATE",
            "Thanksgiving 2021",
        );
        finds("last seen in Q3 2022.", "DATE", "Q3 2022");
        finds("labs from mid-March showed", "DATE", "March");
        finds("discharged on the 14th.", "DATE", "14th");
        finds_no("extubated on the 3rd day", "DATE");
        finds_no("admitted on the 4th floor", "DATE");
    }

    #[test]
    fn clinical_shorthand_is_no_date_and_no_place() {
        finds_no("MIBI was stopped 2/2 to chest pain", "DATE");
        finds("held from 2/2 to 2/10", "DATE", "2/2");
        finds_no("seen at PCP on 2/03 with EKG", "LOCATION");
        finds_no("seen in COPD clinic today", "LOCATION");
        finds_no("admitted in DKA last week", "LOCATION");
        finds("treated at UCSF on", "LOCATION", "UCSF");
    }

    #[test]
    fn streets_with_the_other_usps_suffixes() {
        finds(
            "It's in 78282 Roberts Ferry Suite 790 Stephaniefort",
            "STREET_ADDRESS",
            "78282 Roberts Ferry",
        );
        finds(
            "mail it to 68018 Kevin Estates Apt. 5",
            "STREET_ADDRESS",
            "68018 Kevin Estates",
        );
        finds(
            "He lives on the north side of Pierre Delannoyplaats 211.",
            "STREET_ADDRESS",
            "Pierre Delannoyplaats 211",
        );
        finds("Hauptstraße 12, Berlin", "STREET_ADDRESS", "Hauptstraße 12");
        finds_no("currently scoring 3.5 on the DAS28", "STREET_ADDRESS");
        finds(
            "a design agency based in Cite Bain Maure Ben Azouz.",
            "CITY",
            "Cite Bain Maure Ben Azouz",
        );
        finds_no("stationed in ICU for a week", "CITY");
        finds_no("a Level 1 Trauma Center, which", "STREET_ADDRESS");
        finds_no("after 10 Mile Run finished", "STREET_ADDRESS");
        finds_no("gave 2 Tylenol Extra Strength tablets", "STREET_ADDRESS");
    }

    #[test]
    fn ordinary_words_are_words_no_name_list_has() {
        let t = with_gazetteers();
        for word in [
            "ABDOMEN",
            "Zantac",
            "Provider",
            "Attending",
            "Signs",
            "lasix",
            // A note's unit or eponym and a word for a relative (session 26).
            "Triage",
            "Mallampati",
            "Ammi",
            "Annem",
        ] {
            assert!(t.is_ordinary_word(word), "{word}");
        }
        // Listed names, short words, and words with digits or marks are never ordinary.
        for word in ["Will", "Hope", "Calliope", "Smith", "Lab3", "ab", "Berg"] {
            assert!(!t.is_ordinary_word(word), "{word}");
        }
        assert!(t.is_ordinary_phrase("Attending Provider") && t.is_ordinary_phrase("Lab-Test"));
        assert!(!t.is_ordinary_phrase("Attending Smith"));
        assert!(!t.is_ordinary_phrase(" , "));
        // "Vital" is a surname too: no ordinary word, but a common one, and no given name.
        assert!(!t.is_ordinary_phrase("Vital Signs") && t.is_common_phrase("Vital Signs"));
        assert!(!t.is_common_phrase("Will Baker") && !t.is_common_phrase("Baker, Will"));
        assert!(!t.is_common_phrase("Attending Smith"));
        // Without the lists nothing is ordinary, and the table says the rule is off.
        assert!(!table().is_ordinary_word("ABDOMEN"));
        assert!(
            table()
                .inactive
                .iter()
                .any(|p| p.starts_with("ordinary_words"))
        );
    }

    #[test]
    fn days_and_times_as_clinics_and_other_countries_write_them() {
        for (t, label, v) in [
            ("Extubated 2/17 at 21:10.", "DATE", "2/17"),
            ("Menses regular, LMP 11/15. Works", "DATE", "11/15"),
            ("em ar ambiente desde 15/07. Alta", "DATE", "15/07"),
            ("next visit is Thursday 8/17 at 2:00 pm", "DATE", "8/17"),
            ("since Saturday the 25th. Daughter", "DATE", "the 25th"),
            ("Echokardiographie vom 08.03.: LVEF 30 %", "DATE", "08.03"),
            ("le 14 mars 2023 à 9 h 30", "DATE", "14 mars 2023"),
            ("am 31. März um 15 Uhr", "DATE", "31. März"),
            ("zmarł 7 września 2024 w", "DATE", "7 września 2024"),
            ("On 2024年3月18日 around", "DATE", "2024年3月18日"),
            ("London Heathrow, 14MAR24, departs", "DATE", "14MAR24"),
            ("received oxycodone at 0115 with relief", "TIME", "0115"),
            ("350 mL since 2300. JP drain", "TIME", "2300"),
            ("Time seen: 1340 Requesting", "TIME", "1340"),
            ("Nursing note 10/22/2023 0415 - 7 South", "TIME", "0415"),
            ("LDR 6\n0205 Admitted from triage", "TIME", "0205"),
            ("Début 08h15 - Fin 10h40", "TIME", "08h15"),
            ("em 31 de julho às 14h. Filha", "TIME", "14h"),
            ("Besichtigung um 18 Uhr.", "TIME", "18 Uhr"),
        ] {
            finds(t, label, v);
        }
        for (t, label) in [
            ("Apgars 8/9 at one and five minutes", "DATE"),
            ("Pain 3/10 at rest, 6/10 with stairs", "DATE"),
            ("Now with 7/10 epigastric pain", "DATE"),
            ("needs 24/7 supervision", "DATE"),
            ("Warfarin 2.5 mg PO Mon/Wed/Fri, 5 mg other days", "DATE"),
            ("quit smoking since 2019 and", "TIME"),
            ("bolus then at 1500 mL/h", "TIME"),
            ("send a new one to 0529 Collier Lake", "TIME"),
            ("average 7 h 12 min, residual AHI", "TIME"),
            ("arrived at 9:22 via EMS", "STREET_ADDRESS"),
        ] {
            finds_no(t, label);
        }
    }

    #[test]
    fn record_numbers_addresses_and_ages_from_abroad() {
        for (t, label, v) in [
            (
                "HOSP. NO: UCH/12/345678 Kindly",
                "OTHER_IDENTIFIER",
                "UCH/12/345678",
            ),
            (
                "OP No: SRMC/OP/24/003381 Patient",
                "OTHER_IDENTIFIER",
                "SRMC/OP/24/003381",
            ),
            // A UK National Insurance number is the country's SSN (session 19).
            ("NI No: QQ 12 34 56 C Address", "SSN", "QQ 12 34 56 C"),
            (
                "IHI: 8003 6012 3456 7890 Present",
                "OTHER_IDENTIFIER",
                "8003 6012 3456 7890",
            ),
            (
                "CPF: 123.456.789-09   CNS",
                "OTHER_IDENTIFIER",
                "123.456.789-09",
            ),
            (
                "MRN no. 1234567 on file",
                "MEDICAL_RECORD_NUMBER",
                "1234567",
            ),
            ("license plate no. IDC 3037.", "LICENSE_PLATE", "IDC 3037"),
            ("Batch No. 4471A2 dispensed", "OTHER_IDENTIFIER", "4471A2"),
            (
                "Delivery to: ul. Długa 15/3, 80-827",
                "STREET_ADDRESS",
                "ul. Długa 15/3",
            ),
            (
                "na Rua de Santa Catarina 312, Porto",
                "STREET_ADDRESS",
                "Rua de Santa Catarina 312",
            ),
            (
                "Adresse: 5120 avenue Decelles, app. 6",
                "STREET_ADDRESS",
                "5120 avenue Decelles",
            ),
            (
                "repairs at Karl Johans gate 7, 0154",
                "STREET_ADDRESS",
                "Karl Johans gate 7",
            ),
            ("Montréal (Québec) H2W 1T8   Tél.", "ZIP_CODE", "H2W 1T8"),
            (
                "University Hospital Wilton, Cork T12 DC4A   Tel",
                "ZIP_CODE",
                "T12 DC4A",
            ),
            ("Road, Camperdown NSW 2050   Ph", "ZIP_CODE", "2050"),
            (
                "Cascade Valley Orthopedics 2200 Riverside",
                "ORGANIZATION",
                "Cascade Valley Orthopedics",
            ),
            (
                "agreed to go to Perkins & Sons Funeral Home, St.",
                "ORGANIZATION",
                "Perkins & Sons Funeral Home",
            ),
            ("falleció el 2 de mayo de 2024, a los 98 años.", "AGE", "98"),
            ("Widower, 90 years young, still", "AGE", "90"),
            (
                "Hôpital de la Croix-Rousse - Lyon",
                "ORGANIZATION",
                "Hôpital de la Croix-Rousse",
            ),
            (
                "Claddagh Family Practice 4 Fr. Griffin",
                "ORGANIZATION",
                "Claddagh Family Practice",
            ),
            (
                "for sale, reg KT14 XHB, 89k miles",
                "LICENSE_PLATE",
                "KT14 XHB",
            ),
            (
                "Reference: invoice INV-2024-0318",
                "OTHER_IDENTIFIER",
                "INV-2024-0318",
            ),
            (
                "My parcel 1Z 999 AA1 01 2345 6784 has",
                "OTHER_IDENTIFIER",
                "1Z 999 AA1 01 2345 6784",
            ),
            (
                "login failed for user j.kowalski from",
                "USERNAME",
                "j.kowalski",
            ),
            ("always. insta: sunny.kochi", "USERNAME", "sunny.kochi"),
            ("creditado na conta 12345-6 em", "ACCOUNT_NUMBER", "12345-6"),
            ("新地址，电话138 1234 5678，周六", "PHONE", "138 1234 5678"),
            ("priya.s: has anyone seen the deck", "USERNAME", "priya.s"),
            ("<kasia_w> anyone know why", "USERNAME", "kasia_w"),
            (
                "thanks for the sub big_will_99!!",
                "USERNAME",
                "big_will_99",
            ),
        ] {
            finds(t, label, v);
        }
        for (t, label) in [
            ("moved to Room No. 412 today", "OTHER_IDENTIFIER"),
            ("PLT: 250 000 and stable", "OTHER_IDENTIFIER"),
            ("Consult Pediatric Cardiology today", "ORGANIZATION"),
            ("Department of Internal Medicine rounds", "ORGANIZATION"),
            ("needs 24/7 care at home", "DATE"),
            ("Portal login from IP address 10.0.0.1", "USERNAME"),
            ("rename snake_case variables", "USERNAME"),
            ("order 500 mg daily", "OTHER_IDENTIFIER"),
            ("e.g.: a comment", "USERNAME"),
            ("MODE_MANGLE: Patient John", "USERNAME"),
            ("seen in Cardiology Clinic today", "ORGANIZATION"),
            ("order MRI Imaging today", "ORGANIZATION"),
            ("Left breast 2:00, 4 cm from the nipple", "TIME"),
            ("mass at 10:00 position", "TIME"),
            ("T+1:30 Pads on", "TIME"),
            ("GCS 13 (E3V4M6), oriented", "ZIP_CODE"),
            ("BiPAP 18/6 for 48 h", "DATE"),
            ("O2 sat 28% on RA", "DATE"),
            ("avoid sun 2 weeks", "DATE"),
        ] {
            finds_no(t, label);
        }
    }

    #[test]
    fn counties_letterheads_places_of_care_and_codes_of_us_records() {
        for (t, label, v) in [
            (
                "Scene: Albion, MI  (Calhoun County) Crew",
                "LOCATION",
                "Calhoun County",
            ),
            ("LEE COUNTY EMS -- PCR", "ORGANIZATION", "LEE COUNTY EMS"),
            (
                "TWIN RIVERS MEDICAL CENTER *** CONFIDENTIAL",
                "ORGANIZATION",
                "TWIN RIVERS MEDICAL CENTER",
            ),
            (
                "Residence: Oak Hollow Assisted Living, 610",
                "ORGANIZATION",
                "Oak Hollow Assisted Living",
            ),
            (
                "PCP: Omar Shaikh, MD, Westgate Primary Care  ADMISSION",
                "ORGANIZATION",
                "Westgate Primary Care",
            ),
            (
                "provider: Kids First Pediatrics, Pasadena",
                "ORGANIZATION",
                "Kids First Pediatrics",
            ),
            (
                "resides at Lakeview Terrace Care Center and",
                "ORGANIZATION",
                "Lakeview Terrace Care Center",
            ),
            (
                "graduating from University of Nairobi today",
                "ORGANIZATION",
                "University of Nairobi",
            ),
            (
                "art contest at Riverside Elementary next week",
                "ORGANIZATION",
                "Riverside Elementary",
            ),
            (
                "Payer: Medicare A/B, MBI 4TK7-QW2-AA19; secondary",
                "HEALTH_PLAN_NUMBER",
                "4TK7-QW2-AA19",
            ),
            (
                "pathology SP-24-003312 for",
                "OTHER_IDENTIFIER",
                "SP-24-003312",
            ),
            (
                "Performing site CLIA 05D0634172 Director",
                "LICENSE_NUMBER",
                "05D0634172",
            ),
            ("inpatient order 2/10 21:14).", "DATE", "2/10"),
            (
                "Address: Rt 2 Box 118, Floyd, VA",
                "STREET_ADDRESS",
                "Rt 2 Box 118",
            ),
            (
                "FACILITY: CLEMENT J. ZABLOCKI VAMC  Vet",
                "ORGANIZATION",
                "CLEMENT J. ZABLOCKI VAMC",
            ),
            (
                "Leeds Teaching Hospitals NHS Trust - Radiology",
                "ORGANIZATION",
                "Leeds Teaching Hospitals NHS Trust",
            ),
            (
                "600 Penn Square, 3rd Floor Lancaster",
                "SECONDARY_ADDRESS",
                "3rd Floor",
            ),
            (
                "3309 Cherokee Street, Unit B   St.",
                "SECONDARY_ADDRESS",
                "Unit B",
            ),
            ("setup at home 7/1 at 9 am by RT", "DATE", "7/1"),
            ("Ole Sorensen 92M with aspiration", "AGE", "92"),
            ("DOB 1931-07-22, so pt is 92. Walter", "AGE", "92"),
            (
                "twitch.tv/kwesi_plays if you",
                "URL",
                "twitch.tv/kwesi_plays",
            ),
        ] {
            finds(t, label, v);
        }
        for (t, label) in [
            ("ANTICOAGULATION CLINIC - PHARMACIST NOTE", "ORGANIZATION"),
            ("DEVICE CLINIC - REMOTE ICD TRANSMISSION", "ORGANIZATION"),
            (
                "PEDIATRIC HOSPITAL MEDICINE - DISCHARGE SUMMARY",
                "ORGANIZATION",
            ),
            ("Tmax 101F overnight, spiked to 102F", "AGE"),
            ("a 16F Foley catheter", "AGE"),
            ("Hgb 7.1 from 11.2. Transfuse?", "DATE"),
            ("strength 5/5 throughout, 2/10 at 21 degrees", "DATE"),
        ] {
            finds_no(t, label);
        }
    }

    #[test]
    fn chats_profiles_and_voice_transcripts_name_people_their_own_way() {
        let t = with_gazetteers();
        let has = |text: &str, label: &str, value: &str| finds_in(&t, text, label, value);
        let has_no = |text: &str, label: &str| finds_none_in(&t, text, label);
        has("[9:15] marcus: FYI the deck is", "NAME", "marcus");
        has("richard: carlos pls don't paste", "NAME", "richard");
        has("Anna, 30, moved from Tallinn", "NAME", "Anna");
        has(
            "Hi, this is Richard from Sunset Realty",
            "FIRST_NAME",
            "Richard",
        );
        has("hey its marcus, new number", "FIRST_NAME", "marcus");
        has(
            "Pt: Dale \"Smokey\" Rutherford      DOB",
            "NAME",
            "Dale \"Smokey\" Rutherford",
        );
        has(
            "my number is five five five two one four nine eight seven six",
            "PHONE",
            "five five five two one four nine eight seven six",
        );
        has(
            "and my zip is nine oh two one oh",
            "ZIP_CODE",
            "nine oh two one oh",
        );
        has(
            "Location: home, Port Leyden  Patient:",
            "CITY",
            "Port Leyden",
        );
        has_no("Port Leyden grade 2 lymphoma", "CITY");
        has_no("the Port Authority and Leyden", "CITY");
        // Listed whole only: "Chicago" is listed, "Chicago Bulls" is not.
        has_no("a Chicago Bulls fan", "CITY");
        has_no("gi: soft, NT\nplan: follow up", "NAME");
        has_no("will: continue the plan", "NAME");
        has_no("May, 12 patients were seen", "NAME");
        has_no("It's Tuesday again", "FIRST_NAME");
        has_no("scored three two one on the scale", "PHONE");
    }

    #[test]
    fn chart_headers_world_towns_and_ages_after_names_need_the_lists() {
        let t = with_gazetteers();
        let has = |text: &str, label: &str, value: &str| finds_in(&t, text, label, value);
        let has_no = |text: &str, label: &str| finds_none_in(&t, text, label);
        has(
            "Triage\nRobinson, Richard    Hospital No. 5",
            "NAME",
            "Robinson, Richard",
        );
        has("RE: Smith, Anna  DOB 03/04/1950", "NAME", "Smith, Anna");
        has(
            "reprinted for MUÑOZ, RICHARD, MRN",
            "NAME",
            "MUÑOZ, RICHARD",
        );
        has("Triage\nI. Mwangi    MRN 00309952", "NAME", "I. Mwangi");
        has("the obituary: Anna Smith, 91, of Tupelo", "AGE", "91");
        has("with a stopover in Doha. No prophylaxis", "CITY", "Doha");
        has("Hi Richard, the keys are", "FIRST_NAME", "Richard");
        has(
            "Infant: Baby Girl Okonjo (\"Favour\")   MRN",
            "FIRST_NAME",
            "Favour",
        );
        has(
            "PATIENT: SMITH,RICHARD T   (R0412)",
            "NAME",
            "SMITH,RICHARD T",
        );
        has("Driver Anna, plate", "FIRST_NAME", "Anna");
        has("ran the Lagos half marathon", "CITY", "Lagos");
        has("Raba-Léon, 33000 Bordeaux, France", "ZIP_CODE", "33000");
        has(
            "Taft Avenue, Ermita, Manila 1000  CLINICAL",
            "ZIP_CODE",
            "1000",
        );
        has_no("Yes, Will do that.", "NAME");
        has_no("Plan noted.\nEcho: EF 55%, no effusion", "NAME");
        has_no("Resp: clear. GI: soft, NT", "NAME");
        has_no("Abdomen Soft, Richard said", "NAME");
        has_no("\nA. Assessment\n", "NAME");
        has("transmitter ID GHTKZJ Paired", "OTHER_IDENTIFIER", "GHTKZJ");
        has_no("patient ID VERIFIED at bedside", "OTHER_IDENTIFIER");
        has_no("She enjoys Reading at night", "CITY");
        has_no("Foley catheter in place", "CITY");
        has_no("car (2009 Honda Civic, plate", "ZIP_CODE");
        has_no("Manila 2019 conference", "ZIP_CODE");
    }

    #[test]
    fn words_opening_a_sentence_are_no_given_names() {
        let t = with_gazetteers();
        finds_none_in(&t, "In France they have company songs", "NAME");
        finds_none_in(&t, "In Johnson County the rate", "NAME");
        finds_in(
            &t,
            "her friend Richard France called",
            "NAME",
            "Richard France",
        );
    }

    #[test]
    fn gazetteers_gate_names_and_places_and_stay_off_when_missing() {
        let t = with_gazetteers();
        assert!(t.inactive.is_empty(), "{:?}", t.inactive);
        let has = |text: &str, label: &str, value: &str| finds_in(&t, text, label, value);
        has("hypertension, Richard B., last seen", "NAME", "Richard B.");
        has("referring to Emily N., treated", "NAME", "Emily N.");
        has("the case of John Smith today", "NAME", "John Smith");
        has(
            "sent to her brother, in Port Leyden.",
            "CITY",
            "Port Leyden",
        );
        has(
            "Mercy Valley Hospital, Harrow Re: follow-up",
            "CITY",
            "Harrow",
        );
        has("seen at our Chicago clinic", "CITY", "Chicago");
        has("Marcus: I told you so", "NAME", "Marcus");
        has("Doctor: How often? Marcus: Maybe twice.", "NAME", "Marcus");
        has("The Smith family farm in", "LAST_NAME", "Smith");
        has("Triage RN: nurse Emily at 18:53", "NAME", "Emily");
        has(
            "label reprinted for SMITH, CHIOMA, MRN",
            "NAME",
            "SMITH, CHIOMA",
        );
        has("VISIT\n\nOROZCO,KYLE   560-40-78-5", "NAME", "OROZCO,KYLE");
        has(
            "Regards,\nAnna Nowakowska\nAcme Ltd",
            "NAME",
            "Anna Nowakowska",
        );
        has("\nEustacio T Johnson\n", "NAME", "Eustacio T Johnson");
        // A middle initial with one listed side; accents aside ("Órtel" is listed as ORTEL).
        has(
            "sung by Anna S. Thygesen in 1984",
            "NAME",
            "Anna S. Thygesen",
        );
        has("Koppány C. Órtel, tuner", "NAME", "Koppány C. Órtel");
        // A listed given name before any surname, and opening a sentence as a subject.
        has(
            "please change it to Emily Yermolayev",
            "NAME",
            "Emily Yermolayev",
        );
        has("Noted. Marcus is from Auxico.", "FIRST_NAME", "Marcus");
        let initial = found_with(&t, "seen by John L. Patient reports pain");
        assert!(
            initial.iter().all(|(_, _, v)| !v.contains("Patient")),
            "{initial:?}"
        );
        let header = found_with(&t, "\nPhysical Examination\nClinical Impression\n");
        assert!(header.iter().all(|(_, l, _)| *l != "NAME"), "{header:?}");
        for quiet in [
            "Will continue the plan",
            "Hope for the best",
            "Mercy General Hospital is",
            "increase in Wells score",
            "history of Lyme disease",
            "Vitamin D Johnson protocol",
            "Will is aware of the plan",
            "transferred to Mercy Clinic today",
        ] {
            let got = found_with(&t, quiet);
            assert!(
                got.iter().all(|(_, l, _)| *l != "NAME" && *l != "CITY"),
                "{quiet}: {got:?}"
            );
        }
        // Without the files the gated patterns are left out and reported.
        assert!(table().inactive.iter().any(|p| p.contains("given_names")));
        assert!(
            found("hypertension, Richard B., last seen")
                .iter()
                .all(|(p, ..)| p != "name_given_initial")
        );
    }

    #[test]
    fn other_scripts_months_and_joined_places_of_session_34() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, label, value) in [
            // Cities in their own script, facilities and companies by their kind, a Korean
            // address's districts and flat.
            ("5月中旬に東京の自宅へ戻る", "CITY", "東京"),
            ("Самовывоз: Казань, ул. Баумана", "CITY", "Казань"),
            (
                "紹介先：大阪中央総合病院　循環器内科",
                "ORGANIZATION",
                "大阪中央総合病院",
            ),
            (
                "株式会社アオバ物流の高橋でございます",
                "ORGANIZATION",
                "株式会社アオバ物流",
            ),
            (
                "계획: 부산대학교병원 응급실로 전원",
                "ORGANIZATION",
                "부산대학교병원",
            ),
            ("오늘 7시에 강남역에서 보자", "ORGANIZATION", "강남역"),
            (
                "주소는 서울 마포구 월드컵북로12길 34",
                "CITY",
                "서울 마포구",
            ),
            (
                "래미안아파트 108동 702호 우편번호",
                "SECONDARY_ADDRESS",
                "108동 702호",
            ),
            // Dates with months in other languages, or a day and a month with dots.
            ("Jakarta, 21 Agustus 2024 Kepada", "DATE", "21 Agustus 2024"),
            (
                "start date Hunyo 3, 2019. Pakisend",
                "DATE",
                "Hunyo 3, 2019",
            ),
            ("Start date is 01.04.  Tobias", "DATE", "01.04"),
            (
                "горячую воду до 20 февраля, объявление",
                "DATE",
                "20 февраля",
            ),
            (
                "Sinh ngày 02 tháng 03 năm 1929 tại",
                "DATE",
                "02 tháng 03 năm 1929",
            ),
            ("(31 अक्टूबर तक) पेमेंट", "DATE", "31 अक्टूबर"),
            // The character after one place can stand before the next.
            ("flights Doha/Lagos booked", "CITY", "Lagos"),
            // An age in a report dictated in capitals.
            ("THE PATIENT IS A 91-YEAR-OLD MAN", "AGE", "91"),
            // A name after an elder's or a courtesy title, an English word too.
            ("Ate Joy, nasa SM Megamall na ako", "NAME", "Joy"),
            ("La señora Garza era buena", "NAME", "Garza"),
            ("Seu Zé chegou", "NAME", "Zé"),
            ("李娜: 明天的会议改到下午三点了", "NAME", "李娜"),
            ("국민은행 447-21-0188-204 (예금주 박지성)", "NAME", "박지성"),
        ] {
            finds_in(&t, text, label, value);
        }
        // The kind alone, the words of a Chinese sentence, a word that only ends like a
        // station, a city's name inside a longer word, a version and a section number.
        for (text, label) in [
            ("入院先は総合病院です", "ORGANIZATION"),
            ("如有胸痛，请立即回医院。", "ORGANIZATION"),
            ("초등학교 관할구역 안내", "ORGANIZATION"),
            ("서울대학교 부산시민 казань", "CITY"),
            ("version 10.12.1.1 and 1.2. Results", "DATE"),
        ] {
            finds_none_in(&t, text, label);
        }
        // "Frau Dr. Hartmann" and "王老师": the title's patterns find the name, these do not
        // take the title for it.
        found_by_none_of(
            &t,
            "Sehr geehrte Frau Dr. Hartmann",
            &["name_after_elder_or_courtesy"],
        );
        found_by_none_of(&t, "王老师：好的", &["name_chinese_speaker"]);
    }

    #[test]
    fn companies_letterheads_pins_and_posts_of_session_35() {
        let t = Recognizers::builtin_with_stand_in_gazetteers();
        for (text, label, value) in [
            // Banks, phone, power and grocery companies and insurers by name.
            (
                "Adaeze: GTBank 0123894471, Adaeze",
                "ORGANIZATION",
                "GTBank",
            ),
            (
                "deposit through BDO acct 0041-8872-1190",
                "ORGANIZATION",
                "BDO",
            ),
            (
                "Chat with Airtel Support | Session",
                "ORGANIZATION",
                "Airtel",
            ),
            (
                "insured with Groupama (policy GR-88120447)",
                "ORGANIZATION",
                "Groupama",
            ),
            (
                "Mutuelle : Mutuelle Francilienne Solidaire, adhérent n° MFS-0041877",
                "ORGANIZATION",
                "Mutuelle Francilienne Solidaire",
            ),
            (
                "Krankenkasse: Bayerische Betriebskrankenkasse Süd Fallnummer: 24-118830",
                "ORGANIZATION",
                "Bayerische Betriebskrankenkasse Süd",
            ),
            (
                "HMO: Lekki Shield HMO, enrollee ID",
                "ORGANIZATION",
                "Lekki Shield HMO",
            ),
            // A letterhead, someone's employer, a pin's places, a letter's town.
            (
                "RAVI MEDICAL COMPLEX\n23-B Main Boulevard",
                "LOCATION",
                "RAVI MEDICAL COMPLEX",
            ),
            ("Amos from HomeCheck will call", "LOCATION", "HomeCheck"),
            (
                "sunny, 34 📍 leslieville, toronto  ok",
                "CITY",
                "leslieville",
            ),
            ("sunny, 34 📍 leslieville, toronto  ok", "CITY", "toronto"),
            ("Santiago, 4 March 2025\nLETTER", "CITY", "Santiago"),
            // A floor after its street, a post's author, a masked card, a plate, a date.
            (
                "report to 2100 Lakeshore Blvd, 3rd floor.",
                "SECONDARY_ADDRESS",
                "3rd floor",
            ),
            ("Posted by WindySeaFront · Sat", "NAME", "WindySeaFront"),
            (
                "Kortgaranti: Visa ****2209. Välkommen",
                "ACCOUNT_NUMBER",
                "****2209",
            ),
            (
                "Araç Plakası: 34 FKN 218 Şasi",
                "LICENSE_PLATE",
                "34 FKN 218",
            ),
            ("leak (ticket opened 8/2), mice", "DATE", "8/2"),
        ] {
            finds_in(&t, text, label, value);
        }
        for (text, label) in [
            ("Enhanced DBS check cleared", "ORGANIZATION"),
            ("Fiets stond op slot (AXA ringslot).", "ORGANIZATION"),
            ("with Ben Adair from HR taking notes", "LOCATION"),
            ("WOUND CARE CLINIC\nHyperbaric", "LOCATION"),
            ("Sunday, 23 June 2024 (12th Sunday)", "CITY"),
            ("reviewed by provider) Date", "NAME"),
        ] {
            finds_none_in(&t, text, label);
        }
    }
}
