//! Checks a recognizer match must pass before it counts: checksums (Luhn, mod 97, VIN, DEA),
//! issuing rules (SSN, NANP phones) and plausibility (dates exist, ages are human).

use std::net::{Ipv4Addr, Ipv6Addr};

use serde::Deserialize;

use super::dates;

/// The validators a pattern file may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Validator {
    Date,
    Age,
    Ssn,
    PhoneUs,
    PhoneIntl,
    CreditCard,
    Iban,
    Npi,
    Dea,
    Vin,
    Ipv4,
    Ipv6,
    Url,
    Plate,
    AlnumMix,
    Digits1,
    Digits2,
    Digits3,
    Digits4,
    /// At least six digits: the floor of the Safe Harbor catch-all for unique numbers.
    Digits6,
    /// A phone number in any national layout: 6 to 15 digits.
    PhoneAny,
}

impl Validator {
    /// Checksums and issuing rules, as opposed to shape checks: a value failing one may still
    /// be an identifier (mistyped, invented, or from a scheme with other rules).
    pub fn is_checksum(self) -> bool {
        matches!(
            self,
            Self::Ssn
                | Self::PhoneUs
                | Self::PhoneIntl
                | Self::CreditCard
                | Self::Iban
                | Self::Npi
                | Self::Dea
                | Self::Vin
        )
    }

    pub fn check(self, s: &str) -> bool {
        match self {
            Self::Date => {
                dates::parse_date(s, false).is_some() || dates::parse_date(s, true).is_some()
            }
            // Infants' ages come with a decimal ("1.5 year old").
            Self::Age => s
                .trim()
                .parse::<f64>()
                .is_ok_and(|a| (0.0..=125.0).contains(&a)),
            Self::Ssn => ssn(s),
            Self::PhoneUs => phone_us(s),
            Self::PhoneIntl => (8..=15).contains(&digits(s).len()),
            Self::CreditCard => credit_card(s),
            Self::Iban => iban(s),
            Self::Npi => npi(s),
            Self::Dea => dea(s),
            Self::Vin => vin(s),
            Self::Ipv4 => s.parse::<Ipv4Addr>().is_ok(),
            Self::Ipv6 => s.parse::<Ipv6Addr>().is_ok(),
            Self::Url => url(s),
            Self::Plate => plate(s),
            Self::AlnumMix => {
                s.chars().any(|c| c.is_ascii_digit()) && s.chars().any(|c| c.is_ascii_alphabetic())
            }
            Self::Digits1 => !digits(s).is_empty(),
            Self::Digits2 => digits(s).len() >= 2,
            Self::Digits3 => digits(s).len() >= 3,
            Self::Digits4 => digits(s).len() >= 4,
            Self::Digits6 => digits(s).len() >= 6,
            Self::PhoneAny => (6..=15).contains(&digits(s).len()),
        }
    }
}

