//! The one audited child-process module: every program panto starts (bash, command hooks, MCP
//! stdio servers) is spawned here, in its own session and process group with no controlling
//! terminal, killed with its group when its handle is dropped, killed when panto dies
//! (`PR_SET_PDEATHSIG`), kept from typing into a terminal (seccomp: no `TIOCSTI`/`TIOCLINUX`,
//! in every mode), and, in a sandbox, stripped of every capability and confined before it runs
//! its program.
//!
//! This is the only `unsafe` outside panto-ffi (`cargo xtask arch` checks it): the setup must run
//! in the child between `fork` and `exec`, which is `CommandExt::pre_exec`. What runs there is
//! restricted to system calls on data prepared in the parent (a forked child of a threaded
//! program may only do async-signal-safe work): the Landlock ruleset's descriptors are opened,
//! the seccomp filters compiled and the capability count read before the fork, and the child only
//! hands them to the kernel.
//!
//! A failure in the child is reported by `spawn`'s error, whose OS error code says which step
//! failed (see [`explain_spawn_error`]): nothing ever runs with a sandbox that was asked for and not applied.

#![allow(unsafe_code)]

mod namespace;

use std::io;
use std::os::unix::process::CommandExt;
use std::process::ExitStatus;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::sandbox::{Confinement, SandboxConfig};

/// The child could not set its parent-death signal, or its parent was already gone.
const PARENT_DEATH_FAILED: i32 = nix::libc::ESRCH;
/// Landlock is not available in this kernel (or is disabled), so the filesystem would not be
/// confined.
const LANDLOCK_FAILED: i32 = nix::libc::EOPNOTSUPP;
/// A seccomp filter could not be installed (the network, the terminal or the metadata calls would
/// be open).
const SECCOMP_FAILED: i32 = nix::libc::ENOPROTOOPT;
/// The child could not start a new session (and so would keep the terminal).
const SESSION_FAILED: i32 = nix::libc::ENOTTY;
/// The child could not give up its capabilities or set no-new-privileges.
const PRIVILEGES_FAILED: i32 = nix::libc::ENOTRECOVERABLE;

/// How a child is set up before it runs its program.
#[derive(Debug, Clone)]
pub struct ChildSetup {
    /// The sandbox it runs in (off: unconfined).
    pub sandbox: SandboxConfig,
    /// Whether it is killed when the thread that spawned it ends (`PR_SET_PDEATHSIG`: the kernel
    /// tracks the spawning *thread*; spawn from a thread that lives as long as the child should,
    /// such as a runtime worker, not a short-lived blocking thread).
    pub parent_death_signal: bool,
}

impl ChildSetup {
    /// In `sandbox`, killed when panto dies.
    pub fn new(sandbox: SandboxConfig) -> ChildSetup {
        ChildSetup {
            sandbox,
            parent_death_signal: true,
        }
    }
}

/// A child leading its own session and process group; dropping it kills the whole group.
#[derive(Debug)]
pub struct GroupChild {
    child: tokio::process::Child,
    group: Option<i32>,
}

impl GroupChild {
    /// The child process, to take its pipes and wait for it.
    pub fn child(&mut self) -> &mut tokio::process::Child {
        &mut self.child
    }

    /// The process group id (the child's pid: it leads its group), unless it was already reaped.
    pub fn group(&self) -> Option<i32> {
        self.group
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if let Some(group) = self.group {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        }
    }
}

/// Spawns `command` (on the tokio runtime) as set up by `setup`: in its own session and process
/// group, with no controlling terminal. The error says which step of the
/// setup failed ([`explain_spawn_error`]).
pub fn spawn(command: std::process::Command, setup: &ChildSetup) -> io::Result<GroupChild> {
    let mut command = command;
    configure(&mut command, setup)?;
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    let child = command.spawn()?;
    let group = child.id().and_then(|p| i32::try_from(p).ok());
    Ok(GroupChild { child, group })
}

/// Runs `command` under `sandbox` to its end, blocking, with no output: the start-up probe.
pub(crate) fn run_to_end(mut command: std::process::Command, sandbox: &SandboxConfig) -> io::Result<ExitStatus> {
    let setup = ChildSetup {
        sandbox: sandbox.clone(),
        parent_death_signal: false,
    };
    configure(&mut command, &setup)?;
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    command.status()
}

