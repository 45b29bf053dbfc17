//! Searching what was said in a store's sessions: the query, the hits, the one definition of
//! what a query matches in a message, and the default search every store gets.
//!
//! A store answers [`SessionStore::search`](crate::SessionStore::search). Every store shares
//! [`SearchMatcher`] (what matches where, and the snippet shown) and [`finish_hits`] (the order
//! and the limit), so that a fast path and the default agree; the store contract suite in
//! `panto-testkit` holds them to it.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::info::SessionInfo;
use super::seam::SessionStore;
use crate::conversation::{ContentBlock, Message, Role, ToolResultContent};
use crate::error::{Error, Result};

/// How many characters of context a snippet keeps on each side of the match.
pub const SNIPPET_CONTEXT_CHARS: usize = 60;

/// How many characters of the match itself a snippet keeps (a pattern can match a whole
/// message).
pub const SNIPPET_MATCH_CHARS: usize = 200;

/// What to search for, and where.
///
/// `#[non_exhaustive]`: build one with [`SearchQuery::text`] or [`SearchQuery::regex`] and the
/// `with_*` methods, so that a field added here does not break a caller.
///
/// ```
/// use panto_core::store::SearchQuery;
///
/// let query = SearchQuery::text("parser").with_tools(true).with_limit(20);
/// assert!(query.matcher().is_ok());
/// let bad = SearchQuery::regex("(unclosed").matcher().unwrap_err();
/// assert!(bad.to_string().contains("(unclosed"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchQuery {
    /// The text to find, or the pattern with [`SearchQuery::regex`] set.
    pub pattern: String,
    /// `pattern` is a regular expression (the `regex` crate's syntax), not literal text.
    pub regex: bool,
    /// Letter case must match. Off by default: `Parser` finds `parser`.
    pub case_sensitive: bool,
    /// Tool calls' inputs and tool results' outputs are searched too, besides prompts and
    /// answers.
    pub tools: bool,
    /// At most this many hits, the newest.
    pub limit: Option<usize>,
    /// Only sessions started in this directory ([`SessionInfo::cwd`]), as listings show them.
    pub cwd: Option<PathBuf>,
}

impl SearchQuery {
    /// A search for `text`, literally, ignoring case, in prompts and answers, every session.
    pub fn text(text: impl Into<String>) -> Self {
        SearchQuery {
            pattern: text.into(),
            regex: false,
            case_sensitive: false,
            tools: false,
            limit: None,
            cwd: None,
        }
    }

    /// A search for the regular expression `pattern`, ignoring case unless the pattern says
    /// otherwise (`(?-i)`).
    pub fn regex(pattern: impl Into<String>) -> Self {
        SearchQuery {
            regex: true,
            ..SearchQuery::text(pattern)
        }
    }

    /// Searches tool inputs and outputs too (`true`), or not.
    pub fn with_tools(mut self, tools: bool) -> Self {
        self.tools = tools;
        self
    }

    /// At most `limit` hits, the newest.
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Only sessions started in `dir`.
    pub fn in_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Letter case must match (`true`), or not.
    pub fn with_case_sensitive(mut self, case_sensitive: bool) -> Self {
        self.case_sensitive = case_sensitive;
        self
    }

    /// The query compiled. [`Error::InvalidSearchPattern`] naming the pattern when it is an empty
    /// text or a malformed regular expression.
    pub fn matcher(&self) -> Result<SearchMatcher> {
        if self.pattern.is_empty() {
            return Err(Error::InvalidSearchPattern {
                pattern: String::new(),
                message: "the search text is empty".to_owned(),
            });
        }
        let source = if self.regex {
            self.pattern.clone()
        } else {
            regex::escape(&self.pattern)
        };
        let regex = regex::RegexBuilder::new(&source)
            .case_insensitive(!self.case_sensitive)
            // A pattern that compiles to a huge program is refused rather than held.
            .size_limit(1 << 22)
            .build()
            .map_err(|e| Error::InvalidSearchPattern {
                pattern: self.pattern.clone(),
                message: e.to_string(),
            })?;
        Ok(SearchMatcher {
            query: self.clone(),
            regex,
        })
    }
}

/// A compiled [`SearchQuery`]: the one definition of what it matches in a message.
#[derive(Debug, Clone)]
pub struct SearchMatcher {
    query: SearchQuery,
    regex: regex::Regex,
}

/// Where in a message a query matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MatchSource {
    /// The text of a prompt or an answer.
    Text,
    /// A string in a tool call's input (searched with [`SearchQuery::tools`]).
    ToolInput,
    /// The text of a tool result (searched with [`SearchQuery::tools`]).
    ToolOutput,
}

