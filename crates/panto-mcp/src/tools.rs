//! A server's tools as panto keeps them: the last list the server gave, and what each tool's
//! annotations say, for approval.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use panto_core::ToolDecl;
use serde::Serialize;

/// What a server says about one tool's behaviour (MCP `ToolAnnotations`). These are hints from
/// the server, not guarantees: an embedder decides how far to trust them. `None` means the
/// server did not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolAnnotations {
    /// `readOnlyHint`: the tool does not modify its environment.
    pub read_only: Option<bool>,
    /// `destructiveHint`: the tool may destroy data (meaningful when not read-only).
    pub destructive: Option<bool>,
    /// `idempotentHint`: calling it again with the same arguments has no further effect.
    pub idempotent: Option<bool>,
    /// `openWorldHint`: the tool reaches outside systems (the web, say).
    pub open_world: Option<bool>,
}

impl ToolAnnotations {
    /// Whether the server annotated the tool `readOnlyHint: true`. Tools without the hint count
    /// as writing: the CLI asks before calling them, as it does for `bash`, and read-only mode
    /// does not offer them.
    pub fn is_read_only(&self) -> bool {
        self.read_only == Some(true)
    }
}

/// One tool of a server, under the server's own name for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpTool {
    /// The server's name for the tool (offered to the model as `<server>__<name>`, encoded).
    pub name: String,
    /// Its human-readable title, if the server gave one.
    pub title: Option<String>,
    /// Its description.
    pub description: String,
    /// The JSON schema of its input.
    pub input_schema: serde_json::Value,
    /// Its annotations.
    pub annotations: ToolAnnotations,
}

impl McpTool {
    fn from_rmcp(tool: rmcp::model::Tool) -> McpTool {
        let annotations = tool
            .annotations
            .map(|a| ToolAnnotations {
                read_only: a.read_only_hint,
                destructive: a.destructive_hint,
                idempotent: a.idempotent_hint,
                open_world: a.open_world_hint,
            })
            .unwrap_or_default();
        McpTool {
            name: tool.name.into_owned(),
            title: tool.title,
            description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
            input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
            annotations,
        }
    }

    /// The declaration offered to the model (under the server's name for the tool; the agent's
    /// registry prefixes the server's name).
    pub fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
        }
    }
}

/// The last tool list a server gave, and a generation that moves when it changes.
#[derive(Debug, Default)]
pub(crate) struct ToolList {
    tools: RwLock<Arc<Vec<McpTool>>>,
    generation: AtomicU64,
    /// Held while a re-listing after `list_changed` runs, so a call that just returned can wait
    /// for it and the agent's next request offers the new list.
    pub refreshing: tokio::sync::Mutex<()>,
    /// Set while a re-listing after `list_changed` waits to start: the announcements that
    /// arrive meanwhile are covered by it.
    pub refresh_pending: AtomicBool,
}

impl ToolList {
    /// Replaces the list with what the server listed, in its order; the generation moves only
    /// if something changed, so an unchanged relisting keeps the model's prompt cache.
    pub(crate) fn replace(&self, listed: Vec<rmcp::model::Tool>) {
        let fresh: Vec<McpTool> = listed.into_iter().map(McpTool::from_rmcp).collect();
        let mut tools = self.tools.write().unwrap_or_else(|e| e.into_inner());
        if **tools != fresh {
            *tools = Arc::new(fresh);
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The current list.
    pub(crate) fn get(&self) -> Arc<Vec<McpTool>> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The generation of the list.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Moves the generation without changing the list (the offer changed for another reason).
    pub(crate) fn bump(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}
