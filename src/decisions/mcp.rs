//! MCP (Model Context Protocol) server over stdio offering one tool, `service_decide`.
//!
//! Built on the official SDK (`rmcp`) with a hand-written [`ServerHandler`]: our schemas are
//! hand-written JSON, so the `#[tool]` macros and schemars-derived schemas would buy nothing.
//! stdout carries protocol messages only; anything diagnostic must go to stderr (rmcp itself
//! logs through `tracing`, so the embedding binary's subscriber must write to stderr).

use std::{fmt, sync::Arc};

use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestMethod,
        CompleteRequestParams, CompleteResult, ContentBlock, Implementation, JsonObject,
        ListPromptsRequestMethod, ListPromptsResult, ListResourceTemplatesRequestMethod,
        ListResourceTemplatesResult, ListResourcesRequestMethod, ListResourcesResult,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
        ToolAnnotations,
    },
    service::{RequestContext, ServerInitializeError},
    transport::io::stdio_pipes,
};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::validation::Violation;

/// The one tool this server offers.
pub const TOOL_NAME: &str = "service_decide";
/// `serverInfo.name` sent in the `initialize` response.
pub const SERVER_NAME: &str = "phiflow";

/// The synchronous decision function: the `tools/call` arguments object in, the decision
/// (matching the output schema) or the input violations out.
pub type DecideFn = dyn Fn(Value) -> Result<Value, Vec<Violation>> + Send + Sync;

/// Errors from setting up or running the server. Messages never carry client input.
#[derive(Debug)]
pub enum McpError {
    /// A schema given to [`DecideTool::new`] is not a JSON object with `"type": "object"`,
    /// which MCP requires of both `inputSchema` and `outputSchema`.
    BadSchema(&'static str),
    /// The handshake failed (bad first message, transport error). Only the kind is kept:
    /// rmcp's own error can embed the offending client message.
    Handshake(&'static str),
    /// The server task died (panic).
    Task(String),
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadSchema(which) => {
                write!(f, "{which} must be a JSON object with type \"object\"")
            }
            Self::Handshake(kind) => write!(f, "MCP handshake failed: {kind}"),
            Self::Task(e) => write!(f, "MCP server task failed: {e}"),
        }
    }
}

impl std::error::Error for McpError {}

/// `service_decide`: its description, both schemas, and the function behind it.
#[derive(Clone)]
pub struct DecideTool {
    description: String,
    input_schema: Arc<JsonObject>,
    output_schema: Arc<JsonObject>,
    decide: Arc<DecideFn>,
}

impl fmt::Debug for DecideTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecideTool")
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

fn object_schema(v: Value, which: &'static str) -> Result<Arc<JsonObject>, McpError> {
    match v {
        Value::Object(m) if m.get("type").and_then(Value::as_str) == Some("object") => {
            Ok(Arc::new(m))
        }
        _ => Err(McpError::BadSchema(which)),
    }
}

impl DecideTool {
    /// Checks the schemas up front: a non-object schema would make spec-following clients
    /// reject the whole `tools/list`.
    pub fn new(
        description: impl Into<String>,
        input_schema: Value,
        output_schema: Value,
        decide: impl Fn(Value) -> Result<Value, Vec<Violation>> + Send + Sync + 'static,
    ) -> Result<Self, McpError> {
        Ok(Self {
            description: description.into(),
            input_schema: object_schema(input_schema, "inputSchema")?,
            output_schema: object_schema(output_schema, "outputSchema")?,
            decide: Arc::new(decide),
        })
    }

    /// The `tools/list` entry. Annotations: read-only, non-destructive, idempotent, closed world.
    pub fn definition(&self) -> Tool {
        Tool::new(
            TOOL_NAME,
            self.description.clone(),
            self.input_schema.clone(),
        )
        .with_raw_output_schema(self.output_schema.clone())
        .with_annotations(
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        )
    }

    /// Runs the decision synchronously and shapes the MCP result. Violations become a tool
    /// result with `isError: true` (not a JSON-RPC error) so the model gets to read them, as
    /// text only: clients check `structuredContent` against `outputSchema` even on errors.
    pub fn call(&self, arguments: Option<JsonObject>) -> CallToolResult {
        match (self.decide)(Value::Object(arguments.unwrap_or_default())) {
            Ok(result) => CallToolResult::structured(result),
            Err(violations) => {
                let detail = json!({ "detail": violations });
                CallToolResult::error(vec![ContentBlock::text(detail.to_string())])
            }
        }
    }
}

