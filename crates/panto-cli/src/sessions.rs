//! `panto sessions` (listing and export), the `-r` picker, and `panto models`.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use chrono::{DateTime, Local, Utc};
use panto_core::{
    strip_userinfo, ContentBlock, Conversation, Role, SessionInfo, SessionStore, SystemMode, ToolResultContent,
};
use panto_store_fs::FileSystemJSONLStore;
use panto_store_postgres::PostgresStore;

use crate::config::{default_context_window, shown_var, Key, Settings};
use crate::cost::thousands;
use crate::exit::Failure;

/// How `sessions export` writes a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// A readable transcript.
    Markdown,
    /// One JSON message per line, as the model sees the conversation.
    Jsonl,
}

/// How many sessions the picker and `/sessions` show.
pub const RECENT: usize = 20;

/// The shortest id prefix, at least 8 characters, that tells each listed session apart: UUIDv7
/// ids share their leading (time) digits when created close together.
pub fn short_ids(infos: &[SessionInfo]) -> Vec<String> {
    // The longest prefix any two ids share is shared by two ids that sort next to each other, so
    // comparing neighbours after a sort finds it: comparing every pair took seconds for 10,000.
    let mut sorted: Vec<&str> = infos.iter().map(|i| i.id.as_str()).collect();
    sorted.sort_unstable();
    let len = sorted
        .windows(2)
        .filter(|w| w[0] != w[1])
        .map(|w| w[0].chars().zip(w[1].chars()).take_while(|(x, y)| x == y).count() + 1)
        .fold(8, usize::max);
    infos
        .iter()
        .map(|i| i.id.chars().take(len.min(i.id.len())).collect())
        .collect()
}

fn local_time(t: DateTime<Utc>) -> String {
    t.with_timezone(&Local).format("%Y-%m-%d %H:%M").to_string()
}

pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max).collect::<String>())
    } else {
        flat
    }
}

/// The table rows of a listing: short id, last prompt time, messages, model, last prompt.
pub fn table(infos: &[SessionInfo]) -> Vec<String> {
    let ids = short_ids(infos);
    infos
        .iter()
        .zip(ids)
        .map(|(info, id)| {
            format!(
                "{id}  {}  {:>4} msgs  {:<20}  {}",
                local_time(info.recency()),
                info.message_count,
                info.wire.as_ref().map_or("-", |w| w.model.as_str()),
                one_line(info.last_user_message.as_deref().unwrap_or(""), 60)
            )
        })
        .collect()
}

/// One session of `panto sessions --json` (docs/cli.md). Serialised straight from the listing,
/// borrowing its strings: building a `Value` per session cost more than reading the files of
/// small sessions. Fields are in alphabetical order, the order the output has always had.
#[derive(serde::Serialize)]
struct InfoJson<'a> {
    api_style: Option<&'a str>,
    /// Without credentials, even from a session recorded before panto stripped them.
    base_url: Option<std::borrow::Cow<'a, str>>,
    created: String,
    id: &'a str,
    last_prompt_at: Option<String>,
    last_user_message: Option<&'a str>,
    message_count: usize,
    model: Option<&'a str>,
    modified: String,
    reasoning: Option<&'a str>,
}

impl<'a> InfoJson<'a> {
    fn of(info: &'a SessionInfo) -> Self {
        let wire = info.wire.as_ref();
        InfoJson {
            api_style: wire.map(|w| w.api_style.as_str()),
            base_url: wire.map(|w| strip_userinfo(&w.base_url)),
            created: info.created.to_rfc3339(),
            id: &info.id,
            last_prompt_at: info.last_prompt_at.map(|t| t.to_rfc3339()),
            last_user_message: info.last_user_message.as_deref(),
            message_count: info.message_count,
            model: wire.map(|w| w.model.as_str()),
            modified: info.modified.to_rfc3339(),
            reasoning: wire.map(|w| w.reasoning.as_str()),
        }
    }
}

/// The session store the `sessions` commands read: the session directory, or a PostgreSQL
/// database.
pub struct Catalog {
    store: Arc<dyn SessionStore>,
    /// The file store, when sessions are files: its listing also reports unreadable files.
    files: Option<Arc<FileSystemJSONLStore>>,
    place: String,
}

impl Catalog {
    /// The store at `url` if given, else the directory `dir`.
    pub async fn open(url: Option<&str>, dir: &Path) -> Result<Catalog, Failure> {
        let place = crate::setup::store_place(url, Some(dir));
        Ok(match url {
            Some(url) => Catalog {
                store: PostgresStore::connect(url).await?,
                files: None,
                place,
            },
            None => {
                let files = crate::setup::open_fs_store(dir);
                Catalog {
                    store: files.clone(),
                    files: Some(files),
                    place,
                }
            }
        })
    }
}

