//! What the layout around spans says about them, applied by the recognize stage after the model
//! and the recognizers have spoken:
//!
//! - A given name found alone takes the capitalized word after it (and a middle initial between):
//!   "Brajko Rukavina", "Jiří Z Lukášek". A name that starts with an initial takes the
//!   capitalized word before it: "Xzavian G. Tavares". The model often finds one half of a
//!   foreign name; the half it left would be a leak. A surname written first between a field's
//!   label and the name joins it ("Patient: Hoàng, Quốc Bảo").
//! - The other members of a list that holds a name are names: "Bergman, Harvey and Sanchez",
//!   where the model found two of the three. A list has a conjunction ("and", "or", "&"), its
//!   members are single capitalized words, and words shaped like clinical terms ("Cardiology",
//!   "Colitis") are not members.
//! - Initials given to a named person in brackets ("Laura Benítez (LB)") are that person's name
//!   wherever the text uses them ("LB: And then?").
//! - A street takes the house number written after it ("Prenzlauer Allee 20") and the unit,
//!   plot or shop written before it ("Unit 4/17 Pakington St", "Shop 3, 14 South Terrace",
//!   "No. 23, Jalan Kenanga", "Flat No. B-702, Kalpataru Heights", "apto 142, Bloco B").
//! - Parts of one address separated only by spaces ("727" "Green Gateway" "Suite 873") become one
//!   span, so the spaces between them are not left standing as the outline of an address. ZIP
//!   codes stay apart (Safe Harbor keeps three of their digits), and so do states and countries.
//! - In an address, the words between its street or unit and its country are its town:
//!   "Suite 959 ??? Leipzig ??? Germany 36619".
//! - A place that is a country, and not a town with a state or ZIP after it ("Lebanon, PA"),
//!   is labelled COUNTRY: Safe Harbor removes places smaller than a state, and policies keep
//!   countries as they keep states.
//! - A place that is a province, state or territory of another country and no town's name too
//!   ("Kingston, Ontario", "Pune, Maharashtra") is labelled STATE, as a US state is.

use super::span::Span;
use crate::deid::{canonical_label, dates};

/// Capitalized words after a given name that are not a surname (weekdays and months too, from
/// [`crate::deid::dates`]).
const NOT_SURNAMES: &[&str] = &[
    "A",
    "An",
    "And",
    "Are",
    "As",
    "At",
    "But",
    "By",
    "Can",
    "Could",
    "Did",
    "Do",
    "Does",
    "For",
    "From",
    "Had",
    "Has",
    "Have",
    "He",
    "Her",
    "His",
    "How",
    "If",
    "In",
    "Is",
    "It",
    "Its",
    "May",
    "Might",
    "Must",
    "My",
    "No",
    "Not",
    "Of",
    "On",
    "Or",
    "Our",
    "She",
    "Should",
    "So",
    "That",
    "The",
    "Their",
    "Then",
    "They",
    "This",
    "To",
    "Was",
    "We",
    "Were",
    "What",
    "When",
    "Where",
    "Which",
    "Who",
    "Why",
    "Will",
    "With",
    "Would",
    "You",
    "Your",
    "Yes",
    "Mr",
    "Mrs",
    "Ms",
    "Dr",
    "MD",
    "Today",
    "Tomorrow",
    "Yesterday",
    "Please",
    "Thanks",
    "Hello",
    "Hi",
];

/// A word that follows a name and is none ([`NOT_SURNAMES`]), a month or a weekday: "Asked Anna
/// Monday", "Maria (Interpreter) Monday".
fn follows_names(word: &str) -> bool {
    NOT_SURNAMES.contains(&word)
        || dates::MONTHS_FULL.contains(&word)
        || dates::WEEKDAYS_FULL.contains(&word)
}

/// A capitalized word (an uppercase letter, then lowercase letters, apostrophes or hyphens) at
/// the start of `s`; its length in bytes.
fn capitalized_word(s: &str) -> Option<usize> {
    let mut chars = s.char_indices();
    let (_, first) = chars.next()?;
    if !first.is_uppercase() {
        return None;
    }
    let end = chars
        .find(|(_, c)| !(c.is_lowercase() || matches!(c, '\'' | '’' | '-')))
        .map_or(s.len(), |(i, _)| i);
    let word = &s[..end];
    let lower = word.chars().filter(|c| c.is_lowercase()).count();
    let glued = s[end..].chars().next().is_some_and(char::is_alphanumeric);
    (lower >= 1 && !glued && !follows_names(word)).then_some(end)
}

/// The start of the word (letters, apostrophes, hyphens) that ends `s`, if one does.
fn word_before(s: &str) -> Option<usize> {
    s.char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphabetic() || matches!(c, '\'' | '’' | '-'))
        .last()
        .map(|(i, _)| i)
}

/// A capitalized word that ends `s` (preceded by a non-letter or the start); its start.
fn capitalized_word_before(s: &str) -> Option<usize> {
    let start = word_before(s)?;
    (capitalized_word(&s[start..]) == Some(s.len() - start)).then_some(start)
}

/// " X" or " X." (a middle initial) at the start of `s`; its length in bytes.
fn initial(s: &str) -> Option<usize> {
    let rest = s.strip_prefix(' ')?;
    let c = rest.chars().next().filter(|c| c.is_uppercase())?;
    let after = &rest[c.len_utf8()..];
    let dot = usize::from(after.starts_with('.'));
    after[dot..]
        .starts_with(' ')
        .then_some(1 + c.len_utf8() + dot)
}

/// ` "Ben"`, ` ("A.J.")`, ` (Dunbar)` or ` “Bud”` at the start of `s`: one word of letters
/// (dots inside) in quotes, brackets or both; its length in bytes.
fn bracketed_word(s: &str) -> Option<usize> {
    const PAIRS: [(&str, &str); 5] = [
        ("(\"", "\")"),
        ("(“", "”)"),
        ("(", ")"),
        ("\"", "\""),
        ("“", "”"),
    ];
    let rest = s.strip_prefix(' ')?;
    let (open, close) = PAIRS.iter().find(|(open, _)| rest.starts_with(open))?;
    let body = &rest[open.len()..];
    let word = &body[..body.find(close)?];
    let n = word.chars().count();
    let shaped = (2..=15).contains(&n)
        && word.starts_with(char::is_uppercase)
        && word.chars().all(|c| c.is_alphabetic() || c == '.');
    shaped.then_some(1 + open.len() + word.len() + close.len())
}

/// A surname at the start of `s`: a capitalized word of letters, apostrophes and hyphens with a
/// lower-case letter, capitals inside allowed ("MacNeil", "Wójcik-Nowak"), that does not
/// [`follows_names`]; its length in bytes.
fn surname_word(s: &str) -> Option<usize> {
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_alphabetic() || matches!(c, '\'' | '’' | '-')))
        .map_or(s.len(), |(i, _)| i);
    let word = s[..end].trim_end_matches(['\'', '’', '-']);
    let glued = s[end..].chars().next().is_some_and(char::is_alphanumeric);
    let shaped = word.starts_with(char::is_uppercase) && word.chars().any(char::is_lowercase);
    (shaped && !glued && !follows_names(word)).then_some(word.len())
}