/// The rmcp handler: server identity plus the tool.
struct DecideServer {
    tool: DecideTool,
    version: String,
}

impl ServerHandler for DecideServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, self.version.clone()))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            self.tool.definition(),
        ]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL_NAME).then(|| self.tool.definition())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL_NAME {
            // Protocol error per spec; the requested name is not echoed back.
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        // The decision may be CPU-heavy (model inference): keep it off the async workers.
        let tool = self.tool.clone();
        let arguments = request.arguments;
        match tokio::task::spawn_blocking(move || tool.call(arguments)).await {
            Ok(result) => Ok(result.into()),
            Err(_) => Err(ErrorData::internal_error("decision failed", None)),
        }
    }

    // rmcp answers these with empty lists by default although the capabilities do not
    // advertise them; answer -32601 so the server is tools-only on the wire too.
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Err(ErrorData::method_not_found::<ListPromptsRequestMethod>())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Err(ErrorData::method_not_found::<ListResourcesRequestMethod>())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Err(ErrorData::method_not_found::<
            ListResourceTemplatesRequestMethod,
        >())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Err(ErrorData::method_not_found::<CompleteRequestMethod>())
    }
}

/// Serves MCP over any byte stream pair until the client closes its side; lets tests run
/// the server in-process over `tokio::io::duplex`.
pub async fn serve<R, W>(
    tool: DecideTool,
    version: &str,
    reader: R,
    writer: W,
) -> Result<(), McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let server = DecideServer {
        tool,
        version: version.to_owned(),
    };
    let running = match server.serve((reader, writer)).await {
        Ok(running) => running,
        // EOF before `initialize` is a client that left, not a fault.
        Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(McpError::Handshake(handshake_kind(&e))),
    };
    running
        .waiting()
        .await
        .map(drop)
        .map_err(|e| McpError::Task(e.to_string()))
}

/// Serves MCP on this process's stdin/stdout until stdin closes.
///
/// Uses rmcp's `stdio_pipes`, which drives piped stdio through the reactor instead of
/// blocking threads, so a pending stdin read never holds up runtime shutdown.
pub async fn serve_stdio(tool: DecideTool, version: &str) -> Result<(), McpError> {
    let (reader, writer) = stdio_pipes();
    serve(tool, version, reader, writer).await
}

fn handshake_kind(e: &ServerInitializeError) -> &'static str {
    match e {
        ServerInitializeError::ExpectedInitializeRequest(_) => "first message was not initialize",
        ServerInitializeError::ConnectionClosed(_) => "connection closed",
        ServerInitializeError::UnexpectedInitializeResponse(_) => "unexpected initialize result",
        ServerInitializeError::InitializeFailed(_) => "initialize rejected",
        ServerInitializeError::TransportError { .. } => "transport error",
        ServerInitializeError::Cancelled => "cancelled",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool() -> DecideTool {
        DecideTool::new(
            "d",
            json!({"type": "object"}),
            json!({"type": "object"}),
            |v| {
                if v.get("ok").is_some() {
                    Ok(json!({"done": true}))
                } else {
                    Err(vec![Violation::new(
                        &[json!("ok")],
                        "missing",
                        "Field required",
                        None,
                    )])
                }
            },
        )
        .expect("valid schemas")
    }

    #[test]
    fn rejects_non_object_schemas() {
        let bad = DecideTool::new("d", json!({"type": "string"}), json!({}), |_| Ok(json!({})));
        assert!(matches!(bad, Err(McpError::BadSchema("inputSchema"))));
        let bad = DecideTool::new("d", json!({"type": "object"}), json!([]), |_| Ok(json!({})));
        assert!(matches!(bad, Err(McpError::BadSchema("outputSchema"))));
    }

    #[test]
    fn errors_are_text_only() {
        let r = tool().call(None);
        assert_eq!(r.is_error, Some(true));
        assert!(r.structured_content.is_none());
        let text = r.content[0].as_text().expect("text content").text.clone();
        let v: Value = serde_json::from_str(&text).expect("json text");
        assert_eq!(v["detail"][0]["type"], "missing");
        assert_eq!(v["detail"][0]["loc"], json!(["ok"]));
    }

    #[test]
    fn success_mirrors_structured_content_as_text() {
        let mut args = JsonObject::new();
        args.insert("ok".into(), json!(1));
        let r = tool().call(Some(args));
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.structured_content, Some(json!({"done": true})));
        let text = r.content[0].as_text().expect("text content").text.clone();
        assert_eq!(
            serde_json::from_str::<Value>(&text).ok(),
            Some(json!({"done": true}))
        );
    }
}
