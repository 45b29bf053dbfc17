//! `panto sessions`: the listing, `export` and `import`.

mod export;
mod here;
mod history;
mod html;
mod import;
mod json;
mod scrub;
mod search;
mod table;
mod tree;

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use panto_core::wire::strip_userinfo;
use panto_core::SessionInfo;

use crate::exit::Failure;
use crate::store::{OpenStore, StoreLocation};

pub use export::{export_command, render, write_atomically, ExportContext, ExportFormat, ExportOptions};
pub use here::{by_directory, elsewhere_note, nothing_to_continue, of_dir, others_line, started_in, Line};
pub use search::{resume_at_hit, search_command, SearchRequest};
pub use table::{one_line, short_ids, table, unique_prefix, StoredIds, RECENT};
pub use tree::tree_lines;

/// One session of `panto sessions --json` (docs/cli.md). Serialised straight from the listing,
/// borrowing its strings: building a `Value` per session cost more than reading the files of
/// small sessions. Fields are in alphabetical order, the order the output has always had.
#[derive(serde::Serialize)]
struct InfoJson<'a> {
    api_style: Option<&'a str>,
    /// Without credentials, even from a session recorded before panto stripped them.
    base_url: Option<std::borrow::Cow<'a, str>>,
    created: String,
    /// The directory the session was started in, else null.
    cwd: Option<&'a str>,
    /// `{"session","entry"}` for a fork, else null.
    forked_from: Option<serde_json::Value>,
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
            cwd: info.cwd.as_deref().and_then(Path::to_str),
            forked_from: info
                .forked_from
                .as_ref()
                .map(|f| serde_json::json!({"session": f.session, "entry": f.entry})),
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

/// `panto sessions [--json] [--all]`: the sessions started in `here` (with a line on stderr
/// saying how many other directories' sessions were left out), or with `all` every session
/// under its directory. Files that cannot be read are reported on stderr, never fatal.
pub async fn list_command(store: &OpenStore, as_json: bool, all: bool, here: &Path) -> Result<ExitCode, Failure> {
    let (infos, problems) = store.list_with_problems().await?;
    for (path, error) in &problems {
        crate::safe::eprint_line(&format!("skipped {}: {error}", path.display()));
    }
    let stored = infos.len();
    let stored_ids = StoredIds::of(&infos);
    let (infos, elsewhere) = if all { (infos, 0) } else { of_dir(infos, here) };
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
    } else if stored == 0 {
        eprintln!("panto: no sessions in {}", store.place);
    } else if infos.is_empty() {
        crate::safe::eprint_line(&format!("no sessions started in {}", here.display()));
    } else if all {
        for line in by_directory(&infos, &stored_ids, here) {
            let (Line::Directory(text) | Line::Session(_, text)) = line;
            let _ = writeln!(out, "{}", crate::safe::for_stream(&text, terminal));
        }
    } else {
        // A row a line on a terminal: cut to its width (the last prompt's preview is the end).
        let columns = crate::render::columns();
        for row in table(&infos, &stored_ids) {
            let row = crate::safe::for_stream(&row, terminal);
            if terminal {
                let _ = writeln!(out, "{}", crate::render::wrap::cut(&row, columns));
            } else {
                let _ = writeln!(out, "{row}");
            }
        }
    }
    let _ = out.flush();
    if let Some(line) = others_line(elsewhere) {
        crate::safe::eprint_line(&line);
    }
    Ok(ExitCode::SUCCESS)
}

/// `panto sessions import DIR|FILE`: every session of the session directory `dir` into the
/// PostgreSQL store at `into`, or the session a JSON export holds into any store. Exits
/// non-zero when a file could not be imported (the others are imported all the same).
pub async fn import_command(into: &StoreLocation, dir: &Path) -> Result<ExitCode, Failure> {
    if dir.is_file() {
        return import::import_file(into, dir).await;
    }
    let StoreLocation::Postgres(url) = into else {
        return Err(Failure::usage(
            "panto sessions import needs a PostgreSQL store: --store postgres://…, PANTO_STORE or [store] url",
        ));
    };
    if !dir.is_dir() {
        return Err(Failure::usage(format!(
            "{} is neither a session directory nor a session exported as JSON",
            dir.display()
        )));
    }
    let store = crate::store::connect_postgres(url).await?;
    let report = panto_store_postgres::import_fs(dir, &store).await?;
    println!(
        "imported {} session(s) into {}; {} already there",
        report.imported.len(),
        into.place(),
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

/// A session created now, for the tests of this module's parts.
#[cfg(test)]
fn test_info(id: &str) -> SessionInfo {
    SessionInfo::new(id, chrono::Utc::now())
}

/// A session recorded before panto stripped credentials from base URLs, as a store that kept
/// them returns it: its base URL holds the password `pw-secret`.
#[cfg(test)]
fn test_info_with_credentials() -> SessionInfo {
    let mut old = test_info("0190aaaa-1111-7000-8000-000000000000");
    old.wire = Some(panto_core::wire::ProviderIdentity {
        api_style: panto_core::ApiStyle::OpenAiChat,
        base_url: "http://user:pw-secret@proxy:8080/v1".into(),
        model: "gpt-4o".into(),
        reasoning: panto_core::ReasoningEffort::Off,
    });
    old
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::sessions::test_info as info;

    #[test]
    fn listing_json_has_every_documented_field_in_order() {
        let mut full = info("0190aaaa-1111-7000-8000-000000000000");
        full.message_count = 3;
        full.last_user_message = Some("fix the \"parser\"".into());
        full.last_prompt_at = Some(full.created);
        full.cwd = Some("/home/ada/src/app".into());
        full.wire = Some(panto_core::wire::ProviderIdentity {
            api_style: panto_core::ApiStyle::OpenAiChat,
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "gpt-4o".into(),
            reasoning: panto_core::ReasoningEffort::High,
        });
        let created = full.created.to_rfc3339();
        let text = serde_json::to_string(&InfoJson::of(&full)).unwrap();
        let expected = json!({
            "api_style": "openai-chat", "base_url": "http://127.0.0.1:9/v1", "created": created,
            "cwd": "/home/ada/src/app", "forked_from": null, "id": "0190aaaa-1111-7000-8000-000000000000", "last_prompt_at": created,
            "last_user_message": "fix the \"parser\"", "message_count": 3, "model": "gpt-4o",
            "modified": full.modified.to_rfc3339(), "reasoning": "high",
        });
        assert_eq!(text, expected.to_string(), "every key, in alphabetical order");

        let bare = info("0190aaaa-2222-7000-8000-000000000000");
        let value = serde_json::to_value(InfoJson::of(&bare)).unwrap();
        for key in [
            "api_style",
            "base_url",
            "cwd",
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
    fn credentials_in_a_recorded_base_url_are_not_listed() {
        let old = crate::sessions::test_info_with_credentials();
        let listed = serde_json::to_value(InfoJson::of(&old)).unwrap();
        assert_eq!(listed["base_url"], "http://proxy:8080/v1");
    }
}
