//! `/openapi.json`, generated: paths from the route catalog the router is built from, request
//! schemas from the same declarations the validator enforces, scopes from the auth module's
//! route map, and error bodies from the one error mapping. Nothing here is written twice.

use serde_json::{Map, Value, json};

use super::catalog::{self, Body, Route};
use super::openapi_components as parts;
use super::validate::{Bound, Field, Schema, Ty};

/// The REST interface version this service implements (the interface's section 9).
pub const INTERFACE_VERSION: &str = "2.1.0";

/// Errors every authenticated route can also give.
const AUTH_ERRORS: &[u16] = &[401, 403, 429];

/// The whole document.
pub fn document() -> Value {
    let mut schemas = parts::schemas();
    let mut paths = Map::new();
    for route in catalog::routes().iter().filter(|r| !r.hidden) {
        let op = operation(route, &mut schemas);
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        if let Some(obj) = entry.as_object_mut() {
            obj.insert(route.method.as_str().to_ascii_lowercase(), op);
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "phiflow",
            "version": INTERFACE_VERSION,
            "summary": "Clinical text privacy service: find and remove PHI/PII",
            "description": "Finds and removes protected health information in clinical text, \
                streams it, runs durable bulk jobs, and answers operational probes. \
                Authentication is off by default; when `SERVICE_AUTH_ENABLED` is true every \
                route except the probes, `/metrics` and the documentation needs an API key, a \
                JWT bearer token or (with mutual TLS) a mapped client certificate, and the \
                scopes listed on each operation.",
            "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" },
            "x-service-version": env!("CARGO_PKG_VERSION"),
        },
        "tags": parts::tags(),
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": parts::error_responses(),
            "securitySchemes": parts::security_schemes(),
        },
    })
}

fn operation(route: &Route, schemas: &mut Map<String, Value>) -> Value {
    let mut op = json!({
        "operationId": route.operation_id,
        "summary": route.summary,
        "tags": [route.tag],
    });
    let mut params = Vec::new();
    for name in path_params(route.path) {
        params.push(json!({
            "name": name, "in": "path", "required": true, "schema": { "type": "string" },
        }));
    }
    params.push(json!({
        "name": "X-Request-ID", "in": "header", "required": false,
        "description": "Correlation id, echoed (or generated) on every response",
        "schema": { "type": "string", "maxLength": 128 },
    }));
    op["parameters"] = json!(params);
    if let Some(schema) = route.request {
        let reference = register(schema, schemas);
        let mut media = json!({ "schema": reference });
        if let Some(example) = parts::request_example(schema.name) {
            media["example"] = example;
        }
        op["requestBody"] = json!({
            "required": true,
            "content": { "application/json": media },
        });
    }
    let mut responses = Map::new();
    responses.insert(route.status.to_string(), success(route.body));
    let exempt = crate::auth::is_exempt(route.path);
    let mut errors: Vec<u16> = route.errors.to_vec();
    if route.request.is_some() {
        // Any body can stall past the body read timeout.
        errors.push(408);
    }
    if !exempt {
        errors.extend_from_slice(AUTH_ERRORS);
        errors.push(500);
    }
    errors.sort_unstable();
    errors.dedup();
    for status in errors {
        if status == 503 && route.path == "/readyz" {
            responses.insert(
                "503".into(),
                json!({
                    "description": "Not ready yet, with the reasons",
                    "content": { "application/json": {
                        "schema": { "$ref": "#/components/schemas/Readyz" } } },
                }),
            );
            continue;
        }
        responses.insert(
            status.to_string(),
            json!({ "$ref": format!("#/components/responses/{status}") }),
        );
    }
    op["responses"] = Value::Object(responses);
    if exempt {
        op["security"] = json!([]);
        return op;
    }
    let scopes: Vec<&str> = crate::auth::builtin_route_scopes()
        .iter()
        .filter(|(m, p, _)| *m == route.method.as_str() && *p == route.path)
        .map(|(_, _, s)| *s)
        .collect();
    if scopes.is_empty() {
        op["description"] = json!("Needs any valid credential (deny-by-default) and no scope.");
    }
    op["security"] = json!([
        { "apiKeyHeader": scopes },
        { "apiKeyAuthorization": scopes },
        { "bearerJwt": scopes },
        { "mutualTls": scopes },
    ]);
    op
}

fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

fn success(body: Body) -> Value {
    let reference = |name: &str| json!({ "$ref": format!("#/components/schemas/{name}") });
    match body {
        Body::Json(name) => json!({
            "description": "Success",
            "content": { "application/json": { "schema": reference(name) } },
        }),
        Body::Ndjson(name) => json!({
            "description": "NDJSON: one JSON record per line, in order",
            "content": { "application/x-ndjson": {
                "schema": reference(name),
            } },
        }),
        Body::Html => json!({
            "description": "An HTML page",
            "content": { "text/html": { "schema": { "type": "string" } } },
        }),
        Body::Metrics => json!({
            "description": "Prometheus text exposition format 0.0.4",
            "content": { "text/plain": { "schema": { "type": "string" } } },
        }),
        Body::Asset => json!({
            "description": "A static file",
            "content": { "application/octet-stream": { "schema": { "type": "string" } } },
        }),
    }
}

