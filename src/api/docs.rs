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
<body><div id="swagger-ui" data-url="openapi.json"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script src="docs/assets/swagger-init.js"></script>
</body></html>
"##;

const REDOC: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>phiflow API</title></head>
<body><redoc spec-url="openapi.json"></redoc>
<script src="docs/assets/redoc.standalone.js"></script>
</body></html>
"#;

/// Swagger UI's start-up, served as a file so the pages need no inline script.
const SWAGGER_INIT: &str = "window.ui = SwaggerUIBundle({ url: document.getElementById(\"swagger-ui\").dataset.url, \
     dom_id: \"#swagger-ui\" });\n";

/// The pages load only their own scripts and styles and the document, from this origin (no
/// inline script); `'unsafe-inline'` styles because both renderers set styles at run time, and
/// Redoc renders in a worker from a `blob:` URL. Nothing may frame the pages.
pub const DOCS_CSP: &str = "default-src 'none'; script-src 'self'; \
style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; \
connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; \
frame-ancestors 'none'";

fn page(html: &'static str) -> Response {
    (
        [
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(DOCS_CSP),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
        ],
        Html(html),
    )
        .into_response()
}

pub async fn swagger_ui() -> Response {
    page(SWAGGER_UI)
}

pub async fn redoc() -> Response {
    page(REDOC)
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
    if file == "swagger-init.js" {
        return Ok((
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/javascript; charset=utf-8"),
            )],
            SWAGGER_INIT,
        )
            .into_response());
    }
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
