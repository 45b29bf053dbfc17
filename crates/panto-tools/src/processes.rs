//! Finding and killing what a bash call left behind.
//!
//! A command runs in its own process group, so `killpg` ends its pipelines and plain background
//! jobs (`sleep 1000 &`). A process that leaves the group (`setsid`, a double fork, a daemon) is
//! out of `killpg`'s reach; it is found by a marker instead: every call's bash gets
//! `PANTO_BASH_CALL=<marker>` in its environment, which its descendants inherit, and the kernel
//! shows a process's initial environment in `/proc/PID/environ`. At the end of every call, both
//! kinds are killed, rescanning until none is left (killing a parent can free children that were
//! waiting for it), and the call's result says what was killed and what could not be.
//!
//! A process that both leaves the group and clears its environment (`setsid env -i …`) cannot be
//! told from any other process of the user's and is not found; bash is no sandbox.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// The environment variable that marks a call's processes.
pub(crate) const MARKER_VAR: &str = "PANTO_BASH_CALL";

/// How long cleanup keeps killing and looking before it reports what is left.
const CLEANUP_DEADLINE: Duration = Duration::from_secs(2);

/// A fresh marker for one call: panto's pid and a counter, so two pantos never share one.
pub(crate) fn new_marker() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}", std::process::id(), CALLS.fetch_add(1, Ordering::Relaxed))
}

/// What cleanup did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Cleanup {
    /// Processes found and killed.
    pub killed: BTreeSet<i32>,
    /// Processes still alive at the deadline (not ours to kill, or stuck in the kernel).
    pub survivors: BTreeSet<i32>,
    /// Whether processes could be looked for at all (`/proc` readable). Without it, only the
    /// process group was signalled.
    pub searched: bool,
}

impl Cleanup {
    /// The line the tool result carries, or `None` when there was nothing to say.
    pub(crate) fn note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.killed.is_empty() {
            let n = self.killed.len();
            parts.push(format!(
                "killed {n} process{} the command left running: pid {}",
                if n == 1 { "" } else { "es" },
                list(&self.killed)
            ));
        }
        if !self.survivors.is_empty() {
            parts.push(format!("could not kill: pid {} (left running)", list(&self.survivors)));
        }
        if !self.searched {
            parts.push(
                "the process group was killed, but processes that left it could not be looked for (no /proc)"
                    .to_owned(),
            );
        }
        (!parts.is_empty()).then(|| format!("[{}]", parts.join("; ")))
    }
}

fn list(pids: &BTreeSet<i32>) -> String {
    pids.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
}

/// The processes of one bash call: its group, its marker, and when its bash started.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    group: i32,
    marker: String,
    /// bash's start time in clock ticks since boot: nothing older can descend from it, so older
    /// processes are not looked at closer. 0 when unknown.
    started: u64,
}

impl Call {
    /// The call whose bash has process id `pid` (and so leads group `pid`) and carries `marker`.
    pub(crate) fn new(pid: i32, marker: String) -> Call {
        let started = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| parse_stat(&stat))
            .map_or(0, |s| s.started);
        Call {
            group: pid,
            marker,
            started,
        }
    }

    /// The live processes of the call's group or carrying its marker, or `None` when `/proc`
    /// cannot be read. Zombies are dead (they only wait for their parent to collect them) and are
    /// left out.
    fn find(&self) -> Option<BTreeSet<i32>> {
        let own = i32::try_from(std::process::id()).ok();
        let wanted = format!("{MARKER_VAR}={}", self.marker);
        let mut found = BTreeSet::new();
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            if Some(pid) == own {
                continue;
            }
            // The process may end at any moment: an unreadable file means it is gone or not ours.
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let Some(stat) = parse_stat(&stat) else {
                continue;
            };
            if matches!(stat.state, 'Z' | 'X' | 'x') || stat.started < self.started {
                continue;
            }
            let marked = || {
                std::fs::read(entry.path().join("environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == wanted.as_bytes()))
            };
            if stat.group == self.group || marked() {
                found.insert(pid);
            }
        }
        Some(found)
    }

    /// Kills the group and every process carrying the marker, again and again until none is left
    /// or [`CLEANUP_DEADLINE`] passes. Blocking: it sleeps between rounds.
    pub(crate) fn clean_up(&self) -> Cleanup {
        let deadline = Instant::now() + CLEANUP_DEADLINE;
        let mut cleanup = Cleanup {
            searched: true,
            ..Cleanup::default()
        };
        let mut pause = Duration::from_millis(5);
        loop {
            let Some(alive) = self.find() else {
                let _ = killpg(Pid::from_raw(self.group), Signal::SIGKILL);
                cleanup.searched = false;
                return cleanup;
            };
            if alive.is_empty() {
                return cleanup;
            }
            if Instant::now() >= deadline {
                cleanup.killed.retain(|pid| !alive.contains(pid));
                cleanup.survivors = alive;
                return cleanup;
            }
            for &pid in &alive {
                // A failure means it is gone already (it ended on its own) or is not ours to kill:
                // then it stays alive and is reported at the deadline.
                if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                    cleanup.killed.insert(pid);
                }
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    /// A quick, non-waiting version of [`Call::clean_up`] for a call abandoned mid-run (its
    /// future dropped): one round of kills, nothing reported.
    pub(crate) fn kill_now(&self) {
        let _ = killpg(Pid::from_raw(self.group), Signal::SIGKILL);
        for pid in self.find().unwrap_or_default() {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// The fields of `/proc/PID/stat` cleanup needs.
#[derive(Debug, PartialEq, Eq)]
struct Stat {
    state: char,
    group: i32,
    started: u64,
}

/// Parses `/proc/PID/stat`: `pid (comm) state ppid pgrp … starttime …` (starttime is field 22),
/// where comm may hold spaces and parentheses, so fields are counted after the last `)`.
fn parse_stat(stat: &str) -> Option<Stat> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        group: fields.get(2)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_even_with_odd_command_names() {
        let tail = "0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 987654 8192";
        assert_eq!(
            parse_stat(&format!("42 (sleep) S 1 40 40 {tail}")),
            Some(Stat {
                state: 'S',
                group: 40,
                started: 987_654
            })
        );
        assert_eq!(parse_stat(&format!("42 (a) b (c) Z 1 7 7 {tail}")).unwrap().group, 7);
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S 1 2"), None);
    }

    #[test]
    fn notes_say_what_was_killed_and_what_was_not() {
        let none = Cleanup {
            searched: true,
            ..Cleanup::default()
        };
        assert_eq!(none.note(), None);
        let some = Cleanup {
            killed: [7, 9].into(),
            survivors: [11].into(),
            searched: true,
        };
        assert_eq!(
            some.note().unwrap(),
            "[killed 2 processes the command left running: pid 7, 9; could not kill: pid 11 (left running)]"
        );
    }
}
