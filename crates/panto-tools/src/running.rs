//! What the tools are doing right now, so shutdown can wait for it, within a deadline.
//!
//! A cancelled turn abandons its tool calls after a grace period (panto-core aborts their tasks),
//! but a blocking system call cannot be aborted: a file read on a hung network mount keeps its
//! thread, and tokio's runtime would wait for that thread forever when panto exits. Every piece of
//! tool work that can block is therefore registered here while it runs; at exit panto waits a
//! short while for the registry to empty, names what is still running, and exits anyway.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The work in flight: an id per piece of work and what it is (`read notes.txt`).
#[derive(Debug, Default)]
pub struct Running {
    entries: Mutex<BTreeMap<u64, String>>,
    next: AtomicU64,
}

/// The process-wide registry the built-in tools report to.
static RUNNING: Running = Running::new();

/// The registry the built-in tools report to.
pub fn global() -> &'static Running {
    &RUNNING
}

/// Registered work; dropping it (the work ended, or was abandoned with its task) unregisters it.
#[derive(Debug)]
pub struct RunningGuard<'a> {
    registry: &'a Running,
    id: u64,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.id);
    }
}

impl Running {
    /// An empty registry.
    pub const fn new() -> Self {
        Running {
            entries: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, String>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `what` until the guard is dropped. `what` may hold a model's bytes and may be
    /// printed: control characters become spaces and it is cut at 200 characters.
    pub fn start(&self, what: String) -> RunningGuard<'_> {
        let what = what
            .chars()
            .take(200)
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, what);
        RunningGuard { registry: self, id }
    }

    /// What is running now, oldest first.
    pub fn now(&self) -> Vec<String> {
        self.lock().values().cloned().collect()
    }

    /// Waits until nothing is running or `grace` has passed; returns what still runs then.
    pub fn wait_idle(&self, grace: Duration) -> Vec<String> {
        let deadline = Instant::now() + grace;
        loop {
            let left = self.now();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Runs blocking tool work `f` (file I/O) on tokio's blocking pool, registered as `what` for as
/// long as it really runs: if the calling task is aborted, the thread goes on and stays
/// registered until `f` returns.
pub(crate) async fn blocking<T, F>(what: String, f: F) -> Result<T, String>
where
    F: FnOnce() -> Result<T, String> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let _running = global().start(what);
        f()
    })
    .await
    .map_err(|e| format!("the tool's work failed: {e}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_registers_until_dropped_and_wait_idle_names_what_is_left() {
        let running = Running::new();
        let first = running.start("read a".into());
        let second = running.start("bash sleep".into());
        assert_eq!(running.now(), ["read a", "bash sleep"]);
        drop(first);
        assert_eq!(running.wait_idle(Duration::from_millis(50)), ["bash sleep"]);
        drop(second);
        assert!(running.wait_idle(Duration::from_secs(60)).is_empty());
        let _escape = running.start("read \u{1b}]0;owned\u{7}\nx".into());
        assert_eq!(running.now(), ["read  ]0;owned  x"]);
    }
}
