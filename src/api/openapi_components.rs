//! The parts of `/openapi.json` that are not request schemas: response bodies, error responses
//! (their examples come from the one error mapping), security schemes and request examples.
//! Response schemas are checked against real responses by `tests/openapi.rs`.

use serde_json::{Map, Value, json};

use super::error::ApiError;
use super::validate::Violation;
use crate::auth::AuthFailure;
use crate::gateway::{BlockReason, Failure, TransportReason};

pub fn tags() -> Value {
    json!([
        { "name": "detection", "description": "Token classification" },
        { "name": "pii", "description": "PHI/PII detection and de-identification" },
        { "name": "jobs", "description": "Durable asynchronous de-identification jobs" },
        { "name": "gateway", "description": "LLM privacy gateway" },
        { "name": "omop", "description": "OMOP loading and cohorts" },
        { "name": "fhir", "description": "FHIR Bulk Data ingestion" },
        { "name": "decisions", "description": "Closed-world decisions" },
        { "name": "models", "description": "Model registry" },
        { "name": "operations", "description": "Probes and metrics (never authenticated)" },
        { "name": "documentation", "description": "This document and its pages" },
    ])
}

pub fn security_schemes() -> Value {
    json!({
        "apiKeyHeader": {
            "type": "apiKey", "in": "header", "name": "X-API-Key",
            "description": "A static API key; the service holds only its SHA-256 digest",
        },
        "apiKeyAuthorization": {
            "type": "apiKey", "in": "header", "name": "Authorization",
            "description": "`Authorization: ApiKey <key>`",
        },
        "bearerJwt": {
            "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
            "description": "HS256 or RS256 JWT checked against the configured JWKS; `exp` \
                required, issuer and audience checked; scopes from `scope`, `scp` or `scopes`",
        },
        "mutualTls": {
            "type": "mutualTLS",
            "description": "A client certificate from the configured CA; its scopes come from \
                `SERVICE_MTLS_PRINCIPALS`, and it is used when no key or token is sent",
        },
    })
}

