//! Recognize: Spans → Spans. Runs the deterministic recognizers over the original text and
//! combines their findings with the model's spans.
//!
//! - Smart merging: model fragments that overlap one finding (`(617)` + `555-0143` inside one
//!   phone number, `01` + `/15/1970` inside one date) become one span covering the finding and
//!   every fragment. The model's label is kept when it names the same kind of identifier (same
//!   canonical label or HIPAA class), else the finding's label is used.
//! - Name joining (when the pipeline asks): name parts separated only by spaces, a comma
//!   ("Smith, John") or initials ("Ana M. Ruiz") become one NAME span, and initials just before
//!   a name ("J. Smith") join it.
//! - Propagation (when the pipeline asks): an identifier found once is found wherever else it
//!   occurs in the text, as whole words (a name's words one by one, other identifiers whole), so
//!   "Giovanni" alone three lines below "Giovanni Jones" is not left behind.
//! - Safety sweep: findings the model missed are added. A finding that overlaps model spans
//!   widens them to the union and the model's label stays (model spans win ties). Validators have
//!   already decided which findings exist.
//! - Layout: HL7 v2 segments by their fields' positions ([`super::hl7`]), tables by their
//!   header ([`super::tables`]), towns between the parts of an address line
//!   ([`super::localities`]) and the town standing after an organization
//!   ([`super::branch_towns`]). A span inside an HL7 code, value or message id is dropped.
//!
//! Overlap rule, applied last: spans that still overlap become their union, labelled by the
//! model span if there is one, else by the higher score. Nothing here ever shrinks a span; a few
//! rules drop whole ones (a value inside an HL7 code, a name of ordinary words, a greeting, a
//! title alone, a public office, outside a note a lone lower-case word taken for a town).

use super::before_towns;
use super::branch_towns;
use super::hl7;
use super::letterhead;
use super::localities;
use super::ocr_digits;
use super::places;
use super::span::{Source, Span, Spans};
use super::speakers;
use super::structure;
use super::tables;
use crate::deid::{Finding, Recognizers, canonical_label, is_abbreviation_dot};

/// What the recognize stage does, from the pipeline and the request.
#[derive(Clone, Copy, Debug)]
pub struct RecognizeParams {
    pub smart_merging: bool,
    pub safety_sweep: bool,
    pub join_names: bool,
    pub propagate: bool,
    /// A place of care and its town or campus are one place ([`places`]).
    pub whole_places: bool,
    /// Labels that open lines of a conversation are people ([`speakers`]).
    pub speakers: bool,
    /// Findings scored below this are ignored.
    pub min_finding_score: f32,
}

pub fn recognize(
    mut spans: Spans,
    recognizers: &Recognizers,
    known: &Terms,
    p: RecognizeParams,
) -> Spans {
    if !(p.smart_merging
        || p.safety_sweep
        || p.join_names
        || p.propagate
        || p.whole_places
        || p.speakers)
    {
        return spans;
    }
    let text = spans.original.clone();
    // Read once: it gates the `clinical_only` patterns, whole places and lone-word towns.
    let clinical = recognizers.is_clinical(&text);
    let findings = if p.smart_merging || p.safety_sweep {
        let mut f = match ocr_digits::repaired(&text) {
            Some(read) => recognizers.find_known(&read, clinical),
            None => recognizers.find_known(&text, clinical),
        };
        // A name found by its context whose words are all common words, none a given name, is
        // a heading or a role ("reviewed by Attending Provider", "Vital Signs"), not a person;
        // one its pattern's title or label names stays ("Dr. Hall", "Agent (Lovely)").
        f.retain(|f| {
            f.score >= p.min_finding_score
                && (f.labelled
                    || !(canonical_label(f.label).hipaa_class == "A_NAMES"
                        && recognizers.is_common_phrase(&text[f.start..f.end])))
        });
        f
    } else {
        Vec::new()
    };
    let mut v = std::mem::take(&mut spans.spans);
    v.sort_by_key(|s| (s.start, s.end));
    drop_ordinary_word_names(&text, &mut v, recognizers);
    v.retain(|s| !(s.source == Source::Model && is_age_and_sex(&text[s.start..s.end])));
    // Disjoint and sorted from here on, so the spans a finding overlaps are one run.
    v = coalesce(v);
    let mut rest = Vec::with_capacity(findings.len());
    for f in findings {
        let lo = v.partition_point(|s| s.end <= f.start);
        let hi = lo + v[lo..].iter().take_while(|s| s.start < f.end).count();
        if lo == hi {
            rest.push(f);
            continue;
        }
        // With smart merging the finding decides the label when the model's names another kind
        // of identifier; in the sweep alone the model's label stands.
        let merged = absorb(&v[lo..hi], &f, p.smart_merging);
        spans.stats.pattern_merged += 1;
        v.splice(lo..hi, [merged]);
    }
    if p.safety_sweep {
        for f in rest.into_iter().filter(|f| !f.merge_only) {
            spans.stats.sweep_added += 1;
            v.push(Span::pattern(f.start, f.end, f.label, f.score, f.pattern));
        }
    }
    v.sort_by_key(|s| (s.start, s.end));
    if p.join_names {
        structure::given_names_before_surnames(&text, &mut v, |w| recognizers.is_ordinary_word(w));
        v = join_names(&text, v);
    }
    v = coalesce(v);
    if p.join_names {
        let nicknames = trailing_nicknames(
            &text,
            &mut v,
            |w| recognizers.is_ordinary_word(w),
            |w| recognizers.is_name_and_no_word(w),
        );
        v = with_added(v, nicknames);
        let members = structure::name_lists(&text, &v);
        v = with_added(v, members);
        let initials = structure::defined_initials(&text, &v);
        v = with_added(v, initials);
    }
    // Before propagation: a facility's code found in MSH-4 is also its code elsewhere.
    let mut segments = hl7::hl7_fields(&text);
    segments.found.extend(tables::table_cells(&text));
    v = with_added(v, segments.found);
    v.retain(|s| {
        !segments
            .codes
            .iter()
            .any(|&(a, b)| a <= s.start && s.end <= b)
    });
    if p.speakers {
        let found = speakers::chat_speakers(&text, |label| recognizers.is_common_phrase(label));
        v = with_added(v, found);
        let found = speakers::speaker_affiliations(
            &text,
            &v,
            |w| recognizers.is_name_and_no_word(w),
            |p| recognizers.is_common_phrase(p),
        );
        v = with_added(v, found);
    }
    if p.propagate {
        let found = propagate(&text, &v, known, |w| {
            w.chars().count() >= 4 && recognizers.is_name_and_no_word(w)
        });
        spans.stats.propagated += found.len();
        v.extend(found);
        v.sort_by_key(|s| (s.start, s.end));
        if p.join_names {
            v = join_names(&text, v);
        }
        v = coalesce(v);
    }
    if p.smart_merging {
        structure::whole_codes(&text, &mut v);
    }
    structure::drop_business_names(&text, &mut v);
    let branches = branch_towns::towns_after_organizations(
        &text,
        &v,
        |p| recognizers.is_listed_town(p),
        |w| recognizers.is_common_word(w),
    );
    v = with_added(v, branches);
    structure::label_countries(&text, &mut v);
    let towns = structure::towns_before_countries(&text, &v);
    v = with_added(v, towns);
    let localities = localities::address_localities(&text, &v, |f| recognizers.is_common_phrase(f));
    v = with_added(v, localities);
    let before = before_towns::places_before_towns(&text, &v, |f| recognizers.is_common_phrase(f));
    v = with_added(v, before);
    v = structure::join_address_parts(&text, v);
    if p.whole_places {
        let lower = places::lower_case_places(&text);
        v = with_added(v, lower);
        // In any text: the company a contact block or a letter's head names is one too.
        let heads = letterhead::letterheads(&text, &v);
        v = with_added(v, heads);
        places::whole_places(&text, &mut v, clinical);
    }
    // In a note a lower-case word the model calls a town is kept: there it names a place more
    // often than in a message or a post (measured: one held-out clinical leak more).
    if !clinical {
        drop_ordinary_word_towns(&text, &mut v, recognizers);
    }
    drop_greetings(&text, &mut v);
    v.retain(|s| !is_language(&text, s));
    trim_name_edges(&text, &mut v, recognizers);
    trim_capitals_edges(&text, &mut v, recognizers);
    drop_public_figures(&text, &mut v);
    drop_ranges(&text, &mut v);
    drop_sentence_dots(&text, &mut v);
    spans.spans = v;
    spans
}

/// Titles of public office, capitalized, before a name they make a public figure's ("President
/// Volodymyr Zelensky", "CEO Elon Musk", "Prime Minister Mark Carney"): no patient's or
/// relative's identifier. Titles that are also given names ("King", "Prince") are not here.
const PUBLIC_OFFICES: &[&str] = &[
    "President",
    "Prime Minister",
    "Chancellor",
    "Premier",
    "Pope",
    "Senator",
    "Sen.",
    "Governor",
    "Gov.",
    "Congressman",
    "Congresswoman",
    "CEO",
    "Secretary of State",
];

