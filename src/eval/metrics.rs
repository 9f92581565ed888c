//! Character-level scoring of de-identifier output against gold spans, plus
//! a leak check on the de-identified text.
//!
//! Scoring is per character rather than per token so that numbers do not
//! depend on any tokenizer, and per-note coverage bitmaps make each character
//! count once however many predictions overlap it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::generator::{GoldSpan, Note};
use super::{CLASSES, class_for_label};

/// One detector span. Offsets are code points into the ORIGINAL note text.
/// `redacted == false` means the policy found it but deliberately kept it
/// (e.g. an age ≤ 89): it still counts for recall, but does not hide text.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Predicted {
    pub start: usize,
    pub end: usize,
    pub label: String,
    pub class: String,
    pub redacted: bool,
    /// Where its replacement stands in the output (code points), when the service says: a gold
    /// value found there is a surrogate that happens to equal it, not a leak, unless this span's
    /// original held the value.
    #[serde(default)]
    pub output: Option<(usize, usize)>,
}

/// A gold identifier that survived into the output. Carries offsets, never
/// text, so reports can be shared without re-leaking it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Leak {
    pub note_id: String,
    pub label: String,
    pub start: usize,
    pub end: usize,
}

/// Scores for one class (or overall). Ratios are `None` when undefined
/// (nothing gold / nothing predicted), which prints as "n/a", never NaN.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ClassRow {
    pub class: String,
    pub gold_chars: usize,
    pub predicted_chars: usize,
    pub recall: Option<f64>,
    pub precision: Option<f64>,
    pub entity_recall: Option<f64>,
    pub gold_entities: usize,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Report {
    /// One row per Safe Harbor class, A…R.
    pub classes: Vec<ClassRow>,
    pub overall: ClassRow,
    pub leak_count: usize,
    pub leaks: Vec<Leak>,
    /// Whole gold identifiers of 4+ characters found verbatim (word-bounded, case-sensitive) in
    /// the output more often than the original has them outside every identifier: the leak
    /// the third-party floors are set on.
    pub whole_leaks: usize,
    /// `whole_leaks` by Safe Harbor class, classes without any left out: where to look next on a
    /// set whose text may not be shown.
    #[serde(default)]
    pub whole_leaks_by_class: BTreeMap<String, usize>,
    /// Notes with no gold identifier (hard negatives), and how many of them lost any text.
    pub clean_notes: usize,
    pub clean_notes_redacted: usize,
}

/// Spans whose class is neither canonical nor derivable from the label land
/// here: they count in the overall row only.
const UNKNOWN: usize = CLASSES.len();
const BUCKETS: usize = CLASSES.len() + 1;

#[derive(Clone, Copy, Default)]
struct Tally {
    gold: usize,
    gold_hit: usize,
    pred: usize,
    pred_hit: usize,
    ents: usize,
    ents_found: usize,
}

fn ratio(num: usize, den: usize) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

impl Tally {
    fn row(&self, class: &str) -> ClassRow {
        ClassRow {
            class: class.to_string(),
            gold_chars: self.gold,
            predicted_chars: self.pred,
            recall: ratio(self.gold_hit, self.gold),
            precision: ratio(self.pred_hit, self.pred),
            entity_recall: ratio(self.ents_found, self.ents),
            gold_entities: self.ents,
        }
    }
}

/// Scores `outputs[i]` (predictions, de-identified text) against `notes[i]`.
///
/// A note with no output entry is scored as if the detector found nothing and
/// returned the text unchanged, so a short output list can only make the
/// numbers worse, never hide leaks.
pub fn evaluate(notes: &[Note], outputs: &[(Vec<Predicted>, String)]) -> Report {
    let mut tallies = [Tally::default(); BUCKETS];
    let mut overall = Tally::default();
    let mut leaks = Vec::new();
    let mut whole_leaks = [0usize; BUCKETS];
    let (mut clean_notes, mut clean_notes_redacted) = (0, 0);
    for (i, note) in notes.iter().enumerate() {
        let (preds, out): (&[Predicted], &str) = match outputs.get(i) {
            Some((p, o)) => (p.as_slice(), o.as_str()),
            None => (&[], note.text.as_str()),
        };
        let note_leaks = score_note(note, preds, out, &mut tallies, &mut overall, &mut leaks);
        for (total, n) in whole_leaks.iter_mut().zip(note_leaks) {
            *total += n;
        }
        if note.spans.is_empty() {
            clean_notes += 1;
            clean_notes_redacted += usize::from(preds.iter().any(|p| p.redacted));
        }
    }
    let classes = CLASSES
        .iter()
        .zip(tallies.iter())
        .map(|(c, t)| t.row(c))
        .collect();
    Report {
        classes,
        overall: overall.row("OVERALL"),
        leak_count: leaks.len(),
        leaks,
        whole_leaks: whole_leaks.iter().sum(),
        whole_leaks_by_class: CLASSES
            .iter()
            .map(|c| c.to_string())
            .chain(["UNCLASSIFIED".to_string()])
            .zip(whole_leaks)
            .filter(|(_, n)| *n > 0)
            .collect(),
        clean_notes,
        clean_notes_redacted,
    }
}

