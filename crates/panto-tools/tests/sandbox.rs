//! The sandbox, end to end: bash under `workspace-write` and `read-only` (and, for the terminal,
//! `off`), and the write tools' checks against the same writable set. Linux only; a kernel
//! without Landlock fails these tests (the sandbox fails closed, and so does its test).
//!
//! Each scenario that starts a process runs twice when the tests run as root (as CI does): as
//! root, and again as `nobody` (uid 65534) in a re-run of the same test, with directories it
//! owns. Run as another user, the scenario runs once, as that user, and says that the root
//! variant was not checked.
//!
//! "Outside" directories are made where no sandbox writes ([`panto_testkit::outside`]): not under
//! `/tmp`, even when the checkout is.

use std::future::Future;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use panto_testkit::child::{child_report, report_to_parent};
use panto_tools::{Options, Sandbox, ToolName};
use serde_json::json;

use crate::support::{call, tool};

/// The unprivileged user the root runs re-run their scenario as.
const NOBODY: u32 = 65534;
/// Set in a re-run: the scenario runs, and nothing else.
const RERUN: &str = "PANTO_SANDBOX_TEST_RERUN";
/// In a re-run, where its work and outside directories go (owned by its user).
const WORK_BASE: &str = "PANTO_SANDBOX_TEST_WORK_BASE";
const OUTSIDE_BASE: &str = "PANTO_SANDBOX_TEST_OUTSIDE_BASE";
/// In the terminal test's re-run, the path of its controlling terminal.
const TTY: &str = "PANTO_SANDBOX_TEST_TTY";

