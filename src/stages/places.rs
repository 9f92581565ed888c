//! Whole places, applied last by the recognize stage when the pipeline asks (`whole_places`:
//! de-identification, not extraction): a place of care and the town after it ("St. Joseph's
//! Health in Detroit", "Brigham and Women's Hospital, Boston") are one place, and so is a town or
//! a place named with the lower-case word for what it is ("our New York clinic", "Mt. Sinai
//! hospital"); a facility takes the campus named after a dash ("Saint Alphonsus Medical Center -
//! Nampa"). Masked apart they leave " in " and "clinic" standing between placeholders, and gold
//! that names the place as one span (ASQ-PHI's) counts them as missed. States and countries are
//! never taken in: Safe Harbor keeps them.

use super::span::Span;
use crate::deid::canonical_label;

/// Lower-case words after a town or a place that make it a place of care, a modifier first.
const CARE_WORDS: &[&str] = &[
    "clinic", "office", "hospital", "practice", "branch", "campus", "center", "centre",
];
const CARE_MODIFIERS: &[&str] = &["downtown", "main", "satellite", "outpatient"];

/// Widens the places of `v` (sorted, disjoint) in place; it stays sorted and disjoint. Outside
/// clinical text (`clinical` false) only a place of care takes the town after it: the shop "in
/// Swindon" is one identifier and the town another, and a span over " in " removes a word.
pub fn whole_places(text: &str, v: &mut Vec<Span>, clinical: bool) {
    for i in 0..v.len() {
        let name = canonical_label(&v[i].label).hipaa_class == "A_NAMES";
        let ceiling = v.get(i + 1).map_or(text.len(), |n| n.start);
        if name {
            if let Some(len) = head_after(&text[v[i].end..ceiling], &[PLACE_HEADS]) {
                v[i].end += len;
                v[i].label = "LOCATION".into();
            }
        } else if is_place(&v[i]) || is_organization(&v[i]) {
            let rest = &text[v[i].end..ceiling];
            if let Some(len) = care_word_after(rest) {
                v[i].end += len;
                v[i].label = "LOCATION".into();
            } else if let Some(len) = head_after(rest, &[PLACE_HEADS, BUSINESS_HEADS]) {
                v[i].end += len;
                if !is_organization(&v[i]) {
                    v[i].label = "LOCATION".into();
                }
            } else if is_organization(&v[i])
                && let Some(len) = campus_after(rest)
            {
                v[i].end += len;
            }
            if is_site(&v[i]) {
                v[i].end += of_place_after(&text[v[i].end..ceiling]).unwrap_or(0);
            }
        }
    }
    join_places_with_towns(text, v, clinical);
    let abbreviations: Vec<Span> = v
        .iter()
        .enumerate()
        // A town's code in parentheses is an airport's ("Newark (EWR)"), no identifier.
        .filter(|(_, s)| is_site(s))
        .filter_map(|(i, s)| {
            let ceiling = v.get(i + 1).map_or(text.len(), |n| n.start);
            let (from, to) = abbreviation_after(&text[s.end..ceiling])?;
            Some(Span::pattern(
                s.end + from,
                s.end + to,
                "LOCATION",
                s.score,
                "place_abbreviation",
            ))
        })
        .collect();
    if !abbreviations.is_empty() {
        v.extend(abbreviations);
        v.sort_by_key(|s| (s.start, s.end));
    }
}

/// The byte range of "UIHC" in " (UIHC)" at the start of `rest`: a place's abbreviation in
/// parentheses right after its name ("University of Iowa Hospitals & Clinics (UIHC)"), which the
/// text then uses alone.
fn abbreviation_after(rest: &str) -> Option<(usize, usize)> {
    let inner_at = rest.len() - rest.trim_start_matches([' ', '\t']).len() + 1;
    let inner = rest.get(inner_at - 1..)?.strip_prefix('(')?;
    let len = inner.find(')')?;
    let abbreviation = &inner[..len];
    let letters = abbreviation
        .chars()
        .filter(char::is_ascii_uppercase)
        .count();
    (letters >= 2
        && abbreviation.len() <= 8
        && abbreviation
            .chars()
            .all(|c| c.is_ascii_uppercase() || matches!(c, '&' | '-')))
    .then_some((inner_at, inner_at + len))
}

