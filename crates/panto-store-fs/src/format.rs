//! The on-disk shapes of a session file: the header line and the entry lines, and the parsing of
//! one line into them with errors that say what was wrong and where.
//!
//! Writing uses borrowed `*Out` structs so that an append serialises straight from the caller's
//! data; reading uses owned `*In` structs. The two are kept side by side so a field added to one
//! is visibly missing from the other.

use std::io;
use std::path::Path;

use chrono::{DateTime, Utc};
use panto_core::wire::ProviderIdentity;
use panto_core::{Error, Message, Result, SessionInfo, Usage};
use serde::{Deserialize, Serialize};

use crate::timestamp;

/// The format version this crate writes (2: reasoning blocks of the OpenAI Responses API, the
/// `branch` entry and the header's `forked_from` of the session tree; docs/session-format.md).
pub(crate) const VERSION: u64 = 2;
/// The oldest version it reads: every version from this one to [`VERSION`] loads (version 1
/// files hold none of version 2's additions).
pub(crate) const OLDEST_READ: u64 = 1;

/// The longest line, in bytes without its `\n`, that a session file may hold: the writer
/// refuses to write a longer one, and readers refuse to read one (naming the file, the line and
/// its length) rather than hold it in memory. 64 MiB: above the request size providers accept
/// (Anthropic's Messages API takes at most 32 MB), so no message a model could be sent is
/// refused.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// The `type` of the header line.
pub(crate) const HEADER_TYPE: &str = "session";

/// The `type` of a branch switch entry (version 2).
pub(crate) const BRANCH_TYPE: &str = "branch";

/// The `type` of a message entry.
pub(crate) const MESSAGE_TYPE: &str = "message";

/// Line 1 of a session file, as written.
#[derive(Debug, Serialize)]
pub(crate) struct HeaderOut<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub version: u64,
    pub id: &'a str,
    #[serde(serialize_with = "timestamp::write")]
    pub created: DateTime<Utc>,
    pub cwd: Option<&'a str>,
    pub metadata: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<&'a ForkOnDisk>,
}

/// Where a forked session came from, as its header records it (version 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ForkOnDisk {
    pub session: String,
    pub entry: String,
}

impl ForkOnDisk {
    /// The origin as panto-core names it.
    pub(crate) fn into_origin(self) -> panto_core::store::ForkOrigin {
        panto_core::store::ForkOrigin {
            session: self.session,
            entry: self.entry,
        }
    }
}

/// A branch switch entry, as written (version 2): `tip` becomes the active branch's tip.
#[derive(Debug, Serialize)]
pub(crate) struct BranchOut<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: &'a str,
    pub parent_id: Option<&'a str>,
    pub tip: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<&'a CheckpointOnDisk>,
    #[serde(serialize_with = "timestamp::write")]
    pub timestamp: DateTime<Utc>,
    pub activity: ActivityOut<'a>,
}

/// A file change, as the branch entry that records it carries it (a branch entry that keeps
/// the tip; see docs/session-format.md, "File checkpoints").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CheckpointOnDisk {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restore: bool,
}

/// Line 1 of a session file, as read.
#[derive(Debug, Deserialize)]
pub(crate) struct HeaderIn {
    pub id: String,
    #[serde(deserialize_with = "timestamp::read")]
    pub created: DateTime<Utc>,
    /// Where the session was started: not needed to read a session back; listed
    /// (`SessionInfo::cwd`) and carried when a session is copied whole.
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub metadata: Option<String>,
    #[serde(default)]
    pub forked_from: Option<ForkOnDisk>,
}

/// Line 1 with its type and version, parsed at once: what a valid header costs to read.
#[derive(Debug, Deserialize)]
struct HeaderChecked<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    version: Option<u64>,
    id: String,
    #[serde(deserialize_with = "timestamp::read")]
    created: DateTime<Utc>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    metadata: Option<String>,
    #[serde(default)]
    forked_from: Option<ForkOnDisk>,
}

/// Just enough of line 1 to check that it is a header of a version we read, before the rest of
/// its shape is held against this version's rules.
#[derive(Debug, Deserialize)]
struct HeaderProbe {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    version: Option<serde_json::Value>,
}

