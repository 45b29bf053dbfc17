//! panto-core: the engine of panto, a runtime for LLM agents.
//!
//! (Overview and example are written with the agent; see docs/ARCHITECTURE.md.)
#![deny(missing_docs)]

mod config;
mod conversation;
mod error;
mod event;
mod pricing;
mod provider;
mod session;
mod tool;

pub use config::{
    ApiStyle, CompactionConfig, Config, ProviderConfig, ReasoningEffort, RetryConfig, WireIdentity,
    DEFAULT_COMPACTION_PROMPT,
};
pub use conversation::{ContentBlock, Conversation, Message, Role, StopReason, SystemMode, ToolResultContent, Usage};
pub use error::{Error, Result};
pub use event::{BlockKind, ContentDelta, Event, RetryInfo, ToolDetails};
pub use pricing::{format_micro_cents, Pricing, PricingRegistry};
pub use session::{
    match_models, new_session_id, sort_by_recency, validate_session_id, CompactionRecord, MemoryStore, NullStore,
    PersistentMessage, Session, SessionInfo, SessionStore, StoredRecord, LAST_USER_MESSAGE_CHARS,
};
pub use tool::{ResultPart, Tool, ToolCall, ToolCallResult, ToolDecl, ToolError, ToolSource};