/// Extends given names forward over their surname and initialled names back over their given
/// name (see the module docs).
pub fn extend_names(text: &str, v: &mut [Span]) {
    for s in v.iter_mut() {
        let label = canonical_label(&s.label);
        if label.hipaa_class != "A_NAMES" {
            continue;
        }
        let inner = &text[s.start..s.end];
        // "Benjamin \"Ben\" Hollis", "Ruth (Dunbar) Sawyer": a nickname or a maiden name in
        // quotes or brackets between a given name and its surname.
        if !inner.contains(char::is_whitespace)
            && let Some(gap) = bracketed_word(&text[s.end..])
            && let Some(word) = text[s.end + gap..].strip_prefix(' ').and_then(surname_word)
        {
            s.end += gap + 1 + word;
            s.label = "NAME".into();
            continue;
        }
        if label.name == "FIRST_NAME" && !inner.contains(char::is_whitespace) {
            let rest = &text[s.end..];
            let skip = initial(rest).unwrap_or(0);
            if let Some(word) = rest[skip..].strip_prefix(' ').and_then(capitalized_word) {
                s.end += skip + 1 + word;
                s.label = "NAME".into();
            }
        }
        // "Xzavian G. Tavares": an initial before the name (inside it or just outside), and a
        // capitalized word before the initial.
        let mut head = &text[..s.start];
        let mut initialled = {
            let mut c = inner.chars();
            c.next().is_some_and(char::is_uppercase) && c.next() == Some('.')
        };
        if !initialled
            && let Some(before) = head.strip_suffix(". ")
            && let Some(c) = before.chars().next_back().filter(|c| c.is_uppercase())
            && before[..before.len() - c.len_utf8()].ends_with(' ')
        {
            head = &before[..before.len() - c.len_utf8()];
            initialled = true;
        }
        if initialled
            && let Some(head) = head.strip_suffix(' ')
            && let Some(start) = capitalized_word_before(head)
        {
            s.start = start;
            s.label = "NAME".into();
        } else if let Some(start) = surname_first_before(&text[..s.start]) {
            s.start = start;
            s.label = "NAME".into();
        }
    }
}

/// A capitalized word right before a one-word surname inside a sentence is its given name
/// ("a report from Johns Hopkins", where the model found "Hopkins"), unless it is an ordinary
/// word, a title, a month or a weekday. The word before it must end in a lower-case letter or a
/// comma, so a sentence's first word is left alone.
pub fn given_names_before_surnames(text: &str, v: &mut [Span], ordinary: impl Fn(&str) -> bool) {
    for s in v.iter_mut() {
        if canonical_label(&s.label).name != "LAST_NAME"
            || text[s.start..s.end].contains(char::is_whitespace)
        {
            continue;
        }
        let Some(head) = text[..s.start].strip_suffix(' ') else {
            continue;
        };
        let Some(start) = capitalized_word_before(head) else {
            continue;
        };
        let inside = text[..start]
            .strip_suffix(' ')
            .and_then(|h| h.chars().next_back())
            .is_some_and(|c| c.is_lowercase() || c == ',');
        if inside && !ordinary(&head[start..]) {
            s.start = start;
            s.label = "NAME".into();
        }
    }
}

/// "Patient: Hoàng, Quốc Bảo": a surname written first, between a field's label and the given
/// names found after it; its start.
fn surname_first_before(head: &str) -> Option<usize> {
    let before = head.strip_suffix(", ")?;
    let start = word_before(before)?;
    let word = &before[start..];
    let label = before[..start].trim_end_matches([' ', '\t']);
    (word.starts_with(char::is_uppercase)
        && !NOT_SURNAMES.contains(&word)
        && label.len() < start
        && label.ends_with(':'))
    .then_some(start)
}

/// Separators between list members, longest first; `true` for a conjunction, which ends a list.
/// The conjunctions of the other languages the model reads count too ("Kees en Marjolein",
/// "Baraka na Neema", "Kuba, Ola i Staś"): members are capitalized words either way.
#[rustfmt::skip]
const LIST_SEPARATORS: &[(&str, bool)] = &[
    (", and ", true), (", or ", true), (", & ", true), (" and ", true), (" or ", true),
    (" & ", true), (" und ", true), (" och ", true), (" et ", true), (" en ", true),
    (" og ", true), (" ve ", true), (" na ", true), (" és ", true), (" y ", true),
    (" e ", true), (" i ", true), (", ", false),
];

/// Endings of clinical words, never list members taken for names.
const CLINICAL_ENDINGS: &[&str] = &[
    "ology", "itis", "osis", "ectomy", "otomy", "emia", "pathy", "plasty", "scopy", "gram",
];

/// A lone capitalized word: not one of several capitalized words in a row ("Internal
/// Medicine"), and not shaped like a clinical term.
fn list_word(text: &str, start: usize) -> Option<usize> {
    let len = capitalized_word(&text[start..])?;
    let word = &text[start..start + len];
    let next_capitalized = text[start + len..]
        .strip_prefix(' ')
        .is_some_and(|r| r.starts_with(char::is_uppercase));
    let clinical = CLINICAL_ENDINGS.iter().any(|e| word.ends_with(e));
    (!next_capitalized && !clinical && !word.ends_with(['\'', '’', '-'])).then_some(len)
}

/// The spans to add for the unfound members of lists that hold a found name (see the module
/// docs). `v` is sorted and disjoint.
pub fn name_lists(text: &str, v: &[Span]) -> Vec<Span> {
    let span_at = |start: usize| v.binary_search_by_key(&start, |s| s.start).ok();
    let span_ending = |end: usize| v.binary_search_by_key(&end, |s| s.end).ok();
    let mut out: Vec<Span> = Vec::new();
    for s in v {
        // A country found as a name is labelled later: "Fabriquée en France" lists no one.
        if canonical_label(&s.label).hipaa_class != "A_NAMES" || is_country(&text[s.start..s.end]) {
            continue;
        }
        // (start, end) of members that are not spans yet, and whether the list has a conjunction.
        let mut members: Vec<(usize, usize)> = Vec::new();
        let mut conjunction = false;
        // Forward: ", Harvey and Sanchez" after the name.
        let mut at = s.end;
        while let Some((sep, ends)) = LIST_SEPARATORS
            .iter()
            .find(|(sep, _)| text[at..].starts_with(sep))
        {
            let start = at + sep.len();
            if let Some(i) = span_at(start) {
                if canonical_label(&v[i].label).hipaa_class != "A_NAMES" {
                    break;
                }
                at = v[i].end;
            } else if let Some(len) = list_word(text, start) {
                members.push((start, start + len));
                at = start + len;
            } else {
                break;
            }
            conjunction |= ends;
            if *ends {
                break;
            }
        }
        // Backward: "Bergman, Harvey and " before the name.
        let mut at = s.start;
        while let Some((sep, ends)) = LIST_SEPARATORS
            .iter()
            .find(|(sep, _)| text[..at].ends_with(sep))
        {
            let end = at - sep.len();
            if let Some(i) = span_ending(end) {
                if canonical_label(&v[i].label).hipaa_class != "A_NAMES" {
                    break;
                }
                at = v[i].start;
            } else if let Some(start) = capitalized_word_before(&text[..end])
                && list_word(text, start) == Some(end - start)
            {
                members.push((start, end));
                at = start;
            } else {
                break;
            }
            conjunction |= ends;
        }
        if !conjunction {
            continue;
        }
        for (start, end) in members {
            if out.iter().all(|o| o.start != start) {
                out.push(Span::pattern(start, end, "LAST_NAME", s.score, "name_list"));
            }
        }
    }
    out
}

