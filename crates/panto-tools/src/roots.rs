//! `[tools] read_roots`: the directories the file tools may touch.
//!
//! Every file tool (`read`, `write`, `edit`, and any tool added later that takes a path) gets its
//! path through [`Roots::check`], the one place the rule lives. With roots configured, the path
//! is resolved the way the kernel will resolve it (symbolic links followed, `..` applied to the
//! real directory it lands in, a path that does not exist yet resolved through its existing
//! prefix) and refused unless the result lies inside a root; so a symlink inside a root that points
//! outside it is refused. After opening, [`Roots::check_opened`] checks the file actually opened,
//! so a link swapped in between the check and the open is caught too.
//!
//! The `bash` tool is not confined: a shell can reach any file the user can. A service that needs
//! confinement offers only the file tools.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// How many symbolic links one path may pass through, as the kernel's limit (`ELOOP`).
const MAX_LINK_HOPS: usize = 40;

/// The directories file tools are confined to; unrestricted by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roots(Option<Arc<[PathBuf]>>);

impl Roots {
    /// No confinement: every path the user can reach.
    pub fn unrestricted() -> Self {
        Roots(None)
    }

    /// Confined to `roots`, which must be absolute and already resolved (canonical).
    pub fn new(roots: Vec<PathBuf>) -> Self {
        Roots(Some(roots.into()))
    }

    /// The roots, or `None` when unrestricted.
    pub fn dirs(&self) -> Option<&[PathBuf]> {
        self.0.as_deref()
    }

    /// The roots as a list for messages.
    fn listed(roots: &[PathBuf]) -> String {
        roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The path a file tool should open for the absolute `path`: itself when unrestricted, else
    /// its resolved real path, when that lies inside a root. The error names the path, what it
    /// resolves to, and the roots.
    pub fn check(&self, path: &Path) -> Result<PathBuf, String> {
        let Some(roots) = self.dirs() else {
            return Ok(path.to_path_buf());
        };
        let real = real_path(path).map_err(|e| format!("cannot resolve {}: {e}", path.display()))?;
        if roots.iter().any(|root| real.starts_with(root)) {
            return Ok(real);
        }
        let resolved = if real == path {
            String::new()
        } else {
            format!(" (it resolves to {})", real.display())
        };
        Err(format!(
            "{}{resolved} is outside the directories file tools may use ([tools] read_roots: {})",
            path.display(),
            Self::listed(roots)
        ))
    }

    /// Checks that `file`, opened from `path`, really is inside a root (Linux: by the path the
    /// kernel reports for the descriptor). Where that cannot be asked, the check of
    /// [`Roots::check`] stands.
    pub fn check_opened(&self, file: &File, path: &Path) -> Result<(), String> {
        use std::os::fd::AsRawFd;
        let Some(roots) = self.dirs() else {
            return Ok(());
        };
        let Ok(opened) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) else {
            return Ok(());
        };
        if roots.iter().any(|root| opened.starts_with(root)) {
            return Ok(());
        }
        Err(format!(
            "{} changed while it was opened and now is {}, outside the directories file tools may use \
             ([tools] read_roots: {})",
            path.display(),
            opened.display(),
            Self::listed(roots)
        ))
    }
}

/// Resolves the absolute `path` as the kernel would: symbolic links followed, `.` dropped, `..`
/// taking the parent of the real directory reached so far. Components that do not exist are kept
/// as written, so a file about to be created resolves through its existing prefix.
pub(crate) fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let mut resolved = PathBuf::from("/");
    push_components(&mut pending, path, &mut resolved);
    let mut hops = 0usize;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            resolved.pop();
            continue;
        }
        let next = resolved.join(&name);
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_LINK_HOPS {
                    return Err(std::io::Error::other(format!(
                        "more than {MAX_LINK_HOPS} symbolic links on the way"
                    )));
                }
                let target = std::fs::read_link(&next)?;
                // The target's components come first, then what was still pending after the link.
                let rest = std::mem::take(&mut pending);
                push_components(&mut pending, &target, &mut resolved);
                pending.extend(rest);
            }
            // A real entry, or one that does not exist (yet): either way the name is what it is.
            _ => resolved = next,
        }
    }
    Ok(resolved)
}