/// Places named in a text written all in lower case, as dictations are transcribed ("seen at
/// south shore hospital", "a senior at grand haven high school", "parishioner at st. coleman
/// church"): one to three words before a place word, none of them a function word or a generic
/// modifier ("the community hospital", "an outside hospital" name no place). Texts with
/// capitals are left to the recognizers, which see the capitals.
pub fn lower_case_places(text: &str) -> Vec<Span> {
    let (mut letters, mut upper) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        upper += usize::from(c.is_uppercase());
        // Past this many capitals no text length makes them under 2% of its letters: most
        // texts stop here, early.
        if upper * 50 > text.len() {
            return Vec::new();
        }
    }
    if letters < 40 || upper * 50 > letters {
        return Vec::new();
    }
    let words = words_at(text);
    fn core(w: &str) -> &str {
        w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let Some(head_len) = LOWER_HEADS.iter().find_map(|h| {
            let n = h.split(' ').count();
            let here = words.get(i..i + n)?;
            // Only the last word of the head may carry punctuation after it.
            let clean = here[..n - 1]
                .iter()
                .all(|(_, w)| w.chars().all(|c| c.is_alphabetic() || c == '.'));
            (clean && here.iter().map(|(_, w)| core(w)).eq(h.split(' '))).then_some(n)
        }) else {
            i += 1;
            continue;
        };
        let mut first = i;
        while first > 0 && i - first < 3 {
            let (_, w) = words[first - 1];
            let c = core(w);
            let glued = w.ends_with([',', ';', ':', '(', ')']);
            if glued
                || c.is_empty()
                || !c.chars().all(|ch| ch.is_alphabetic() || ch == '.')
                || NOT_PLACE_WORDS.contains(&c)
            {
                break;
            }
            first -= 1;
        }
        if first < i {
            let start = words[first].0;
            let (last_at, last) = words[i + head_len - 1];
            let end = last_at + last.trim_end_matches(|c: char| !c.is_alphanumeric()).len();
            out.push(Span::pattern(
                start,
                end,
                "LOCATION",
                0.7,
                "lower_case_place",
            ));
        }
        i += head_len;
    }
    out
}

/// The whitespace-separated words of `text` with their byte offsets.
pub(super) fn words_at(text: &str) -> Vec<(usize, &str)> {
    text.split_inclusive(char::is_whitespace)
        .scan(0usize, |at, w| {
            let start = *at;
            *at += w.len();
            Some((start, w.trim_end()))
        })
        .filter(|(_, w)| !w.is_empty())
        .collect()
}

/// Place words of lower-case dictation, with the modifiers that belong to a name ("north
/// ottawa community hospital"); longer first.
#[rustfmt::skip]
const LOWER_HEADS: &[&str] = &[
    "community hospital", "memorial hospital", "general hospital", "regional medical center",
    "medical center", "health center", "high school", "middle school", "elementary school",
    "state university", "hospital", "university", "college", "church", "healthcare", "casino",
    "academy", "elementary", "family dentistry", "dentistry", "orthopedics", "orthopaedics",
    "eye associates", "associates", "medical group", "health centre", "medical centre",
    "urgent care", "tavern", "grocers",
];