/// Just enough of an entry line to name its type when the full parse fails.
#[derive(Debug, Deserialize)]
struct TypeProbe {
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

/// The running summary stored with every entry, as of that entry. The default is a session's
/// before its first entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Activity {
    pub message_count: usize,
    #[serde(
        default,
        serialize_with = "timestamp::write_option",
        deserialize_with = "timestamp::read_option"
    )]
    pub last_prompt_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub last_user_message: Option<String>,
    #[serde(default)]
    pub wire: Option<ProviderIdentity>,
}

/// [`Activity`] as written: borrowed from the writer's `SessionInfo` (or an entry's
/// `Activity`), so that writing an entry's line copies neither the last user message nor the
/// provider identity. Serialises as `Activity` does.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct ActivityOut<'a> {
    pub message_count: usize,
    #[serde(serialize_with = "timestamp::write_option")]
    pub last_prompt_at: Option<DateTime<Utc>>,
    pub last_user_message: Option<&'a str>,
    pub wire: Option<&'a ProviderIdentity>,
}

impl<'a> ActivityOut<'a> {
    /// The activity part of `info`.
    pub(crate) fn of(info: &'a SessionInfo) -> Self {
        ActivityOut {
            message_count: info.message_count,
            last_prompt_at: info.last_prompt_at,
            last_user_message: info.last_user_message.as_deref(),
            wire: info.wire.as_ref(),
        }
    }
}

impl Activity {
    /// This activity, to write.
    pub(crate) fn out(&self) -> ActivityOut<'_> {
        ActivityOut {
            message_count: self.message_count,
            last_prompt_at: self.last_prompt_at,
            last_user_message: self.last_user_message.as_deref(),
            wire: self.wire.as_ref(),
        }
    }

    /// The activity part of `info`, which the tests compare what was read with.
    #[cfg(test)]
    pub(crate) fn of(info: &SessionInfo) -> Self {
        Activity {
            message_count: info.message_count,
            last_prompt_at: info.last_prompt_at,
            last_user_message: info.last_user_message.clone(),
            wire: info.wire.clone(),
        }
    }

    /// The listing info of a session whose header says `id` and `created` and whose newest entry
    /// was written at `modified` with this activity.
    pub(crate) fn into_info(self, id: String, created: DateTime<Utc>, modified: DateTime<Utc>) -> SessionInfo {
        let mut info = SessionInfo::new(id, created);
        info.modified = modified;
        info.last_prompt_at = self.last_prompt_at;
        info.message_count = self.message_count;
        info.last_user_message = self.last_user_message;
        info.wire = self.wire;
        info
    }
}

/// A compaction as the summary entry records it: the first kept message by entry id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CompactionOnDisk {
    /// The entry id of the first message kept verbatim after the summary; `null` when the
    /// compaction kept nothing.
    pub first_kept: Option<String>,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// A message entry, as written.
///
/// Fields are written in this order, and the listing fields (`timestamp`, `activity`) come last
/// on purpose: `list` then finds them in the last few hundred bytes of a file, however long the
/// message before them (see `scan::skim_tail_end`). Readers do not depend on the order.
#[derive(Debug, Serialize)]
pub(crate) struct EntryOut<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: &'a str,
    pub parent_id: Option<&'a str>,
    pub message: &'a Message,
    pub usage: Option<Usage>,
    pub wire: Option<&'a ProviderIdentity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<&'a CompactionOnDisk>,
    #[serde(serialize_with = "timestamp::write")]
    pub timestamp: DateTime<Utc>,
    pub activity: ActivityOut<'a>,
}

/// A message entry, as read by `load` and by a writer reopening a session.
#[derive(Debug, Deserialize)]
pub(crate) struct EntryIn {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    pub parent_id: Option<String>,
    pub timestamp: DateTime<Utc>,
    pub message: Message,
    // `usage` and `wire` are provenance: the message carries its own usage, and the listing
    // reads the provider identity from `activity`. They are accepted but not needed to rebuild the
    // view, so serde skips them.
    #[serde(default)]
    pub compaction: Option<CompactionOnDisk>,
    pub activity: Activity,
}

/// A message entry with the provenance `load` skips (its usage and provider identity), as a session
/// copied whole to another store reads it.
#[derive(Debug, Deserialize)]
pub(crate) struct WholeEntryIn {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    pub parent_id: Option<String>,
    pub message: Message,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub wire: Option<ProviderIdentity>,
}

