//! The sandbox: where `bash` (and what it starts) may write, whether it may reach the network,
//! and where `write` and `edit` may write, so "cannot write outside" holds for every built-in
//! tool.
//!
//! On Linux, `bash` runs under Landlock (the filesystem: read everywhere, write only the writable
//! set) and a seccomp filter (no `AF_INET`/`AF_INET6` socket, and no io_uring, which could open
//! one behind the filter's back), both applied in the child before it runs bash
//! ([`crate::child`]). The writable set in `workspace-write` is the working directory,
//! `writable_roots`, and the harmless devices (`/dev/null` and friends); in `read-only` only the
//! devices.
//!
//! In `workspace-write`, where the kernel lets panto make a mount namespace (as root, or with
//! unprivileged user namespaces), bash also runs in one where everything outside the writable set
//! is mounted read-only (so changing the mode, times, owner or extended attributes of a file
//! outside fails with `EROFS`, which Landlock does not cover), and `/tmp`, `/var/tmp` and
//! `/dev/shm` are a private directory of the session ([`PrivateTmp`]). Where it cannot, the
//! start-up probe falls back to Landlock and seccomp alone, grants the shared temp directories
//! instead, and leaves a note ([`SandboxConfig::note`]). The threat model and what the sandbox
//! does not stop are in docs/tools.md.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The sandbox mode (`--sandbox`, `[tools] sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sandbox {
    /// No sandbox: tools can do whatever the user can.
    #[default]
    Off,
    /// Nothing may be written (bash, write, edit), except to `/dev/null` and friends.
    ReadOnly,
    /// Writes only in the working directory and `writable_roots`, and, for bash, a private
    /// `/tmp` of the session (the shared temp directories where no mount namespace can be made).
    WorkspaceWrite,
}

impl Sandbox {
    /// Every mode, as the command line lists them.
    pub const ALL: [Sandbox; 3] = [Sandbox::Off, Sandbox::ReadOnly, Sandbox::WorkspaceWrite];

    /// The name used on the command line and in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            Sandbox::Off => "off",
            Sandbox::ReadOnly => "read-only",
            Sandbox::WorkspaceWrite => "workspace-write",
        }
    }
}

impl fmt::Display for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Sandbox {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Sandbox::ALL
            .into_iter()
            .find(|m| m.as_str() == s.trim())
            .ok_or_else(|| format!("unknown sandbox mode {s:?}; expected off, read-only or workspace-write"))
    }
}

/// Devices anyone may write without changing anything: output thrown away or a terminal.
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// How to turn the sandbox off, for messages.
const TURN_OFF: &str = "run with `--sandbox off` (or set `[tools] sandbox = \"off\"`) to go without it";

/// A resolved sandbox: the mode, the network switch and the writable directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    mode: Sandbox,
    network: bool,
    /// What bash and the write tools may write: the workspace, plus the shared temp directories
    /// unless bash has a private `/tmp`.
    writable: Vec<PathBuf>,
    /// The working directory and `writable_roots` (real paths).
    workspace: Vec<PathBuf>,
    /// The shared temp directories (real paths of those that exist).
    temps: Vec<PathBuf>,
    /// The session's private `/tmp`, when bash runs in a mount namespace.
    private_tmp: Option<Arc<PrivateTmp>>,
    /// What the start-up probe found worth saying once (no mount namespace here).
    note: Option<String>,
}

impl SandboxConfig {
    /// No sandbox.
    pub fn off() -> SandboxConfig {
        SandboxConfig {
            mode: Sandbox::Off,
            network: true,
            writable: Vec::new(),
            workspace: Vec::new(),
            temps: Vec::new(),
            private_tmp: None,
            note: None,
        }
    }

    /// The sandbox `mode` for a working directory `cwd` (resolved), with `writable_roots` (each
    /// must exist) writable too in `workspace-write`. Until [`SandboxConfig::probe`] sets up the
    /// mount namespace, the shared temp directories are writable too (the fallback).
    pub fn new(mode: Sandbox, network: bool, cwd: &Path, writable_roots: &[PathBuf]) -> Result<SandboxConfig, Error> {
        let mut workspace = Vec::new();
        let mut temps = Vec::new();
        if mode == Sandbox::WorkspaceWrite {
            workspace.push(cwd.to_path_buf());
            // A temp directory that does not exist here is simply not granted.
            for temp in [
                std::env::temp_dir(),
                "/tmp".into(),
                "/var/tmp".into(),
                "/dev/shm".into(),
            ] {
                if let Ok(real) = temp.canonicalize() {
                    if !temps.contains(&real) {
                        temps.push(real);
                    }
                }
            }
            for root in writable_roots {
                let real = root.canonicalize().map_err(|source| Error::Path {
                    what: "writable_roots:",
                    path: root.display().to_string(),
                    source,
                })?;
                if !workspace.contains(&real) {
                    workspace.push(real);
                }
            }
        }
        let mut sandbox = SandboxConfig {
            mode,
            network: network || mode == Sandbox::Off,
            writable: Vec::new(),
            workspace,
            temps,
            private_tmp: None,
            note: None,
        };
        sandbox.set_private_tmp(None);
        Ok(sandbox)
    }

