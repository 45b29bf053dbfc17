//! `panto sessions export` and the REPL's `/export`: one session as a readable Markdown
//! transcript, a self-contained HTML page (sessions/html.rs) or the versioned JSON document
//! (sessions/json.rs) that `panto sessions import FILE` reads back.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use panto_core::pricing::PricingRegistry;
use panto_core::wire::strip_userinfo;
use panto_core::{ContentBlock, Role, SystemMode, ToolResultContent, Usage};

use super::history::{self, Entry, History};
use super::scrub::Scrubber;
use crate::exit::Failure;
use crate::store::OpenStore;

/// How `sessions export` writes a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// A readable Markdown transcript.
    #[value(alias = "markdown")]
    Md,
    /// One self-contained HTML page: nothing loaded from the network, no script.
    Html,
    /// The session's messages and tree, as `panto sessions import FILE` reads them back.
    Json,
}

impl ExportFormat {
    /// The format named `name` (`md`, `markdown`, `html`, `json`).
    pub fn parse(name: &str) -> Option<ExportFormat> {
        match name {
            "md" | "markdown" => Some(ExportFormat::Md),
            "html" => Some(ExportFormat::Html),
            "json" => Some(ExportFormat::Json),
            _ => None,
        }
    }

    /// The file name extension of the format.
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Md => "md",
            ExportFormat::Html => "html",
            ExportFormat::Json => "json",
        }
    }
}

/// What to export and how.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The format.
    pub format: ExportFormat,
    /// Write this file instead of stdout.
    pub output: Option<PathBuf>,
    /// Every branch, not only the active one.
    pub all_branches: bool,
    /// Keep absolute paths under the home directory as they are.
    pub keep_paths: bool,
}

/// What an export must leave out and what it prices with, from the configuration.
#[derive(Debug, Clone, Default)]
pub struct ExportContext {
    /// The values of every key panto is configured with.
    pub secrets: Vec<String>,
    /// The home directory.
    pub home: Option<String>,
    /// Model prices, for the costs shown.
    pub pricing: PricingRegistry,
}

impl ExportContext {
    /// The keys, home and prices of `settings` and `env`.
    pub fn of(settings: &crate::config::Settings, env: &crate::config::Env) -> ExportContext {
        let mut secrets = Vec::new();
        for provider in &settings.providers {
            if let crate::config::Key::Value(key) = &provider.key {
                secrets.push(key.clone());
            }
            // Headers carry keys too (`x-api-key`, `authorization: Bearer …`); not every header
            // is one (`content-type: application/json` must not vanish from transcripts).
            for (name, value) in &provider.headers {
                if secret_header(name, value) {
                    secrets.push(value.clone());
                    if let Some((_, credential)) = value.split_once(' ') {
                        secrets.push(credential.trim().to_owned());
                    }
                }
            }
        }
        secrets.extend(
            settings
                .key_variables
                .iter()
                .filter_map(|v| env.get(v))
                .map(str::to_owned),
        );
        ExportContext {
            secrets,
            home: env.home().and_then(|h| h.to_str().map(str::to_owned)),
            pricing: settings.pricing(),
        }
    }
}

/// Whether a configured header may carry a credential: a name that says so, or a value that
/// looks like a key.
fn secret_header(name: &str, value: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key",
        "secret",
        "token",
        "auth",
        "password",
        "passwd",
        "cookie",
        "credential",
        "bearer",
    ]
    .iter()
    .any(|w| name.contains(w))
        || value.split_whitespace().any(panto_core::secret::looks_like_secret)
}

