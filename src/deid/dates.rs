//! Parsing, shifting and year reduction of one date mention.
//!
//! Recognizers locate a date mention in clinical text; this module reads that exact text,
//! remembers how it was written (order, separators, padding, month style, letter case,
//! ordinal suffix, weekday) and writes a shifted or surrogate date back in the same form,
//! so de-identified notes keep reading naturally and stay internally consistent.

use chrono::{Datelike, NaiveDate, TimeDelta, Weekday};

/// Years outside this range are rejected: such "years" are far more often codes or counts.
const MIN_YEAR: i32 = 1800;
const MAX_YEAR: i32 = 2200;
/// Year assumed when none is written; a leap year, so that "Feb 29" stays representable.
const ANCHOR_YEAR: i32 = 2000;
/// Day assumed when none is written ("March 2021"); mid-month keeps the shift symmetric.
const ANCHOR_DAY: u32 = 15;
/// Two-digit years below this pivot are read as 20xx, the rest as 19xx.
const TWO_DIGIT_PIVOT: i32 = 50;

pub(crate) const MONTHS_FULL: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const MONTHS_ABBR: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
pub(crate) const WEEKDAYS_FULL: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const WEEKDAYS_ABBR: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
/// Abbreviations some writers use instead of the three-letter ones.
const WEEKDAYS_LONG_ABBR: [&str; 7] = ["Mon", "Tues", "Wed", "Thurs", "Fri", "Sat", "Sun"];
const WEEKDAYS: [Weekday; 7] = [
    Weekday::Mon,
    Weekday::Tue,
    Weekday::Wed,
    Weekday::Thu,
    Weekday::Fri,
    Weekday::Sat,
    Weekday::Sun,
];

/// Letter case of a written word, reapplied to replacement words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Lower,
    Upper,
    Title,
}

impl Case {
    fn of(word: &str) -> Case {
        let letters = || word.chars().filter(|c| c.is_alphabetic());
        if letters().all(char::is_lowercase) {
            Case::Lower
        } else if letters().count() > 1 && letters().all(char::is_uppercase) {
            Case::Upper
        } else {
            Case::Title
        }
    }