/// Public figures named in full, whose names no patient or relative is likely to share, which
/// texts mention as news, taste or small talk ("sing along to Taylor Swift"): no identifier of
/// the person the text is about. Names that many people share ("Bill Gates", "Michael Jordan",
/// "Adele", "Drake") are not here.
#[rustfmt::skip]
const PUBLIC_FIGURES: &[&str] = &[
    "Taylor Swift", "Elon Musk", "Beyoncé", "Beyonce", "Barack Obama", "Donald Trump", "Joe Biden",
    "Kamala Harris", "Oprah Winfrey", "Kim Kardashian", "LeBron James", "Lionel Messi",
    "Cristiano Ronaldo", "Keanu Reeves", "Zendaya", "Timothée Chalamet", "Dolly Parton",
    "Patrick Mahomes", "Travis Kelce", "Jeff Bezos", "Mark Zuckerberg", "Ryan Seacrest",
    "Jimmy Fallon", "Christopher Walken", "Florence Pugh", "Frida Kahlo", "Diego Rivera",
    "Gareth Bale", "Harrison Butker", "Denis Villeneuve", "Greta Gerwig", "Ryan Gosling",
    "Margot Robbie", "Rihanna", "Shakira", "Ed Sheeran", "Harry Styles", "Billie Eilish",
    "Serena Williams", "Roger Federer", "Rafael Nadal", "Novak Djokovic", "Usain Bolt", "Tom Brady",
    "Simone Biles", "Jalen Brunson", "Mikal Bridges", "Yvon Chouinard", "Stephen Curry",
    "Kylian Mbappé", "Erling Haaland", "Volodymyr Zelensky", "Vladimir Putin", "Narendra Modi",
    "Emmanuel Macron", "Rishi Sunak", "Keir Starmer", "Justin Trudeau", "Pope Francis",
    "King Charles",
];

/// Drops names right after a title of public office ([`PUBLIC_OFFICES`]), or that start with
/// one, and names of public figures ([`PUBLIC_FIGURES`]).
fn drop_public_figures(text: &str, v: &mut Vec<Span>) {
    let office_ending = |t: &str| {
        PUBLIC_OFFICES.iter().any(|o| {
            t.strip_suffix(o)
                .is_some_and(|b| !b.ends_with(|c: char| c.is_alphanumeric()))
        })
    };
    v.retain(|s| {
        if !is_name(s) {
            return true;
        }
        let before = text[..s.start].trim_end_matches([' ', '\t']);
        let starts_with_office = PUBLIC_OFFICES.iter().any(|o| {
            text[s.start..s.end]
                .strip_prefix(o)
                .is_some_and(|r| r.starts_with(' '))
        });
        let t = &text[s.start..s.end];
        let bare = t
            .strip_suffix("'s")
            .or_else(|| t.strip_suffix("’s"))
            .unwrap_or(t);
        let figure = PUBLIC_FIGURES.contains(&bare);
        !(figure || starts_with_office || before.len() < s.start && office_ending(before))
    });
}

/// Drops the spans that are a range of numbers ([`is_range`]), unless they are a date, whose
/// "10-26" is a month and a day, or a house number after "#" ("Carrera 68D # 24-50").
fn drop_ranges(text: &str, v: &mut Vec<Span>) {
    v.retain(|s| {
        !is_range(&text[s.start..s.end])
            || canonical_label(&s.label).hipaa_class == "C_DATES"
            || text[..s.start].trim_end().ends_with('#')
    });
}

/// Two numbers of two or three digits each, the second larger, joined by a hyphen: a range
/// ("Hb 104 g/L (115-165)", "BG 140-180", "36-41 cm"), not a number that names anything. Polish
/// postcodes ("30-110"), extensions ("4-4471") and record numbers ("2208-7714") have parts of
/// different lengths or of four digits.
fn is_range(t: &str) -> bool {
    let Some((a, b)) = t.split_once('-') else {
        return false;
    };
    let number = |n: &str| {
        (2..=3).contains(&n.len()) && n.bytes().all(|c| c.is_ascii_digit()) && !n.starts_with('0')
    };
    number(a) && number(b) && a.len() == b.len() && b > a
}

/// Takes a sentence's full stop off the end of a span ("near Ridgewood Avenue." → "Ridgewood
/// Avenue"), which the model's last token often holds; an abbreviation keeps its dot ("Main St.",
/// "Jr.").
fn drop_sentence_dots(text: &str, v: &mut [Span]) {
    for s in v.iter_mut() {
        let t = &text[s.start..s.end];
        // A lone "." counts as an abbreviation's dot, so no span is left empty.
        if t.ends_with('.') && !t.ends_with("..") && !is_abbreviation_dot(t) {
            s.end -= 1;
        }
    }
}

/// Greetings and e-mail field labels in the languages the model reads, which it takes for
/// names or towns at the start of a message ("Hola Javier:", "Assunto: …", "Hiya, it's Karen").
#[rustfmt::skip]
const GREETINGS_AND_FIELDS: &[&str] = &[
    "hi", "hiya", "hey", "hello", "hola", "buenas", "bonjour", "bonsoir", "salut", "coucou",
    "hallo", "moin", "servus", "ciao", "salve", "olá", "oi", "namaste", "yo", "asunto",
    "assunto", "betreff", "oggetto", "sujet", "objet", "konu", "onderwerp", "temat", "aw", "rv",
];

/// Drops spans that are a greeting or a field label; [`trim_name_edges`] takes one off the
/// front of a name ("Hi Grant"). A facility's code in an HL7 field ("^^^HEY^PI") stays.
fn drop_greetings(text: &str, v: &mut Vec<Span>) {
    v.retain(|s| {
        s.pattern.as_deref() == Some(hl7::PATTERN) || !is_greeting_or_field(&text[s.start..s.end])
    });
}

/// Titles and forms of address written before a name, in the languages the model reads. Words
/// that are given names as often ("Don", "Anh", "Lola", "Major") are not here.
#[rustfmt::skip]
const HONORIFICS: &[&str] = &[
    "Mr", "Mrs", "Ms", "Miss", "Mx", "Dr", "Prof", "Professor", "Sir", "Madam", "Madame", "Mme",
    "Mlle", "Monsieur", "Herr", "Herrn", "Frau", "Sr", "Sra", "Srta", "Señor", "Señora", "Doña",
    "Dona", "Signor", "Signora", "Sig", "Dott", "Pan", "Pani", "Shri", "Smt", "Chị", "Ông", "Bà",
    "Tita", "Tito", "Oma", "Opa", "Aunty", "Auntie", "Uncle", "Grandma", "Grandpa", "Nurse",
    "Sister", "Father", "Pastor", "Rev", "Reverend", "Imam", "Rabbi", "Officer", "Sergeant",
    "Sgt", "Captain", "Capt", "Lt", "Judge", "Coach", "Ma'am", "Dhr", "Mevr", "Mevrouw",
    "Trooper", "Deputy", "Ofc", "Constable", "Const", "PC", "Detective", "Det", "Cpl", "Corporal",
    "Inspector", "Insp", "Lieutenant", "Sheriff", "Garda", "Cllr", "Councillor", "1SG", "SSG",
    "SFC", "SGT", "CPT", "MAJ", "PFC", "SPC",
];

/// Forms of address written after a name ("Ayşe Hanım", "Cengiz Bey").
const HONORIFICS_AFTER: &[&str] = &["Hanım", "Hanim", "Bey", "Sahib"];

/// Words said before a name and a comma in a reply ("Perfect, Hannah", "I, Evelyn Price"). An
/// ordinary word before a comma may be a surname written first ("Keeper, Josephine").
#[rustfmt::skip]
const INTERJECTIONS: &[&str] = &[
    "I", "OK", "Ok", "Okay", "Yes", "No", "Sorry", "Thanks", "Thank", "Perfect", "Great", "Sure",
    "Oh", "Gracias", "Merci", "Danke", "Grazie", "Obrigado", "Obrigada", "Vale", "Bueno",
];

/// Lower-case words that begin surnames ("van Dijk", "de la Cruz").
#[rustfmt::skip]
const NAME_PARTICLES: &[&str] = &[
    "van", "von", "de", "da", "di", "del", "della", "der", "den", "du", "le", "la", "al", "el",
    "bin", "binti", "ibn", "ap", "dos", "das", "do", "ter", "ten", "y",
];