/// Initials a text gives a named person in brackets ("Laura Benítez (LB)", "Tran Thi Mai (TM)"),
/// every initial or the first and the last, and each later use of them as a whole word, as
/// interview transcripts label their speakers ("LB: And then?").
pub fn defined_initials(text: &str, v: &[Span]) -> Vec<Span> {
    let mut codes: Vec<&str> = Vec::new();
    for s in v {
        if canonical_label(&s.label).hipaa_class != "A_NAMES" {
            continue;
        }
        let Some(rest) = text[s.end..].strip_prefix(" (") else {
            continue;
        };
        let len = rest.bytes().take_while(u8::is_ascii_uppercase).count();
        if !(2..=3).contains(&len) || !rest[len..].starts_with(')') {
            continue;
        }
        let initials: Vec<char> = text[s.start..s.end]
            .split([' ', '-'])
            .filter_map(|w| w.chars().next())
            .filter(|c| c.is_uppercase())
            .collect();
        let code = &rest[..len];
        let all: String = initials.iter().collect();
        let first_last: String = initials
            .first()
            .into_iter()
            .chain(initials.last())
            .collect();
        if (code == all || code == first_last) && !codes.contains(&code) {
            codes.push(code);
        }
    }
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = Vec::new();
    for code in codes {
        for (at, _) in text.match_indices(code) {
            let end = at + code.len();
            if !word(text[..at].chars().next_back()) && !word(text[end..].chars().next()) {
                out.push(Span::pattern(at, end, "NAME", 0.8, "defined_initials"));
            }
        }
    }
    out
}

fn joins_address(s: &Span) -> bool {
    let c = canonical_label(&s.label);
    c.hipaa_class == "B_GEOGRAPHIC" && !matches!(c.name, "STATE" | "COUNTRY" | "ZIP_CODE")
}

/// Length of a house number after a street's name (" 20", " 112a") that ends its field: what
/// follows is the end, a line break, punctuation, or a capitalized word, never a lowercase word
/// ("Main Street 3 days a week") or more digits.
fn house_number_after(rest: &str) -> Option<usize> {
    let digits = rest.strip_prefix(' ')?;
    let n = digits.bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=4).contains(&n) {
        return None;
    }
    let letter = usize::from(
        digits[n..].starts_with(|c: char| c.is_ascii_lowercase())
            && !digits[n + 1..].starts_with(char::is_alphanumeric),
    );
    let end = n + letter;
    let after = &digits[end..];
    let next_word = after.trim_start_matches([' ', '\t']);
    let ends = after.is_empty()
        || after.starts_with(['\n', '\r', ',', ';', '.', '?', '!', ')'])
        || (after.starts_with([' ', '\t'])
            && !next_word.starts_with(|c: char| c.is_lowercase() || c.is_ascii_digit()));
    ends.then_some(1 + end)
}

/// Words for a unit, a plot or a shop that an address writes before its street. Those marked
/// `true` stand without a number of their own ("Plot 7 Aminu Kano Crescent", "No. 23, Jalan
/// Kenanga"): the number starts the street.
const UNITS_BEFORE_STREETS: &[(&str, bool)] = &[
    ("unit", false),
    ("flat", false),
    ("shop", false),
    ("suite", false),
    ("ste", false),
    ("apt", false),
    ("apartment", false),
    ("blk", false),
    ("block", false),
    ("villa", false),
    ("stall", false),
    ("lot", true),
    ("plot", true),
    ("stand", true),
    ("apto", true),
    ("no", true),
    ("nr", true),
];

/// Length of the unit written at the end of `head`, right before a street ("Unit 4/", "Shop
/// 3, ", "Flat No. ", "Plot "): a word of [`UNITS_BEFORE_STREETS`] after a non-letter, an
/// optional dot, a number with a digit ("3", "B-702") unless the word stands without one or the
/// street starts with the unit's number (`number_follows`: "Unit 4/17 Pakington St"), then a
/// comma or a slash and spaces. A unit's word before "No." takes it
/// ("Flat No. B-702").
fn unit_before(head: &str, number_follows: bool) -> Option<usize> {
    let mut rest = spaced(head);
    rest = rest.strip_suffix([',', '/']).map_or(rest, spaced);
    // The unit's number: letters, digits, '-' and '/', with a digit among them.
    let number = rest
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '-' | '/'))
        .last()
        .map_or(rest.len(), |(i, _)| i);
    let own_number = rest[number..].bytes().any(|b| b.is_ascii_digit());
    let has_number = own_number || number_follows;
    if !has_number && !head.ends_with([' ', '\t']) {
        return None;
    }
    let mut start = None;
    let mut end = if own_number {
        spaced(&rest[..number])
    } else {
        rest
    };
    loop {
        let word_end = end.strip_suffix('.').unwrap_or(end);
        let Some((word_start, _)) = word_end
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphabetic())
            .last()
        else {
            break;
        };
        if word_end[..word_start]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
        {
            break;
        }
        let word = word_end[word_start..].to_lowercase();
        match UNITS_BEFORE_STREETS.iter().find(|(w, _)| *w == word) {
            Some((_, alone)) if has_number || *alone || start.is_some() => start = Some(word_start),
            _ => break,
        }
        if !matches!(word.as_str(), "no" | "nr") {
            break;
        }
        end = spaced(&word_end[..word_start]);
    }
    start.map(|s| head.len() - s)
}

/// `s` without the spaces and tabs that end it.
fn spaced(s: &str) -> &str {
    s.trim_end_matches([' ', '\t'])
}

/// Streets take the unit, plot or shop written right before them ([`unit_before`]), when no
/// other span holds it. `v` is sorted and disjoint.
fn units_before_streets(text: &str, v: &mut [Span]) {
    for i in 0..v.len() {
        if canonical_label(&v[i].label).name != "STREET_ADDRESS" {
            continue;
        }
        let floor = if i > 0 { v[i - 1].end } else { 0 };
        let head = &text[floor..v[i].start];
        // Within the line.
        let line = head.rfind('\n').map_or(0, |n| n + 1);
        let number_follows = text[v[i].start..].starts_with(|c: char| c.is_ascii_digit());
        if let Some(len) = unit_before(&head[line..], number_follows) {
            v[i].start -= len;
        }
    }
}