/// What an error of [`spawn`] means, for a message: which setup step failed in the child (no
/// Landlock, no seccomp, no parent-death signal), or the system error itself.
pub fn explain_spawn_error(error: &io::Error) -> String {
    if let Some(text) = error.raw_os_error().and_then(namespace::explain) {
        return text;
    }
    match error.raw_os_error() {
        Some(LANDLOCK_FAILED) => "the kernel does not enforce Landlock (Linux 5.13 or later with Landlock enabled \
                                  is needed to confine the filesystem)"
            .to_owned(),
        Some(SECCOMP_FAILED) => "the kernel refused a seccomp filter of the sandbox (network, terminal and \
                                 metadata calls)"
            .to_owned(),
        Some(SESSION_FAILED) => "the child could not start its own session (setsid)".to_owned(),
        Some(PRIVILEGES_FAILED) => "the child could not give up its capabilities (as root this needs \
                                    CAP_SETPCAP) or set no-new-privileges"
            .to_owned(),
        Some(PARENT_DEATH_FAILED) => "the child could not be tied to panto's lifetime".to_owned(),
        _ => error.to_string(),
    }
}

/// Installs the setup to run in the child before `exec`, in this order:
///
/// 1. a new session ([`new_session`]; every mode);
/// 2. the parent-death signal;
/// 3. (workspace-write, where the kernel allows it) the mount namespace ([`namespace`]), while
///    the capabilities it needs are still held;
/// 4. (sandboxed) every capability dropped and no-new-privileges set ([`drop_privileges`]);
/// 5. (sandboxed) the Landlock ruleset;
/// 6. the seccomp filters ([`install_filters`]; every mode).
fn configure(command: &mut std::process::Command, setup: &ChildSetup) -> io::Result<()> {
    let mut confinement: Confinement = setup.sandbox.confinement()?;
    let mut namespace = namespace::Plan::for_command(command, &setup.sandbox)?;
    let parent_death_signal = setup.parent_death_signal;
    let parent = nix::unistd::getpid();
    let in_child = move || -> io::Result<()> {
        new_session()?;
        if parent_death_signal {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
                .map_err(|_| io::Error::from_raw_os_error(PARENT_DEATH_FAILED))?;
            // The parent may have died before the signal was armed: then nobody would kill us.
            if nix::unistd::getppid() != parent {
                return Err(io::Error::from_raw_os_error(PARENT_DEATH_FAILED));
            }
        }
        // The mounts need the capabilities the next step drops; dropping them (CAP_SYS_ADMIN
        // above all) is also what keeps the mounts read-only (see namespace.rs). A namespace is
        // made only in workspace-write, where `drop_privileges` is always set.
        if let Some(namespace) = namespace.as_mut() {
            namespace.enter()?;
        }
        if confinement.drop_privileges {
            drop_privileges(confinement.last_cap)?;
        }
        restrict_filesystem(&mut confinement)?;
        install_filters(&confinement, confinement.drop_privileges)
    };
    // SAFETY: `in_child` runs in the forked child before `exec`. It only makes system calls
    // (setsid, prctl, getppid, the namespace's unshare, mount and capability calls, capget,
    // capset, landlock_restrict_self, seccomp) on values prepared before the fork, takes no lock
    // and touches no state shared with other threads of the parent; its errors are built from raw
    // OS codes, which allocate nothing.
    unsafe {
        command.pre_exec(in_child);
    }
    Ok(())
}

/// Starts a new session with no controlling terminal: `/dev/tty` then fails with `ENXIO`, and the
/// kernel refuses `TIOCSTI` on any terminal to a process without `CAP_SYS_ADMIN` (none is its
/// controlling one). The child also leads a new process group whose id is its pid, which
/// `GroupChild` and the bash tool's cleanup kill.
fn new_session() -> io::Result<()> {
    nix::unistd::setsid().map_err(|_| io::Error::from_raw_os_error(SESSION_FAILED))?;
    Ok(())
}

/// `struct __user_cap_header_struct` of `capget(2)`/`capset(2)`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