impl MatchSource {
    /// `text`, `tool_input` or `tool_output`.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchSource::Text => "text",
            MatchSource::ToolInput => "tool_input",
            MatchSource::ToolOutput => "tool_output",
        }
    }
}

/// A match of a query in one message: where, and a snippet around it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MessageMatch {
    /// What matched.
    pub source: MatchSource,
    /// The text around the match, at most [`SNIPPET_CONTEXT_CHARS`] characters each side and
    /// [`SNIPPET_MATCH_CHARS`] of the match, with `…` where it was cut and line breaks and tabs
    /// as spaces. Untrusted model text: a front end neutralises it before showing it.
    pub snippet: String,
    /// The match, as a byte range of `snippet` (on character boundaries), for highlighting.
    pub matched: Range<usize>,
}

impl SearchMatcher {
    /// The query this was compiled from.
    pub fn query(&self) -> &SearchQuery {
        &self.query
    }

    /// The first match in `text`, as a byte range.
    pub fn find(&self, text: &str) -> Option<Range<usize>> {
        self.regex.find(text).map(|m| m.range())
    }

    /// Whether the query covers session `info`: any session, or only those started in the
    /// query's directory.
    pub fn covers(&self, info: &SessionInfo) -> bool {
        match &self.query.cwd {
            None => true,
            Some(dir) => info.cwd.as_deref() == Some(dir.as_path()),
        }
    }

    /// The query's directory, if it keeps to one.
    pub fn dir(&self) -> Option<&Path> {
        self.query.cwd.as_deref()
    }