/// Address parts separated only by spaces become one span, and a street takes the house number
/// written after it and the unit written before it (see the module docs). `v` is sorted and
/// disjoint.
pub fn join_address_parts(text: &str, v: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::with_capacity(v.len());
    for mut s in v {
        // "Prenzlauer Allee 20": European streets put the number after the name.
        if canonical_label(&s.label).name == "STREET_ADDRESS"
            && let Some(len) = house_number_after(&text[s.end..])
        {
            s.end += len;
        }
        // A number already found after the street is inside it now.
        if let Some(prev) = out.last_mut()
            && s.start < prev.end
        {
            prev.end = prev.end.max(s.end);
            continue;
        }
        // "345 Michelle Isle": a name right after a house number is the street's.
        let street_named_for_someone = |prev: &Span| {
            canonical_label(&prev.label).name == "BUILDING_NUMBER"
                && canonical_label(&s.label).hipaa_class == "A_NAMES"
        };
        // "Flat 3, 19 Carlton Road", "12 Elm St, Apt 2": a comma joins the parts of one street
        // line. The town after it ("789 Maple St., New Orleans") is a place of its own, and the
        // comma between them is no identifier.
        let comma_joined = |prev: &Span| {
            &text[prev.end..s.start] == ", "
                && [prev, &s].iter().all(|p| {
                    matches!(
                        canonical_label(&p.label).name,
                        "STREET_ADDRESS" | "SECONDARY_ADDRESS" | "BUILDING_NUMBER"
                    )
                })
        };
        if let Some(prev) = out.last_mut()
            && joins_address(prev)
            && (joins_address(&s) || street_named_for_someone(prev))
            && s.start >= prev.end
            && (((1..=3).contains(&(s.start - prev.end))
                && text[prev.end..s.start]
                    .bytes()
                    .all(|b| b == b' ' || b == b'\t'))
                || comma_joined(prev))
        {
            if canonical_label(&prev.label).name != canonical_label(&s.label).name {
                prev.label = "STREET_ADDRESS".into();
            }
            prev.end = s.end;
            prev.score = prev.score.min(s.score);
            if s.source != prev.source {
                prev.source = super::span::Source::Both;
            }
            continue;
        }
        out.push(s);
    }
    units_before_streets(text, &mut out);
    out
}

/// Most bytes of a town between an address part and its country.
const MAX_TOWN: usize = 48;

/// The towns between an address part and the country after it (see the module docs): spans
/// to add. `v` is sorted, disjoint and has its countries labelled.
pub fn towns_before_countries(text: &str, v: &[Span]) -> Vec<Span> {
    let separator = |c: char| c.is_whitespace() || matches!(c, ',' | '?' | '|' | '/' | ';' | '·');
    let mut out = Vec::new();
    for pair in v.windows(2) {
        let (part, country) = (&pair[0], &pair[1]);
        // "Germany 36619" stays a town for label_countries; here it is the country of the address.
        let country_named = canonical_label(&country.label).hipaa_class == "B_GEOGRAPHIC"
            && is_country(&text[country.start..country.end]);
        if !country_named || !joins_address(part) {
            continue;
        }
        let gap = &text[part.end..country.start];
        let town = gap.trim_matches(separator);
        // Two capitals are a state's or territory's code ("Vaughnfort , AS  Italy", the street
        // having taken the town): Safe Harbor keeps them.
        let state_code = town.len() == 2 && town.bytes().all(|b| b.is_ascii_uppercase());
        if town.is_empty() || state_code || town.len() > MAX_TOWN || town.contains(['\n', '.', ':'])
        {
            continue;
        }
        // Capitalized words, with short particles between them ("Weng im Gesäuse").
        let words: Vec<&str> = town.split([' ', '-']).filter(|w| !w.is_empty()).collect();
        let capitalized = |w: &&str| w.starts_with(char::is_uppercase);
        let words_capitalized = words.first().is_some_and(capitalized)
            && words.last().is_some_and(capitalized)
            && words.iter().all(|w| capitalized(w) || w.len() <= 3);
        // Separators on both sides: a town is a field of its own, not the tail of a sentence.
        let fielded = gap.starts_with(separator) && gap.ends_with(separator);
        if words_capitalized && fielded && words.len() <= 4 {
            let start = part.end + (gap.len() - gap.trim_start_matches(separator).len());
            let score = part.score.min(country.score);
            out.push(Span::pattern(
                start,
                start + town.len(),
                "CITY",
                score,
                "town_before_country",
            ));
        }
    }
    out
}

/// Whether `name` is a country's ("Cyprus (Greek)": the country before a parenthesis).
pub(super) fn is_country(name: &str) -> bool {
    let name = name.trim();
    let name = name.split(" (").next().unwrap_or(name);
    COUNTRIES.iter().any(|k| k.eq_ignore_ascii_case(name))
}

/// Words after a name that make it a business's ("Weyerhauser Company", "Adamas
/// Pharmaceuticals Inc.", "TABIKOBO Co.Ltd."): capitalized as written.
const LEGAL_FORMS: &[&str] = &[
    "Inc",
    "INC",
    "Incorporated",
    "Ltd",
    "LTD",
    "Limited",
    "LLC",
    "LLP",
    "PLC",
    "Plc",
    "Corp",
    "Corporation",
    "Company",
    "GmbH",
    "AG",
    "SA",
    "NV",
    "BV",
    "Holdings",
];

/// Classes whose values are codes: a number found inside one is part of the code.
const CODE_CLASSES: &[&str] = &[
    "G_SSN",
    "H_MEDICAL_RECORD",
    "I_HEALTH_PLAN",
    "J_ACCOUNT",
    "K_CERTIFICATE_LICENSE",
    "L_VEHICLE",
    "M_DEVICE",
    "R_OTHER_UNIQUE_ID",
];

