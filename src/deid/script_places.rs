//! Places named in a script other than Latin ("東京", "서울", "Казань", "जयपुर"), found wherever
//! they stand. Han and kana run words together with no space, so no regex can cut a name out of
//! its sentence: one Aho-Corasick pass finds every listed name, and the script then says where a
//! name may start and end. A katakana name must not sit inside a longer katakana word ("カイロ",
//! Cairo, in "カイロプラクティック"); a Hangul name stands alone or before a particle or the
//! suffix of a district or a station ("해운대구", "서울에서", "강남역"); a name in a script with
//! spaces stands as a whole word, with a capital where its script has them ("Казань", not
//! "казань"). Latin text is left to the patterns: a text in Latin letters costs one pass over
//! its characters.

use aho_corasick::{AhoCorasick, MatchKind};

use super::gazetteer::Gazetteer;

/// Korean particles a place takes ("서울에서", "부산의").
const HANGUL_PARTICLES: &[&str] = &[
    "에서는",
    "에서도",
    "에서",
    "에게",
    "으로",
    "까지",
    "부터",
    "이랑",
    "에는",
    "에도",
    "에",
    "의",
    "로",
    "은",
    "는",
    "이",
    "가",
    "을",
    "를",
    "도",
    "와",
    "과",
    "랑",
];

/// Korean suffixes that name a district, a town's part or a station after a place's name: they
/// belong to the place ("해운대구", "강남역").
const HANGUL_SUFFIXES: &[&str] = &[
    "광역시",
    "특별시",
    "시",
    "구",
    "군",
    "동",
    "읍",
    "면",
    "역",
    "점",
];

/// The listed names of places in scripts other than Latin.
#[derive(Debug)]
pub struct ScriptPlaces {
    names: AhoCorasick,
}

#[derive(Clone, Copy, PartialEq)]
enum Script {
    Han,
    Katakana,
    Hangul,
    /// Hiragana, Thai, Lao, Khmer, Myanmar: words run together, as in Han.
    Unspaced,
    Latin,
    Other,
}

fn script(c: char) -> Script {
    match c as u32 {
        0x3005 | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3134F => {
            Script::Han
        }
        0x30A0..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F => Script::Katakana,
        0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF => Script::Hangul,
        0x3040..=0x309F | 0x0E00..=0x0EFF | 0x1000..=0x109F | 0x1780..=0x17FF => Script::Unspaced,
        _ if c.is_ascii() || ('\u{00C0}'..='\u{024F}').contains(&c) => Script::Latin,
        0x1E00..=0x1EFF => Script::Latin,
        _ => Script::Other,
    }
}

/// Whether `c` continues a word of a spaced script: a letter, a digit or a combining mark
/// (Devanagari's vowel signs).
fn in_word(c: char) -> bool {
    c.is_alphanumeric() || unicode_normalization::char::is_combining_mark(c)
}

impl ScriptPlaces {
    /// The names of `list` that hold no Latin letter (the list is folded to upper case; text is
    /// searched in a same-length upper-case reading).
    pub fn new(list: &Gazetteer) -> Result<Self, String> {
        let names = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(
                list.entries()
                    .filter(|n| !n.chars().any(|c| c.is_ascii_alphabetic())),
            )
            .map_err(|e| e.to_string())?;
        Ok(Self { names })
    }

    /// Byte ranges of the places named in `text`, sorted and disjoint. The search starts at the
    /// first letter of another script than Latin: a text in Latin letters, accented or not, is
    /// not searched.
    pub fn find(&self, text: &str) -> Vec<(usize, usize)> {
        let Some((from, _)) = text
            .char_indices()
            .find(|(_, c)| !c.is_ascii() && c.is_alphabetic() && script(*c) != Script::Latin)
        else {
            return Vec::new();
        };
        let upper = same_length_upper(&text[from..]);
        self.names
            .find_iter(&upper)
            .filter_map(|m| place_at(text, from + m.start(), from + m.end()))
            .collect()
    }
}

