//! `/openapi.json`, and the `/docs` (Swagger UI) and `/redoc` pages that render it. The pages'
//! scripts are never fetched at build time or from a CDN: `scripts/fetch-assets` puts pinned
//! copies in `SERVICE_DOCS_ASSETS_DIR` (default `.assets/docs`) and `/docs/assets/` serves them.

use std::sync::OnceLock;

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

use super::error::ApiError;
use super::openapi;
use super::state::AppState;

/// The document, generated once: it depends only on the route catalog and the schemas.
pub async fn openapi_json() -> Response {
    static DOC: OnceLock<String> = OnceLock::new();
    let doc: &'static str = DOC.get_or_init(|| openapi::document().to_string());
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        doc,
    )
        .into_response()
}

// Relative addresses, so the pages also work behind a proxy that mounts the service on a prefix.
const SWAGGER_UI: &str = r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>phiflow API</title>
<link rel="stylesheet" href="docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: "openapi.json", dom_id: "#swagger-ui" });</script>
</body></html>
"##;

const REDOC: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>phiflow API</title></head>
<body><redoc spec-url="openapi.json"></redoc>
<script src="docs/assets/redoc.standalone.js"></script>
</body></html>
"#;

pub async fn swagger_ui() -> Html<&'static str> {
    Html(SWAGGER_UI)
}

pub async fn redoc() -> Html<&'static str> {
    Html(REDOC)
}

/// The files the pages load; nothing else in the folder is served.
const ASSETS: &[(&str, &str)] = &[
    ("swagger-ui.css", "text/css; charset=utf-8"),
    ("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
    ("redoc.standalone.js", "text/javascript; charset=utf-8"),
];

pub async fn asset(
    State(state): State<AppState>,
    Path(file): Path<String>,
) -> Result<Response, ApiError> {
    let Some((name, content_type)) = ASSETS.iter().find(|(name, _)| *name == file) else {
        return Err(ApiError::NotFound {
            code: "route_not_found",
            message: "No such route",
        });
    };
    let path = state.settings.docs_assets_dir.join(name);
    let bytes = tokio::task::spawn_blocking(move || std::fs::read(path))
        .await
        .ok()
        .and_then(Result::ok)
        .ok_or(ApiError::NotFound {
            code: "docs_assets_missing",
            message: "The documentation assets are not installed; run scripts/fetch-assets",
        })?;
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=86400"),
            ),
        ],
        bytes,
    )
        .into_response())
}