/// Takes off a name's edges what names no one: a greeting ("Hi Grant"), a title or form of
/// address ("Herr Brandt", "Ayşe Hanım"), a word before a comma that is no name ("Perfect,
/// Hannah", "I, Evelyn Price"), a lower-case ordinary word before a capitalized name ("tell
/// Bartek"), a lower-case English word after it ("Blake drains"). A span that is only a title
/// goes.
fn trim_name_edges(text: &str, v: &mut Vec<Span>, recognizers: &Recognizers) {
    let title = |w: &str| HONORIFICS.contains(&w.trim_end_matches('.'));
    for s in v.iter_mut().filter(|s| is_name(s)) {
        loop {
            let t = &text[s.start..s.end];
            let Some((first, rest)) = t.split_once(' ') else {
                break;
            };
            let word = first.trim_end_matches([',', '.']);
            let rest_trimmed = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
            let capitalized_after = rest_trimmed.starts_with(char::is_uppercase);
            let strip = is_greeting_or_field(first)
                || title(first.trim_end_matches(','))
                || (first.ends_with(',') && INTERJECTIONS.contains(&word))
                || (word.starts_with(|c: char| c.is_lowercase())
                    && capitalized_after
                    && !NAME_PARTICLES.contains(&word)
                    && recognizers.is_ordinary_word(word));
            if !strip || rest_trimmed.is_empty() {
                break;
            }
            s.start += t.len() - rest_trimmed.len();
        }
        let t = &text[s.start..s.end];
        if let Some((head, last)) = t.rsplit_once(' ')
            && HONORIFICS_AFTER.contains(&last)
            && !head.trim().is_empty()
        {
            s.end = s.start + head.trim_end().len();
        }
        // "Blake drains", "Kolisi shook my hand": a lower-case English word after a capitalized
        // name is the sentence going on; a surname written in lower case ("Juan perez") is no
        // English word, and names in lower case throughout are left whole.
        if text[s.start..s.end].starts_with(char::is_uppercase) {
            drop_last_words(text, s, |last| {
                last.chars().all(char::is_lowercase)
                    && !NAME_PARTICLES.contains(&last)
                    && recognizers.is_common_word(last)
            });
        }
        trim_first_person(text, s);
    }
    v.retain(|s| {
        !(is_name(s) && (title(text[s.start..s.end].trim()) || is_pronoun_phrase(text, s)))
    });
}

/// Small words of a sentence that a span written in capitals takes in at its edges ("LIVES IN
/// SPRINGFIELD WITH HIS WIFE", "WIDOW FROM TULSA"); "A" is a middle initial there.
#[rustfmt::skip]
const CAPITALS_STOPWORDS: &[&str] = &[
    "AN", "THE", "AND", "OR", "BUT", "WITH", "WITHOUT", "FROM", "TO", "IN", "AT", "ON",
    "BY", "FOR", "OF", "HIS", "HER", "HIM", "SHE", "HE", "THEY", "THEIR", "IS", "WAS", "ARE",
    "WERE", "HAS", "HAD", "WHO", "WHICH", "THAT", "THIS", "ALSO", "NOW", "THEN",
];

/// Takes the words of the sentence off the edges of a span written in capitals, as dictated
/// reports are: a name loses an ordinary word and no name ("KAREN VISITS" → "KAREN", "FROM
/// TULSA" → "TULSA"), a place the sentence's small words after it ("SPRINGFIELD WITH HIS" →
/// "SPRINGFIELD"). In capitals the model cannot see where a name ends; a word that names, a
/// town's own word ("SALT LAKE CITY") and a one-word span stay.
fn trim_capitals_edges(text: &str, v: &mut [Span], recognizers: &Recognizers) {
    for s in v.iter_mut() {
        let name = is_name(s);
        if !name && !matches!(canonical_label(&s.label).name, "CITY" | "LOCATION") {
            continue;
        }
        let t = &text[s.start..s.end];
        if !t.chars().any(char::is_alphabetic) || t.chars().any(char::is_lowercase) {
            continue;
        }
        // A name is trimmed only around a word that names and is no English word ("KAREN
        // VISITS"): "MAENDELEO EDUCATION FOUNDATION" is an organization's.
        if name
            && !t
                .split(' ')
                .any(|w| recognizers.is_name_and_no_word(bare(w)))
        {
            continue;
        }
        let sentence_word = |w: &str| {
            let w = bare(w);
            CAPITALS_STOPWORDS.contains(&w) || (name && recognizers.is_ordinary_word(w))
        };
        drop_last_words(text, s, sentence_word);
        if name {
            drop_first_words(text, s, sentence_word);
        }
    }
}

/// `w` without the punctuation around it ("JOHN," → "JOHN").
fn bare(w: &str) -> &str {
    w.trim_matches(|c: char| !c.is_alphanumeric())
}

/// Takes the last word off `s` while `drop` says so of it, leaving one word at least.
fn drop_last_words(text: &str, s: &mut Span, drop: impl Fn(&str) -> bool) {
    while let Some((head, last)) = text[s.start..s.end].rsplit_once(' ')
        && !head.trim().is_empty()
        && drop(last)
    {
        s.end = s.start + head.trim_end().len();
    }
}

/// Takes the first word off `s` while `drop` says so of it, leaving one word at least.
fn drop_first_words(text: &str, s: &mut Span, drop: impl Fn(&str) -> bool) {
    while let Some((first, rest)) = text[s.start..s.end].split_once(' ')
        && !rest.trim().is_empty()
        && drop(first)
    {
        s.start = s.end - rest.trim_start().len();
    }
}

/// First-person forms, never part of a name ("May I have…", "So I called").
const FIRST_PERSON: &[&str] = &[
    "I", "I'm", "I’m", "I've", "I’ve", "I'll", "I’ll", "I'd", "I’d",
];

/// Pronouns and determiners that open a sentence, which the model and the speaker-label
/// patterns take for a name after a line's label ("Caller: My dad's pendant", "Rep: Your order").
#[rustfmt::skip]
const PRONOUNS: &[&str] = &[
    "My", "Your", "Our", "Their", "His", "Its", "We", "You", "They", "He", "She", "It", "This",
    "That", "These", "Those", "The",
];

/// Words that open a sentence before "I", which then joins them into a name ("May I have",
/// "So I finally", "Ok I have to ask").
#[rustfmt::skip]
const OPENERS: &[&str] = &[
    "May", "So", "Ok", "OK", "Okay", "Honestly", "Lmao", "Lol", "Can", "Could", "Should", "Would",
    "Do", "Did", "Now", "Then", "Well", "Yes", "No", "And", "But", "Also", "Today", "Sunday",
];

/// Takes first-person words off a name's edges ("Tell Hope I said" → "Hope", "Hi I'm Blessing" →
/// "Blessing"); a span of them alone is left empty at its start.
fn trim_first_person(text: &str, s: &mut Span) {
    while let Some((head, last)) = text[s.start..s.end].rsplit_once(' ')
        && FIRST_PERSON.contains(&last)
    {
        s.end = s.start + head.trim_end().trim_end_matches(',').len();
    }
    while let Some((first, rest)) = text[s.start..s.end].split_once(' ')
        && FIRST_PERSON.contains(&first.trim_end_matches(','))
    {
        s.start = s.end - rest.trim_start().len();
    }
}

/// Whether a name span is a first-person form, a sentence opener left by [`trim_first_person`]
/// before one, or a pronoun or determiner alone before a lower-case word.
fn is_pronoun_phrase(text: &str, s: &Span) -> bool {
    let t = text[s.start..s.end].trim_end_matches(',');
    let after = text[s.end..].trim_start_matches([' ', '\t']);
    let next = after.trim_start_matches([' ', '\t', ',']);
    let next_word = next
        .split_once(char::is_whitespace)
        .map_or(next, |(w, _)| w);
    FIRST_PERSON.contains(&t)
        || (OPENERS.contains(&t) && FIRST_PERSON.contains(&next_word))
        || (PRONOUNS.contains(&t.trim()) && after.starts_with(char::is_lowercase))
}

fn is_greeting_or_field(s: &str) -> bool {
    let word = s.trim().trim_end_matches([',', ':', '!']).to_lowercase();
    GREETINGS_AND_FIELDS.contains(&word.as_str())
}

/// An acronym of two to five capitals that no name list holds ("HTN", "TAVR", "CRNA"; not
/// "PAM" or "SMITH", names written in capitals).
fn is_unlisted_acronym(word: &str, recognizers: &Recognizers) -> bool {
    (2..=5).contains(&word.len())
        && word.bytes().all(|b| b.is_ascii_uppercase())
        && recognizers.is_unlisted_name(word)
}

/// One word and a grade in Roman numerals: a score, a class or a scale ("ASA III", "Hinchey
/// III", "NYHA II", "Salter-Harris II"). A person's generational suffix follows a whole name,
/// whose other part stands beside it.
fn is_graded_term(phrase: &str) -> bool {
    const GRADES: &[&str] = &["I", "II", "III", "IV", "V", "VI"];
    phrase.split_once(' ').is_some_and(|(word, grade)| {
        word.starts_with(char::is_uppercase) && GRADES.contains(&grade)
    })
}

/// Drops the model's one-word names that are ordinary words ([`Recognizers::is_ordinary_word`])
/// and stand alone: a word beside another name ("Calliope Romani") is part of that name, unless
/// that one is an ordinary word too ("Vital Signs"). `v` is sorted by start.
fn drop_ordinary_word_names(text: &str, v: &mut Vec<Span>, recognizers: &Recognizers) {
    let ordinary: Vec<bool> = v
        .iter()
        .map(|s| {
            let t = &text[s.start..s.end];
            s.source == Source::Model
                && is_name(s)
                && (recognizers.is_ordinary_phrase(t)
                    || is_unlisted_acronym(t, recognizers)
                    || is_graded_term(t))
        })
        .collect();
    // `v[i]` and its neighbour `v[j]` are parts of one name, the neighbour no ordinary word.
    let beside = |i: usize, j: usize| {
        let (a, b) = if i < j {
            (&v[i], &v[j])
        } else {
            (&v[j], &v[i])
        };
        !ordinary[j] && is_name(&v[j]) && b.start >= a.end && name_gap(&text[a.end..b.start])
    };
    let drop: Vec<bool> = (0..v.len())
        .map(|i| {
            ordinary[i] && !(i > 0 && beside(i, i - 1)) && !(i + 1 < v.len() && beside(i, i + 1))
        })
        .collect();
    let mut keep = drop.iter().map(|d| !d);
    v.retain(|_| keep.next().unwrap_or(true));
}

