//! The names the metrics are derived from (the spans and events of panto-core and the stores,
//! docs/observability.md) and the names of the metrics themselves.

/// `gen_ai.operation.name`: what a GenAI span does.
pub(crate) const OPERATION: &str = "gen_ai.operation.name";
/// The operation of a turn's span.
pub(crate) const OP_TURN: &str = "invoke_agent";
/// The operation of a provider request's span.
pub(crate) const OP_REQUEST: &str = "chat";
/// The operation of a tool call's span.
pub(crate) const OP_TOOL: &str = "execute_tool";

/// The span of a compaction and the prefix of a store append's span.
pub(crate) const SPAN_COMPACTION: &str = "panto.compaction";
pub(crate) const SPAN_STORE_APPEND: &str = "panto.store.append";
/// The events of a retry and of a context overflow.
pub(crate) const EVENT_RETRY: &str = "panto.retry";
pub(crate) const EVENT_OVERFLOW: &str = "panto.context_overflow";
pub(crate) const OVERFLOW_ACTION: &str = "panto.overflow.action";

/// Span attributes copied onto the metrics (a small, bounded set: never content or ids).
pub(crate) const MODEL: &str = "gen_ai.request.model";
pub(crate) const PROVIDER: &str = "gen_ai.provider.name";
pub(crate) const TOOL_NAME: &str = "gen_ai.tool.name";
pub(crate) const TURN_OUTCOME: &str = "panto.turn.outcome";
pub(crate) const PURPOSE: &str = "panto.request.purpose";
pub(crate) const STORE_KIND: &str = "panto.store.kind";
pub(crate) const TOOL_IS_ERROR: &str = "panto.tool.is_error";
pub(crate) const ERROR_TYPE: &str = "error.type";

/// Token counts of a request span.
pub(crate) const INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
pub(crate) const OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
pub(crate) const CACHE_READ_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
pub(crate) const CACHE_WRITE_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";

/// The metrics (instrument names).
pub(crate) const M_TOKEN_USAGE: &str = "gen_ai.client.token.usage";
pub(crate) const M_OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
pub(crate) const M_TURNS: &str = "panto.turns";
pub(crate) const M_TURN_DURATION: &str = "panto.turn.duration";
pub(crate) const M_REQUESTS: &str = "panto.requests";
pub(crate) const M_TOKENS: &str = "panto.tokens";
pub(crate) const M_TOOL_CALLS: &str = "panto.tool.calls";
pub(crate) const M_TOOL_DURATION: &str = "panto.tool.duration";
pub(crate) const M_RETRIES: &str = "panto.retries";
pub(crate) const M_OVERFLOWS: &str = "panto.context.overflows";
pub(crate) const M_COMPACTIONS: &str = "panto.compactions";
pub(crate) const M_STORE_APPEND_DURATION: &str = "panto.store.append.duration";