fn options(cwd: &Path, sandbox: Sandbox) -> Options {
    let mut o = Options::new(cwd);
    o.sandbox = sandbox;
    o
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A workspace: under the test's target directory, or the re-run's own base.
fn work_dir() -> tempfile::TempDir {
    let base = std::env::var_os(WORK_BASE)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    tempfile::tempdir_in(base).unwrap()
}

/// A directory outside the workspace and outside every temp directory the sandbox makes
/// writable.
fn outside_dir() -> tempfile::TempDir {
    let base = std::env::var_os(OUTSIDE_BASE)
        .map(PathBuf::from)
        .unwrap_or_else(|| panto_testkit::outside::outside_base(Path::new(env!("CARGO_TARGET_TMPDIR"))));
    let dir = tempfile::tempdir_in(&base).unwrap();
    assert!(
        panto_testkit::outside::is_outside_writable_temps(dir.path()),
        "{} is inside a directory the sandbox makes writable: the test could not tell an escape",
        dir.path().display()
    );
    dir
}

#[allow(clippy::print_stderr)]
fn note_not_root(test: &str) {
    eprintln!(
        "{test}: running as uid {}, not root: only the unprivileged variant ran; run the tests as root \
         (CI does) to check the sandbox against root's privileges too",
        nix::unistd::geteuid()
    );
}

/// Runs `scenario` as the user running the tests; when that is root, runs test `test` (its path
/// in this binary) again as `nobody`, which runs the scenario there.
async fn as_root_and_unprivileged<F, Fut>(test: &str, scenario: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    if std::env::var_os(RERUN).is_some() {
        scenario().await;
        report_to_parent("ok");
        return;
    }
    scenario().await;
    if is_root() {
        rerun(test, Some(NOBODY), None).await;
    } else {
        note_not_root(test);
    }
}

/// Runs test `test` of this binary again, as `user` (or the same user), with `tty` (a terminal
/// and its path) as its controlling terminal and standard input; panics when it fails.
async fn rerun(test: &str, user: Option<u32>, tty: Option<(std::os::fd::OwnedFd, PathBuf)>) {
    let mut exe = std::env::current_exe().unwrap();
    let mut env = vec![(RERUN, PathBuf::from("1"))];
    let mut bases = Vec::new();
    if let Some(uid) = user {
        // Places `uid` can reach: the target directory may lie in root's home.
        let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let work_base = if panto_testkit::outside::is_reachable_by_others(target) {
            target.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let work = tempfile::tempdir_in(work_base).unwrap();
        let outside = tempfile::tempdir_in(panto_testkit::outside::outside_base_reachable_by_others(target)).unwrap();
        for dir in [work.path(), outside.path()] {
            std::os::unix::fs::chown(dir, Some(uid), Some(uid)).unwrap();
        }
        if !panto_testkit::outside::is_reachable_by_others(&exe) {
            // The binary itself where `uid` can run it: a hard link, else a copy.
            let reachable = work.path().join("test-binary");
            std::fs::hard_link(&exe, &reachable)
                .or_else(|_| std::fs::copy(&exe, &reachable).map(|_| ()))
                .unwrap();
            std::fs::set_permissions(&reachable, std::fs::Permissions::from_mode(0o755)).unwrap();
            exe = reachable;
        }
        env.push((WORK_BASE, work.path().to_path_buf()));
        env.push((OUTSIDE_BASE, outside.path().to_path_buf()));
        env.push(("HOME", work.path().to_path_buf()));
        bases.push(work);
        bases.push(outside);
    }
    let mut command = match &tty {
        // setsid(1) -c: a new session whose controlling terminal is its standard input.
        Some(_) => {
            let mut c = std::process::Command::new("setsid");
            c.arg("-c").arg(&exe);
            c
        }
        None => std::process::Command::new(&exe),
    };
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .envs(env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(uid) = user {
        command.uid(uid).gid(uid);
    }
    if let Some((fd, path)) = tty {
        if let Some(uid) = user {
            std::os::unix::fs::chown(&path, Some(uid), Some(uid)).unwrap();
        }
        command.env(TTY, &path).stdin(Stdio::from(fd));
    } else {
        command.stdin(Stdio::null());
    }
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("re-running {} as uid {user:?}: {e}", exe.display()));
    drop(command);
    let report = tokio::task::spawn_blocking(move || child_report(child)).await.unwrap();
    assert_eq!(report, "ok", "{test} as uid {user:?}");
    drop(bases);
}

/// A small C program that makes one system call and prints how it went (`NAME: ok` or
/// `NAME: errno N (message)`): what a hostile command would do, without needing python.
const PROBE_C: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <termios.h>
#include <unistd.h>

static int report(const char *what, long r) {
    if (r < 0) { printf("%s: errno %d (%s)\n", what, errno, strerror(errno)); return 1; }
    printf("%s: ok\n", what);
    return 0;
}

int main(int argc, char **argv) {
    char what[64];
    if (argc >= 4 && !strcmp(argv[1], "socket")) {
        snprintf(what, sizeof what, "socket %s %s", argv[2], argv[3]);
        return report(what, socket(atoi(argv[2]), atoi(argv[3]), 0));
    }
    if (argc >= 4 && !strcmp(argv[1], "socketpair")) {
        int sv[2];
        snprintf(what, sizeof what, "socketpair %s %s", argv[2], argv[3]);
        return report(what, socketpair(atoi(argv[2]), atoi(argv[3]), 0, sv));
    }
    if (argc >= 4 && !strcmp(argv[1], "tiocsti")) {
        int fd = open(argv[2], O_RDWR | O_NOCTTY);
        if (fd < 0) fd = open(argv[2], O_RDONLY | O_NOCTTY);
        if (fd < 0) return report("tiocsti open", -1);
        for (const char *c = argv[3]; *c; c++)
            if (report("tiocsti", ioctl(fd, TIOCSTI, c))) return 1;
        return 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "x32")) {
        /* getpid through the x32 ABI: the x32 bit on x86_64's number. */
        return report("x32", syscall(0x40000000 | SYS_getpid));
    }
    if (argc >= 3 && !strcmp(argv[1], "setxattr"))
        return report("setxattr", setxattr(argv[2], "user.panto", "x", 1, 0));
    if (argc >= 3 && !strcmp(argv[1], "getxattr")) {
        char v[8];
        return report("getxattr", getxattr(argv[2], "user.panto", v, sizeof v));
    }
    if (argc >= 2 && !strcmp(argv[1], "fchmod-pipe")) {
        int p[2];
        if (pipe(p)) return report("pipe", -1);
        return report("fchmod-pipe", fchmod(p[0], 0600));
    }
    fprintf(stderr, "probe: unknown command\n");
    return 2;
}
"#;

/// Compiles [`PROBE_C`] into `dir` (outside any sandbox) and returns its path.
fn probe(dir: &Path) -> PathBuf {
    let source = dir.join("probe.c");
    let binary = dir.join("probe");
    std::fs::write(&source, PROBE_C).unwrap();
    let out = std::process::Command::new("cc")
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("these tests need a C compiler (cc): {e}"));
    assert!(out.status.success(), "cc: {}", String::from_utf8_lossy(&out.stderr));
    binary
}

