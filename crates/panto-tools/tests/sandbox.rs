//! The sandbox, end to end: bash under `workspace-write` and `read-only`, and the write tools'
//! checks against the same writable set. Linux only; a kernel without Landlock fails these tests
//! (the sandbox fails closed, and so does its test).

use std::path::Path;

use panto_tools::{Options, Sandbox, ToolName};
use serde_json::json;

use crate::support::{call, tool};

fn options(cwd: &Path, sandbox: Sandbox) -> Options {
    let mut o = Options::new(cwd);
    o.sandbox = sandbox;
    o
}

/// A directory outside the workspace and outside the temp directories: under the test's own
/// target directory.
fn outside_dir() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tempfile::tempdir_in(base).unwrap()
}

#[tokio::test]
async fn workspace_write_lets_bash_write_the_workspace_and_nothing_outside() {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let outside = outside_dir();
    let bash = tool(&options(work.path(), Sandbox::WorkspaceWrite), ToolName::Bash);
    let target = outside.path().join("escaped.txt");
    let (is_error, text) = call(
        bash.as_ref(),
        json!({"command": format!("echo in > inside.txt && echo out > {}", target.display())}),
    )
    .await;
    assert!(is_error, "{text}");
    // Landlock refuses it, or, in the mount namespace, the read-only mount does first.
    assert!(
        text.contains("Permission denied") || text.contains("Read-only file system"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(work.path().join("inside.txt")).unwrap(), "in\n");
    assert!(!target.exists(), "bash wrote outside the workspace");
}

#[tokio::test]
async fn write_and_edit_refuse_paths_outside_the_writable_set() {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let outside = outside_dir();
    let o = options(work.path(), Sandbox::WorkspaceWrite);
    let write = tool(&o, ToolName::Write);
    let target = outside.path().join("x.txt");
    let (is_error, text) = call(write.as_ref(), json!({"path": target, "content": "x"})).await;
    assert!(
        is_error && text.contains("outside the directories the sandbox lets tools write"),
        "{text}"
    );
    assert!(!target.exists());
    std::fs::write(&target, "old").unwrap();
    let edit = tool(&o, ToolName::Edit);
    let (is_error, text) = call(
        edit.as_ref(),
        json!({"path": target, "old_string": "old", "new_string": "new"}),
    )
    .await;
    assert!(is_error && text.contains("writable_roots"), "{text}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
    let (is_error, text) = call(write.as_ref(), json!({"path": "ok.txt", "content": "x"})).await;
    assert!(!is_error, "{text}");
    // writable_roots opens a directory up.
    let mut o = o.clone();
    o.writable_roots = vec![outside.path().to_path_buf()];
    let (is_error, text) = call(
        tool(&o, ToolName::Write).as_ref(),
        json!({"path": target, "content": "y"}),
    )
    .await;
    assert!(!is_error, "{text}");
}

#[tokio::test]
async fn read_only_stops_every_write() {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let o = options(work.path(), Sandbox::ReadOnly);
    let bash = tool(&o, ToolName::Bash);
    let (is_error, text) = call(
        bash.as_ref(),
        json!({"command": "cat /etc/hostname >/dev/null; echo read-ok; touch made; mktemp"}),
    )
    .await;
    assert!(is_error, "{text}");
    assert!(text.starts_with("read-ok\n"), "{text}");
    assert!(!work.path().join("made").exists());
    let (is_error, text) = call(
        tool(&o, ToolName::Write).as_ref(),
        json!({"path": "w.txt", "content": "x"}),
    )
    .await;
    assert!(is_error && text.contains("sandbox is read-only"), "{text}");
    assert!(!work.path().join("w.txt").exists());
}

#[tokio::test]
async fn the_network_is_closed_unless_allowed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let command = json!({"command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")});
    let (is_error, text) = call(
        tool(&options(work.path(), Sandbox::WorkspaceWrite), ToolName::Bash).as_ref(),
        command.clone(),
    )
    .await;
    assert!(is_error && !text.contains("connected"), "{text}");
    assert!(text.contains("Permission denied"), "{text}");
    // Unix sockets stay allowed.
    let (is_error, text) = call(
        tool(&options(work.path(), Sandbox::WorkspaceWrite), ToolName::Bash).as_ref(),
        json!({"command": "python3 -c 'import socket; socket.socket(socket.AF_UNIX); print(\"unix-ok\")'"}),
    )
    .await;
    assert!(!is_error && text.contains("unix-ok"), "{text}");
    let mut o = options(work.path(), Sandbox::WorkspaceWrite);
    o.sandbox_network = true;
    let (is_error, text) = call(tool(&o, ToolName::Bash).as_ref(), command).await;
    assert!(!is_error && text.contains("connected"), "{text}");
}

