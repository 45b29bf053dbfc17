//! `write`, `edit` and a rewind's restore against a symbolic link flipped while they work: a
//! background thread swaps a link inside the workspace between a directory inside and one
//! outside (or one a deny rule forbids), as fast as it can, while the tool writes through the
//! link again and again. Whatever each call answers, nothing may ever land outside.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use panto_core::store::PersistentMessage;
use panto_core::{
    Agent, ApiStyle, Config, ContentBlock, Conversation, FileCheckpoints, MemoryStore, Message, ProviderConfig, Role,
    Session, SessionStore,
};
use panto_tools::files::FileOutcome;
use panto_tools::{Approval, Options, Sandbox, ToolName, Toolbox};
use serde_json::json;

use crate::support::{call, tool};

/// How many calls each race makes.
const ROUNDS: usize = 200;

/// A directory under the test's target directory, resolved.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let real = dir.path().canonicalize().unwrap();
    (dir, real)
}

/// A directory outside every directory `toolbox`'s sandbox lets tools write. Fails, saying so,
/// where the test's target directory is itself inside one (a checkout under `/tmp`).
fn outside(toolbox: &Toolbox) -> (tempfile::TempDir, PathBuf) {
    let base = panto_testkit::outside::outside_base(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let dir = tempfile::tempdir_in(base).unwrap();
    let real = dir.path().canonicalize().unwrap();
    if let Some(root) = toolbox.sandbox().writable_dirs().iter().find(|w| real.starts_with(w)) {
        panic!(
            "the test's \"outside\" directory {} is inside the writable root {}, so this test cannot tell \
             an escape from a permitted write; build with CARGO_TARGET_DIR outside the temp directories",
            real.display(),
            root.display()
        );
    }
    (dir, real)
}

/// The thread that flips `link` between pointing at `a` and at `b`, each flip one atomic rename
/// of a fresh link over it, until stopped.
struct Flipper {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<u64>>,
}

impl Flipper {
    fn start(link: &Path, a: &Path, b: &Path) -> Flipper {
        // A link left by an earlier race in the same directory is replaced.
        let _ = std::fs::remove_file(link);
        std::os::unix::fs::symlink(a, link).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (link, a, b, flag) = (link.to_path_buf(), a.to_path_buf(), b.to_path_buf(), stop.clone());
        let thread = std::thread::spawn(move || {
            let fresh = link.with_file_name(".flipping");
            let mut flips = 0u64;
            while !flag.load(Ordering::Relaxed) {
                for target in [&b, &a] {
                    let _ = std::fs::remove_file(&fresh);
                    std::os::unix::fs::symlink(target, &fresh).unwrap();
                    std::fs::rename(&fresh, &link).unwrap();
                    flips += 1;
                }
            }
            flips
        });
        Flipper {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the thread; how many flips it made.
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Flipper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn options(work: &Path, sandbox: Sandbox) -> Options {
    let mut o = Options::new(work);
    o.sandbox = sandbox;
    o.approval = Approval::Auto;
    o
}

/// `ROUNDS` (or more) writes of `tool_name` through `link/f.txt` while the link flips between `inside` and
/// `forbidden`: how many landed in `forbidden` (its content changed or a file appeared), and how
/// many calls succeeded. `reset` runs before each call.
async fn race(
    options: &Options,
    tool_name: ToolName,
    work: &Path,
    inside: &Path,
    forbidden: &Path,
    reset: impl Fn(),
) -> (usize, usize) {
    let tool = tool(options, tool_name);
    let before = names(forbidden);
    let original = std::fs::read(forbidden.join("f.txt")).ok();
    let flipper = Flipper::start(&work.join("link"), inside, forbidden);
    let (mut landed, mut done) = (0, 0);
    // At least `ROUNDS` calls, and more (up to ten times as many) until one succeeded: on a busy
    // machine the flipping thread can sit on the forbidden side for a whole run of calls, and a
    // race in which every call was refused shows nothing.
    for round in 0..ROUNDS * 10 {
        if round >= ROUNDS && done > 0 {
            break;
        }
        reset();
        let input = match tool_name {
            ToolName::Write => json!({"path": "link/f.txt", "content": format!("round {round}")}),
            _ => json!({"path": "link/f.txt", "old_string": "old", "new_string": "new"}),
        };
        let (is_error, _) = call(tool.as_ref(), input).await;
        done += usize::from(!is_error);
        if names(forbidden) != before || std::fs::read(forbidden.join("f.txt")).ok() != original {
            landed += 1;
            // Put it back, so every escape is counted.
            for name in names(forbidden) {
                if !before.contains(&name) {
                    let _ = std::fs::remove_file(forbidden.join(name));
                }
            }
            if let Some(original) = &original {
                std::fs::write(forbidden.join("f.txt"), original).unwrap();
            }
        }
    }
    let flips = flipper.stop();
    assert!(flips > 0, "the link never flipped");
    (landed, done)
}

#[tokio::test]
async fn write_through_a_flipping_link_never_lands_outside_the_workspace() {
    let (_w, work) = scratch();
    let o = options(&work, Sandbox::WorkspaceWrite);
    let (_o, out) = outside(&Toolbox::new(&o).unwrap());
    let inside = work.join("inside");
    std::fs::create_dir(&inside).unwrap();
    let (landed, done) = race(&o, ToolName::Write, &work, &inside, &out, || {}).await;
    assert_eq!(landed, 0, "{landed} of {ROUNDS} writes landed outside the workspace");
    assert!(done > 0, "no write succeeded: the race test tests nothing");
    assert!(std::fs::read_to_string(inside.join("f.txt"))
        .unwrap()
        .starts_with("round "));
}

#[tokio::test]
async fn edit_through_a_flipping_link_never_lands_outside_the_workspace() {
    let (_w, work) = scratch();
    let o = options(&work, Sandbox::WorkspaceWrite);
    let (_o, out) = outside(&Toolbox::new(&o).unwrap());
    let inside = work.join("inside");
    std::fs::create_dir(&inside).unwrap();
    // The same file on both sides: whichever side the edit reads, its old text is there.
    std::fs::write(out.join("f.txt"), "old").unwrap();
    let file = inside.join("f.txt");
    let (landed, done) = race(&o, ToolName::Edit, &work, &inside, &out, || {
        std::fs::write(&file, "old").unwrap();
    })
    .await;
    assert_eq!(landed, 0, "{landed} of {ROUNDS} edits landed outside the workspace");
    assert!(done > 0, "no edit succeeded: the race test tests nothing");
}

#[tokio::test]
async fn without_a_sandbox_a_deny_rule_holds_against_a_flipping_link() {
    // `forbidden` stands for `/etc` under `deny = ["write(/etc/*)"]`.
    let (_w, work) = scratch();
    let (_f, forbidden) = scratch();
    let inside = work.join("inside");
    std::fs::create_dir(&inside).unwrap();
    std::fs::write(forbidden.join("f.txt"), "old").unwrap();
    let mut o = options(&work, Sandbox::Off);
    o.deny = vec![
        format!("write({}/*)", forbidden.display()),
        format!("edit({}/*)", forbidden.display()),
    ];
    let (landed, done) = race(&o, ToolName::Write, &work, &inside, &forbidden, || {}).await;
    assert_eq!(
        landed, 0,
        "{landed} of {ROUNDS} writes landed where a deny rule forbids"
    );
    assert!(done > 0, "no write succeeded: the race test tests nothing");
    let file = inside.join("f.txt");
    let (landed, done) = race(&o, ToolName::Edit, &work, &inside, &forbidden, || {
        std::fs::write(&file, "old").unwrap();
    })
    .await;
    assert_eq!(landed, 0, "{landed} of {ROUNDS} edits landed where a deny rule forbids");
    assert!(done > 0, "no edit succeeded: the race test tests nothing");
}

fn config() -> Config {
    // Nothing is sent: the test only rewinds.
    Config::new(
        ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
            .with_base_url("http://127.0.0.1:9")
            .with_api_key("test-key"),
    )
}

/// A session whose one turn changed `file` from `before` to `after` (recorded as the tools record
/// it), resumed: the agent and the prompt's entry.
async fn one_turn(file: &Path, before: &[u8], after: &[u8]) -> (Agent, String) {
    let store: Arc<dyn SessionStore> = MemoryStore::new();
    let mut session = Session::create(store.clone());
    let mut conversation = Conversation::new();
    let mut prompt = String::new();
    for (role, text) in [(Role::User, "prompt"), (Role::Assistant, "answer")] {
        let message = Message::new(role, vec![ContentBlock::text(text)]);
        conversation.messages.push(message.clone());
        let ids = session
            .append(&[PersistentMessage::new(&message, &conversation)])
            .await
            .unwrap();
        if role == Role::User {
            prompt = ids[0].clone();
        }
    }
    FileCheckpoints::new(store.clone(), session.id())
        .record_change(file.to_str().unwrap(), Some(before), Some(after))
        .await
        .unwrap();
    let id = session.id().to_owned();
    let session = Session::resolve(store, &id).await.unwrap().unwrap();
    (Agent::resume(config(), session).await.unwrap(), prompt)
}

#[tokio::test]
async fn a_restore_through_a_parent_swapped_for_a_link_out_never_writes_outside() {
    const BEFORE: &[u8] = b"as it was";
    const AFTER: &[u8] = b"as the turn left it";
    let (_w, work) = scratch();
    let o = options(&work, Sandbox::WorkspaceWrite);
    let toolbox = Toolbox::new(&o).unwrap();
    let (_o, out) = outside(&toolbox);
    let inside = work.join("inside");
    std::fs::create_dir(&inside).unwrap();
    // Outside holds what the turn left inside, so that a restore that reached it would take it
    // for panto's own and write it.
    std::fs::write(out.join("f.txt"), AFTER).unwrap();
    let file = work.join("link/f.txt");

    // The parent already swapped: the restore is refused and reported.
    std::os::unix::fs::symlink(&out, work.join("link")).unwrap();
    let (mut agent, prompt) = one_turn(&file, BEFORE, AFTER).await;
    let report = toolbox.rewind_with_files(&mut agent, &prompt).await.unwrap();
    assert_eq!(report.len(), 1, "{report:?}");
    assert!(
        matches!(&report[0].outcome, FileOutcome::Failed { error } if error.contains("outside the directories the sandbox lets tools write")),
        "{report:?}"
    );
    std::fs::remove_file(work.join("link")).unwrap();

    // Swapped back and forth while restores run.
    let flipper = Flipper::start(&work.join("link"), &inside, &out);
    let (mut landed, mut restored) = (0, 0);
    for _ in 0..ROUNDS {
        std::fs::write(inside.join("f.txt"), AFTER).unwrap();
        let (mut agent, prompt) = one_turn(&file, BEFORE, AFTER).await;
        let report = toolbox.rewind_with_files(&mut agent, &prompt).await.unwrap();
        restored += report.iter().filter(|f| f.outcome == FileOutcome::Restored).count();
        if names(&out) != ["f.txt"] || std::fs::read(out.join("f.txt")).unwrap() != AFTER {
            landed += 1;
            for name in names(&out) {
                if name != "f.txt" {
                    let _ = std::fs::remove_file(out.join(name));
                }
            }
            std::fs::write(out.join("f.txt"), AFTER).unwrap();
        }
    }
    flipper.stop();
    assert_eq!(landed, 0, "{landed} of {ROUNDS} restores wrote outside the workspace");
    assert!(restored > 0, "no restore succeeded: the race test tests nothing");
}
