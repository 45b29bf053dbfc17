//! The completion menu: while the first word of the line is a slash command being typed, or the
//! word under the cursor is an `@path`, the candidates are drawn in rows under the line as the
//! user types (the line editor's hint, which it lays out, redraws and clears with the line).
//! Candidates match by case-insensitive substring, prefix matches first, and Tab takes them in
//! the same order ([`command_candidates`], [`file_candidates`]). The menu closes when the word is
//! complete, on Esc (until the line changes), and when the line is accepted.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustyline::completion::FilenameCompleter;
use rustyline::hint::Hint;

use super::commands::{Spec, COMMANDS};

/// The most rows the menu takes under the line (the last says how many more there are).
const MENU_ROWS: usize = 8;
/// The most files one walk of the project lists, and how long it may take: a prompt started in
/// a huge tree (the home directory) stays responsive, with the files found so far.
const MAX_FILES: usize = 20_000;
const MAX_WALK: Duration = Duration::from_millis(300);

/// The project's files for `@`: walked (as `find` walks, `.gitignore`d and hidden files left
/// out) the first time a prompt needs them, and forgotten when the next prompt starts, so files
/// made meanwhile are found.
#[derive(Debug, Default)]
pub struct ProjectFiles {
    cwd: Option<PathBuf>,
    files: Mutex<Option<Arc<Vec<String>>>>,
}

impl ProjectFiles {
    /// The files under `cwd`, paths relative to it.
    pub fn new(cwd: PathBuf) -> ProjectFiles {
        ProjectFiles {
            cwd: Some(cwd),
            files: Mutex::new(None),
        }
    }

    /// Forgets the last walk: the next `@` walks again.
    pub fn forget(&self) {
        *self.files.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The files, walking the project first if this prompt has not yet.
    fn get(&self) -> Arc<Vec<String>> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files
            .get_or_insert_with(|| Arc::new(self.cwd.as_deref().map(walk).unwrap_or_default()))
            .clone()
    }
}

