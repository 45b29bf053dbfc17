//! A directory that lies outside every directory the sandbox lets tools write, for tests that
//! check a sandboxed tool cannot change something "outside".
//!
//! The sandbox's writable set in `workspace-write` is the working directory, `/tmp`, `/var/tmp`,
//! `/dev/shm`, `$TMPDIR` and `writable_roots`. A test's own target directory is outside them in
//! an ordinary checkout, but not in one under `/tmp`; then another place is taken.

use std::path::{Path, PathBuf};

/// The temp directories the sandbox makes writable (besides the workspace and `writable_roots`).
fn writable_temps() -> Vec<PathBuf> {
    [
        std::env::temp_dir(),
        "/tmp".into(),
        "/var/tmp".into(),
        "/dev/shm".into(),
    ]
    .iter()
    .filter_map(|p| p.canonicalize().ok())
    .collect()
}

/// Whether `dir` (an existing directory) lies outside every temp directory the sandbox makes
/// writable.
pub fn is_outside_writable_temps(dir: &Path) -> bool {
    let Ok(real) = dir.canonicalize() else { return false };
    !writable_temps().iter().any(|t| real.starts_with(t))
}

/// Whether every user can reach `path`: it and each directory above it let others search (or,
/// for a file, execute) it. For a test that re-runs itself as an unprivileged user.
pub fn is_reachable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(real) = path.canonicalize() else { return false };
    real.ancestors()
        .all(|p| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// A directory in which a test can make its "outside" directories: `target_tmpdir` (the test's
/// `CARGO_TARGET_TMPDIR`) when it is outside the sandbox's temp directories, else the first of
/// `/var/cache`, `/srv`, `/opt`, `/mnt` and `$HOME` that is outside them and where this user can
/// make a directory. Panics naming every place tried when there is none: the test could not
/// tell an escape from a permitted write.
pub fn outside_base(target_tmpdir: &Path) -> PathBuf {
    outside_base_where(target_tmpdir, |_| true)
}

/// [`outside_base`], taking only a place every user can reach ([`is_reachable_by_others`]), for
/// a test that hands its directory to an unprivileged user.
pub fn outside_base_reachable_by_others(target_tmpdir: &Path) -> PathBuf {
    outside_base_where(target_tmpdir, is_reachable_by_others)
}

fn outside_base_where(target_tmpdir: &Path, accept: impl Fn(&Path) -> bool) -> PathBuf {
    let mut candidates = vec![target_tmpdir.to_path_buf()];
    candidates.extend(["/var/cache", "/srv", "/opt", "/mnt"].map(PathBuf::from));
    candidates.extend(std::env::var_os("HOME").map(PathBuf::from));
    let usable = |dir: &Path| {
        if !is_outside_writable_temps(dir) || !accept(dir) {
            return false;
        }
        let probe = dir.join(format!(".panto-outside-probe-{}", std::process::id()));
        let made = std::fs::create_dir(&probe).is_ok();
        let _ = std::fs::remove_dir(&probe);
        made
    };
    candidates
        .iter()
        .find(|dir| usable(dir))
        .and_then(|dir| dir.canonicalize().ok())
        .unwrap_or_else(|| {
            panic!(
                "no directory outside the sandbox's writable temp directories ({:?}) where this user can \
                 make one (and, where needed, every user can reach); tried {candidates:?}",
                writable_temps()
            )
        })
}