/// `panto sessions export ID`.
pub async fn export_command(
    store: &OpenStore,
    id: &str,
    options: &ExportOptions,
    context: &ExportContext,
) -> Result<ExitCode, Failure> {
    let text = render(store, id, options, context).await?;
    if let Some(path) = &options.output {
        write_atomically(path, text.as_bytes())?;
        crate::safe::eprint_line(&format!("exported to {}", path.display()));
        return Ok(ExitCode::SUCCESS);
    }
    let stdout = std::io::stdout();
    let text = match (stdout.is_terminal(), options.format) {
        (false, _) => std::borrow::Cow::Borrowed(text.as_str()),
        (true, ExportFormat::Json) => crate::safe::json_for_terminal(&text),
        (true, _) => crate::safe::neutralise(&text),
    };
    let mut out = stdout.lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

/// Session `id` of `store` in the requested format, keys and (unless kept) home paths out.
pub async fn render(
    store: &OpenStore,
    id: &str,
    options: &ExportOptions,
    context: &ExportContext,
) -> Result<String, Failure> {
    let session = store.resolve(id).await?;
    let mut history = history::read(store, &session).await?;
    if !options.all_branches {
        history.keep_active_path();
    }
    let home = if options.keep_paths { None } else { context.home.clone() };
    Scrubber::new(context.secrets.iter().cloned(), home).history(&mut history);
    Ok(match options.format {
        ExportFormat::Md => markdown(&history, &context.pricing, options.all_branches),
        ExportFormat::Html => super::html::page(&history, &context.pricing, options.all_branches),
        ExportFormat::Json => super::json::write(&history, options.all_branches)
            .map_err(|e| Failure::runtime(format!("cannot encode session {id}: {e}")))?,
    })
}

/// Writes `bytes` to `path` whole or not at all: a temporary file beside it (mode 0600),
/// synced, renamed over it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let fail = |e: std::io::Error| Failure::runtime(format!("cannot write {}: {e}", path.display()));
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.tmp", panto_core::store::new_session_id()));
    let written = (|| {
        use std::os::unix::fs::OpenOptionsExt;
        // Private, as the session it holds is.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(fail(e));
    }
    Ok(())
}

/// Lines of a tool's input or result shown before the rest is folded away.
pub const FOLDED_LINES: usize = 12;

/// `text` cut to [`FOLDED_LINES`] lines, and how many lines were left out.
pub fn fold(text: &str) -> (String, usize) {
    let lines: Vec<&str> = text.trim_end_matches('\n').lines().collect();
    if lines.len() <= FOLDED_LINES {
        return (lines.join("\n"), 0);
    }
    (lines[..FOLDED_LINES].join("\n"), lines.len() - FOLDED_LINES)
}

/// A fenced block that no backtick run inside `text` can close early.
fn fenced(text: &str, lang: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

/// A folded block: the first lines, then how many more there were.
fn folded_block(text: &str, lang: &str) -> String {
    let (shown, more) = fold(text);
    let mut out = fenced(&shown, lang);
    if more > 0 {
        out.push_str(&format!("*… {more} more line{}*\n", if more == 1 { "" } else { "s" }));
    }
    out
}

/// The heading of `entry`'s message.
pub fn heading(entry: &Entry) -> &'static str {
    let message = &entry.message;
    let tool_results = !message.content.is_empty()
        && message
            .content
            .iter()
            .all(|b| matches!(b, ContentBlock::ToolResult { .. }));
    match message.role {
        Role::User if tool_results => "Tool results",
        Role::User if entry.compaction.is_some() => "Summary",
        Role::User => "User",
        Role::Assistant => "Assistant",
        Role::System => "System",
    }
}

/// The usage line of an entry: tokens and, when priced, cost.
pub fn usage_line(entry: &Entry, pricing: &PricingRegistry) -> Option<String> {
    let usage = entry.usage.or(entry.message.usage)?;
    let cost = entry.wire.as_ref().and_then(|w| crate::cost::cost(pricing, w, &usage));
    Some(crate::cost::summary_line(&usage, cost))
}

/// The whole session's usage and cost (`None`: some priced message had no known rate).
pub fn totals(history: &History, pricing: &PricingRegistry) -> (Usage, Option<u64>) {
    let mut total = Usage::default();
    let mut cost = Some(0u64);
    for entry in &history.entries {
        let Some(usage) = entry.usage.or(entry.message.usage) else {
            continue;
        };
        total.accumulate(&usage);
        let this = entry.wire.as_ref().and_then(|w| crate::cost::cost(pricing, w, &usage));
        cost = match (cost, this) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
    }
    (total, cost)
}

/// The lines that describe the session: when, where, which model.
pub fn facts(history: &History, all_branches: bool) -> Vec<String> {
    let mut facts = vec![format!("created: {}", history.created.to_rfc3339())];
    if let Some(cwd) = &history.cwd {
        facts.push(format!("directory: {cwd}"));
    }
    if let Some(w) = history.entries.iter().rev().find_map(|e| e.wire.as_ref()) {
        // A session recorded before panto stripped credentials may still hold them.
        facts.push(format!(
            "model: {} ({}, {})",
            w.model,
            w.api_style,
            strip_userinfo(&w.base_url)
        ));
    }
    if let Some(f) = &history.forked_from {
        facts.push(format!("forked from: {} at entry {}", f.session, f.entry));
    }
    facts.push(format!(
        "messages: {}{}",
        history.entries.len(),
        if all_branches {
            " (every branch)"
        } else {
            " (the active branch)"
        }
    ));
    facts
}

/// Where `entry` starts a branch: the entry it continues from, when that is not the entry before.
pub fn branch_point<'a>(previous: Option<&Entry>, entry: &'a Entry) -> Option<Option<&'a str>> {
    let previous = previous?;
    (entry.parent.as_deref() != Some(previous.id.as_str())).then_some(entry.parent.as_deref())
}