/// Queues the components of `path`; an absolute `path` restarts `resolved` at the root.
fn push_components(pending: &mut VecDeque<OsString>, path: &Path, resolved: &mut PathBuf) {
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => {
                pending.clear();
                *resolved = PathBuf::from("/");
            }
            Component::CurDir => {}
            Component::ParentDir => pending.push_back("..".into()),
            Component::Normal(name) => pending.push_back(name.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// A temporary tree: `root/inside.txt`, `outside/secret.txt`, and the resolved paths of both
    /// directories.
    fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("inside.txt"), "ok").unwrap();
        std::fs::write(outside.join("secret.txt"), "no").unwrap();
        (dir, root, outside)
    }

    #[test]
    fn unrestricted_passes_paths_through_unchanged() {
        let p = Path::new("/etc/../etc/passwd");
        assert_eq!(Roots::unrestricted().check(p).unwrap(), p);
    }

    #[test]
    fn paths_inside_pass_and_paths_outside_are_refused_naming_the_roots() {
        let (_dir, root, outside) = tree();
        let roots = Roots::new(vec![root.clone()]);
        assert_eq!(roots.check(&root.join("inside.txt")).unwrap(), root.join("inside.txt"));
        assert_eq!(
            roots.check(&root.join("new/dir/file.txt")).unwrap(),
            root.join("new/dir/file.txt"),
            "a path to be created resolves through its existing prefix"
        );
        let e = roots.check(&outside.join("secret.txt")).unwrap_err();
        assert!(
            e.contains("secret.txt") && e.contains(&root.display().to_string()),
            "{e}"
        );
        let e = roots.check(&root.join("../outside/secret.txt")).unwrap_err();
        assert!(e.contains("resolves to") && e.contains("outside/secret.txt"), "{e}");
    }

    #[test]
    fn symlinks_are_followed_wherever_they_are() {
        let (_dir, root, outside) = tree();
        symlink(outside.join("secret.txt"), root.join("link.txt")).unwrap();
        symlink(&outside, root.join("dirlink")).unwrap();
        symlink("../outside", root.join("rel")).unwrap();
        symlink(outside.join("not-yet"), root.join("dangling")).unwrap();
        let roots = Roots::new(vec![root.clone()]);
        for escape in [
            "link.txt",
            "dirlink/secret.txt",
            "rel/secret.txt",
            "dangling",
            "missing/../dirlink/new.txt",
        ] {
            let e = roots.check(&root.join(escape)).unwrap_err();
            assert!(e.contains("resolves to") && e.contains("read_roots"), "{escape}: {e}");
        }
        // A link that stays inside is fine, and `..` after a link applies to its target.
        symlink(root.join("inside.txt"), root.join("ok-link")).unwrap();
        assert_eq!(roots.check(&root.join("ok-link")).unwrap(), root.join("inside.txt"));
        std::fs::create_dir(root.join("sub")).unwrap();
        symlink(root.join("sub"), outside.join("back")).unwrap();
        let roots_outside = Roots::new(vec![outside.clone()]);
        assert!(
            roots_outside.check(&outside.join("back/../x")).is_err(),
            "back/.. is root/"
        );
    }

    #[test]
    fn link_loops_are_an_error_not_a_hang() {
        let (_dir, root, _) = tree();
        symlink(root.join("b"), root.join("a")).unwrap();
        symlink(root.join("a"), root.join("b")).unwrap();
        let e = Roots::new(vec![root.clone()]).check(&root.join("a")).unwrap_err();
        assert!(e.contains("symbolic links"), "{e}");
    }
}
