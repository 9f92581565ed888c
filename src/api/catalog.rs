//! Every route, once: the router is built from this table and `/openapi.json` is generated from
//! it, so the two cannot drift apart.

use axum::http::Method;
use axum::routing::{MethodRouter, delete, get, post};

use super::state::AppState;
use super::validate::Schema;
use super::{
    cohort, decisions, deidentify, detect, docs, fhir, gateway, jobs, omop, ops, schemas, stream,
};

/// What a success response carries.
#[derive(Clone, Copy, Debug)]
pub enum Body {
    /// A JSON object described by the named component schema.
    Json(&'static str),
    /// NDJSON whose lines are described by the named component schema.
    Ndjson(&'static str),
    /// An HTML page.
    Html,
    /// Prometheus text exposition.
    Metrics,
    /// A static file.
    Asset,
}

/// One route and its documentation.
pub struct Route {
    pub method: Method,
    /// The route template, as axum and OpenAPI both write it (`/jobs/{job_id}`).
    pub path: &'static str,
    pub handler: fn() -> MethodRouter<AppState>,
    pub operation_id: &'static str,
    pub summary: &'static str,
    pub tag: &'static str,
    pub request: Option<&'static Schema>,
    pub status: u16,
    pub body: Body,
    /// Error statuses beyond those every route can give (see `openapi`).
    pub errors: &'static [u16],
    /// Excluded from `/openapi.json` (the documentation's own assets).
    pub hidden: bool,
}

const MODEL: &[u16] = &[404, 413, 415, 422, 503, 504];
const GATEWAY: &[u16] = &[400, 404, 413, 415, 422, 502, 503, 504];
const OMOP: &[u16] = &[413, 415, 422, 504];
const COHORT: &[u16] = &[404, 413, 415, 422, 504];
const DECISIONS: &[u16] = &[413, 415, 422, 504];

#[allow(clippy::too_many_arguments)]
const fn route(
    method: Method,
    path: &'static str,
    handler: fn() -> MethodRouter<AppState>,
    operation_id: &'static str,
    tag: &'static str,
    summary: &'static str,
    request: Option<&'static Schema>,
    status: u16,
    body: Body,
    errors: &'static [u16],
) -> Route {
    Route {
        method,
        path,
        handler,
        operation_id,
        summary,
        tag,
        request,
        status,
        body,
        errors,
        hidden: false,
    }
}

/// Every route of the service.
#[rustfmt::skip]
pub fn routes() -> Vec<Route> {
    use Body::*;
    vec![
        route(Method::POST, "/analyze", || post(detect::analyze), "analyze", "detection",
            "Token classification with Hugging Face aggregation semantics",
            Some(&schemas::ANALYZE), 200, Json("AnalyzeResponse"), MODEL),
        route(Method::POST, "/pii/extract", || post(detect::pii_extract), "pii_extract", "pii",
            "Find PHI/PII spans (model and validated patterns)",
            Some(&schemas::PII_EXTRACT), 200, Json("PIIExtractResponse"), MODEL),
        route(Method::POST, "/pii/extract/stream", || post(stream::extract_stream),
            "pii_extract_stream", "pii",
            "Find PHI/PII spans in a note of any size; NDJSON emit records, then final",
            Some(&schemas::PII_EXTRACT_STREAM), 200, Ndjson("ExtractStreamRecord"), MODEL),
        route(Method::POST, "/pii/deidentify", || post(deidentify::deidentify), "pii_deidentify",
            "pii", "Remove PHI/PII: mask, remove, replace with surrogates, hash or shift dates",
            Some(&schemas::PII_DEIDENTIFY), 200, Json("PIIDeidentifyResponse"), MODEL),
        route(Method::POST, "/pii/deidentify/stream", || post(stream::deidentify_stream),
            "pii_deidentify_stream", "pii",
            "De-identify a note of any size; NDJSON chunk records, then final",
            Some(&schemas::PII_DEIDENTIFY_STREAM), 200, Ndjson("DeidentifyStreamRecord"), MODEL),
        route(Method::POST, "/jobs", || post(jobs::create), "create_job", "jobs",
            "Queue a durable de-identification job (202, Location of the job)",
            Some(&schemas::DEIDENTIFY_JOB), 202, Json("Job"), &[404, 413, 415, 422, 503, 504, 507]),
        route(Method::GET, "/jobs/{job_id}", || get(jobs::get), "get_job", "jobs",
            "A job's state, counts, progress, label histogram and webhook delivery",
            None, 200, Json("Job"), &[404, 503]),
        route(Method::DELETE, "/jobs/{job_id}", || delete(jobs::cancel), "cancel_job", "jobs",
            "Cancel a job; documents not yet processed are purged",
            None, 200, Json("Job"), &[404, 503, 507]),
        route(Method::GET, "/jobs/{job_id}/results", || get(jobs::results), "get_job_results",
            "jobs", "Each finished document's de-identified text, as NDJSON",
            None, 200, Ndjson("JobResultLine"), &[404, 503]),
        route(Method::POST, "/privacy-gateway/complete", || post(gateway::complete),
            "privacy_gateway_complete", "gateway",
            "Redact a prompt, send it to the configured LLM, restore placeholders",
            Some(&schemas::PRIVACY_GATEWAY), 200, Json("GatewayResponse"), GATEWAY),
        route(Method::POST, "/omop/load", || post(omop::load), "omop_load", "omop",
            "Load grounded notes and OMOP CDM rows into Arrow and Parquet",
            Some(&schemas::OMOP_LOAD), 200, Json("OmopLoadReport"), OMOP),
        route(Method::POST, "/cohort/resolve", || post(cohort::resolve), "cohort_resolve",
            "omop", "Resolve a phenotype or a Circe cohort over inline records or a stored load",
            Some(&schemas::COHORT_RESOLVE), 200, Json("CohortResult"), COHORT),
        route(Method::POST, "/fhir/smart-backend/ingestions", || post(fhir::create),
            "create_smart_ingestion", "fhir",
            "Start a FHIR Bulk Data export with SMART backend services and de-identify it",
            Some(&schemas::SMART_INGESTION), 200, Json("Ingestion"), &[404, 413, 415, 422]),
        route(Method::GET, "/fhir/smart-backend/ingestions/{job_id}", || get(fhir::get),
            "get_smart_ingestion", "fhir",
            "An ingestion's state and progress (phase, files, resources, bytes, rate, ETA)",
            None, 200, Json("Ingestion"), &[404]),
        route(Method::DELETE, "/fhir/smart-backend/ingestions/{job_id}",
            || delete(fhir::cancel), "cancel_smart_ingestion", "fhir",
            "Cancel an ingestion; the export is deleted on the server and downloads removed",
            None, 200, Json("Ingestion"), &[404]),
        route(Method::GET, "/fhir/smart-backend/ingestions/{job_id}/summary",
            || get(fhir::summary), "get_smart_ingestion_summary", "fhir",
            "A finished ingestion's summary: counts per type, rejections, output sha256 (409 before)",
            None, 200, Json("IngestionSummary"), &[404, 409]),
        route(Method::GET, "/models/loaded", || get(ops::models_loaded), "models_loaded",
            "models", "Resident models, their memory, keep-alive and queues",
            None, 200, Json("ModelsLoaded"), &[]),
        route(Method::POST, "/models/unload", || post(ops::models_unload), "models_unload",
            "models", "Unload one model by name, or every idle one",
            Some(&schemas::MODEL_UNLOAD), 200, Json("OpenObject"), &[404, 413, 415, 422]),
        route(Method::POST, "/v1/decisions", || post(decisions::decide), "decide", "decisions",
            "A closed-world decision among fixed options; every typed state is 200",
            Some(&schemas::DECISION), 200, Json("DecisionResult"), DECISIONS),
        route(Method::POST, "/v1/decisions/batch", || post(decisions::decide_batch),
            "decide_batch", "decisions", "Up to 32 decisions, answered in order",
            Some(&schemas::DECISION_BATCH), 200, Json("DecisionBatchResponse"), DECISIONS),
        route(Method::GET, "/health", || get(ops::health), "health", "operations",
            "Service status; every value is a string", None, 200, Json("Health"), &[]),
        route(Method::GET, "/livez", || get(ops::livez), "livez", "operations",
            "Liveness", None, 200, Json("Livez"), &[]),
        route(Method::GET, "/readyz", || get(ops::readyz), "readyz", "operations",
            "Readiness: 200 once the default models are loaded, else 503 with reasons",
            None, 200, Json("Readyz"), &[503]),
        route(Method::GET, "/metrics", || get(ops::metrics), "metrics", "operations",
            "Prometheus metrics (text format 0.0.4)", None, 200, Metrics, &[]),
        route(Method::GET, "/openapi.json", || get(docs::openapi_json), "openapi", "documentation",
            "This document (OpenAPI 3.1)", None, 200, Json("OpenObject"), &[]),
        route(Method::GET, "/docs", || get(docs::swagger_ui), "docs", "documentation",
            "Swagger UI over /openapi.json", None, 200, Html, &[]),
        route(Method::GET, "/redoc", || get(docs::redoc), "redoc", "documentation",
            "Redoc over /openapi.json", None, 200, Html, &[]),
        Route {
            hidden: true,
            ..route(Method::GET, "/docs/assets/{file}", || get(docs::asset), "docs_asset",
                "documentation", "The documentation pages' scripts and styles", None, 200, Asset,
                &[404])
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_and_routes_are_unique() {
        let routes = routes();
        let mut ids: Vec<_> = routes.iter().map(|r| r.operation_id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), routes.len());
        let mut keys: Vec<_> = routes.iter().map(|r| (r.method.as_str(), r.path)).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), routes.len());
    }
}
