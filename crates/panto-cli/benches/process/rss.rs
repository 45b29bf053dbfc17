//! Peak resident memory of one `panto` run.
//!
//! `getrusage(RUSAGE_CHILDREN)` reports the largest peak of every child a process has waited
//! for, so it can only attribute a peak to one command in a process that has exactly one child.
//! The bench therefore re-runs its own executable as a probe (selected by [`PROBE_ENV`]) that
//! starts the command, waits for it, and prints its peak in KiB.

use std::path::Path;
use std::process::{Command, Stdio};

use nix::sys::resource::{getrusage, UsageWho};

/// Set in the probe's environment; its value is unused.
pub const PROBE_ENV: &str = "PANTO_BENCH_RSS_PROBE";

/// Whether this process was started as a probe.
pub fn is_probe() -> bool {
    std::env::var_os(PROBE_ENV).is_some()
}

/// The probe's whole job: run the command after `--`, fail if it fails, print its peak RSS.
pub fn probe_main() {
    let args: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
    let Some((program, rest)) = args.split_first() else {
        panic!("rss probe: no command after --");
    };
    let out = Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("rss probe: cannot start {program}: {e}"));
    if !out.status.success() {
        panic!(
            "rss probe: {program} {rest:?} failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap_or_else(|e| panic!("rss probe: getrusage: {e}"));
    // Linux reports ru_maxrss in KiB. Stdout is how the probe answers the bench.
    #[allow(clippy::print_stdout)]
    {
        println!("{}", usage.max_rss());
    }
}

/// The peak RSS in KiB of `command` (a `panto` invocation with its environment and working
/// directory already set), measured by a probe process.
pub fn peak_kib(command: &Command) -> u64 {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("the bench's own path: {e}"));
    let mut probe = Command::new(exe);
    probe.env_clear();
    for (k, v) in command.get_envs() {
        if let Some(v) = v {
            probe.env(k, v);
        }
    }
    probe.env(PROBE_ENV, "1");
    if let Some(dir) = command.get_current_dir() {
        probe.current_dir(dir);
    }
    probe.arg("--").arg(command.get_program()).args(command.get_args());
    let out = probe
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
