//! The JSON export format (`panto-session`, version 1; docs/stores.md, "Exported sessions"):
//! a session's messages and tree, written by `panto sessions export --format json` and read
//! back, checked whole, by `panto sessions import FILE`.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use panto_core::store::{validate_session_id, ForkOrigin};
use panto_core::wire::ProviderIdentity;
use panto_core::{Message, Usage};
use serde::Serialize;
use serde_json::Value;

use super::history::{Compaction, Entry, History};

/// The value of the `format` field.
pub const FORMAT: &str = "panto-session";
/// The version this panto writes and reads.
pub const VERSION: u64 = 1;

#[derive(Serialize)]
struct Document<'a> {
    format: &'static str,
    version: u64,
    /// `"active"` (the active branch) or `"all"` (every branch).
    branches: &'static str,
    session: SessionOut<'a>,
    entries: Vec<EntryOut<'a>>,
}

#[derive(Serialize)]
struct SessionOut<'a> {
    id: &'a str,
    created: String,
    cwd: Option<&'a str>,
    metadata: Option<&'a str>,
    forked_from: Option<ForkOut<'a>>,
    tip: Option<&'a str>,
}

#[derive(Serialize)]
struct ForkOut<'a> {
    session: &'a str,
    entry: &'a str,
}

#[derive(Serialize)]
struct EntryOut<'a> {
    id: &'a str,
    parent: Option<&'a str>,
    timestamp: Option<String>,
    message: &'a Message,
    usage: Option<&'a Usage>,
    wire: Option<&'a ProviderIdentity>,
    compaction: Option<&'a Compaction>,
}

/// `history` as a `panto-session` document (one line, then `\n`); `all_branches` says what its
/// entries are.
pub fn write(history: &History, all_branches: bool) -> Result<String, serde_json::Error> {
    let document = Document {
        format: FORMAT,
        version: VERSION,
        branches: if all_branches { "all" } else { "active" },
        session: SessionOut {
            id: &history.id,
            created: history.created.to_rfc3339(),
            cwd: history.cwd.as_deref(),
            metadata: history.metadata.as_deref(),
            forked_from: history.forked_from.as_ref().map(|f| ForkOut {
                session: &f.session,
                entry: &f.entry,
            }),
            tip: history.tip.as_deref(),
        },
        entries: history
            .entries
            .iter()
            .map(|e| EntryOut {
                id: &e.id,
                parent: e.parent.as_deref(),
                timestamp: e.timestamp.map(|t| t.to_rfc3339()),
                message: &e.message,
                usage: e.usage.as_ref(),
                wire: e.wire.as_ref(),
                compaction: e.compaction.as_ref(),
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&document)?;
    text.push('\n');
    Ok(text)
}

/// What is wrong with a document: where (a JSON path such as `entries[3].parent`) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The JSON path of the value at fault (`$` for the whole document).
    pub at: String,
    /// What is wrong with it.
    pub what: String,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.what)
    }
}

fn invalid(at: impl Into<String>, what: impl Into<String>) -> Invalid {
    Invalid {
        at: at.into(),
        what: what.into(),
    }
}

fn field<'a>(object: &'a Value, at: &str, name: &str) -> Result<&'a Value, Invalid> {
    object
        .get(name)
        .ok_or_else(|| invalid(format!("{at}.{name}"), "missing"))
}

fn typed<T: serde::de::DeserializeOwned>(value: &Value, at: &str) -> Result<T, Invalid> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let at = if inner.is_empty() || inner == "." {
            at.to_owned()
        } else {
            format!("{at}.{inner}")
        };
        invalid(at, e.into_inner().to_string())
    })
}

fn optional<T: serde::de::DeserializeOwned>(object: &Value, at: &str, name: &str) -> Result<Option<T>, Invalid> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => typed(v, &format!("{at}.{name}")).map(Some),
    }
}