/// Runs `command` with bash in `mode` (`network`: internet sockets allowed) in `work`.
async fn bash(work: &Path, mode: Sandbox, network: bool, command: &str) -> (bool, String) {
    let mut o = options(work, mode);
    o.sandbox_network = network;
    call(tool(&o, ToolName::Bash).as_ref(), json!({ "command": command })).await
}

#[tokio::test]
async fn workspace_write_lets_bash_write_the_workspace_and_nothing_outside() {
    as_root_and_unprivileged(
        "sandbox::workspace_write_lets_bash_write_the_workspace_and_nothing_outside",
        || async {
            let work = work_dir();
            let outside = outside_dir();
            let target = outside.path().join("escaped.txt");
            let (is_error, text) = bash(
                work.path(),
                Sandbox::WorkspaceWrite,
                false,
                &format!("echo in > inside.txt && echo out > {}", target.display()),
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
        },
    )
    .await;
}

#[tokio::test]
async fn write_and_edit_refuse_paths_outside_the_writable_set() {
    let work = work_dir();
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
    as_root_and_unprivileged("sandbox::read_only_stops_every_write", || async {
        let work = work_dir();
        let o = options(work.path(), Sandbox::ReadOnly);
        let (is_error, text) = bash(
            work.path(),
            Sandbox::ReadOnly,
            false,
            "cat /etc/hostname >/dev/null; echo read-ok; touch made; mktemp",
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
    })
    .await;
}

#[tokio::test]
async fn the_network_is_closed_unless_allowed() {
    as_root_and_unprivileged("sandbox::the_network_is_closed_unless_allowed", || async {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let work = work_dir();
        let probe = probe(work.path());
        let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
        let (is_error, text) = bash(work.path(), Sandbox::WorkspaceWrite, false, &connect).await;
        assert!(is_error && !text.contains("connected"), "{text}");
        assert!(text.contains("Permission denied"), "{text}");
        // Unix sockets stay allowed.
        let unix = format!("{0} socket 1 1 && {0} socketpair 1 1", probe.display());
        let (is_error, text) = bash(work.path(), Sandbox::WorkspaceWrite, false, &unix).await;
        assert!(!is_error, "{text}");
        let (is_error, text) = bash(work.path(), Sandbox::WorkspaceWrite, true, &connect).await;
        assert!(!is_error && text.contains("connected"), "{text}");
    })
    .await;
}

/// `AF_PACKET` (raw frames, as root), `AF_NETLINK` (the kernel's routing and more), `AF_VSOCK`
/// (the hypervisor) and a `socketpair` of anything but `AF_UNIX` are refused with `EACCES` by
/// the filter, with the network off and on. Sockets are only created, never used.
#[tokio::test]
async fn only_unix_and_allowed_internet_sockets_can_be_made() {
    as_root_and_unprivileged(
        "sandbox::only_unix_and_allowed_internet_sockets_can_be_made",
        || async {
            let work = work_dir();
            let probe = probe(work.path()).display().to_string();
            // (family, type): AF_PACKET/SOCK_DGRAM, AF_NETLINK/SOCK_RAW, AF_VSOCK/SOCK_STREAM.
            let refused = [("17", "2"), ("16", "3"), ("40", "1")];
            for network in [false, true] {
                let mut command = String::new();
                for (family, kind) in refused {
                    command.push_str(&format!("{probe} socket {family} {kind}; "));
                }
                command.push_str(&format!(
                    "{probe} socketpair 2 1; {probe} socketpair 1 1; {probe} socket 1 1"
                ));
                let (_, text) = bash(work.path(), Sandbox::WorkspaceWrite, network, &command).await;
                for (family, kind) in refused {
                    assert!(
                        text.contains(&format!("socket {family} {kind}: errno 13 ")),
                        "network {network}: {text}"
                    );
                }
                assert!(text.contains("socketpair 2 1: errno 13 "), "network {network}: {text}");
                assert!(text.contains("socketpair 1 1: ok"), "network {network}: {text}");
                assert!(text.contains("socket 1 1: ok"), "network {network}: {text}");
            }
        },
    )
    .await;
}

/// As root, the sandbox keeps no capability: none effective, permitted, inheritable or ambient,
/// an empty bounding set, and no-new-privileges. An ordinary user has no capability to drop and
/// cannot empty the bounding set, which no-new-privileges makes moot.
#[tokio::test]
async fn a_sandboxed_command_holds_no_capability() {
    as_root_and_unprivileged("sandbox::a_sandboxed_command_holds_no_capability", || async {
        let work = work_dir();
        for mode in [Sandbox::WorkspaceWrite, Sandbox::ReadOnly] {
            let (is_error, text) = bash(
                work.path(),
                mode,
                false,
                "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status",
            )
            .await;
            assert!(!is_error, "{text}");
            let field = |name: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(&format!("{name}:")))
                    .map(|v| v.trim().to_owned())
                    .unwrap_or_else(|| panic!("no {name} in {text}"))
            };
            for cap in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
                assert_eq!(field(cap), "0000000000000000", "{mode}: {text}");
            }
            if is_root() {
                assert_eq!(field("CapBnd"), "0000000000000000", "{mode}: {text}");
            }
            assert_eq!(field("NoNewPrivs"), "1", "{mode}: {text}");
        }
    })
    .await;
}

