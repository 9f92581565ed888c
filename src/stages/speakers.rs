//! Chat and transcript speakers, found by the recognize stage when the pipeline asks
//! (`speakers`): in a text where at least two labels each open two or more lines ("Guga: sim!!",
//! "hope: omg", "[9:15] Maya Patel: ok"), two labels take turns over three lines or more (a
//! dialogue), or three or more labels open four or more lines and one of them opens two (a group
//! chat), every such label is a person, listed in a gazetteer or not. Form fields ("Subject:", "Mother:") and section headings are ordinary words, and
//! clinical abbreviations ("HPI:", "dx:") are no names, so neither ever counts, unless a chat's
//! time stamp stands before the label every time and it is one capitalized word ("[09/05/24
//! 21:15] Nacho:"): no heading follows a chat's time stamp, so there an ordinary word is a
//! nickname (a log's keys are in lower case: "[06:00:03] wifi: connected"; roles stay roles:
//! "Caller:", "Agent:"). The writer and their kin ("me:", "Mom:") count towards a conversation
//! but are no names either. Chat exports that head each message with its sender and time on a
//! line of their own (Telegram's "Ирина, [10.03.2025 18:52]", WeChat's "王芳  19:42") count the
//! same way.

use std::collections::HashMap;

use super::span::Span;
use crate::deid::canonical_label;

/// Short labels that open lines in notes and e-mails, and the roles of a support chat or an
/// interview in other languages, which name no one.
#[rustfmt::skip]
const NOT_SPEAKERS: &[&str] = &[
    "pt", "hx", "dx", "rx", "tx", "sx", "fx", "cc", "bcc", "hpi", "ros", "pmh", "psh", "fh", "sh",
    "gi", "gu", "ent", "cv", "bp", "hr", "rr", "ap", "imp", "re", "fw", "fwd", "ps", "nb", "ok",
    "ext", "tel", "fax", "mob", "ph", "attn", "dob", "mrn", "ssn", "eta", "fyi", "tldr", "edit",
    "update", "upd", "agente", "cliente", "usuario", "usuaria", "operador", "operadora",
    "atendente", "kunde", "kundin", "mitarbeiter", "conseiller", "conseillère", "utilisateur",
    "klant", "medewerker", "klient", "konsultant", "müşteri", "temsilci", "pelanggan", "khách",
    "paciente", "médico", "médica", "enfermera", "enfermero", "intérprete", "doctora",
    "info", "error", "warn", "warning", "debug", "trace", "fatal", "critical", "notice", "system",
    "note", "alert", "status", "event", "log", "bot", "caller", "agent", "customer", "client",
    "clinic", "support", "operator", "rep", "advisor", "adviser", "user", "assistant", "admin",
    "moderator", "driver", "rider", "seller", "buyer", "courier", "patient", "nurse", "doctor",
    "reception", "dispatch", "dispatcher", "interviewer", "interviewee", "reporter", "guest",
];

/// The writer and their kin, as family chats label them ("me:", "Mom:", "엄마:"): they take turns
/// like anyone, so they count towards a conversation, but they name no one.
#[rustfmt::skip]
const KIN: &[&str] = &[
    "me", "mom", "mum", "mommy", "mummy", "mam", "mama", "dad", "daddy", "papa",
    "grandma", "grandpa", "granny", "gran", "grandad", "nan", "auntie", "aunty", "sis", "bro",
    "babe", "hubby", "wifey", "mamá", "papá", "mãe", "pai", "maman", "mutti", "ammi", "abbu",
    "nanay", "tatay", "엄마", "아빠", "할머니", "할아버지", "누나", "언니", "오빠", "お母さん",
    "お父さん", "母", "父", "妈妈", "爸爸", "妈", "爸", "奶奶", "爷爷",
];

/// What a support chat puts in brackets after a speaker that is a role, not who they work for
/// ("Dev (Support):", "Chloe (MOH):").
#[rustfmt::skip]
const NOT_AFFILIATIONS: &[&str] = &[
    "tech support", "it support", "customer service", "customer care", "sales", "billing",
    "admin", "moh", "host", "team lead", "manager", "mod", "staff", "volunteer", "intern",
    "english", "translated", "translation", "cont", "cont'd", "contd", "edited", "me",
    "whatsapp", "sms", "email", "e-mail", "telegram", "signal", "messenger", "wechat", "viber",
];