/// Reads and checks a `panto-session` document: the format and version, the session id, every
/// entry (its message, usage, provider identity and compaction, as the stores keep them), and
/// the tree (unique entry ids, each parent an earlier entry, each compaction's kept entry on its
/// path, the tip an entry). Nothing is taken on trust; the first fault is the error.
pub fn read(text: &[u8]) -> Result<History, Invalid> {
    let doc: Value = serde_json::from_slice(text).map_err(|e| invalid("$", format!("not JSON: {e}")))?;
    if !doc.is_object() {
        return Err(invalid("$", "not a JSON object"));
    }
    match doc.get("format").and_then(Value::as_str) {
        Some(FORMAT) => {}
        Some(other) => return Err(invalid("$.format", format!("{other:?} is not {FORMAT:?}"))),
        None => return Err(invalid("$.format", format!("missing: not a {FORMAT} document"))),
    }
    match doc.get("version").and_then(Value::as_u64) {
        Some(VERSION) => {}
        Some(v) => {
            return Err(invalid(
                "$.version",
                format!("version {v} is not one this panto reads (it reads version {VERSION}): a newer panto wrote it"),
            ))
        }
        None => return Err(invalid("$.version", "missing or not a whole number")),
    }
    let session = field(&doc, "$", "session")?;
    if !session.is_object() {
        return Err(invalid("$.session", "not an object"));
    }
    let id: String = typed(field(session, "$.session", "id")?, "$.session.id")?;
    validate_session_id(&id).map_err(|_| {
        invalid(
            "$.session.id",
            format!("{id:?} is not a session id (1 to 36 characters of 0-9, a-f and -)"),
        )
    })?;
    let created: DateTime<Utc> = typed(field(session, "$.session", "created")?, "$.session.created")?;
    let cwd: Option<String> = optional(session, "$.session", "cwd")?;
    let metadata: Option<String> = optional(session, "$.session", "metadata")?;
    let forked_from = match session.get("forked_from") {
        None | Some(Value::Null) => None,
        Some(f) => Some(ForkOrigin {
            session: typed(
                field(f, "$.session.forked_from", "session")?,
                "$.session.forked_from.session",
            )?,
            entry: typed(
                field(f, "$.session.forked_from", "entry")?,
                "$.session.forked_from.entry",
            )?,
        }),
    };
    let tip: Option<String> = optional(session, "$.session", "tip")?;

    let Some(items) = field(&doc, "$", "entries")?.as_array() else {
        return Err(invalid("$.entries", "not an array"));
    };
    if items.is_empty() {
        return Err(invalid(
            "$.entries",
            "empty: a session without messages cannot be stored",
        ));
    }
    // Each entry's index by id, and its parent's index, to check the tree as it is read.
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut parents: Vec<Option<usize>> = Vec::new();
    let mut entries = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("$.entries[{i}]");
        if !item.is_object() {
            return Err(invalid(at, "not an object"));
        }
        let entry_id: String = typed(field(item, &at, "id")?, &format!("{at}.id"))?;
        if entry_id.is_empty() || entry_id.len() > 64 || entry_id.chars().any(char::is_control) {
            return Err(invalid(
                format!("{at}.id"),
                "an entry id is 1 to 64 characters, none a control character",
            ));
        }
        if let Some(first) = index.get(&entry_id) {
            return Err(invalid(
                format!("{at}.id"),
                format!("{entry_id:?} is also the id of entries[{first}]"),
            ));
        }
        let parent: Option<String> = optional(item, &at, "parent")?;
        let parent_index = match &parent {
            None => None,
            Some(p) => Some(*index.get(p).ok_or_else(|| {
                invalid(
                    format!("{at}.parent"),
                    format!("{p:?} names no earlier entry (a parent comes before its children)"),
                )
            })?),
        };
        let timestamp: Option<DateTime<Utc>> = optional(item, &at, "timestamp")?;
        let message: Message = typed(field(item, &at, "message")?, &format!("{at}.message"))?;
        let usage: Option<Usage> = optional(item, &at, "usage")?;
        let wire: Option<ProviderIdentity> = optional(item, &at, "wire")?;
        let compaction: Option<Compaction> = optional(item, &at, "compaction")?;
        if let Some(kept) = compaction.as_ref().and_then(|c| c.first_kept.as_ref()) {
            // The kept message is on this entry's path, before it.
            let mut on_path = false;
            let mut next = parent_index;
            while let Some(p) = next {
                if items_id(&entries, p) == kept {
                    on_path = true;
                    break;
                }
                next = parents[p];
            }
            if !on_path {
                return Err(invalid(
                    format!("{at}.compaction.first_kept"),
                    format!("{kept:?} is not an entry on this entry's path"),
                ));
            }
        }
        index.insert(entry_id.clone(), i);
        parents.push(parent_index);
        entries.push(Entry {
            id: entry_id,
            parent,
            timestamp,
            message,
            usage,
            wire,
            compaction,
        });
    }
    if let Some(t) = &tip {
        if !index.contains_key(t) {
            return Err(invalid("$.session.tip", format!("{t:?} names no entry")));
        }
    }
    Ok(History {
        id,
        created,
        cwd,
        metadata,
        forked_from,
        tip,
        entries,
    })
}