/// No device node can be made, not even in the workspace (as root that would be raw access to a
/// disk or the kernel log); FIFOs and sockets still can be, where writable.
#[tokio::test]
async fn no_device_node_can_be_made() {
    as_root_and_unprivileged("sandbox::no_device_node_can_be_made", || async {
        let work = work_dir();
        let (_, text) = bash(
            work.path(),
            Sandbox::WorkspaceWrite,
            false,
            "mknod kmsg c 1 11; mknod disk b 7 0; mkfifo fifo && echo fifo-ok",
        )
        .await;
        assert!(
            !work.path().join("kmsg").exists(),
            "a character device was made: {text}"
        );
        assert!(!work.path().join("disk").exists(), "a block device was made: {text}");
        assert!(text.contains("fifo-ok"), "{text}");
    })
    .await;
}

/// A file outside cannot be given away (as root, `CAP_CHOWN` is gone).
#[tokio::test]
async fn chown_outside_fails() {
    as_root_and_unprivileged("sandbox::chown_outside_fails", || async {
        let work = work_dir();
        let outside = outside_dir();
        let file = outside.path().join("owned");
        std::fs::write(&file, "x").unwrap();
        let owner = std::fs::metadata(&file).unwrap().uid();
        let other = if owner == 0 { NOBODY } else { 0 };
        let (is_error, text) = bash(
            work.path(),
            Sandbox::WorkspaceWrite,
            false,
            &format!("chown {other} {}", file.display()),
        )
        .await;
        assert!(is_error, "{text}");
        assert_eq!(std::fs::metadata(&file).unwrap().uid(), owner, "{text}");
    })
    .await;
}

