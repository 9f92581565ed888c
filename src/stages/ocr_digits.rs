//! Numbers as OCR reads them: scanned faxes and referrals write "0" as "O" and "1" as "l" or "I"
//! ("Hm ph: 865-426-7l3O", "SSN: 4l2-O9-7735", "DOB O3-O6-1952"), which no phone, SSN or date
//! pattern matches. The recognizers search a copy with those letters read as digits inside
//! mostly numeric runs; each letter is one byte, and so is its digit, so every offset found in the
//! copy is the same in the text.

/// The text with O/o read as 0 and l/I as 1 inside every run of letters and digits (joined by
/// single "-", "/" or ".") that holds more digits than letters, in its groups of only digits and
/// such letters; None when nothing changes, as in almost every text. "O2", "SpO2", "IL-6",
/// "25-OH", "18-Jul-2020" and "I-84" keep their letters.
pub fn repaired(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let start = i;
        let (mut digits, mut letters, mut confusable) = (0usize, 0usize, false);
        loop {
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                digits += usize::from(b[i].is_ascii_digit());
                letters += usize::from(b[i].is_ascii_alphabetic());
                confusable |= digit_for(b[i]).is_some();
                i += 1;
            }
            let joined = i + 1 < b.len()
                && matches!(b[i], b'-' | b'/' | b'.')
                && b[i + 1].is_ascii_alphanumeric();
            if !joined {
                break;
            }
            i += 1;
        }
        if confusable && digits > letters && digits >= 2 {
            // Only groups whose every letter reads as a digit ("18-Jul-2020" keeps its month),
            // with a digit of their own or between two groups ("9/ll/23"; "I-84" is a road).
            let groups: Vec<&[u8]> = b[start..i].split(|c| !c.is_ascii_alphanumeric()).collect();
            for (k, group) in groups.iter().enumerate() {
                let inner = k > 0 && k + 1 < groups.len();
                let readable = group
                    .iter()
                    .all(|&c| c.is_ascii_digit() || digit_for(c).is_some());
                if !readable || !(inner || group.iter().any(u8::is_ascii_digit)) {
                    continue;
                }
                let at = group.as_ptr() as usize - b.as_ptr() as usize;
                for (j, &c) in group.iter().enumerate() {
                    if let Some(d) = digit_for(c) {
                        out.get_or_insert_with(|| b.to_vec())[at + j] = d;
                    }
                }
            }
        }
    }
    // Only ASCII letters became ASCII digits, so the bytes are still UTF-8.
    out.and_then(|o| String::from_utf8(o).ok())
}

fn digit_for(c: u8) -> Option<u8> {
    match c {
        b'O' | b'o' => Some(b'0'),
        b'l' | b'I' => Some(b'1'),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_read_as_digits_in_numbers_only() {
        let text = "Hm ph: 865-426-7l3O SSN: 4l2-O9-7735 DOB O3-O6-1952 on 9/ll/23 at l09 0ld Rd";
        assert_eq!(
            repaired(text).as_deref(),
            Some("Hm ph: 865-426-7130 SSN: 412-09-7735 DOB 03-06-1952 on 9/11/23 at 109 0ld Rd")
        );
        assert_eq!(repaired(text).map(|t| t.len()), Some(text.len()));
    }

    #[test]
    fn clinical_words_with_digits_stay() {
        for text in [
            "O2 2 L, SpO2 94%",
            "IL-6 high",
            "25-OH vitamin D",
            "CO2 24",
            "Ph0ne",
            "Medic1ne",
            "on 18-Jul-2020",
            "on I-84 westbound",
            "NL79QKZI4613867831",
        ] {
            assert_eq!(repaired(text), None, "{text}");
        }
    }
}
