//! Raw model labels and recognizer types to one documented canonical set, each canonical label
//! with its HIPAA Safe Harbor identifier class (45 CFR 164.514(b)(2)(i), identifiers (A)–(R)).
//! The README's label table is generated from `CANONICAL`.

/// A canonical label and the Safe Harbor identifier class it falls under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CanonicalLabel {
    pub name: &'static str,
    pub hipaa_class: &'static str,
}

/// The 18 Safe Harbor identifier classes, in the order of the rule.
pub const HIPAA_CLASSES: &[(&str, &str)] = &[
    ("A_NAMES", "Names"),
    (
        "B_GEOGRAPHIC",
        "Geographic subdivisions smaller than a state",
    ),
    ("C_DATES", "Dates (except year) and ages over 89"),
    ("D_TELEPHONE", "Telephone numbers"),
    ("E_FAX", "Fax numbers"),
    ("F_EMAIL", "Email addresses"),
    ("G_SSN", "Social Security numbers"),
    ("H_MEDICAL_RECORD", "Medical record numbers"),
    ("I_HEALTH_PLAN", "Health plan beneficiary numbers"),
    ("J_ACCOUNT", "Account numbers"),
    ("K_CERTIFICATE_LICENSE", "Certificate and license numbers"),
    (
        "L_VEHICLE",
        "Vehicle identifiers and serial numbers, license plates",
    ),
    ("M_DEVICE", "Device identifiers and serial numbers"),
    ("N_URL", "Web URLs"),
    ("O_IP_ADDRESS", "IP addresses"),
    ("P_BIOMETRIC", "Biometric identifiers"),
    ("Q_PHOTO", "Full-face photographs and comparable images"),
    (
        "R_OTHER_UNIQUE_ID",
        "Any other unique identifying number, characteristic or code",
    ),
];

const fn c(name: &'static str, hipaa_class: &'static str) -> CanonicalLabel {
    CanonicalLabel { name, hipaa_class }
}

/// Every canonical label with the raw spellings (model labels, recognizer types) that map to it.
/// Spellings are compared case-insensitively after stripping a B-/I- prefix and treating `-` and
/// spaces as `_`; the canonical name itself always maps to itself.
pub const CANONICAL: &[(CanonicalLabel, &[&str])] = &[
    (
        c("NAME", "A_NAMES"),
        &[
            "person",
            "per",
            "patient",
            "doctor",
            "full_name",
            "middle_name",
            "staff",
        ],
    ),
    (
        c("FIRST_NAME", "A_NAMES"),
        &["given_name", "firstname", "given"],
    ),
    (
        c("LAST_NAME", "A_NAMES"),
        &["surname", "lastname", "family_name"],
    ),
    (
        c("STREET_ADDRESS", "B_GEOGRAPHIC"),
        &["street_name", "street", "address"],
    ),
    (c("BUILDING_NUMBER", "B_GEOGRAPHIC"), &["building"]),
    (
        c("SECONDARY_ADDRESS", "B_GEOGRAPHIC"),
        &["apartment", "room", "unit"],
    ),
    (c("CITY", "B_GEOGRAPHIC"), &["town"]),
    (
        c("ZIP_CODE", "B_GEOGRAPHIC"),
        &["zipcode", "zip", "postcode", "postal_code"],
    ),
    (
        c("LOCATION", "B_GEOGRAPHIC"),
        &["loc", "gpe", "county", "hospital", "facility"],
    ),
    // States and countries may stay under Safe Harbor; the labels exist so policies can say so.
    (c("STATE", "B_GEOGRAPHIC"), &["province", "region"]),
    (c("COUNTRY", "B_GEOGRAPHIC"), &["nation"]),
    (c("DATE", "C_DATES"), &["date_of_birth", "dob", "date_time"]),
    (c("TIME", "C_DATES"), &[]),
    (c("AGE", "C_DATES"), &[]),
    (
        c("PHONE", "D_TELEPHONE"),
        &["phone_number", "telephone", "tel", "mobile"],
    ),
    (c("FAX", "E_FAX"), &["fax_number"]),
    (c("EMAIL", "F_EMAIL"), &["email_address"]),
    (c("SSN", "G_SSN"), &["social_security_number", "us_ssn"]),
    (
        c("MEDICAL_RECORD_NUMBER", "H_MEDICAL_RECORD"),
        &["mrn", "medical_record", "medicalrecord"],
    ),
    (
        c("HEALTH_PLAN_NUMBER", "I_HEALTH_PLAN"),
        &[
            "health_plan",
            "healthplan",
            "health_plan_beneficiary_number",
            "insurance_id",
        ],
    ),
    (
        c("ACCOUNT_NUMBER", "J_ACCOUNT"),
        &["bank_account", "account", "routing_number"],
    ),
    (
        c("CREDIT_CARD", "J_ACCOUNT"),
        &["credit_card_number", "credit_debit_card"],
    ),
    (c("IBAN", "J_ACCOUNT"), &["iban_code"]),
    (
        c("DRIVERS_LICENSE", "K_CERTIFICATE_LICENSE"),
        &["driver_license", "us_driver_license"],
    ),
    (
        c("LICENSE_NUMBER", "K_CERTIFICATE_LICENSE"),
        &["license", "certificate", "medical_license", "dea"],
    ),
    (c("NPI", "K_CERTIFICATE_LICENSE"), &["us_npi"]),
    (
        c("VEHICLE_ID", "L_VEHICLE"),
        &["vin", "vehicle", "vehicle_identifier"],
    ),
    (
        c("LICENSE_PLATE", "L_VEHICLE"),
        &["vehicle_registration", "plate"],
    ),
    (
        c("DEVICE_ID", "M_DEVICE"),
        &["device", "serial_number", "device_serial", "imei"],
    ),
    (c("MAC_ADDRESS", "M_DEVICE"), &["mac"]),
    (c("URL", "N_URL"), &["web_url", "url_personal"]),
    (
        c("IP_ADDRESS", "O_IP_ADDRESS"),
        &["ip", "ipv4", "ipv6", "ipaddr"],
    ),
    (
        c("BIOMETRIC_ID", "P_BIOMETRIC"),
        &["biometric", "bioid", "fingerprint"],
    ),
    (c("PHOTO", "Q_PHOTO"), &["image", "photograph"]),
    (
        c("ORGANIZATION", "R_OTHER_UNIQUE_ID"),
        &["org", "organisation", "employer", "company"],
    ),
    (c("USERNAME", "R_OTHER_UNIQUE_ID"), &["user_name", "user"]),
    (
        c("PASSPORT", "R_OTHER_UNIQUE_ID"),
        &["passport_number", "us_passport"],
    ),
    (c("TAX_ID", "R_OTHER_UNIQUE_ID"), &["ein", "itin", "tin"]),
    (
        c("GOVERNMENT_ID", "R_OTHER_UNIQUE_ID"),
        &["national_id", "id_card", "idnum", "id_num"],
    ),
    (c("OTHER_IDENTIFIER", "R_OTHER_UNIQUE_ID"), &["other", "id"]),
];

