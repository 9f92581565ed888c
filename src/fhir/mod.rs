//! FHIR: bulk exports de-identified, from a server (SMART Backend Services + Bulk Data) or
//! from files already on disk, to NDJSON and Parquet per resource type.

pub mod dates;
pub mod patients;
pub mod pseudonym;
pub mod resource;
pub mod types;
pub mod xhtml;