/// Adds a request schema (and the objects it nests) to the components; returns its `$ref`.
fn register(schema: &Schema, schemas: &mut Map<String, Value>) -> Value {
    if !schemas.contains_key(schema.name) {
        // Reserve the name first so a schema that nests itself cannot recurse forever.
        schemas.insert(schema.name.into(), Value::Null);
        let object = object_schema(schema, schemas);
        schemas.insert(schema.name.into(), object);
    }
    json!({ "$ref": format!("#/components/schemas/{}", schema.name) })
}

fn object_schema(schema: &Schema, schemas: &mut Map<String, Value>) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in schema.fields {
        properties.insert(field.name.into(), field_schema(schema.name, field, schemas));
        if field.required {
            required.push(field.name);
        }
    }
    let mut object = json!({
        "type": "object",
        "title": schema.name,
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        object["required"] = json!(required);
    }
    refine_object(schema, &mut object);
    if !schema.one_of.is_empty() {
        // "Given" as the validator counts it: `false`, null and blank strings are not.
        object["anyOf"] = json!(
            schema
                .one_of
                .iter()
                .map(|f| {
                    let given = match schema.fields.iter().find(|x| x.name == *f).map(|x| &x.ty) {
                        Some(Ty::Bool) => json!({ "const": true }),
                        Some(Ty::Str) => json!({ "type": "string", "pattern": r"\S" }),
                        _ => json!({ "not": { "type": "null" } }),
                    };
                    json!({ "required": [f], "properties": { *f: given } })
                })
                .collect::<Vec<_>>()
        );
        object["description"] = json!(format!(
            "At least one of {} must be given",
            schema.one_of.join(", ")
        ));
    }
    object
}

fn field_schema(schema: &str, field: &Field, schemas: &mut Map<String, Value>) -> Value {
    let mut s = ty_schema(&field.ty, schemas);
    if let Some(obj) = s.as_object_mut() {
        refine_field(schema, field.name, obj);
        for bound in field.bounds {
            let (key, v) = match *bound {
                Bound::Ge(v) => ("minimum", v),
                Bound::Gt(v) => ("exclusiveMinimum", v),
                Bound::Le(v) => ("maximum", v),
            };
            let number = if matches!(field.ty, Ty::Int) && v.fract() == 0.0 {
                json!(v as i64)
            } else {
                json!(v)
            };
            obj.insert(key.into(), number);
        }
        if let Some(n) = field.min_items {
            obj.insert("minItems".into(), json!(n));
        }
        if let Some(n) = field.max_items {
            obj.insert("maxItems".into(), json!(n));
        }
        // The body reader refuses these empty (and bounds them by a setting).
        if matches!(field.name, "text" | "input_text" | "records_jsonl") {
            obj.insert("minLength".into(), json!(1));
        }
    }
    if field.nullable && !matches!(field.ty, Ty::KeepAlive) {
        json!({ "anyOf": [s, { "type": "null" }] })
    } else {
        s
    }
}

/// A model id: `name` or `org/name`, each part 1 to 128 of `A-Z a-z 0-9 . _ -` and neither
/// `.` nor `..` (enforced by `inference::registry::model_dir`).
pub const MODEL_NAME_PATTERN: &str =
    r"^(?!\.\.?(/|$))(?!.*/\.\.?$)[A-Za-z0-9._-]{1,128}(/[A-Za-z0-9._-]{1,128})?$";

