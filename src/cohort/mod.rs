//! Phenotype cohorts: parse a `cohort.phenotype.v1` definition, expand its concept sets over a
//! concept hierarchy, and resolve it over the Arrow event table into patients with evidence.

pub mod circe;
pub mod evaluate;
pub mod events;
pub mod hierarchy;
pub mod phenotype;

pub use evaluate::{
    ConceptSetProvenance, EvidenceMatch, MemberCount, PatientEvidence, Resolution, ResolveError,
    resolve,
};
pub use hierarchy::Hierarchy;
pub use phenotype::{
    PathSeg, Phenotype, PhenotypeError, SCHEMA_VERSION, definition_sha256, parse as parse_phenotype,
};