#[tokio::test]
async fn a_c_program_compiles_and_runs_in_the_workspace() {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(
        work.path().join("hello.c"),
        "#include <stdio.h>\nint main(void) { puts(\"hello from c\"); return 0; }\n",
    )
    .unwrap();
    let bash = tool(&options(work.path(), Sandbox::WorkspaceWrite), ToolName::Bash);
    let (is_error, text) = call(bash.as_ref(), json!({"command": "cc -o hello hello.c && ./hello"})).await;
    assert!(!is_error, "{text}");
    assert!(text.starts_with("hello from c\n"), "{text}");
}

/// Where the namespace scenario makes its directories: `PANTO_TEST_BASE` when the unprivileged
/// run passes one it can write, else the test's target directory.
fn scenario_base() -> std::path::PathBuf {
    std::env::var_os("PANTO_TEST_BASE")
        .map(Into::into)
        .unwrap_or_else(|| env!("CARGO_TARGET_TMPDIR").into())
}

/// Fails clearly when `dir` is beneath a temp directory: bash sees a private `/tmp`, so such a
/// directory would be hidden from it rather than read-only, and prove nothing.
fn assert_outside_the_temp_dirs(dir: &Path) {
    let real = dir.canonicalize().unwrap();
    for temp in [
        std::env::temp_dir(),
        "/tmp".into(),
        "/var/tmp".into(),
        "/dev/shm".into(),
    ] {
        if let Ok(temp) = temp.canonicalize() {
            assert!(
                !real.starts_with(&temp),
                "{} is beneath the temp directory {}: the namespace tests need the target directory \
                 (CARGO_TARGET_TMPDIR) outside every temp directory; build from a checkout outside them",
                real.display(),
                temp.display()
            );
        }
    }
}

/// Tries to make `/` writable again with `mount_setattr(MOUNT_ATTR_RDONLY cleared)`, then chmods
/// `argv[1]`; then the same in a new user and mount namespace. Prints what happened.
const UNDO_READ_ONLY: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def attempt(where):
    attr = ctypes.create_string_buffer(bytes(8) + (1).to_bytes(8, "little") + bytes(16), 32)
    r = libc.syscall(ctypes.c_long(442), ctypes.c_long(-100), b"/", ctypes.c_long(0x8000), attr, ctypes.c_long(32))
    print(where, "setattr", r, os.strerror(ctypes.get_errno()))
    try:
        os.chmod(sys.argv[1], 0o777)
        print("chmod-after-setattr=ok", where)
    except OSError as e:
        print(where, "chmod", e)
attempt("here")
if libc.unshare(ctypes.c_int(0x10000000 | 0x00020000)) == 0:
    attempt("nested")
else:
    print("no nested namespace", os.strerror(ctypes.get_errno()))
"#;