/// Words that end the walk back from a place word: function words, generic modifiers and
/// verbs that come before a place ("went to the local hospital").
#[rustfmt::skip]
const NOT_PLACE_WORDS: &[&str] = &[
    "the", "a", "an", "to", "at", "in", "on", "of", "for", "from", "by", "with", "and", "or",
    "his", "her", "their", "our", "my", "your", "its", "this", "that", "these", "those", "local",
    "outside", "outlying", "nearby", "same", "other", "another", "previous", "prior", "current",
    "new", "old", "former", "referring", "receiving", "tertiary", "academic", "county", "state",
    "city", "community", "regional", "general", "teaching", "private", "public", "rural", "urban",
    "va", "psychiatric", "mental", "rehab", "children's", "women's", "veterans", "was", "were",
    "is", "be", "been", "went", "go", "goes", "admitted", "transferred", "seen", "discharged",
    "sent", "taken", "brought", "returned", "called", "attends", "attended", "works", "worked",
    "taught", "teaches", "visit", "visited", "high", "middle", "senior", "junior", "nursing",
    "medical", "home", "care", "critical", "access", "small", "large", "big", "catholic",
    "christian", "baptist", "methodist", "lutheran", "episcopal", "jewish", "presbyterian",
    "any", "no", "which", "what", "nearest", "closest", "area", "district", "hospital",
    "university", "college", "school", "church", "clinic", "near", "via", "per", "dr",
    "pediatric", "paediatric", "cosmetic", "outpatient", "inpatient", "sports",
];

/// "St. Joseph's Health in Detroit", "Bayou City Dialysis - Pasadena": a place of care, " in ",
/// ", ", " at " or a dash, and a town; outside clinical text only a place named as one of care.
fn join_places_with_towns(text: &str, v: &mut Vec<Span>, clinical: bool) {
    let mut out: Vec<Span> = Vec::with_capacity(v.len());
    for s in v.drain(..) {
        if let Some(prev) = out.last_mut()
            && is_site(prev)
            && (clinical || names_care(&text[prev.start..prev.end]))
            && canonical_label(&s.label).name == "CITY"
            && matches!(
                &text[prev.end..s.start],
                " in " | ", " | " at " | " - " | " -- " | " – "
            )
        {
            prev.end = s.end;
            prev.label = "LOCATION".into();
            prev.score = prev.score.min(s.score);
            continue;
        }
        out.push(s);
    }
    *v = out;
}

/// Words that name a place as one of care ("Mercy Hospital", "Eastside Family Health").
#[rustfmt::skip]
const CARE_NAME_WORDS: &[&str] = &[
    "hospital", "clinic", "medical", "health", "healthcare", "center", "centre", "infirmary",
    "hospice", "practice", "surgery", "care", "dialysis", "pharmacy", "rehab", "rehabilitation",
    "nursing", "ctr",
];

fn names_care(name: &str) -> bool {
    name.split(|c: char| !c.is_alphabetic())
        .any(|w| CARE_NAME_WORDS.iter().any(|c| c.eq_ignore_ascii_case(w)))
}

/// Length of " clinic", " downtown clinic" … at the start of `rest`, ending a word.
fn care_word_after(rest: &str) -> Option<usize> {
    let mut len = 0;
    let mut after = rest;
    let mut word = |after: &mut &str, words: &[&str]| -> bool {
        let Some(s) = after.strip_prefix(' ') else {
            return false;
        };
        for w in words {
            if let Some(tail) = s.strip_prefix(w)
                && !tail.starts_with(char::is_alphanumeric)
            {
                len += 1 + w.len();
                *after = tail;
                return true;
            }
        }
        false
    };
    word(&mut after, CARE_MODIFIERS);
    word(&mut after, CARE_WORDS).then_some(len)
}

