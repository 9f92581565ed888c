//! De-identification that needs no model: canonical labels and their HIPAA classes,
//! deterministic recognizers with validators, date handling, surrogates, policies and the
//! operators that rewrite text.

pub mod dates;
pub mod gazetteer;
mod labels;
pub(crate) mod prefilter;
mod recognizers;
mod regex_sets;
mod script_places;
mod validators;

pub use labels::{CANONICAL, CanonicalLabel, HIPAA_CLASSES, canonical_label, is_canonical};
pub(crate) use recognizers::is_abbreviation_dot;
pub use recognizers::{Finding, RecognizerError, Recognizers};
pub use validators::Validator;
pub mod operators;
pub mod options;
pub mod policy;
pub mod surrogates;