/// `panto sessions [--json]`. Files that cannot be read are reported on stderr, never fatal.
pub async fn list_command(catalog: &Catalog, as_json: bool) -> Result<ExitCode, Failure> {
    let infos = match &catalog.files {
        Some(files) => {
            let (infos, problems) = files.list_with_problems().await?;
            for (path, error) in &problems {
                crate::safe::eprint_line(&format!("skipped {}: {error}", path.display()));
            }
            infos
        }
        None => catalog.store.list().await?,
    };
    // Listings quote session files (the last prompt, the model): neutralised on a terminal.
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let mut out = stdout.lock();
    if as_json {
        let list: Vec<InfoJson<'_>> = infos.iter().map(InfoJson::of).collect();
        // Encoded whole and written at once: formatting straight into stdout's line buffer
        // issued one write per KiB, thousands for a long listing.
        let mut text =
            serde_json::to_vec(&list).map_err(|e| Failure::runtime(format!("cannot encode the listing: {e}")))?;
        text.push(b'\n');
        if terminal {
            let text = String::from_utf8_lossy(&text);
            let _ = out.write_all(crate::safe::json_for_terminal(&text).as_bytes());
        } else {
            let _ = out.write_all(&text);
        }
    } else if infos.is_empty() {
        eprintln!("panto: no sessions in {}", catalog.place);
    } else {
        for row in table(&infos) {
            let _ = writeln!(out, "{}", crate::safe::for_stream(&row, terminal));
        }
    }
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

/// `panto sessions export ID`.
pub async fn export_command(catalog: &Catalog, id: &str, format: ExportFormat) -> Result<ExitCode, Failure> {
    let session = crate::setup::resolve(&catalog.store, id, &catalog.place).await?;
    let conversation = session.load().await?;
    let text = match format {
        ExportFormat::Markdown => markdown(&session.info, &conversation),
        ExportFormat::Jsonl => jsonl(&conversation)?,
    };
    let stdout = std::io::stdout();
    let text = match (stdout.is_terminal(), format) {
        (false, _) => std::borrow::Cow::Borrowed(text.as_str()),
        (true, ExportFormat::Markdown) => crate::safe::neutralise(&text),
        (true, ExportFormat::Jsonl) => crate::safe::json_for_terminal(&text),
    };
    let mut out = stdout.lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

/// `panto sessions import DIR`: every session of `dir` into the PostgreSQL store at `url`. Exits
/// non-zero when a file could not be imported (the others are imported all the same).
pub async fn import_command(url: Option<&str>, dir: &Path) -> Result<ExitCode, Failure> {
    let url = url.ok_or_else(|| {
        Failure::usage(
            "panto sessions import needs a PostgreSQL store: --store postgres://…, PANTO_STORE or [store] url",
        )
    })?;
    if !dir.is_dir() {
        return Err(Failure::usage(format!("{} is not a directory", dir.display())));
    }
    let store = PostgresStore::connect(url).await?;
    let report = panto_store_postgres::import_fs(dir, &store).await?;
    println!(
        "imported {} session(s) into {}; {} already there",
        report.imported.len(),
        crate::setup::redact_password(url),
        report.skipped.len()
    );
    for (path, error) in &report.problems {
        crate::safe::eprint_line(&format!("not imported: {}: {error}", path.display()));
    }
    Ok(if report.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// One JSON message per line.
pub fn jsonl(conversation: &Conversation) -> Result<String, Failure> {
    let mut out = String::new();
    for m in &conversation.messages {
        let line = serde_json::to_string(m).map_err(|e| Failure::runtime(format!("cannot encode a message: {e}")))?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// A fenced block that no backtick run inside `text` can close early.
fn fenced(text: &str, lang: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

/// A readable transcript.
pub fn markdown(info: &SessionInfo, conversation: &Conversation) -> String {
    let mut out = format!("# Session {}\n\n", info.id);
    out.push_str(&format!("- created: {}\n", info.created.to_rfc3339()));
    if let Some(w) = &info.wire {
        // A session recorded before panto stripped credentials may still hold them.
        out.push_str(&format!(
            "- model: {} ({}, {})\n",
            w.model,
            w.api_style,
            strip_userinfo(&w.base_url)
        ));
    }
    out.push_str(&format!("- messages: {}\n", conversation.messages.len()));
    for message in &conversation.messages {
        let heading = match message.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::System => "System",
        };
        let is_tool_results = message
            .content
            .iter()
            .all(|b| matches!(b, ContentBlock::ToolResult { .. }));
        out.push_str(&format!(
            "\n## {}\n\n",
            if is_tool_results && message.role == Role::User {
                "Tool results"
            } else {
                heading
            }
        ));
        for block in &message.content {
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
                ContentBlock::ToolUse { name, input, .. } => {
                    out.push_str(&format!("**{name}**\n\n"));
                    let args = serde_json::to_string_pretty(input).unwrap_or_else(|_| input.to_string());
                    out.push_str(&fenced(&args, "json"));
                    out.push('\n');
                }
                ContentBlock::ToolResult { content, is_error, .. } => {
                    if *is_error {
                        out.push_str("**error**\n\n");
                    }
                    for part in content {
                        match part {
                            ToolResultContent::Text { text } => out.push_str(&fenced(text, "")),
                            ToolResultContent::Image { media_type, .. } => {
                                out.push_str(&format!("(image, {media_type})\n"))
                            }
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
    }
    out
}

/// The `-r` picker: a numbered list of recent sessions on stderr, the choice read from stdin.
pub fn pick(infos: &[SessionInfo]) -> Result<String, Failure> {
    if infos.is_empty() {
        return Err(Failure::usage("no sessions to resume"));
    }
    if !crate::terminal::stdin_is_tty() {
        return Err(Failure::usage(
            "-r without an id needs a terminal to pick on; pass the session id (see `panto sessions`)",
        ));
    }
    let shown = &infos[..infos.len().min(RECENT)];
    let stderr = std::io::stderr();
    let terminal = stderr.is_terminal();
    let mut err = stderr.lock();
    for (n, row) in table(shown).iter().enumerate() {
        let _ = writeln!(err, "{:>3}. {}", n + 1, crate::safe::for_stream(row, terminal));
    }
    loop {
        let _ = write!(err, "resume which session? [1-{}, empty to give up]: ", shown.len());
        let _ = err.flush();
        let Some(line) = crate::terminal::read_line(None) else {
            return Err(Failure::usage("no session picked"));
        };
        let line = line.trim();
        if line.is_empty() {
            return Err(Failure::usage("no session picked"));
        }
        match line.parse::<usize>() {
            Ok(n) if (1..=shown.len()).contains(&n) => return Ok(shown[n - 1].id.clone()),
            _ => {
                let _ = writeln!(err, "please type a number from 1 to {}", shown.len());
            }
        }
    }
}

/// The rows of `panto models` and `/models`: every alias, the default marked with `*`.
pub fn models_rows(settings: &Settings, current: Option<&str>) -> Vec<String> {
    let default = settings.default_selection().ok();
    let default_label = default.as_ref().map(|d| d.label().to_owned());
    let mut rows = Vec::new();
    for alias in &settings.models {
        let mark = if Some(alias.name.as_str()) == default_label.as_deref() {
            "*"
        } else {
            " "
        };
        let now = if Some(alias.name.as_str()) == current {
            " (in use)"
        } else {
            ""
        };
        let style = settings.provider(&alias.provider).map(|p| p.api_style);
        let window = alias
            .context_window
            .or_else(|| style.map(default_context_window))
            .unwrap_or_default();
        let price = alias
            .pricing
            .map(|p| format!("  ${}/${} per Mtok", p.input, p.output))
            .unwrap_or_default();
        let key = match settings.provider(&alias.provider).map(|p| &p.key) {
            Some(Key::Missing(var)) => format!("  (key {} not set)", shown_var(var)),
            _ => String::new(),
        };
        rows.push(format!(
            "{mark} {:<14} {} via {}, reasoning {}, {} tokens context{price}{key}{now}",
            alias.name,
            alias.model,
            alias.provider,
            alias.reasoning,
            thousands(window)
        ));
    }
    if settings.models.is_empty() {
        match default {
            Some(d) => rows.push(format!(
                "* {} via {} (no aliases configured; the default for {})",
                d.model,
                d.provider.name,
                d.provider.key_env.as_deref().map_or("this provider".into(), shown_var)
            )),
            None => rows.push(format!(
                "no models: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or configure [models.NAME] in {}",
                settings.config_path_display()
            )),
        }
    }
    rows
}

/// `panto models`.
pub fn print_models(settings: &Settings) {
    let mut out = std::io::stdout().lock();
    for row in models_rows(settings, None) {
        let _ = writeln!(out, "{row}");
    }
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn info(id: &str) -> SessionInfo {
        SessionInfo::new(id, Utc::now())
    }

    #[test]
    fn listing_json_has_every_documented_field_in_order() {
        let mut full = info("0190aaaa-1111-7000-8000-000000000000");
        full.message_count = 3;
        full.last_user_message = Some("fix the \"parser\"".into());
        full.last_prompt_at = Some(full.created);
        full.wire = Some(panto_core::WireIdentity {
            api_style: panto_core::ApiStyle::OpenAiChat,
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "gpt-4o".into(),
            reasoning: panto_core::ReasoningEffort::High,
        });
        let created = full.created.to_rfc3339();
        let text = serde_json::to_string(&InfoJson::of(&full)).unwrap();
        let expected = json!({
            "api_style": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "created": created,
            "id": "0190aaaa-1111-7000-8000-000000000000", "last_prompt_at": created,
            "last_user_message": "fix the \"parser\"", "message_count": 3, "model": "gpt-4o",
            "modified": full.modified.to_rfc3339(), "reasoning": "high",
        });
        assert_eq!(text, expected.to_string(), "same keys, values and order as before");

        let bare = info("0190aaaa-2222-7000-8000-000000000000");
        let value = serde_json::to_value(InfoJson::of(&bare)).unwrap();
        for key in [
            "api_style",
            "base_url",
            "last_prompt_at",
            "last_user_message",
            "model",
            "reasoning",
        ] {
            assert_eq!(value[key], serde_json::Value::Null, "{key}");
        }
        assert_eq!(value["message_count"], 0);
    }

    #[test]
    fn credentials_in_a_recorded_base_url_are_neither_listed_nor_exported() {
        // A session written before panto stripped credentials, read by a store that kept them.
        let mut old = info("0190aaaa-1111-7000-8000-000000000000");
        old.wire = Some(panto_core::WireIdentity {
            api_style: panto_core::ApiStyle::OpenAiChat,
            base_url: "http://user:pw-secret@proxy:8080/v1".into(),
            model: "gpt-4o".into(),
            reasoning: panto_core::ReasoningEffort::Off,
        });
        let listed = serde_json::to_value(InfoJson::of(&old)).unwrap();
        assert_eq!(listed["base_url"], "http://proxy:8080/v1");
        let exported = markdown(&old, &Conversation::default());
        assert!(exported.contains("(openai-chat, http://proxy:8080/v1)"), "{exported}");
        assert!(!exported.contains("pw-secret"), "{exported}");
    }

    #[test]
    fn short_ids_grow_until_unique() {
        let infos = [
            info("0190aaaa-1111-7000-8000-000000000000"),
            info("0190aaaa-1122-7000-8000-000000000000"),
        ];
        assert_eq!(short_ids(&infos), ["0190aaaa-111", "0190aaaa-112"]);
        assert_eq!(short_ids(&infos[..1]), ["0190aaaa"]);
    }

    #[test]
    fn short_ids_find_the_closest_pair_in_any_order() {
        // The two ids that need the longest prefix are neither first nor adjacent in the input.
        let infos = [
            info("0190aaaa-1122-7000-8000-000000000000"),
            info("0190bbbb-0000-7000-8000-000000000000"),
            info("0190aaaa-1000-7000-8000-000000000000"),
            info("0190aaaa-1122-7000-8000-000000000001"),
            info("0190aaaa-1122-7000-8000-000000000000"),
        ];
        let ids = short_ids(&infos);
        assert!(ids.iter().all(|id| id.len() == 36), "{ids:?}");
        assert_eq!(short_ids(&infos[..3]), ["0190aaaa-11", "0190bbbb-00", "0190aaaa-10"]);
    }

    #[test]
    fn fences_outgrow_backticks_inside() {
        assert_eq!(fenced("a", ""), "```\na\n```\n");
        assert!(fenced("x ```` y", "").starts_with("`````\n"));
    }

    #[test]
    fn markdown_has_roles_tools_and_results() {
        let mut c = Conversation::new();
        c.add_system_message("be brief");
        c.add_user_message("list files");
        c.add_assistant_message(
            vec![ContentBlock::ToolUse {
                id: "t".into(),
                name: "bash".into(),
                input: json!({"command": "ls"}),
            }],
            None,
        );
        c.messages.push(panto_core::Message::new(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: "t".into(),
                content: vec![ToolResultContent::Text { text: "a.txt".into() }],
                is_error: false,
            }],
        ));
        let md = markdown(&info("0190"), &c);
        for needle in [
            "# Session 0190",
            "## System",
            "> be brief",
            "## User",
            "list files",
            "**bash**",
            "\"command\": \"ls\"",
            "## Tool results",
            "a.txt",
        ] {
            assert!(md.contains(needle), "{needle} missing in\n{md}");
        }
        let lines = jsonl(&c).unwrap();
        assert_eq!(lines.lines().count(), 4);
        let back: panto_core::Message = serde_json::from_str(lines.lines().nth(1).unwrap()).unwrap();
        assert_eq!(back, c.messages[1]);
    }
}
