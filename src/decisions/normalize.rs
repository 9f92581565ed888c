//! One definition of "the same text", shared by duplicate-option detection and the lexical
//! backend: NFKC, Unicode full case folding (the `caseless` crate, CaseFolding.txt C+F), NFKC
//! again (folding can un-normalize), then every run of Unicode whitespace collapsed to one space.

use caseless::Caseless;
use unicode_normalization::UnicodeNormalization;

/// NFKC + full case fold + NFKC + whitespace collapse (trimmed).
pub fn normalize(text: &str) -> String {
    let folded: String = text.nfkc().default_case_fold().nfkc().collect();
    collapse_whitespace(&folded)
}

/// Any run of Unicode `White_Space` becomes one ASCII space; leading/trailing runs are dropped.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_case_folding_specials() {
        assert_eq!(normalize("Straße"), "strasse");
        assert_eq!(normalize("STRASSE"), "strasse");
        assert_eq!(normalize("\u{1E9E}"), "ss"); // ẞ capital sharp s
        assert_eq!(normalize("\u{17F}"), "s"); // ſ long s
        assert_eq!(normalize("ΟΔΟΣ"), normalize("οδος")); // final sigma folds to σ
        assert_eq!(normalize("οδος"), "οδοσ");
        assert_eq!(normalize("\u{212A}"), "k"); // Kelvin sign
    }

    #[test]
    fn nfkc_compatibility_forms() {
        assert_eq!(normalize("\u{FB01}le"), "file"); // ﬁ ligature
        assert_eq!(normalize("ＡＢＣ１"), "abc1"); // fullwidth
        assert_eq!(normalize("e\u{301}"), "\u{e9}"); // composed
    }

    #[test]
    fn whitespace_collapses_and_trims() {
        assert_eq!(normalize("  a \u{3000}\t b\n"), "a b");
        assert_eq!(collapse_whitespace("x\u{A0}\u{2003}y"), "x y");
        assert_eq!(normalize(" \t "), "");
    }
}
