//! Where `write`, `edit` and a rewind's restore put a file: the path is resolved once, the
//! directory it lands in is opened, and everything after (reading the old content, creating the
//! temporary file, the rename, a write in place, a removal) happens relative to that open
//! directory, never by path again. A symbolic link flipped on the way between a check and the
//! write therefore cannot send the write anywhere the check did not pass.
//!
//! How a path is resolved ([`resolve`]):
//! 1. Its real path is worked out as the kernel would ([`crate::roots::real_path`]: links
//!    followed, `..` applied), and checked against every limit on writing: the sandbox's writable
//!    set, `[tools] read_roots`, and the tool's `[tools] deny` rules. The base is the writable
//!    directory it lies in (sandbox on), else the read root it lies in, else `/`.
//! 2. The base is opened following no symbolic link (it is a resolved path), then the real path's
//!    directory beneath it: with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!    RESOLVE_NO_MAGICLINKS)` where the kernel has it (Linux 5.6+), else one component at a time
//!    with `openat(O_PATH | O_DIRECTORY | O_NOFOLLOW)`. The real path holds no link, so a link
//!    found on the way now was swapped in after step 1: the write is refused, nothing written.
//! 3. The directory opened is asked where it is (`/proc/self/fd`); it must be where step 1 said.
//!
//! The directories a write must create are made with `mkdirat` beneath the directory opened, and
//! opened without following links, one at a time.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata, Permissions};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use crate::files;
use crate::policy::{resolved_path_subjects, Rule, Subjects};
use crate::roots::real_path;
use crate::sandbox::Sandbox;
use crate::{ToolContext, ToolName};

/// Flags for every open of a file: a FIFO or device must not block the open, a terminal must not
/// become panto's controlling terminal, a link at the name is not followed.
const FILE_FLAGS: OFlag = OFlag::O_NONBLOCK
    .union(OFlag::O_NOCTTY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// Flags for opening a directory on the way: a handle only, never through a link.
#[cfg(target_os = "linux")]
const DIR_FLAGS: OFlag = OFlag::O_PATH
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);
/// Flags for opening a directory on the way: never through a link (no `O_PATH` here).
#[cfg(not(target_os = "linux"))]
const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// A file a write tool may change, resolved once: the directory it is in (or the deepest one of
/// its directories that exists), opened, and what lies beneath it.
#[derive(Debug)]
pub(crate) struct Target {
    /// The path as the caller gave it, for messages.
    shown: PathBuf,
    /// The real path checked against every limit.
    real: PathBuf,
    /// The deepest existing directory of `real`, opened `O_PATH`.
    dir: OwnedFd,
    /// The directories to create beneath `dir` before the file can be made.
    missing: Vec<OsString>,
    /// The file's name in its directory.
    name: OsString,
}

/// The refusal when something on the way changed after the path was resolved.
fn changed(shown: &Path, what: &str) -> String {
    format!(
        "{} was not written: {what} changed while it was being written (a symbolic link on the way was \
         swapped in); nothing was written",
        shown.display()
    )
}

/// The limit a real path breaks, if any: the sandbox (read-only, or outside the writable set),
/// the read roots, or one of the `deny` rules for `tool` (`None`: a restore, which the rules do
/// not govern). Checked on the path alone, which is already resolved.
fn refusal(real: &Path, shown: &Path, ctx: &ToolContext, tool: Option<ToolName>) -> Option<String> {
    let sandbox = &ctx.sandbox;
    match sandbox.mode() {
        Sandbox::Off => {}
        Sandbox::ReadOnly => return sandbox.check_write(shown).err(),
        Sandbox::WorkspaceWrite => {
            if !sandbox.writable_dirs().iter().any(|dir| real.starts_with(dir)) {
                let listed: Vec<String> = sandbox
                    .writable_dirs()
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect();
                return Some(format!(
                    "{} is outside the directories the sandbox lets tools write ({}); add its directory to \
                     `[tools] writable_roots` to allow it",
                    real.display(),
                    listed.join(", ")
                ));
            }
        }
    }
    if let Some(roots) = ctx.roots.dirs() {
        if !roots.iter().any(|root| real.starts_with(root)) {
            let listed: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
            return Some(format!(
                "{} is outside the directories file tools may use ([tools] read_roots: {})",
                real.display(),
                listed.join(", ")
            ));
        }
    }
    let tool = tool?;
    let subjects = resolved_path_subjects(real, &ctx.cwd);
    denied(&ctx.deny, tool, &subjects, shown, real)
}