/// A readable transcript.
fn markdown(history: &History, pricing: &PricingRegistry, all_branches: bool) -> String {
    let mut out = format!("# Session {}\n\n", history.id);
    for fact in facts(history, all_branches) {
        out.push_str(&format!("- {fact}\n"));
    }
    let mut previous: Option<&Entry> = None;
    for entry in &history.entries {
        if let Some(from) = branch_point(previous, entry) {
            match from {
                Some(parent) => out.push_str(&format!(
                    "\n---\n\n*Another branch, continuing after entry {parent}:*\n"
                )),
                None => out.push_str("\n---\n\n*Another branch, from the start:*\n"),
            }
        }
        previous = Some(entry);
        out.push_str(&format!("\n## {}\n\n", heading(entry)));
        for block in &entry.message.content {
            markdown_block(&mut out, block);
        }
        if entry.message.role == Role::Assistant {
            if let Some(line) = usage_line(entry, pricing) {
                out.push_str(&format!("*{line}*\n\n"));
            }
        }
    }
    let (total, cost) = totals(history, pricing);
    if total != Usage::default() {
        out.push_str("\n## Totals\n\n");
        out.push_str(&crate::cost::summary_line(&total, cost));
        out.push('\n');
    }
    out
}

fn markdown_block(out: &mut String, block: &ContentBlock) {
    match block {
        ContentBlock::Text { text } => {
            out.push_str(text.trim_end());
            out.push_str("\n\n");
        }
        ContentBlock::Thinking { thinking, .. } => {
            for line in thinking.lines() {
                out.push_str(&format!("> {line}\n"));
            }
            out.push('\n');
        }
        ContentBlock::RedactedThinking { .. } => out.push_str("> (redacted thinking)\n\n"),
        // Encrypted, and its summary is the thinking block before it.
        ContentBlock::Reasoning { .. } => {}
        ContentBlock::ToolUse { name, input, .. } => {
            out.push_str(&format!("**{name}**\n\n"));
            let args = serde_json::to_string_pretty(input).unwrap_or_else(|_| input.to_string());
            out.push_str(&folded_block(&args, "json"));
            out.push('\n');
        }
        ContentBlock::ToolResult { content, is_error, .. } => {
            if *is_error {
                out.push_str("**error**\n\n");
            }
            for part in content {
                match part {
                    ToolResultContent::Text { text } => out.push_str(&folded_block(text, "")),
                    ToolResultContent::Image { media_type, .. } => out.push_str(&format!("(image, {media_type})\n")),
                }
            }
            out.push('\n');
        }
        ContentBlock::System { text, mode } => {
            let label = match mode {
                SystemMode::Append => "system prompt (added)",
                SystemMode::Replace => "system prompt (replaced)",
            };
            out.push_str(&format!("*{label}*\n\n"));
            for line in text.lines() {
                out.push_str(&format!("> {line}\n"));
            }
            out.push('\n');
        }
        ContentBlock::CompactionSummary { summary } => {
            out.push_str("*summary of earlier conversation*\n\n");
            out.push_str(summary.trim_end());
            out.push_str("\n\n");
        }
        ContentBlock::Image { media_type, .. } => out.push_str(&format!("(image, {media_type})\n\n")),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use chrono::Utc;
    use panto_core::wire::ProviderIdentity;
    use panto_core::Message;
    use serde_json::json;

    use super::*;

    pub(crate) fn entry(id: &str, parent: Option<&str>, message: Message) -> Entry {
        Entry {
            id: id.into(),
            parent: parent.map(Into::into),
            timestamp: Some(Utc::now()),
            usage: message.usage,
            message,
            wire: None,
            compaction: None,
        }
    }

    pub(crate) fn history(entries: Vec<Entry>) -> History {
        History {
            id: "0190aaaa-1111-7000-8000-000000000000".into(),
            created: Utc::now(),
            cwd: None,
            metadata: None,
            forked_from: None,
            tip: entries.last().map(|e| e.id.clone()),
            entries,
        }
    }

    #[test]
    fn only_headers_that_may_hold_credentials_are_secrets() {
        assert!(secret_header("Authorization", "Bearer abc"));
        assert!(secret_header("x-api-key", "k"));
        assert!(!secret_header("content-type", "application/json"));
        assert!(!secret_header("anthropic-beta", "prompt-caching"));
    }

    #[test]
    fn fences_outgrow_backticks_inside() {
        assert_eq!(fenced("a", ""), "```\na\n```\n");
        assert!(fenced("x ```` y", "").starts_with("`````\n"));
    }

    fn tool_session() -> History {
        let long: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let mut answer = Message::new(
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: "t".into(),
                name: "bash".into(),
                input: json!({"command": "ls"}),
            }],
        );
        answer.usage = Some(Usage {
            input_tokens: 1000,
            output_tokens: 20,
            ..Usage::default()
        });
        let mut with_wire = entry("c", Some("b"), answer);
        with_wire.wire = Some(ProviderIdentity::new(
            panto_core::ApiStyle::AnthropicMessages,
            "http://user:pw-secret@proxy:8080/v1",
            "claude-sonnet-4-5",
            panto_core::ReasoningEffort::Off,
        ));
        history(vec![
            entry(
                "a",
                None,
                Message::new(
                    Role::System,
                    vec![ContentBlock::System {
                        text: "be brief".into(),
                        mode: SystemMode::Append,
                    }],
                ),
            ),
            entry(
                "b",
                Some("a"),
                Message::new(Role::User, vec![ContentBlock::text("list files")]),
            ),
            with_wire,
            entry(
                "d",
                Some("c"),
                Message::new(
                    Role::User,
                    vec![ContentBlock::ToolResult {
                        tool_use_id: "t".into(),
                        content: vec![ToolResultContent::Text { text: long }],
                        is_error: false,
                    }],
                ),
            ),
            entry(
                "e",
                Some("b"),
                Message::new(Role::Assistant, vec![ContentBlock::text("other branch")]),
            ),
        ])
    }

    #[test]
    fn markdown_has_roles_tools_folded_results_costs_and_branches() {
        let md = markdown(&tool_session(), &PricingRegistry::new(), true);
        for needle in [
            "# Session 0190",
            "## System",
            "> be brief",
            "## User",
            "list files",
            "**bash**",
            "\"command\": \"ls\"",
            "## Tool results",
            "line 12\n```",
            "*… 18 more lines*",
            "1,000 in · 20 out",
            "*Another branch, continuing after entry b:*",
            "## Totals",
            "(anthropic-messages, http://proxy:8080/v1)",
        ] {
            assert!(md.contains(needle), "{needle} missing in\n{md}");
        }
        assert!(!md.contains("line 13"), "{md}");
        assert!(!md.contains("pw-secret"), "{md}");
    }
}