/// A sandboxed command cannot signal a process outside its sandbox (Landlock's signal scope),
/// even one of its own user; it still signals what it started itself.
#[tokio::test]
async fn a_sandboxed_command_cannot_signal_a_process_outside() {
    as_root_and_unprivileged(
        "sandbox::a_sandboxed_command_cannot_signal_a_process_outside",
        || async {
            let work = work_dir();
            let mut victim = std::process::Command::new("sleep").arg("1000").spawn().unwrap();
            for mode in [Sandbox::WorkspaceWrite, Sandbox::ReadOnly] {
                let (_, text) = bash(
                    work.path(),
                    mode,
                    false,
                    &format!(
                        "kill -TERM {}; echo kill-exit=$?; sleep 100 & kill $! && echo own-ok",
                        victim.id()
                    ),
                )
                .await;
                assert!(text.contains("kill-exit=1"), "{mode}: {text}");
                assert!(text.contains("Operation not permitted"), "{mode}: {text}");
                assert!(text.contains("own-ok"), "{mode}: {text}");
                assert!(
                    victim.try_wait().unwrap().is_none(),
                    "{mode}: the process outside was killed"
                );
            }
            victim.kill().unwrap();
            victim.wait().unwrap();
        },
    )
    .await;
}

/// A system call through the x32 ABI (its number with bit 30 set) is refused with `EPERM` by the
/// filter: a kernel without x32 would answer `ENOSYS`, one with it would run it unfiltered.
#[cfg(target_arch = "x86_64")]
#[tokio::test]
async fn the_x32_abi_is_refused() {
    as_root_and_unprivileged("sandbox::the_x32_abi_is_refused", || async {
        let work = work_dir();
        let probe = probe(work.path());
        for mode in [Sandbox::WorkspaceWrite, Sandbox::ReadOnly] {
            let (_, text) = bash(work.path(), mode, false, &format!("{} x32", probe.display())).await;
            assert!(text.contains("x32: errno 1 "), "{mode}: {text}");
        }
    })
    .await;
}

/// In read-only mode a file's mode, times, owner and extended attributes cannot change, outside
/// the workspace as inside (Landlock does not cover them; seccomp refuses the calls). In
/// workspace-write mode the workspace's metadata still can (builds need `chmod`).
#[tokio::test]
async fn read_only_refuses_metadata_changes() {
    as_root_and_unprivileged("sandbox::read_only_refuses_metadata_changes", || async {
        let work = work_dir();
        let probe = probe(work.path()).display().to_string();
        let outside = outside_dir();
        let file = outside.path().join("file");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let before = std::fs::metadata(&file).unwrap();
        let f = file.display();
        let (_, text) = bash(
            work.path(),
            Sandbox::ReadOnly,
            false,
            &format!(
                "chmod 777 {f}; echo chmod=$?; touch -d 2000-01-01 {f}; echo touch=$?; \
                 chown $(id -u):$(id -g) {f}; echo chown=$?; {probe} setxattr {f}; {probe} fchmod-pipe"
            ),
        )
        .await;
        for step in [
            "chmod=1",
            "touch=1",
            "chown=1",
            "setxattr: errno 1 ",
            "fchmod-pipe: errno 1 ",
        ] {
            assert!(text.contains(step), "{step}: {text}");
        }
        let after = std::fs::metadata(&file).unwrap();
        assert_eq!(after.mode(), before.mode(), "{text}");
        assert_eq!(after.mtime(), before.mtime(), "{text}");
        let out = std::process::Command::new(&probe)
            .arg("getxattr")
            .arg(&file)
            .output()
            .unwrap();
        let xattr = String::from_utf8_lossy(&out.stdout);
        assert!(xattr.contains("getxattr: errno 61 "), "the attribute was set: {xattr}");

        let (is_error, text) = bash(
            work.path(),
            Sandbox::WorkspaceWrite,
            false,
            "touch w && chmod 700 w && touch -d 2000-01-01 w && echo meta-ok",
        )
        .await;
        assert!(!is_error && text.contains("meta-ok"), "{text}");
    })
    .await;
}

