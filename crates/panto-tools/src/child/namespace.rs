//! The mount namespace of a `workspace-write` child: everything outside the writable set is
//! mounted read-only, so what Landlock does not cover (changing a file's mode, times, owner or
//! extended attributes) fails with `EROFS` outside the workspace, and `/tmp`, `/var/tmp` and
//! `/dev/shm` are the session's private directories ([`crate::sandbox`] makes them).
//!
//! Everything is prepared in the parent ([`Plan::for_command`]: the paths as C strings, the user
//! namespace's id maps, the mount points inside the private `/tmp`); the child only makes system
//! calls ([`Plan::enter`]):
//!
//! 1. `unshare(CLONE_NEWNS)` as root; otherwise (or when root lacks `CAP_SYS_ADMIN`, as in a
//!    container) `unshare(CLONE_NEWUSER | CLONE_NEWNS)`, mapping the user's own uid and gid to
//!    themselves, so files keep their real owners;
//! 2. every mount becomes private, so nothing done here propagates back to the system;
//! 3. each writable directory and each private temp directory is cloned, read-write, as a
//!    detached tree (`open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)`);
//! 4. the whole tree is made read-only (`mount_setattr(AT_RECURSIVE, MOUNT_ATTR_RDONLY)`);
//! 5. the clones are attached (`move_mount`) over their places, parents before children;
//! 6. the child changes into its working directory again, so it stands on the writable clone;
//!
//! The child then gives up every capability ([`super::drop_privileges`], the next step of the
//! setup, always run in a sandbox), `CAP_SYS_ADMIN` included: Landlock forbids a sandboxed
//! process `mount`, `umount` and `move_mount`, but not `mount_setattr`, with which root (or the
//! owner of the user namespace) could make the tree writable again. A user namespace the command
//! makes later copies these mounts locked read-only.
//!
//! A failure at any step fails the spawn with a code that names the step and the system error
//! ([`explain`]); the start-up probe turns such a failure into the fallback (Landlock and seccomp
//! alone, with a note), while a later spawn never runs half-confined.

#![allow(unsafe_code)]

use std::io;
use std::path::{Path, PathBuf};

use crate::sandbox::SandboxConfig;

/// Error codes of the namespace steps: `BASE + step << 12 + errno` (errno is below 4096).
const BASE: i32 = 0x2e00_0000;

/// The steps of [`Plan::enter`], numbered for the error code.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
enum Step {
    Unshare = 1,
    IdMaps = 2,
    Private = 3,
    Clone = 4,
    ReadOnly = 5,
    Attach = 6,
    Chdir = 7,
}

impl Step {
    fn from_code(n: i32) -> Option<Step> {
        Some(match n {
            1 => Step::Unshare,
            2 => Step::IdMaps,
            3 => Step::Private,
            4 => Step::Clone,
            5 => Step::ReadOnly,
            6 => Step::Attach,
            7 => Step::Chdir,
            _ => return None,
        })
    }

    fn describe(self) -> &'static str {
        match self {
            Step::Unshare => "creating the namespace (unshare)",
            Step::IdMaps => "mapping the user's ids into the user namespace",
            Step::Private => "making the mounts private",
            Step::Clone => "cloning a writable directory (open_tree)",
            Step::ReadOnly => "making the tree read-only (mount_setattr)",
            Step::Attach => "attaching a writable directory (move_mount)",
            Step::Chdir => "changing into the working directory",
        }
    }
}

/// The system error of the failed `step`, as the child's spawn error.
#[cfg(target_os = "linux")]
fn fail(step: Step) -> io::Error {
    let errno = nix::errno::Errno::last_raw() & 0xfff;
    io::Error::from_raw_os_error(BASE + ((step as i32) << 12) + errno)
}

/// What a spawn error code of this module means, or `None` when it is not one of ours.
pub(crate) fn explain(code: i32) -> Option<String> {
    Some(format!(
        "the sandbox's mount namespace could not be set up: {}",
        failure(code)?
    ))
}

/// Which step failed and why, when `error` (from a spawn) is a failed namespace step.
pub(crate) fn namespace_failure(error: &io::Error) -> Option<String> {
    failure(error.raw_os_error()?)
}

fn failure(code: i32) -> Option<String> {
    let (step, errno) = decode(code)?;
    Some(format!(
        "{} failed: {}",
        step.describe(),
        nix::errno::Errno::from_raw(errno).desc()
    ))
}

fn decode(code: i32) -> Option<(Step, i32)> {
    let n = code.checked_sub(BASE).filter(|n| (0..0x10_0000).contains(n))?;
    Some((Step::from_code(n >> 12)?, n & 0xfff))
}

/// What the child does, prepared before the fork: nothing in it allocates in the child.
#[derive(Debug)]
pub(crate) struct Plan {
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    inner: imp::Prepared,
}

