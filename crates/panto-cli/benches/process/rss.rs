//! Peak resident memory of one run, the kernel's for that process alone.
//!
//! The probe is the floor program's `rss` mode (`floor.c`): a small C process that forks, runs
//! the command, waits for it with `wait4` and prints the child's `ru_maxrss`. The child is forked
//! from the probe, not from this bench, because a child's peak includes the peak of the memory
//! it had before `exec`: a child of this large process (and `std`'s `Command` starts children by
//! `vfork`, sharing this process's memory until `exec`) would report this process's peak.

use std::path::Path;
use std::process::{Command, Stdio};

/// The peak RSS in KiB of `command` (its environment and working directory already set), run by
/// the probe `probe`.
pub fn peak_kib(probe: &Path, command: &Command) -> u64 {
    let mut run = Command::new(probe);
    run.env_clear();
    for (k, v) in command.get_envs() {
        if let Some(v) = v {
            run.env(k, v);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        run.current_dir(dir);
    }
    run.arg("rss").arg(command.get_program()).args(command.get_args());
    let out = run
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("starting the rss probe: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        panic!(
            "the rss probe failed for {}: {}",
            Path::new(command.get_program()).display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("the rss probe printed {text:?}, not a number"))
}