/// `struct __user_cap_data_struct`; version 3 takes two (capabilities 0–31 and 32–63).
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Gives up every capability: the bounding set (so no later `exec`, root's included, regains
/// one), the ambient set, and the inheritable, permitted and effective sets; then sets
/// no-new-privileges, so no set-user-id program or file capability grants any back.
///
/// Dropping the bounding set needs `CAP_SETPCAP`. Without it the drop fails with `EPERM`, which
/// is ignored only when the process holds no capability at all (an ordinary user): then the
/// bounding set grants nothing, as no-new-privileges blocks every way to gain one.
fn drop_privileges(last_cap: u32) -> io::Result<()> {
    let failed = || io::Error::from_raw_os_error(PRIVILEGES_FAILED);
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capget writes two `CapData` (version 3) into `data`, which has room for them.
    let held = unsafe { nix::libc::syscall(nix::libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if held != 0 {
        return Err(failed());
    }
    let holds_any = data.iter().any(|d| d.permitted != 0 || d.effective != 0);
    for cap in 0..=last_cap {
        // SAFETY: prctl with integer arguments only.
        let dropped = unsafe { nix::libc::prctl(nix::libc::PR_CAPBSET_DROP, cap as nix::libc::c_ulong, 0, 0, 0) };
        if dropped != 0 {
            match nix::errno::Errno::last() {
                // A capability this kernel does not know.
                nix::errno::Errno::EINVAL => {}
                nix::errno::Errno::EPERM if !holds_any => break,
                _ => return Err(failed()),
            }
        }
    }
    // SAFETY: prctl with integer arguments only.
    let cleared = unsafe { nix::libc::prctl(nix::libc::PR_CAP_AMBIENT, nix::libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    // EINVAL: a kernel without ambient capabilities (before 4.3), so there are none.
    if cleared != 0 && nix::errno::Errno::last() != nix::errno::Errno::EINVAL {
        return Err(failed());
    }
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let none = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads two `CapData` (version 3) from `none`.
    if unsafe { nix::libc::syscall(nix::libc::SYS_capset, &mut header, none.as_ptr()) } != 0 {
        return Err(failed());
    }
    nix::sys::prctl::set_no_new_privs().map_err(|_| failed())
}

/// Which step of the mount namespace failed and why, when `error` (from [`spawn`] or
/// [`run_to_end`]) is such a failure: the start-up probe then falls back to Landlock and seccomp
/// alone.
pub(crate) fn namespace_failure(error: &io::Error) -> Option<String> {
    namespace::namespace_failure(error)
}

/// Applies the Landlock ruleset, if the sandbox has one.
#[cfg(target_os = "linux")]
fn restrict_filesystem(confinement: &mut Confinement) -> io::Result<()> {
    if let Some(ruleset) = confinement.ruleset.take() {
        match ruleset.restrict_self() {
            Ok(status) if status.ruleset != landlock::RulesetStatus::NotEnforced => {}
            _ => return Err(io::Error::from_raw_os_error(LANDLOCK_FAILED)),
        }
    }
    Ok(())
}

/// Installs the seccomp filters. In a sandbox no-new-privileges is set ([`drop_privileges`]).
/// With the sandbox off it is not (it would stop `sudo` and every set-user-id program the user
/// runs), so the kernel accepts a filter only from a process with `CAP_SYS_ADMIN`; a process
/// without it gets `EACCES`, and is then left without the filter: the kernel itself refuses
/// `TIOCSTI` and `TIOCLINUX` to such a process on a terminal that is not its controlling one,
/// and after [`new_session`] it has none. With the sandbox off the filter is defence in depth
/// (for root, whom the kernel lets inject into any terminal), so any refusal leaves the child
/// without it rather than failing the spawn: a program run under a tool that does not support
/// seccomp (valgrind answers `EINVAL`) must still be able to start its MCP servers. In a sandbox
/// every refusal fails the spawn.
#[cfg(target_os = "linux")]
fn install_filters(confinement: &Confinement, no_new_privs: bool) -> io::Result<()> {
    for filter in &confinement.seccomp {
        let program = nix::libc::sock_fprog {
            len: filter.len() as u16,
            // seccompiler's `sock_filter` has the kernel's layout (`repr(C)`, same fields).
            filter: filter.as_ptr().cast::<nix::libc::sock_filter>().cast_mut(),
        };
        // SAFETY: seccomp reads `program`, which points at `filter`'s instructions, alive and
        // unchanged for the call.
        let installed = unsafe {
            nix::libc::syscall(
                nix::libc::SYS_seccomp,
                nix::libc::SECCOMP_SET_MODE_FILTER,
                0,
                &program as *const nix::libc::sock_fprog,
            )
        };
        if installed != 0 {
            if !no_new_privs {
                return Ok(());
            }
            return Err(io::Error::from_raw_os_error(SECCOMP_FAILED));
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn restrict_filesystem(confinement: &mut Confinement) -> io::Result<()> {
    if confinement.drop_privileges {
        return Err(io::Error::from_raw_os_error(LANDLOCK_FAILED));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn install_filters(_: &Confinement, _: bool) -> io::Result<()> {
    Ok(())
}