/// The refusal of the first `deny` rule that covers the call.
fn denied(deny: &[Rule], tool: ToolName, subjects: &Subjects, shown: &Path, real: &Path) -> Option<String> {
    let rule = deny.iter().find(|r| r.covers(tool, subjects))?;
    let resolved = if real == shown {
        String::new()
    } else {
        format!(" (it resolves to {})", real.display())
    };
    Some(format!(
        "the {tool} call is denied by the rule `{rule}` ([tools] deny): {}{resolved}",
        shown.display()
    ))
}

/// The directory the walk starts from: the writable directory `real` lies in (sandbox on), else
/// the read root it lies in, else `/`. The longest match, so the walk is as short as it can be.
fn base_for(real: &Path, ctx: &ToolContext) -> PathBuf {
    let candidates: &[PathBuf] = if ctx.sandbox.mode() == Sandbox::WorkspaceWrite {
        ctx.sandbox.writable_dirs()
    } else {
        ctx.roots.dirs().unwrap_or(&[])
    };
    candidates
        .iter()
        .filter(|dir| real.starts_with(dir))
        .max_by_key(|dir| dir.as_os_str().len())
        .cloned()
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// The names of a resolved path's components, or `None` if it holds anything but plain names.
fn plain_names(path: &Path) -> Option<Vec<OsString>> {
    path.components()
        .map(|c| match c {
            Component::Normal(name) => Some(name.to_owned()),
            _ => None,
        })
        .collect()
}

/// How [`open_beneath`] walks: with `openat2` when the kernel has it, else component by
/// component. Tests force the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walk {
    /// `openat2` first, the component walk where the kernel lacks it.
    Best,
    /// Only the component walk.
    #[cfg(test)]
    ComponentsOnly,
}