/// Capitalized words that end the name of a place or a building: a town or a name found before
/// them ("Lincoln Heights" Elementary, "Glenvale Gardens" Aged Care, "Lester Park" Elementary)
/// is the first part of that name. No "Airport": with it the held-out general set lost 0.08
/// point of precision at equal recall.
#[rustfmt::skip]
const PLACE_HEADS: &[&str] = &[
    "Elementary", "School", "Academy", "College", "University", "Hall", "Estates", "Care",
    "Venue", "Office", "Hotel", "Inn", "Church", "Chapel", "Centre", "Center", "Clinic",
    "Hospital", "Pharmacy", "Club", "Works", "Restaurant", "Cafe", "Café", "Pub", "Motel",
    "Lodge", "Library", "Museum", "Surgery", "Practice", "Apartments", "Manor", "Towers", "Plaza",
    "Mall", "Market", "Garage", "Salon", "Studio", "Studios", "Gym", "Farm", "Farms", "House",
    "Hospice", "Trail", "Courthouse", "Mosque", "Synagogue", "Cathedral", "Parish",
    "Reservation", "Shelter", "Primary", "Secondary", "Grammar", "Collegiate", "High", "Middle",
    "Infirmary", "Hub", "Bar", "Pathology", "Laboratory", "Laboratories", "Diagnostics", "Imaging",
    "Radiology", "Institute", "Physio", "Physiotherapy", "Opticians", "Optometry", "Chemist",
    "Chemists", "Dispensary", "Maternity", "Children's", "City", "Suites", "Complex",
    "Stadium", "Racecourse",
];

/// Street words: a head followed by one is part of a street's name ("Lincoln Park Street",
/// "Springfield High Road"), not a place's.
#[rustfmt::skip]
const STREET_WORDS: &[&str] = &[
    "Street", "Road", "Rd", "Avenue", "Ave", "Lane", "Ln", "Drive", "Way", "Boulevard", "Blvd",
    "Court", "Close", "Crescent", "Terrace", "Parkway", "Pkwy",
];

/// Words that end a business's or an organization's name. A town before them is the business's
/// name ("Thames Valley" Heating Ltd, "Pike County" Sheriff); a person's name
/// before them stays a name, as a firm named for its founder is often no place at all, and
/// several are surnames ("Park", "Lake", "Temple").
#[rustfmt::skip]
const BUSINESS_HEADS: &[&str] = &[
    "Group", "Bank", "Ltd", "Limited", "Inc", "LLC", "PLLC", "Properties", "Realty",
    "Associates", "Partners", "Foundation", "Trust", "Logistics", "Communications", "Consulting",
    "Services", "Solutions", "Construction", "Roofing", "Plumbing", "Heating", "Electric",
    "Motors", "Supermarkets", "Network", "System", "Fund", "Hire", "Solicitors", "Insurance",
    "Assurance", "Scheme", "Aid", "Unit", "Service", "Residence", "Colleges",
    "Sciences", "Camp", "Coaches", "Wing", "Drug", "Plant", "Terminals", "LLP", "Association",
    "LTC", "Loans", "Rescue", "Mobility", "Partnership", "Council", "Schools", "Operations",
    "Medicals", "Store", "Stores", "Textiles", "Seafood", "Grains", "Refinery", "Depot",
    "Sheriff", "Alliance", "Program", "Agency", "Authority", "District", "Medicine", "Healthcare",
    "Pediatrics", "Physicians", "Dental", "Transport", "Team", "Lab", "Home", "Homes", "Village",
    "Gardens", "Mission", "Temple", "Marina", "Park", "Lake", "Beach", "Path", "Tribe", "Tribes",
    "Nation", "Analytics", "Specialists", "Rentals", "Supply", "Supplies", "Travel", "Sons",
    "Respiratory", "Answering", "Fencing", "Eyecare", "Traders", "Trading", "Ventures", "Crew",
    "Harriers",
];

/// Words that start a department's name after its place's.
const DEPARTMENT_WORDS: &[&str] = &["Department", "Dept", "Division", "Section", "Directorate"];