fn reference(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// The error responses, each with an example made by the error mapping itself.
pub fn error_responses() -> Value {
    let not_found = ApiError::NotFound {
        code: "job_not_found",
        message: "No job with this id",
    };
    let busy = ApiError::Busy {
        code: "backpressure",
        message: "The inference queue is full; retry later",
        retry_after_secs: 1,
    };
    let cases: Vec<(u16, &str, ApiError)> = vec![
        (
            400,
            "The privacy gateway refused (details.reason: the fail-closed rule)",
            ApiError::Gateway(Failure::Blocked(BlockReason::ConfidenceBelowThreshold)),
        ),
        (
            401,
            "Missing or invalid credentials",
            ApiError::Auth(AuthFailure::Invalid),
        ),
        (
            403,
            "The credential lacks a required scope",
            ApiError::Auth(AuthFailure::Forbidden {
                required: vec!["pii:read".into()],
            }),
        ),
        (404, "Not found (model, job or route)", not_found),
        (
            409,
            "Not available in the current state",
            ApiError::NotFound {
                code: "conflict",
                message: "Not available in the current state",
            },
        ),
        (
            413,
            "Body over the size limit",
            ApiError::PayloadTooLarge { limit: 33_554_432 },
        ),
        (
            408,
            "The request body stalled past the body read timeout",
            ApiError::BodyTimeout,
        ),
        (415, "Body is not JSON", ApiError::UnsupportedMediaType),
        (
            422,
            "Validation failed; every violation is listed with its location",
            ApiError::Validation(vec![Violation::new(
                &[json!("body"), json!("text")],
                "missing",
                "Field required",
                None,
            )]),
        ),
        (
            429,
            "Too many failed authentication attempts",
            ApiError::Auth(AuthFailure::RateLimited {
                retry_after_secs: 1,
            }),
        ),
        (
            500,
            "Unexpected failure (never carries caller text)",
            ApiError::Internal(String::new()),
        ),
        (
            501,
            "Valid request for a capability not built yet",
            ApiError::NotImplemented {
                route: "POST /v1/decisions",
                issue: 7,
            },
        ),
        (
            502,
            "The gateway's upstream failed or gave an unusable answer",
            ApiError::Gateway(Failure::Transport(TransportReason::Failed)),
        ),
        (
            503,
            "Busy or not ready; retry after the given seconds",
            busy,
        ),
        (
            504,
            "The per-request timeout passed",
            ApiError::Timeout { seconds: 300.0 },
        ),
        (
            507,
            "The job store's disk is full; retry after the given seconds",
            ApiError::InsufficientStorage,
        ),
    ];
    let mut out = Map::new();
    for (status, description, error) in cases {
        let (_, mut example) = error.envelope();
        if let Some(e) = example.get_mut("error") {
            e["request_id"] = json!("5f0c3c4e2b7a4a1c9d8e7f6a5b4c3d2e");
        }
        let schema = if status == 422 {
            reference("HTTPValidationError")
        } else {
            reference("ErrorEnvelope")
        };
        let mut response = json!({
            "description": description,
            "content": { "application/json": { "schema": schema, "example": example } },
        });
        let mut headers = Map::new();
        if matches!(status, 401 | 403) {
            headers.insert(
                "WWW-Authenticate".into(),
                json!({
                    "description": "`Bearer, ApiKey` when missing; `Bearer error=\"invalid_token\", \
                        ApiKey` when invalid; `Bearer error=\"insufficient_scope\", scope=\"…\"` \
                        on 403",
                    "schema": { "type": "string" },
                }),
            );
        }
        if matches!(status, 429 | 503) {
            headers.insert(
                "Retry-After".into(),
                json!({ "description": "Seconds", "schema": { "type": "integer" } }),
            );
        }
        if !headers.is_empty() {
            response["headers"] = Value::Object(headers);
        }
        out.insert(status.to_string(), response);
    }
    Value::Object(out)
}

/// Response and error body schemas.
/// The decision result's JSON Schema (the one MCP advertises), without its document keys.
fn decision_result() -> Value {
    let mut schema = crate::decisions::schema::result_schema();
    if let Some(o) = schema.as_object_mut() {
        o.remove("$schema");
        o.remove("$id");
    }
    schema
}

pub fn schemas() -> Map<String, Value> {
    let string = json!({ "type": "string" });
    let int = json!({ "type": "integer", "minimum": 0 });
    let number = json!({ "type": "number" });
    let any_object = json!({ "type": "object" });
    let warnings = json!({ "type": "array", "items": reference("Warning") });
    let entity_base = |extra: Value| {
        let mut props = json!({
            "label": string, "canonical_label": string, "hipaa_class": string,
            "confidence": { "type": "number", "minimum": 0, "maximum": 1 },
            "start": int, "end": int,
            "source": { "type": "string", "enum": ["model", "pattern", "model+pattern"] },
            "pattern": string,
        });
        if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        props
    };
    // /analyze and /pii/extract answer in the same shape.
    let detection = json!({
        "type": "object",
        "required": ["model_name", "entities", "timestamp", "processing_time", "warnings",
            "metadata"],
        "properties": {
            "model_name": string,
            "entities": { "type": "array", "items": reference("Entity") },
            "timestamp": { "type": "string", "format": "date-time" },
            "processing_time": number, "warnings": warnings, "metadata": any_object,
        },
    });
    let list = [
        (
            "ValidationError",
            json!({
                "type": "object",
                "required": ["loc", "msg", "type"],
                "properties": {
                    "loc": { "type": "array", "items": { "type": ["string", "integer"] } },
                    "msg": string, "type": string, "ctx": any_object,
                },
            }),
        ),
        (
            "HTTPValidationError",
            json!({
                "type": "object",
                "required": ["detail"],
                "properties": { "detail": { "type": "array", "items": reference("ValidationError") } },
            }),
        ),
        (
            "ErrorBody",
            json!({
                "type": "object",
                "required": ["code", "message", "details", "request_id"],
                "properties": {
                    "code": string, "message": string,
                    "details": { "type": ["object", "null"] },
                    "request_id": { "type": ["string", "null"] },
                },
            }),
        ),
        (
            "ErrorEnvelope",
            json!({
                "type": "object",
                "required": ["error"],
                "properties": { "error": reference("ErrorBody") },
            }),
        ),
        (
            "Warning",
            json!({
                "type": "object", "required": ["code", "message"],
                "properties": { "code": string, "message": string },
            }),
        ),
        (
            "Entity",
            json!({
                "type": "object",
                "description": "Offsets are code points into the exact input; text == input[start:end]",
                "required": ["text", "label", "canonical_label", "hipaa_class", "confidence", "start",
                    "end", "source"],
                "properties": entity_base(json!({ "text": string })),
            }),
        ),
        ("AnalyzeResponse", detection.clone()),
        ("PIIExtractResponse", detection),
        (
            "DeidentifiedEntity",
            json!({
                "type": "object",
                "description": "Where an identifier was and what stands there now; never its text",
                "required": ["label", "canonical_label", "hipaa_class", "confidence", "start", "end",
                    "source", "action", "replacement", "output_start", "output_end"],
                "properties": entity_base(json!({
                    "action": string,
                    "replacement": { "type": ["string", "null"] },
                    "output_start": int, "output_end": int,
                })),
            }),
        ),
        (
            "PIIDeidentifyResponse",
            json!({
                "type": "object",
                "required": ["deidentified_text", "num_entities_redacted", "entities", "counts",
                    "method", "model_name", "timestamp", "processing_time", "warnings", "metadata"],
                "properties": {
                    "deidentified_text": string,
                    "num_entities_redacted": int,
                    "entities": { "type": "array", "items": reference("DeidentifiedEntity") },
                    "counts": { "type": "object", "additionalProperties": int },
                    "method": string,
                    "policy": { "type": ["string", "null"] },
                    "model_name": string,
                    "timestamp": { "type": "string", "format": "date-time" },
                    "processing_time": number, "warnings": warnings, "metadata": any_object,
                    "mapping": {
                        "type": "object",
                        "description": "Only with keep_mapping: replacement → original",
                    },
                },
            }),
        ),
        (
            "StreamSpan",
            json!({
                "type": "object",
                "required": ["id", "label", "canonical_label", "hipaa_class", "confidence", "start",
                    "end", "byte_start", "byte_end", "source"],
                "properties": entity_base(json!({
                    "id": string, "byte_start": int, "byte_end": int,
                    "text": { "type": "string", "description": "Only with include_text" },
                })),
            }),
        ),
        (
            "StreamError",
            json!({
                "type": "object", "required": ["type", "error"],
                "properties": {
                    "type": { "const": "error" },
                    "error": reference("ErrorBody"),
                },
            }),
        ),
        (
            "ExtractStreamRecord",
            json!({
                "oneOf": [
                    {
                        "type": "object", "required": ["type", "span"],
                        "properties": { "type": { "const": "emit" }, "span": reference("StreamSpan") },
                    },
                    {
                        "type": "object", "required": ["type", "spans", "stats"],
                        "properties": {
                            "type": { "const": "final" },
                            "spans": { "type": "array", "items": reference("StreamSpan") },
                            "stats": any_object,
                        },
                    },
                    reference("StreamError"),
                ],
            }),
        ),
        (
            "DeidentifyStreamRecord",
            json!({
                "oneOf": [
                    {
                        "type": "object", "required": ["type", "index", "text"],
                        "properties": {
                            "type": { "const": "chunk" }, "index": int, "text": string,
                        },
                    },
                    {
                        "type": "object", "required": ["type"],
                        "properties": { "type": { "const": "final" } },
                    },
                    reference("StreamError"),
                ],
            }),
        ),
        (
            "Job",
            json!({
                "type": "object",
                "required": ["id", "status", "progress_percent", "document_count", "processed_count",
                    "failed_count", "label_histogram", "documents", "created_at", "updated_at",
                    "status_url", "results_url"],
                "properties": {
                    "id": string,
                    "status": { "type": "string",
                        "enum": ["queued", "running", "succeeded", "failed", "cancelled"] },
                    "progress_percent": number,
                    "document_count": int, "processed_count": int, "failed_count": int,
                    "label_histogram": { "type": "object", "additionalProperties": int },
                    "documents": { "type": "array", "items": {
                        "type": "object", "required": ["index", "status"],
                        "properties": {
                            "index": int, "id": { "type": ["string", "null"] }, "status": string,
                            "length": int, "text_hash": string,
                        },
                    } },
                    "error": { "type": ["object", "null"] },
                    "webhook": { "type": ["object", "null"] },
                    "webhook_delivery": { "type": ["object", "null"] },
                    "created_at": string, "updated_at": string,
                    "started_at": { "type": ["string", "null"] },
                    "completed_at": { "type": ["string", "null"] },
                    "expires_at": { "type": ["string", "null"] },
                    "status_url": string, "results_url": string,
                    "waiting_for": { "type": "string", "enum": ["storage"],
                        "description": "Present while the job's writes wait for disk space" },
                },
            }),
        ),
        (
            "Ingestion",
            json!({
                "type": "object",
                "required": ["job_id", "status", "progress", "created_at", "updated_at",
                    "status_url", "summary_url", "request"],
                "properties": {
                    "job_id": string,
                    "status": { "type": "string",
                        "enum": ["running", "succeeded", "failed", "cancelled"] },
                    "progress": {
                        "type": "object",
                        "properties": {
                            "phase": { "type": "string", "enum": ["authorizing", "kick_off",
                                "polling", "downloading", "deidentifying", "finishing"] },
                            "files_total": int, "files_downloaded": int, "files_done": int,
                            "resources_done": int, "resources_rejected": int,
                            "bytes_downloaded": int, "bytes_done": int, "bytes_total": int,
                            "resources_per_second": number,
                            "eta_seconds": { "type": ["number", "null"] },
                            "polls": int, "peak_inflight_downloads": int,
                            "elapsed_seconds": number,
                        },
                    },
                    "error": { "type": "object", "required": ["code", "message"],
                        "properties": { "code": string, "message": string } },
                    "created_at": { "type": ["string", "null"] },
                    "updated_at": { "type": ["string", "null"] },
                    "completed_at": { "type": ["string", "null"] },
                    "status_url": string, "summary_url": string,
                    "request": { "type": "object" },
                },
            }),
        ),
        (
            "IngestionSummary",
            json!({
                "type": "object", "required": ["job_id", "status", "summary"],
                "properties": {
                    "job_id": string,
                    "status": { "type": "string", "enum": ["succeeded", "failed", "cancelled"] },
                    "summary": {
                        "type": ["object", "null"],
                        "properties": {
                            "resources": { "type": "object", "additionalProperties": int },
                            "resources_total": int,
                            "rejections": { "type": "array", "items": {
                                "type": "object",
                                "required": ["source", "line", "reason", "sha256"],
                                "properties": {
                                    "source": string, "line": int, "reason": string,
                                    "sha256": string,
                                    "resource_type": { "type": ["string", "null"] },
                                },
                            } },
                            "outputs": { "type": "array", "items": {
                                "type": "object",
                                "required": ["resource_type", "path", "resources", "sha256", "bytes"],
                                "properties": {
                                    "resource_type": string, "path": string, "resources": int,
                                    "sha256": string, "bytes": int,
                                },
                            } },
                            "peak_inflight_downloads": int,
                        },
                    },
                    "error": { "type": ["object", "null"] },
                },
            }),
        ),
        (
            "JobResultLine",
            json!({
                "type": "object", "required": ["index", "id", "status"],
                "properties": {
                    "index": int, "id": { "type": ["string", "null"] }, "status": string,
                    "deidentified_text": string, "entities": {}, "error": {},
                },
            }),
        ),
        (
            "ModelsLoaded",
            json!({
                "type": "object",
                "required": ["device", "max_resident_models", "memory_budget_bytes",
                    "resident_memory_bytes", "loads_total", "evictions_total", "installed", "models"],
                "properties": {
                    "device": string,
                    "default_keep_alive_seconds": { "type": ["number", "null"] },
                    "max_resident_models": int, "memory_budget_bytes": int,
                    "resident_memory_bytes": int, "loads_total": int, "evictions_total": int,
                    "installed": { "type": "array", "items": string },
                    "models": { "type": "array", "items": {
                        "type": "object",
                        "required": ["model_name", "active_requests", "footprint_bytes", "labels"],
                        "properties": {
                            "model_name": string, "model_type": string, "active_requests": int,
                            "keep_alive_seconds": { "type": ["number", "null"] },
                            "keep_alive_seconds_remaining": { "type": ["number", "null"] },
                            "footprint_bytes": int, "loaded_at": string, "idle_seconds": number,
                            "labels": { "type": "array", "items": string },
                            "max_positions": int, "takes_token_type_ids": { "type": "boolean" },
                            "queue": any_object,
                        },
                    } },
                },
            }),
        ),
        (
            "Health",
            json!({
                "type": "object",
                "required": ["status", "version", "models"],
                "additionalProperties": string,
            }),
        ),
        (
            "Livez",
            json!({
                "type": "object", "required": ["status"], "additionalProperties": string,
            }),
        ),
        (
            "Readyz",
            json!({
                "type": "object", "required": ["status"],
                "properties": {
                    "status": { "type": "string", "enum": ["ready", "not_ready"] },
                    "reasons": { "type": "array", "items": string },
                    "degraded": { "type": "array", "items": string,
                        "description": "Ready, but these parts are impaired (e.g. the job store)" },
                },
            }),
        ),
        (
            "OmopLoadReport",
            json!({
                "type": "object",
                "required": ["schema_version", "load_id", "cdm_version", "records", "row_counts",
                    "rejection_counts", "rejections", "rejections_truncated", "source_note_hashes"],
                "properties": {
                    "schema_version": string, "load_id": string, "cdm_version": string,
                    "vocabulary_version": { "type": ["string", "null"] },
                    "records": int,
                    "row_counts": { "type": "object", "additionalProperties": int },
                    "rejection_counts": { "type": "object", "additionalProperties": int },
                    "rejections": { "type": "array", "items": {
                        "type": "object", "required": ["reason", "line"],
                        "properties": {
                            "reason": string, "line": int, "table": string, "field": string,
                            "entity": int, "start": int, "end": int, "domain": string,
                            "source_note_hash": string,
                        },
                    } },
                    "rejections_truncated": { "type": "boolean" },
                    "source_note_hashes": { "type": "array", "items": string },
                    "constraint_violations": {
                        "type": "object", "required": ["count", "by_reason", "violations", "truncated"],
                        "properties": {
                            "count": int,
                            "by_reason": { "type": "object", "additionalProperties": int },
                            "violations": { "type": "array", "items": {
                                "type": "object", "required": ["reason", "table", "column", "row_id"],
                                "properties": {
                                    "reason": string, "table": string, "column": string,
                                    "row_id": { "type": ["integer", "null"] },
                                },
                            } },
                            "truncated": { "type": "boolean" },
                        },
                    },
                },
            }),
        ),
        (
            "CohortResult",
            json!({
                "type": "object",
                "description": "Patients by the caller's own ids (integers as given; string ids as given). \
                    A phenotype answer has `evidence`; a Circe answer has `periods`, `index_events` \
                    and `inclusion_rules`. Never any text.",
                "required": ["schema_version", "advisory", "count", "patient_ids", "provenance"],
                "properties": {
                    "schema_version": string, "advisory": string, "count": int,
                    "patient_ids": { "type": "array", "items": { "type": ["integer", "string"] } },
                    "evidence": { "type": "array", "items": {
                        "type": "object", "required": ["patient_id", "matches"],
                        "properties": {
                            "patient_id": { "type": ["integer", "string"] },
                            "matches": { "type": "array", "items": {
                                "type": "object",
                                "required": ["criterion_id", "concept_set_id", "concept_id", "domain_table", "event_id"],
                                "properties": {
                                    "criterion_id": string, "concept_set_id": string, "concept_id": int,
                                    "vocabulary": { "type": ["string", "null"] },
                                    "domain_table": string, "event_id": int,
                                    "note_id": { "type": ["integer", "string", "null"] },
                                    "note_nlp_id": { "type": ["integer", "null"] },
                                    "source_note_hash": { "type": ["string", "null"] },
                                    "start": { "type": ["integer", "null"] },
                                    "end": { "type": ["integer", "null"] },
                                },
                            } },
                        },
                    } },
                    "periods": { "type": "array", "items": any_object },
                    "index_events": { "type": "array", "items": any_object },
                    "inclusion_rules": { "type": "array", "items": any_object },
                    "provenance": {
                        "type": "object",
                        "required": ["schema_version", "definition_sha256", "hierarchy_sha256", "concept_sets"],
                        "properties": {
                            "schema_version": string, "definition": any_object,
                            "definition_sha256": string, "hierarchy_sha256": string,
                            "load_id": { "type": ["string", "null"] },
                            "vocabulary_version": { "type": ["string", "null"] },
                            "records": any_object,
                            "matched_patient_count": int, "evidence_pointer_count": int,
                            "concept_sets": { "type": "array", "items": any_object },
                        },
                    },
                },
            }),
        ),
        (
            "GatewayResponse",
            json!({
                "type": "object",
                "required": ["request_id", "model_name", "redacted_prompt", "external_response",
                    "reidentified_text", "entity_counts", "placeholder_hashes", "policy", "upstream", "audit"],
                "properties": {
                    "request_id": string, "model_name": string, "redacted_prompt": string,
                    "external_response": string, "reidentified_text": string,
                    "entity_counts": { "type": "object", "additionalProperties": int },
                    "placeholder_hashes": { "type": "array", "items": string },
                    "policy": any_object, "upstream": any_object,
                    "audit": {
                        "type": "object", "required": ["record_hash", "previous_hash"],
                        "properties": { "record_hash": string, "previous_hash": string },
                    },
                },
            }),
        ),
        ("DecisionResult", decision_result()),
        (
            "DecisionBatchResponse",
            json!({
                "type": "object", "required": ["results"],
                "properties": { "results": {
                    "type": "array", "items": { "$ref": "#/components/schemas/DecisionResult" },
                    "description": "One result per request, in request order",
                } },
            }),
        ),
        (
            "OpenObject",
            json!({ "type": "object", "description": "A JSON object (open content)" }),
        ),
    ];
    list.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// One valid request per request schema.
pub fn request_example(schema: &str) -> Option<Value> {
    let note = "Pt John Smith (MRN 483920) seen 03/14/2024; call 617-555-0199.";
    Some(match schema {
        "AnalyzeRequest" => json!({ "text": note, "aggregation_strategy": "simple" }),
        "PIIExtractRequest" => json!({ "text": note, "confidence_threshold": 0.5 }),
        "PIIExtractStreamRequest" => json!({
            "text": note, "chunk_size": 1024, "window_chars": 4096, "include_text": false,
        }),
        "PIIDeidentifyRequest" => json!({ "text": note, "method": "replace", "keep_year": true }),
        "PIIDeidentifyStreamRequest" => {
            json!({ "text": note, "method": "mask", "chunk_size": 512 })
        }
        "DeidentifyJobRequest" => json!({
            "documents": [{ "id": "note-1", "text": note }],
            "method": "mask",
            "webhook": {
                "url": "https://hooks.example.org/phiflow",
                "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                "max_attempts": 3,
            },
        }),
        "PrivacyGatewayRequest" => json!({ "text": note, "confidence_threshold": 0.5 }),
        "OmopLoadRequest" => json!({
            "records_jsonl": concat!(
                "{\"table\":\"person\",\"person_id\":1,\"gender_concept_id\":8507,\"year_of_birth\":1960,\"race_concept_id\":0,\"ethnicity_concept_id\":0}\n",
                "{\"note_id\":\"n-1\",\"person_id\":1,\"note_date\":\"2024-03-01\",\"note_text\":\"No fever. Pneumonia.\",\"entities\":[",
                "{\"start\":3,\"end\":8,\"domain\":\"symptom\",\"concept_id\":437663,\"vocabulary_id\":\"SNOMED\",\"negation\":\"negated\"},",
                "{\"start\":10,\"end\":19,\"domain\":\"condition\",\"concept_id\":255848,\"vocabulary_id\":\"SNOMED\"}]}\n",
            ),
            "validate_constraints": true,
            "vocabulary_version": "v5.0 31-AUG-24",
        }),
        "CohortResolveRequest" => json!({
            "phenotype": {
                "schema_version": "cohort.phenotype.v1", "id": "pneumonia", "name": "Pneumonia",
                "concept_sets": [{ "id": "pna", "vocabulary": "SNOMED", "concept_ids": [255848],
                    "include_descendants": true }],
                "expression": { "operator": "criterion",
                    "criterion": { "id": "pna_dx", "concept_set": "pna" } },
            },
            "records_jsonl": concat!(
                "{\"note_id\":\"n-1\",\"person_id\":\"p-1\",\"note_date\":\"2024-03-01\",",
                "\"note_text\":\"Pneumonia.\",\"entities\":[{\"start\":0,\"end\":9,",
                "\"domain\":\"condition\",\"concept_id\":4306037,\"vocabulary_id\":\"SNOMED\"}]}\n",
            ),
            "concept_ancestors": [{ "ancestor_concept_id": 255848, "descendant_concept_id": 4306037 }],
        }),
        "SMARTBackendIngestionRequest" => json!({
            "fhir_base_url": "https://fhir.hospital.example/r4",
            "token_url": "https://fhir.hospital.example/token",
            "client_id": "phiflow",
            "private_key_pem": "-----BEGIN PRIVATE KEY-----\n…\n-----END PRIVATE KEY-----\n",
            "output_dir": "exports/2026-11",
        }),
        "ModelUnloadRequest" => json!({ "model_name": "nationaldesignstudio/rampart" }),
        "DecisionRequest" => json!({
            "mode": "fixed_choice",
            "input_text": "Is this note about cardiology?",
            "options": ["yes", "no"],
        }),
        "DecisionBatchRequest" => json!({ "requests": [{
            "mode": "boolean_choice", "input_text": "Follow-up needed?", "options": ["yes", "no"],
        }] }),
        _ => return None,
    })
}