fn class_index(class: &str, label: &str) -> usize {
    CLASSES
        .iter()
        .position(|c| *c == class)
        .or_else(|| class_for_label(label).and_then(|c| CLASSES.iter().position(|x| *x == c)))
        .unwrap_or(UNKNOWN)
}

/// Clamps a span to the text; `None` if nothing of it remains.
fn clamp(start: usize, end: usize, len: usize) -> Option<(usize, usize)> {
    let end = end.min(len);
    (start < end).then_some((start, end))
}

/// A gold span clamped to its note, with its class bucket.
struct Gold<'a> {
    start: usize,
    end: usize,
    bucket: usize,
    span: &'a GoldSpan,
}

fn score_note(
    note: &Note,
    preds: &[Predicted],
    out: &str,
    tallies: &mut [Tally; BUCKETS],
    overall: &mut Tally,
    leaks: &mut Vec<Leak>,
) -> [usize; BUCKETS] {
    let chars: Vec<char> = note.text.chars().collect();
    let n = chars.len();
    let gold: Vec<Gold> = note
        .spans
        .iter()
        .filter_map(|s| {
            clamp(s.start, s.end, n).map(|(start, end)| Gold {
                start,
                end,
                bucket: class_index(&s.class, &s.label),
                span: s,
            })
        })
        .collect();

    let mut gold_mask = vec![0u32; n];
    for g in &gold {
        for m in &mut gold_mask[g.start..g.end] {
            *m |= 1 << g.bucket;
        }
    }
    let mut pred_mask = vec![0u32; n];
    let mut covered = vec![false; n];
    let mut redacted = vec![false; n];
    for p in preds {
        let Some((a, b)) = clamp(p.start, p.end, n) else {
            continue;
        };
        let bit = 1u32 << class_index(&p.class, &p.label);
        for ((m, c), r) in pred_mask[a..b]
            .iter_mut()
            .zip(&mut covered[a..b])
            .zip(&mut redacted[a..b])
        {
            // Precision is about what was removed: a finding the policy kept (a state, an age
            // up to 89) hides nothing and so is never a false removal.
            if p.redacted {
                *m |= bit;
            }
            *c = true;
            *r |= p.redacted;
        }
    }

    for (((&g, &p), &cov), &red) in gold_mask
        .iter()
        .zip(&pred_mask)
        .zip(&covered)
        .zip(&redacted)
    {
        for (c, t) in tallies.iter_mut().enumerate() {
            let bit = 1u32 << c;
            if g & bit != 0 {
                t.gold += 1;
                t.gold_hit += usize::from(cov);
            }
            if p & bit != 0 {
                t.pred += 1;
                t.pred_hit += usize::from(g != 0);
            }
        }
        if g != 0 {
            overall.gold += 1;
            overall.gold_hit += usize::from(cov);
        }
        if red {
            overall.pred += 1;
            overall.pred_hit += usize::from(g != 0);
        }
    }

    for g in &gold {
        let found = covered[g.start..g.end].iter().all(|&c| c);
        for t in [&mut tallies[g.bucket], &mut *overall] {
            t.ents += 1;
            t.ents_found += usize::from(found);
        }
    }

    leaks.extend(note_leaks(note, &chars, &gold, &gold_mask, &redacted, out));
    whole_leaks(&chars, &gold, &gold_mask, &redacted, preds, out)
}

/// Whole gold values of at least 4 characters that survive verbatim in `out`, by class bucket
/// (a value's first gold span's): occurrences in the output beyond those the original had
/// outside every gold span and redacted prediction. An occurrence inside a replacement whose
/// original did not hold the value is a surrogate collision ("Lewis" drawn for another name),
/// not a leak.
fn whole_leaks(
    chars: &[char],
    gold: &[Gold],
    gold_mask: &[u32],
    redacted: &[bool],
    preds: &[Predicted],
    out: &str,
) -> [usize; BUCKETS] {
    let out: Vec<char> = out.chars().collect();
    let collision = |value: &[char], pos: usize| {
        preds.iter().any(|p| {
            p.output
                .is_some_and(|(os, oe)| os <= pos && pos + value.len() <= oe)
                && chars
                    .get(p.start..p.end)
                    .is_none_or(|original| count_bounded(original, value, |_| true) == 0)
        })
    };
    let mut values: BTreeMap<&[char], (usize, usize)> = BTreeMap::new();
    for g in gold {
        let value = &chars[g.start..g.end];
        if value.len() >= 4 && !exempt(&g.span.label, value) {
            values.entry(value).or_insert((0, g.bucket)).0 += 1;
        }
    }
    let mut by_bucket = [0; BUCKETS];
    for (value, (members, bucket)) in values {
        let survived = count_bounded(&out, value, |pos| !collision(value, pos));
        let expected = count_bounded(chars, value, |pos| {
            (pos..pos + value.len()).all(|i| gold_mask[i] == 0 && !redacted[i])
        });
        by_bucket[bucket] += survived.saturating_sub(expected).min(members);
    }
    by_bucket
}

