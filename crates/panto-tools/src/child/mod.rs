//! The one audited child-process module: every program panto-tools starts (bash, and MCP stdio
//! servers later) is spawned here, in its own process group, killed with its group when its
//! handle is dropped, killed when panto dies (`PR_SET_PDEATHSIG`), and confined by the sandbox
//! before it runs its program.
//!
//! This is the only `unsafe` outside panto-ffi (`cargo xtask arch` checks it): the setup must run
//! in the child between `fork` and `exec`, which is `CommandExt::pre_exec`. What runs there is
//! restricted to system calls on data prepared in the parent (a forked child of a threaded
//! program may only do async-signal-safe work): the Landlock ruleset's descriptors are opened and
//! the seccomp filter compiled before the fork, and the child only hands them to the kernel.
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
/// The seccomp filter could not be installed, so the network would not be closed.
const SECCOMP_FAILED: i32 = nix::libc::ENOPROTOOPT;

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

/// A child running in its own process group; dropping it kills the whole group.
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

/// Spawns `command` (on the tokio runtime) as set up by `setup`. The error says which step of the
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
        Some(SECCOMP_FAILED) => "the kernel refused the seccomp filter that closes the network".to_owned(),
        Some(PARENT_DEATH_FAILED) => "the child could not be tied to panto's lifetime".to_owned(),
        _ => error.to_string(),
    }
}

/// Puts the child in its own process group and installs the setup to run in it before `exec`.
fn configure(command: &mut std::process::Command, setup: &ChildSetup) -> io::Result<()> {
    command.process_group(0);
    let mut confinement: Option<Confinement> = setup.sandbox.confinement()?;
    let mut namespace = namespace::Plan::for_command(command, &setup.sandbox)?;
    let parent_death_signal = setup.parent_death_signal;
    let parent = nix::unistd::getpid();
    let in_child = move || -> io::Result<()> {
        if parent_death_signal {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
                .map_err(|_| io::Error::from_raw_os_error(PARENT_DEATH_FAILED))?;
            // The parent may have died before the signal was armed: then nobody would kill us.
            if nix::unistd::getppid() != parent {
                return Err(io::Error::from_raw_os_error(PARENT_DEATH_FAILED));
            }
        }
        // The mounts need the capabilities the later steps drop.
        if let Some(namespace) = namespace.as_mut() {
            namespace.enter()?;
        }
        if let Some(confinement) = confinement.as_mut() {
            confine(confinement)?;
        }
        Ok(())
    };
    // SAFETY: `in_child` runs in the forked child before `exec`. It only makes system calls
    // (prctl, getppid, the namespace's unshare, mount and capability calls,
    // landlock_restrict_self, seccomp) on values prepared before the fork, takes no lock and
    // touches no state shared with other threads of the parent; its errors are built from raw OS
    // codes, which allocate nothing.
    unsafe {
        command.pre_exec(in_child);
    }
    Ok(())
}

/// Which step of the mount namespace failed and why, when `error` (from [`spawn`] or
/// [`run_to_end`]) is such a failure: the start-up probe then falls back to Landlock and seccomp
/// alone.
pub(crate) fn namespace_failure(error: &io::Error) -> Option<String> {
    namespace::namespace_failure(error)
}

/// Applies the Landlock ruleset and the seccomp filter to the calling (child) process.
#[cfg(target_os = "linux")]
fn confine(confinement: &mut Confinement) -> io::Result<()> {
    if let Some(ruleset) = confinement.ruleset.take() {
        match ruleset.restrict_self() {
            Ok(status) if status.ruleset != landlock::RulesetStatus::NotEnforced => {}
            _ => return Err(io::Error::from_raw_os_error(LANDLOCK_FAILED)),
        }
    }
    if let Some(filter) = &confinement.seccomp {
        seccompiler::apply_filter(filter).map_err(|_| io::Error::from_raw_os_error(SECCOMP_FAILED))?;
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn confine(_: &mut Confinement) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(LANDLOCK_FAILED))
}