impl Plan {
    /// The plan for `command` under `sandbox`, or `None` when the sandbox has no private
    /// namespace (off, read-only, or the fallback). Sets `TMPDIR=/tmp` in the command's
    /// environment: a shared temp directory named there is read-only in the namespace.
    pub(crate) fn for_command(
        command: &mut std::process::Command,
        sandbox: &SandboxConfig,
    ) -> io::Result<Option<Plan>> {
        let Some(private) = sandbox.private_binds() else {
            return Ok(None);
        };
        let cwd = match command.get_current_dir() {
            Some(dir) if dir.is_absolute() => dir.to_path_buf(),
            Some(dir) => std::env::current_dir()?.join(dir),
            None => std::env::current_dir()?,
        };
        let mut mounts: Vec<(PathBuf, PathBuf)> = private.to_vec();
        let writable = sandbox.writable_dirs();
        for dir in writable {
            // A writable directory beneath another is in that one's clone, unless a private
            // temp directory is mounted between them.
            let covered = writable.iter().any(|other| {
                other != dir
                    && dir.starts_with(other)
                    && !private
                        .iter()
                        .any(|(_, t)| t != other && t.starts_with(other) && dir.starts_with(t))
            });
            // One removed since start-up is left out, as Landlock leaves it out.
            if covered || !dir.is_dir() {
                continue;
            }
            // One beneath a private temp directory needs its mount point in the private one.
            if let Some((source, target)) = private
                .iter()
                .find(|(_, target)| dir.starts_with(target) && dir != target)
            {
                if let Ok(rel) = dir.strip_prefix(target) {
                    make_mount_point(source, rel)?;
                }
            }
            mounts.push((dir.clone(), dir.clone()));
        }
        // Parents before children; at equal depth the private temp directories first (a
        // working directory that is `/tmp` itself stays the real one).
        mounts.sort_by_key(|(_, target)| target.components().count());
        command.env("TMPDIR", "/tmp");
        Ok(Some(Plan {
            inner: imp::Prepared::new(&mounts, &cwd)?,
        }))
    }

    /// Enters the namespace (in the child, before `exec`): see the module documentation.
    pub(crate) fn enter(&mut self) -> io::Result<()> {
        self.inner.enter()
    }
}