/// The newest entry as `list` reads it: everything but the message body, which serde skips
/// without building it.
#[derive(Debug, Deserialize)]
pub(crate) struct TailEntry {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(deserialize_with = "timestamp::read")]
    pub timestamp: DateTime<Utc>,
    pub activity: Activity,
}

/// A `CorruptSession` error for `location`.
pub(crate) fn corrupt(location: impl Into<String>, message: impl Into<String>) -> Error {
    Error::CorruptSession {
        location: location.into(),
        message: message.into(),
    }
}

/// What is wrong with a line of `len` bytes, longer than `max`.
pub(crate) fn too_long(len: u64, max: usize) -> String {
    format!("the line is {len} bytes long, over the maximum line size of {max} bytes")
}

/// `<path>:<line>`, the location of a bad line.
pub(crate) fn line_location(path: &Path, line: usize) -> String {
    format!("{}:{line}", path.display())
}

/// Describes a serde_json error without its "at line 1 column N" suffix (a session line is one
/// JSON line, so only the column means anything) and says which kind of problem it is.
fn describe(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let what = full.strip_suffix(&suffix).unwrap_or(&full);
    match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            format!("invalid JSON at column {}: {what}", e.column())
        }
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            format!("bad entry at column {}: {what}", e.column())
        }
    }
}

/// Parses line 1. `location` names it for errors.
pub(crate) fn parse_header(line: &[u8], location: &str) -> Result<HeaderIn> {
    if line.is_empty() {
        return Err(corrupt(location, "the header line is empty"));
    }
    // A well-formed header of a version this reads, in one parse; anything else goes through
    // the probe, which names what is wrong.
    if let Ok(whole) = serde_json::from_slice::<HeaderChecked>(line) {
        if whole.kind.as_deref() == Some(HEADER_TYPE)
            && whole.version.is_some_and(|v| (OLDEST_READ..=VERSION).contains(&v))
        {
            return Ok(HeaderIn {
                id: whole.id,
                created: whole.created,
                cwd: whole.cwd,
                metadata: whole.metadata,
                forked_from: whole.forked_from,
            });
        }
    }
    let probe: HeaderProbe = serde_json::from_slice(line).map_err(|e| corrupt(location, describe(&e)))?;
    match probe.kind.as_deref() {
        Some(HEADER_TYPE) => {}
        Some(other) => {
            return Err(corrupt(
                location,
                format!("line 1 must be the session header (type \"{HEADER_TYPE}\"), found type \"{other}\""),
            ))
        }
        None => {
            return Err(corrupt(
                location,
                format!("line 1 must be the session header (type \"{HEADER_TYPE}\"), found no type"),
            ))
        }
    }
    match probe.version {
        Some(serde_json::Value::Number(n)) if n.as_u64().is_some_and(|v| (OLDEST_READ..=VERSION).contains(&v)) => {}
        Some(other) => {
            return Err(corrupt(
                location,
                format!(
                    "unsupported session format version {other}; this panto reads versions {OLDEST_READ} to {VERSION}"
                ),
            ))
        }
        None => return Err(corrupt(location, "the header has no `version` field")),
    }
    serde_json::from_slice(line).map_err(|e| corrupt(location, describe(&e)))
}

/// Parses an entry line (any line after the header). `location` names it for errors.
pub(crate) fn parse_entry(line: &[u8], location: &str) -> Result<EntryIn> {
    parse_typed(line, location, |entry: &EntryIn| &entry.kind)
}

/// Parses the newest entry for a listing. `location` names it for errors.
pub(crate) fn parse_tail(line: &[u8], location: &str) -> Result<TailEntry> {
    parse_typed(line, location, |entry: &TailEntry| &entry.kind)
}

/// Parses a message entry line with its provenance, for a session copied whole. `location`
/// names it for errors.
pub(crate) fn parse_whole_entry(line: &[u8], location: &str) -> Result<WholeEntryIn> {
    parse_typed(line, location, |entry: &WholeEntryIn| &entry.kind)
}

/// Parses an entry line as `T`, whose `type` field `kind` gives. `location` names it for
/// errors.
fn parse_typed<T: serde::de::DeserializeOwned>(line: &[u8], location: &str, kind: impl Fn(&T) -> &str) -> Result<T> {
    if line.is_empty() {
        return Err(corrupt(location, "empty line"));
    }
    match serde_json::from_slice::<T>(line) {
        Ok(entry) => {
            check_entry_type(kind(&entry), location)?;
            Ok(entry)
        }
        Err(e) => Err(explain_entry_error(line, location, &e)),
    }
}