    fn apply(self, word: &str) -> String {
        match self {
            Case::Lower => word.to_lowercase(),
            Case::Upper => word.to_uppercase(),
            Case::Title => {
                let mut out = String::with_capacity(word.len());
                for (i, c) in word.chars().enumerate() {
                    if i == 0 {
                        out.extend(c.to_uppercase());
                    } else {
                        out.extend(c.to_lowercase());
                    }
                }
                out
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WeekdayStyle {
    Full,
    Abbr,
    LongAbbr,
}

/// One element of the remembered surface form; `Lit` is copied verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Lit(String),
    Day {
        pad: bool,
        ordinal: Option<Case>,
    },
    MonthNum {
        pad: bool,
    },
    /// `month`/`text` are what was written: reused verbatim while the month is unchanged,
    /// so odd spellings ("Sept") survive a zero shift exactly.
    MonthName {
        abbr: bool,
        case: Case,
        month: u32,
        text: String,
    },
    Year {
        two_digit: bool,
    },
    Weekday {
        style: WeekdayStyle,
        case: Case,
        weekday: Weekday,
        text: String,
    },
}

/// A date mention parsed from text, with its surface format remembered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateMention {
    /// The date read; missing parts are filled with `ANCHOR_YEAR` / `ANCHOR_DAY`.
    date: NaiveDate,
    has_day: bool,
    has_year: bool,
    pieces: Vec<Piece>,
    /// Returned unchanged when shifting cannot be computed.
    original: String,
}

/// Parses one whole mention (leading/trailing whitespace tolerated, nothing else).
/// `day_first`: how to read ambiguous numeric dates like 03/04/2021 (true → 3 April).
/// Unambiguous ones (a part > 12) are read the only way they can be.
pub fn parse_date(text: &str, day_first: bool) -> Option<DateMention> {
    let core = text.trim();
    if core.is_empty() {
        return None;
    }
    let lead_len = text.len() - text.trim_start().len();
    let leading = text.get(..lead_len)?;
    let trailing = text.get(lead_len + core.len()..)?;

    let toks = lex(core)?;
    let parsed = parse_numeric(&toks, core, day_first).or_else(|| parse_named(&toks))?;
    if parsed.day.is_none() && parsed.year.is_none() {
        return None;
    }
    if let Some(y) = parsed.year
        && !(MIN_YEAR..=MAX_YEAR).contains(&y)
    {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(
        parsed.year.unwrap_or(ANCHOR_YEAR),
        parsed.month,
        parsed.day.unwrap_or(ANCHOR_DAY),
    )?;

    let mut pieces = Vec::with_capacity(parsed.pieces.len() + 2);
    if !leading.is_empty() {
        pieces.push(Piece::Lit(leading.to_string()));
    }
    pieces.extend(parsed.pieces);
    if !trailing.is_empty() {
        pieces.push(Piece::Lit(trailing.to_string()));
    }
    Some(DateMention {
        date,
        has_day: parsed.day.is_some(),
        has_year: parsed.year.is_some(),
        pieces,
        original: text.to_string(),
    })
}

/// Days-of-year granularity check used by validators: whether a (year, month, day) exists.
pub fn valid_ymd(year: i32, month: u32, day: u32) -> bool {
    NaiveDate::from_ymd_opt(year, month, day).is_some()
}

impl DateMention {
    /// The mention moved by `days`, written in the same format as the input (same separators,
    /// zero-padding, 2- or 4-digit year, month name vs abbreviation vs number, letter case,
    /// ordinal suffix, weekday recomputed if one was written). With `keep_year`, the original
    /// year is restored after shifting (Feb 29 into a non-leap year becomes Feb 28).
    pub fn shifted(&self, days: i64, keep_year: bool) -> String {
        let Some(moved) = TimeDelta::try_days(days).and_then(|d| self.date.checked_add_signed(d))
        else {
            return self.original.clone();
        };
        let target = if keep_year && self.has_year {
            with_year(moved, self.date.year())
        } else {
            moved
        };
        // Without a year the anchor's weekday is meaningless, so rotate the written one.
        let weekday = match self.written_weekday() {
            Some(w) if !self.has_year => rotate_weekday(w, days),
            _ => target.weekday(),
        };
        self.render(target, weekday)
    }

    /// The 4-digit year as a string, or None when the mention has no year (e.g. "March 15").
    pub fn year(&self) -> Option<String> {
        self.has_year.then(|| format!("{:04}", self.date.year()))
    }

    /// True when the mention has day, month and year (a full date); false for partial dates.
    pub fn is_full(&self) -> bool {
        self.has_day && self.has_year
    }

    /// Whether a day of month was written (false for "March 2021", "05/2021").
    pub fn has_day(&self) -> bool {
        self.has_day
    }

    /// Whether a year was written (false for "March 15").
    pub fn has_year(&self) -> bool {
        self.has_year
    }

    /// The date read, with a missing year/day filled by the anchors (2000 / the 15th).
    pub fn date(&self) -> NaiveDate {
        self.date
    }

    /// Writes an arbitrary date (e.g. a surrogate) in this mention's surface format;
    /// parts the mention lacks (day or year) are left out.
    pub fn format_as(&self, date: NaiveDate) -> String {
        self.render(date, date.weekday())
    }

    fn written_weekday(&self) -> Option<Weekday> {
        self.pieces.iter().find_map(|p| match p {
            Piece::Weekday { weekday, .. } => Some(*weekday),
            _ => None,
        })
    }

    fn render(&self, date: NaiveDate, weekday: Weekday) -> String {
        let mut out = String::with_capacity(self.original.len() + 8);
        for piece in &self.pieces {
            match piece {
                Piece::Lit(s) => out.push_str(s),
                Piece::Day { pad, ordinal } => {
                    push_number(&mut out, date.day(), *pad);
                    if let Some(case) = ordinal {
                        out.push_str(&case.apply(ordinal_suffix(date.day())));
                    }
                }
                Piece::MonthNum { pad } => push_number(&mut out, date.month(), *pad),
                Piece::MonthName {
                    abbr,
                    case,
                    month,
                    text,
                } => {
                    if date.month() == *month {
                        out.push_str(text);
                    } else {
                        let table = if *abbr { &MONTHS_ABBR } else { &MONTHS_FULL };
                        let name = table.get(date.month0() as usize).copied().unwrap_or("");
                        out.push_str(&case.apply(name));
                    }
                }
                Piece::Year { two_digit } => {
                    if *two_digit {
                        out.push_str(&format!("{:02}", date.year().rem_euclid(100)));
                    } else {
                        out.push_str(&format!("{:04}", date.year()));
                    }
                }
                Piece::Weekday {
                    style,
                    case,
                    weekday: written,
                    text,
                } => {
                    if weekday == *written {
                        out.push_str(text);
                    } else {
                        let table = match style {
                            WeekdayStyle::Full => &WEEKDAYS_FULL,
                            WeekdayStyle::Abbr => &WEEKDAYS_ABBR,
                            WeekdayStyle::LongAbbr => &WEEKDAYS_LONG_ABBR,
                        };
                        let idx = weekday.num_days_from_monday() as usize;
                        out.push_str(&case.apply(table.get(idx).copied().unwrap_or("")));
                    }
                }
            }
        }
        out
    }
}

/// Same month/day in `year`; Feb 29 becomes Feb 28 when `year` is not a leap year.
fn with_year(date: NaiveDate, year: i32) -> NaiveDate {
    NaiveDate::from_ymd_opt(year, date.month(), date.day())
        .or_else(|| NaiveDate::from_ymd_opt(year, date.month(), date.day().saturating_sub(1)))
        .unwrap_or(date)
}

fn rotate_weekday(mut weekday: Weekday, days: i64) -> Weekday {
    for _ in 0..days.rem_euclid(7) {
        weekday = weekday.succ();
    }
    weekday
}

fn push_number(out: &mut String, n: u32, pad: bool) {
    if pad {
        out.push_str(&format!("{n:02}"));
    } else {
        out.push_str(&n.to_string());
    }
}

fn ordinal_suffix(day: u32) -> &'static str {
    match (day % 10, day % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

// ---------------------------------------------------------------------------------------
// Lexing: the mention is split into digit runs, letter runs and runs of anything else.
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Num,
    Word,
    Sep,
}

#[derive(Debug, Clone, Copy)]
struct Tok<'a> {
    kind: Kind,
    text: &'a str,
    start: usize,
}

impl Tok<'_> {
    fn is_num(&self, min_len: usize, max_len: usize) -> bool {
        self.kind == Kind::Num && (min_len..=max_len).contains(&self.text.len())
    }

    fn is_sep(&self, allowed: &[&str]) -> bool {
        self.kind == Kind::Sep && allowed.contains(&self.text)
    }
}

fn lex(s: &str) -> Option<Vec<Tok<'_>>> {
    let mut toks: Vec<Tok<'_>> = Vec::new();
    for (i, c) in s.char_indices() {
        let kind = if c.is_ascii_digit() {
            Kind::Num
        } else if c.is_alphabetic() {
            Kind::Word
        } else {
            Kind::Sep
        };
        let end = i + c.len_utf8();
        match toks.last_mut() {
            Some(t) if t.kind == kind => t.text = s.get(t.start..end)?,
            _ => toks.push(Tok {
                kind,
                text: s.get(i..end)?,
                start: i,
            }),
        }
    }
    Some(toks)
}

