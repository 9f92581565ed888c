//! Raw model labels to one documented canonical set, each with its HIPAA Safe Harbor class
//! (45 CFR 164.514(b)(2)(i), identifiers (A)–(R)).

/// A canonical label and the Safe Harbor identifier class it falls under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CanonicalLabel {
    pub name: &'static str,
    pub hipaa_class: &'static str,
}

const fn c(name: &'static str, hipaa_class: &'static str) -> CanonicalLabel {
    CanonicalLabel { name, hipaa_class }
}

/// (raw label spellings, canonical label). Spellings are compared case-insensitively after
/// stripping a B-/I- prefix and treating `-`/space as `_`.
const TABLE: &[(&[&str], CanonicalLabel)] = &[
    (
        &["given_name", "first_name", "firstname", "given"],
        c("FIRST_NAME", "A_NAMES"),
    ),
    (
        &["surname", "last_name", "lastname", "family_name"],
        c("LAST_NAME", "A_NAMES"),
    ),
    (
        &[
            "name",
            "person",
            "per",
            "patient",
            "doctor",
            "full_name",
            "middle_name",
        ],
        c("NAME", "A_NAMES"),
    ),
    (
        &["street_name", "street_address", "street", "address"],
        c("STREET_ADDRESS", "B_GEOGRAPHIC"),
    ),
    (
        &["building_number", "building"],
        c("BUILDING_NUMBER", "B_GEOGRAPHIC"),
    ),
    (
        &["secondary_address"],
        c("SECONDARY_ADDRESS", "B_GEOGRAPHIC"),
    ),
    (&["city", "town"], c("CITY", "B_GEOGRAPHIC")),
    (&["state", "county", "province"], c("STATE", "B_GEOGRAPHIC")),
    (
        &["zip_code", "zipcode", "zip", "postcode", "postal_code"],
        c("ZIP_CODE", "B_GEOGRAPHIC"),
    ),
    (&["location", "loc", "gpe"], c("LOCATION", "B_GEOGRAPHIC")),
    (
        &["date", "date_of_birth", "dob", "time", "date_time"],
        c("DATE", "C_DATES"),
    ),
    (&["age"], c("AGE", "C_DATES")),
    (
        &["phone", "phone_number", "telephone", "tel", "mobile"],
        c("PHONE", "D_TELEPHONE"),
    ),
    (&["fax", "fax_number"], c("FAX", "E_FAX")),
    (&["email", "email_address"], c("EMAIL", "F_EMAIL")),
    (&["ssn", "social_security_number"], c("SSN", "G_SSN")),
    (
        &["medical_record_number", "mrn", "medical_record"],
        c("MEDICAL_RECORD_NUMBER", "H_MEDICAL_RECORD"),
    ),
    (
        &[
            "health_plan",
            "health_plan_beneficiary_number",
            "insurance_id",
        ],
        c("HEALTH_PLAN_NUMBER", "I_HEALTH_PLAN"),
    ),
    (
        &[
            "bank_account",
            "account_number",
            "account",
            "iban",
            "routing_number",
            "credit_card",
            "credit_card_number",
        ],
        c("ACCOUNT_NUMBER", "J_ACCOUNT"),
    ),
    (
        &[
            "drivers_license",
            "driver_license",
            "license_number",
            "certificate",
            "passport",
            "government_id",
            "tax_id",
            "national_id",
        ],
        c("LICENSE_OR_ID_NUMBER", "K_CERTIFICATE_LICENSE"),
    ),
    (
        &["license_plate", "vehicle_id", "vin"],
        c("VEHICLE_ID", "L_VEHICLE"),
    ),
    (
        &["device_id", "serial_number", "device_serial"],
        c("DEVICE_ID", "M_DEVICE"),
    ),
    (&["url", "web_url"], c("URL", "N_URL")),
    (
        &["ip_address", "ip", "ipv4", "ipv6"],
        c("IP_ADDRESS", "O_IP_ADDRESS"),
    ),
    (
        &["biometric", "fingerprint"],
        c("BIOMETRIC_ID", "P_BIOMETRIC"),
    ),
    (&["photo", "image"], c("PHOTO", "Q_PHOTO")),
];

/// Any label this table does not know is still PHI-relevant until proven otherwise.
const OTHER: CanonicalLabel = c("OTHER_IDENTIFIER", "R_OTHER_UNIQUE_ID");

/// The canonical label of a raw model label or recognizer type.
pub fn canonical_label(raw: &str) -> CanonicalLabel {
    let (_, ty) = crate::stages::aggregate::split_tag(raw);
    let key = ty.trim().to_ascii_lowercase().replace(['-', ' '], "_");
    TABLE
        .iter()
        .find(|(spellings, _)| spellings.contains(&key.as_str()))
        .map(|(_, canon)| *canon)
        .unwrap_or(OTHER)
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
}