fn check_entry_type(kind: &str, location: &str) -> Result<()> {
    match kind {
        MESSAGE_TYPE | BRANCH_TYPE => Ok(()),
        HEADER_TYPE => Err(corrupt(
            location,
            "a second session header: type \"session\" is only valid on line 1",
        )),
        other => Err(corrupt(
            location,
            format!(
                "unknown entry type \"{other}\" (this panto reads \"{MESSAGE_TYPE}\" and \"{BRANCH_TYPE}\" entries)"
            ),
        )),
    }
}

/// Turns a failed entry parse into the most useful error: a wrong `type` is named as such even
/// when the rest of the line does not fit a message entry either.
fn explain_entry_error(line: &[u8], location: &str, e: &serde_json::Error) -> Error {
    if let Ok(TypeProbe { kind: Some(kind) }) = serde_json::from_slice::<TypeProbe>(line) {
        if let Err(type_error) = check_entry_type(&kind, location) {
            return type_error;
        }
    }
    corrupt(location, describe(e))
}

/// Wraps an I/O error with the file it happened on.
pub(crate) fn io_error(doing: &str, path: &Path, e: io::Error) -> Error {
    Error::store(format!("{doing} {}", path.display()), e)
}

/// Checks that the header names the session its file name says.
pub(crate) fn check_header_id(header_id: &str, file_id: &str, location: &str) -> Result<()> {
    if header_id == file_id {
        Ok(())
    } else {
        Err(corrupt(
            location,
            format!("the header says session \"{header_id}\" but the file is named for \"{file_id}\""),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_activity_is_written_as_it_is_read() {
        let mut info = SessionInfo::new("0194f0c1-0000-7000-8000-000000000000".to_owned(), Utc::now());
        info.message_count = 3;
        info.last_prompt_at = Some(Utc::now());
        info.last_user_message = Some("say \"hi\"\n".to_owned());
        info.wire = Some(ProviderIdentity::new(
            panto_core::ApiStyle::OpenAiChat,
            "http://user:secret@127.0.0.1:9/v1",
            "m",
            panto_core::ReasoningEffort::default(),
        ));
        let written = serde_json::to_string(&ActivityOut::of(&info)).unwrap();
        let read: Activity = serde_json::from_str(&written).unwrap();
        assert_eq!(read, Activity::of(&info));
        assert_eq!(written, serde_json::to_string(&Activity::of(&info)).unwrap());
        assert_eq!(serde_json::to_string(&read.out()).unwrap(), written);
        assert!(!written.contains("secret"), "{written}");
    }

    fn message_of(e: Error) -> String {
        match e {
            Error::CorruptSession { message, .. } => message,
            other => panic!("expected CorruptSession, got {other:?}"),
        }
    }

    #[test]
    fn syntax_errors_name_the_column_only() {
        let m = message_of(parse_entry(br#"{"type":"message","id":}"#, "f:2").unwrap_err());
        assert!(m.starts_with("invalid JSON at column 24"), "{m}");
        assert!(!m.contains("line 1"), "{m}");
    }

    #[test]
    fn missing_fields_are_named() {
        let m = message_of(parse_entry(br#"{"type":"message","id":"a"}"#, "f:2").unwrap_err());
        assert!(m.contains("missing field `timestamp`"), "{m}");
        assert!(m.starts_with("bad entry"), "{m}");
    }

    #[test]
    fn unknown_types_win_over_shape_errors() {
        let m = message_of(parse_entry(br#"{"type":"label","id":"a"}"#, "f:2").unwrap_err());
        assert!(m.contains("unknown entry type \"label\""), "{m}");
        let m = message_of(parse_entry(br#"{"type":"session","version":1}"#, "f:9").unwrap_err());
        assert!(m.contains("only valid on line 1"), "{m}");
    }

    #[test]
    fn header_version_is_checked_before_shape() {
        let m = message_of(parse_header(br#"{"type":"session","version":3,"other":true}"#, "f:1").unwrap_err());
        assert!(m.contains("version 3") && m.contains("reads versions 1 to 2"), "{m}");
        let m = message_of(parse_header(br#"{"type":"message"}"#, "f:1").unwrap_err());
        assert!(m.contains("found type \"message\""), "{m}");
    }
}
