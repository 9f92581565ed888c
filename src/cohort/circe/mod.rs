//! Exact evaluation of the supported subset of an OHDSI Circe (ATLAS) cohort expression over
//! the Arrow event table of [`super::events`].
//!
//! [`parse`] accepts only expressions whose every element we can evaluate exactly as circe-be's
//! generated SQL would, and otherwise returns every offending element with its JSON path;
//! [`resolve`] then evaluates the parsed cohort. Concept descendants come from the caller, so
//! this module does not depend on a vocabulary or hierarchy type.

mod eval;
mod extract;
mod model;
mod parse;

#[cfg(test)]
mod tests;

pub use eval::resolve;
pub use model::{
    CirceCohort, CirceError, CirceResolution, CohortPeriod, ConceptSetExpansion, Domain,
    IndexEvidence, PathSeg, RuleStat, kind,
};
pub use parse::parse;