/// Semantic versioning 2.0.0, as `decisions::version::parse_semver` reads it.
const SEMVER_PATTERN: &str = r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-((0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$";

/// What the server checks of one field beyond its declared type, said in the document too
/// (each names the check that enforces it, so the two are kept together).
fn refine_field(schema: &str, field: &str, s: &mut Map<String, Value>) {
    let mut set = |k: &str, v: Value| {
        s.insert(k.into(), v);
    };
    match (schema, field) {
        // inference::registry::model_dir
        (_, "model_name") => set("pattern", json!(MODEL_NAME_PATTERN)),
        // omop::dataset::is_load_id
        (_, "load_id") => set("pattern", json!("^omop-[0-9a-f]{24}$")),
        // deid::options::resolve: a zero shift is refused
        (_, "date_shift_days") => set("not", json!({ "const": 0 })),
        // api::gateway::valid_policy_name
        ("PrivacyGatewayRequest", "policy") => set("pattern", json!("^[A-Za-z0-9_.-]{1,64}$")),
        // jobs::webhook::check_url: http(s), a host, no credentials
        ("JobWebhookRequest", "url") => {
            set("format", json!("uri"));
            set(
                "pattern",
                json!(r"^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@\s]+([/?#]\S*)?$"),
            );
        }
        // api::jobs::check_job: the secret must not be blank
        ("JobWebhookRequest", "secret") => set("pattern", json!(r"\S")),
        // decisions::request: each option at most 256 characters
        ("DecisionRequest", "options") => {
            set(
                "items",
                json!({ "type": "string", "maxLength": crate::decisions::request::MAX_OPTION_CHARS }),
            );
        }
        _ => {}
    }
}

/// What the server checks across fields of a request, said in the document too.
fn refine_object(schema: &Schema, object: &mut Value) {
    let has = |name: &str| schema.fields.iter().any(|f| f.name == name);
    let mut all_of = Vec::new();
    if schema.name == "CohortResolveRequest" {
        // api::cohort::exactly_one, twice.
        for (a, b) in [("phenotype", "circe"), ("records_jsonl", "load_id")] {
            all_of.push(json!({ "oneOf": [{ "required": [a] }, { "required": [b] }] }));
        }
    }
    if has("date_shift_days") && has("method") && has("shift_dates") {
        // deid::options::resolve: a shift needs the method shift_dates (asked for, implied by
        // `shift_dates: true`, or fixed by a policy), and `shift_dates` must agree with
        // `method`.
        let number = json!({ "required": ["date_shift_days"],
            "properties": { "date_shift_days": { "type": "integer" } } });
        all_of.push(json!({
            "if": number,
            "then": { "anyOf": [
                { "required": ["method"], "properties": { "method": { "const": "shift_dates" } } },
                { "required": ["shift_dates"], "properties": { "shift_dates": { "const": true } } },
                { "required": ["policy"], "properties": { "policy": { "type": "string" } } },
            ] },
        }));
        all_of.push(json!({
            "if": { "required": ["shift_dates", "method"],
                    "properties": { "shift_dates": { "type": "boolean" } } },
            "then": { "anyOf": [
                { "properties": { "shift_dates": { "const": true },
                                  "method": { "const": "shift_dates" } } },
                { "properties": { "shift_dates": { "const": false },
                                  "method": { "not": { "const": "shift_dates" } } } },
            ] },
        }));
    }
    if !all_of.is_empty() {
        object["allOf"] = json!(all_of);
    }
}

fn ty_schema(ty: &Ty, schemas: &mut Map<String, Value>) -> Value {
    match ty {
        Ty::Str => json!({ "type": "string" }),
        Ty::Bool => json!({ "type": "boolean" }),
        Ty::Int => json!({ "type": "integer" }),
        Ty::Num => json!({ "type": "number" }),
        Ty::Enum(values) => json!({ "type": "string", "enum": values }),
        Ty::KeepAlive => json!({
            "type": ["number", "string", "null"],
            "description": "Seconds (number), a duration string such as `5m` or `1h30m`, \
                `-1` for forever, `0` to unload after the request, or null for the server default",
        }),
        Ty::Semver => json!({ "type": "string", "pattern": SEMVER_PATTERN }),
        Ty::Object(schema) => register(schema, schemas),
        Ty::AnyObject => json!({ "type": "object" }),
        Ty::Array(item) => json!({ "type": "array", "items": ty_schema(item, schemas) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_and_request_schema_is_documented() {
        let doc = document();
        for route in catalog::routes().iter().filter(|r| !r.hidden) {
            let op = &doc["paths"][route.path][route.method.as_str().to_ascii_lowercase()];
            assert!(op.is_object(), "{} {}", route.method, route.path);
            if let Some(schema) = route.request {
                assert!(doc["components"]["schemas"][schema.name].is_object());
                assert!(
                    op["requestBody"]["content"]["application/json"]["example"].is_object(),
                    "example for {}",
                    schema.name
                );
            }
        }
        let text = doc.to_string();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("\"$ref\":\"#/components/") {
            rest = &rest[at + 21..];
            let end = rest.find('"').unwrap_or(rest.len());
            let mut parts = rest[..end].splitn(2, '/');
            let (kind, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            assert!(
                doc["components"][kind][name].is_object(),
                "dangling reference {kind}/{name}"
            );
        }
    }

    #[test]
    fn request_schemas_follow_the_validator() {
        let doc = document();
        let s = &doc["components"]["schemas"]["PIIExtractStreamRequest"];
        assert_eq!(s["additionalProperties"], json!(false));
        assert_eq!(s["required"], json!(["text"]));
        assert_eq!(s["properties"]["chunk_size"]["maximum"], json!(32768));
        assert_eq!(s["properties"]["window_chars"]["minimum"], json!(64));
        let unload = &doc["components"]["schemas"]["ModelUnloadRequest"];
        assert_eq!(unload["anyOf"][1]["required"], json!(["model_name"]));
        let job = &doc["components"]["schemas"]["DeidentifyJobRequest"];
        assert_eq!(
            job["properties"]["documents"]["items"]["$ref"],
            json!("#/components/schemas/DeidentifyJobDocument")
        );
    }
}