/// Who a speaker speaks for, in brackets between their name and the colon ("Kim (PetPal): Hi!",
/// "Dan (PawsAbout Walks): All done", "Anjali (B-304): Noted", "Mamá (Lupita): ok"): the
/// company or flat they speak from, or their own name after a kin word. A role is none ("Paudie
/// (Plumber):", "Bia (PM):", "Katrin (Mama von Emil):"). `v` holds the spans found so far;
/// `is_name(word)` says a word is a given name and no ordinary word, `ordinary(phrase)` that a
/// phrase is ordinary words.
pub fn speaker_affiliations(
    text: &str,
    v: &[Span],
    is_name: impl Fn(&str) -> bool,
    ordinary: impl Fn(&str) -> bool,
) -> Vec<Span> {
    let mut out = Vec::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let at = line_start;
        line_start += line.len();
        let Some(open) = line.find(" (") else {
            continue;
        };
        let rest = &line[open + 2..];
        let Some(close) = rest.find(')').filter(|&c| (2..=40).contains(&c)) else {
            continue;
        };
        let inner = &rest[..close];
        let lower = inner.to_lowercase();
        if !rest[close + 1..].starts_with(": ")
            || !inner.starts_with(|c: char| c.is_uppercase() || c.is_ascii_digit())
            || inner.contains([':', '(', '/'])
            || inner.split(' ').count() > 4
            || NOT_AFFILIATIONS.contains(&lower.as_str())
            || NOT_SPEAKERS.contains(&lower.as_str())
            || ordinary(inner)
            || inner.len() <= 3 && inner.bytes().all(|b| b.is_ascii_uppercase())
            || lower.contains("floor")
            || lower.split(' ').next().is_some_and(|w| KIN.contains(&w))
        {
            continue;
        }
        // The speaker: a name found before the bracket (`v` is sorted and disjoint), or a kin
        // word opening the line.
        let before = at + open;
        let head = line[..open].trim_start();
        let named = v
            .binary_search_by_key(&before, |s| s.end)
            .is_ok_and(|i| canonical_label(&v[i].label).hipaa_class == "A_NAMES");
        let kin = KIN.contains(&head.to_lowercase().as_str());
        if !(named || kin) {
            continue;
        }
        let start = before + 2;
        let label = if is_name(inner) {
            "NAME"
        } else {
            "ORGANIZATION"
        };
        out.push(Span::pattern(
            start,
            start + inner.len(),
            label,
            0.7,
            "speaker_affiliation",
        ));
    }
    out
}

/// Longest label word, in characters.
const MAX_WORD: usize = 20;

/// Speaker labels of `text` as NAME spans (byte offsets, sorted). `ordinary(label)` says a
/// label is an ordinary word or phrase and no given name (a field or a heading, not a person:
/// "Plan" is, "Hope" is not).
pub fn chat_speakers(text: &str, ordinary: impl Fn(&str) -> bool) -> Vec<Span> {
    let mut labels: Vec<(usize, usize)> = Vec::new();
    let mut with_role: Vec<String> = Vec::new();
    // Labels that stood at least once where an ordinary word is no nickname.
    let mut unstamped: Vec<String> = Vec::new();
    let mut initials = false;
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if let Some(l) = label_of(line)
            && (!l.abbreviation || introduced(text, &line[l.start..l.end]))
        {
            labels.push((start + l.start, start + l.end));
            initials |= l.abbreviation;
            if l.role {
                with_role.push(line[l.start..l.end].to_lowercase());
            }
            if !l.nickname(line) {
                unstamped.push(line[l.start..l.end].to_lowercase());
            }
        }
        start += line.len();
    }
    let keys: Vec<String> = labels
        .iter()
        .map(|&(s, e)| text[s..e].to_lowercase())
        .collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for k in &keys {
        *counts.entry(k).or_default() += 1;
    }
    counts.retain(|label, _| {
        !NOT_SPEAKERS.contains(label) && (!ordinary(label) || !unstamped.iter().any(|u| u == label))
    });
    let repeated = counts.values().filter(|&&n| n >= 2).count();
    // The speakers' lines in order: two taking turns over three lines or more ("Kasia: …",
    // "Piotrek: …", "Kasia: …") are a dialogue.
    let kept: Vec<&str> = keys
        .iter()
        .map(String::as_str)
        .filter(|k| counts.contains_key(k))
        .collect();
    let lines = kept.len();
    let turns = counts.len() == 2 && lines >= 3 && kept.windows(2).all(|w| w[0] != w[1]);
    // Two regulars, a dialogue, or a group chat where many speak once and one of them again; or
    // else only a speaker who comes back with a role ("Dev (Support):" beside "Customer:").
    if !(repeated >= 2 || turns || (repeated >= 1 && counts.len() >= 3 && lines >= 4)) {
        counts.retain(|label, n| *n >= 2 && with_role.iter().any(|r| r == label));
    } else if initials {
        // A transcript by initials: its other labels that stand once are its header's fields
        // ("Fecha:", "Podcast:").
        counts.retain(|_, n| *n >= 2);
    }
    counts.retain(|label, _| !KIN.contains(label));
    labels
        .into_iter()
        .zip(&keys)
        .filter(|(_, k)| counts.contains_key(k.as_str()))
        .map(|((s, e), _)| Span::pattern(s, e, "NAME", 0.7, "speaker"))
        .collect()
}