/// Drops the model's towns that are one ordinary word in lower case and no listed town
/// ("at bedside", "via port", "in the barn"): the model reads a noun after a preposition as a
/// place. A listed town written in lower case stays ("in mesa", "from hartford"), and so does a
/// word that is part of a longer name: a listed town with the word beside it ("sioux falls") or
/// a span a space away ("old town tempe", "St. John the Baptist"). `v` is sorted by start.
fn drop_ordinary_word_towns(text: &str, v: &mut Vec<Span>, recognizers: &Recognizers) {
    let drop: Vec<bool> = v
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let t = &text[s.start..s.end];
            let lone_word = s.source == Source::Model
                && canonical_label(&s.label).name == "CITY"
                && t.chars().all(char::is_lowercase)
                && recognizers.is_common_word(t)
                && !recognizers.is_listed_town(t)
                && !PARTS_OF_TOWN.contains(&t);
            if !lone_word {
                return false;
            }
            let before = text[..s.start].strip_suffix(' ').map(last_word);
            let after = text[s.end..].strip_prefix(' ').map(first_word);
            let joined = before.is_some_and(|w| recognizers.is_listed_town(&format!("{w} {t}")))
                || after.is_some_and(|w| recognizers.is_listed_town(&format!("{t} {w}")));
            let near = |j: usize| {
                v.get(j).is_some_and(|n| {
                    text.get(n.end..s.start) == Some(" ") || text.get(s.end..n.start) == Some(" ")
                })
            };
            !(joined || (i > 0 && near(i - 1)) || near(i + 1))
        })
        .collect();
    let mut keep = drop.iter().map(|d| !d);
    v.retain(|_| keep.next().unwrap_or(true));
}

/// Lower-case words that name a part of a town ("she watches him after school in northeast").
#[rustfmt::skip]
const PARTS_OF_TOWN: &[&str] = &[
    "north", "south", "east", "west", "northeast", "northwest", "southeast", "southwest",
    "downtown", "uptown", "midtown", "eastside", "westside", "northside", "southside",
];

/// The run of letters ending `s`.
fn last_word(s: &str) -> &str {
    let start = s
        .char_indices()
        .rev()
        .find(|(_, c)| !c.is_alphabetic())
        .map_or(0, |(i, c)| i + c.len_utf8());
    &s[start..]
}

/// The run of letters opening `s`.
fn first_word(s: &str) -> &str {
    let end = s
        .char_indices()
        .find(|(_, c)| !c.is_alphabetic())
        .map_or(s.len(), |(i, _)| i);
    &s[..end]
}

/// Age and sex in clinical shorthand ("70M", "42 F"), which the model takes for a building
/// number. An age over 89 is found by the recognizers and replaces it.
fn is_age_and_sex(s: &str) -> bool {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    (1..=3).contains(&digits) && matches!(s[digits..].trim_start(), "M" | "F")
}

/// Languages and the peoples they are named for, which the model reads as towns or names
/// ("consultation in English", "interpreter: Vietnamese", "speaks Igbo"): never an identifier.
#[rustfmt::skip]
const LANGUAGES: &[&str] = &[
    "English", "Welsh", "Irish", "Scottish", "Gaelic", "French", "German", "Spanish", "Italian",
    "Portuguese", "Dutch", "Polish", "Russian", "Ukrainian", "Romanian", "Greek", "Turkish",
    "Arabic", "Hebrew", "Farsi", "Persian", "Pashto", "Dari", "Urdu", "Hindi", "Bengali",
    "Punjabi", "Gujarati", "Marathi", "Tamil", "Telugu", "Kannada", "Malayalam", "Nepali",
    "Chinese", "Mandarin", "Cantonese", "Japanese", "Korean", "Vietnamese", "Tagalog", "Filipino",
    "Hmong", "Khmer", "Somali", "Amharic", "Tigrinya", "Swahili", "Yoruba", "Igbo", "Hausa",
    "Zulu", "isiZulu", "Xhosa", "isiXhosa", "Afrikaans", "Sesotho", "Setswana", "Māori", "Maori",
    "Samoan", "Tongan", "Navajo", "Creole", "Haitian",
];

/// A span that is only a language's name, as a place or as the model's name: a person named
/// "English" keeps the name a pattern gives them ("Dr. English").
fn is_language(text: &str, s: &Span) -> bool {
    LANGUAGES.contains(&&text[s.start..s.end])
        && (s.source == Source::Model || canonical_label(&s.label).hipaa_class == "B_GEOGRAPHIC")
}

/// One span covering the finding and the model spans it overlaps.
fn absorb(parts: &[Span], f: &Finding, finding_decides: bool) -> Span {
    let finding_canon = canonical_label(f.label);
    let compatible = |s: &Span| {
        let c = canonical_label(&s.label);
        // A state is the one place Safe Harbor keeps, so the model calling "New York" in
        // "New York, NY 10023" a state must not outvote a pattern that found a city there.
        if (c.name == "STATE") != (finding_canon.name == "STATE") {
            return false;
        }
        c == finding_canon || c.hipaa_class == finding_canon.hipaa_class
    };
    let best = parts.iter().max_by(|a, b| a.score.total_cmp(&b.score));
    let one_kind = parts
        .iter()
        .all(|s| canonical_label(&s.label) == canonical_label(&parts[0].label));
    // One kind of fragment keeps its label; fragments of several kinds inside one identifier
    // (a given name and a surname inside one name) take the finding's.
    let label = match best {
        Some(b) if one_kind && compatible(b) => b.label.clone(),
        _ if parts.iter().any(compatible) => f.label.to_string(),
        Some(b) if !finding_decides => b.label.clone(),
        _ => f.label.to_string(),
    };
    let mean = parts.iter().map(|s| s.score).sum::<f32>() / parts.len().max(1) as f32;
    Span {
        start: parts.iter().map(|s| s.start).fold(f.start, usize::min),
        end: parts.iter().map(|s| s.end).fold(f.end, usize::max),
        label,
        score: mean.max(f.score),
        source: Source::Both,
        pattern: Some(f.pattern.clone()),
    }
}

fn is_name(s: &Span) -> bool {
    canonical_label(&s.label).hipaa_class == "A_NAMES"
}

/// Whether `gap` may sit between two parts of one name: spaces, a comma and spaces, initials
/// ("M. ", "M "), or a nickname in quotes or parentheses (Marguerite "Peggy" Lund, Bill
/// (William) Strand), found as a name itself or not.
fn name_gap(gap: &str) -> bool {
    initials_gap(gap) || nickname_gap(gap)
}

fn nickname_gap(gap: &str) -> bool {
    const PAIRS: [(char, char); 5] = [('"', '"'), ('“', '”'), ('\'', '\''), ('‘', '’'), ('(', ')')];
    let blank = |c: char| c == ' ' || c == '\t';
    let inner = gap.trim_matches(blank);
    let (lead, trail) = (gap.starts_with(blank), gap.ends_with(blank));
    let mut chars = inner.chars();
    let (Some(first), last) = (chars.next(), chars.next_back()) else {
        return false;
    };
    let Some(last) = last else {
        // One mark: the nickname between it and its pair is a name span itself.
        return (lead && !trail && PAIRS.iter().any(|p| p.0 == first))
            || (trail && !lead && PAIRS.iter().any(|p| p.1 == first));
    };
    let word = chars.as_str();
    lead && trail
        && PAIRS.contains(&(first, last))
        && (1..=15).contains(&word.chars().count())
        && word.chars().all(|c| c.is_alphabetic() || c == '.')
}

fn initials_gap(gap: &str) -> bool {
    let rest = gap.strip_prefix(',').unwrap_or(gap);
    if !rest.starts_with([' ', '\t']) {
        return false;
    }
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {}
            c if c.is_uppercase() && chars.peek() == Some(&'.') => {
                chars.next();
            }
            c if c.is_uppercase() && matches!(chars.peek(), Some(' ' | '\t')) => {}
            _ => return false,
        }
    }
    true
}

/// Initials right before a name ("J. ", "J.R. ") join it.
fn absorb_initials(text: &str, s: &mut Span) {
    loop {
        let trimmed = text[..s.start].trim_end_matches([' ', '\t']);
        let Some(head) = trimmed.strip_suffix('.') else {
            return;
        };
        let mut it = head.chars().rev();
        let Some(initial) = it.next() else {
            return;
        };
        if !initial.is_uppercase() || it.next().is_some_and(char::is_alphanumeric) {
            return;
        }
        s.start = head.len() - initial.len_utf8();
    }
}

