//! The sandbox: where `bash` (and what it starts) may write, whether it may reach the network,
//! and where `write` and `edit` may write, so "cannot write outside" holds for every built-in
//! tool.
//!
//! On Linux, `bash` runs without any capability and under Landlock (the filesystem: read
//! everywhere, write only the writable set, make no device node; signals and abstract Unix
//! sockets scoped to the sandbox) and seccomp filters (sockets of `AF_UNIX` only, plus
//! `AF_INET`/`AF_INET6` with the network on; no io_uring, which could open one behind the
//! filter's back; in `read-only` no change of a file's mode, owner, times or extended
//! attributes; no x32 system call), all applied in the child before it runs bash
//! ([`crate::child`]). Every child, the sandbox off included, also gets the filter that refuses
//! `TIOCSTI`/`TIOCLINUX`. The writable set in `workspace-write` is the working directory,
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

/// Devices anyone may write without changing anything. No terminal: a tool has none (it runs in
/// its own session), and one it could open would let it type into the user's shell.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

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
                let failure = match crate::child::run_to_end(self.probe_command(), self) {
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

    /// The trivial command the probes run, in the working directory as bash runs: a process
    /// whose own directory lies in a temp directory but outside the workspace (a test binary in a
    /// checkout under `/tmp`) has no such directory in the namespace.
    fn probe_command(&self) -> std::process::Command {
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(":");
        if let Some(cwd) = self.workspace.first() {
            command.current_dir(cwd);
        }
        command
    }

    fn run_probe(&self) -> Result<(), Error> {
        match crate::child::run_to_end(self.probe_command(), self) {
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

/// What the child applies before it runs its program, prepared in the parent (opening the paths,
/// compiling the filters and reading the capability count allocate or read files, which a forked
/// child of a threaded program must not).
#[derive(Debug)]
pub(crate) struct Confinement {
    /// The Landlock ruleset (sandboxed modes only).
    #[cfg(target_os = "linux")]
    pub ruleset: Option<landlock::RulesetCreated>,
    /// The seccomp filters, installed in order. Every mode has at least the terminal filter.
    #[cfg(target_os = "linux")]
    pub seccomp: Vec<seccompiler::BpfProgram>,
    /// Whether the child gives up every capability and sets no-new-privileges (sandboxed modes).
    pub drop_privileges: bool,
    /// The highest capability number this kernel knows (`/proc/sys/kernel/cap_last_cap`).
    pub last_cap: u32,
}

impl SandboxConfig {
    /// What a child of this sandbox applies: with the sandbox off only the terminal filter (no
    /// `TIOCSTI`/`TIOCLINUX`); on, also the Landlock ruleset, the socket and metadata filters and
    /// the dropping of privileges.
    pub(crate) fn confinement(&self) -> std::io::Result<Confinement> {
        linux::confinement(self)
    }
}

/// The highest capability number of this kernel; when it cannot be read, the most any kernel
/// could have (the child's drop of a number the kernel does not know is ignored).
#[cfg(target_os = "linux")]
fn last_capability() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(63)
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;
    use std::io;

    use landlock::{
        path_beneath_rules, Access, AccessFs, BitFlags, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
    };
    use nix::libc;
    use seccompiler::{
        sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };

    use super::{last_capability, Confinement, Sandbox, SandboxConfig, WRITABLE_DEVICES};

    /// The newest Landlock ABI panto knows (V6: signal and abstract-socket scoping); an older
    /// kernel enforces what it has (best effort), and one without Landlock fails the spawn
    /// ([`crate::child`]).
    const LANDLOCK_ABI: ABI = ABI::V6;

    /// `setxattrat(2)` and `removexattrat(2)` (Linux 6.13): libc does not name them yet; since
    /// Linux 5.1 a new system call has the same number on every architecture.
    const SYS_SETXATTRAT: libc::c_long = 463;
    const SYS_REMOVEXATTRAT: libc::c_long = 466;

    /// The x32 ABI's marker bit in a system call number (x86_64 only).
    #[cfg(target_arch = "x86_64")]
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;

    type Rules = BTreeMap<i64, Vec<SeccompRule>>;

    pub(super) fn confinement(sandbox: &SandboxConfig) -> io::Result<Confinement> {
        let err = |e: seccompiler::BackendError| io::Error::other(e);
        // In every mode: no typing into a terminal, and (read-only) no metadata changes; both
        // refused with EPERM, as the kernel refuses them itself.
        let mut eperm = terminal_rules().map_err(err)?;
        if sandbox.mode == Sandbox::ReadOnly {
            eperm.extend(metadata_rules());
        }
        let mut seccomp = vec![filter(eperm, libc::EPERM).map_err(err)?];
        if !sandbox.is_on() {
            return Ok(Confinement {
                ruleset: None,
                seccomp,
                drop_privileges: false,
                last_cap: 0,
            });
        }
        seccomp.push(filter(socket_rules(sandbox.network).map_err(err)?, libc::EACCES).map_err(err)?);
        let ruleset = landlock_ruleset(sandbox).map_err(io::Error::other)?;
        Ok(Confinement {
            ruleset: Some(ruleset),
            seccomp,
            drop_privileges: true,
            last_cap: last_capability(),
        })
    }

    /// Read everywhere; write the writable set and the harmless devices; make no device node
    /// anywhere; signal and reach abstract Unix sockets only inside the sandbox (where the kernel
    /// has scoping, Landlock ABI 6).
    fn landlock_ruleset(sandbox: &SandboxConfig) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
        let abi = LANDLOCK_ABI;
        let no_devices: BitFlags<AccessFs> = AccessFs::MakeChar | AccessFs::MakeBlock;
        Ruleset::default()
            .handle_access(AccessFs::from_all(abi))?
            .scope(Scope::from_all(abi))?
            .create()?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
            .add_rules(path_beneath_rules(WRITABLE_DEVICES, AccessFs::from_file(abi)))?
            .add_rules(path_beneath_rules(
                sandbox.bash_writable(),
                AccessFs::from_all(abi) & !no_devices,
            ))
    }

    /// `ioctl(fd, TIOCSTI | TIOCLINUX, …)`: queueing input into a terminal, or (Linux console)
    /// pasting its selection. The kernel takes the request as a 32-bit value, so only the low
    /// half is compared.
    fn terminal_rules() -> Result<Rules, seccompiler::BackendError> {
        // An ioctl request is a `c_ulong` in glibc, a `c_int` in musl.
        #[allow(clippy::unnecessary_cast)]
        let request = |r: libc::Ioctl| {
            SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, r as u64)
                .and_then(|c| SeccompRule::new(vec![c]))
        };
        Ok(BTreeMap::from([(
            libc::SYS_ioctl,
            vec![request(libc::TIOCSTI)?, request(libc::TIOCLINUX)?],
        )]))
    }

    /// Every system call that changes a file's mode, owner, times or extended attributes: Landlock
    /// does not cover them. Refused outright, on descriptors too (`fchmod` of a pipe included):
    /// in read-only mode nothing is the tool's to change.
    fn metadata_rules() -> Rules {
        let mut calls = vec![
            libc::SYS_fchmod,
            libc::SYS_fchmodat,
            libc::SYS_fchmodat2,
            libc::SYS_fchown,
            libc::SYS_fchownat,
            libc::SYS_utimensat,
            libc::SYS_setxattr,
            libc::SYS_lsetxattr,
            libc::SYS_fsetxattr,
            libc::SYS_removexattr,
            libc::SYS_lremovexattr,
            libc::SYS_fremovexattr,
            SYS_SETXATTRAT,
            SYS_REMOVEXATTRAT,
        ];
        // The legacy calls only some architectures still have.
        #[cfg(target_arch = "x86_64")]
        calls.extend([
            libc::SYS_chmod,
            libc::SYS_chown,
            libc::SYS_lchown,
            libc::SYS_utime,
            libc::SYS_utimes,
            libc::SYS_futimesat,
        ]);
        calls.into_iter().map(|c| (c, Vec::new())).collect()
    }

    /// Sockets: an allow-list of families. `AF_UNIX` always, `AF_INET`/`AF_INET6` only with the
    /// network on; every other family (`AF_PACKET`, `AF_NETLINK`, `AF_VSOCK`, …) is refused.
    /// `socketpair` only for `AF_UNIX` (the one family where it means anything). No io_uring,
    /// which could open a socket behind the filter's back.
    fn socket_rules(network: bool) -> Result<Rules, seccompiler::BackendError> {
        let mut allowed = vec![libc::AF_UNIX];
        if network {
            allowed.extend([libc::AF_INET, libc::AF_INET6]);
        }
        let not_allowed = |families: &[i32]| {
            families
                .iter()
                .map(|&af| SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, af as u64))
                .collect::<Result<Vec<_>, _>>()
                .and_then(SeccompRule::new)
        };
        Ok(BTreeMap::from([
            (libc::SYS_socket, vec![not_allowed(&allowed)?]),
            (libc::SYS_socketpair, vec![not_allowed(&[libc::AF_UNIX])?]),
            (libc::SYS_io_uring_setup, Vec::new()),
        ]))
    }

    /// A filter failing `rules`' calls with `errno`, allowing the rest. It refuses every x32 call
    /// (its number has bit 30 set but its architecture reads as x86_64, so a filter of x86_64
    /// numbers would not see it), and, through seccompiler's arch check, kills a process that
    /// makes a call of another architecture (i386's `int 0x80`).
    fn filter(rules: Rules, errno: i32) -> Result<BpfProgram, seccompiler::BackendError> {
        let arch = std::env::consts::ARCH
            .try_into()
            .map_err(|_| seccompiler::BackendError::InvalidTargetArch(std::env::consts::ARCH.into()))?;
        let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(errno as u32), arch)?;
        let program = BpfProgram::try_from(filter)?;
        Ok(refuse_x32(program))
    }

    /// Prefixes `program` with: `if (nr & X32_SYSCALL_BIT) return EPERM`. seccompiler's jumps are
    /// relative, so the program after the prefix is unchanged.
    #[cfg(target_arch = "x86_64")]
    fn refuse_x32(program: BpfProgram) -> BpfProgram {
        let op = |code: u32, jt: u8, jf: u8, k: u32| sock_filter {
            code: code as u16,
            jt,
            jf,
            k,
        };
        // seccomp_data.nr is at offset 0.
        let mut prefixed = vec![
            op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
            op(libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K, 0, 1, X32_SYSCALL_BIT),
            op(
                libc::BPF_RET | libc::BPF_K,
                0,
                0,
                libc::SECCOMP_RET_ERRNO | (libc::EPERM as u32 & libc::SECCOMP_RET_DATA),
            ),
        ];
        prefixed.extend(program);
        prefixed
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn refuse_x32(program: BpfProgram) -> BpfProgram {
        program
    }
}

#[cfg(not(target_os = "linux"))]
mod linux {
    use super::{Confinement, SandboxConfig};

    pub(super) fn confinement(sandbox: &SandboxConfig) -> std::io::Result<Confinement> {
        if !sandbox.is_on() {
            return Ok(Confinement {
                drop_privileges: false,
                last_cap: 0,
            });
        }
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
