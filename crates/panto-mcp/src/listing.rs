//! A server's tool listing, bounded: `tools/list` pages are followed only so far, so a server
//! that pages forever, lists millions of tools or takes forever cannot exhaust panto's memory
//! or hold it up. Past a limit the listing fails (naming the limit); at start that is a start
//! error naming the server, on a re-listing after `list_changed` the previous list stays.

use std::time::Duration;

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient};

/// The most `tools/list` pages one listing follows.
pub const MAX_LIST_PAGES: usize = 100;
/// The most tools one listing keeps.
pub const MAX_LISTED_TOOLS: usize = 10_000;
/// The most bytes of tool definitions (as JSON) one listing keeps: 16 MiB.
pub const MAX_LISTED_BYTES: usize = 16 * 1024 * 1024;
/// The longest one listing may take, all pages together.
pub const MAX_LIST_SECS: u64 = 30;

/// Lists every tool of the server behind `peer`, within the limits above.
pub(crate) async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, String> {
    match tokio::time::timeout(Duration::from_secs(MAX_LIST_SECS), pages(peer)).await {
        Ok(listed) => listed,
        Err(_) => Err(format!(
            "listing its tools took longer than {MAX_LIST_SECS} s (the limit of one listing)"
        )),
    }
}

async fn pages(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    let mut bytes = 0usize;
    let mut cursor = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let page = peer
            .list_tools(Some(params))
            .await
            .map_err(|e| format!("listing its tools failed: {e}"))?;
        bytes = page
            .tools
            .iter()
            .map(|t| serde_json::to_vec(t).map_or(0, |json| json.len()))
            .fold(bytes, usize::saturating_add);
        tools.extend(page.tools);
        if tools.len() > MAX_LISTED_TOOLS {
            return Err(format!(
                "it lists more than {MAX_LISTED_TOOLS} tools (the limit of one listing)"
            ));
        }
        if bytes > MAX_LISTED_BYTES {
            return Err(format!(
                "its tool definitions exceed {} MiB (the limit of one listing)",
                MAX_LISTED_BYTES / (1024 * 1024)
            ));
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(tools),
        }
    }
    Err(format!(
        "its tool listing did not end after {MAX_LIST_PAGES} pages (the limit of one listing; each page \
         gave another `nextCursor`)"
    ))
}