/// Length of " Elementary", " Aged Care", " Heating Ltd", " Middle School" at the start of
/// `rest`: one to three capitalized words ("&", "and", "of" between), the last one a head.
fn head_after(rest: &str, heads: &[&[&str]]) -> Option<usize> {
    let mut end = 0;
    let mut found = None;
    for _ in 0..4 {
        let Some(after) = rest[end..].strip_prefix(' ') else {
            break;
        };
        let word_len = after
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '&' | '\'' | '’' | '.')))
            .unwrap_or(after.len());
        let word = after[..word_len].trim_end_matches('.');
        let joiner = matches!(word, "&" | "and" | "of");
        // "Mercy Hospital Department of Imaging": a department is inside the place, not its name.
        if !(joiner || word.starts_with(char::is_uppercase)) || DEPARTMENT_WORDS.contains(&word) {
            break;
        }
        end += 1 + word_len;
        if found.is_some() && STREET_WORDS.contains(&word) {
            return None;
        }
        if heads.iter().any(|h| h.contains(&word)) {
            found = Some(end - (word_len - word.len()));
        }
    }
    found
}

/// Length of " of Brandon", " of the Treasure Valley" at the start of `rest`: the place an
/// organization serves, named after it ("Kids First Pediatrics of Brandon", "Delta Dental of
/// Colorado", "Meals on Wheels of Tulsa"), one or two capitalized words.
fn of_place_after(rest: &str) -> Option<usize> {
    let after = rest.strip_prefix(" of ")?;
    let start = rest.len() - after.strip_prefix("the ").unwrap_or(after).len();
    let mut end = start;
    for n in 0..2 {
        let Some(word) = rest[end..].strip_prefix(if n == 0 { "" } else { " " }) else {
            break;
        };
        let len = word
            .find(|c: char| !(c.is_alphabetic() || matches!(c, '\'' | '’' | '-')))
            .unwrap_or(word.len());
        if len < 2 || !word.starts_with(char::is_uppercase) {
            break;
        }
        end = rest.len() - word.len() + len;
    }
    (end > start).then_some(end)
}

/// Words after a dash that name a note's title, a person or a unit inside the facility, not a
/// campus ("- Adolescent Unit", "- Cardiology Clinic").
#[rustfmt::skip]
const NOT_CAMPUS: &[&str] = &[
    "Dr", "Mr", "Mrs", "Ms", "Department", "Dept", "Note", "Notes", "Report", "Summary", "Visit",
    "Call", "Record", "Page", "Phone", "Fax", "Patient", "Progress", "Discharge", "Admission",
    "Unit", "Clinic", "Ward", "Wing", "Floor", "Service", "Services", "Pharmacy", "Laboratory",
    "Lab", "Emergency", "Meeting", "Minutes", "Committee", "Board", "Agenda", "Newsletter",
    "Policy", "Claim", "Claims", "Application", "Form", "Invoice", "Statement", "Request",
    "Referral", "Letter", "Consultation", "Assessment", "Intake", "Encounter", "Confirmation",
    "Booking", "Shipment", "Order", "Receipt", "Notice", "Update", "Itinerary", "Programme",
    "Program", "Roster", "Bulletin", "Alert", "Alerts", "Support", "Chat", "Ticket", "Transcript",
    "Review", "Schedule", "Registration",
];

/// Length of " - Nampa", " -- Wausau Center" at the start of `rest`: a dash, then one to three
/// capitalized words ending the field (a line end, two spaces or punctuation).
fn campus_after(rest: &str) -> Option<usize> {
    let dash = [" - ", " -- ", " – ", " — "]
        .into_iter()
        .find(|d| rest.starts_with(d))?;
    let mut end = dash.len();
    for n in 0..3 {
        let word_len = rest[end..]
            .char_indices()
            .find(|&(i, c)| !(c.is_alphabetic() && (i == 0) == c.is_uppercase()))
            .map_or(rest.len() - end, |(i, _)| i);
        let word = &rest[end..end + word_len];
        if word.chars().count() < 2 || NOT_CAMPUS.contains(&word) {
            return None;
        }
        end += word_len;
        let after = &rest[end..];
        if after.is_empty()
            || after.starts_with(['\n', '\r', ',', ';', '.', ')', ':'])
            || after.starts_with("  ")
        {
            return Some(end);
        }
        if n == 2 || !after.starts_with(' ') {
            return None;
        }
        end += 1;
    }
    None
}