/// Names take the words the layout around them says are theirs ([`structure::extend_names`]),
/// then name parts of one name become one NAME span.
fn join_names(text: &str, mut v: Vec<Span>) -> Vec<Span> {
    structure::extend_names(text, &mut v);
    let mut out: Vec<Span> = Vec::with_capacity(v.len());
    for mut s in v {
        if is_name(&s) {
            absorb_initials(text, &mut s);
        }
        if let Some(prev) = out.last_mut()
            && is_name(prev)
            && is_name(&s)
            && s.start >= prev.end
            && name_gap(&text[prev.end..s.start])
            // Another name in brackets stays apart: the brackets are no part of either.
            && s.pattern.as_deref() != Some(BRACKETED_NAME)
        {
            prev.end = s.end;
            prev.label = "NAME".into();
            prev.score = prev.score.min(s.score);
            if s.source != prev.source {
                prev.source = Source::Both;
            }
            continue;
        }
        out.push(s);
    }
    absorb_trailing_initials(text, &mut out);
    out
}

/// The nicknames in quotes written after names ("SZYMANSKI, WILLIAM \"BILL\"", "GUNNAR W
/// (\"Gus\")"), as NAME spans of their own; a name takes the closing quote of one it already
/// holds. An `ordinary` word in quotes is a contract's defined term ("Rosa Ochoa (\"Tenants\")").
/// Without quotes, brackets after a name hold another name of the same person or of a spouse
/// ("Flanagan, Patrick (Paddy)", "Tan Wei Ling (陈慧玲)", "Rusty Hope (Dawn)"), see
/// [`bracketed_name`]. `v` is sorted; a name right before the next span takes nothing.
fn trailing_nicknames(
    text: &str,
    v: &mut [Span],
    ordinary: impl Fn(&str) -> bool,
    named: impl Fn(&str) -> bool,
) -> Vec<Span> {
    let mut found = Vec::new();
    for i in 0..v.len() {
        if !is_name(&v[i]) {
            continue;
        }
        let rest = text_after(text, v, i);
        let held = &text[v[i].start..v[i].end];
        if held.matches('"').count() % 2 == 1 && rest.starts_with('"') {
            v[i].end += 1;
            continue;
        }
        if held.matches('“').count() > held.matches('”').count() && rest.starts_with('”') {
            v[i].end += '”'.len_utf8();
            continue;
        }
        let Some(after) = rest.strip_prefix(' ') else {
            continue;
        };
        let (paren, after) = match after.strip_prefix('(') {
            Some(a) => (true, a),
            None => (false, after),
        };
        let Some(quote) = after.chars().next().filter(|c| matches!(c, '"' | '“')) else {
            if paren && let Some(len) = bracketed_name(after, &named) {
                let start = v[i].end + 2;
                found.push(Span::pattern(
                    start,
                    start + len,
                    "NAME",
                    v[i].score,
                    BRACKETED_NAME,
                ));
            }
            continue;
        };
        let body = &after[quote.len_utf8()..];
        let word = body.find(['"', '”']).map_or("", |end| &body[..end]);
        let n = word.chars().count();
        if !(2..=15).contains(&n)
            || !word.starts_with(char::is_uppercase)
            || !word.chars().all(char::is_alphabetic)
            || ordinary(word)
        {
            continue;
        }
        // After the space, the opening paren and the quote.
        let start = v[i].end + 1 + usize::from(paren) + quote.len_utf8();
        found.push(Span::pattern(
            start,
            start + word.len(),
            "NAME",
            v[i].score,
            "nickname",
        ));
    }
    found
}

/// The pattern name of a name found in brackets after another ([`bracketed_name`]).
const BRACKETED_NAME: &str = "bracketed_name";

/// Length of the name that `after` (the text after an opening bracket) holds before its
/// closing bracket: one to three capitalized words of four letters or more, each `named`
/// (listed as a name, no English word: "Karan", "Lupita Ruiz"; not "Mother", "Cardiology",
/// "Spanish", "Eng" or "MD"), or a name in a script without capitals ("陈慧玲", "לוי נועה"), of
/// three letters or more and no katakana, which writes roles ("ケアマネージャー"), as two Han
/// characters often do ("長女", eldest daughter).
fn bracketed_name(after: &str, named: impl Fn(&str) -> bool) -> Option<usize> {
    let len = after.find(')')?;
    let inner = &after[..len];
    let words: Vec<&str> = inner.split(' ').collect();
    if !(1..=3).contains(&words.len()) || inner.chars().count() > 30 {
        return None;
    }
    let katakana = |c: char| ('\u{30A0}'..='\u{30FF}').contains(&c);
    let uncased = |w: &str| {
        w.chars().count() >= 3
            && w.chars().all(|c| {
                c.is_alphabetic() && !c.is_lowercase() && !c.is_uppercase() && !katakana(c)
            })
    };
    if words.iter().all(|w| uncased(w)) {
        return Some(len);
    }
    let capitalized = |w: &str| {
        let mut chars = w.chars();
        w.chars().count() >= 4
            && chars.next().is_some_and(char::is_uppercase)
            && chars.clone().next().is_some_and(char::is_lowercase)
            && chars.all(|c| c.is_alphabetic() || matches!(c, '-' | '\'' | '’'))
    };
    words
        .iter()
        .all(|w| capitalized(w) && named(w))
        .then_some(len)
}

/// The text after `v[i]` up to the next span (`v` sorted), which a name may take into itself.
fn text_after<'t>(text: &'t str, v: &[Span], i: usize) -> &'t str {
    let ceiling = v.get(i + 1).map_or(text.len(), |n| n.start.max(v[i].end));
    &text[v[i].end..ceiling]
}

/// A name takes the initial written after it when the initial ends the name: "WHITE, GRANT T"
/// before a field's gap, "Wambui N. (Westlands shop)", "HOANG, DAVID Q. Defendant". An
/// initial without its dot must end the field (a line end, two spaces, punctuation). `v` is
/// sorted; a span overlapping the next takes nothing.
fn absorb_trailing_initials(text: &str, v: &mut [Span]) {
    for i in 0..v.len() {
        if !is_name(&v[i]) {
            continue;
        }
        let rest = text_after(text, v, i);
        let Some(after) = rest.strip_prefix(' ') else {
            continue;
        };
        let mut chars = after.chars();
        let Some(initial) = chars.next().filter(|c| c.is_uppercase()) else {
            continue;
        };
        let tail = chars.as_str();
        let len = if tail.starts_with('.') {
            1 + initial.len_utf8() + 1
        } else if tail.is_empty()
            || tail.starts_with(['\n', '\r', ',', ';', ':', ')'])
            || tail.starts_with("  ")
        {
            1 + initial.len_utf8()
        } else {
            continue;
        };
        v[i].end += len;
    }
}

/// Words that never propagate as names on their own (titles, credentials, calendar words).
const NOT_NAMES: &[&str] = &[
    "dr",
    "mr",
    "mrs",
    "ms",
    "miss",
    "prof",
    "md",
    "do",
    "rn",
    "np",
    "pa",
    "phd",
    "the",
    "and",
    "patient",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "hospital",
    "clinic",
    "center",
    "street",
];

/// The identifiers propagation looks for, learnt from spans: the words of names (three letters
/// or more, capitalized, as written) and the whole text of other identifiers (four characters
/// or more). Each term keeps the label and score of its first sighting.
#[derive(Debug, Default)]
pub struct Terms {
    by_term: std::collections::HashMap<String, (String, f32)>,
}

impl Terms {
    /// Most terms a stream remembers: a bound on memory, far above any one patient's identifiers.
    const CAP: usize = 4096;

    /// Learns the terms of `spans` (byte offsets into `text`).
    pub fn learn(&mut self, text: &str, spans: &[Span]) {
        each_term(text, spans, |term, label, score| {
            if self.by_term.len() < Self::CAP && !self.by_term.contains_key(term) {
                self.by_term
                    .insert(term.to_string(), (label.to_string(), score));
            }
        });
    }
}

fn each_term<'a>(text: &'a str, v: &'a [Span], mut f: impl FnMut(&'a str, &'a str, f32)) {
    for s in v {
        let value = &text[s.start..s.end];
        if is_name(s) {
            let label = match canonical_label(&s.label).name {
                "FIRST_NAME" | "LAST_NAME" => s.label.as_str(),
                _ => "NAME",
            };
            let words =
                value.split(|c: char| !(c.is_alphanumeric() || matches!(c, '\'' | '’' | '-')));
            for w in words {
                let w = w.trim_matches(|c: char| !c.is_alphanumeric());
                // "Gomes's" names the person "Gomes" elsewhere in the text.
                let w = ["'s", "’s"]
                    .iter()
                    .find_map(|s| w.strip_suffix(s))
                    .unwrap_or(w);
                if w.chars().count() >= 3
                    && w.chars().next().is_some_and(char::is_uppercase)
                    && !NOT_NAMES.contains(&w.to_lowercase().as_str())
                {
                    f(w, label, s.score);
                }
            }
        } else if value.chars().count() >= 4 {
            f(value, &s.label, s.score);
        }
    }
}