/// Value of a digit run; callers bound the length first so this cannot overflow.
fn value(digits: &str) -> Option<u32> {
    if digits.len() > 4 {
        return None;
    }
    digits.parse().ok()
}

fn two_digit_year(v: u32) -> i32 {
    let v = v as i32;
    if v < TWO_DIGIT_PIVOT {
        2000 + v
    } else {
        1900 + v
    }
}

fn year_of(digits: &str) -> Option<i32> {
    let v = value(digits)?;
    match digits.len() {
        2 => Some(two_digit_year(v)),
        4 => Some(v as i32),
        _ => None,
    }
}

/// Padding evidence from one numeric component: "3" → unpadded, "03" → padded, "15" → unknown.
fn pad_evidence(digits: &str) -> Option<bool> {
    if digits.len() == 1 {
        Some(false)
    } else if digits.starts_with('0') {
        Some(true)
    } else {
        None
    }
}

/// Padding for (month, day): each uses its own evidence, else its sibling's, else `default`.
fn pads(month: &str, day: &str, default: bool) -> (bool, bool) {
    let (m, d) = (pad_evidence(month), pad_evidence(day));
    (m.or(d).unwrap_or(default), d.or(m).unwrap_or(default))
}

/// What `parse_numeric` / `parse_named` produce before the date is validated.
struct Parsed {
    year: Option<i32>,
    month: u32,
    day: Option<u32>,
    pieces: Vec<Piece>,
}

// ---------------------------------------------------------------------------------------
// All-numeric forms: ISO (with optional time), numeric full dates, month + year.
// ---------------------------------------------------------------------------------------