/// Any label this table does not know is still PHI-relevant until proven otherwise.
const OTHER: CanonicalLabel = c("OTHER_IDENTIFIER", "R_OTHER_UNIQUE_ID");

/// The canonical label of a raw model label or recognizer type.
pub fn canonical_label(raw: &str) -> CanonicalLabel {
    let ty = raw
        .strip_prefix("B-")
        .or_else(|| raw.strip_prefix("I-"))
        .unwrap_or(raw);
    let key = ty.trim().to_ascii_lowercase().replace(['-', ' '], "_");
    CANONICAL
        .iter()
        .find(|(canon, spellings)| {
            canon.name.eq_ignore_ascii_case(&key) || spellings.contains(&key.as_str())
        })
        .map(|(canon, _)| *canon)
        .unwrap_or(OTHER)
}

/// Whether `name` is one of the canonical labels (policy files are checked against this).
pub fn is_canonical(name: &str) -> bool {
    CANONICAL.iter().any(|(c, _)| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rampart_labels_map() {
        assert_eq!(canonical_label("GIVEN_NAME").name, "FIRST_NAME");
        assert_eq!(canonical_label("B-SURNAME").name, "LAST_NAME");
        assert_eq!(canonical_label("ZIP_CODE").hipaa_class, "B_GEOGRAPHIC");
        assert_eq!(canonical_label("phone_number").name, "PHONE");
        assert_eq!(canonical_label("something new").name, "OTHER_IDENTIFIER");
    }

    #[test]
    fn every_model_label_of_the_default_model_maps_somewhere_specific() {
        for raw in [
            "GIVEN_NAME",
            "SURNAME",
            "EMAIL",
            "PHONE",
            "URL",
            "TAX_ID",
            "BANK_ACCOUNT",
            "ROUTING_NUMBER",
            "GOVERNMENT_ID",
            "PASSPORT",
            "DRIVERS_LICENSE",
            "BUILDING_NUMBER",
            "STREET_NAME",
            "SECONDARY_ADDRESS",
            "CITY",
            "STATE",
            "ZIP_CODE",
        ] {
            assert_ne!(canonical_label(raw), OTHER, "{raw}");
        }
    }

    #[test]
    fn canonical_names_map_to_themselves_and_classes_exist() {
        let classes: Vec<_> = HIPAA_CLASSES.iter().map(|(c, _)| *c).collect();
        assert_eq!(classes.len(), 18);
        for (canon, spellings) in CANONICAL {
            assert_eq!(canonical_label(canon.name), *canon);
            assert!(classes.contains(&canon.hipaa_class), "{}", canon.name);
            for s in *spellings {
                assert_eq!(canonical_label(s), *canon, "{s}");
            }
        }
        for (class, _) in HIPAA_CLASSES {
            assert!(
                CANONICAL.iter().any(|(c, _)| c.hipaa_class == *class),
                "{class}"
            );
        }
    }
}
