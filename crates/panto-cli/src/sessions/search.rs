//! `panto sessions search TEXT`: what was said in past sessions, newest first, each hit with its
//! session, when, its branch and a snippet with the match; `-r` resumes at a hit.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use panto_core::store::{SearchHit, SearchQuery};
use panto_core::{Role, SessionInfo};

use super::table::{local_time, short_ids, StoredIds};
use crate::exit::Failure;
use crate::render::Style;
use crate::store::OpenStore;

/// What `panto sessions search` was asked.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// The text (or pattern).
    pub text: String,
    /// `--regex`.
    pub regex: bool,
    /// `--tools`.
    pub tools: bool,
    /// `--all`: every directory's sessions, not only this one's.
    pub all: bool,
    /// `--limit`.
    pub limit: Option<usize>,
}

impl SearchRequest {
    /// The store query for it, run in `here`.
    pub fn query(&self, here: &Path) -> SearchQuery {
        let query = if self.regex {
            SearchQuery::regex(&self.text)
        } else {
            SearchQuery::text(&self.text)
        };
        let query = query.with_tools(self.tools);
        let query = match self.limit {
            Some(n) => query.with_limit(n),
            None => query,
        };
        if self.all {
            query
        } else {
            query.in_dir(here)
        }
    }
}

/// One hit of `panto sessions search --json` (docs/cli.md), fields in alphabetical order.
#[derive(serde::Serialize)]
struct HitJson<'a> {
    active_branch: bool,
    at: String,
    entry: &'a str,
    /// The match, as a character range of `snippet`.
    matched: [usize; 2],
    role: &'a str,
    session: &'a str,
    snippet: &'a str,
    source: &'a str,
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
    }
}

/// The hits of `request` in `store`, and the ids every listed session is told apart by.
async fn find(store: &OpenStore, request: &SearchRequest, here: &Path) -> Result<(Vec<SearchHit>, StoredIds), Failure> {
    let hits = store.store.search(&request.query(here)).await?;
    let stored = if hits.is_empty() {
        StoredIds::of(&[])
    } else {
        StoredIds::of(&store.store.list().await?)
    };
    Ok((hits, stored))
}

/// One line per hit: the short session id (as listings print it), when, the branch, who, and
/// the snippet, every byte of it neutralised on a terminal, the match in reverse video when the
/// terminal takes colour.
pub fn hit_lines(hits: &[SearchHit], stored: &StoredIds, style: Style) -> Vec<String> {
    let mut sessions: Vec<SessionInfo> = Vec::new();
    for hit in hits {
        if !sessions.iter().any(|s| s.id == hit.session.id) {
            sessions.push(hit.session.clone());
        }
    }
    let ids = short_ids(&sessions, stored);
    hits.iter()
        .map(|hit| {
            let id = sessions
                .iter()
                .position(|s| s.id == hit.session.id)
                .map_or(hit.session.id.as_str(), |i| ids[i].as_str());
            let m = &hit.matched;
            let (before, matched, after) = (
                &m.snippet[..m.matched.start],
                &m.snippet[m.matched.clone()],
                &m.snippet[m.matched.end..],
            );
            let branch = if hit.on_active_branch { "" } else { "  (other branch)" };
            format!(
                "{id}  {}  {:<9}{branch}  {}{}{}",
                local_time(hit.at),
                role_name(hit.role),
                style.safe(before),
                style.mark(&style.safe(matched)),
                style.safe(after),
            )
        })
        .collect()
}

