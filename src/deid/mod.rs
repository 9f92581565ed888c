//! De-identification vocabulary that needs no model: canonical labels and their HIPAA classes.

mod labels;

pub use labels::{CanonicalLabel, canonical_label};