/// Opens the directory `names` beneath `base`, following no symbolic link: the deepest of them
/// that exists, and the names beneath it that do not. `Err` is the errno and the index of the
/// component that failed.
fn open_beneath(base: OwnedFd, names: &[OsString], walk: Walk) -> Result<(OwnedFd, Vec<OsString>), (Errno, usize)> {
    if names.is_empty() {
        return Ok((base, Vec::new()));
    }
    #[cfg(target_os = "linux")]
    if walk == Walk::Best {
        use nix::fcntl::{openat2, OpenHow, ResolveFlag};
        let rel: PathBuf = names.iter().collect();
        let how = OpenHow::new().flags(DIR_FLAGS).resolve(
            ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        );
        match openat2(base.as_fd(), &rel, how) {
            Ok(fd) => return Ok((fd, Vec::new())),
            // Something is missing: the walk finds what.
            Err(Errno::ENOENT) => {}
            // No openat2 here (an old kernel, or a seccomp filter that does not know it).
            Err(Errno::ENOSYS | Errno::EPERM) => {}
            // A link (ELOOP), a file where a directory should be: the walk says which.
            Err(_) => {}
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = walk;
    let mut dir = base;
    for (i, name) in names.iter().enumerate() {
        match nix::fcntl::openat(dir.as_fd(), name.as_os_str(), DIR_FLAGS, Mode::empty()) {
            Ok(next) => dir = next,
            Err(Errno::ENOENT) => return Ok((dir, names[i..].to_vec())),
            Err(e) => return Err((e, i)),
        }
    }
    Ok((dir, Vec::new()))
}

/// Where the open descriptor `fd` is, as the kernel reports it; `None` where it cannot be asked.
fn where_is(fd: &OwnedFd) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()
}

/// Resolves `path` (absolute) once for a write by `tool` (`None`: a rewind's restore), checks the
/// real path against the sandbox, the read roots and the deny rules, and opens its directory (see
/// the module documentation). Blocking.
pub(crate) fn resolve(path: &Path, ctx: &ToolContext, tool: Option<ToolName>) -> Result<Target, String> {
    resolve_with(path, ctx, tool, Walk::Best)
}

/// [`resolve`], walking as `walk` says.
pub(crate) fn resolve_with(
    path: &Path,
    ctx: &ToolContext,
    tool: Option<ToolName>,
    walk: Walk,
) -> Result<Target, String> {
    let cannot = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    let absolute = std::path::absolute(path).map_err(|e| cannot(&e))?;
    let real = real_path(&absolute).map_err(|e| cannot(&e))?;
    if let Some(why) = refusal(&real, path, ctx, tool) {
        return Err(why);
    }
    let (Some(parent), Some(name)) = (real.parent(), real.file_name().map(OsStr::to_owned)) else {
        return Err(cannot(&"it names no file"));
    };
    let base = base_for(&real, ctx);
    let names = parent
        .strip_prefix(&base)
        .ok()
        .and_then(plain_names)
        .ok_or_else(|| cannot(&format!("its real path {} is not a plain path", real.display())))?;
    let base_names = base
        .strip_prefix("/")
        .ok()
        .and_then(plain_names)
        .ok_or_else(|| cannot(&format!("{} is not a plain path", base.display())))?;
    let root = nix::fcntl::open("/", DIR_FLAGS, Mode::empty()).map_err(|e| cannot(&e))?;
    // The base is a resolved path: opened following no link, like everything beneath it.
    let base_fd = match open_beneath(root, &base_names, walk) {
        Ok((fd, missing)) if missing.is_empty() => fd,
        Ok(_) => return Err(cannot(&format!("{} does not exist", base.display()))),
        Err((Errno::ELOOP | Errno::ENOTDIR, _)) => return Err(changed(path, &base.display().to_string())),
        Err((e, _)) => return Err(cannot(&format!("{}: {e}", base.display()))),
    };
    let (dir, missing) = match open_beneath(base_fd, &names, walk) {
        Ok(opened) => opened,
        Err((e, at)) => {
            let on_the_way: PathBuf = base.join(names[..=at].iter().collect::<PathBuf>());
            return Err(match e {
                Errno::ELOOP | Errno::ENOTDIR => match std::fs::symlink_metadata(&on_the_way) {
                    Ok(meta) if !meta.is_dir() && !meta.file_type().is_symlink() => cannot(&format!(
                        "{} is {}, not a directory",
                        on_the_way.display(),
                        if meta.is_file() {
                            "a file"
                        } else {
                            files::kind(meta.file_type())
                        }
                    )),
                    _ => changed(path, &on_the_way.display().to_string()),
                },
                e => cannot(&format!("{}: {e}", on_the_way.display())),
            });
        }
    };
    let opened_at: PathBuf = {
        let existing = names.len() - missing.len();
        base.join(names[..existing].iter().collect::<PathBuf>())
    };
    if let Some(actual) = where_is(&dir) {
        if actual != opened_at {
            return Err(changed(path, &opened_at.display().to_string()));
        }
    }
    Ok(Target {
        shown: path.to_path_buf(),
        real,
        dir,
        missing,
        name,
    })
}

/// What is at a target before it is written.
pub(crate) enum Current {
    /// A regular file's content, or `None`: nothing there.
    Content(Option<Vec<u8>>),
    /// Something that is not a regular file, or a file larger than the cap.
    Foreign,
}

impl Target {
    /// The real path every limit was checked against, and the one the opened directory was
    /// verified to lead to.
    pub(crate) fn real(&self) -> &Path {
        &self.real
    }

    /// Opens the existing file for reading, relative to the directory: `None` when there is none.
    fn open_existing(&self) -> Result<Option<(File, Metadata)>, String> {
        if !self.missing.is_empty() {
            return Ok(None);
        }
        let flags = FILE_FLAGS | OFlag::O_RDONLY;
        let file = match nix::fcntl::openat(self.dir.as_fd(), self.name.as_os_str(), flags, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(Errno::ENOENT) => return Ok(None),
            Err(Errno::ELOOP) => return Err(changed(&self.shown, &self.real.display().to_string())),
            Err(e) => return Err(self.open_error(e, "read")),
        };
        let meta = file.metadata().map_err(|e| self.cannot("read", &e))?;
        if !meta.is_file() {
            return Err(files::not_regular(&self.shown, meta.file_type(), "write"));
        }
        Ok(Some((file, meta)))
    }

    /// The file's content, `None` when there is none; refused beyond `cap` bytes or when it is not
    /// a regular file.
    pub(crate) fn content(&self, cap: u64) -> Result<Option<Vec<u8>>, String> {
        match self.current(cap)? {
            Current::Content(bytes) => Ok(bytes),
            Current::Foreign => Err(format!(
                "{} holds more than the {cap} bytes the file tools read",
                self.shown.display()
            )),
        }
    }

    /// What is there now: a regular file's content up to `cap` bytes, nothing, or something else.
    pub(crate) fn current(&self, cap: u64) -> Result<Current, String> {
        let opened = match self.open_existing() {
            Ok(opened) => opened,
            Err(_) if self.exists_not_regular() => return Ok(Current::Foreign),
            Err(e) => return Err(e),
        };
        let Some((file, meta)) = opened else {
            return Ok(Current::Content(None));
        };
        match files::read_bounded(file, meta.len(), cap) {
            Ok(Some(bytes)) => Ok(Current::Content(Some(bytes))),
            Ok(None) => Ok(Current::Foreign),
            Err(e) => Err(self.cannot("read", &e)),
        }
    }

    /// Whether something other than a regular file (or a link) is at the name.
    fn exists_not_regular(&self) -> bool {
        self.missing.is_empty()
            && nix::sys::stat::fstatat(
                self.dir.as_fd(),
                self.name.as_os_str(),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .is_ok_and(|st| {
                let kind = st.st_mode & nix::libc::S_IFMT;
                kind != nix::libc::S_IFREG && kind != nix::libc::S_IFLNK
            })
    }

    /// "cannot VERB PATH: ERROR".
    fn cannot(&self, verb: &str, e: &dyn std::fmt::Display) -> String {
        format!("cannot {verb} {}: {e}", self.shown.display())
    }

    /// Why an open failed: what the name is when it is not a regular file (a FIFO cannot be
    /// opened for writing without a reader), else the error.
    fn open_error(&self, e: Errno, verb: &str) -> String {
        match std::fs::symlink_metadata(self.real_now()) {
            Ok(meta) if !meta.is_file() && !meta.file_type().is_symlink() => {
                files::not_regular(&self.shown, meta.file_type(), "write")
            }
            _ => self.cannot(verb, &std::io::Error::from(e)),
        }
    }

    /// The file's path through the open directory, for a look at what is there (never a write).
    fn real_now(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.dir.as_raw_fd())).join(&self.name)
    }

    /// Makes the missing directories, each beneath the one before and opened without following a
    /// link: the directory the file goes in.
    fn make_dirs(&self) -> Result<OwnedFd, String> {
        let mut dir = self.dir.try_clone().map_err(|e| self.cannot("write", &e))?;
        for name in &self.missing {
            match nix::sys::stat::mkdirat(dir.as_fd(), name.as_os_str(), Mode::from_bits_truncate(0o777)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => {
                    return Err(format!(
                        "cannot create directory {} for {}: {e}",
                        name.to_string_lossy(),
                        self.shown.display()
                    ))
                }
            }
            dir = match nix::fcntl::openat(dir.as_fd(), name.as_os_str(), DIR_FLAGS, Mode::empty()) {
                Ok(next) => next,
                Err(Errno::ELOOP | Errno::ENOTDIR) => {
                    return Err(changed(&self.shown, &name.to_string_lossy()));
                }
                Err(e) => return Err(self.cannot("write", &e)),
            };
        }
        Ok(dir)
    }

    /// Removes the file, relative to its directory.
    pub(crate) fn remove(&self) -> Result<(), String> {
        if !self.missing.is_empty() {
            return Err(self.cannot("remove", &std::io::Error::from(Errno::ENOENT)));
        }
        nix::unistd::unlinkat(
            self.dir.as_fd(),
            self.name.as_os_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        )
        .map_err(|e| self.cannot("remove", &e))
    }

    /// Replaces the content of the regular file with `bytes`, creating it (and its missing
    /// directories) when there is none; anything that is not a regular file is refused before a
    /// byte is written.
    ///
    /// The new content goes to a temporary file beside the target, synced, and renamed over it,
    /// so a kill or a crash at any moment leaves the file with its old content or its new one,
    /// never a truncated mix (a rewind relies on that). The replaced file keeps its permission
    /// bits, and its owner where the process may set it. Where a rename would change what the file
    /// is, the content is written in place instead: the file has other hard links (a rename would
    /// part them), its directory does not let panto create the temporary file, or its owner cannot
    /// be kept.
    pub(crate) fn write(&self, bytes: &[u8]) -> Result<(), String> {
        let dir = self.make_dirs()?;
        let flags = FILE_FLAGS | OFlag::O_WRONLY;
        // Opening the existing file for writing proves panto may write it (a read-only file is
        // not replaced behind its mode's back).
        let existing = match nix::fcntl::openat(dir.as_fd(), self.name.as_os_str(), flags, Mode::empty()) {
            Ok(fd) => Some(File::from(fd)),
            Err(Errno::ENOENT) => None,
            Err(Errno::ELOOP) => return Err(changed(&self.shown, &self.real.display().to_string())),
            Err(e) => return Err(self.open_error(e, "write")),
        };
        let Some(file) = existing else {
            return self.replace(&dir, None, bytes).map_err(|e| e.describe(self));
        };
        let failed = |e: std::io::Error| self.cannot("write", &e);
        let meta = file.metadata().map_err(failed)?;
        if !meta.is_file() {
            return Err(files::not_regular(&self.shown, meta.file_type(), "write"));
        }
        if meta.nlink() == 1 {
            match self.replace(&dir, Some(&meta), bytes) {
                Err(Replace::Unusable(_)) => {}
                done => return done.map_err(|e| e.describe(self)),
            }
        }
        write_in_place(file, bytes).map_err(failed)
    }

    /// Writes `bytes` to a new temporary file in `dir`, with the permission bits and owner of the
    /// file it replaces (`existing`), syncs it and renames it over the name. The temporary file
    /// is removed on every failure.
    fn replace(&self, dir: &OwnedFd, existing: Option<&Metadata>, bytes: &[u8]) -> Result<(), Replace> {
        let (mut tmp, tmp_name) = create_beside(dir, &self.name, existing.is_some()).map_err(|e| match e {
            Errno::EACCES | Errno::EPERM | Errno::EROFS => Replace::Unusable(e.into()),
            e => Replace::Failed(e.into()),
        })?;
        let result = (|| {
            if let Some(meta) = existing {
                let made = tmp.metadata().map_err(Replace::Failed)?;
                if (made.uid(), made.gid()) != (meta.uid(), meta.gid()) {
                    std::os::unix::fs::fchown(&tmp, Some(meta.uid()), Some(meta.gid())).map_err(Replace::Unusable)?;
                }
                // After the owner: changing it clears set-user-ID and set-group-ID bits.
                tmp.set_permissions(Permissions::from_mode(meta.mode() & 0o7777))
                    .map_err(Replace::Failed)?;
            }
            tmp.write_all(bytes).map_err(Replace::Failed)?;
            // Synced before the rename: otherwise a crash of the machine could keep the rename
            // and lose the content, leaving the file empty.
            tmp.sync_data().map_err(Replace::Failed)?;
            nix::fcntl::renameat(dir.as_fd(), tmp_name.as_os_str(), dir.as_fd(), self.name.as_os_str())
                .map_err(|e| Replace::Failed(e.into()))
        })();
        if result.is_err() {
            let _ = nix::unistd::unlinkat(
                dir.as_fd(),
                tmp_name.as_os_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        }
        result
    }
}

/// Truncates `file` and writes `bytes` into it: a kill between the two leaves it partial, so
/// this is only for files a rename would change in another way.
fn write_in_place(mut file: File, bytes: &[u8]) -> std::io::Result<()> {
    file.set_len(0)?;
    file.write_all(bytes)
}

/// Why [`Target::replace`] did not replace the file.
enum Replace {
    /// A rename cannot replace this file faithfully (no temporary file in its directory, its owner
    /// not kept); nothing was changed. For a file that exists, writing in place is the way left.
    Unusable(std::io::Error),
    /// Writing, syncing or renaming failed; nothing was changed.
    Failed(std::io::Error),
}

impl Replace {
    /// The write's error, naming the target.
    fn describe(self, target: &Target) -> String {
        match self {
            Replace::Unusable(e) | Replace::Failed(e) => target.cannot("write", &e),
        }
    }
}

/// Creates a new temporary file in `dir`, named after `name` (`.name.panto-PID-N.tmp`) so that
/// one a kill left behind says whose it is. Mode 0600 while it is written when it is `replacing`
/// a file (that file's bits are set before the rename); otherwise the mode a new file gets.
fn create_beside(dir: &OwnedFd, name: &OsStr, replacing: bool) -> Result<(File, OsString), Errno> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = name.as_bytes();
    // Room for the decoration within a file name's 255 bytes.
    let name = &name[..name.len().min(200)];
    let mode = Mode::from_bits_truncate(if replacing { 0o600 } else { 0o666 });
    loop {
        let mut tmp_name = b".".to_vec();
        tmp_name.extend_from_slice(name);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        tmp_name.extend_from_slice(format!(".panto-{}-{n}.tmp", std::process::id()).as_bytes());
        let tmp_name = OsString::from(OsStr::from_bytes(&tmp_name));
        let flags = FILE_FLAGS | OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL;
        match nix::fcntl::openat(dir.as_fd(), tmp_name.as_os_str(), flags, mode) {
            Ok(fd) => return Ok((File::from(fd), tmp_name)),
            // Left by a process with the same id before: take the next name.
            Err(Errno::EEXIST) => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::sync::Arc;

    use super::*;
    use crate::testing::context;

    const WALKS: [Walk; 2] = [Walk::Best, Walk::ComponentsOnly];

    /// A work directory with a real directory `d`, and a directory outside it; both resolved.
    fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (work, outside) = (base.join("work"), base.join("outside"));
        std::fs::create_dir_all(work.join("d")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        (dir, work, outside)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_link_on_the_way_is_refused_by_both_walks() {
        let (_dir, work, outside) = tree();
        symlink(&outside, work.join("d/link")).unwrap();
        for walk in WALKS {
            let base = nix::fcntl::open(&work, DIR_FLAGS, Mode::empty()).unwrap();
            let names: Vec<OsString> = ["d", "link", "x"].iter().map(OsString::from).collect();
            let e = open_beneath(base, &names, walk).unwrap_err();
            assert!(matches!(e, (Errno::ELOOP | Errno::ENOTDIR, 1)), "{walk:?}: {e:?}");
            // What does not exist yet is reported, not refused.
            let base = nix::fcntl::open(&work, DIR_FLAGS, Mode::empty()).unwrap();
            let names: Vec<OsString> = ["d", "new", "sub"].iter().map(OsString::from).collect();
            let (_, missing) = open_beneath(base, &names, walk).unwrap();
            assert_eq!(missing, [OsString::from("new"), OsString::from("sub")], "{walk:?}");
        }
    }

    #[test]
    fn a_resolved_target_is_written_where_it_was_resolved_whatever_the_path_becomes() {
        for walk in WALKS {
            let (_dir, work, outside) = tree();
            let ctx = context(&work);
            let existing = resolve_with(&work.join("d/f.txt"), &ctx, Some(ToolName::Write), walk).unwrap();
            let missing = resolve_with(&work.join("d/new/sub/g.txt"), &ctx, Some(ToolName::Write), walk).unwrap();
            // The directory is swapped for a link out after the check.
            std::fs::rename(work.join("d"), work.join("d.old")).unwrap();
            symlink(&outside, work.join("d")).unwrap();
            existing.write(b"one").unwrap();
            missing.write(b"two").unwrap();
            assert_eq!(std::fs::read(work.join("d.old/f.txt")).unwrap(), b"one", "{walk:?}");
            assert_eq!(
                std::fs::read(work.join("d.old/new/sub/g.txt")).unwrap(),
                b"two",
                "{walk:?}"
            );
            assert_eq!(names(&outside), Vec::<String>::new(), "{walk:?}");
            assert_eq!(existing.content(100).unwrap().as_deref(), Some(&b"one"[..]));
            existing.remove().unwrap();
            assert!(!work.join("d.old/f.txt").exists());
        }
    }

    #[test]
    fn the_deny_rules_judge_the_real_path() {
        let (_dir, work, outside) = tree();
        symlink(&outside, work.join("out")).unwrap();
        let mut ctx = context(&work);
        ctx.deny = vec![Rule::parse(&format!("write({}/*)", outside.display())).unwrap()].into();
        let e = resolve(&work.join("out/f.txt"), &ctx, Some(ToolName::Write)).unwrap_err();
        assert!(
            e.contains("denied by the rule") && e.contains("resolves to") && e.contains("outside/f.txt"),
            "{e}"
        );
        // A restore is not the tool's call: the rules do not govern it.
        assert!(resolve(&work.join("out/f.txt"), &ctx, None).is_ok());
        ctx.deny = Arc::new([]);
        ctx.sandbox = Arc::new(crate::sandbox::SandboxConfig::new(Sandbox::WorkspaceWrite, false, &work, &[]).unwrap());
        // (Escapes from the sandbox are tested end to end in tests/write_race.rs, with an outside
        // directory checked to lie outside every writable root.)
        assert!(resolve(&work.join("d/f.txt"), &ctx, Some(ToolName::Write)).is_ok());
    }
}