/// Safe Harbor lets ages up to 89, years and clock times stand; STATE and COUNTRY are never
/// identifiers.
fn exempt(label: &str, value: &[char]) -> bool {
    match label {
        "STATE" | "COUNTRY" | "TIME" => true,
        "DATE" => value.len() == 4 && value.iter().all(char::is_ascii_digit),
        "AGE" => {
            let digits: String = value.iter().filter(|c| c.is_ascii_digit()).collect();
            digits.len() == value.len() && digits.parse::<u32>().is_ok_and(|a| a <= 89)
        }
        _ => false,
    }
}

/// Case fold that keeps one char per char, so positions stay aligned.
fn fold_case(c: char) -> char {
    let mut l = c.to_lowercase();
    match (l.next(), l.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

/// Occurrences of `needle` in `hay` that are not glued to a neighbouring
/// letter or digit ("An" must not match inside "Anterior"), filtered by
/// `accept(position)`.
fn count_bounded(hay: &[char], needle: &[char], accept: impl Fn(usize) -> bool) -> usize {
    let (Some(first), Some(last)) = (needle.first(), needle.last()) else {
        return 0;
    };
    let free = |c: Option<&char>| c.is_none_or(|c| !c.is_alphanumeric());
    hay.windows(needle.len())
        .enumerate()
        .filter(|(pos, w)| {
            *w == needle
                && (!first.is_alphanumeric() || free(pos.checked_sub(1).and_then(|p| hay.get(p))))
                && (!last.is_alphanumeric() || free(hay.get(pos + needle.len())))
                && accept(*pos)
        })
        .count()
}

fn count_sub(hay: &[char], needle: &[char]) -> usize {
    if needle.is_empty() {
        return 0;
    }
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// A gold value leaks when it survives in the output: its text (case
/// insensitive, at word boundaries) or, for values with ≥ 5 digits, its digit
/// string in the output's digits-only projection.
///
/// Short values such as an age "92" or a first name "An" also occur in
/// ordinary text ("SpO2 92%", "an"), so survivors are counted against the
/// occurrences the original already had outside every gold span and every
/// redacted prediction; only the excess is leaked. Within a group of gold
/// spans sharing a value, the excess is charged first to spans that were not
/// fully redacted.
fn note_leaks(
    note: &Note,
    chars: &[char],
    gold: &[Gold],
    gold_mask: &[u32],
    redacted: &[bool],
    out: &str,
) -> Vec<Leak> {
    let quiet: Vec<bool> = gold_mask
        .iter()
        .zip(redacted)
        .map(|(&g, &r)| g == 0 && !r)
        .collect();
    let orig_folded: Vec<char> = chars.iter().map(|&c| fold_case(c)).collect();
    let out_folded: Vec<char> = out.chars().map(fold_case).collect();
    let out_digits: Vec<char> = out.chars().filter(char::is_ascii_digit).collect();
    let quiet_digits: Vec<char> = chars
        .iter()
        .zip(&quiet)
        .filter(|(c, q)| **q && c.is_ascii_digit())
        .map(|(c, _)| *c)
        .collect();

    let mut by_text: BTreeMap<Vec<char>, Vec<usize>> = BTreeMap::new();
    let mut by_digits: BTreeMap<Vec<char>, Vec<usize>> = BTreeMap::new();
    for (i, g) in gold.iter().enumerate() {
        let value = &chars[g.start..g.end];
        if exempt(&g.span.label, value) {
            continue;
        }
        let key: Vec<char> = value.iter().map(|&c| fold_case(c)).collect();
        if key.iter().any(|c| !c.is_whitespace()) {
            by_text.entry(key).or_default().push(i);
        }
        let digits: Vec<char> = value.iter().copied().filter(char::is_ascii_digit).collect();
        if digits.len() >= 5 {
            by_digits.entry(digits).or_default().push(i);
        }
    }

    let mut leaked = vec![false; gold.len()];
    let mut charge = |members: &[usize], excess: usize| {
        let mut order = members.to_vec();
        order.sort_by_key(|&i| {
            let g = &gold[i];
            (redacted[g.start..g.end].iter().all(|&r| r), g.start)
        });
        for &i in order.iter().take(excess) {
            leaked[i] = true;
        }
    };
    for (key, members) in &by_text {
        let survived = count_bounded(&out_folded, key, |_| true);
        let expected = count_bounded(&orig_folded, key, |pos| {
            quiet[pos..pos + key.len()].iter().all(|&q| q)
        });
        charge(members, survived.saturating_sub(expected));
    }
    for (key, members) in &by_digits {
        let survived = count_sub(&out_digits, key);
        let expected = count_sub(&quiet_digits, key);
        charge(members, survived.saturating_sub(expected));
    }

    let mut found: Vec<Leak> = gold
        .iter()
        .zip(&leaked)
        .filter(|(_, l)| **l)
        .map(|(g, _)| Leak {
            note_id: note.id.clone(),
            label: g.span.label.clone(),
            start: g.start,
            end: g.end,
        })
        .collect();
    found.sort_by_key(|l| (l.start, l.end));
    found
}

/// One line per gold span not wholly covered (MISS), per prediction wholly outside gold (FALSE)
/// and per prediction running past its gold span (OVER), with the text around it: for studying a set's errors. It prints the set's text, so `phiflow eval`
/// offers it only for sets marked as tuned on (never for a held-out half).
pub fn error_lines(notes: &[Note], outputs: &[(Vec<Predicted>, String)]) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, note) in notes.iter().enumerate() {
        let chars: Vec<char> = note.text.chars().collect();
        let n = chars.len();
        let preds: &[Predicted] = outputs.get(i).map_or(&[], |(p, _)| p.as_slice());
        let mut covered = vec![false; n];
        for p in preds {
            if let Some((a, b)) = clamp(p.start, p.end, n) {
                covered[a..b].iter_mut().for_each(|c| *c = true);
            }
        }
        let mut gold = vec![false; n];
        for g in &note.spans {
            if let Some((a, b)) = clamp(g.start, g.end, n) {
                gold[a..b].iter_mut().for_each(|c| *c = true);
                if !covered[a..b].iter().all(|&c| c) {
                    let shown: String = chars[a..b]
                        .iter()
                        .zip(&covered[a..b])
                        .map(|(&c, &cov)| if cov { '_' } else { c })
                        .collect();
                    lines.push(format!(
                        "{} MISS {} [{}] in: {}",
                        note.id,
                        g.label,
                        shown,
                        window(&chars, a, b)
                    ));
                }
            }
        }
        for p in preds {
            let Some((a, b)) = clamp(p.start, p.end, n) else {
                continue;
            };
            if p.redacted && !gold[a..b].iter().all(|&g| g) {
                let whole = gold[a..b].iter().all(|&g| !g);
                // Characters outside gold shown, gold ones as '_'.
                let value: String = chars[a..b]
                    .iter()
                    .zip(&gold[a..b])
                    .map(|(&c, &g)| if g && !whole { '_' } else { c })
                    .collect();
                lines.push(format!(
                    "{} {} {} [{}] in: {}",
                    note.id,
                    if whole { "FALSE" } else { "OVER" },
                    p.label,
                    value,
                    window(&chars, a, b)
                ));
            }
        }
    }
    lines
}

fn window(chars: &[char], a: usize, b: usize) -> String {
    let from = a.saturating_sub(50);
    let to = (b + 30).min(chars.len());
    chars[from..to]
        .iter()
        .map(|&c| if c == '\n' { ' ' } else { c })
        .collect()
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".to_string(), |v| format!("{:.2}%", v * 100.0))
}

const HEADER: [&str; 6] = [
    "class",
    "gold_chars",
    "recall",
    "precision",
    "entity_recall",
    "gold_entities",
];

impl Report {
    fn cells(&self) -> Vec<[String; 6]> {
        self.classes
            .iter()
            .chain(std::iter::once(&self.overall))
            .map(|r| {
                [
                    r.class.clone(),
                    r.gold_chars.to_string(),
                    pct(r.recall),
                    pct(r.precision),
                    pct(r.entity_recall),
                    r.gold_entities.to_string(),
                ]
            })
            .collect()
    }

    /// Aligned plain-text table: one row per class A…R, OVERALL, then leaks.
    pub fn table(&self) -> String {
        let mut rows = vec![HEADER.map(String::from)];
        rows.extend(self.cells());
        let mut widths = [0usize; 6];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for (i, row) in rows.iter().enumerate() {
            let mut line = String::new();
            for (k, (cell, w)) in row.iter().zip(widths).enumerate() {
                if k == 0 {
                    line.push_str(&format!("{cell:<w$}"));
                } else {
                    line.push_str(&format!("  {cell:>w$}"));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
            if i == 0 {
                let total = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
                out.push_str(&"-".repeat(total));
                out.push('\n');
            }
        }
        out.push_str(&self.footer());
        out
    }

    /// Leak counts and the hard negatives' fate, one line each.
    fn footer(&self) -> String {
        let by_class = if self.whole_leaks_by_class.is_empty() {
            String::new()
        } else {
            let parts: Vec<String> = self
                .whole_leaks_by_class
                .iter()
                .map(|(c, n)| format!("{c} {n}"))
                .collect();
            format!(" ({})", parts.join(", "))
        };
        format!(
            "leaks: {}\nwhole-identifier leaks (4+ chars, verbatim): {}{by_class}\nnotes without identifiers: {}, of which redacted: {}\n",
            self.leak_count, self.whole_leaks, self.clean_notes, self.clean_notes_redacted
        )
    }

    /// The same content as [`Report::table`], as a Markdown table.
    pub fn markdown(&self) -> String {
        let mut out = format!("| {} |\n", HEADER.join(" | "));
        out.push_str("|:--|--:|--:|--:|--:|--:|\n");
        for row in self.cells() {
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        out.push('\n');
        out.push_str(&self.footer().replace('\n', "  \n"));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(text: &str, needle: &str) -> (usize, usize) {
        let b = text.find(needle).expect("needle present");
        let s = text[..b].chars().count();
        (s, s + needle.chars().count())
    }

    fn gold(text: &str, needle: &str, label: &str) -> GoldSpan {
        let (start, end) = cp(text, needle);
        GoldSpan {
            start,
            end,
            label: label.to_string(),
            class: class_for_label(label).unwrap_or("?").to_string(),
        }
    }

    fn pred(start: usize, end: usize, label: &str, redacted: bool) -> Predicted {
        Predicted {
            start,
            end,
            label: label.to_string(),
            class: class_for_label(label).unwrap_or("?").to_string(),
            redacted,
            output: None,
        }
    }

    fn note(id: &str, text: &str, spans: Vec<GoldSpan>) -> Note {
        Note {
            id: id.to_string(),
            kind: "test".to_string(),
            text: text.to_string(),
            spans,
        }
    }

    fn row<'a>(r: &'a Report, class: &str) -> &'a ClassRow {
        r.classes
            .iter()
            .find(|c| c.class == class)
            .expect("class row")
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    #[test]
    fn multibyte_prefix_partial_hit_and_false_positive() {
        let text = "Café: José Muñoz, MRN 4829173. Zoë saw him.";
        let n = note(
            "n1",
            text,
            vec![
                gold(text, "José Muñoz", "NAME"),
                gold(text, "4829173", "MEDICAL_RECORD_NUMBER"),
            ],
        );
        // Code points, not bytes: "Café: " is 6 code points but 7 bytes.
        assert_eq!(n.spans[0].start, 6);
        let (ns, ne) = cp(text, "José Muñoz");
        let (ms, _) = cp(text, "4829173");
        let preds = vec![
            pred(ns, ne, "NAME", true),
            pred(ms, ms + 5, "MEDICAL_RECORD_NUMBER", true),
            pred(0, 4, "NAME", true), // "Café": outside gold
        ];
        let out = "[NAME]: [NAME], MRN [MRN]73. Zoë saw him.".to_string();
        let r = evaluate(&[n], &[(preds, out)]);
        let a = row(&r, "A_NAMES");
        assert_eq!((a.gold_chars, a.predicted_chars), (10, 14));
        assert!(close(a.recall, 1.0));
        assert!(close(a.precision, 10.0 / 14.0));
        assert!(close(a.entity_recall, 1.0));
        let h = row(&r, "H_MEDICAL_RECORD");
        assert_eq!(h.gold_chars, 7);
        assert!(close(h.recall, 5.0 / 7.0));
        assert!(close(h.precision, 1.0));
        assert!(close(h.entity_recall, 0.0));
        assert!(close(r.overall.recall, 15.0 / 17.0));
        assert!(close(r.overall.precision, 15.0 / 19.0));
        assert!(close(r.overall.entity_recall, 0.5));
        assert_eq!(r.overall.gold_entities, 2);
        assert_eq!(r.leak_count, 0);
        assert_eq!(row(&r, "G_SSN").precision, None);
        assert_eq!(row(&r, "G_SSN").recall, None);
    }

    #[test]
    fn overlapping_predictions_count_each_char_once() {
        let text = "Seen by Dr. Smith today.";
        let n = note("n2", text, vec![gold(text, "Smith", "LAST_NAME")]);
        let (s, e) = cp(text, "Smith");
        let preds = vec![
            pred(s, s + 3, "NAME", true),
            pred(s + 1, e, "LAST_NAME", true),
            pred(s, e, "NAME", true),
        ];
        let r = evaluate(&[n], &[(preds, "Seen by Dr. [X] today.".into())]);
        let a = row(&r, "A_NAMES");
        assert_eq!((a.gold_chars, a.predicted_chars), (5, 5));
        assert!(close(a.recall, 1.0) && close(a.precision, 1.0));
        assert_eq!(r.overall.predicted_chars, 5);
        assert_eq!(r.leak_count, 0);
    }

    #[test]
    fn a_kept_finding_is_no_false_removal() {
        let text = "Ann Lee moved to Ohio at 45.";
        let n = note(
            "k1",
            text,
            vec![gold(text, "Ann Lee", "NAME"), gold(text, "45", "AGE")],
        );
        let (ns, ne) = cp(text, "Ann Lee");
        let (os, oe) = cp(text, "Ohio");
        let (a, b) = cp(text, "45");
        let preds = vec![
            pred(ns, ne, "NAME", true),
            pred(os, oe, "STATE", false),
            pred(a, b, "AGE", false),
        ];
        let r = evaluate(&[n], &[(preds, "[NAME] moved to Ohio at 45.".into())]);
        assert!(close(r.overall.recall, 1.0));
        assert!(close(r.overall.precision, 1.0));
        assert_eq!(r.overall.predicted_chars, 7);
    }

    #[test]
    fn prediction_of_wrong_class_still_covers_but_scores_own_class() {
        let text = "Call 617-555-0143 now.";
        let n = note("n3", text, vec![gold(text, "617-555-0143", "PHONE")]);
        let (s, e) = cp(text, "617-555-0143");
        let r = evaluate(
            &[n],
            &[(vec![pred(s, e, "FAX", true)], "Call [FAX] now.".into())],
        );
        assert!(close(row(&r, "D_TELEPHONE").recall, 1.0));
        assert_eq!(row(&r, "D_TELEPHONE").precision, None);
        // FAX-class characters all fall inside some gold span.
        assert!(close(row(&r, "E_FAX").precision, 1.0));
        assert_eq!(row(&r, "E_FAX").recall, None);
    }

    #[test]
    fn whole_leaks_count_verbatim_survivors_of_four_chars_or_more() {
        let text = "Ann Lee, MRN 998877, seen 2023. Ann Lee again; Paris.";
        let n = note(
            "w1",
            text,
            vec![
                gold(text, "Ann Lee", "NAME"),
                gold(text, "998877", "MEDICAL_RECORD_NUMBER"),
            ],
        );
        let (a, b) = cp(text, "Ann Lee");
        let clean = note("w2", "ACE inhibitors in CKD?", vec![]);
        // The first "Ann Lee" masked, the second (not gold here) survives; the MRN survives
        // with its digits spaced (a digit leak, not a verbatim one).
        let out = "[NAME], MRN 998 877, seen 2023. Ann Lee again; Paris.".to_string();
        let r = evaluate(
            &[n, clean],
            &[
                (vec![pred(a, b, "NAME", true)], out),
                (
                    vec![pred(0, 3, "OTHER_IDENTIFIER", true)],
                    "[X] inhibitors in CKD?".into(),
                ),
            ],
        );
        assert_eq!(
            r.whole_leaks, 0,
            "the surviving copy was outside every gold span"
        );
        assert_eq!(r.leak_count, 1, "{:?}", r.leaks);
        assert_eq!((r.clean_notes, r.clean_notes_redacted), (1, 1));
        let n = note(
            "w3",
            text,
            vec![gold(text, "998877", "MEDICAL_RECORD_NUMBER")],
        );
        let r = evaluate(&[n], &[(vec![], text.to_string())]);
        assert_eq!(r.whole_leaks, 1);
        assert_eq!(
            r.whole_leaks_by_class,
            BTreeMap::from([("H_MEDICAL_RECORD".to_string(), 1)])
        );
        assert!(
            r.table()
                .contains("whole-identifier leaks (4+ chars, verbatim): 1 (H_MEDICAL_RECORD 1)")
        );
    }

    #[test]
    fn a_surrogate_equal_to_another_value_is_no_leak_but_a_kept_original_is() {
        let text = "Seen by Ann Lee with Tom Lewis.";
        let spans = || {
            vec![
                gold(text, "Ann Lee", "NAME"),
                gold(text, "Tom Lewis", "NAME"),
            ]
        };
        let (a, b) = cp(text, "Ann Lee");
        let (c, d) = cp(text, "Tom Lewis");
        let replaced = |first: (usize, usize), second: (usize, usize)| {
            vec![
                Predicted {
                    output: Some(first),
                    ..pred(a, b, "NAME", true)
                },
                Predicted {
                    output: Some(second),
                    ..pred(c, d, "NAME", true)
                },
            ]
        };
        // "Ann Lee" drawn as the surrogate for "Tom Lewis": a collision.
        let out = "Seen by Tom Lewis with Ann Lee.";
        let r = evaluate(
            &[note("s1", text, spans())],
            &[(
                replaced(cp(out, "Tom Lewis"), cp(out, "Ann Lee")),
                out.to_string(),
            )],
        );
        assert_eq!(
            r.whole_leaks, 0,
            "both values sit in the other's replacement"
        );
        // A replacement that kept its own original ("Tom Lewis" inside "Dr Tom Lewis Jr") leaks.
        let out = "Seen by Bo Ek with Dr Tom Lewis Jr.";
        let r = evaluate(
            &[note("s2", text, spans())],
            &[(
                replaced(cp(out, "Bo Ek"), cp(out, "Dr Tom Lewis Jr")),
                out.to_string(),
            )],
        );
        assert_eq!(r.whole_leaks, 1);
    }

    #[test]
    fn digit_projection_leak_reports_offsets_not_text() {
        let text = "Guarantor SSN 123-45-6789 on file.";
        let n = note("n4", text, vec![gold(text, "123-45-6789", "SSN")]);
        let out = "Guarantor SSN 123 45 6789 on file.".to_string();
        let r = evaluate(&[n], &[(vec![], out)]);
        assert_eq!(r.leak_count, 1);
        let (s, e) = cp(text, "123-45-6789");
        assert_eq!(
            r.leaks,
            vec![Leak {
                note_id: "n4".into(),
                label: "SSN".into(),
                start: s,
                end: e
            }]
        );
        assert!(close(row(&r, "G_SSN").recall, 0.0));
    }

    #[test]
    fn case_insensitive_text_leak() {
        let text = "Patient José Muñoz seen.";
        let n = note("n5", text, vec![gold(text, "José Muñoz", "NAME")]);
        let r = evaluate(&[n], &[(vec![], "PATIENT JOSÉ MUÑOZ SEEN.".into())]);
        assert_eq!(r.leak_count, 1);
    }

    #[test]
    fn age_89_is_exempt_age_90_leaks_and_background_numbers_do_not() {
        let text = "Pt is 89 yo; wife aged 90. SpO2 92%; father age 92.";
        let spans = vec![
            gold(text, "89", "AGE"),
            gold(text, "90", "AGE"),
            gold(text, "age 92", "AGE"),
        ];
        // Gold is the number only.
        let (s92, _) = cp(text, "age 92");
        let mut spans = spans;
        spans[2].start = s92 + 4;
        let n = note("n6", text, spans);
        let (s89, e89) = cp(text, "89");
        let kept = vec![pred(s89, e89, "AGE", false)];

        // Nothing redacted: 89 is allowed, 90 and the father's 92 leak; the
        // "92" in "SpO2 92%" was already there and is not blamed.
        let r = evaluate(
            std::slice::from_ref(&n),
            &[(kept.clone(), text.to_string())],
        );
        assert_eq!(r.leak_count, 2, "{:?}", r.leaks);
        assert_eq!(r.leaks[0].start, cp(text, "90").0);
        assert_eq!(r.leaks[1].start, s92 + 4);
        assert!(close(row(&r, "C_DATES").recall, 2.0 / 6.0));

        // Father's age redacted, wife's 90 kept: exactly one leak.
        let (s90, e90) = cp(text, "90");
        let mut preds = kept;
        preds.push(pred(s92 + 4, s92 + 6, "AGE", true));
        preds.push(pred(s90, e90, "AGE", false));
        let out = "Pt is 89 yo; wife aged 90. SpO2 92%; father age [AGE].".to_string();
        let r = evaluate(&[n], &[(preds, out)]);
        assert_eq!(r.leak_count, 1);
        assert_eq!(r.leaks[0].start, s90);
        assert!(close(row(&r, "C_DATES").recall, 1.0));
    }

    #[test]
    fn short_name_does_not_match_inside_words_or_ordinary_text() {
        let text = "Nguyễn Văn An is an engineer with anterior chest pain.";
        let (s, e) = cp(text, "An is");
        let spans = vec![
            gold(text, "Nguyễn", "LAST_NAME"),
            gold(text, "Văn", "FIRST_NAME"),
            GoldSpan {
                start: s,
                end: e - 3,
                label: "FIRST_NAME".into(),
                class: "A_NAMES".into(),
            },
        ];
        let n = note("n7", text, spans);
        let out = "[NAME] is an engineer with anterior chest pain.".to_string();
        let (a, _) = cp(text, "Nguyễn");
        let r = evaluate(
            std::slice::from_ref(&n),
            &[(vec![pred(a, s + 2, "NAME", true)], out)],
        );
        assert_eq!(r.leak_count, 0, "{:?}", r.leaks);
        let r = evaluate(&[n], &[(vec![], text.to_string())]);
        assert_eq!(r.leak_count, 3);
    }

    #[test]
    fn missing_outputs_and_bad_offsets_never_panic() {
        let text = "MRN 4829173, seen 03/15/2021.";
        let notes = vec![
            note(
                "a",
                text,
                vec![gold(text, "4829173", "MEDICAL_RECORD_NUMBER")],
            ),
            note("b", text, vec![gold(text, "03/15/2021", "DATE")]),
        ];
        let weird = vec![
            pred(500, 900, "NAME", true),
            pred(9, 3, "NAME", true),
            pred(4, 10_000, "SSN", true),
            pred(0, 0, "??", true),
        ];
        // Second note has no output: scored as unchanged text, so it leaks.
        let r = evaluate(&notes, &[(weird, String::new())]);
        assert_eq!(r.leak_count, 1);
        assert_eq!(r.leaks[0].note_id, "b");
        assert!(close(row(&r, "H_MEDICAL_RECORD").recall, 1.0));
        assert!(close(row(&r, "C_DATES").recall, 0.0));
        let bad_gold = note(
            "c",
            "short",
            vec![GoldSpan {
                start: 3,
                end: 99,
                label: "WHATEVER".into(),
                class: "NOPE".into(),
            }],
        );
        let r = evaluate(&[bad_gold], &[]);
        assert_eq!(r.overall.gold_chars, 2);
        assert_eq!(r.overall.precision, None);
        let r = evaluate(&[], &[(vec![], "x".into())]);
        assert_eq!(r.overall.recall, None);
    }

    /// Replaces each gold span with `[LABEL]`, as an ideal detector would.
    fn redact_all(n: &Note) -> (Vec<Predicted>, String) {
        let chars: Vec<char> = n.text.chars().collect();
        let mut out = String::new();
        let mut at = 0;
        for s in &n.spans {
            out.extend(&chars[at..s.start]);
            out.push_str(&format!("[{}]", s.label));
            at = s.end;
        }
        out.extend(&chars[at..]);
        let preds = n
            .spans
            .iter()
            .map(|s| pred(s.start, s.end, &s.label, true))
            .collect();
        (preds, out)
    }

    #[test]
    fn perfect_and_null_detectors_on_the_generated_corpus() {
        let notes = super::super::generator::generate(99, 200);
        let perfect: Vec<_> = notes.iter().map(redact_all).collect();
        let r = evaluate(&notes, &perfect);
        assert_eq!(r.leak_count, 0, "{:?}", r.leaks.first());
        assert!(close(r.overall.recall, 1.0) && close(r.overall.precision, 1.0));
        for c in &r.classes {
            assert!(
                close(c.recall, 1.0) && close(c.entity_recall, 1.0),
                "{}",
                c.class
            );
        }

        // Nothing found, text unchanged: every gold value leaks except what Safe Harbor keeps
        // (ages up to 89, clock times).
        let null: Vec<_> = notes.iter().map(|n| (vec![], n.text.clone())).collect();
        let r = evaluate(&notes, &null);
        let expected = notes
            .iter()
            .flat_map(|n| {
                n.spans.iter().filter(|s| {
                    let v: Vec<char> = n.text.chars().skip(s.start).take(s.end - s.start).collect();
                    !exempt(&s.label, &v)
                })
            })
            .count();
        assert_eq!(r.leak_count, expected);
        assert!(close(r.overall.recall, 0.0));
        assert_eq!(r.overall.precision, None);
        println!("{}", r.table());
    }

    #[test]
    fn tables_list_every_class_overall_and_leaks() {
        let text = "Dr. Smith, SSN 123-45-6789.";
        let n = note(
            "t",
            text,
            vec![
                gold(text, "Smith", "LAST_NAME"),
                gold(text, "123-45-6789", "SSN"),
            ],
        );
        let (s, e) = cp(text, "Smith");
        let r = evaluate(
            &[n],
            &[(
                vec![pred(s, e, "NAME", true)],
                "Dr. [X], SSN 123-45-6789.".into(),
            )],
        );
        let t = r.table();
        let md = r.markdown();
        for class in CLASSES {
            assert!(t.contains(class) && md.contains(class), "{class}");
        }
        assert!(t.contains("OVERALL") && t.contains("n/a") && !t.contains("NaN"));
        assert!(t.contains("\nleaks: 1\n"), "{t}");
        assert!(
            t.contains("whole-identifier leaks (4+ chars, verbatim): 1 (G_SSN 1)\n"),
            "{t}"
        );
        assert!(
            md.contains("| A_NAMES | 5 | 100.00% | 100.00% | 100.00% | 1 |"),
            "{md}"
        );
        assert!(md.contains("\nleaks: 1  \n"), "{md}");
        // Columns line up: every data row has the same width as the header.
        let widths: Vec<usize> = t.lines().take(21).map(|l| l.chars().count()).collect();
        assert!(widths.iter().all(|w| *w <= widths[1]), "{t}");
        assert_eq!(t.lines().count(), 1 + 1 + 18 + 1 + 3);
    }
}