    /// Gives bash `private` as its `/tmp` (the shared temp directories leave the writable set),
    /// or, with `None`, the shared temp directories.
    fn set_private_tmp(&mut self, private: Option<PrivateTmp>) {
        let shared = private.is_none();
        self.private_tmp = private.map(Arc::new);
        self.writable = self.workspace.clone();
        if shared {
            for temp in &self.temps {
                if !self.writable.contains(temp) {
                    self.writable.push(temp.clone());
                }
            }
        }
    }

    /// Something to tell the user once at start-up about this sandbox: set by
    /// [`SandboxConfig::probe`] when `workspace-write` could not make its mount namespace here
    /// (then metadata outside the workspace stays changeable and `/tmp` is shared).
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The directory bash sees as `/tmp` (and `/var/tmp`): the session's private one, when bash
    /// runs in a mount namespace. Removed when the last clone of this configuration is dropped.
    pub fn private_tmp(&self) -> Option<&Path> {
        self.private_tmp.as_ref().map(|p| p.tmp.as_path())
    }

    /// The private temp directories and where the child mounts them (`/tmp`, `/var/tmp`,
    /// `/dev/shm`), when bash runs in a mount namespace.
    pub(crate) fn private_binds(&self) -> Option<&[(PathBuf, PathBuf)]> {
        self.private_tmp.as_ref().map(|p| p.binds.as_slice())
    }

    /// What Landlock lets bash write: the writable set, and the private temp directories (Landlock
    /// checks a mount's root, the private directory, not the `/tmp` it covers).
    pub(crate) fn bash_writable(&self) -> Vec<PathBuf> {
        let mut dirs = self.writable.clone();
        if let Some(private) = &self.private_tmp {
            dirs.extend(private.binds.iter().map(|(source, _)| source.clone()));
        }
        dirs
    }

    /// The mode.
    pub fn mode(&self) -> Sandbox {
        self.mode
    }

    /// Whether internet sockets are allowed.
    pub fn network(&self) -> bool {
        self.network
    }

    /// The directories tools may write (empty when off or read-only; the devices and bash's
    /// private `/tmp` are not listed; the shared temp directories are, only when bash has no
    /// private `/tmp`).
    pub fn writable_dirs(&self) -> &[PathBuf] {
        &self.writable
    }

    /// Whether a sandbox is applied at all.
    pub fn is_on(&self) -> bool {
        self.mode != Sandbox::Off
    }

    /// Whether `write`/`edit` may write the file at `path` (absolute): refused in `read-only`,
    /// and in `workspace-write` unless its real path (links resolved) is in a writable directory.
    pub fn check_write(&self, path: &Path) -> Result<(), String> {
        match self.mode {
            Sandbox::Off => Ok(()),
            Sandbox::ReadOnly => Err(format!(
                "{} was not written: the sandbox is read-only (--sandbox read-only)",
                path.display()
            )),
            Sandbox::WorkspaceWrite => {
                let real =
                    crate::roots::real_path(path).map_err(|e| format!("cannot resolve {}: {e}", path.display()))?;
                if self.writable.iter().any(|dir| real.starts_with(dir)) {
                    return Ok(());
                }
                if let Some(private) = self.private_tmp() {
                    if let Some(temp) = self.temps.iter().find(|t| real.starts_with(t)) {
                        return Err(format!(
                            "{} was not written: {} is shared with other programs, and bash sees a private \
                             /tmp for this session instead ({}), so a file written there would not reach \
                             it; write it in the working directory ({})",
                            real.display(),
                            temp.display(),
                            private.display(),
                            self.workspace
                                .first()
                                .map_or(String::new(), |d| d.display().to_string())
                        ));
                    }
                }
                let listed: Vec<String> = self.writable.iter().map(|d| d.display().to_string()).collect();
                Err(format!(
                    "{} is outside the directories the sandbox lets tools write ({}); add its directory to \
                     `[tools] writable_roots` to allow it",
                    real.display(),
                    listed.join(", ")
                ))
            }
        }
    }

