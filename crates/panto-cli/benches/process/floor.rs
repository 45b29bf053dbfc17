//! Floors (issue 50): each whole-process row beside the least possible program that does its
//! input and output and nothing else (`floor.c`, compiled here with `cc -O2`), run alternately
//! with `panto` in this process, so that the machine's load moves both alike.
//!
//! A round runs `panto` once and the floor once, in an order that alternates between rounds;
//! the rows report each one's median over the rounds and the ratio of the medians. Peak RSS is the
//! kernel's for each program's process alone (the probe in `rss.rs`).
//!
//! What the floor sends and writes is what `panto` did: the first (unmeasured) run of `panto`
//! is recorded by the mock server (its request, replayed byte for byte by the floor, header names
//! lowercased as the mock records them) and in the session directory (the lines `panto` wrote,
//! which the floor writes again).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The C source, beside this file.
const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/process/floor.c");

/// The compiled floor program.
pub struct Program {
    exe: PathBuf,
}

impl Program {
    /// Compiles `floor.c` into `dir` with `cc -O2`.
    pub fn build(dir: &Path) -> Program {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        let exe = dir.join("panto-floor");
        let out = Command::new("cc")
            .args(["-O2", "-Wall", "-o"])
            .arg(&exe)
            .arg(SOURCE)
            .output()
            .unwrap_or_else(|e| panic!("the floors need a C compiler: cannot run cc: {e}"));
        assert!(
            out.status.success(),
            "cc -O2 {SOURCE} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Program { exe }
    }

    /// The program's path.
    pub fn exe(&self) -> &Path {
        &self.exe
    }

    /// The floor with `args`.
    pub fn command(&self, args: &[String]) -> Command {
        let mut cmd = Command::new(&self.exe);
        cmd.args(args).env_clear().stdin(Stdio::null());
        cmd
    }
}

/// The request line, headers and body of a recorded request, as they went over the wire.
pub fn request_bytes(r: &panto_testkit::RecordedRequest) -> Vec<u8> {
    let mut out = format!("{} {} HTTP/1.1\r\n", r.method, r.path).into_bytes();
    for (name, value) in &r.headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&r.body);
    out
}

/// What one row measured.
pub struct Measured {
    /// `panto`'s median, nanoseconds.
    pub panto_ns: f64,
    /// The floor's median, nanoseconds.
    pub floor_ns: f64,
    /// Rounds measured (each one run of each).
    pub rounds: usize,
}

impl Measured {
    /// `panto`'s median over the floor's.
    pub fn ratio(&self) -> f64 {
        self.panto_ns / self.floor_ns
    }
}

/// How many rounds: enough for a stable median, within about `budget` of wall time.
fn rounds_for(one_round: Duration, budget: Duration) -> usize {
    let n = budget.as_secs_f64() / one_round.as_secs_f64().max(1e-6);
    (n as usize).clamp(15, 301)
}

fn timed(id: &str, what: &str, mut cmd: Command) -> Duration {
    let started = Instant::now();
    let out = cmd.output();
    let took = started.elapsed();
    ok(id, what, out);
    took
}

/// Panics unless the run succeeded.
pub fn ok(id: &str, what: &str, out: std::io::Result<Output>) -> Output {
    match out {
        Ok(out) if out.status.success() => out,
        Ok(out) => panic!(
            "{id}: {what} failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!("{id}: cannot start {what}: {e}"),
    }
}

/// Runs `panto` and the floor alternately, `setup` before each run (outside the timing), after
/// three unmeasured rounds.
pub fn alternate(
    id: &str,
    quick: bool,
    setup: &dyn Fn(),
    panto: &dyn Fn() -> Command,
    floor: &dyn Fn() -> Command,
) -> Measured {
    let round = |first_panto: bool| -> (Duration, Duration) {
        let mut p = Duration::ZERO;
        let mut f = Duration::ZERO;
        for which in [first_panto, !first_panto] {
            setup();
            if which {
                p = timed(id, "panto", panto());
            } else {
                f = timed(id, "the floor", floor());
            }
        }
        (p, f)
    };
    let warm: Vec<(Duration, Duration)> = (0..3).map(|i| round(i % 2 == 0)).collect();
    let rounds = if quick {
        1
    } else {
        let slowest = warm.iter().map(|(p, f)| *p + *f).max().unwrap_or_default();
        rounds_for(slowest, Duration::from_secs(8))
    };
    let mut panto_times = Vec::with_capacity(rounds);
    let mut floor_times = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let (p, f) = round(i % 2 == 0);
        panto_times.push(p.as_secs_f64() * 1e9);
        floor_times.push(f.as_secs_f64() * 1e9);
    }
    Measured {
        panto_ns: median(&mut panto_times),
        floor_ns: median(&mut floor_times),
        rounds,
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The working directory recorded in the header of session file `path` (`"cwd":"…"`), which
/// `panto sessions` compares with its own to list a directory's sessions.
pub fn recorded_cwd(path: &Path) -> Option<PathBuf> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file).read_line(&mut line).ok()?;
    let header: serde_json::Value = serde_json::from_str(&line).ok()?;
    header.get("cwd")?.as_str().map(PathBuf::from)
}
