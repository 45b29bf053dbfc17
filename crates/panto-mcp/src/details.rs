//! What a server said about itself when the session was initialized.

use rmcp::service::{Peer, RoleClient};
use serde::Serialize;

/// What a server told panto at initialization: the negotiated protocol version, who it is, its
/// instructions for the model and its capabilities.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerDetails {
    /// The protocol version both sides agreed on (such as `2025-06-18`).
    pub protocol_version: String,
    /// The server's name for itself, if it gave one.
    pub server_name: Option<String>,
    /// The server's version, if it gave one.
    pub server_version: Option<String>,
    /// Its instructions on how to use it, meant for the model (an embedder may add them to the
    /// system prompt); untrusted text from the server.
    pub instructions: Option<String>,
    /// Its capabilities as it declared them (the MCP `ServerCapabilities` object).
    pub capabilities: serde_json::Value,
}

impl ServerDetails {
    pub(crate) fn from_peer(peer: &Peer<RoleClient>) -> ServerDetails {
        let Some(info) = peer.peer_info() else {
            return ServerDetails::default();
        };
        ServerDetails {
            protocol_version: info.protocol_version.to_string(),
            server_name: info.server_info.as_ref().map(|s| s.name.clone()),
            server_version: info.server_info.as_ref().map(|s| s.version.clone()),
            instructions: info.instructions.clone(),
            capabilities: serde_json::to_value(&info.capabilities).unwrap_or_default(),
        }
    }

    /// Whether the server said it sends `notifications/tools/list_changed`.
    pub fn announces_tool_changes(&self) -> bool {
        self.capabilities["tools"]["listChanged"] == serde_json::Value::Bool(true)
    }
}
