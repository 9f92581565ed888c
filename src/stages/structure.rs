//! What the layout around spans says about them, applied by the recognize stage after the model
//! and the recognizers have spoken:
//!
//! - A given name found alone takes the capitalized word after it (and a middle initial between):
//!   "Brajko Rukavina", "Jiří Z Lukášek". A name that starts with an initial takes the
//!   capitalized word before it: "Xzavian G. Tavares". The model often finds one half of a
//!   foreign name; the half it left would be a leak.
//! - Parts of one address separated only by spaces ("727" "Green Gateway" "Suite 873") become one
//!   span, so the spaces between them are not left standing as the outline of an address. ZIP
//!   codes stay apart (Safe Harbor keeps three of their digits), and so do states and countries.
//! - A place that is a country, and not a town with a state or ZIP after it ("Lebanon, PA"),
//!   is labelled COUNTRY: Safe Harbor removes places smaller than a state, and policies keep
//!   countries as they keep states.

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
    let ordinary = NOT_SURNAMES.contains(&word)
        || dates::MONTHS_FULL.contains(&word)
        || dates::WEEKDAYS_FULL.contains(&word);
    (lower >= 1 && !glued && !ordinary).then_some(end)
}

/// A capitalized word that ends `s` (preceded by a non-letter or the start); its start.
fn capitalized_word_before(s: &str) -> Option<usize> {
    let start = s
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphabetic() || matches!(c, '\'' | '’' | '-'))
        .last()
        .map(|(i, _)| i)?;
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

/// Extends given names forward over their surname and initialled names back over their given
/// name (see the module docs).
pub fn extend_names(text: &str, v: &mut [Span]) {
    for s in v.iter_mut() {
        let label = canonical_label(&s.label);
        if label.hipaa_class != "A_NAMES" {
            continue;
        }
        let inner = &text[s.start..s.end];
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
        }
    }
}

fn joins_address(s: &Span) -> bool {
    let c = canonical_label(&s.label);
    c.hipaa_class == "B_GEOGRAPHIC" && !matches!(c.name, "STATE" | "COUNTRY" | "ZIP_CODE")
}

/// Address parts separated only by spaces become one span (see the module docs). `v` is sorted
/// and disjoint.
pub fn join_address_parts(text: &str, v: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::with_capacity(v.len());
    for s in v {
        if let Some(prev) = out.last_mut()
            && joins_address(prev)
            && joins_address(&s)
            && s.start >= prev.end
            && (1..=3).contains(&(s.start - prev.end))
            && text[prev.end..s.start]
                .bytes()
                .all(|b| b == b' ' || b == b'\t')
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
    out
}

/// Place spans that name a country become COUNTRY (see the module docs).
pub fn label_countries(text: &str, v: &mut [Span]) {
    for s in v.iter_mut() {
        let c = canonical_label(&s.label);
        if c.hipaa_class != "B_GEOGRAPHIC" || matches!(c.name, "STATE" | "COUNTRY") {
            continue;
        }
        let name = text[s.start..s.end].trim();
        // "Cyprus (Greek)": the country before a parenthesis.
        let name = name.split(" (").next().unwrap_or(name);
        if !COUNTRIES.iter().any(|k| k.eq_ignore_ascii_case(name)) {
            continue;
        }
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
            s.label = "COUNTRY".into();
        }
    }
}

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
        let start = text.find(word).expect("word in text");
        Span::model(start, start + word.len(), label, 0.9)
    }

    fn shown(text: &str, v: &[Span]) -> Vec<(String, String)> {
        v.iter()
            .map(|s| (text[s.start..s.end].to_string(), s.label.clone()))
            .collect()
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
    fn address_parts_joined_across_spaces_zip_and_state_apart() {
        let t = "to 727 Green Gateway Suite 873 Scottport , IA  36115 now";
        let v = vec![
            span(t, "727", "BUILDING_NUMBER"),
            span(t, "Green Gateway", "STREET_ADDRESS"),
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
    }

    #[test]
    fn countries_are_labelled_towns_named_like_them_are_not() {
        let t = "travelling to Brazil next week; from Cyprus (Greek); lives in Lebanon, PA 17042";
        let mut v = vec![
            span(t, "Brazil", "CITY"),
            span(t, "Cyprus (Greek)", "LOCATION"),
            span(t, "Lebanon", "CITY"),
        ];
        label_countries(t, &mut v);
        let labels: Vec<_> = v.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["COUNTRY", "COUNTRY", "CITY"]);
    }
}