/// The workspace-write mount namespace, as whoever runs it: outside the writable set nothing's
/// metadata changes (`chmod`, `touch -d`, `setxattr`, `chown` fail with EROFS), the workspace and
/// `writable_roots` stay fully writable, and `/tmp` is private to the toolbox: a file bash puts
/// there is not in the real `/tmp` and is there for the next call.
async fn namespace_scenario() {
    use std::os::unix::fs::PermissionsExt;

    let base = scenario_base();
    let work = tempfile::tempdir_in(&base).unwrap();
    let root = tempfile::tempdir_in(&base).unwrap();
    let outside = tempfile::tempdir_in(&base).unwrap();
    assert_outside_the_temp_dirs(outside.path());
    let out = outside.path().canonicalize().unwrap();
    for writable in [work.path(), root.path()] {
        assert!(!out.starts_with(writable.canonicalize().unwrap()));
    }
    std::fs::create_dir(out.join("d")).unwrap();
    std::fs::set_permissions(out.join("d"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(out.join("f"), "x").unwrap();
    let mtime = std::fs::metadata(out.join("f")).unwrap().modified().unwrap();

    let mut o = options(work.path(), Sandbox::WorkspaceWrite);
    o.writable_roots = vec![root.path().to_path_buf()];
    let toolbox = panto_tools::Toolbox::new(&o).unwrap();
    assert_eq!(toolbox.sandbox().note(), None, "no mount namespace could be made here");
    let private = toolbox.sandbox().private_tmp().expect("a private /tmp").to_path_buf();
    let by_name = |name: ToolName| {
        toolbox
            .tools()
            .into_iter()
            .find(|t| t.declaration().name == name.as_str())
            .unwrap()
    };
    let bash = by_name(ToolName::Bash);

    let d = out.join("d");
    let f = out.join("f");
    // Undoing the read-only mounts: `mount_setattr` (which Landlock does not cover) to clear the
    // flag, here and in a user namespace of its own; each time a chmod is tried.
    std::fs::write(work.path().join("undo.py"), UNDO_READ_ONLY).unwrap();
    let command = format!(
        "python3 undo.py {d:?}\n\
         chmod 777 {d:?}; echo chmod=$?\n\
         touch -d 2000-01-01 {f:?}; echo touch=$?\n\
         python3 -c 'import os, sys; os.setxattr(sys.argv[1], \"user.panto\", b\"1\")' {f:?}; echo setxattr=$?\n\
         chown \"$(id -u):$(id -g)\" {f:?}; echo chown=$?\n\
         echo x > {outf:?}; echo create=$?",
        outf = out.join("new")
    );
    let (_, text) = call(bash.as_ref(), json!({ "command": command })).await;
    for step in ["chmod", "touch", "setxattr", "chown", "create"] {
        assert!(
            text.contains(&format!("{step}=")) && !text.contains(&format!("{step}=0")),
            "{step} outside the workspace succeeded: {text}"
        );
    }
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(!text.contains("chmod-after-setattr=ok"), "{text}");
    let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o755, "the mode outside changed");
    assert_eq!(
        std::fs::metadata(&f).unwrap().modified().unwrap(),
        mtime,
        "the time outside changed"
    );
    let xattrs = std::process::Command::new("python3")
        .args(["-c", "import os, sys; print(os.listxattr(sys.argv[1]))"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&xattrs.stdout).trim(),
        "[]",
        "an attribute was set outside"
    );
    assert!(!out.join("new").exists());

    // Inside, everything still works, metadata included.
    let command = format!(
        "set -e; touch w && chmod 700 w && touch -d 2000-01-01 w\n\
         touch {r:?} && chmod 600 {r:?} && touch -d 2000-01-01 {r:?}\n\
         python3 -c 'import os; os.setxattr(\"w\", \"user.panto\", b\"1\")'\n\
         echo inside-ok",
        r = root.path().join("r")
    );
    let (is_error, text) = call(bash.as_ref(), json!({ "command": command })).await;
    assert!(!is_error && text.contains("inside-ok"), "{text}");
    assert_eq!(
        std::fs::metadata(root.path().join("r")).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // /tmp is the toolbox's own, the same for every call.
    let name = format!(
        "panto-ns-test-{}-{}",
        std::process::id(),
        work.path().display().to_string().len()
    );
    let (is_error, text) = call(
        bash.as_ref(),
        json!({"command": format!("echo private > /tmp/{name} && echo \"tmpdir=$TMPDIR\"")}),
    )
    .await;
    assert!(!is_error && text.contains("tmpdir=/tmp"), "{text}");
    assert!(!Path::new("/tmp").join(&name).exists(), "bash wrote the shared /tmp");
    assert_eq!(std::fs::read_to_string(private.join(&name)).unwrap(), "private\n");
    let (is_error, text) = call(bash.as_ref(), json!({"command": format!("cat /tmp/{name}")})).await;
    assert!(!is_error && text.starts_with("private\n"), "{text}");

    // The write tools do not write the shared /tmp either, and say why.
    let write = by_name(ToolName::Write);
    let (is_error, text) = call(
        write.as_ref(),
        json!({"path": format!("/tmp/{name}-w"), "content": "x"}),
    )
    .await;
    assert!(is_error && text.contains("private"), "{text}");
    assert!(!Path::new("/tmp").join(format!("{name}-w")).exists());

    drop((bash, write, toolbox));
    assert!(!private.exists(), "the private /tmp outlived its toolbox");
}

#[tokio::test]
async fn workspace_write_mounts_everything_outside_read_only_and_gives_a_private_tmp() {
    namespace_scenario().await;
}

/// The scenario as the unprivileged user below; run by that test, in a child process.
#[tokio::test]
#[ignore = "run as uid 65534 by workspace_write_namespace_holds_for_an_unprivileged_user"]
async fn namespace_scenario_as_the_current_user() {
    namespace_scenario().await;
}

/// The same as an unprivileged user (a user namespace makes the mount namespace): as root, the
/// test binary runs the scenario again as uid 65534 in a directory that user owns; run by anyone
/// else, the scenario runs directly.
#[tokio::test]
async fn workspace_write_namespace_holds_for_an_unprivileged_user() {
    use std::os::unix::process::CommandExt;

    if !nix::unistd::geteuid().is_root() {
        namespace_scenario().await;
        return;
    }
    const NOBODY: u32 = 65534;
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::os::unix::fs::chown(base.path(), Some(NOBODY), Some(NOBODY)).unwrap();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "sandbox::namespace_scenario_as_the_current_user",
            "--exact",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env("PANTO_TEST_BASE", base.path())
        .env("HOME", base.path())
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && text.contains("1 passed"),
        "the scenario as uid {NOBODY} failed (it needs the test binary and {} reachable by that user):\n{text}",
        base.path().display()
    );
}

/// A working directory inside `/tmp` stays where it is inside bash's private `/tmp`: writable,
/// at its own path, and the files land in the real directory.
#[tokio::test]
async fn a_workspace_inside_tmp_stays_writable_in_the_private_tmp() {
    let work = tempfile::tempdir_in("/tmp").unwrap();
    let beside = format!("panto-beside-{}", std::process::id());
    let o = options(work.path(), Sandbox::WorkspaceWrite);
    let toolbox = panto_tools::Toolbox::new(&o).unwrap();
    assert_eq!(toolbox.sandbox().note(), None, "no mount namespace could be made here");
    let bash = toolbox
        .tools()
        .into_iter()
        .find(|t| t.declaration().name == "bash")
        .unwrap();
    let (is_error, text) = call(
        bash.as_ref(),
        json!({"command": format!("echo in > made && chmod 600 made && pwd && echo other > /tmp/{beside}")}),
    )
    .await;
    assert!(!is_error, "{text}");
    let real = work.path().canonicalize().unwrap();
    assert!(text.starts_with(&format!("{}\n", real.display())), "{text}");
    assert_eq!(std::fs::read_to_string(real.join("made")).unwrap(), "in\n");
    assert!(!Path::new("/tmp").join(&beside).exists(), "bash wrote the shared /tmp");
}
