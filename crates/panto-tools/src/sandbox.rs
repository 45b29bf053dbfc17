//! The sandbox: where `bash` (and what it starts) may write, whether it may reach the network,
//! and where `write` and `edit` may write, so "cannot write outside" holds for every built-in
//! tool.
//!
//! On Linux, `bash` runs under Landlock (the filesystem: read everywhere, write only the writable
//! set) and a seccomp filter (no `AF_INET`/`AF_INET6` socket, and no io_uring, which could open
//! one behind the filter's back), both applied in the child before it runs bash
//! ([`crate::child`]). The writable set in `workspace-write` is the working directory, the temp
//! directories, `writable_roots`, and the harmless devices (`/dev/null` and friends); in
//! `read-only` only the devices. The threat model and what the sandbox does not stop are in
//! docs/tools.md.

use std::fmt;
use std::path::{Path, PathBuf};

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
    /// Writes only in the working directory, the temp directories and `writable_roots`.
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
    writable: Vec<PathBuf>,
}

impl SandboxConfig {
    /// No sandbox.
    pub fn off() -> SandboxConfig {
        SandboxConfig {
            mode: Sandbox::Off,
            network: true,
            writable: Vec::new(),
        }
    }

    /// The sandbox `mode` for a working directory `cwd` (resolved), with `writable_roots` (each
    /// must exist) writable too in `workspace-write`.
    pub fn new(mode: Sandbox, network: bool, cwd: &Path, writable_roots: &[PathBuf]) -> Result<SandboxConfig, Error> {
        let mut writable = Vec::new();
        if mode == Sandbox::WorkspaceWrite {
            writable.push(cwd.to_path_buf());
            let mut temps = vec![
                std::env::temp_dir(),
                "/tmp".into(),
                "/var/tmp".into(),
                "/dev/shm".into(),
            ];
            temps.dedup();
            // A temp directory that does not exist here is simply not granted.
            writable.extend(temps.iter().filter_map(|t| t.canonicalize().ok()));
            for root in writable_roots {
                let real = root.canonicalize().map_err(|source| Error::Path {
                    what: "writable_roots:",
                    path: root.display().to_string(),
                    source,
                })?;
                writable.push(real);
            }
            writable.dedup();
        }
        Ok(SandboxConfig {
            mode,
            network: network || mode == Sandbox::Off,
            writable,
        })
    }

    /// The mode.
    pub fn mode(&self) -> Sandbox {
        self.mode
    }

    /// Whether internet sockets are allowed.
    pub fn network(&self) -> bool {
        self.network
    }

    /// The directories tools may write (empty when off or read-only; the devices are not listed).
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
    pub fn probe(&self) -> Result<(), Error> {
        if !self.is_on() {
            return Ok(());
        }
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
            .add_rules(path_beneath_rules(&sandbox.writable, AccessFs::from_all(abi)))
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