/// No tool can reach a terminal: a command runs in its own session with no controlling terminal
/// (`/dev/tty` fails, with `ENXIO`, or `EACCES` from Landlock in a sandbox), and cannot queue
/// input into the terminal it came from with `TIOCSTI`, in every mode, the sandbox off included
/// (as root only the seccomp filter stops that). The test runs in a re-run whose controlling
/// terminal is a fresh pseudo-terminal, and checks that nothing reached it.
#[tokio::test]
async fn a_tool_has_no_terminal_and_cannot_type_into_one() {
    const TEST: &str = "sandbox::a_tool_has_no_terminal_and_cannot_type_into_one";
    if std::env::var_os(RERUN).is_some() {
        terminal_scenario().await;
        report_to_parent("ok");
        return;
    }
    let mut users = vec![None];
    if is_root() {
        users.push(Some(NOBODY));
    } else {
        note_not_root(TEST);
    }
    for user in users {
        let pty = nix::pty::openpty(None, None).unwrap();
        let path = nix::unistd::ttyname(&pty.slave).unwrap();
        // Held open here too, so the master reads "nothing more" rather than a hang-up.
        let _slave = pty.slave.try_clone().unwrap();
        rerun(TEST, user, Some((pty.slave, path))).await;
        let echoed = read_available(pty.master);
        assert!(
            !echoed.contains("TTY-WRITE") && !echoed.contains("PWN"),
            "as uid {user:?}, a tool reached the terminal: {echoed:?}"
        );
    }
}

async fn terminal_scenario() {
    // The premise: this process has a controlling terminal, which its children would share.
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/tty")
        .unwrap_or_else(|e| panic!("the re-run has no controlling terminal, so nothing is checked: {e}"));
    let tty = std::env::var(TTY).unwrap();
    let work = work_dir();
    let probe = probe(work.path());
    for mode in [Sandbox::Off, Sandbox::ReadOnly, Sandbox::WorkspaceWrite] {
        let (_, text) = bash(
            work.path(),
            mode,
            false,
            &format!("echo TTY-WRITE > /dev/tty; {} tiocsti {tty} PWN", probe.display()),
        )
        .await;
        let no_tty = if mode == Sandbox::Off {
            text.contains("/dev/tty: No such device or address")
        } else {
            text.contains("/dev/tty: No such device or address") || text.contains("/dev/tty: Permission denied")
        };
        assert!(no_tty, "{mode}: {text}");
        assert!(
            text.contains("tiocsti") && !text.contains("tiocsti: ok"),
            "{mode}: {text}"
        );
    }
}

/// What the terminal's master side holds (the terminal echoes input queued into it, and shows
/// what was written to it).
fn read_available(master: std::os::fd::OwnedFd) -> String {
    use std::io::Read;
    let flags = nix::fcntl::fcntl(&master, nix::fcntl::FcntlArg::F_GETFL).unwrap();
    let flags = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(&master, nix::fcntl::FcntlArg::F_SETFL(flags)).unwrap();
    let mut file = std::fs::File::from(master);
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    // Stops at "would block": nothing more was written.
    while let Ok(n @ 1..) = file.read(&mut buf) {
        bytes.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[tokio::test]
async fn a_c_program_compiles_and_runs_in_the_workspace() {
    as_root_and_unprivileged("sandbox::a_c_program_compiles_and_runs_in_the_workspace", || async {
        let work = work_dir();
        std::fs::write(
            work.path().join("hello.c"),
            "#include <stdio.h>\nint main(void) { puts(\"hello from c\"); return 0; }\n",
        )
        .unwrap();
        let (is_error, text) = bash(
            work.path(),
            Sandbox::WorkspaceWrite,
            false,
            "cc -o hello hello.c && ./hello",
        )
        .await;
        assert!(!is_error, "{text}");
        assert!(text.starts_with("hello from c\n"), "{text}");
    })
    .await;
}

/// Where the namespace scenario makes its directories: `PANTO_TEST_BASE` when the unprivileged
/// run passes one it can write, else the test's target directory.
fn scenario_base() -> std::path::PathBuf {
    std::env::var_os("PANTO_TEST_BASE")
        .map(Into::into)
        .unwrap_or_else(|| panto_testkit::outside::outside_base(Path::new(env!("CARGO_TARGET_TMPDIR"))))
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
                "{} is beneath the temp directory {}: bash's /tmp is private, so this test could not \
                 tell a read-only directory from a hidden one",
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
    // Outside every temp directory (bash's /tmp is private) and reachable by that user, wherever
    // the checkout is.
    let base = tempfile::tempdir_in(panto_testkit::outside::outside_base_reachable_by_others(Path::new(
        env!("CARGO_TARGET_TMPDIR"),
    )))
    .unwrap();
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
