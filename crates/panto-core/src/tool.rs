//! Tools: what the model may call, and how a call comes back.

mod typed;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

pub use crate::conversation::ToolDecl;
pub use crate::store::files::FileCheckpoints;
pub use typed::tool_fn;
pub(crate) use typed::{from_value, is_object_schema, schema_of, Mismatch};

/// One call of a tool by the model.
///
/// The agent makes these; a tool reads them. Outside an agent (a test, a benchmark, an embedder
/// calling a tool directly) build one with [`ToolCall::new`]: the struct is `#[non_exhaustive]` so
/// that a field added later does not break such code.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolCall {
    /// The provider's call id.
    pub id: String,
    /// The tool's name as registered (for a source's tool: the source's own name for it).
    pub name: String,
    /// The arguments the model sent.
    pub input: serde_json::Value,
    /// Cancelled when the turn is cancelled or its stream dropped; a long-running tool should
    /// watch it and return early.
    pub cancel: CancellationToken,
    /// Where a tool that changes files records each change before making it, so that a rewind
    /// can restore the files (see [`FileCheckpoints`]). Set by the agent; `None` for a call made
    /// outside an agent.
    pub checkpoints: Option<FileCheckpoints>,
}

impl ToolCall {
    /// A call of `name` with `input`, a fresh cancel token and no checkpoint sink.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: serde_json::Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            input,
            cancel: CancellationToken::new(),
            checkpoints: None,
        }
    }

    /// This call, cancelled by `cancel`.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// This call, recording file changes in `checkpoints`.
    pub fn with_checkpoints(mut self, checkpoints: FileCheckpoints) -> Self {
        self.checkpoints = Some(checkpoints);
        self
    }
}

/// One part of what a tool returns.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultPart {
    /// Text.
    Text(String),
    /// An image: raw encoded bytes (PNG, JPEG, GIF or WebP). panto detects the type from the
    /// bytes and resizes it to [`Config::max_image_dimension`](crate::Config::max_image_dimension).
    Image(Vec<u8>),
}

/// What a tool call returns.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolCallResult {
    /// The parts, in order.
    pub parts: Vec<ResultPart>,
    /// Whether the call failed; the model sees the parts either way.
    pub is_error: bool,
}

impl ToolCallResult {
    /// A successful result holding one text part.
    pub fn text(text: impl Into<String>) -> Self {
        ToolCallResult {
            parts: vec![ResultPart::Text(text.into())],
            is_error: false,
        }
    }

    /// A failed result holding one text part that explains the failure.
    pub fn error(text: impl Into<String>) -> Self {
        ToolCallResult {
            parts: vec![ResultPart::Text(text.into())],
            is_error: true,
        }
    }

    /// A successful result holding one image.
    pub fn image(bytes: Vec<u8>) -> Self {
        ToolCallResult {
            parts: vec![ResultPart::Image(bytes)],
            is_error: false,
        }
    }
}

/// The error type a tool may return; it becomes an `is_error` result whose text is the error's
/// display form.
pub type ToolError = Box<dyn std::error::Error + Send + Sync>;

/// A single tool.
///
/// Calls within one assistant message run concurrently, so `call` may be entered several times at
/// once. They run inside the turn's [`Stream`](crate::Stream), progressing while its consumer
/// pulls events, as the response does, rather than on a Tokio task each: a tool that does
/// blocking or CPU-heavy work moves it to the blocking pool (`tokio::task::spawn_blocking`), or
/// it holds up the other calls and the turn. For a tool whose arguments are a Rust type, [`tool_fn`] builds one
/// from an async function; [`ToolDecl::for_args`] and [`ToolCall::args`] serve a hand-written
/// implementation.
///
/// The trait is async through [`macro@crate::async_trait`], which panto-core re-exports, so an
/// implementation needs no dependency of its own:
///
/// ```
/// use panto_core::{async_trait, Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};
///
/// struct Clock;
///
/// #[async_trait]
/// impl Tool for Clock {
///     fn declaration(&self) -> ToolDecl {
///         ToolDecl {
///             name: "clock".into(),
///             description: "The current UTC time.".into(),
///             input_schema: serde_json::json!({"type": "object", "properties": {}}),
///         }
///     }
///
///     async fn call(&self, _call: ToolCall) -> Result<ToolCallResult, ToolError> {
///         Ok(ToolCallResult::text("12:00"))
///     }
/// }
/// ```
#[async_trait]
pub trait Tool: Send + Sync {
    /// The declaration offered to the model.
    fn declaration(&self) -> ToolDecl;

    /// Runs one call. An `Err` or a panic becomes an error result for the model; the turn goes
    /// on.
    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError>;
}

/// A provider of many tools under one name (an MCP server, a plugin host, a C library).
///
/// Tool names from a source may use any characters; panto offers each as
/// `<source>__<tool>` encoded into the wire alphabet, and decodes the name back on call.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// The source's name, used as the wire prefix of its tools.
    fn name(&self) -> &str;

    /// The tools this source offers, with their own names.
    fn tools(&self) -> Vec<ToolDecl>;

    /// Runs one call; `call.name` is the source's own name for the tool.
    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError>;

    /// A number that changes whenever [`tools`](ToolSource::tools) would answer differently (an
    /// MCP server's `notifications/tools/list_changed`, say). The agent compares it before each
    /// request to the model and re-reads the tools when it moved; a source whose tools never
    /// change keeps the default, 0. Reading it must be cheap (an atomic load).
    fn generation(&self) -> u64 {
        0
    }
}