fn parse_numeric(toks: &[Tok<'_>], core: &str, day_first: bool) -> Option<Parsed> {
    let lit = |s: &str| Piece::Lit(s.to_string());

    // ISO: YYYY-MM-DD, YYYY/MM/DD or YYYY.MM.DD, optionally followed by a time.
    if let [y, s1, m, s2, d, rest @ ..] = toks
        && y.is_num(4, 4)
        && m.is_num(1, 2)
        && d.is_num(1, 2)
        && s1.is_sep(&["-", "/", "."])
        && s1.text == s2.text
        && s2.kind == Kind::Sep
    {
        let time = match rest.first() {
            Some(t) => core.get(t.start..)?,
            None => "",
        };
        if !time.is_empty() && !valid_time(time) {
            return None;
        }
        let (mpad, dpad) = pads(m.text, d.text, true);
        let mut pieces = vec![
            Piece::Year { two_digit: false },
            lit(s1.text),
            Piece::MonthNum { pad: mpad },
            lit(s2.text),
            Piece::Day {
                pad: dpad,
                ordinal: None,
            },
        ];
        if !time.is_empty() {
            pieces.push(lit(time));
        }
        return Some(Parsed {
            year: year_of(y.text),
            month: value(m.text)?,
            day: Some(value(d.text)?),
            pieces,
        });
    }

    match toks {
        // ISO month: YYYY-MM, YYYY/MM.
        [y, s, m] if y.is_num(4, 4) && m.is_num(1, 2) && s.is_sep(&["-", "/"]) => Some(Parsed {
            year: year_of(y.text),
            month: value(m.text)?,
            day: None,
            pieces: vec![
                Piece::Year { two_digit: false },
                lit(s.text),
                Piece::MonthNum {
                    pad: pad_evidence(m.text).unwrap_or(true),
                },
            ],
        }),
        // Month + year: MM/YYYY, MM-YYYY (not '.', which reads as a decimal number), and
        // MM/YY when the second part cannot be a day ("4/89"; "4/05" stays a month and day).
        [m, s, y]
            if m.is_num(1, 2)
                && (y.is_num(4, 4) && s.is_sep(&["/", "-"])
                    || y.is_num(2, 2) && s.is_sep(&["/"]) && value(y.text)? > 31) =>
        {
            Some(Parsed {
                year: year_of(y.text),
                month: value(m.text)?,
                day: None,
                pieces: vec![
                    Piece::MonthNum {
                        pad: pad_evidence(m.text).unwrap_or(true),
                    },
                    lit(s.text),
                    Piece::Year {
                        two_digit: y.text.len() == 2,
                    },
                ],
            })
        }
        // Month and day without a year, written with '/' ("3/14"; "14/3" day first). Clinical
        // notes write most dates this way; recognizers only claim them with a date word around.
        [a, s, b] if a.is_num(1, 2) && b.is_num(1, 2) && s.is_sep(&["/"]) => {
            let (va, vb) = (value(a.text)?, value(b.text)?);
            let month_first = month_first(va, vb, day_first)?;
            let (m, d) = if month_first { (a, b) } else { (b, a) };
            let (mpad, dpad) = pads(m.text, d.text, false);
            let month_piece = Piece::MonthNum { pad: mpad };
            let day_piece = Piece::Day {
                pad: dpad,
                ordinal: None,
            };
            let pieces = if month_first {
                vec![month_piece, lit(s.text), day_piece]
            } else {
                vec![day_piece, lit(s.text), month_piece]
            };
            Some(Parsed {
                year: None,
                month: value(m.text)?,
                day: Some(value(d.text)?),
                pieces,
            })
        }
        // A/B/C with a 2- or 4-digit year; A/B order decided by values, then `day_first`.
        [a, s1, b, s2, c]
            if a.is_num(1, 2)
                && b.is_num(1, 2)
                && (c.is_num(2, 2) || c.is_num(4, 4))
                && s1.is_sep(&["/", "-", "."])
                && s1.text == s2.text
                && s2.kind == Kind::Sep =>
        {
            let (va, vb) = (value(a.text)?, value(b.text)?);
            let month_first = month_first(va, vb, day_first)?;
            let (m, d) = if month_first { (a, b) } else { (b, a) };
            let (mpad, dpad) = pads(m.text, d.text, true);
            let month_piece = Piece::MonthNum { pad: mpad };
            let day_piece = Piece::Day {
                pad: dpad,
                ordinal: None,
            };
            let (first, second) = if month_first {
                (month_piece, day_piece)
            } else {
                (day_piece, month_piece)
            };
            Some(Parsed {
                year: year_of(c.text),
                month: value(m.text)?,
                day: Some(value(d.text)?),
                pieces: vec![
                    first,
                    lit(s1.text),
                    second,
                    lit(s2.text),
                    Piece::Year {
                        two_digit: c.text.len() == 2,
                    },
                ],
            })
        }
        _ => None,
    }
}

/// Whether A/B reads as month/day: a part over 12 can only be the day, else `day_first`
/// decides; `None` when both are over 12.
fn month_first(a: u32, b: u32, day_first: bool) -> Option<bool> {
    match (a > 12, b > 12) {
        (true, true) => None,
        (true, false) => Some(false),
        (false, true) => Some(true),
        (false, false) => Some(!day_first),
    }
}

/// Time after an ISO date: `T` or one space, then H:MM or HH:MM[:SS].
fn valid_time(s: &str) -> bool {
    let Some(rest) = s.strip_prefix(['T', 't', ' ']) else {
        return false;
    };
    let field = |p: &str, min_len: usize, max: u32| {
        (min_len..=2).contains(&p.len())
            && p.bytes().all(|b| b.is_ascii_digit())
            && value(p).is_some_and(|v| v <= max)
    };
    match rest.split(':').collect::<Vec<_>>().as_slice() {
        [h, m] => field(h, 1, 23) && field(m, 2, 59),
        [h, m, sec] => field(h, 1, 23) && field(m, 2, 59) && field(sec, 2, 59),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------
// Forms with words: month names, ordinals, "the"/"of", weekday prefix.
// ---------------------------------------------------------------------------------------

/// Whether a month word is necessarily a full name, an abbreviation, or either ("May").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameKind {
    Full,
    Abbr,
    Either,
}

#[derive(Debug, Clone, Copy)]
enum El<'a> {
    Weekday(Weekday, WeekdayStyle, &'a str),
    Month(u32, NameKind, &'a str),
    The(&'a str),
    Of(&'a str),
    Num(&'a str),
    Ord(&'a str, &'a str),
}

impl El<'_> {
    fn is_day(&self) -> bool {
        match self {
            El::Num(d) | El::Ord(d, _) => (1..=2).contains(&d.len()),
            _ => false,
        }
    }

    fn is_year(&self) -> bool {
        matches!(self, El::Num(y) if y.len() == 2 || y.len() == 4)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Weekday,
    The,
    Of,
    Day,
    Month,
    Year,
}

/// Whether `word` names a month, whole or abbreviated, in any case ("March", "sept", "DEC").
pub(crate) fn is_month_name(word: &str) -> bool {
    month_word(word).is_some()
}

fn month_word(word: &str) -> Option<(u32, NameKind)> {
    let lower = word.to_ascii_lowercase();
    if lower == "may" {
        return Some((5, NameKind::Either));
    }
    if lower == "sept" {
        return Some((9, NameKind::Abbr));
    }
    (1u32..)
        .zip(MONTHS_FULL.iter().zip(MONTHS_ABBR.iter()))
        .find_map(|(n, (full, abbr))| {
            if lower == full.to_ascii_lowercase() {
                Some((n, NameKind::Full))
            } else if lower == abbr.to_ascii_lowercase() {
                Some((n, NameKind::Abbr))
            } else {
                None
            }
        })
}

fn weekday_word(word: &str) -> Option<(Weekday, WeekdayStyle)> {
    let lower = word.to_ascii_lowercase();
    match lower.as_str() {
        "tues" => return Some((Weekday::Tue, WeekdayStyle::LongAbbr)),
        "thur" | "thurs" => return Some((Weekday::Thu, WeekdayStyle::LongAbbr)),
        _ => {}
    }
    WEEKDAYS.iter().enumerate().find_map(|(i, w)| {
        let full = WEEKDAYS_FULL.get(i)?.to_ascii_lowercase();
        let abbr = WEEKDAYS_ABBR.get(i)?.to_ascii_lowercase();
        if lower == full {
            Some((*w, WeekdayStyle::Full))
        } else if lower == abbr {
            Some((*w, WeekdayStyle::Abbr))
        } else {
            None
        }
    })
}

fn classify_word(word: &str) -> Option<El<'_>> {
    if word.eq_ignore_ascii_case("the") {
        Some(El::The(word))
    } else if word.eq_ignore_ascii_case("of") {
        Some(El::Of(word))
    } else if let Some((m, kind)) = month_word(word) {
        Some(El::Month(m, kind, word))
    } else {
        weekday_word(word).map(|(w, style)| El::Weekday(w, style, word))
    }
}

fn is_ordinal_suffix(word: &str) -> bool {
    ["st", "nd", "rd", "th"]
        .iter()
        .any(|s| word.eq_ignore_ascii_case(s))
}

/// Elements, the separators between consecutive elements, and a separator after the last.
type Elements<'a> = (Vec<El<'a>>, Vec<&'a str>, &'a str);

fn elements<'a>(toks: &[Tok<'a>]) -> Option<Elements<'a>> {
    let mut els = Vec::new();
    let mut seps = Vec::new();
    let mut trailing = "";
    let mut i = 0;
    while let Some(t) = toks.get(i) {
        let el = match t.kind {
            Kind::Sep => return None,
            Kind::Num => match toks.get(i + 1) {
                // Digits glued to letters are only allowed as an ordinal ("3rd").
                Some(n) if n.kind == Kind::Word => {
                    if !is_ordinal_suffix(n.text) {
                        return None;
                    }
                    i += 1;
                    El::Ord(t.text, n.text)
                }
                _ => El::Num(t.text),
            },
            Kind::Word => classify_word(t.text)?,
        };
        els.push(el);
        i += 1;
        match toks.get(i) {
            None => break,
            Some(s) if s.kind == Kind::Sep => {
                if i + 1 == toks.len() {
                    trailing = s.text;
                } else {
                    seps.push(s.text);
                }
                i += 1;
            }
            Some(_) => return None,
        }
    }
    Some((els, seps, trailing))
}

fn is_ws(s: &str) -> bool {
    !s.is_empty() && s.chars().all(char::is_whitespace)
}

/// "," alone, whitespace, or "," followed by whitespace.
fn is_comma_ws(s: &str) -> bool {
    match s.strip_prefix(',') {
        Some(rest) => rest.is_empty() || is_ws(rest),
        None => is_ws(s),
    }
}

/// Removes an abbreviation period; `None` when a period is present but not allowed.
fn strip_period(s: &str, allowed: bool) -> Option<&str> {
    match s.strip_prefix('.') {
        Some(rest) if allowed => Some(rest),
        Some(_) => None,
        None => Some(s),
    }
}

/// Assigns a role to each element of the body (everything after an optional weekday).
fn body_roles(body: &[El<'_>]) -> Option<Vec<Role>> {
    use Role::{Day, Month, Of, The, Year};
    match body {
        [El::Month(..), d] if d.is_day() => Some(vec![Month, Day]),
        [El::Month(..), d, El::Num(y)] if d.is_day() && y.len() == 4 => {
            Some(vec![Month, Day, Year])
        }
        [El::Month(..), El::Num(y)] if y.len() == 4 => Some(vec![Month, Year]),
        _ => {
            let mut roles = Vec::with_capacity(body.len());
            let mut j = 0;
            if matches!(body.get(j), Some(El::The(_))) {
                roles.push(The);
                j += 1;
            }
            if !body.get(j).is_some_and(El::is_day) {
                return None;
            }
            roles.push(Day);
            j += 1;
            if matches!(body.get(j), Some(El::Of(_))) {
                roles.push(Of);
                j += 1;
            }
            if !matches!(body.get(j), Some(El::Month(..))) {
                return None;
            }
            roles.push(Month);
            j += 1;
            if body.get(j).is_some_and(El::is_year) {
                roles.push(Year);
                j += 1;
            }
            (j == body.len()).then_some(roles)
        }
    }
}

fn parse_named(toks: &[Tok<'_>]) -> Option<Parsed> {
    let (els, seps, trailing) = elements(toks)?;
    let has_weekday = matches!(els.first(), Some(El::Weekday(..)));
    let body_start = usize::from(has_weekday);
    let mut roles = Vec::with_capacity(els.len());
    if has_weekday {
        roles.push(Role::Weekday);
    }
    roles.extend(body_roles(els.get(body_start..)?)?);
    if roles.len() != els.len() || seps.len() + 1 != els.len() {
        return None;
    }

    // "15-Mar-2021" / "15/Mar/21": day, month, year joined by the same '-' or '/'.
    let dash_dmy = roles.get(body_start..) == Some(&[Role::Day, Role::Month, Role::Year][..])
        && matches!(els.get(body_start), Some(El::Num(_)))
        && matches!(seps.get(body_start), Some(&("-" | "/")))
        && seps.get(body_start) == seps.get(body_start + 1);
    // "11-Mar": day and month joined by '-', no year.
    let dash_dm = roles.get(body_start..) == Some(&[Role::Day, Role::Month][..])
        && matches!(els.get(body_start), Some(El::Num(_)))
        && seps.get(body_start) == Some(&"-");
    // "Mar-2021" / "Mar/2021".
    let dash_my = roles.get(body_start..) == Some(&[Role::Month, Role::Year][..])
        && matches!(seps.get(body_start), Some(&("-" | "/")));

    let mut year = None;
    let mut month = None;
    let mut day = None;
    let mut pieces = Vec::with_capacity(els.len() * 2 + 1);
    for (k, (el, role)) in els.iter().zip(roles.iter()).enumerate() {
        let after = seps.get(k).copied().unwrap_or(trailing);
        let next = roles.get(k + 1).copied();
        let piece = match (*el, *role) {
            (El::Weekday(w, style, text), Role::Weekday) => {
                let rest = strip_period(after, style != WeekdayStyle::Full)?;
                if !is_comma_ws(rest) {
                    return None;
                }
                Piece::Weekday {
                    style,
                    case: Case::of(text),
                    weekday: w,
                    text: text.to_string(),
                }
            }
            (El::The(text) | El::Of(text), Role::The | Role::Of) => {
                if !is_ws(after) {
                    return None;
                }
                Piece::Lit(text.to_string())
            }
            (El::Num(d) | El::Ord(d, _), Role::Day) => {
                let ok = match next {
                    Some(Role::Month) => is_ws(after) || dash_dmy || dash_dm,
                    Some(Role::Of) => is_ws(after),
                    Some(Role::Year) => is_comma_ws(after),
                    None => after.is_empty(),
                    _ => false,
                };
                if !ok {
                    return None;
                }
                day = Some(value(d)?);
                let ordinal = match el {
                    El::Ord(_, suffix) => Some(Case::of(suffix)),
                    _ => None,
                };
                Piece::Day {
                    pad: d.len() == 2 && d.starts_with('0'),
                    ordinal,
                }
            }
            (El::Month(m, kind, text), Role::Month) => {
                let period = after.starts_with('.');
                let rest = strip_period(after, kind != NameKind::Full)?;
                let ok = match next {
                    Some(Role::Day) => is_ws(rest),
                    Some(Role::Year) => dash_dmy || dash_my || is_comma_ws(rest),
                    None => rest.is_empty(),
                    _ => false,
                };
                if !ok {
                    return None;
                }
                month = Some(m);
                Piece::MonthName {
                    abbr: match kind {
                        NameKind::Full => false,
                        NameKind::Abbr => true,
                        NameKind::Either => period || dash_dmy || dash_my || dash_dm,
                    },
                    case: Case::of(text),
                    month: m,
                    text: text.to_string(),
                }
            }
            (El::Num(y), Role::Year) => {
                if !after.is_empty() || (y.len() == 2 && !dash_dmy) {
                    return None;
                }
                year = Some(year_of(y)?);
                Piece::Year {
                    two_digit: y.len() == 2,
                }
            }
            _ => return None,
        };
        pieces.push(piece);
        if !after.is_empty() {
            pieces.push(Piece::Lit(after.to_string()));
        }
    }
    if has_weekday && day.is_none() {
        return None;
    }
    Some(Parsed {
        year,
        month: month?,
        day,
        pieces,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> DateMention {
        parse_date(s, false).unwrap_or_else(|| panic!("should parse: {s:?}"))
    }

    fn pd(s: &str) -> DateMention {
        parse_date(s, true).unwrap_or_else(|| panic!("should parse (day first): {s:?}"))
    }

    const MONTH_FIRST_FORMS: &[&str] = &[
        "2021-03-15",
        "2021/03/15",
        "2021.03.15",
        "2021-3-5",
        "2021-03-15T10:30",
        "2021-03-15 10:30",
        "2021-03-15T10:30:45",
        "03/15/2021",
        "3/15/2021",
        "3/15/21",
        "03-15-2021",
        "03.15.2021",
        "12/11/2021",
        "March 15, 2021",
        "Mar 15 2021",
        "Mar. 15, 2021",
        "March 15,2021",
        "15 March 2021",
        "15-Mar-2021",
        "15-MAR-2021",
        "05-May-21",
        "15/Mar/2021",
        "15 Mar 2021",
        "15 Mar. 2021",
        "15 March, 2021",
        "Sept 3, 2021",
        "Sep 3, 2021",
        "March 2021",
        "March, 2021",
        "Mar. 2021",
        "Mar-2021",
        "March 15",
        "15 March",
        "11-Mar",
        "3/14",
        "03/14",
        "12/5",
        "4/89",
        "15 Mar.",
        "MARCH 15, 2021",
        "march 15, 2021",
        "3rd of May 2021",
        "the 3rd of May, 2021",
        "The 3RD of May 2021",
        "May 3rd, 2021",
        "May 3rd",
        "1st June 2020",
        "June 1st",
        "Monday, March 15, 2021",
        "Mon 15 Mar 2021",
        "MON. 15 MAR 2021",
        "Monday the 15th of March 2021",
        "Thur, March 18, 2021",
        "Monday, March 15",
        "05/2021",
        "5/2021",
        "05-2021",
        "2021-05",
        "2021/5",
        "  March 15, 2021 ",
    ];

    const DAY_FIRST_FORMS: &[&str] = &[
        "15/03/2021",
        "15.03.2021",
        "15-03-2021",
        "15.3.21",
        "03/04/2021",
        "3.4.21",
    ];

    #[test]
    fn every_form_round_trips() {
        for s in MONTH_FIRST_FORMS {
            assert_eq!(p(s).shifted(0, false), *s, "round trip of {s:?}");
            assert_eq!(p(s).shifted(0, true), *s, "keep_year round trip of {s:?}");
            let m = p(s);
            if m.has_year() {
                assert_eq!(m.format_as(m.date()), *s, "format_as of {s:?}");
            }
        }
        for s in DAY_FIRST_FORMS {
            assert_eq!(pd(s).shifted(0, false), *s, "round trip of {s:?}");
        }
    }

    #[test]
    fn known_shifts() {
        assert_eq!(p("03/15/2021").shifted(30, false), "04/14/2021");
        assert_eq!(p("2021-12-25").shifted(10, false), "2022-01-04");
        assert_eq!(p("March 15, 2021").shifted(-15, false), "February 28, 2021");
        assert_eq!(p("3rd of May 2021").shifted(1, false), "4th of May 2021");
        assert_eq!(pd("15.03.2021").shifted(1, false), "16.03.2021");
        assert_eq!(p("05/2021").shifted(30, false), "06/2021");
        assert_eq!(
            p("Monday, March 15, 2021").shifted(1, false),
            "Tuesday, March 16, 2021"
        );
        assert_eq!(p("3/15/21").shifted(365, false), "3/15/22");
        assert_eq!(p("2021-05").shifted(-30, false), "2021-04");
        assert_eq!(p("March 2021").shifted(31, false), "April 2021");
        assert_eq!(p("Mar-2021").shifted(-60, false), "Jan-2021");
        assert_eq!(p("2021-03-15T10:30").shifted(1, false), "2021-03-16T10:30");
        assert_eq!(p("2021-03-15 10:30").shifted(-1, false), "2021-03-14 10:30");
        assert_eq!(pd("15.3.21").shifted(20, false), "4.4.21");
    }

    #[test]
    fn leap_day_with_keep_year() {
        // 2020-02-29 + 365 days = 2021-02-28 (2021 has no Feb 29). Restoring the year gives
        // 2020-02-28, which exists, so no leap-day adjustment is needed here.
        assert_eq!(p("Feb 29, 2020").shifted(365, true), "Feb 28, 2020");
        assert_eq!(p("Feb 29, 2020").shifted(365, false), "Feb 28, 2021");
        // 2020-02-28 + 1 = 2020-02-29 kept as is; moved into 2021 and back also fine.
        assert_eq!(p("Feb 28, 2021").shifted(366, true), "Mar 1, 2021");
        // Feb 29 reached by shifting, then forced into a non-leap year → Feb 28.
        assert_eq!(p("Mar 1, 2021").shifted(-366, true), "Feb 28, 2021");
    }

    #[test]
    fn keep_year_restores_year() {
        assert_eq!(p("12/31/2021").shifted(1, true), "01/01/2021");
        assert_eq!(p("12/31/2021").shifted(1, false), "01/01/2022");
        assert_eq!(p("January 3, 2021").shifted(-10, true), "December 24, 2021");
    }

    #[test]
    fn year_and_fullness() {
        assert_eq!(p("March 2021").year().as_deref(), Some("2021"));
        assert_eq!(p("3/15/21").year().as_deref(), Some("2021"));
        assert_eq!(pd("15.3.99").year().as_deref(), Some("1999"));
        assert_eq!(p("March 15").year(), None);
        assert!(p("March 15, 2021").is_full());
        assert!(p("2021-03-15T10:30").is_full());
        assert!(!p("March 2021").is_full());
        assert!(!p("05/2021").is_full());
        assert!(!p("March 15").is_full());
        assert!(p("March 15").has_day() && !p("March 15").has_year());
    }

    #[test]
    fn two_digit_year_pivot() {
        assert_eq!(p("1/1/49").year().as_deref(), Some("2049"));
        assert_eq!(p("1/1/50").year().as_deref(), Some("1950"));
        assert_eq!(p("12/31/99").shifted(1, false), "01/01/00");
        assert_eq!(p("1/31/99").shifted(1, false), "2/1/99");
    }

    #[test]
    fn rejects_non_dates() {
        for s in [
            "02/30/2021",
            "13/13/2021",
            "00/10/2020",
            "15 mg",
            "120/80",
            "3/4/5",
            "13/14",
            "0/5",
            "3/123",
            "2021",
            "15",
            "abc",
            "March",
            "32/01/2021",
            "2021-13-01",
            "2021-02-30",
            "1.2021",
            "1799-12-31",
            "2201-01-01",
            "March 15, 2021 today",
            "on March 15",
            "15 March 2021 mg",
            "March 15 21",
            "Mar 15 2021.",
            "March. 15, 2021",
            "15 Mar-2021",
            "15-Mar/2021",
            "Monday, March 2021",
            "Monday",
            "2021-03-15T25:00",
            "2021-03-15 10",
            "2021-03-15 10:30 pm",
            "15mar2021",
            "15th",
            "ratio 1:2",
            "7.2",
            "E11.9",
            "",
            "   ",
        ] {
            assert!(parse_date(s, false).is_none(), "should reject {s:?}");
            assert!(
                parse_date(s, true).is_none(),
                "should reject (day first) {s:?}"
            );
        }
    }

    #[test]
    fn ambiguity_follows_day_first() {
        assert_eq!(p("03/04/2021").shifted(1, false), "03/05/2021");
        assert_eq!(pd("03/04/2021").shifted(1, false), "04/04/2021");
        // Unambiguous dates ignore the flag.
        assert_eq!(pd("03/15/2021").shifted(1, false), "03/16/2021");
        assert_eq!(p("15/03/2021").shifted(1, false), "16/03/2021");
    }

    #[test]
    fn padding_is_kept_per_component() {
        assert_eq!(p("3/5/2021").shifted(35, false), "4/9/2021");
        assert_eq!(p("03/05/2021").shifted(35, false), "04/09/2021");
        assert_eq!(p("3/15/2021").shifted(-10, false), "3/5/2021");
        assert_eq!(p("12/15/2021").shifted(-10, false), "12/05/2021");
        assert_eq!(p("March 15, 2021").shifted(-10, false), "March 5, 2021");
        assert_eq!(p("March 05, 2021").shifted(1, false), "March 06, 2021");
        assert_eq!(p("2021-3-5").shifted(1, false), "2021-3-6");
    }

    #[test]
    fn month_names_keep_style_and_case() {
        assert_eq!(p("MARCH 15, 2021").shifted(31, false), "APRIL 15, 2021");
        assert_eq!(p("march 15, 2021").shifted(31, false), "april 15, 2021");
        assert_eq!(p("15-MAR-2021").shifted(31, false), "15-APR-2021");
        assert_eq!(p("Mar. 15, 2021").shifted(31, false), "Apr. 15, 2021");
        assert_eq!(p("Sept 3, 2021").shifted(30, false), "Oct 3, 2021");
        assert_eq!(p("Aug 31, 2021").shifted(3, false), "Sep 3, 2021");
        assert_eq!(p("May 3rd").shifted(30, false), "June 2nd");
        assert_eq!(p("May. 3, 2021").shifted(30, false), "Jun. 2, 2021");
        assert_eq!(p("3-May-2021").shifted(30, false), "2-Jun-2021");
        assert_eq!(p("15 Mar.").shifted(31, false), "15 Apr.");
    }

    #[test]
    fn ordinal_suffixes_are_recomputed() {
        let base = p("the 1st of May, 2021");
        for (day, expected) in [
            (1, "1st"),
            (2, "2nd"),
            (3, "3rd"),
            (4, "4th"),
            (11, "11th"),
            (12, "12th"),
            (13, "13th"),
            (21, "21st"),
            (22, "22nd"),
            (23, "23rd"),
            (31, "31st"),
        ] {
            assert_eq!(
                base.shifted(day - 1, false),
                format!("the {expected} of May, 2021")
            );
        }
        assert_eq!(
            p("The 3RD of May 2021").shifted(-1, false),
            "The 2ND of May 2021"
        );
        assert_eq!(p("June 1st").shifted(1, false), "June 2nd");
    }

    #[test]
    fn weekdays_are_recomputed() {
        assert_eq!(p("Mon 15 Mar 2021").shifted(1, false), "Tue 16 Mar 2021");
        assert_eq!(p("MON. 15 MAR 2021").shifted(1, false), "TUE. 16 MAR 2021");
        assert_eq!(
            p("Thur, March 18, 2021").shifted(-2, false),
            "Tues, March 16, 2021"
        );
        // A wrong weekday in the source is corrected, not copied.
        assert_eq!(
            p("Tuesday, March 15, 2021").shifted(0, false),
            "Monday, March 15, 2021"
        );
        // Without a year, the written weekday is rotated by the shift.
        assert_eq!(p("Monday, March 15").shifted(8, false), "Tuesday, March 23");
        assert_eq!(p("Monday, March 15").shifted(-1, false), "Sunday, March 14");
    }

    #[test]
    fn dates_without_year_use_a_leap_anchor() {
        let m = p("Feb 29");
        assert_eq!(m.year(), None);
        assert_eq!(m.shifted(1, false), "Mar 1");
        assert_eq!(m.shifted(1, true), "Mar 1");
        assert_eq!(p("Dec 31").shifted(1, false), "Jan 1");
        assert_eq!(p("3/14").year(), None);
        assert_eq!(p("3/31").shifted(1, false), "4/1");
        assert_eq!(pd("14/3").shifted(1, false), "15/3");
        assert_eq!(p("11-Mar").shifted(1, false), "12-Mar");
        assert_eq!(p("4/89").year().as_deref(), Some("1989"));
        assert!(!p("4/89").has_day());
    }

    #[test]
    fn format_as_writes_surrogates() {
        let target = NaiveDate::from_ymd_opt(1999, 7, 4).unwrap();
        assert_eq!(
            p("the 3rd of May, 2021").format_as(target),
            "the 4th of July, 1999"
        );
        assert_eq!(p("3/15/21").format_as(target), "7/4/99");
        assert_eq!(p("Mon 15 Mar 2021").format_as(target), "Sun 4 Jul 1999");
        assert_eq!(p("05/2021").format_as(target), "07/1999");
    }

    #[test]
    fn shifting_never_panics() {
        let all = MONTH_FIRST_FORMS.iter().chain(DAY_FIRST_FORMS);
        for s in all {
            let m = parse_date(s, true).unwrap();
            for days in (-100_000..=100_000).step_by(997).chain([-100_000, 100_000]) {
                assert!(!m.shifted(days, false).is_empty());
                assert!(!m.shifted(days, true).is_empty());
            }
            for days in [i64::MIN, i64::MAX, i64::MIN / 2, i64::MAX / 86_400] {
                assert_eq!(m.shifted(days, false), *s);
                assert_eq!(m.shifted(days, true), *s);
            }
        }
    }

    #[test]
    fn extreme_shift_stays_in_format() {
        assert_eq!(p("01/01/1800").shifted(-100_000, false), "03/19/1526");
        assert_eq!(p("12/31/2200").shifted(100_000, true), "10/15/2200");
    }

    #[test]
    fn noise_never_panics() {
        // Deterministic pseudo-random strings built from date-like fragments.
        let parts = [
            "1", "03", "15", "2021", "21", "/", "-", ".", " ", ",", ":", "T", "Mar", "May", "sept",
            "the", "of", "rd", "th", "Mon", "é", "٣", "\u{200b}", "99999", "0",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            let mut text = String::new();
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let len = (state >> 60) as usize;
            for _ in 0..len {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                text.push_str(parts[(state >> 33) as usize % parts.len()]);
            }
            for day_first in [false, true] {
                if let Some(m) = parse_date(&text, day_first) {
                    assert_eq!(m.shifted(0, false), text, "round trip of {text:?}");
                    let _ = (m.shifted(-40_000, true), m.year(), m.is_full());
                }
            }
        }
    }

    #[test]
    fn valid_ymd_checks_existence() {
        assert!(valid_ymd(2020, 2, 29));
        assert!(!valid_ymd(2021, 2, 29));
        assert!(!valid_ymd(2021, 4, 31));
        assert!(!valid_ymd(2021, 13, 1));
        assert!(!valid_ymd(2021, 0, 1));
        assert!(!valid_ymd(2021, 1, 0));
    }
}