/// Other occurrences, as whole words, of the terms of `v` and of those already `known`. A name's
/// word that `any_case` accepts (a listed name of four letters or more and no ordinary word) is
/// found in any ASCII case too ("maddie", "FLANAGAN" after "Maddie Flanagan"): chat and
/// headings write names so. "Will" finds no "will".
fn propagate(text: &str, v: &[Span], known: &Terms, any_case: impl Fn(&str) -> bool) -> Vec<Span> {
    use std::collections::HashMap;
    let mut terms: HashMap<&str, (&str, f32)> = HashMap::new();
    each_term(text, v, |term, label, score| {
        terms.entry(term).or_insert((label, score));
    });
    for (term, (label, score)) in &known.by_term {
        terms
            .entry(term.as_str())
            .or_insert((label.as_str(), *score));
    }
    if terms.is_empty() {
        return Vec::new();
    }
    let keys: Vec<&str> = terms.keys().copied().collect();
    let Ok(ac) = aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostLongest)
        .ascii_case_insensitive(true)
        .build(&keys)
    else {
        return Vec::new();
    };
    // `v` is sorted and disjoint: the only span that can contain a..b is the last one
    // starting at or before `a`.
    let covered = |a: usize, b: usize| {
        let i = v.partition_point(|s| s.start <= a);
        i > 0 && b <= v[i - 1].end
    };
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = Vec::new();
    for m in ac.find_iter(text) {
        let (a, b) = (m.start(), m.end());
        if word(text[..a].chars().next_back()) || word(text[b..].chars().next()) || covered(a, b) {
            continue;
        }
        let found = &text[a..b];
        let (label, score) = match terms.get(found) {
            Some(&exact) => exact,
            None => {
                let key = keys[m.pattern().as_usize()];
                let (label, score) = terms[key];
                if canonical_label(label).hipaa_class != "A_NAMES" || !any_case(key) {
                    continue;
                }
                (label, score)
            }
        };
        out.push(Span::pattern(a, b, label.to_string(), score, "propagation"));
    }
    out
}

/// `v` (sorted, disjoint) with `extra` spans added, still sorted and disjoint.
fn with_added(mut v: Vec<Span>, extra: Vec<Span>) -> Vec<Span> {
    if extra.is_empty() {
        return v;
    }
    v.extend(extra);
    v.sort_by_key(|s| (s.start, s.end));
    coalesce(v)
}