/// An identifier that holds a digit takes the rest of its token: the number a pattern found
/// inside "MC23-1004471" or "HUM-SNF-23-991274" is one code with the letters and dashes glued
/// to it, which would otherwise stand unmasked. A dash, slash, dot or underscore joins only
/// between letters or digits, so a sentence's full stop stays, and not before a part with a
/// lower-case letter ("CHA2DS2-VASc" is a score's name). `v` is sorted and disjoint and stays so.
pub fn whole_codes(text: &str, v: &mut [Span]) {
    let glue = |c: char| matches!(c, '-' | '_' | '/' | '.');
    for i in 0..v.len() {
        let s = &v[i];
        if !CODE_CLASSES.contains(&canonical_label(&s.label).hipaa_class)
            || !text[s.start..s.end].bytes().any(|b| b.is_ascii_digit())
        {
            continue;
        }
        let floor = if i == 0 { 0 } else { v[i - 1].end };
        let ceiling = v.get(i + 1).map_or(text.len(), |n| n.start);
        let mut start = s.start;
        let before = &text[floor..start];
        let mut chars = before.char_indices().rev().peekable();
        while let Some((j, c)) = chars.next() {
            let joins = c.is_alphanumeric()
                || (glue(c) && chars.peek().is_some_and(|&(_, p)| p.is_alphanumeric()));
            if !joins {
                break;
            }
            start = floor + j;
        }
        let mut end = s.end;
        let after = &text[end..ceiling];
        for (j, c) in after.char_indices() {
            let joins = c.is_alphanumeric() || {
                let mut next = after[j + c.len_utf8()..]
                    .chars()
                    .take_while(|n| n.is_alphanumeric())
                    .peekable();
                glue(c) && next.peek().is_some() && !next.any(char::is_lowercase)
            };
            if !joins {
                break;
            }
            end += c.len_utf8();
        }
        v[i].start = start;
        v[i].end = end;
    }
}

/// Whether the name at `end` is a business's: a legal form follows it ("Co." only as
/// "Co.Ltd." or "Co., Ltd.": "Orange Co." alone may be a county).
fn business_after(text: &str, end: usize) -> bool {
    let rest = text[end..].trim_start_matches([' ', '\t']);
    let word_end = rest
        .find(|c: char| !c.is_alphabetic())
        .unwrap_or(rest.len());
    let (word, after) = rest.split_at(word_end);
    LEGAL_FORMS.contains(&word)
        || (matches!(word, "Co" | "CO")
            && after
                .trim_start_matches(['.', ',', ' '])
                .get(..3)
                .is_some_and(|w| w.eq_ignore_ascii_case("ltd")))
}

/// Drops one-word name spans that a legal form follows: a business, not a person. A longer
/// name may be a person's before the business ("Manuela Baresi Scancell Holdings Plc").
pub fn drop_business_names(text: &str, v: &mut Vec<Span>) {
    v.retain(|s| {
        canonical_label(&s.label).hipaa_class != "A_NAMES"
            || text[s.start..s.end].contains(char::is_whitespace)
            || !business_after(text, s.end)
    });
}

/// Place spans that name a country become COUNTRY, and so do given names a pattern found that
/// are countries ("France was fun"); place spans that name another country's province and stand
/// alone become STATE: see the module docs.
pub fn label_countries(text: &str, v: &mut [Span]) {
    for s in v.iter_mut() {
        let c = canonical_label(&s.label);
        let pattern_name = c.hipaa_class == "A_NAMES" && s.source == super::span::Source::Pattern;
        if pattern_name {
            if is_country(&text[s.start..s.end]) {
                s.label = "COUNTRY".into();
            }
            continue;
        }
        if c.hipaa_class != "B_GEOGRAPHIC" || matches!(c.name, "STATE" | "COUNTRY") {
            continue;
        }
        let name = &text[s.start..s.end];
        let label = if is_country(name) {
            "COUNTRY"
        } else if PROVINCES
            .iter()
            .any(|p| p.eq_ignore_ascii_case(name.trim()))
            && stands_alone(text, s)
        {
            "STATE"
        } else {
            continue;
        };
        // "Lebanon, PA" or "Mexico 65265" is a town.
        let after = text[s.end..].trim_start_matches([',', ' ', '\t']);
        let town = after
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .is_some_and(|w| {
                (w.len() == 2 && w.chars().all(|c| c.is_ascii_uppercase()))
                    || (w.len() == 5 && w.chars().all(|c| c.is_ascii_digit()))
            });
        if !town {
            s.label = label.into();
        }
    }
}

/// Whether a place stands on its own and not inside a longer name ("Fiscalía del Estado de
/// Jalisco", "AOK Baden-Württemberg", "Nova Scotia Health"): after a comma, a bracket, the
/// text's start or a lower-case word other than "of" or "de", and before no capitalized word
/// (a postcode may follow: "Ontario M5H 3T4").
fn stands_alone(text: &str, s: &Span) -> bool {
    let before = text[..s.start].trim_end_matches([' ', '\t']);
    let word_before = before
        .rsplit(|c: char| !c.is_alphabetic())
        .next()
        .unwrap_or("");
    let opens = before.is_empty()
        || before.ends_with([',', '(', '\n', ';'])
        || (word_before.starts_with(char::is_lowercase)
            && !["of", "de", "del", "do", "da", "du"].contains(&word_before));
    let next = text[s.end..]
        .trim_start_matches([' ', '\t'])
        .split(char::is_whitespace)
        .next()
        .unwrap_or("");
    let names_on =
        next.starts_with(char::is_uppercase) && !next.contains(|c: char| c.is_ascii_digit());
    opens && !names_on
}

/// Provinces, states and territories outside the US that name no well-known town too (not
/// "Québec", "Victoria", "Lagos", "Oaxaca" or "New Brunswick"): a kept name that is also a town
/// elsewhere in the text would leave that town standing.
#[rustfmt::skip]
const PROVINCES: &[&str] = &[
    "Ontario", "Alberta", "Manitoba", "Saskatchewan", "British Columbia", "Nova Scotia",
    "Newfoundland", "Newfoundland and Labrador", "Prince Edward Island", "Yukon", "Nunavut",
    "Northwest Territories", "New South Wales", "Queensland", "Tasmania", "Western Australia",
    "South Australia", "Northern Territory", "Maharashtra", "Karnataka", "Kerala", "Tamil Nadu",
    "Gujarat", "Rajasthan", "Uttar Pradesh", "Madhya Pradesh", "Andhra Pradesh", "West Bengal",
    "Telangana", "Odisha", "Haryana", "Bihar", "Jalisco", "Yucatán", "Nuevo León",
    "Baja California", "Michoacán", "Laguna", "Batangas Province", "Gauteng", "KwaZulu-Natal",
    "Western Cape", "Eastern Cape", "Bavaria", "Bayern", "Baden-Württemberg", "Nordrhein-Westfalen",
];

