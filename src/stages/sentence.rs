//! Rule-based sentence boundaries: windows prefer to end on them and grouping never crosses them.

/// Abbreviations after which a period does not end a sentence, by language.
fn abbreviations(lang: &str) -> &'static [&'static str] {
    match lang {
        "en" => &[
            "dr", "mr", "mrs", "ms", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "no",
            "fig", "approx", "pt", "pts", "hx", "dx", "tx", "rx", "mg", "ml", "inc", "ltd", "co",
            "dept", "univ", "ave", "blvd",
        ],
        "fr" => &["dr", "m", "mme", "mlle", "pr", "etc", "p.ex"],
        "de" => &["dr", "hr", "fr", "prof", "z.b", "usw", "bzw", "ca", "nr"],
        "es" | "pt" | "it" => &["dr", "dra", "sr", "sra", "prof", "etc", "p.ej", "ej"],
        _ => &[],
    }
}

/// Byte offsets where a sentence starts (excluding 0), ascending.
///
/// A sentence ends at a line break, or after `.`, `!`, `?` (and any closing quotes or brackets)
/// followed by whitespace and an uppercase letter, digit or opening quote, unless the word before
/// the period is a known abbreviation or a single letter (an initial).
pub fn sentence_starts(text: &str, lang: &str) -> Vec<usize> {
    let abbrevs = abbreviations(lang);
    let mut starts = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (pos, c) = chars[i];
        if c == '\n' {
            let mut j = i + 1;
            while j < chars.len() && chars[j].1.is_whitespace() {
                j += 1;
            }
            if j < chars.len() {
                starts.push(chars[j].0);
            }
            i = j.max(i + 1);
            continue;
        }
        if matches!(c, '.' | '!' | '?') {
            let mut j = i + 1;
            while j < chars.len()
                && matches!(
                    chars[j].1,
                    '.' | '!' | '?' | '"' | '\'' | ')' | ']' | '”' | '’'
                )
            {
                j += 1;
            }
            let ws_start = j;
            while j < chars.len() && chars[j].1.is_whitespace() && chars[j].1 != '\n' {
                j += 1;
            }
            if j > ws_start && j < chars.len() {
                let next = chars[j].1;
                let opens = next.is_uppercase()
                    || next.is_ascii_digit()
                    || matches!(next, '"' | '\'' | '(' | '“');
                if opens && !(c == '.' && ends_with_abbreviation(&text[..pos], abbrevs)) {
                    starts.push(chars[j].0);
                }
            }
            i = j.max(i + 1);
            continue;
        }
        i += 1;
    }
    starts.dedup();
    starts
}

fn ends_with_abbreviation(before: &str, abbrevs: &[&str]) -> bool {
    let word_start = before
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '.'))
        .map(|(i, c)| i + c.len_utf8())
        .unwrap_or(0);
    let word = &before[word_start..];
    if word.chars().count() == 1 && word.chars().all(char::is_alphabetic) {
        return true;
    }
    let lower = word.to_lowercase();
    abbrevs.contains(&lower.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_periods_and_lines() {
        let t = "Seen by Dr. Smith today. Pt stable! Next visit\nin May. J. Doe agrees.";
        let starts = sentence_starts(t, "en");
        let firsts: Vec<&str> = starts.iter().map(|&s| &t[s..s + 4]).collect();
        assert_eq!(firsts, vec!["Pt s", "Next", "in M", "J. D"]);
    }

    #[test]
    fn no_split_without_capital() {
        assert!(sentence_starts("dose was 2.5 mg. then rest", "en").is_empty());
    }
}