/// Overlapping spans become their union; the label of a model span beats a pattern's, then the
/// higher score wins.
fn coalesce(v: Vec<Span>) -> Vec<Span> {
    // A model span's label beats a pattern's; between equals, the higher score's.
    let outranks = |a: &Span, b: &Span| {
        let (am, bm) = (a.source != Source::Pattern, b.source != Source::Pattern);
        (am && !bm) || (am == bm && a.score > b.score)
    };
    let mut out: Vec<Span> = Vec::with_capacity(v.len());
    for s in v {
        match out.last_mut() {
            Some(prev) if s.start < prev.end => {
                if outranks(&s, prev) {
                    prev.label = s.label.clone();
                }
                if s.source != prev.source {
                    prev.source = Source::Both;
                }
                if prev.pattern.is_none() {
                    prev.pattern = s.pattern.clone();
                }
                prev.score = prev.score.max(s.score);
                prev.end = prev.end.max(s.end);
            }
            _ => out.push(s),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::span::RunStats;
    use std::sync::Arc;

    fn run(text: &str, spans: Vec<Span>, p: RecognizeParams) -> Vec<(String, String, Source)> {
        run_with(
            &Recognizers::builtin().expect("recognizers"),
            text,
            spans,
            p,
        )
    }

    fn run_with(
        table: &Recognizers,
        text: &str,
        spans: Vec<Span>,
        p: RecognizeParams,
    ) -> Vec<(String, String, Source)> {
        let out = recognize(
            Spans {
                original: Arc::from(text),
                spans,
                sentence_starts: vec![],
                stats: RunStats::default(),
            },
            table,
            &Terms::default(),
            p,
        );
        out.spans
            .iter()
            .map(|s| (text[s.start..s.end].to_string(), s.label.clone(), s.source))
            .collect()
    }

    /// Characters covered by spans (the sweep's never-reduce invariant is checked against this).
    fn covered_bytes(v: &[Span]) -> usize {
        let mut sorted: Vec<(usize, usize)> = v.iter().map(|s| (s.start, s.end)).collect();
        sorted.sort_unstable();
        let (mut total, mut reach) = (0, 0);
        for (a, b) in sorted {
            let a = a.max(reach);
            if b > a {
                total += b - a;
                reach = b;
            }
        }
        total
    }

    const NONE: RecognizeParams = RecognizeParams {
        smart_merging: false,
        safety_sweep: false,
        join_names: false,
        propagate: false,
        whole_places: false,
        speakers: false,
        min_finding_score: 0.0,
    };
    const MERGE: RecognizeParams = RecognizeParams {
        smart_merging: true,
        ..NONE
    };
    const SWEEP: RecognizeParams = RecognizeParams {
        safety_sweep: true,
        ..NONE
    };

    #[test]
    fn smart_merging_joins_fragments_of_one_identifier() {
        let t = "call (617) 555-0143 today";
        let got = run(
            t,
            vec![
                Span::model(5, 10, "PHONE", 0.9),
                Span::model(11, 19, "PHONE", 0.8),
            ],
            MERGE,
        );
        assert_eq!(
            got,
            vec![("(617) 555-0143".into(), "PHONE".into(), Source::Both)]
        );
        let t = "DOB 01/15/1970.";
        let got = run(
            t,
            vec![
                Span::model(4, 6, "BUILDING_NUMBER", 0.6),
                Span::model(6, 14, "ZIP_CODE", 0.5),
            ],
            MERGE,
        );
        assert_eq!(
            got,
            vec![("01/15/1970".into(), "DATE".into(), Source::Both)]
        );
    }

    #[test]
    fn a_nickname_in_quotes_or_parentheses_sits_inside_the_name() {
        for gap in [
            " \"Peggy\" ",
            " (William) ",
            " “Abby” ",
            " \"",
            "\" ",
            " (",
            ") ",
        ] {
            assert!(name_gap(gap), "{gap:?}");
        }
        for gap in [
            " and ",
            " (2) ",
            "\"",
            " (mother) and ",
            " \"a very long nickname\" ",
        ] {
            assert!(!name_gap(gap), "{gap:?}");
        }
    }

    #[test]
    fn a_nickname_in_quotes_or_brackets_after_a_name_is_a_name_and_a_defined_term_is_not() {
        let t = "Pt: HUNTER, WILLIAM \"BILL\"   DOB 7/7/49; Name: TREVIÑO, GUILLERMO (\"Memo\") \
                 MRN 1; Rosa Ochoa (\"Tenants\") and Ann Lee “Nan”. Jaskaran (Karan), \
                 Tan Wei Ling (陈慧玲), Ian Hale (Cardiology), Mo Ali (Mother), Al Bo (MD).";
        let name = |w: &str| Span::model_at(t, w, "NAME");
        let mut v = vec![
            name("HUNTER, WILLIAM \"BILL"),
            name("TREVIÑO, GUILLERMO"),
            name("Rosa Ochoa"),
            name("Ann Lee"),
            name("Jaskaran"),
            name("Tan Wei Ling"),
            name("Ian Hale"),
            name("Mo Ali"),
            name("Al Bo"),
        ];
        let found = trailing_nicknames(t, &mut v, |w| w == "Tenants", |w| w == "Karan");
        let texts = |v: &[Span]| -> Vec<String> {
            v.iter().map(|s| t[s.start..s.end].to_string()).collect()
        };
        assert_eq!(texts(&v)[0], "HUNTER, WILLIAM \"BILL\"");
        assert_eq!(texts(&found), ["Memo", "Nan", "Karan", "陈慧玲"]);
    }

    #[test]
    fn a_city_found_by_a_pattern_outvotes_the_model_calling_it_a_state() {
        let t = "311 West 75th St, New York, NY 10023";
        let got = run(t, vec![Span::model(18, 26, "STATE", 0.8)], MERGE);
        assert_eq!(got, vec![("New York".into(), "CITY".into(), Source::Both)]);
    }

    #[test]
    fn ranges_are_no_identifiers_but_postcodes_extensions_and_house_numbers_are() {
        for t in ["115-165", "36-41", "140-180"] {
            assert!(is_range(t), "{t}");
        }
        for t in [
            "30-110",
            "4-4471",
            "2208-7714",
            "165-115",
            "00-514",
            "10-10",
            "1-2",
        ] {
            assert!(!is_range(t), "{t}");
        }
        let table = Recognizers::builtin_with_stand_in_gazetteers();
        let t = "Hb 104 g/L (115-165). Carrera 68D # 24-50, Modelia.";
        let at = |w: &str, label: &str| Span::model_at(t, w, label);
        let spans = vec![at("115-165", "ZIP_CODE"), at("24-50", "BUILDING_NUMBER")];
        let got = run_with(&table, t, spans, SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        assert!(!texts.contains(&"115-165"), "{texts:?}");
        assert!(texts.iter().any(|v| v.contains("24-50")), "{texts:?}");
    }

    #[test]
    fn ordinary_words_are_no_names_unless_a_name_stands_beside_them() {
        let table = Recognizers::builtin_with_stand_in_gazetteers();
        let t = "ABDOMEN: soft. GI prophylaxis: Zantac. Under my partner's name Calliope Romani.";
        let at = |w: &str, label: &str| Span::model_at(t, w, label);
        let spans = vec![
            at("ABDOMEN", "GIVEN_NAME"),
            at("Zantac", "SURNAME"),
            at("Calliope", "GIVEN_NAME"),
            at("Romani", "SURNAME"),
        ];
        let got = run_with(&table, t, spans, SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        assert_eq!(texts, ["Calliope Romani"]);
        // A name found by its context alone, every word of it ordinary, is a role or a heading.
        let t = "Approved but not reviewed by Attending Provider. Reviewed by Provider Smith.";
        let got = run_with(&table, t, vec![], SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        assert_eq!(texts, ["Provider Smith"]);
        // An acronym no name list holds is a term, and so is a word with a grade; a listed name
        // in capitals stays.
        let t = "Known HTN. Report from CRNA; JOHN at bedside. ASA III.";
        let at = |w: &str, label: &str| Span::model_at(t, w, label);
        let spans = vec![
            at("HTN", "GIVEN_NAME"),
            at("CRNA", "SURNAME"),
            at("JOHN", "GIVEN_NAME"),
            at("ASA III", "GIVEN_NAME"),
        ];
        let got = run_with(&table, t, spans, SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        assert_eq!(texts, ["JOHN"]);
    }

    #[test]
    fn a_lone_lower_case_word_is_no_town_outside_a_note() {
        let table = Recognizers::builtin_with_stand_in_gazetteers();
        let t = "meet me by the river at 5. moving to reading soon. staying by river tuam.";
        let city = |from: usize, word: &str| {
            let start = from + t[from..].find(word).expect("word in text");
            Span::model(start, start + word.len(), "CITY", 0.9)
        };
        let second = t.rfind("river").expect("twice");
        let spans = vec![
            city(0, "river"),
            city(0, "reading"),
            city(second, "river"),
            city(second, "tuam"),
        ];
        let got = run_with(&table, t, spans.clone(), SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        // The first "river" stands alone; "reading" is a listed town; the second "river" stands
        // beside a town found and joins it.
        assert_eq!(texts, ["reading", "river tuam"]);
        // In a note the model's word stays.
        let note = format!("Pt seen, MRN 1, DOB 1/1/1950, dx HTN. {t}");
        let shift = note.len() - t.len();
        let moved: Vec<Span> = spans
            .into_iter()
            .map(|s| Span::model(s.start + shift, s.end + shift, "CITY", 0.9))
            .collect();
        let got = run_with(&table, &note, moved, SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        assert_eq!(texts, ["1/1/1950", "river", "reading", "river tuam"]);
    }

    #[test]
    fn speakers_of_a_chat_are_names_even_when_they_are_words() {
        let table = Recognizers::builtin_with_stand_in_gazetteers();
        // "Hope" is an English word and a given name; "Assessment" only a word.
        let t = "Emeka: guys owambe on saturday\nHope: where?\nEmeka: Eko Hotel\n\
                 Assessment: dance\nHope: ok\nAssessment: eat\n";
        let p = RecognizeParams {
            speakers: true,
            ..NONE
        };
        let got = run_with(&table, t, vec![], p);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        assert_eq!(texts, ["Emeka", "Hope", "Emeka", "Hope"]);
        // A virtue name no name list holds ("Blessing") is a speaker's name, not a word.
        let t = "Emeka: guys owambe on saturday\nBlessing: where?\nEmeka: Eko Hotel\n\
                 Chioma: lol\nBlessing: abeg\n";
        let got = run_with(&table, t, vec![], p);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        assert_eq!(texts, ["Emeka", "Blessing", "Emeka", "Chioma", "Blessing"]);
    }

    #[test]
    fn titled_names_ocr_numbers_and_letterheads_reach_the_output() {
        let table = Recognizers::builtin_with_stand_in_gazetteers();
        // "Provider" is only an ordinary word, but the title names a person; the phone is read
        // with OCR's "l" and "O" as digits and found where the text has them.
        let t = "Reviewed by Dr. Provider. Hm ph: 865-426-7l3O";
        let got = run_with(&table, t, vec![], SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        assert_eq!(texts, ["Provider", "865-426-7l3O"]);
        // A letterhead, above its street line: a clinical letter's…
        let t = "RIVERSIDE INTERNAL MEDICINE\n415 Water Street\nPatient seen for discharge \
                 planning, BP 128/80, MRN 4471203, metformin 500 mg.";
        let p = RecognizeParams {
            whole_places: true,
            ..SWEEP
        };
        let got = run_with(&table, t, vec![], p);
        assert!(
            got.iter()
                .any(|(v, l, _)| v == "RIVERSIDE INTERNAL MEDICINE" && l == "ORGANIZATION"),
            "{got:?}"
        );
        // A contact block's, outside a note.
        let t = "Thanks for your order!\nTHE OLIVE BRANCH BISTRO\n47 High Street, Marlow";
        let got = run_with(&table, t, vec![], p);
        assert!(
            got.iter()
                .any(|(v, l, _)| v == "THE OLIVE BRANCH BISTRO" && l == "ORGANIZATION"),
            "{got:?}"
        );
    }

    #[test]
    fn public_figures_named_with_their_office_are_no_identifiers() {
        let text = "CEO Elon Musk met President Volodymyr Zelensky; Ana Presidente and \
                    Pope Francis; Senator's aide Jo Park";
        let name = |w: &str| Span::model_at(text, w, "NAME");
        let mut v = vec![
            name("Elon Musk"),
            name("Volodymyr Zelensky"),
            name("Ana Presidente"),
            name("Pope Francis"),
            name("Jo Park"),
        ];
        drop_public_figures(text, &mut v);
        let got: Vec<&str> = v.iter().map(|s| &text[s.start..s.end]).collect();
        assert_eq!(got, ["Ana Presidente", "Jo Park"]);
    }

    #[test]
    fn public_figures_named_in_full_are_no_identifiers() {
        let text = "sing along to Taylor Swift; Taylor Swift's tour; Taylor Swiftly; Taylor Kim";
        let name = |w: &str| Span::model_at(text, w, "NAME");
        let mut v = vec![
            name("Taylor Swift"),
            name("Taylor Swift's"),
            name("Taylor Swiftly"),
            name("Taylor Kim"),
        ];
        drop_public_figures(text, &mut v);
        let got: Vec<&str> = v.iter().map(|s| &text[s.start..s.end]).collect();
        assert_eq!(got, ["Taylor Swiftly", "Taylor Kim"]);
    }

    #[test]
    fn a_sentences_full_stop_is_no_part_of_a_span() {
        let text = "Seen near Ridgewood Avenue. Lives on Main St. today";
        let road = |w: &str| Span::model_at(text, w, "STREET_ADDRESS");
        let mut v = vec![road("Ridgewood Avenue."), road("Main St.")];
        drop_sentence_dots(text, &mut v);
        let got: Vec<&str> = v.iter().map(|s| &text[s.start..s.end]).collect();
        assert_eq!(got, ["Ridgewood Avenue", "Main St."]);
    }

    #[test]
    fn greetings_and_field_labels_are_no_names_or_towns() {
        let t = "Hi Grant, thanks. Hola, soy Ana. Assunto: aluguel";
        let at = |w: &str, label: &str| Span::model_at(t, w, label);
        let spans = vec![
            at("Hi Grant", "GIVEN_NAME"),
            at("Hola", "CITY"),
            at("Ana", "GIVEN_NAME"),
            at("Assunto", "NAME"),
        ];
        let got = run(t, spans, SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        assert_eq!(texts, ["Grant", "Ana"]);
    }

    #[test]
    fn a_language_is_no_town_and_no_name_the_model_read() {
        let t = "Prefers English; interpreter Igbo. Seen by Dr. English in Welshpool.";
        let at = |w: &str, label: &str| Span::model_at(t, w, label);
        let spans = vec![
            at("English", "CITY"),
            at("Igbo", "GIVEN_NAME"),
            at("Welshpool", "CITY"),
        ];
        let got = run(t, spans, SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        assert_eq!(texts, ["English", "Welshpool"]);
        assert_eq!(got[0].2, Source::Pattern, "the titled name stays");
    }

    #[test]
    fn first_person_words_and_pronouns_are_no_names() {
        let t = "Caller: My dad's pendant. May I have it? Tell Hope I said thanks. \
                 Dear Nora, I've passed it on. My Tran came.";
        let at = |w: &str| Span::model_at(t, w, "NAME");
        let spans = vec![
            at("My"),
            at("May I"),
            at("Hope I"),
            at("Nora, I've"),
            at("My Tran"),
        ];
        let table = Recognizers::builtin_with_stand_in_gazetteers();
        let got = run_with(&table, t, spans, SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        // "I" comes off a name's edge; a pronoun alone before a lower-case word and an opener
        // before "I" go; a pronoun inside a longer name stays.
        assert_eq!(texts, ["Hope", "Nora", "My Tran"]);
    }

    #[test]
    fn titles_interjections_and_ordinary_words_leave_a_names_edges() {
        let t = "Hallo Herr Brandt. Perfect, Hannah! Keeper, Josephine was seen. yes Bartek now. \
                 Ayşe Hanım aradı. Hi Mr. and Mrs. Castellanos";
        let at = |w: &str| Span::model_at(t, w, "NAME");
        let spans = vec![
            at("Herr Brandt"),
            at("Perfect, Hannah"),
            at("Keeper, Josephine"),
            at("yes Bartek"),
            at("Ayşe Hanım"),
            at("Mr"),
        ];
        let table = Recognizers::builtin_with_stand_in_gazetteers();
        let got = run_with(&table, t, spans, SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        // A surname written first stays whole, ordinary word or not; a lone title goes.
        assert!(texts.starts_with(&["Brandt", "Hannah", "Keeper, Josephine", "Bartek", "Ayşe"]));
        assert!(!texts.contains(&"Mr"), "{texts:?}");
    }

    #[test]
    fn a_span_in_capitals_leaves_the_sentence_at_its_edges() {
        let t = "DAUGHTER ANNA ATTENDS. LIVES IN CHICAGO WITH HIS WIFE. SEEN BY TERRELL, JOHN A \
                 TODAY. DONOR MAENDELEO ATTENDS";
        let at = |w: &str, label: &str| Span::model_at(t, w, label);
        let spans = vec![
            at("ANNA ATTENDS", "NAME"),
            at("CHICAGO WITH HIS", "CITY"),
            at("TERRELL, JOHN A", "NAME"),
            at("MAENDELEO ATTENDS", "NAME"),
        ];
        let table = Recognizers::builtin_with_stand_in_gazetteers();
        let got = run_with(&table, t, spans, SWEEP);
        let texts: Vec<&str> = got.iter().map(|(v, ..)| v.as_str()).collect();
        // A middle initial stays, and so does a span with no word that only names.
        assert_eq!(
            texts,
            ["ANNA", "CHICAGO", "TERRELL, JOHN A", "MAENDELEO ATTENDS"]
        );
    }

    #[test]
    fn age_and_sex_shorthand_is_no_building_number_and_an_age_over_89_is_kept() {
        let t = "Conrad Meyers 74M, wet AMD; his father Ole 92M and T 101F.";
        let at = |w: &str| Span::model_at(t, w, "BUILDING_NUMBER");
        let got = run(t, vec![at("74M"), at("92M")], SWEEP);
        // The two words before age and sex are the patient (session 19).
        assert_eq!(
            got,
            vec![
                ("Conrad Meyers".into(), "NAME".into(), Source::Pattern),
                ("92".into(), "AGE".into(), Source::Pattern)
            ]
        );
    }

    #[test]
    fn smart_merging_alone_adds_nothing_new() {
        let got = run("DOB 01/15/1970.", vec![], MERGE);
        assert!(got.is_empty());
    }

    #[test]
    fn sweep_adds_missed_findings_and_model_wins_ties() {
        let t = "Ann Lee, MRN: 4829173, phone 617-555-0143";
        let got = run(
            t,
            vec![
                Span::model(0, 3, "GIVEN_NAME", 0.9),
                Span::model(29, 32, "PHONE", 0.9),
            ],
            SWEEP,
        );
        assert_eq!(
            got,
            vec![
                ("Ann".into(), "GIVEN_NAME".into(), Source::Model),
                (
                    "4829173".into(),
                    "MEDICAL_RECORD_NUMBER".into(),
                    Source::Pattern
                ),
                ("617-555-0143".into(), "PHONE".into(), Source::Both),
            ]
        );
        // Same characters, different kind: the model's label stays.
        let got = run(
            "MRN: 4829173",
            vec![Span::model(5, 12, "BANK_ACCOUNT", 0.7)],
            SWEEP,
        );
        assert_eq!(
            got,
            vec![("4829173".into(), "BANK_ACCOUNT".into(), Source::Both)]
        );
    }

    #[test]
    fn sweep_never_reduces_what_is_covered() {
        let t = "Seen 03/15/2021 by Dr. Ann Lee (617) 555-0143, SSN 123-45-6789, a@b.org";
        let model = vec![
            Span::model(0, 9, "CITY", 0.6),
            Span::model(23, 30, "GIVEN_NAME", 0.9),
            Span::model(31, 36, "PHONE", 0.9),
            Span::model(40, 60, "TAX_ID", 0.5),
        ];
        let before = covered_bytes(&model);
        let table = Recognizers::builtin().expect("recognizers");
        let all = RecognizeParams {
            smart_merging: true,
            safety_sweep: true,
            join_names: true,
            propagate: true,
            whole_places: true,
            speakers: true,
            min_finding_score: 0.0,
        };
        for p in [SWEEP, MERGE, all] {
            let out = recognize(
                Spans {
                    original: Arc::from(t),
                    spans: model.clone(),
                    sentence_starts: vec![],
                    stats: RunStats::default(),
                },
                &table,
                &Terms::default(),
                p,
            );
            assert!(covered_bytes(&out.spans) >= before, "{p:?}");
            for w in out.spans.windows(2) {
                assert!(w[0].end <= w[1].start, "overlap left in {p:?}");
            }
        }
    }

    #[test]
    fn join_names_when_asked() {
        let t = "Ann Lee came; Ann\nLee left; LEE, ANN; Ana M. Ruiz; J. Smith.";
        let at = |w: &str, from: usize| from + t[from..].find(w).expect("word");
        let span =
            |w: &str, from: usize, l: &str| Span::model(at(w, from), at(w, from) + w.len(), l, 0.9);
        let spans = vec![
            span("Ann", 0, "GIVEN_NAME"),
            span("Lee", 0, "SURNAME"),
            span("Ann", 10, "GIVEN_NAME"),
            span("Lee", 17, "SURNAME"),
            span("LEE", 0, "SURNAME"),
            span("ANN", 0, "GIVEN_NAME"),
            span("Ana", 30, "GIVEN_NAME"),
            span("Ruiz", 0, "SURNAME"),
            span("Smith", 0, "SURNAME"),
        ];
        let p = RecognizeParams {
            join_names: true,
            ..NONE
        };
        let got: Vec<String> = run(t, spans, p).into_iter().map(|(s, _, _)| s).collect();
        assert_eq!(
            got,
            [
                "Ann Lee",
                "Ann",
                "Lee",
                "LEE, ANN",
                "Ana M. Ruiz",
                "J. Smith"
            ]
        );
    }

    #[test]
    fn a_name_takes_the_initial_that_ends_it() {
        let t = "Pt: WHITE, GRANT T   MRN 1\nagent Wambui N. (shop)\nGrace I will call\nAnn B";
        let at = |w: &str| t.find(w).expect("word");
        let span = |w: &str| Span::model(at(w), at(w) + w.len(), "NAME", 0.9);
        let spans = vec![
            span("WHITE, GRANT"),
            span("Wambui"),
            span("Grace"),
            span("Ann"),
        ];
        let p = RecognizeParams {
            join_names: true,
            ..NONE
        };
        let got: Vec<String> = run(t, spans, p).into_iter().map(|(s, _, _)| s).collect();
        assert_eq!(got, ["WHITE, GRANT T", "Wambui N.", "Grace", "Ann B"]);
    }

    #[test]
    fn propagation_finds_every_other_occurrence() {
        let t = "Giovanni Jones, MRN 4829173. Giovanni was seen; chart 4829173. Giovannis not. \
                 Tiago Gomes's tales. Gomes sang.";
        let spans = vec![
            Span::model(0, 8, "GIVEN_NAME", 0.9),
            Span::model(9, 14, "SURNAME", 0.9),
            Span::model(20, 27, "MRN", 0.9),
            Span::model(78, 91, "NAME", 0.9),
        ];
        let p = RecognizeParams {
            propagate: true,
            ..NONE
        };
        let got = run(t, spans, p);
        let texts: Vec<&str> = got.iter().map(|(s, _, _)| s.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Giovanni",
                "Jones",
                "4829173",
                "Giovanni",
                "4829173",
                "Tiago Gomes's",
                "Gomes"
            ]
        );
        assert_eq!(got[3].2, Source::Pattern);
    }

    #[test]
    fn propagation_finds_a_listed_name_in_any_case_but_no_ordinary_word() {
        let t = "Marcus Orozco called. marcus said hi to the OROZCO family. will see. Hope said \
                 we hope so; HOPE.";
        let at = |w: &str| t.find(w).expect("in text");
        let spans = vec![
            Span::model(0, 13, "NAME", 0.9),
            Span::model(at("Hope"), at("Hope") + 4, "GIVEN_NAME", 0.9),
        ];
        let p = RecognizeParams {
            propagate: true,
            ..NONE
        };
        let got = run_with(
            &Recognizers::builtin_with_stand_in_gazetteers(),
            t,
            spans,
            p,
        );
        let texts: Vec<&str> = got.iter().map(|(s, _, _)| s.as_str()).collect();
        // "Hope" is also an English word: only as written; "will" was never a name here.
        assert_eq!(texts, ["Marcus Orozco", "marcus", "OROZCO", "Hope"]);
    }
}