fn items_id(entries: &[Entry], i: usize) -> &str {
    &entries[i].id
}

#[cfg(test)]
mod tests {
    use panto_core::{ContentBlock, Role};

    use super::*;

    fn history() -> History {
        let entry = |id: &str, parent: Option<&str>, text: &str| Entry {
            id: id.into(),
            parent: parent.map(Into::into),
            timestamp: Some(Utc::now()),
            message: Message::new(Role::User, vec![ContentBlock::text(text)]),
            usage: None,
            wire: None,
            compaction: None,
        };
        History {
            id: "0190aaaa-1111-7000-8000-000000000000".into(),
            created: Utc::now(),
            cwd: Some("/w".into()),
            metadata: Some("{\"a\":1}".into()),
            forked_from: None,
            tip: Some("c".into()),
            entries: vec![
                entry("a", None, "one"),
                entry("b", Some("a"), "two"),
                entry("c", Some("a"), "three"),
            ],
        }
    }

    #[test]
    fn a_document_reads_back_as_written() {
        let h = history();
        let text = write(&h, true).unwrap();
        let back = read(text.as_bytes()).unwrap();
        assert_eq!(back, h);
        assert!(text.contains("\"format\": \"panto-session\"") && text.contains("\"version\": 1"));
    }

    fn fault(edit: impl FnOnce(&mut Value)) -> Invalid {
        let mut doc: Value = serde_json::from_str(&write(&history(), true).unwrap()).unwrap();
        edit(&mut doc);
        read(doc.to_string().as_bytes()).unwrap_err()
    }

    #[test]
    fn faults_are_named_by_their_json_path() {
        assert_eq!(fault(|d| d["version"] = 2.into()).at, "$.version");
        assert_eq!(fault(|d| d["format"] = "x".into()).at, "$.format");
        assert_eq!(fault(|d| d["session"]["id"] = "../x".into()).at, "$.session.id");
        let e = fault(|d| d["entries"][2]["parent"] = "zz".into());
        assert_eq!(e.at, "$.entries[2].parent", "{e}");
        assert_eq!(fault(|d| d["entries"][1]["id"] = "a".into()).at, "$.entries[1].id");
        let e = fault(|d| d["entries"][1]["message"]["role"] = "boss".into());
        assert_eq!(e.at, "$.entries[1].message.role", "{e}");
        let e = fault(|d| d["entries"][0]["message"]["content"][0]["type"] = "weird".into());
        assert!(e.at.starts_with("$.entries[0].message.content[0]"), "{e}");
        assert_eq!(fault(|d| d["session"]["tip"] = "q".into()).at, "$.session.tip");
        let e = fault(|d| {
            d["entries"][2]["compaction"] =
                serde_json::json!({"first_kept": "b", "tokens_before": 1, "tokens_after": 1})
        });
        assert_eq!(e.at, "$.entries[2].compaction.first_kept", "{e}");
        assert_eq!(fault(|d| d["entries"] = Value::Array(vec![])).at, "$.entries");
        assert_eq!(read(b"{").unwrap_err().at, "$");
    }
}