/// A line's label: its byte range, whether a role in parentheses followed it ("Dev (Support):"),
/// whether it is in capitals of four letters or fewer ("CV:", "PMH:", or "DK:", the initials
/// a transcript gave its host), and whether a time stamp stood before it ("[21:15]", "12/03/24,
/// 21:15 - ").
struct Label {
    start: usize,
    end: usize,
    role: bool,
    abbreviation: bool,
    stamped: bool,
}

impl Label {
    /// Whether the label may be a nickname that is an ordinary word: one capitalized word after
    /// a chat's time stamp (a log's keys are in lower case, a role's label has two words).
    fn nickname(&self, line: &str) -> bool {
        let label = &line[self.start..self.end];
        self.stamped && !label.contains(' ') && label.starts_with(char::is_uppercase)
    }
}

/// The label opening `line` (byte range within it): after indentation, a bullet, a quote mark
/// and a `[timestamp]` or `12/03/24, 21:15 - ` prefix, one or two words of letters (and an
/// initial, or a role in parentheses after them), then ':' and text.
fn label_of(line: &str) -> Option<Label> {
    let body = line.trim_start_matches([' ', '\t', '>', '-', '*', '•']);
    let mut at = line.len() - body.len();
    let rest = &line[at..];
    let mut stamped = false;
    if let Some(stripped) = rest.strip_prefix('[') {
        let close = stripped.find(']').filter(|&c| c <= 40)?;
        stamped = stripped[..close].contains(':')
            && stripped[..close].contains(|c: char| c.is_ascii_digit());
        at += 1 + close + 1;
    } else if rest.starts_with(|c: char| c.is_ascii_digit())
        && let Some(dash) = rest.find(" - ").filter(|&d| d <= 30)
        && rest[..dash]
            .chars()
            .all(|c| c.is_ascii_digit() || " /.,:APMapm".contains(c))
    {
        stamped = rest[..dash].contains(':');
        at += dash + 3;
    }
    at += line[at..].len() - line[at..].trim_start_matches([' ', '\t']).len();
    let label_start = at;
    if !stamped && let Some(end) = heading_label(&line[at..]) {
        return Some(Label {
            start: label_start,
            end: label_start + end,
            role: false,
            abbreviation: false,
            // A timetable's rows look the same ("Arrival  10:20"): an ordinary word stays one.
            stamped: false,
        });
    }
    // A time stamp before it says the line is a message: its label may have three words
    // ("[11/03/2025 10:07 م] محمود عبد الفتاح:").
    let most_words = if stamped { 3 } else { 2 };
    let mut words = 0;
    let (label_end, colon, role) = loop {
        at += word_at(&line[at..])?;
        words += 1;
        let next = &line[at..];
        if next.starts_with(':') {
            break (at, at, false);
        }
        // "Tolu B:", "Krzysztof W.:": a surname's initial ends the label.
        if let Some(len) = initial_at(next)
            && line[at + len..].starts_with(':')
        {
            break (at + len, at + len, false);
        }
        // "Dev (Support):": the role in parentheses is no part of the name.
        if let Some(role) = next.strip_prefix(" (")
            && let Some(close) = role.find("):").filter(|&c| (2..=20).contains(&c))
            && role[..close].chars().all(|c| c.is_alphabetic() || c == ' ')
        {
            break (at, at + 2 + close + 1, true);
        }
        if words == most_words || !next.starts_with(' ') {
            return None;
        }
        at += 1;
    };
    let after = &line[colon + 1..];
    if !after.starts_with([' ', '\t']) || after.trim().is_empty() {
        return None;
    }
    let label = &line[label_start..label_end];
    // Three words with an acronym among them are a team, not a person ("SKMCH Oncology Nurse").
    let acronym = |w: &str| {
        let letters: Vec<char> = w.chars().filter(|c| c.is_alphabetic()).collect();
        letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase())
    };
    if words == 3 && label.split(' ').any(acronym) {
        return None;
    }
    // An initial ("Tolu B") is no abbreviation.
    let abbreviation = label.split(' ').any(|w| {
        let n = w.trim_end_matches('.').chars().count();
        (2..=4).contains(&n) && w.chars().all(|c| c.is_uppercase() || !c.is_alphabetic())
    });
    Some(Label {
        start: label_start,
        end: label_end,
        role,
        abbreviation,
        stamped,
    })
}