    /// Checks at start-up that this system can apply the sandbox, by starting a trivial command
    /// under it: the same code path bash takes. Fails closed, naming the flag that turns it off.
    ///
    /// In `workspace-write` it first makes the session's private `/tmp` and tries the mount
    /// namespace; where the kernel does not allow one (or a mount step fails), it falls back to
    /// Landlock and seccomp alone with the shared temp directories writable, and sets
    /// [`SandboxConfig::note`].
    pub fn probe(&mut self) -> Result<(), Error> {
        if !self.is_on() {
            return Ok(());
        }
        if self.mode == Sandbox::WorkspaceWrite && cfg!(target_os = "linux") {
            self.try_namespace();
        }
        self.run_probe()
    }

    /// Sets up the private `/tmp` and checks the mount namespace with a trivial command; on
    /// failure, the fallback with a note. Nothing to do when `/` itself is writable.
    fn try_namespace(&mut self) {
        if self.workspace.iter().any(|d| d == Path::new("/")) {
            return;
        }
        let reason = match PrivateTmp::create() {
            Err(e) => format!("its private /tmp could not be made: {e}"),
            Ok(private) => {
                self.set_private_tmp(Some(private));
                let mut command = std::process::Command::new("sh");
                command.arg("-c").arg(":");
                let failure = match crate::child::run_to_end(command, self) {
                    Err(e) => crate::child::namespace_failure(&e),
                    Ok(_) => None,
                };
                match failure {
                    Some(failure) => failure,
                    // Anything else is the probe's to judge, in the namespace.
                    None => return,
                }
            }
        };
        self.set_private_tmp(None);
        self.note = Some(format!(
            "the sandbox runs without its mount namespace here ({reason}): commands can still change the mode, \
             times and extended attributes of the user's files outside the workspace, and /tmp is shared with \
             other programs (see \"What it does not stop\" in docs/tools.md)"
        ));
    }

    fn run_probe(&self) -> Result<(), Error> {
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(":");
        match crate::child::run_to_end(command, self) {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(Error::SandboxUnavailable(format!(
                "the sandbox (--sandbox {}) could not be checked: a trivial command under it ended with {status}; \
                 {TURN_OFF}",
                self.mode
            ))),
            Err(e) => Err(Error::SandboxUnavailable(format!(
                "the sandbox (--sandbox {}) is not available here: {}; {TURN_OFF}",
                self.mode,
                crate::child::explain_spawn_error(&e)
            ))),
        }
    }
}

/// The session's private temp directories: `/tmp/panto-UID/PID-N/tmp`, mounted on `/tmp` and
/// `/var/tmp` in bash's namespace, and `…/shm`, mounted on `/dev/shm`. They live in the real
/// `/tmp` (same file system and size as what they replace), beneath a directory only the user can
/// enter, and are removed when the last [`SandboxConfig`] holding them is dropped; one left by a
/// panto that was killed is removed by the next one that starts (its process is gone), or by the
/// system's own cleaning of `/tmp`.
#[derive(Debug)]
pub(crate) struct PrivateTmp {
    session: PathBuf,
    tmp: PathBuf,
    /// (private directory, the shared path it is mounted on).
    binds: Vec<(PathBuf, PathBuf)>,
}

impl PartialEq for PrivateTmp {
    fn eq(&self, other: &Self) -> bool {
        self.session == other.session
    }
}

impl Eq for PrivateTmp {}