/// `text` with each character that has a one-character upper case of the same length in UTF-8
/// upper-cased, so that byte offsets carry over.
fn same_length_upper(text: &str) -> String {
    text.chars()
        .map(|c| {
            let mut up = c.to_uppercase();
            match (up.next(), up.next()) {
                (Some(u), None) if u.len_utf8() == c.len_utf8() => u,
                _ => c,
            }
        })
        .collect()
}

/// The place a listed name at `start..end` of `text` stands for, if its script lets it stand
/// there.
fn place_at(text: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let name = &text[start..end];
    let first = name.chars().next()?;
    let last = name.chars().next_back()?;
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    match script(first) {
        Script::Han | Script::Katakana | Script::Unspaced => {
            let kana_joins = |c: Option<char>, edge: char| {
                script(edge) == Script::Katakana && c.is_some_and(|c| script(c) == Script::Katakana)
            };
            (!kana_joins(before, first) && !kana_joins(after, last)).then_some((start, end))
        }
        Script::Hangul => {
            if before.is_some_and(|c| script(c) == Script::Hangul) {
                return None;
            }
            let rest = &text[end..];
            let run = rest
                .find(|c: char| script(c) != Script::Hangul)
                .unwrap_or(rest.len());
            let tail = &rest[..run];
            let suffix = HANGUL_SUFFIXES
                .iter()
                .find(|s| tail.starts_with(**s))
                .map_or(0, |s| s.len());
            let particle = &tail[suffix..];
            (particle.is_empty() || HANGUL_PARTICLES.contains(&particle))
                .then_some((start, end + suffix))
        }
        Script::Latin => None,
        Script::Other => {
            let cased = first.is_lowercase() || first.is_uppercase();
            let whole = !before.is_some_and(in_word) && !after.is_some_and(in_word);
            (whole && (!cased || first.is_uppercase())).then_some((start, end))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(text: &str) -> Vec<&str> {
        let list = Gazetteer::from_lines(
            "東京\n大阪\n上海\nカイロ\n서울\n부산\n해운대\nКазань\nСанкт-Петербург\nजयपुर\nالقاهرة\nΝάξος",
        );
        let found = ScriptPlaces::new(&list).unwrap().find(text);
        found.into_iter().map(|(s, e)| &text[s..e]).collect()
    }

    #[test]
    fn places_in_their_own_script_are_found_where_the_script_lets_a_name_stand() {
        assert_eq!(places("5月中旬に東京の自宅へ戻る"), ["東京"]);
        assert_eq!(places("大阪中央総合病院 循環器内科"), ["大阪"]);
        assert_eq!(places("Trip: 上海 -> Chengdu"), ["上海"]);
        assert_eq!(places("カイロに住む"), ["カイロ"]);
        assert_eq!(
            places("서울 마포구, 부산에서 왔어요, 해운대구 거주"),
            ["서울", "부산", "해운대구"]
        );
        assert_eq!(
            places("Самовывоз: Казань, ул. Баумана; Санкт-Петербург"),
            ["Казань", "Санкт-Петербург"]
        );
        assert_eq!(places("मालवीय नगर, जयपुर में"), ["जयपुर"]);
        assert_eq!(places("وصلت القاهرة امبارح"), ["القاهرة"]);
        assert_eq!(places("Route: Πειραιάς → Νάξος (Naxos)"), ["Νάξος"]);
    }

    #[test]
    fn a_name_inside_a_longer_word_is_no_place() {
        // Chiropractic, not Cairo; a Hangul word that only starts with a city's name; a word
        // in lower case; Latin text.
        assert!(places("カイロプラクティック院").is_empty());
        assert!(places("서울대학교 부산시민").is_empty());
        assert!(places("казань жителей Казаньский").is_empty());
        assert!(places("Tokyo and Seoul, all in Latin letters").is_empty());
    }
}
