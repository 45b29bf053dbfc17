//! Sessions per working directory: `-c` continues the latest session of the directory panto
//! runs in, and listings and pickers show that directory's sessions (`--all`: every one), as
//! codex and Claude Code do. A session's directory is where it was started
//! ([`SessionInfo::cwd`], recorded by the store).

use std::path::Path;

use panto_core::SessionInfo;

use super::{table, StoredIds};

/// Whether session `info` was started in `dir`. A session whose directory the store did not
/// record belongs to no directory.
pub fn started_in(info: &SessionInfo, dir: &Path) -> bool {
    info.cwd.as_deref() == Some(dir)
}

/// The sessions of `infos` started in `dir`, in their order, and how many were started
/// elsewhere.
pub fn of_dir(infos: Vec<SessionInfo>, dir: &Path) -> (Vec<SessionInfo>, usize) {
    let total = infos.len();
    let here: Vec<SessionInfo> = infos.into_iter().filter(|info| started_in(info, dir)).collect();
    let elsewhere = total - here.len();
    (here, elsewhere)
}

/// The line under a listing of one directory's sessions, when `elsewhere` sessions of other
/// directories were left out of it: how many, and that `--all` lists them (`panto sessions
/// --all`, `panto -r --all`, `/sessions --all`, `/resume --all`).
pub fn others_line(elsewhere: usize) -> Option<String> {
    match elsewhere {
        0 => None,
        1 => Some("1 session from another directory not shown (--all lists every one)".to_owned()),
        n => Some(format!(
            "{n} sessions from other directories not shown (--all lists every one)"
        )),
    }
}

/// What `-c` says when no session was started in `dir` though the store holds `elsewhere`
/// sessions of other directories: continuing one of those would swap in another project's
/// system prompt, so it is never done without being asked (`-c --all`).
pub fn nothing_to_continue(dir: &Path, elsewhere: usize) -> String {
    let (count, verb) = match elsewhere {
        1 => ("1 session".to_owned(), "was"),
        n => (format!("{n} sessions"), "were"),
    };
    format!(
        "no session to continue in {}: {count} {verb} started in other directories \
         (`panto sessions --all` lists them, `panto -r ID` resumes one, `panto -c --all` continues the latest)",
        dir.display()
    )
}

/// The note a session resumed from another directory gets: where it was started, and that the
/// tools work in the current directory `here`. `None` for a session of `here`, or of a directory
/// not recorded.
pub fn elsewhere_note(info: &SessionInfo, here: &Path) -> Option<String> {
    let started = info.cwd.as_deref().filter(|dir| *dir != here)?;
    Some(format!(
        "this session was started in {}; its tools now work in {}",
        started.display(),
        here.display()
    ))
}

/// One line of a listing of every directory's sessions ([`by_directory`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A directory, above its sessions.
    Directory(String),
    /// The table row of session `infos[index]`.
    Session(usize, String),
}

/// Every session of `infos` under the directory it was started in: `here`'s first, then the
/// others by their most recent session (`infos` is newest first), those of no recorded
/// directory last; each directory's sessions in their order. Rows are [`table`]'s, whose short
/// ids tell every stored session apart.
pub fn by_directory(infos: &[SessionInfo], stored: &StoredIds, here: &Path) -> Vec<Line> {
    let rows = table(infos, stored);
    let mut groups: Vec<(Option<&Path>, Vec<usize>)> = Vec::new();
    for (index, info) in infos.iter().enumerate() {
        let dir = info.cwd.as_deref();
        match groups.iter_mut().find(|(d, _)| *d == dir) {
            Some((_, members)) => members.push(index),
            None => groups.push((dir, vec![index])),
        }
    }
    // Stable: among the others, the order of first appearance (recency) stays.
    groups.sort_by_key(|(dir, _)| match dir {
        Some(dir) if *dir == here => 0,
        Some(_) => 1,
        None => 2,
    });
    let mut rows: Vec<Option<String>> = rows.into_iter().map(Some).collect();
    let mut lines = Vec::with_capacity(infos.len() + groups.len());
    for (dir, members) in groups {
        lines.push(Line::Directory(match dir {
            Some(dir) if dir == here => format!("{} (this directory)", dir.display()),
            Some(dir) => dir.display().to_string(),
            None => "(directory not recorded)".to_owned(),
        }));
        for index in members {
            let row = rows[index].take().unwrap_or_default();
            lines.push(Line::Session(index, format!("  {row}")));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::sessions::test_info as info;

    fn in_dir(id: &str, dir: Option<&str>) -> SessionInfo {
        let mut info = info(id);
        info.cwd = dir.map(PathBuf::from);
        info
    }

    #[test]
    fn a_directory_keeps_its_own_sessions_in_order_and_counts_the_rest() {
        let infos = vec![
            in_dir("0190aaaa", Some("/p/other")),
            in_dir("0190bbbb", Some("/p/proj")),
            in_dir("0190cccc", None),
            in_dir("0190dddd", Some("/p/proj")),
            in_dir("0190eeee", Some("/p/proj/sub")),
        ];
        let (here, elsewhere) = of_dir(infos, Path::new("/p/proj"));
        let ids: Vec<&str> = here.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["0190bbbb", "0190dddd"], "a subdirectory is another directory");
        assert_eq!(elsewhere, 3, "a session without a directory is of none");
        assert_eq!(others_line(0), None);
        assert_eq!(
            others_line(3).as_deref(),
            Some("3 sessions from other directories not shown (--all lists every one)")
        );
    }

    #[test]
    fn every_session_is_listed_under_its_directory_this_one_first() {
        let infos = vec![
            in_dir("0190aaaa", Some("/p/other")),
            in_dir("0190bbbb", Some("/p/proj")),
            in_dir("0190cccc", None),
            in_dir("0190dddd", Some("/p/third")),
            in_dir("0190eeee", Some("/p/other")),
        ];
        let lines = by_directory(&infos, &StoredIds::of(&infos), Path::new("/p/proj"));
        let shown: Vec<String> = lines
            .iter()
            .map(|line| match line {
                Line::Directory(dir) => dir.clone(),
                Line::Session(index, row) => {
                    assert!(row.starts_with(&format!("  {}", infos[*index].id)), "{row}");
                    format!("  {}", infos[*index].id)
                }
            })
            .collect();
        assert_eq!(
            shown,
            [
                "/p/proj (this directory)",
                "  0190bbbb",
                "/p/other",
                "  0190aaaa",
                "  0190eeee",
                "/p/third",
                "  0190dddd",
                "(directory not recorded)",
                "  0190cccc",
            ]
        );
    }

    #[test]
    fn a_session_from_elsewhere_says_where_it_was_started() {
        let here = Path::new("/p/proj");
        assert_eq!(elsewhere_note(&in_dir("0190aaaa", Some("/p/proj")), here), None);
        assert_eq!(elsewhere_note(&in_dir("0190aaaa", None), here), None);
        assert_eq!(
            elsewhere_note(&in_dir("0190aaaa", Some("/p/other")), here).as_deref(),
            Some("this session was started in /p/other; its tools now work in /p/proj")
        );
    }
}