impl PrivateTmp {
    fn create() -> std::io::Result<PrivateTmp> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);

        let uid = nix::unistd::geteuid();
        let base = Path::new("/tmp").join(format!("panto-{uid}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&base) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        // Someone else's directory (or a link) in the shared /tmp is never used.
        let meta = std::fs::symlink_metadata(&base)?;
        if !meta.file_type().is_dir() || meta.uid() != uid.as_raw() || meta.mode() & 0o077 != 0 {
            return Err(std::io::Error::other(format!(
                "{} is not a directory only this user can enter (owner uid {}, mode {:o})",
                base.display(),
                meta.uid(),
                meta.mode() & 0o7777
            )));
        }
        remove_stale(&base);
        let pid = std::process::id();
        let session = loop {
            let candidate = base.join(format!("{pid}-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
            match std::fs::DirBuilder::new().mode(0o700).create(&candidate) {
                Ok(()) => break candidate,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        // From here on, an error drops `made`, which removes the session directory.
        let mut made = PrivateTmp {
            tmp: session.join("tmp"),
            session,
            binds: Vec::new(),
        };
        let shm = made.session.join("shm");
        // Inside the sandbox they look like the directories they replace (sticky, open to all);
        // the session directory around them keeps everyone else out.
        for dir in [&made.tmp, &shm] {
            std::fs::create_dir(dir)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777))?;
        }
        for (source, target) in [
            (made.tmp.clone(), "/tmp"),
            (made.tmp.clone(), "/var/tmp"),
            (shm, "/dev/shm"),
        ] {
            // Each is mounted where it really is; one that does not exist here is left out.
            if let Ok(real) = Path::new(target).canonicalize() {
                if !made.binds.iter().any(|(_, t)| *t == real) {
                    made.binds.push((source.clone(), real));
                }
            }
        }
        if made.binds.is_empty() {
            return Err(std::io::Error::other("there is no /tmp"));
        }
        Ok(made)
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.session);
    }
}

/// Removes the session directories in `base` whose panto process is gone.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split_once('-'))
            .and_then(|(p, _)| p.parse::<i32>().ok())
        else {
            continue;
        };
        if pid > 0 && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// What the child applies before it runs its program, prepared in the parent (opening the paths
/// and compiling the filter allocate, which a forked child of a threaded program must not).
#[derive(Debug)]
pub(crate) struct Confinement {
    #[cfg(target_os = "linux")]
    pub ruleset: Option<landlock::RulesetCreated>,
    #[cfg(target_os = "linux")]
    pub seccomp: Option<seccompiler::BpfProgram>,
}

impl SandboxConfig {
    /// The Landlock ruleset and seccomp filter of this sandbox, or `None` when it is off.
    pub(crate) fn confinement(&self) -> std::io::Result<Option<Confinement>> {
        if !self.is_on() {
            return Ok(None);
        }
        linux::confinement(self).map(Some)
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;
    use std::io;

    use landlock::{path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, ABI};
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };

    use super::{Confinement, SandboxConfig, WRITABLE_DEVICES};

    /// The newest Landlock ABI panto knows; an older kernel enforces what it has (best effort),
    /// and one without Landlock fails the spawn ([`crate::child`]).
    const LANDLOCK_ABI: ABI = ABI::V5;

    pub(super) fn confinement(sandbox: &SandboxConfig) -> io::Result<Confinement> {
        let ruleset = landlock_ruleset(sandbox).map_err(io::Error::other)?;
        let seccomp = if sandbox.network {
            None
        } else {
            Some(no_internet_filter().map_err(io::Error::other)?)
        };
        Ok(Confinement {
            ruleset: Some(ruleset),
            seccomp,
        })
    }

    fn landlock_ruleset(sandbox: &SandboxConfig) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
        let abi = LANDLOCK_ABI;
        Ruleset::default()
            .handle_access(AccessFs::from_all(abi))?
            .create()?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
            .add_rules(path_beneath_rules(WRITABLE_DEVICES, AccessFs::from_all(abi)))?
            .add_rules(path_beneath_rules(sandbox.bash_writable(), AccessFs::from_all(abi)))
    }

    /// `socket(AF_INET|AF_INET6, …)` and `io_uring_setup` fail with `EACCES`; everything else
    /// (Unix sockets included) is allowed.
    fn no_internet_filter() -> Result<BpfProgram, seccompiler::BackendError> {
        let family = |af: i32| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, af as u64)
                .and_then(|c| SeccompRule::new(vec![c]))
        };
        let rules = BTreeMap::from([
            (
                nix::libc::SYS_socket,
                vec![family(nix::libc::AF_INET)?, family(nix::libc::AF_INET6)?],
            ),
            (nix::libc::SYS_io_uring_setup, Vec::new()),
        ]);
        let arch = std::env::consts::ARCH
            .try_into()
            .map_err(|_| seccompiler::BackendError::InvalidTargetArch(std::env::consts::ARCH.into()))?;
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(nix::libc::EACCES as u32),
            arch,
        )?;
        BpfProgram::try_from(filter)
    }
}

#[cfg(not(target_os = "linux"))]
mod linux {
    use super::{Confinement, SandboxConfig};

    pub(super) fn confinement(_: &SandboxConfig) -> std::io::Result<Confinement> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "the sandbox needs Linux (Landlock and seccomp)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_checks_follow_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let ro = SandboxConfig::new(Sandbox::ReadOnly, false, &cwd, &[]).unwrap();
        let e = ro.check_write(&cwd.join("a")).unwrap_err();
        assert!(e.contains("read-only"), "{e}");
        let ww = SandboxConfig::new(Sandbox::WorkspaceWrite, false, &cwd, &[]).unwrap();
        assert!(ww.check_write(&cwd.join("sub/new.txt")).is_ok());
        let e = ww.check_write(Path::new("/etc/x")).unwrap_err();
        assert!(e.contains("/etc/x is outside") && e.contains("writable_roots"), "{e}");
        std::os::unix::fs::symlink("/etc", cwd.join("etc")).unwrap();
        assert!(ww.check_write(&cwd.join("etc/x")).is_err(), "a link out is followed");
        assert!(SandboxConfig::off().check_write(Path::new("/etc/x")).is_ok());
    }
}
