//! Cohort resolution over Arrow: which patients match a phenotype (or a Circe cohort
//! expression), with evidence pointers and provenance, never text.

pub mod events;