    /// The first match of the query in `message`, blocks in order: text blocks of prompts and
    /// answers, and with [`SearchQuery::tools`] the strings of tool calls' inputs and the text
    /// of tool results. System messages, reasoning and compaction summaries are not searched.
    pub fn match_message(&self, message: &Message) -> Option<MessageMatch> {
        if message.role == Role::System {
            return None;
        }
        for block in &message.content {
            match block {
                ContentBlock::Text { text } => {
                    if let Some(m) = self.match_text(text, MatchSource::Text) {
                        return Some(m);
                    }
                }
                ContentBlock::ToolUse { input, .. } if self.query.tools => {
                    if let Some(m) = self.match_json(input) {
                        return Some(m);
                    }
                }
                ContentBlock::ToolResult { content, .. } if self.query.tools => {
                    for part in content {
                        if let ToolResultContent::Text { text } = part {
                            if let Some(m) = self.match_text(text, MatchSource::ToolOutput) {
                                return Some(m);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The first match in `text`, with its snippet, as coming from `source`.
    pub fn match_text(&self, text: &str, source: MatchSource) -> Option<MessageMatch> {
        let range = self.find(text)?;
        // An empty match (a pattern such as `a*`) finds nothing worth showing.
        if range.is_empty() {
            return None;
        }
        let (snippet, matched) = snippet(text, range);
        Some(MessageMatch {
            source,
            snippet,
            matched,
        })
    }

    /// The first match in the strings of a tool call's input, depth first in document order.
    fn match_json(&self, value: &serde_json::Value) -> Option<MessageMatch> {
        match value {
            serde_json::Value::String(s) => self.match_text(s, MatchSource::ToolInput),
            serde_json::Value::Array(items) => items.iter().find_map(|v| self.match_json(v)),
            serde_json::Value::Object(map) => map.values().find_map(|v| self.match_json(v)),
            _ => None,
        }
    }

    /// A regular expression (the `regex` crate's syntax) that matches every line of JSON, as
    /// serde_json writes it, whose strings hold a match of this query: for a literal text query,
    /// its JSON-escaped form; `None` for a regular expression, which may match decoded text that
    /// its escaped form does not. A store that can search raw JSON lines uses it to skip the
    /// lines that cannot match, then confirms on the decoded message with
    /// [`SearchMatcher::match_message`].
    pub fn json_line_pattern(&self) -> Option<String> {
        if self.query.regex {
            return None;
        }
        let escaped = serde_json::to_string(&self.query.pattern).ok()?;
        let inner = escaped.strip_prefix('"')?.strip_suffix('"')?;
        let mut pattern = String::new();
        if !self.query.case_sensitive {
            pattern.push_str("(?i)");
        }
        pattern.push_str(&regex::escape(inner));
        Some(pattern)
    }
}

/// The snippet of `text` around the byte range `range` (on character boundaries), and the
/// match's range in it.
fn snippet(text: &str, range: Range<usize>) -> (String, Range<usize>) {
    let before = &text[..range.start];
    let matched = &text[range.clone()];
    let after = &text[range.end..];
    let mut out = String::new();
    // The context before: its last SNIPPET_CONTEXT_CHARS characters.
    let start = before
        .char_indices()
        .rev()
        .nth(SNIPPET_CONTEXT_CHARS - 1)
        .map_or(0, |(i, _)| i);
    if start > 0 {
        out.push('…');
    }
    push_flat(&mut out, &before[start..]);
    let match_start = out.len();
    let cut = matched.char_indices().nth(SNIPPET_MATCH_CHARS).map(|(i, _)| i);
    push_flat(&mut out, &matched[..cut.unwrap_or(matched.len())]);
    let match_end = out.len();
    if cut.is_some() {
        out.push('…');
        return (out, match_start..match_end);
    }
    let end = after.char_indices().nth(SNIPPET_CONTEXT_CHARS).map(|(i, _)| i);
    push_flat(&mut out, &after[..end.unwrap_or(after.len())]);
    if end.is_some() {
        out.push('…');
    }
    (out, match_start..match_end)
}

/// Appends `s` with line breaks and tabs as spaces (each one byte for one byte, so ranges
/// computed on `out` stay right).
fn push_flat(out: &mut String, s: &str) {
    out.extend(s.chars().map(|c| if matches!(c, '\n' | '\r' | '\t') { ' ' } else { c }));
}

/// One message that matched a search.
///
/// `#[non_exhaustive]`: a store outside panto-core builds one with [`SearchHit::new`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SearchHit {
    /// The session, as the listing shows it.
    pub session: SessionInfo,
    /// The message's entry id.
    pub entry: String,
    /// The message's role.
    pub role: Role,
    /// Whether the entry is on the session's active branch (the path from its first entry to
    /// the tip); `false` for an entry of a branch a rewind left.
    pub on_active_branch: bool,
    /// When the entry was written. A store that does not know (the default search) gives the
    /// session's last write.
    pub at: DateTime<Utc>,
    /// What matched, the snippet and the match's place in it.
    pub matched: MessageMatch,
}

impl SearchHit {
    /// The hit of `matched` in entry `entry` (of role `role`) of session `session`.
    pub fn new(
        session: SessionInfo,
        entry: impl Into<String>,
        role: Role,
        on_active_branch: bool,
        at: DateTime<Utc>,
        matched: MessageMatch,
    ) -> Self {
        SearchHit {
            session,
            entry: entry.into(),
            role,
            on_active_branch,
            at,
            matched,
        }
    }
}

/// Puts `hits` in the order every store returns them, newest first (by [`SearchHit::at`], ties
/// by session id, newest UUIDv7 first, then in the order given, so a store lists a session's
/// hits newest entry first), and keeps at most `limit`.
pub fn finish_hits(hits: &mut Vec<SearchHit>, limit: Option<usize>) {
    hits.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| b.session.id.cmp(&a.session.id)));
    if let Some(limit) = limit {
        hits.truncate(limit);
    }
}

/// The search every store gets by default ([`SessionStore::search`]): every listed session the
/// query covers, each read with `tree` (every entry, all branches) and `load_branch` (the
/// active branch's messages in full). An entry the active branch's view holds is searched in
/// full; any other (a branch a rewind left, a message a compaction replaced) only by the start
/// of its text that `tree` gives ([`TreeEntry::preview`](crate::store::TreeEntry::preview)).
/// A store without branches (`tree` unsupported) is searched on its active branch. Hits carry
/// the session's last write as their time.
pub async fn scan_search<S: SessionStore + ?Sized>(store: &S, query: &SearchQuery) -> Result<Vec<SearchHit>> {
    let matcher = query.matcher()?;
    let mut hits = Vec::new();
    for info in store.list().await? {
        if !matcher.covers(&info) {
            continue;
        }
        let Some(branch) = store.load_branch(&info.id).await? else {
            continue;
        };
        let tree = match store.tree(&info.id).await {
            Ok(tree) => tree,
            Err(Error::Unsupported(_)) => None,
            Err(e) => return Err(e),
        };
        let full: HashMap<&str, &Message> = branch
            .entries
            .iter()
            .map(|e| e.id.as_str())
            .zip(&branch.conversation.messages)
            .collect();
        let mut found = Vec::new();
        match &tree {
            Some(tree) => {
                let parents: HashMap<&str, Option<&str>> = tree
                    .entries
                    .iter()
                    .map(|e| (e.entry.id.as_str(), e.entry.parent.as_deref()))
                    .collect();
                let mut path = HashSet::new();
                let mut next = tree.tip.as_deref();
                while let Some(id) = next {
                    if !path.insert(id) {
                        break;
                    }
                    next = parents.get(id).copied().flatten();
                }
                for entry in tree.entries.iter().rev() {
                    let id = entry.entry.id.as_str();
                    let matched = match full.get(id) {
                        Some(message) => matcher.match_message(message),
                        None if entry.role != Role::System => matcher.match_text(&entry.preview, MatchSource::Text),
                        None => None,
                    };
                    if let Some(matched) = matched {
                        found.push((id.to_owned(), entry.role, path.contains(id), matched));
                    }
                }
            }
            None => {
                for (entry, message) in branch.entries.iter().zip(&branch.conversation.messages).rev() {
                    if let Some(matched) = matcher.match_message(message) {
                        found.push((entry.id.clone(), message.role, true, matched));
                    }
                }
            }
        }
        for (entry, role, active, matched) in found {
            hits.push(SearchHit::new(
                info.clone(),
                entry,
                role,
                active,
                info.modified,
                matched,
            ));
        }
    }
    finish_hits(&mut hits, query.limit);
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(query: &SearchQuery, text: &str) -> Option<(String, String)> {
        let m = query.matcher().unwrap().match_text(text, MatchSource::Text)?;
        Some((m.snippet[m.matched.clone()].to_owned(), m.snippet))
    }

    #[test]
    fn text_is_literal_and_ignores_case() {
        let q = SearchQuery::text("a.b");
        assert_eq!(found(&q, "x A.B y").unwrap().0, "A.B");
        assert_eq!(found(&q, "axb"), None, "a dot is a dot");
        let q = SearchQuery::text("Straße").with_case_sensitive(true);
        assert_eq!(found(&q, "straße"), None);
    }

    #[test]
    fn a_bad_regex_names_the_pattern() {
        let e = SearchQuery::regex("a[b").matcher().unwrap_err();
        assert!(
            matches!(&e, Error::InvalidSearchPattern { pattern, .. } if pattern == "a[b"),
            "{e}"
        );
        assert!(e.to_string().contains("a[b"), "{e}");
        assert!(SearchQuery::text("").matcher().is_err());
    }

    #[test]
    fn snippets_are_bounded_and_cut_on_char_boundaries() {
        let text = format!("{}needle{}", "é\n".repeat(500), "ü".repeat(500));
        let (matched, snippet) = found(&SearchQuery::text("NEEDLE"), &text).unwrap();
        assert_eq!(matched, "needle");
        assert!(snippet.starts_with('…') && snippet.ends_with('…'), "{snippet}");
        assert_eq!(snippet.chars().count(), 2 * SNIPPET_CONTEXT_CHARS + 6 + 2);
        assert!(!snippet.contains('\n'), "line breaks are spaces");
        // A whole-text match is cut too.
        let long = "x".repeat(10_000);
        let (matched, snippet) = found(&SearchQuery::regex("x+"), &long).unwrap();
        assert_eq!(matched.len(), SNIPPET_MATCH_CHARS);
        assert!(snippet.len() < 300);
    }

    #[test]
    fn the_json_line_pattern_finds_escaped_text() {
        let q = SearchQuery::text("say \"Hi\"\\ né");
        let line = serde_json::to_string(&serde_json::json!({"text": "we SAY \"hi\"\\ NÉ now"})).unwrap();
        let pattern = regex::Regex::new(&q.matcher().unwrap().json_line_pattern().unwrap()).unwrap();
        assert!(pattern.is_match(&line), "{line}");
        assert_eq!(SearchQuery::regex("a").matcher().unwrap().json_line_pattern(), None);
    }

    #[test]
    fn tools_are_searched_only_when_asked() {
        let call = Message::new(
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: "needle-id".into(),
                name: "needle".into(),
                input: serde_json::json!({"needle": ["x", {"command": "grep needle"}]}),
            }],
        );
        let q = SearchQuery::text("needle");
        assert_eq!(q.matcher().unwrap().match_message(&call), None);
        let m = q.with_tools(true).matcher().unwrap().match_message(&call).unwrap();
        assert_eq!(m.source, MatchSource::ToolInput);
        assert_eq!(
            m.snippet, "grep needle",
            "only the input's strings, not its keys or the call's id"
        );
    }
}
