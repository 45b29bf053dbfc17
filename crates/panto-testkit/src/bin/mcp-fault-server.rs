//! `mcp-fault-server`: an MCP server over stdio, written with rmcp, that misbehaves on request.
//!
//! ```text
//! mcp-fault-server [--exit-at-start] [--slow-start SECS] [--pid-file FILE] [--spawn-grandchild]
//! ```
//!
//! Start-up faults: `--exit-at-start` writes `fatal: refusing to start` to stderr and exits 1;
//! `--slow-start SECS` sleeps before serving. `--pid-file FILE` appends its pid (one line per
//! start); `--spawn-grandchild` starts a `sleep` that writes its pid there too, to check the
//! process group is killed whole.
//!
//! Tools (in this order): `echo` (`{"text"}` back; `readOnlyHint`), `crash` (exits mid-call
//! after a stderr line), `hang` (never answers; writes `hang cancelled` to stderr when the
//! client cancels it), `sleep` (`{"ms"}`, then answers `slept`), `big` (a 10 MB text result),
//! `garbage` (writes lines that are not JSON-RPC to stdout, then answers `after garbage`),
//! `add_tool` (adds tool `extra` and sends `notifications/tools/list_changed`), `rich` (an
//! image, an embedded resource, a resource link), `structured` (only `structuredContent`),
//! `fail` (`isError` with text). Instructions: `Use echo to test.`
#![allow(clippy::print_stderr)]

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, EmbeddedResource, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, Resource, ResourceContents, ServerCapabilities, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};

/// A 1x1 PNG.
const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

#[derive(Clone, Default)]
struct Faults {
    extra: Arc<AtomicBool>,
}

fn schema(properties: serde_json::Value) -> Arc<serde_json::Map<String, serde_json::Value>> {
    let serde_json::Value::Object(map) = serde_json::json!({"type": "object", "properties": properties}) else {
        unreachable!("a JSON object literal")
    };
    Arc::new(map)
}

fn tool(name: &'static str, description: &'static str) -> Tool {
    Tool::new(name, description, schema(serde_json::json!({})))
}

impl Faults {
    fn tools(&self) -> Vec<Tool> {
        let mut echo = Tool::new(
            "echo",
            "Returns its text.",
            schema(serde_json::json!({"text": {"type": "string"}})),
        );
        echo.annotations = Some(ToolAnnotations::new().read_only(true));
        let mut tools = vec![
            echo,
            tool("crash", "Exits in the middle of the call."),
            tool("hang", "Never answers."),
            Tool::new(
                "sleep",
                "Answers after ms milliseconds.",
                schema(serde_json::json!({"ms": {"type": "integer"}})),
            ),
            tool("big", "Returns 10 MB of text."),
            tool("garbage", "Writes lines that are not JSON-RPC, then answers."),
            tool("add_tool", "Adds the tool `extra`."),
            tool("rich", "Returns an image, a resource and a resource link."),
            tool("structured", "Returns only structured content."),
            tool("fail", "Returns an error result."),
        ];
        if self.extra.load(Ordering::SeqCst) {
            tools.push(tool("extra", "Added at run time."));
        }
        tools
    }
}

impl ServerHandler for Faults {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("mcp-fault-server", "1.0.0"))
        .with_instructions("Use echo to test.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "echo" => CallToolResult::success(vec![ContentBlock::text(
                args.get("text").and_then(|t| t.as_str()).unwrap_or_default(),
            )]),
            "crash" => {
                eprintln!("crashing on purpose");
                std::process::exit(3);
            }
            "hang" => {
                context.ct.cancelled().await;
                eprintln!("hang cancelled");
                return Err(ErrorData::internal_error("cancelled", None));
            }
            "sleep" => {
                let ms = args.get("ms").and_then(|m| m.as_u64()).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                CallToolResult::success(vec![ContentBlock::text("slept")])
            }
            "big" => CallToolResult::success(vec![ContentBlock::text("x".repeat(10 * 1024 * 1024))]),
            "garbage" => {
                let mut out = std::io::stdout().lock();
                let _ =
                    out.write_all(b"this is not json\n{\"jsonrpc\": \"2.0\", \"id\": \"nope\", \"result\": 5}\n[1,2\n");
                let _ = out.flush();
                CallToolResult::success(vec![ContentBlock::text("after garbage")])
            }
            "add_tool" => {
                self.extra.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("added")])
            }
            "rich" => CallToolResult::success(vec![
                ContentBlock::image(PNG_1X1, "image/png"),
                ContentBlock::Resource(EmbeddedResource::new(ResourceContents::TextResourceContents {
                    uri: "file:///notes.txt".into(),
                    mime_type: Some("text/plain".into()),
                    text: "the notes".into(),
                    meta: None,
                })),
                ContentBlock::ResourceLink(Resource::new("file:///big.bin", "big.bin")),
            ]),
            "structured" => {
                let mut result = CallToolResult::structured(serde_json::json!({"answer": 42}));
                result.content.clear();
                result
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("it failed on purpose")]),
            "extra" => CallToolResult::success(vec![ContentBlock::text("extra ran")]),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(CallToolResponse::Complete(result))
    }
}

fn append_pid(file: &str, pid: u32) {
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(file) {
        let _ = writeln!(f, "{pid}");
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if let Some(file) = value("--pid-file") {
        append_pid(&file, std::process::id());
        if args.iter().any(|a| a == "--spawn-grandchild") {
            if let Ok(child) = std::process::Command::new("sleep").arg("1000").spawn() {
                append_pid(&file, child.id());
            }
        }
    }
    if args.iter().any(|a| a == "--exit-at-start") {
        eprintln!("fatal: refusing to start");
        return std::process::ExitCode::from(1);
    }
    if let Some(secs) = value("--slow-start").and_then(|s| s.parse::<f64>().ok()) {
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    }
    let service = match Faults::default().serve(rmcp::transport::stdio()).await {
        Ok(service) => service,
        Err(e) => {
            eprintln!("mcp-fault-server: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let _ = service.waiting().await;
    std::process::ExitCode::SUCCESS
}