/// Country names in English (ISO 3166 short names and the usual variants).
const COUNTRIES: &[&str] = &[
    "Afghanistan",
    "Albania",
    "Algeria",
    "Andorra",
    "Angola",
    "Antigua and Barbuda",
    "Argentina",
    "Armenia",
    "Australia",
    "Austria",
    "Azerbaijan",
    "Bahamas",
    "The Bahamas",
    "Bahrain",
    "Bangladesh",
    "Barbados",
    "Belarus",
    "Belgium",
    "Belize",
    "Benin",
    "Bhutan",
    "Bolivia",
    "Bosnia and Herzegovina",
    "Botswana",
    "Brazil",
    "Brunei",
    "Bulgaria",
    "Burkina Faso",
    "Burundi",
    "Cabo Verde",
    "Cape Verde",
    "Cambodia",
    "Cameroon",
    "Canada",
    "Central African Republic",
    "Chad",
    "Chile",
    "China",
    "Colombia",
    "Comoros",
    "Congo",
    "Costa Rica",
    "Côte d'Ivoire",
    "Ivory Coast",
    "Croatia",
    "Cuba",
    "Cyprus",
    "Czechia",
    "Czech Republic",
    "Denmark",
    "Djibouti",
    "Dominica",
    "Dominican Republic",
    "Ecuador",
    "Egypt",
    "El Salvador",
    "Equatorial Guinea",
    "Eritrea",
    "Estonia",
    "Eswatini",
    "Swaziland",
    "Ethiopia",
    "Fiji",
    "Finland",
    "France",
    "Gabon",
    "Gambia",
    "The Gambia",
    "Germany",
    "Ghana",
    "Greece",
    "Grenada",
    "Guatemala",
    "Guinea",
    "Guinea-Bissau",
    "Guyana",
    "Haiti",
    "Honduras",
    "Hungary",
    "Iceland",
    "India",
    "Indonesia",
    "Iran",
    "Iraq",
    "Ireland",
    "Israel",
    "Italy",
    "Jamaica",
    "Japan",
    "Jordan",
    "Kazakhstan",
    "Kenya",
    "Kiribati",
    "Korea",
    "South Korea",
    "North Korea",
    "Kosovo",
    "Kuwait",
    "Kyrgyzstan",
    "Laos",
    "Latvia",
    "Lebanon",
    "Lesotho",
    "Liberia",
    "Libya",
    "Liechtenstein",
    "Lithuania",
    "Luxembourg",
    "Madagascar",
    "Malawi",
    "Malaysia",
    "Maldives",
    "Mali",
    "Malta",
    "Marshall Islands",
    "Mauritania",
    "Mauritius",
    "Mexico",
    "Micronesia",
    "Moldova",
    "Monaco",
    "Mongolia",
    "Montenegro",
    "Morocco",
    "Mozambique",
    "Myanmar",
    "Burma",
    "Namibia",
    "Nauru",
    "Nepal",
    "Netherlands",
    "The Netherlands",
    "Holland",
    "New Zealand",
    "Nicaragua",
    "Niger",
    "Nigeria",
    "North Macedonia",
    "Macedonia",
    "Norway",
    "Oman",
    "Pakistan",
    "Palau",
    "Palestine",
    "Panama",
    "Papua New Guinea",
    "Paraguay",
    "Peru",
    "Philippines",
    "Poland",
    "Portugal",
    "Qatar",
    "Romania",
    "Russia",
    "Russian Federation",
    "Rwanda",
    "Saint Kitts and Nevis",
    "Saint Lucia",
    "Saint Vincent and the Grenadines",
    "Samoa",
    "San Marino",
    "Sao Tome and Principe",
    "São Tomé and Príncipe",
    "Saudi Arabia",
    "Senegal",
    "Serbia",
    "Seychelles",
    "Sierra Leone",
    "Singapore",
    "Slovakia",
    "Slovenia",
    "Solomon Islands",
    "Somalia",
    "South Africa",
    "South Sudan",
    "Spain",
    "Sri Lanka",
    "Sudan",
    "Suriname",
    "Sweden",
    "Switzerland",
    "Syria",
    "Taiwan",
    "Tajikistan",
    "Tanzania",
    "Thailand",
    "Timor-Leste",
    "East Timor",
    "Togo",
    "Tonga",
    "Trinidad and Tobago",
    "Tunisia",
    "Turkey",
    "Türkiye",
    "Turkmenistan",
    "Tuvalu",
    "Uganda",
    "Ukraine",
    "United Arab Emirates",
    "UAE",
    "United Kingdom",
    "UK",
    "Great Britain",
    "Britain",
    "England",
    "Scotland",
    "Wales",
    "Northern Ireland",
    "United States",
    "United States of America",
    "USA",
    "US",
    "America",
    "Uruguay",
    "Uzbekistan",
    "Vanuatu",
    "Vatican City",
    "Holy See",
    "Venezuela",
    "Vietnam",
    "Viet Nam",
    "Yemen",
    "Zambia",
    "Zimbabwe",
    "Greenland",
    "Puerto Rico",
    "Hong Kong",
    "Macau",
    "Macao",
    "Bermuda",
    "Aruba",
    "Curaçao",
    "Faroe Islands",
    "Gibraltar",
    "Guam",
    "Cayman Islands",
    "British Virgin Islands",
    "Falkland Islands",
    "French Polynesia",
    "New Caledonia",
    "Réunion",
    "Martinique",
    "Guadeloupe",
    "French Guiana",
    "Mayotte",
    "Heard Island and McDonald Islands",
    "Norfolk Island",
    "Christmas Island",
    "Cook Islands",
    "Isle of Man",
    "Jersey",
    "Guernsey",
    "Åland Islands",
    "Svalbard and Jan Mayen",
    "Western Sahara",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn span(text: &str, word: &str, label: &str) -> Span {
        Span::model_at(text, word, label)
    }

    fn texts<'a>(text: &'a str, v: &[Span]) -> Vec<&'a str> {
        v.iter().map(|s| &text[s.start..s.end]).collect()
    }

    fn shown(text: &str, v: &[Span]) -> Vec<(String, String)> {
        v.iter()
            .map(|s| (text[s.start..s.end].to_string(), s.label.clone()))
            .collect()
    }

    #[test]
    fn a_number_inside_a_code_takes_the_whole_code() {
        let t = "Claims MC23-1004471, auth HUM-SNF-23-991274. MRN 0412345/67. Ref 88123. \
                 CHA2DS2-VASc 4477123-VASc";
        let mut v = vec![
            span(t, "1004471", "OTHER_IDENTIFIER"),
            span(t, "F-23-991274", "DEVICE_ID"),
            span(t, "0412345", "MEDICAL_RECORD_NUMBER"),
            span(t, "88123", "OTHER_IDENTIFIER"),
            span(t, "4477123", "ACCOUNT_NUMBER"),
        ];
        whole_codes(t, &mut v);
        assert_eq!(
            texts(t, &v),
            [
                "MC23-1004471",
                "HUM-SNF-23-991274",
                "0412345/67",
                "88123",
                "4477123"
            ]
        );
        // Names and places are no codes.
        let t = "Seen at Ward7-NORTH";
        let mut v = vec![span(t, "Ward7", "LOCATION")];
        whole_codes(t, &mut v);
        assert_eq!(texts(t, &v), ["Ward7"]);
    }

    #[test]
    fn a_given_name_takes_its_surname_and_an_initialled_name_its_given_name() {
        let t = "What's your name? Brajko Rukavina. Maybe Jiří Z Lukášek. Xzavian G. Tavares, M.D.";
        let mut v = vec![
            span(t, "Brajko", "FIRST_NAME"),
            span(t, "Jiří", "FIRST_NAME"),
            span(t, "Tavares", "LAST_NAME"),
        ];
        extend_names(t, &mut v);
        assert_eq!(
            shown(t, &v),
            vec![
                ("Brajko Rukavina".into(), "NAME".into()),
                ("Jiří Z Lukášek".into(), "NAME".into()),
                ("Xzavian G. Tavares".into(), "NAME".into()),
            ]
        );
    }

    #[test]
    fn a_nickname_or_a_maiden_name_in_brackets_leads_to_the_surname() {
        let t = "Benjamin \"Ben\" Hollis and Mary (MacKinnon) MacNeil; Aurèle (\"A.J.\") Theriault";
        let mut v = vec![
            span(t, "Benjamin", "FIRST_NAME"),
            span(t, "Mary", "NAME"),
            span(t, "Aurèle", "FIRST_NAME"),
        ];
        extend_names(t, &mut v);
        assert_eq!(
            texts(t, &v),
            [
                "Benjamin \"Ben\" Hollis",
                "Mary (MacKinnon) MacNeil",
                "Aurèle (\"A.J.\") Theriault"
            ]
        );
        // A weekday after the bracket, lower case in it.
        for t in ["with Maria (Interpreter) Monday", "Maria (wife) Lopez"] {
            let at = t.find(" (").expect("bracket");
            let mut v = vec![Span::model(at - 4, at, "FIRST_NAME", 0.9)];
            extend_names(t, &mut v);
            assert_eq!(v[0].end, at, "{t}");
        }
    }

    #[test]
    fn a_surname_written_first_after_a_label_joins_the_name() {
        let text = "Patient: Hoàng, Quốc Bảo    MRN 0012";
        let mut v = vec![span(text, "Quốc Bảo", "NAME")];
        extend_names(text, &mut v);
        assert_eq!(texts(text, &v), ["Hoàng, Quốc Bảo"]);
        // Not without the label's colon, nor over an ordinary word.
        for text in ["Yesterday, Quốc Bảo came", "Patient: The, Quốc Bảo"] {
            let mut v = vec![span(text, "Quốc Bảo", "NAME")];
            extend_names(text, &mut v);
            assert_eq!(texts(text, &v), ["Quốc Bảo"], "{text}");
        }
    }

    #[test]
    fn ordinary_capitalized_words_after_a_name_stay() {
        let t = "Asked Anna Monday. Anna The nurse. Anna and Bo. Anna IBM. Anna's";
        let mut v: Vec<Span> = t
            .match_indices("Anna")
            .map(|(i, _)| Span::model(i, i + 4, "FIRST_NAME", 0.9))
            .collect();
        extend_names(t, &mut v);
        assert!(v.iter().all(|s| s.end - s.start == 4), "{:?}", shown(t, &v));
    }

    #[test]
    fn the_other_members_of_a_list_holding_a_name_are_names() {
        let t = "Founders: Bergman, Harvey and Sanchez. Also Králíková, Ramirez & Taylor. \
                 Then Tomaszewski, Phillips and Jenkins.";
        let v = vec![
            span(t, "Bergman", "LAST_NAME"),
            span(t, "Sanchez", "LAST_NAME"),
            span(t, "Králíková", "LAST_NAME"),
            span(t, "Jenkins", "LAST_NAME"),
        ];
        let found = texts(t, &name_lists(t, &v));
        assert_eq!(
            found,
            ["Harvey", "Ramirez", "Taylor", "Phillips", "Tomaszewski"]
        );
    }

    #[test]
    fn lists_joined_by_another_language_s_conjunction_hold_names_but_countries_none() {
        let t = "Amersfoort: Kees en Marjolein. Harusi ya Baraka na Neema. Wnuki Kuba, Ola i Staś. \
                 Fabriquée en France.";
        let v = vec![
            span(t, "Kees", "FIRST_NAME"),
            span(t, "Neema", "FIRST_NAME"),
            span(t, "Kuba", "FIRST_NAME"),
            span(t, "France", "FIRST_NAME"),
        ];
        let found = texts(t, &name_lists(t, &v));
        assert_eq!(found, ["Marjolein", "Baraka", "Ola", "Staś"]);
    }

    #[test]
    fn initials_given_to_a_named_person_are_theirs_wherever_they_are_used() {
        let t = "Interviewer: Laura Benítez (LB) Guest: Tran Thi Mai (TM) Other: Ana Diaz (AB)\n\
                 LB: And then? TM: We moved. LBW noted. AB: fine. CLC (CLC) stays.";
        let v = vec![
            span(t, "Laura Benítez", "NAME"),
            span(t, "Tran Thi Mai", "NAME"),
            span(t, "Ana Diaz", "NAME"),
            span(t, "CLC", "ORGANIZATION"),
        ];
        let found = texts(t, &defined_initials(t, &v));
        assert_eq!(found, ["LB", "LB", "TM", "TM"]);
    }

    #[test]
    fn lists_without_a_conjunction_or_of_other_words_add_nothing() {
        let t = "Smith, Cardiology and Nephrology saw him. Jones, Internal Medicine and Renal. \
                 Brown, Garcia. Lee and The team. Kim and Colitis.";
        let v: Vec<Span> = ["Smith", "Jones", "Brown", "Lee", "Kim"]
            .iter()
            .map(|w| span(t, w, "LAST_NAME"))
            .collect();
        let found = texts(t, &name_lists(t, &v));
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn the_town_between_an_address_and_its_country_is_found() {
        let t = "??? Suite 959\n??? Leipzig\n??? Germany 36619. Apt. 2, Weng im Gesäuse, Austria. \
                 Suite 4 in the Old Town of Austria. 5216 Rivers Groves Vaughnfort , AS  Italy";
        let v = vec![
            span(t, "Suite 959", "SECONDARY_ADDRESS"),
            span(t, "Germany", "CITY"),
            span(t, "36619", "ZIP_CODE"),
            span(t, "Apt. 2", "SECONDARY_ADDRESS"),
            span(t, "Austria", "COUNTRY"),
            span(t, "Suite 4", "SECONDARY_ADDRESS"),
            Span::model(
                t.rfind("Austria").expect("twice"),
                t.rfind('.').expect("full stop"),
                "COUNTRY",
                0.9,
            ),
            span(t, "5216 Rivers Groves Vaughnfort", "STREET_ADDRESS"),
            span(t, "Italy", "COUNTRY"),
        ];
        assert_eq!(
            texts(t, &towns_before_countries(t, &v)),
            ["Leipzig", "Weng im Gesäuse"]
        );
    }

    #[test]
    fn a_street_takes_the_house_number_after_it() {
        let t = "Prenzlauer Allee 20\nAvenida Lago 99a, Lisboa. Main Street 3 days a week. \
                 Via Roma 12345.";
        let mut v: Vec<Span> = [
            "Prenzlauer Allee",
            "Avenida Lago",
            "Main Street",
            "Via Roma",
        ]
        .iter()
        .map(|w| span(t, w, "STREET_ADDRESS"))
        .collect();
        v.insert(1, span(t, "20", "BUILDING_NUMBER"));
        assert_eq!(
            texts(t, &join_address_parts(t, v)),
            [
                "Prenzlauer Allee 20",
                "Avenida Lago 99a",
                "Main Street",
                "Via Roma"
            ]
        );
    }

    #[test]
    fn a_street_takes_the_unit_plot_or_shop_before_it() {
        let t = "Unit 4/17 Pakington St; Shop 3, 14 South Terrace; No. 23, Jalan Kenanga; \
                 Flat No. B-702, Kalpataru Heights; apto 142, Bloco B; Plot 7 Aminu Crescent; \
                 Pharmacy 24 Main St; Unity 12 Oak St; next block\n5 Elm Road";
        let mut v: Vec<Span> = [
            "4/17 Pakington St",
            "14 South Terrace",
            "23, Jalan Kenanga",
            "B-702, Kalpataru Heights",
            "142, Bloco B",
            "7 Aminu Crescent",
            "24 Main St",
            "12 Oak St",
            "5 Elm Road",
        ]
        .iter()
        .map(|w| span(t, w, "STREET_ADDRESS"))
        .collect();
        units_before_streets(t, &mut v);
        assert_eq!(
            texts(t, &v),
            [
                "Unit 4/17 Pakington St",
                "Shop 3, 14 South Terrace",
                "No. 23, Jalan Kenanga",
                "Flat No. B-702, Kalpataru Heights",
                "apto 142, Bloco B",
                "Plot 7 Aminu Crescent",
                "24 Main St",
                "12 Oak St",
                "5 Elm Road",
            ]
        );
    }

    #[test]
    fn address_parts_joined_across_spaces_zip_and_state_apart() {
        let t = "to 727 Green Gateway Suite 873 Scottport , IA  36115 now";
        let v = vec![
            span(t, "727", "BUILDING_NUMBER"),
            span(t, "Green Gateway", "NAME"),
            span(t, "Suite 873", "SECONDARY_ADDRESS"),
            span(t, "Scottport", "CITY"),
            span(t, "IA", "STATE"),
            span(t, "36115", "ZIP_CODE"),
        ];
        assert_eq!(
            shown(t, &join_address_parts(t, v)),
            vec![
                (
                    "727 Green Gateway Suite 873 Scottport".into(),
                    "STREET_ADDRESS".into()
                ),
                ("IA".into(), "STATE".into()),
                ("36115".into(), "ZIP_CODE".into()),
            ]
        );
        let t = "at Flat 3, 19 Carlton Road, Bristol BS7 8AQ; Boston, Chicago, MA";
        let v = vec![
            span(t, "Flat 3", "SECONDARY_ADDRESS"),
            span(t, "19 Carlton Road", "STREET_ADDRESS"),
            span(t, "Bristol", "CITY"),
            span(t, "BS7 8AQ", "ZIP_CODE"),
            span(t, "Boston", "CITY"),
            span(t, "Chicago", "CITY"),
            span(t, "MA", "STATE"),
        ];
        assert_eq!(
            texts(t, &join_address_parts(t, v)),
            [
                "Flat 3, 19 Carlton Road",
                "Bristol",
                "BS7 8AQ",
                "Boston",
                "Chicago",
                "MA"
            ]
        );
    }

    #[test]
    fn a_capitalized_word_before_a_surname_inside_a_sentence_is_its_given_name() {
        let t =
            "a report from Johns Hopkins; Smith saw her. Seen in Clinic Baker today, by Dr Lee.";
        let mut v = vec![
            span(t, "Hopkins", "SURNAME"),
            span(t, "Smith", "SURNAME"),
            span(t, "Baker", "SURNAME"),
            span(t, "Lee", "SURNAME"),
        ];
        given_names_before_surnames(t, &mut v, |w| w == "Clinic");
        assert_eq!(
            shown(t, &v),
            [
                ("Johns Hopkins".to_string(), "NAME".to_string()),
                ("Smith".to_string(), "SURNAME".to_string()),
                ("Baker".to_string(), "SURNAME".to_string()),
                ("Lee".to_string(), "SURNAME".to_string()),
            ]
        );
    }

    #[test]
    fn a_one_word_name_before_a_legal_form_is_a_business() {
        let t = "Weyerhauser Company hired Ann Lee; TABIKOBO Co.Ltd. and Orange Co. and \
                 Manuela Baresi Scancell Holdings Plc.";
        let mut v = vec![
            span(t, "Weyerhauser", "SURNAME"),
            span(t, "Ann Lee", "NAME"),
            span(t, "TABIKOBO", "SURNAME"),
            span(t, "Orange", "SURNAME"),
            span(t, "Manuela Baresi Scancell", "NAME"),
        ];
        drop_business_names(t, &mut v);
        assert_eq!(
            texts(t, &v),
            ["Ann Lee", "Orange", "Manuela Baresi Scancell"]
        );
    }

    #[test]
    fn countries_are_labelled_towns_named_like_them_are_not() {
        let t = "travelling to Brazil next week; from Cyprus (Greek); lives in Lebanon, PA 17042. \
                 France was fun. Georgia was there.";
        let pattern_name = |word: &str| Span {
            source: super::super::span::Source::Pattern,
            ..span(t, word, "FIRST_NAME")
        };
        let mut v = vec![
            span(t, "Brazil", "CITY"),
            span(t, "Cyprus (Greek)", "LOCATION"),
            span(t, "Lebanon", "CITY"),
            pattern_name("France"),
            span(t, "Georgia", "FIRST_NAME"),
        ];
        label_countries(t, &mut v);
        let labels: Vec<_> = v.iter().map(|s| s.label.as_str()).collect();
        // The model's own name stays a name: it read the sentence, the pattern only the list.
        assert_eq!(
            labels,
            ["COUNTRY", "COUNTRY", "CITY", "COUNTRY", "FIRST_NAME"]
        );
    }

    #[test]
    fn provinces_are_labelled_states_and_a_city_named_like_one_is_not() {
        let t = "a church in Kingston, Ontario, dated 1913; Thane, Maharashtra; Québec (Québec); \
                 Fiscalía del Estado de Jalisco; Queensland Police";
        let mut v = vec![
            span(t, "Kingston", "CITY"),
            span(t, "Ontario", "CITY"),
            span(t, "Maharashtra", "LOCATION"),
            span(t, "Québec", "CITY"),
            span(t, "Jalisco", "CITY"),
            span(t, "Queensland", "CITY"),
        ];
        label_countries(t, &mut v);
        let labels: Vec<_> = v.iter().map(|s| s.label.as_str()).collect();
        // Inside a longer name a province stays what the model said.
        assert_eq!(labels, ["CITY", "STATE", "STATE", "CITY", "CITY", "CITY"]);
    }
}