/// `panto sessions search TEXT [--tools] [--regex] [--all] [--json]`: every hit, newest first.
/// Exit code 1 when nothing matched.
pub async fn search_command(
    store: &OpenStore,
    request: &SearchRequest,
    as_json: bool,
    here: &Path,
) -> Result<ExitCode, Failure> {
    let (hits, stored) = find(store, request, here).await?;
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let mut out = stdout.lock();
    if as_json {
        let list: Vec<HitJson<'_>> = hits
            .iter()
            .map(|hit| {
                let m = &hit.matched;
                let start = m.snippet[..m.matched.start].chars().count();
                let len = m.snippet[m.matched.clone()].chars().count();
                HitJson {
                    active_branch: hit.on_active_branch,
                    at: hit.at.to_rfc3339(),
                    entry: &hit.entry,
                    matched: [start, start + len],
                    role: role_name(hit.role),
                    session: &hit.session.id,
                    snippet: &m.snippet,
                    source: m.source.as_str(),
                }
            })
            .collect();
        let text =
            serde_json::to_string(&list).map_err(|e| Failure::runtime(format!("cannot encode the hits: {e}")))?;
        let text = if terminal {
            crate::safe::json_for_terminal(&text).into_owned()
        } else {
            text
        };
        let _ = writeln!(out, "{text}");
    } else {
        let style = Style::detect(terminal, &crate::config::Env::from_process());
        for line in hit_lines(&hits, &stored, style) {
            let _ = writeln!(out, "{line}");
        }
    }
    let _ = out.flush();
    if hits.is_empty() {
        crate::safe::eprint_line(&nothing_found(request, here));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// What is said when nothing matched.
fn nothing_found(request: &SearchRequest, here: &Path) -> String {
    if request.all {
        format!("no session says {:?}", request.text)
    } else {
        format!(
            "no session started in {} says {:?} (--all searches every directory's)",
            here.display(),
            request.text
        )
    }
}

/// `panto sessions search TEXT -r`: the session to resume at a hit, its id in full: the newest
/// hit's, or on a terminal the one picked among several hits. A hit on a branch a rewind left
/// makes that branch (its newest entry) the session's active branch first, so the session
/// resumes where the hit is.
pub async fn resume_at_hit(store: &OpenStore, request: &SearchRequest, here: &Path) -> Result<String, Failure> {
    let (hits, stored) = find(store, request, here).await?;
    let hit = match hits.len() {
        0 => return Err(Failure::usage(nothing_found(request, here))),
        1 => &hits[0],
        _ if crate::terminal::stdin_is_tty() => {
            let rows = hit_lines(
                &hits,
                &stored,
                Style::detect(false, &crate::config::Env::from_process()),
            );
            match crate::picker::choose(&rows, "resume at which hit?") {
                Some(n) => &hits[n],
                None => return Err(Failure::usage("no hit picked")),
            }
        }
        _ => &hits[0],
    };
    let mut session = store.resolve(&hit.session.id).await?;
    if !hit.on_active_branch {
        let tree = session.tree().await?;
        let tip = branch_tip(&tree, &hit.entry);
        session.switch_branch(Some(&tip)).await?;
    }
    Ok(session.id().to_owned())
}

/// The newest entry of `tree` whose path passes through `entry` (itself, when nothing follows
/// it): the tip of the newest branch holding it.
fn branch_tip(tree: &panto_core::store::SessionTree, entry: &str) -> String {
    let parent_of = |id: &str| {
        tree.entries
            .iter()
            .find(|e| e.entry.id == id)
            .and_then(|e| e.entry.parent.clone())
    };
    for candidate in tree.entries.iter().rev() {
        let mut next = Some(candidate.entry.id.clone());
        // Parents come before children, so a walk up ends within the tree's length.
        for _ in 0..=tree.entries.len() {
            match next {
                Some(id) if id == entry => return candidate.entry.id.clone(),
                Some(id) => next = parent_of(&id),
                None => break,
            }
        }
    }
    entry.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use panto_core::store::{EntryRef, SessionTree, TreeEntry};

    fn node(id: &str, parent: Option<&str>) -> TreeEntry {
        TreeEntry::of(
            EntryRef {
                id: id.into(),
                parent: parent.map(Into::into),
            },
            &panto_core::Message::new(Role::User, vec![panto_core::ContentBlock::text(id)]),
        )
    }

    #[test]
    fn a_hit_is_neutralised_and_its_match_marked_on_a_terminal() {
        use panto_core::store::MatchSource;
        let info = SessionInfo::new("0190aaaa-1111-7000-8000-000000000000", chrono::Utc::now());
        let text = "\x1b]0;evil\x07 the needle \x1b[2J\u{202e}";
        let m = SearchQuery::text("needle")
            .matcher()
            .unwrap()
            .match_text(text, MatchSource::Text)
            .unwrap();
        let hit = SearchHit::new(info, "e1", Role::Assistant, false, chrono::Utc::now(), m);
        let style = Style::detect(true, &crate::config::Env::from_pairs(&[("TERM", "xterm")]));
        let line = &hit_lines(&[hit], &StoredIds::of(&[]), style)[0];
        assert!(
            !line.contains("\x1b]") && !line.contains("\x1b[2J") && !line.contains('\u{202e}'),
            "{line:?}"
        );
        assert!(line.contains("\x1b[7mneedle\x1b[27m"), "{line:?}");
        assert!(
            line.starts_with("0190aaaa  ") && line.contains("(other branch)"),
            "{line:?}"
        );
    }

    #[test]
    fn the_branch_of_an_entry_is_its_newest_descendant() {
        // a - b - c, and a - d (active), then b - e.
        let tree = SessionTree {
            entries: vec![
                node("a", None),
                node("b", Some("a")),
                node("c", Some("b")),
                node("d", Some("a")),
                node("e", Some("b")),
            ],
            tip: Some("d".into()),
        };
        assert_eq!(branch_tip(&tree, "b"), "e");
        assert_eq!(branch_tip(&tree, "c"), "c");
        assert_eq!(branch_tip(&tree, "a"), "e");
    }
}