/// Creates the directories `rel` beneath `base` (an existing directory), following no link: a
/// link planted in the private `/tmp` by an earlier command fails this instead of leading the
/// parent, unconfined, to make directories elsewhere.
fn make_mount_point(base: &Path, rel: &Path) -> io::Result<()> {
    use nix::fcntl::{open, openat, OFlag};
    use nix::sys::stat::{mkdirat, Mode};
    let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY;
    let mut dir = open(base, flags, Mode::empty()).map_err(io::Error::from)?;
    for part in rel.components() {
        match mkdirat(&dir, part.as_os_str(), Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
            Err(e) => return Err(io::Error::from(e)),
        }
        dir = openat(&dir, part.as_os_str(), flags, Mode::empty()).map_err(|e| {
            io::Error::other(format!(
                "the mount point {} in the private /tmp is not a directory ({e})",
                base.join(rel).display()
            ))
        })?;
    }
    Ok(())
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::CString;
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    use nix::libc;

    use super::{fail, Step};

    // The mount API's flags and attribute structure (linux/mount.h), stable kernel ABI.
    const OPEN_TREE_CLONE: libc::c_uint = 1;
    const OPEN_TREE_CLOEXEC: libc::c_uint = libc::O_CLOEXEC as libc::c_uint;
    const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
    const MOUNT_ATTR_RDONLY: u64 = 0x1;

    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }

    /// One clone: where it comes from, where it goes, and its descriptor while detached.
    #[derive(Debug)]
    struct Bind {
        source: CString,
        target: CString,
        fd: libc::c_int,
    }

    #[derive(Debug)]
    pub(super) struct Prepared {
        as_root: bool,
        uid_map: CString,
        gid_map: CString,
        binds: Vec<Bind>,
        cwd: CString,
    }

    fn c_path(path: &Path) -> io::Result<CString> {
        CString::new(path.as_os_str().as_bytes()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} holds a NUL byte", path.display()),
            )
        })
    }

    impl Prepared {
        pub(super) fn new(mounts: &[(PathBuf, PathBuf)], cwd: &Path) -> io::Result<Prepared> {
            let uid = nix::unistd::geteuid();
            let gid = nix::unistd::getegid();
            let binds = mounts
                .iter()
                .map(|(source, target)| {
                    Ok(Bind {
                        source: c_path(source)?,
                        target: c_path(target)?,
                        fd: -1,
                    })
                })
                .collect::<io::Result<Vec<_>>>()?;
            Ok(Prepared {
                as_root: uid.is_root(),
                uid_map: c_path(Path::new(&format!("{uid} {uid} 1")))?,
                gid_map: c_path(Path::new(&format!("{gid} {gid} 1")))?,
                binds,
                cwd: c_path(cwd)?,
            })
        }

        /// Runs in the forked child: system calls only, on the prepared values.
        pub(super) fn enter(&mut self) -> io::Result<()> {
            self.unshare()?;
            // SAFETY: mount(2) with a NULL source, type and data and a static, NUL-terminated
            // target only changes the propagation of this process's own (new) mount namespace.
            let private = unsafe {
                libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                )
            };
            if private != 0 {
                return Err(fail(Step::Private));
            }
            for bind in &mut self.binds {
                // SAFETY: open_tree(2) reads the NUL-terminated path prepared in the parent and
                // returns a new descriptor (or -1); no memory is handed to the kernel to keep.
                let fd = unsafe {
                    libc::syscall(
                        libc::SYS_open_tree,
                        libc::AT_FDCWD,
                        bind.source.as_ptr(),
                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | libc::AT_RECURSIVE as libc::c_uint,
                    )
                };
                if fd < 0 {
                    return Err(fail(Step::Clone));
                }
                bind.fd = fd as libc::c_int;
            }
            let attr = MountAttr {
                attr_set: MOUNT_ATTR_RDONLY,
                attr_clr: 0,
                propagation: 0,
                userns_fd: 0,
            };
            // SAFETY: mount_setattr(2) reads `attr`, a live `repr(C)` struct whose size is
            // passed with it, and the static path "/"; it keeps no pointer.
            let read_only = unsafe {
                libc::syscall(
                    libc::SYS_mount_setattr,
                    libc::AT_FDCWD,
                    c"/".as_ptr(),
                    libc::AT_RECURSIVE as libc::c_uint,
                    &attr as *const MountAttr,
                    std::mem::size_of::<MountAttr>(),
                )
            };
            if read_only != 0 {
                return Err(fail(Step::ReadOnly));
            }
            for bind in &mut self.binds {
                // SAFETY: move_mount(2) attaches the detached tree behind `bind.fd` (ours, from
                // open_tree above) at the NUL-terminated target prepared in the parent; the
                // empty path is a static C string.
                let attached = unsafe {
                    libc::syscall(
                        libc::SYS_move_mount,
                        bind.fd,
                        c"".as_ptr(),
                        libc::AT_FDCWD,
                        bind.target.as_ptr(),
                        MOVE_MOUNT_F_EMPTY_PATH,
                    )
                };
                if attached != 0 {
                    return Err(fail(Step::Attach));
                }
                // SAFETY: closes the descriptor open_tree gave this child; nothing else uses it.
                unsafe { libc::close(bind.fd) };
                bind.fd = -1;
            }
            // The working directory was entered before the mounts: enter it again, through the
            // writable clone now attached over it.
            // SAFETY: chdir(2) reads the NUL-terminated path prepared in the parent.
            if unsafe { libc::chdir(self.cwd.as_ptr()) } != 0 {
                return Err(fail(Step::Chdir));
            }
            Ok(())
        }

        /// A new mount namespace: plain as root; in a new user namespace otherwise (or when root
        /// may not make one, as in a container without `CAP_SYS_ADMIN`).
        fn unshare(&self) -> io::Result<()> {
            if self.as_root {
                // SAFETY: unshare(2) takes flags only.
                if unsafe { libc::unshare(libc::CLONE_NEWNS) } == 0 {
                    return Ok(());
                }
            }
            // SAFETY: unshare(2) takes flags only.
            if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
                return Err(fail(Step::Unshare));
            }
            // An unprivileged process may write a gid map only after refusing setgroups; a kernel
            // without the file (before 3.19) needs no refusal.
            match write_file(c"/proc/self/setgroups", b"deny") {
                Ok(()) => {}
                Err(errno) if errno == libc::ENOENT => {}
                Err(_) => return Err(fail(Step::IdMaps)),
            }
            write_file(c"/proc/self/uid_map", self.uid_map.as_bytes()).map_err(|_| fail(Step::IdMaps))?;
            write_file(c"/proc/self/gid_map", self.gid_map.as_bytes()).map_err(|_| fail(Step::IdMaps))?;
            Ok(())
        }
    }

    /// Writes `bytes` to the file at `path` in one `write`; `Err` holds the errno (left set).
    fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> Result<(), i32> {
        // SAFETY: open(2) reads a NUL-terminated path; the descriptor is ours and closed below.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(nix::errno::Errno::last_raw());
        }
        // SAFETY: write(2) reads `bytes.len()` bytes from a live slice.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        let errno = nix::errno::Errno::last_raw();
        // SAFETY: closes the descriptor opened above.
        unsafe { libc::close(fd) };
        if written != bytes.len() as isize {
            // close may have changed errno; restore the write's.
            nix::errno::Errno::set_raw(errno);
            return Err(errno);
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::path::{Path, PathBuf};

    #[derive(Debug)]
    pub(super) struct Prepared;

    impl Prepared {
        pub(super) fn new(_: &[(PathBuf, PathBuf)], _: &Path) -> io::Result<Prepared> {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "mount namespaces need Linux",
            ))
        }

        pub(super) fn enter(&mut self) -> io::Result<()> {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "mount namespaces need Linux",
            ))
        }
    }
}
