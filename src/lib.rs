//! phiflow: a clinical text privacy service. Text flows through typed stages (tokenize, window,
//! infer, aggregate, merge) composed into pipelines declared in `pipelines/`; the HTTP layer is a
//! thin shell over them.

pub mod api;
pub mod auth;
pub mod batch;
pub mod cohort;
pub mod config;
pub mod datafiles;
pub mod decisions;
pub mod deid;
pub mod deidentifier;
pub mod digest;
pub mod eval;
pub mod fhir;
pub mod gateway;
pub mod idhash;
pub mod inference;
pub mod jobs;
pub mod listen;
pub mod metrics;
pub mod omop;
pub mod parallel;
pub mod pipeline;
pub mod stages;
pub mod streaming;
pub mod tls;
pub mod validation;