/// The files under `cwd` as ripgrep would search them, relative paths, sorted. A name that is not
/// UTF-8 or not shown as it is ([`shows_as_is`]) is left out.
fn walk(cwd: &Path) -> Vec<String> {
    let started = Instant::now();
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(cwd).require_git(false).build();
    for entry in walker.flatten() {
        if out.len() >= MAX_FILES || started.elapsed() > MAX_WALK {
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(path) = entry.path().strip_prefix(cwd).ok().and_then(Path::to_str) else {
            continue;
        };
        if shows_as_is(path) {
            out.push(path.to_owned());
        }
    }
    out.sort();
    out
}

/// Whether a terminal shows `path` as it is: a name holding a control or bidi character
/// ([`crate::safe::neutralise`] would change it) is never offered.
fn shows_as_is(path: &str) -> bool {
    matches!(crate::safe::neutralise(path), std::borrow::Cow::Borrowed(_))
}

/// How well `candidate` matches `query` (both lowercase): 0 a prefix, 1 a prefix of its last
/// part (after the last `/`), 2 anywhere inside; `None` no match.
fn rank(candidate: &str, query: &str) -> Option<u8> {
    let last = candidate.rsplit('/').next().unwrap_or(candidate);
    if candidate.starts_with(query) {
        Some(0)
    } else if last.starts_with(query) {
        Some(1)
    } else if candidate.contains(query) {
        Some(2)
    } else {
        None
    }
}

/// The commands whose name holds `typed` (the line so far, its slash included): prefix matches
/// first, then in the table's order.
pub fn command_candidates(typed: &str) -> Vec<&'static Spec> {
    let query = typed.strip_prefix('/').unwrap_or(typed).to_lowercase();
    let mut found: Vec<(u8, &'static Spec)> = COMMANDS
        .iter()
        .filter_map(|c| rank(&c.name[1..], &query).map(|r| (r, c)))
        .collect();
    // A stable sort: the table's order within a rank.
    found.sort_by_key(|(r, _)| *r);
    found.into_iter().map(|(_, c)| c).collect()
}

/// The paths `@query` completes to: the project's files holding `query` (prefix matches, then
/// file names starting with it, then the rest; shorter paths first). A path from the root, the
/// home directory or a parent (`/`, `~`, `.`), and a query no project file matches, complete
/// as file names in their directory instead.
pub fn file_candidates(files: &ProjectFiles, query: &str) -> Vec<String> {
    if !query.starts_with(['/', '~', '.']) {
        let lower = query.to_lowercase();
        let listed = files.get();
        let mut found: Vec<(u8, &String)> = listed
            .iter()
            .filter_map(|f| rank(&f.to_lowercase(), &lower).map(|r| (r, f)))
            .collect();
        if !found.is_empty() {
            found.sort_by(|(ra, a), (rb, b)| ra.cmp(rb).then(a.len().cmp(&b.len())).then(a.cmp(b)));
            return found.into_iter().map(|(_, f)| f.clone()).collect();
        }
    }
    // The completer may complete only the end of the word (after a `=`, say): the rest is kept.
    FilenameCompleter::new()
        .complete_path(query, query.len())
        .map(|(start, pairs)| {
            pairs
                .into_iter()
                .map(|p| format!("{}{}", &query[..start], p.replacement))
                .filter(|p| shows_as_is(p))
                .collect()
        })
        .unwrap_or_default()
}

/// The menu drawn under the line: its rows, each after a line break. Not a completion: Right
/// arrow does not type it into the line.
#[derive(Debug)]
pub struct Menu(String);

impl Hint for Menu {
    fn display(&self) -> &str {
        &self.0
    }

    fn completion(&self) -> Option<&str> {
        None
    }
}

/// The line the menu was closed on with Esc: it stays closed until the line changes.
static DISMISSED: Mutex<Option<String>> = Mutex::new(None);

/// Closes the menu for `line` (Esc).
pub fn dismiss(line: &str) {
    *DISMISSED.lock().unwrap_or_else(|e| e.into_inner()) = Some(line.to_owned());
}

/// Forgets a dismissal (a new prompt).
pub fn reset() {
    *DISMISSED.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// The menu for `line` with the cursor at `pos`, on a terminal `columns` wide; `None` when no
/// word being typed has candidates, the word is complete, or Esc closed the menu.
pub fn menu(line: &str, pos: usize, files: &ProjectFiles, columns: usize) -> Option<Menu> {
    if pos != line.len() || DISMISSED.lock().unwrap_or_else(|e| e.into_inner()).as_deref() == Some(line) {
        return None;
    }
    let rows: Vec<(String, &str)> = if line.starts_with('/') && !line.contains(char::is_whitespace) {
        let found = command_candidates(line);
        if found.iter().any(|c| c.name == line) {
            return None;
        }
        found.into_iter().map(|c| (c.name.to_owned(), c.help)).collect()
    } else {
        let word_start = line.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let query = line[word_start..].strip_prefix('@')?;
        let found = file_candidates(files, query);
        if found.iter().any(|f| f == query) {
            return None;
        }
        found.into_iter().map(|f| (f, "")).collect()
    };
    (!rows.is_empty()).then(|| Menu(draw(&rows, columns)))
}

/// The rows, each after a line break: a candidate (and its description, aligned) per row, cut
/// short of the last column (a row that filled it would wrap the line editor's count of rows),
/// and a last row saying how many more there are when they do not all fit.
fn draw(rows: &[(String, &str)], columns: usize) -> String {
    let shown = if rows.len() > MENU_ROWS {
        MENU_ROWS - 1
    } else {
        rows.len()
    };
    let width = rows[..shown]
        .iter()
        .map(|(name, _)| crate::render::wrap::width(name))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (name, help) in &rows[..shown] {
        let row = if help.is_empty() {
            format!("  {name}")
        } else {
            let pad = width - crate::render::wrap::width(name);
            format!("  {name}{}  {help}", " ".repeat(pad))
        };
        out.push('\n');
        out.push_str(&crate::render::wrap::cut(&row, columns.saturating_sub(1).max(8)));
    }
    if rows.len() > shown {
        out.push_str(&format!("\n  … {} more", rows.len() - shown));
    }
    out
}

/// The menu styled: the first row (what Tab takes) as it is, the others dimmed.
pub fn paint(menu: &str) -> String {
    let mut out = String::new();
    for (i, row) in menu.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if i > 1 && !row.is_empty() {
            out.push_str(&format!("\x1b[2m{row}\x1b[0m"));
        } else {
            out.push_str(row);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(typed: &str) -> Vec<&'static str> {
        command_candidates(typed).iter().map(|c| c.name).collect()
    }

    #[test]
    fn commands_match_anywhere_with_prefix_matches_first() {
        assert_eq!(names("/st"), ["/status", "/system", "/cost"]);
        assert_eq!(names("/ST")[0], "/status");
        assert_eq!(names("/"), COMMANDS.iter().map(|c| c.name).collect::<Vec<_>>());
        assert!(names("/zzz").is_empty());
    }

    #[test]
    fn files_match_anywhere_with_prefix_then_name_matches_first() {
        let dir = tempfile::tempdir().unwrap();
        for path in [
            "src/main.rs",
            "src/bin/domain.rs",
            "main.go",
            "docs/Main-notes.md",
            "README.md",
        ] {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        std::fs::create_dir(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("target/main.o"), "").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        let files = ProjectFiles::new(dir.path().to_path_buf());
        assert_eq!(
            file_candidates(&files, "main"),
            ["main.go", "src/main.rs", "docs/Main-notes.md", "src/bin/domain.rs"]
        );
        assert_eq!(file_candidates(&files, "READ"), ["README.md"]);
        std::fs::write(dir.path().join("main\u{1b}[2J.rs"), "").unwrap();
        files.forget();
        assert!(file_candidates(&files, "main").iter().all(|f| !f.contains('\u{1b}')));
        // Made after the walk: found once the next prompt forgets it.
        std::fs::write(dir.path().join("src/mainline.rs"), "").unwrap();
        assert!(!file_candidates(&files, "mainl").contains(&"src/mainline.rs".to_owned()));
        files.forget();
        assert_eq!(file_candidates(&files, "mainl"), ["src/mainline.rs"]);
        // A path from the root completes as a file name in its directory, ignored or not.
        let root = dir.path().display().to_string();
        assert_eq!(
            file_candidates(&files, &format!("{root}/target/ma")),
            [format!("{root}/target/main.o")]
        );
    }

    #[test]
    fn the_menu_shows_candidates_under_the_line_until_the_word_is_complete_or_esc() {
        let files = ProjectFiles::default();
        let menu = menu("/st", 3, &files, 60).unwrap();
        let rows: Vec<&str> = menu.display().split('\n').collect();
        assert_eq!(rows[0], "");
        assert!(rows[1].starts_with("  /status  model, provider"), "{rows:?}");
        assert!(rows.iter().all(|r| crate::render::wrap::width(r) < 60), "{rows:?}");
        assert!(rows[1].ends_with('…'), "{rows:?}");
        assert_eq!(menu.completion(), None);
        assert!(super::menu("/status", 7, &files, 60).is_none(), "complete");
        assert!(super::menu("/st", 1, &files, 60).is_none(), "cursor inside the line");
        assert!(super::menu("say /st", 7, &files, 60).is_none(), "not the first word");
        let all = super::menu("/", 1, &files, 100).unwrap();
        assert_eq!(all.display().split('\n').count(), MENU_ROWS + 1);
        assert!(all.display().ends_with(&format!("… {} more", COMMANDS.len() - 7)));
        dismiss("/st");
        assert!(super::menu("/st", 3, &files, 60).is_none(), "Esc closed it");
        assert!(super::menu("/sta", 4, &files, 60).is_some(), "the line changed");
        reset();
    }
}
