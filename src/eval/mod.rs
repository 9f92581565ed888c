//! Evaluation harness for the de-identifier: a synthetic, gold-labeled corpus
//! ([`generator`]) and character-level scoring with a leak check ([`metrics`]).
//!
//! Labels and classes live here so that the generator and the scorer agree on
//! one canonical mapping to the HIPAA Safe Harbor identifier classes.

pub mod generator;
pub mod metrics;
pub mod runner;
pub mod sets;

pub use generator::{GoldSpan, Note, from_jsonl, generate, to_jsonl};
pub use metrics::{ClassRow, Leak, Predicted, Report, evaluate};

/// HIPAA Safe Harbor identifier classes, in report order (A…R).
pub const CLASSES: [&str; 18] = [
    "A_NAMES",
    "B_GEOGRAPHIC",
    "C_DATES",
    "D_TELEPHONE",
    "E_FAX",
    "F_EMAIL",
    "G_SSN",
    "H_MEDICAL_RECORD",
    "I_HEALTH_PLAN",
    "J_ACCOUNT",
    "K_CERTIFICATE_LICENSE",
    "L_VEHICLE",
    "M_DEVICE",
    "N_URL",
    "O_IP_ADDRESS",
    "P_BIOMETRIC",
    "Q_PHOTO",
    "R_OTHER_UNIQUE_ID",
];

/// Canonical gold label → Safe Harbor class. `STATE` is deliberately absent:
/// a state is not PHI under Safe Harbor, so it can never be gold.
pub const LABELS: &[(&str, &str)] = &[
    ("NAME", "A_NAMES"),
    ("FIRST_NAME", "A_NAMES"),
    ("LAST_NAME", "A_NAMES"),
    ("STREET_ADDRESS", "B_GEOGRAPHIC"),
    ("BUILDING_NUMBER", "B_GEOGRAPHIC"),
    ("SECONDARY_ADDRESS", "B_GEOGRAPHIC"),
    ("CITY", "B_GEOGRAPHIC"),
    ("ZIP_CODE", "B_GEOGRAPHIC"),
    ("LOCATION", "B_GEOGRAPHIC"),
    ("DATE", "C_DATES"),
    ("TIME", "C_DATES"),
    ("AGE", "C_DATES"),
    ("PHONE", "D_TELEPHONE"),
    ("FAX", "E_FAX"),
    ("EMAIL", "F_EMAIL"),
    ("SSN", "G_SSN"),
    ("MEDICAL_RECORD_NUMBER", "H_MEDICAL_RECORD"),
    ("HEALTH_PLAN_NUMBER", "I_HEALTH_PLAN"),
    ("ACCOUNT_NUMBER", "J_ACCOUNT"),
    ("CREDIT_CARD", "J_ACCOUNT"),
    ("IBAN", "J_ACCOUNT"),
    ("DRIVERS_LICENSE", "K_CERTIFICATE_LICENSE"),
    ("LICENSE_NUMBER", "K_CERTIFICATE_LICENSE"),
    ("NPI", "K_CERTIFICATE_LICENSE"),
    ("VEHICLE_ID", "L_VEHICLE"),
    ("LICENSE_PLATE", "L_VEHICLE"),
    ("DEVICE_ID", "M_DEVICE"),
    ("MAC_ADDRESS", "M_DEVICE"),
    ("URL", "N_URL"),
    ("IP_ADDRESS", "O_IP_ADDRESS"),
    ("BIOMETRIC_ID", "P_BIOMETRIC"),
    ("PHOTO", "Q_PHOTO"),
    ("ORGANIZATION", "R_OTHER_UNIQUE_ID"),
    ("USERNAME", "R_OTHER_UNIQUE_ID"),
    ("PASSPORT", "R_OTHER_UNIQUE_ID"),
    ("TAX_ID", "R_OTHER_UNIQUE_ID"),
    ("GOVERNMENT_ID", "R_OTHER_UNIQUE_ID"),
    ("OTHER_IDENTIFIER", "R_OTHER_UNIQUE_ID"),
];

/// Safe Harbor class of a canonical label; `None` for unknown labels and for
/// `STATE`, which is never PHI.
pub fn class_for_label(label: &str) -> Option<&'static str> {
    LABELS.iter().find(|(l, _)| *l == label).map(|(_, c)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_a_label_and_every_label_a_known_class() {
        for class in CLASSES {
            assert!(LABELS.iter().any(|(_, c)| *c == class), "{class}");
        }
        for (label, class) in LABELS {
            assert!(CLASSES.contains(class), "{label}");
            assert_eq!(class_for_label(label), Some(*class));
        }
        assert_eq!(LABELS.len(), 38);
    }

    #[test]
    fn state_is_never_phi() {
        assert_eq!(class_for_label("STATE"), None);
        assert_eq!(class_for_label("name"), None);
    }
}