/// Length of the speaker's name when `rest` is a line that heads a message and holds nothing
/// else: one to three words, then a time stamp, after a comma in brackets as exports from
/// Telegram write it ("Ольга Смирнова, [10.03.2025 18:40]") or after two spaces as WeChat's do
/// ("王芳  2025年3月6日 19:32", "李秀英  19:40").
fn heading_label(rest: &str) -> Option<usize> {
    let mut at = 0;
    for words in 1..=3 {
        at += word_at(&rest[at..])?;
        let next = &rest[at..];
        let stamp = if let Some(b) = next.strip_prefix(", [") {
            b.split_once(']')
                .filter(|(_, after)| after.trim().is_empty())
                .map(|(stamp, _)| stamp)
        } else if next.starts_with("  ") {
            Some(next.trim())
        } else {
            None
        };
        if let Some(stamp) = stamp {
            let is_stamp = stamp.contains(':')
                && stamp.chars().next().is_some_and(|c| c.is_ascii_digit())
                && stamp
                    .chars()
                    .all(|c| c.is_ascii_digit() || " /.,:-年月日APMapm".contains(c));
            return is_stamp.then_some(at);
        }
        if words == 3 || !next.starts_with(' ') {
            return None;
        }
        at += 1;
    }
    None
}

/// Whether `text` introduces `initials` as a person's, after the name they stand for:
/// "Host: Dana Kowalski (DK)".
fn introduced(text: &str, initials: &str) -> bool {
    let marker = format!("({initials})");
    text.match_indices(&marker).any(|(at, _)| {
        let words: Vec<&str> = text[..at]
            .split_whitespace()
            .rev()
            .take(initials.len())
            .collect();
        words.len() == initials.len()
            && words.iter().rev().zip(initials.chars()).all(|(w, c)| {
                w.starts_with(char::is_uppercase)
                    && w.chars()
                        .next()
                        .is_some_and(|f| f.to_uppercase().eq(c.to_uppercase()))
            })
    })
}

/// Length of " B" or " B." opening `s`: a space and one capital, with or without its dot.
fn initial_at(s: &str) -> Option<usize> {
    let rest = s.strip_prefix(' ')?;
    let c = rest.chars().next().filter(|c| c.is_uppercase())?;
    let len = 1 + c.len_utf8();
    Some(len + usize::from(s[len..].starts_with('.')))
}