fn digits(s: &str) -> Vec<u32> {
    s.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// SSA rules: no all-zero group, area not 000, 666 or 900–999.
fn ssn(s: &str) -> bool {
    let d = digits(s);
    if d.len() != 9 {
        return false;
    }
    let num = |r: std::ops::Range<usize>| d[r].iter().fold(0, |n, x| n * 10 + x);
    let (area, group, serial) = (num(0..3), num(3..5), num(5..9));
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
}

/// NANP: 10 digits (or 11 with a leading 1), area code and exchange start with 2–9.
fn phone_us(s: &str) -> bool {
    let d = digits(s);
    let d = match d.len() {
        11 if d[0] == 1 => &d[1..],
        10 => &d[..],
        _ => return false,
    };
    d[0] >= 2 && d[3] >= 2
}

fn luhn(d: &[u32]) -> bool {
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| {
            if i % 2 == 1 {
                if x * 2 > 9 { x * 2 - 9 } else { x * 2 }
            } else {
                x
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// 13–19 digits from a card network's first digit (2–6), Luhn-valid, not all one digit.
fn credit_card(s: &str) -> bool {
    let d = digits(s);
    (13..=19).contains(&d.len())
        && (2..=6).contains(&d[0])
        && d.iter().any(|&x| x != d[0])
        && luhn(&d)
}

/// NPI: 10 digits starting 1 or 2, Luhn over the 80840 health-industry prefix.
fn npi(s: &str) -> bool {
    let d = digits(s);
    if d.len() != 10 || !(d[0] == 1 || d[0] == 2) {
        return false;
    }
    let mut full = vec![8, 0, 8, 4, 0];
    full.extend_from_slice(&d);
    luhn(&full)
}

/// ISO 13616: letters to numbers, rotated, mod 97 == 1.
fn iban(s: &str) -> bool {
    let compact: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    if !(15..=34).contains(&compact.len()) || !compact.iter().all(char::is_ascii_alphanumeric) {
        return false;
    }
    let rotated = compact[4..].iter().chain(&compact[..4]);
    let mut rem: u64 = 0;
    for c in rotated {
        let v = match c.to_digit(36) {
            Some(v) => u64::from(v),
            None => return false,
        };
        rem = if v < 10 {
            (rem * 10 + v) % 97
        } else {
            (rem * 100 + v) % 97
        };
    }
    rem == 1
}

/// DEA registration: two letters, seven digits, last digit a weighted checksum.
fn dea(s: &str) -> bool {
    let d: Vec<u32> = s.chars().skip(2).filter_map(|c| c.to_digit(10)).collect();
    if d.len() != 7 {
        return false;
    }
    let sum = d[0] + d[2] + d[4] + 2 * (d[1] + d[3] + d[5]);
    sum % 10 == d[6]
}

/// North American VIN check digit (position 9); letters and digits both present.
fn vin(s: &str) -> bool {
    const WEIGHTS: [u32; 17] = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2];
    let chars: Vec<char> = s.chars().collect();
    if chars.len() != 17 || !Validator::AlnumMix.check(s) {
        return false;
    }
    let value = |c: char| -> Option<u32> {
        match c {
            '0'..='9' => c.to_digit(10),
            'A'..='H' => Some(c as u32 - 'A' as u32 + 1),
            'J'..='N' => Some(c as u32 - 'J' as u32 + 1),
            'P' => Some(7),
            'R' => Some(9),
            'S'..='Z' => Some(c as u32 - 'S' as u32 + 2),
            _ => None,
        }
    };
    let mut sum = 0;
    for (c, w) in chars.iter().zip(WEIGHTS) {
        match value(*c) {
            Some(v) => sum += v * w,
            None => return false,
        }
    }
    let check = match sum % 11 {
        10 => 'X',
        n => char::from_digit(n, 10).unwrap_or('?'),
    };
    chars[8] == check
}

/// A URL needs a dot in its host and no trailing sentence punctuation (trimmed by the engine).
fn url(s: &str) -> bool {
    let rest = s.split_once("://").map_or(s, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    host.contains('.') && !host.starts_with('.') && !host.ends_with('.')
}

/// A plate: 4–8 letters and digits with at least one digit.
fn plate(s: &str) -> bool {
    let alnum = s.chars().filter(char::is_ascii_alphanumeric).count();
    (4..=8).contains(&alnum) && s.chars().any(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::Validator::*;

    #[test]
    fn ssn_rules() {
        assert!(Ssn.check("123-45-6789"));
        for bad in [
            "000-12-3456",
            "666-12-3456",
            "912-12-3456",
            "123-00-4567",
            "123-45-0000",
            "12-345-678",
        ] {
            assert!(!Ssn.check(bad), "{bad}");
        }
    }

    #[test]
    fn checksums() {
        assert!(CreditCard.check("4111 1111 1111 1111"));
        assert!(CreditCard.check("5500-0000-0000-0004"));
        assert!(!CreditCard.check("4111 1111 1111 1112"));
        assert!(!CreditCard.check("0000 0000 0000 0000"));
        assert!(Iban.check("GB82 WEST 1234 5698 7654 32"));
        assert!(Iban.check("DE89370400440532013000"));
        assert!(!Iban.check("GB82 WEST 1234 5698 7654 33"));
        assert!(Npi.check("1234567893"));
        assert!(!Npi.check("1234567890"));
        assert!(!Npi.check("3234567893"));
        assert!(Dea.check("AB1234563"));
        assert!(!Dea.check("AB1234564"));
        assert!(Vin.check("1HGCM82633A004352"));
        assert!(!Vin.check("1HGCM82634A004352"));
        assert!(!Vin.check("12345678901234567"));
    }

    #[test]
    fn phones_and_addresses() {
        assert!(PhoneUs.check("(617) 555-0143"));
        assert!(PhoneUs.check("+1 617 555 0143"));
        assert!(!PhoneUs.check("(017) 555-0143"));
        assert!(!PhoneUs.check("617-155-0143"));
        assert!(PhoneIntl.check("+44 20 7946 0958"));
        assert!(!PhoneIntl.check("+1 23"));
        assert!(Ipv4.check("192.168.1.20"));
        assert!(!Ipv4.check("192.168.1.256"));
        assert!(Ipv6.check("2001:db8::8a2e:370:7334"));
        assert!(!Ipv6.check("10:30:15"));
        assert!(Url.check("https://portal.example.org/u/1"));
        assert!(!Url.check("https://localhost"));
    }

    #[test]
    fn plausibility() {
        assert!(Age.check("92") && Age.check("1.5"));
        assert!(!Age.check("130") && !Age.check("-1") && !Age.check("NaN"));
        assert!(Date.check("03/15/2021"));
        assert!(Date.check("15.03.2021"));
        assert!(!Date.check("02/30/2021"));
        assert!(Plate.check("7ABC123"));
        assert!(!Plate.check("ABCDEFG"));
        assert!(Digits4.check("A12-34"));
        assert!(!Digits4.check("ABC-123"));
    }
}