/// A town or a named place: no state, country, ZIP code, street or building number.
fn is_place(s: &Span) -> bool {
    matches!(canonical_label(&s.label).name, "CITY" | "LOCATION")
}

fn is_organization(s: &Span) -> bool {
    canonical_label(&s.label).name == "ORGANIZATION"
}

/// An organization or a named place, not a town: what an abbreviation or "of <place>" follows.
fn is_site(s: &Span) -> bool {
    matches!(canonical_label(&s.label).name, "ORGANIZATION" | "LOCATION")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widened(text: &str, spans: &[(&str, &str)]) -> Vec<(String, String)> {
        widened_in(text, spans, true)
    }

    /// `spans` (words of `text` in order, with their labels) after [`whole_places`].
    fn widened_in(text: &str, spans: &[(&str, &str)], clinical: bool) -> Vec<(String, String)> {
        let mut from = 0;
        let mut v: Vec<Span> = spans
            .iter()
            .map(|(word, label)| {
                let start = from + text[from..].find(word).expect("word in text");
                from = start + word.len();
                Span::pattern(start, from, *label, 0.9, "t")
            })
            .collect();
        whole_places(text, &mut v, clinical);
        v.iter()
            .map(|s| (text[s.start..s.end].to_string(), s.label.clone()))
            .collect()
    }

    fn one(text: &str, spans: &[(&str, &str)]) -> String {
        let w = widened(text, spans);
        assert_eq!(w.len(), 1, "{w:?}");
        w[0].0.clone()
    }

    #[test]
    fn a_places_abbreviation_in_parentheses_is_a_place_too() {
        let w = widened(
            "stent at University of Iowa Hospitals & Clinics (UIHC) on 4/20; flew Newark (EWR)",
            &[
                ("University of Iowa Hospitals & Clinics", "ORGANIZATION"),
                ("Newark", "CITY"),
            ],
        );
        let texts: Vec<&str> = w.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            texts,
            ["University of Iowa Hospitals & Clinics", "UIHC", "Newark"]
        );
    }

    #[test]
    fn places_of_a_lower_case_dictation() {
        let t = "tetanus given at south shore hospital. she is a senior at grand haven high \
                 school, went to north ottawa community hospital urgent care, then to the \
                 community hospital and an outside hospital. parishioner at st. coleman church.";
        let found: Vec<&str> = lower_case_places(t)
            .iter()
            .map(|s| &t[s.start..s.end])
            .collect();
        assert_eq!(
            found,
            [
                "south shore hospital",
                "grand haven high school",
                "north ottawa community hospital",
                "st. coleman church"
            ]
        );
        // A text with capitals is the recognizers' to read.
        let t = "Seen at South Shore hospital. Then went to north ottawa community hospital for \
                 care and rest, which she tolerated well over the following several days.";
        assert!(lower_case_places(t).is_empty());
    }

    #[test]
    fn a_town_or_a_name_before_an_organizations_head_word_is_its_name() {
        let w = widened(
            "at Lincoln Heights Elementary at 7:45",
            &[("Lincoln Heights", "CITY")],
        );
        assert_eq!(
            w,
            [("Lincoln Heights Elementary".into(), "LOCATION".into())]
        );
        assert_eq!(
            one(
                "lives at Glenvale Gardens Aged Care, said",
                &[("Glenvale", "CITY")]
            ),
            "Glenvale Gardens Aged Care"
        );
        assert_eq!(
            one(
                "from Thames Valley Heating Ltd, will",
                &[("Thames Valley", "LOCATION")]
            ),
            "Thames Valley Heating Ltd"
        );
        assert_eq!(
            one(
                "taught at Lester Park Elementary for",
                &[("Lester Park", "NAME")]
            ),
            "Lester Park Elementary"
        );
        // Schools by their level ("Greenfield Primary", "Calder Valley Grammar"), but a street
        // named for one is a street ("Springfield High Road", "Lincoln Park Street").
        assert_eq!(
            one("up from Greenfield Primary yeah", &[("Greenfield", "CITY")]),
            "Greenfield Primary"
        );
        assert_eq!(
            one(
                "taught at Calder Valley Grammar for",
                &[("Calder Valley", "NAME")]
            ),
            "Calder Valley Grammar"
        );
        assert_eq!(
            one(
                "lives on Springfield High Road now",
                &[("Springfield", "CITY")]
            ),
            "Springfield"
        );
        assert_eq!(
            one("at Lincoln Park Street and", &[("Lincoln", "CITY")]),
            "Lincoln"
        );
        // No head word: nothing taken ("Boston Marathon", "Ann Smith Said").
        assert_eq!(
            one("ran the Boston Marathon twice", &[("Boston", "CITY")]),
            "Boston"
        );
        assert_eq!(
            one("and Ann Smith Said no", &[("Ann Smith", "NAME")]),
            "Ann Smith"
        );
    }

    #[test]
    fn an_organizations_trade_words_and_the_place_it_serves_are_its_name() {
        assert_eq!(
            one(
                "Reported to Monongalia County Sheriff by",
                &[("Monongalia County", "CITY")]
            ),
            "Monongalia County Sheriff"
        );
        assert_eq!(
            one(
                "Pediatrician chosen: Kids First Pediatrics of Brandon. Delivery",
                &[("Kids First Pediatrics", "ORGANIZATION")]
            ),
            "Kids First Pediatrics of Brandon"
        );
        assert_eq!(
            one(
                "Visiting Nurse Association of the Treasure Valley visit",
                &[("Visiting Nurse Association", "LOCATION")]
            ),
            "Visiting Nurse Association of the Treasure Valley"
        );
        // A surname that is also a trade word stays a name; a town is no organization.
        assert_eq!(
            one("seen by Nancy Park today", &[("Nancy", "NAME")]),
            "Nancy"
        );
        assert_eq!(
            one("the mayor of Boston of the time", &[("Boston", "CITY")]),
            "Boston"
        );
        assert_eq!(
            one(
                "Express Scripts Holding Company, 735",
                &[("Express Scripts", "ORGANIZATION")]
            ),
            "Express Scripts"
        );
        // A trade a firm names itself for.
        assert_eq!(
            one(
                "The fence company was Severn Valley Fencing if that matters",
                &[("Severn Valley", "LOCATION")]
            ),
            "Severn Valley Fencing"
        );
        assert_eq!(
            one(
                "invoice addressed to Achebe & Sons Ventures.",
                &[("Achebe", "ORGANIZATION")]
            ),
            "Achebe & Sons Ventures"
        );
    }

    #[test]
    fn outside_clinical_text_only_a_place_of_care_takes_its_town() {
        let join = |text: &str, org: &str, town: &str| {
            let spans = [(org, "ORGANIZATION"), (town, "CITY")];
            let w = widened_in(text, &spans, false);
            w.into_iter().map(|(value, _)| value).collect::<Vec<_>>()
        };
        assert_eq!(
            join(
                "it's Karen from Kwik Fit in Swindon, about",
                "Kwik Fit",
                "Swindon"
            ),
            ["Kwik Fit", "Swindon"]
        );
        assert_eq!(
            join(
                "born at Mercy Hospital in Iowa City on",
                "Mercy Hospital",
                "Iowa City"
            ),
            ["Mercy Hospital in Iowa City"]
        );
    }

    #[test]
    fn a_place_takes_the_head_word_after_it_but_no_department() {
        for (text, found, whole) in [
            (
                "at Royal Calder Infirmary today",
                "Royal Calder",
                "Royal Calder Infirmary",
            ),
            (
                "from Coffs Equipment Hire, they said",
                "Coffs",
                "Coffs Equipment Hire",
            ),
            (
                "scheme: Ubuntu Health Fund (Classic)",
                "Ubuntu Health",
                "Ubuntu Health Fund",
            ),
            ("Iloilo City Patient:", "Iloilo", "Iloilo City"),
        ] {
            assert_eq!(one(text, &[(found, "LOCATION")]), whole);
        }
        assert_eq!(
            one(
                "Mercy General Hospital Department of Imaging Study:",
                &[("Mercy General Hospital", "ORGANIZATION")]
            ),
            "Mercy General Hospital"
        );
    }

    #[test]
    fn a_place_of_care_and_its_town_are_one_place() {
        let w = widened(
            "at St. Joseph's Health in Detroit, MI on",
            &[
                ("St. Joseph's Health", "ORGANIZATION"),
                ("Detroit", "CITY"),
                ("MI", "STATE"),
            ],
        );
        assert_eq!(
            w,
            [
                ("St. Joseph's Health in Detroit".into(), "LOCATION".into()),
                ("MI".into(), "STATE".into())
            ]
        );
        assert_eq!(
            one("visited our New York clinic on", &[("New York", "CITY")]),
            "New York clinic"
        );
        assert_eq!(
            one("the Chicago downtown clinic.", &[("Chicago", "CITY")]),
            "Chicago downtown clinic"
        );
        assert_eq!(
            one(
                "at Brigham and Women's Hospital, Boston.",
                &[
                    ("Brigham and Women's Hospital", "LOCATION"),
                    ("Boston", "CITY")
                ]
            ),
            "Brigham and Women's Hospital, Boston"
        );
        // Two places of care, a state, and words that only start like a care word stay apart.
        assert_eq!(
            widened(
                "Mayo Clinic, Cleveland Clinic",
                &[
                    ("Mayo Clinic", "ORGANIZATION"),
                    ("Cleveland Clinic", "ORGANIZATION")
                ]
            )
            .len(),
            2
        );
        assert_eq!(one("Boston, MA", &[("MA", "STATE")]), "MA");
        assert_eq!(
            one(
                "Bayou City Dialysis - Pasadena   Station 11",
                &[
                    ("Bayou City Dialysis", "ORGANIZATION"),
                    ("Pasadena", "CITY")
                ]
            ),
            "Bayou City Dialysis - Pasadena"
        );
        assert_eq!(
            one(
                "TRIAGE  Saint Alphonsus Medical Center - Nampa  Date",
                &[("Saint Alphonsus Medical Center", "ORGANIZATION")]
            ),
            "Saint Alphonsus Medical Center - Nampa"
        );
        assert_eq!(
            one(
                "Marshfield Clinic -- Wausau Center\n",
                &[("Marshfield Clinic", "ORGANIZATION")]
            ),
            "Marshfield Clinic -- Wausau Center"
        );
        for text in [
            "Mayo Clinic - Dr. Smith called",
            "Mayo Clinic - PHARMACIST NOTE",
            "Mayo Clinic - the patient was seen",
            "Mayo Clinic - Progress Note",
            "Meadowbrook Behavioral Hospital - Adolescent Unit Date",
            "Kelburn Bowling Club - Committee Meeting Minutes\n",
            "Enterprise Life Assurance - Funeral Policy Claim\n",
            "Chris Hani Baragwanath Academic Hospital - Adult Emergency  Casualty",
        ] {
            let place = text.split(" -").next().unwrap_or(text);
            assert_eq!(one(text, &[(place, "ORGANIZATION")]), place);
        }
        assert_eq!(one("Boston clinician", &[("Boston", "CITY")]), "Boston");
        assert_eq!(one("Dallas office", &[("Dallas", "NAME")]), "Dallas");
    }
}
