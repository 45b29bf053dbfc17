//! Where a fleet turn's time goes: every store append timed (a wrapper store), each agent's
//! events stamped, and the mock's per-request spans (`served_spans` of `GET /__mock/stats`),
//! all on the wall clock so that the two processes' timelines line up. Also the time each
//! process's threads spent runnable but not running (`/proc/PID/task/*/schedstat`): what the
//! machine's load took, as opposed to what panto did.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use panto_core::store::{PersistentMessage, StoreWrapper};
use panto_core::{async_trait, Result, SessionStore};

/// Now, in seconds since the Unix epoch (the clock the mock's spans use).
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A store that times every append of the store it wraps, per session.
#[derive(Debug)]
pub struct TimedStore {
    inner: Arc<dyn SessionStore>,
    appends: Mutex<HashMap<String, Vec<[f64; 2]>>>,
}

impl TimedStore {
    pub fn new(inner: Arc<dyn SessionStore>) -> Arc<TimedStore> {
        Arc::new(TimedStore {
            inner,
            appends: Mutex::new(HashMap::new()),
        })
    }

    /// Session `id`'s appends so far, as `[start, end]` in order.
    pub fn appends(&self, id: &str) -> Vec<[f64; 2]> {
        self.appends
            .lock()
            .expect("the append log")
            .get(id)
            .cloned()
            .unwrap_or_default()
    }
}

#[async_trait]
impl StoreWrapper for TimedStore {
    fn inner(&self) -> &dyn SessionStore {
        &*self.inner
    }

    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> Result<Vec<String>> {
        let start = now();
        let result = self.inner.append(id, messages).await;
        let end = now();
        self.appends
            .lock()
            .expect("the append log")
            .entry(id.to_owned())
            .or_default()
            .push([start, end]);
        result
    }
}

/// One agent's turn as the bench saw it.
#[derive(Debug, Default, Clone)]
pub struct TurnTimes {
    pub start: f64,
    pub end: f64,
    /// Why requests of the turn were retried.
    pub retries: Vec<String>,
}

/// A turn's added latency split by phase, in seconds.
#[derive(Debug, Default, Clone, Copy)]
pub struct Phases {
    /// From the moment the agent could send a request (the turn started, or the tool results
    /// started to be written: the request travels while they are) to the mock having read it:
    /// building the request, the connection pool, the loopback, the mock's accept and read (the
    /// mock's run-queue wait included).
    pub to_mock: f64,
    /// From the mock's last byte (or the tool results stored, if that came later) to the agent
    /// starting to commit the message: reading and decoding the tail of the stream, and waiting
    /// for a worker thread.
    pub after_mock: f64,
    /// The first append, which creates the session (and, on PostgreSQL, takes its lock).
    pub first_append: f64,
    /// What the turn waited for of the four appends after the first: the two assistant
    /// messages' whole, and the part of each tool-result write that outlasted the mock's answer.
    pub store: f64,
    /// From an assistant message committed to its tool results starting to commit: events,
    /// tool dispatch, the tool itself.
    pub tools: f64,
    /// From the last commit to the consumer seeing `TurnComplete`.
    pub finish: f64,
}

impl Phases {
    /// The phases of a turn of three requests and five appends; `None` for any other shape (a
    /// failed turn).
    pub fn of(turn: &TurnTimes, appends: &[[f64; 2]], spans: &[[f64; 2]]) -> Option<Phases> {
        if appends.len() != 5 || spans.len() != 3 {
            return None;
        }
        let mut p = Phases::default();
        for (k, span) in spans.iter().enumerate() {
            // The request after a tool step leaves as its results' write starts; the response is
            // read once both the mock's last byte is in and the results are stored.
            let (ready, answered) = if k == 0 {
                (turn.start, span[1])
            } else {
                let results = appends[2 * k - 1];
                p.store += (results[1] - span[1]).max(0.0);
                (results[0], span[1].max(results[1]))
            };
            p.to_mock += span[0] - ready;
            p.after_mock += appends[2 * k][0] - answered;
        }
        p.first_append = appends[0][1] - appends[0][0];
        p.store += (appends[2][1] - appends[2][0]) + (appends[4][1] - appends[4][0]);
        p.tools = (appends[1][0] - appends[0][1]) + (appends[3][0] - appends[2][1]);
        p.finish = turn.end - appends[4][1];
        Some(p)
    }

    pub const NAMES: [&'static str; 6] = ["to_mock", "after_mock", "first_append", "store", "tools", "finish"];

    pub fn values(&self) -> [f64; 6] {
        [
            self.to_mock,
            self.after_mock,
            self.first_append,
            self.store,
            self.tools,
            self.finish,
        ]
    }
}

/// The time the threads of process `pid` ("self" for this one) have spent on a CPU and waiting
/// for one, in seconds, by thread id: fields 1 and 2 of `/proc/PID/task/TID/schedstat`.
pub fn schedstat(pid: &str) -> HashMap<u64, (f64, f64)> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            continue;
        };
        let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().unwrap_or(0.0) / 1e9);
        if let (Some(run), Some(wait)) = (fields.next(), fields.next()) {
            out.insert(tid, (run, wait));
        }
    }
    out
}

/// Per-thread maxima of [`schedstat`] over samples, so that threads which exit during a run
/// (idle blocking-pool threads) still count.
#[derive(Debug, Default)]
pub struct SchedTotals {
    threads: HashMap<u64, (f64, f64)>,
}

impl SchedTotals {
    pub fn sample(&mut self, pid: &str) {
        for (tid, (run, wait)) in schedstat(pid) {
            let seen = self.threads.entry(tid).or_default();
            seen.0 = seen.0.max(run);
            seen.1 = seen.1.max(wait);
        }
    }

    /// Samples every process named `comm` (the PostgreSQL server's processes: `postgres`).
    pub fn sample_named(&mut self, comm: &str) {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return;
        };
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if pid.bytes().all(|b| b.is_ascii_digit())
                && std::fs::read_to_string(entry.path().join("comm")).is_ok_and(|c| c.trim() == comm)
            {
                self.sample(&pid);
            }
        }
    }

    /// CPU time and run-queue wait summed over every thread seen.
    pub fn totals(&self) -> (f64, f64) {
        self.threads
            .values()
            .fold((0.0, 0.0), |(r, w), (run, wait)| (r + run, w + wait))
    }
}
