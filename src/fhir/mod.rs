//! FHIR: bulk exports de-identified, from a server (SMART Backend Services + Bulk Data) or
//! from files already on disk, to NDJSON and Parquet per resource type.

pub mod dates;
pub mod export;
pub mod files;
pub mod patients;
pub mod pseudonym;
pub mod resource;
pub mod table;
pub mod types;
pub mod xhtml;
