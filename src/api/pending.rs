//! Routes whose capability a later issue builds: the request is fully validated, then the
//! answer is an honest 501 `not_implemented`, never a fake result.

use axum::extract::{Path, Request, State};

use super::body::read_json;
use super::error::ApiError;
use super::schemas;
use super::state::AppState;
use super::validate::Schema;

async fn validate_then_501(
    req: Request,
    state: &AppState,
    schema: &'static Schema,
    route: &'static str,
    issue: u32,
) -> ApiError {
    match read_json(req, state, schema).await {
        Ok(_) => ApiError::NotImplemented { route, issue },
        Err(e) => e,
    }
}

macro_rules! pending_post {
    ($fn:ident, $schema:expr, $route:literal, $issue:literal) => {
        pub async fn $fn(State(state): State<AppState>, req: Request) -> ApiError {
            validate_then_501(req, &state, &$schema, $route, $issue).await
        }
    };
}

pending_post!(
    smart_ingestion,
    schemas::SMART_INGESTION,
    "POST /fhir/smart-backend/ingestions",
    6
);

pub async fn ingestion_get(Path(_job_id): Path<String>) -> ApiError {
    ApiError::NotImplemented {
        route: "GET /fhir/smart-backend/ingestions/{job_id}",
        issue: 6,
    }
}

pub async fn ingestion_summary(Path(_job_id): Path<String>) -> ApiError {
    ApiError::NotImplemented {
        route: "GET /fhir/smart-backend/ingestions/{job_id}/summary",
        issue: 6,
    }
}