/// Length of the word opening `s`: a letter, then letters and inner `'’.-`, two to
/// [`MAX_WORD`] characters, not ending in punctuation.
fn word_at(s: &str) -> Option<usize> {
    let mut chars = s.char_indices();
    let (_, first) = chars.next()?;
    if !first.is_alphabetic() {
        return None;
    }
    let end = chars
        .find(|&(_, c)| !(c.is_alphabetic() || "'’.-".contains(c)))
        .map_or(s.len(), |(i, _)| i);
    let word = &s[..end];
    let n = word.chars().count();
    let last = word.chars().last()?;
    ((2..=MAX_WORD).contains(&n) && last.is_alphabetic()).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<&str> {
        let ordinary = |w: &str| {
            [
                "subject", "from", "plan", "mother", "note", "customer", "host", "guest",
            ]
            .contains(&w)
        };
        chat_speakers(text, ordinary)
            .iter()
            .map(|s| &text[s.start..s.end])
            .collect()
    }

    #[test]
    fn message_headings_of_chat_exports_are_speakers() {
        let telegram = "Ольга Смирнова, [10.03.2025 18:40]\nКто знает мастера?\n\n\
                        Ирина, [10.03.2025 18:52]\nЗвони\n\nОльга Смирнова, [10.03.2025 18:55]\n\
                        Спасибо\n\nИрина, [10.03.2025 19:05]\nКлассика.\n";
        assert_eq!(
            found(telegram),
            ["Ольга Смирнова", "Ирина", "Ольга Смирнова", "Ирина"]
        );
        let wechat = "王芳  2025年3月6日 19:32\n李姐，我下周六搬走\n李秀英  19:40\n小王你好\n\
                      王芳  19:42\n好的\n李秀英  19:55\n行\n";
        assert_eq!(found(wechat), ["王芳", "李秀英", "王芳", "李秀英"]);
        // A heading with a date but no time is no message's, nor is a timetable's row.
        let not = "Minutes  12/03/2025\nAgenda\nMinutes  14/03/2025\nAgenda\n";
        assert!(found(not).is_empty());
        let timetable = "Plan  08:15\nFrom  10:20\nPlan  14:00\nFrom  16:05\n";
        assert!(found(timetable).is_empty());
        let arabic = "[11/03/2025 10:05 م] أحمد سعيد: يا محمود\n\
                      [11/03/2025 10:07 م] محمود عبد الفتاح: أيوه\n\
                      [11/03/2025 10:09 م] أحمد سعيد: تمام\n\
                      [11/03/2025 10:12 م] محمود عبد الفتاح: ماشي\n";
        assert_eq!(
            found(arabic),
            [
                "أحمد سعيد",
                "محمود عبد الفتاح",
                "أحمد سعيد",
                "محمود عبد الفتاح"
            ]
        );
    }

    #[test]
    fn labels_that_come_back_are_speakers_listed_or_not() {
        let chat = "Bia: gente o churrasco?\nGuga: sim!! rua Harmonia 312\nBia: levo o que?\n\
                    Guga: cerveja\nDani: pix?\n";
        assert_eq!(found(chat), ["Bia", "Guga", "Bia", "Guga", "Dani"]);
        let lower = "hope: omg\nDrew: left 10 min ago\nhope: keys?\nDrew: lol\n";
        assert_eq!(found(lower), ["hope", "Drew", "hope", "Drew"]);
        let stamped = "[9:15] Maya Patel: hi\n[9:16] Tom: hey\n[9:17] Maya Patel: ok\n\
                       12/03/24, 21:15 - Tom: bye\n";
        assert_eq!(found(stamped), ["Maya Patel", "Tom", "Maya Patel", "Tom"]);
        // A group chat: many speak once, one of them again.
        let group = "Faith: pitch booked 9-11\nRhys: bibs\nAmit: ya\nFaith: rip\n";
        assert_eq!(found(group), ["Faith", "Rhys", "Amit", "Faith"]);
        // Two taking turns.
        let dialogue = "Kasia: mama pyta\nPiotrek: ta\nKasia: super\n";
        assert_eq!(found(dialogue), ["Kasia", "Piotrek", "Kasia"]);
        // The writer and their kin take turns but name no one.
        let family = "Mom: did u call grandma\nKayla: not yet\nMom: call tonite\nme: same\n";
        assert_eq!(found(family), ["Kayla"]);
        // A role after the name stays; an initial is the name's.
        let support = "[10:14] Dev (Support): Hi\n[10:15] Tolu B: hi\n[10:17] Dev (Support): ok\n\
                       [10:19] Tolu B.: thanks\n";
        assert_eq!(found(support), ["Dev", "Tolu B", "Dev", "Tolu B."]);
        // A role comes back beside a desk's label; initials a transcript introduced.
        let desk = "Customer: hi\nDev (Support): hello\nCustomer: ok\nDev (Support): done\n";
        assert_eq!(found(desk), ["Dev", "Dev"]);
        let interview = "Podcast: Big Heart\nHost: Dana Kowalski (DK)\nDK: welcome\nTM: thanks\n\
                         DK: so\nTM: well\nGuest: Tran Thi Mai (TM)\n";
        assert_eq!(found(interview), ["DK", "TM", "DK", "TM"]);
        // After a chat's time stamp an ordinary word is a nickname; without it, a field; a
        // role and a log's key in lower case stay.
        let nick = "[09/05/24 21:15] Note: sí\n[09/05/24 21:17] Plan: yo llego\n\
                    [09/05/24 21:20] Subject: hecho\n[09/05/24 21:21] Plan: vale\n";
        assert_eq!(found(nick), ["Plan", "Subject", "Plan"]);
        let call = "[00:04] Customer: hi\n[00:09] Caller: hi\n[00:14] Customer: ok\n\
                    [00:17] Caller: ok\n";
        assert!(found(call).is_empty());
        let log = "[06:00:03] from: up\n[06:00:04] plan: up\n[06:00:05] from: down\n\
                   [06:00:06] plan: down\n";
        assert!(found(log).is_empty());
        let mixed = "[21:15] Plan: a\nJo: b\nPlan: c\nJo: d\nAna: e\nAna: f\n";
        assert_eq!(found(mixed), ["Jo", "Jo", "Ana", "Ana"]);
    }

    #[test]
    fn fields_headings_and_single_mentions_are_not() {
        // One recurring label is not a conversation unless two take turns, nor three labels on
        // three lines.
        assert!(found("Marcus: I told you\nJo: ok\nJo: fine\n").is_empty());
        assert!(found("Ana: a\nLeo: b\nAna: c\nJo: d\nJo: e\n").len() == 5);
        assert!(found("Marcus: a\nJo: b\nLeo: c\n").is_empty());
        // Fields and headings repeat in forms and notes.
        let note = "Plan: rest\nCV: RRR\nPlan: fluids\nCV: no murmur\nHPI: cough\nHPI: fever\n";
        assert!(found(note).is_empty());
        // An abbreviation a note spells out is no one's initials.
        let ckd =
            "Chronic kidney disease (CKD)\nCKD: stage 3\nAKI: no\nCKD: stable\nAKI: resolved\n";
        assert!(found(ckd).is_empty());
        let mail = "From: a\nSubject: b\nFrom: c\nSubject: d\n";
        assert!(found(mail).is_empty());
        // A time and a URL are not labels; a label needs text after it.
        assert!(found("Call at 10:30: ok\nhttps://x.org\nAna:\nAna:\nLeo:\nLeo:\n").is_empty());
    }

    #[test]
    fn who_a_speaker_speaks_for_is_theirs_but_a_role_is_not() {
        let text = "Kim (PetPal): Hi! Happy to help.\nMon 08:15 – Dan (PawsAbout Walks): Morning\n\
                    Mamá (Lupita): ok mijo\nPaudie (Plumber): All done\nBia (PM): lembrar\n\
                    Katrin (Mama von Emil): Guten Morgen\nJo (WhatsApp): sent\n\
                    Customer (Putri W.): hi\n";
        let v: Vec<Span> = ["Kim", "Dan", "Paudie", "Bia", "Katrin", "Jo"]
            .iter()
            .map(|w| Span::model_at(text, w, "NAME"))
            .collect();
        let spans = speaker_affiliations(
            text,
            &v,
            |w| w == "Lupita",
            |p| ["Plumber", "Customer"].contains(&p),
        );
        let got: Vec<(&str, &str)> = spans
            .iter()
            .map(|s| (&text[s.start..s.end], s.label.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("PetPal", "ORGANIZATION"),
                ("PawsAbout Walks", "ORGANIZATION"),
                ("Lupita", "NAME")
            ]
        );
    }
}
