//! Whole-process benchmarks of the `panto` binary (issue 7): what a user waits for.
//!
//! - `process/version`: `panto --version`. Target: under 5 ms.
//! - `process/print_new_session`: `panto -p hi` against the loopback mock server, a new session.
//!   Target: under 30 ms and 30 MiB peak RSS.
//! - `process/resume_prefix/{10,1000}_sessions`: `panto -r PREFIX -p hi`, resuming a 1 MB
//!   session by an id prefix in a directory of 10 or 1,000 sessions of 1 MB. Target: at most
//!   20 ms over the new-session turn, and peak RSS that does not grow with the directory.
//! - `process/sessions_json/{1000,10000}`: `panto sessions --json`. Targets: under 30 ms for
//!   1,000 sessions, under 150 ms for 10,000 (and `10000_1mb` when `cargo xtask bench-data
//!   --large` has built that set).
//! - `floor/…`: the five everyday commands (the two above, `panto sessions` over 1,000 sessions,
//!   resume by prefix among them, resume of a 128 MB session compacted late), each run alternately
//!   with its floor, the least possible program doing the same input and output ([`floor`]).
//!   Targets (issue 50): at most 1.5x the floor for the first two, 2x for the others.
//!
//! Wall time is criterion's (spawn to exit, output read through pipes). Peak RSS is measured
//! apart, by a probe process ([`rss`]), and printed after the runs; both go to
//! `target/bench-results/process.tsv` for `cargo xtask bench`. The page cache is warm. The mock
//! server runs in this process, so its time to parse and check each request is part of the
//! turn, as a real server's would be.
//!
//! Run: `cargo bench -p panto-cli --bench process` (a filter argument selects benchmarks by
//! substring; `PANTO_BENCH_PANTO=PATH` measures another panto binary). Under `cargo test
//! --benches` only the quick benchmarks (and the first two floors) run, once each, no data set
//! is built and nothing is recorded.

#![allow(clippy::print_stderr)]

// A bench's root module resolves submodules beside it, so the paths are spelled out.
#[path = "process/data.rs"]
mod data;
#[path = "process/floor.rs"]
mod floor;
#[path = "process/rss.rs"]
mod rss;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use panto_testkit::{script, MockServer, Reply};

/// Criterion's group for every benchmark here.
const GROUP: &str = "process";

/// The answer every scripted turn gets.
const ANSWER: &str = "Hello!";

/// One benchmark's command, and what to do around each run.
struct Case<'a> {
    /// The function within criterion's `process` group, e.g. `print_new_session`.
    name: &'static str,
    /// The parameter, e.g. `1000_sessions` for `resume_prefix`.
    param: Option<String>,
    args: Vec<String>,
    /// Runs before each run, outside the timing (restoring a session, queueing a reply).
    setup: Box<dyn Fn() + 'a>,
    /// Checks the first run's output, so a failing command cannot pass as a fast one.
    check: Box<dyn Fn(&Output) + 'a>,
}

impl Case<'_> {
    /// The benchmark id as criterion and `target/bench-results` spell it.
    fn id(&self) -> String {
        match &self.param {
            Some(param) => format!("{GROUP}/{}/{param}", self.name),
            None => format!("{GROUP}/{}", self.name),
        }
    }
}

/// What every benchmark runs in.
struct Env {
    panto: PathBuf,
    home: PathBuf,
    work: PathBuf,
    config: String,
    new_sessions: String,
    _rt: tokio::runtime::Runtime,
    server: MockServer,
    /// The floors' program, also the probe of peak RSS.
    floor: floor::Program,
    filter: Option<String>,
    quick: bool,
}

/// What the benchmarks found beside criterion's times.
#[derive(Default)]
struct Results {
    rss: Vec<(String, u64)>,
    facts: Vec<(String, &'static str, String)>,
}

impl Env {
    fn new() -> Env {
        let args: Vec<String> = std::env::args().skip(1).collect();
        // Criterion measures only when cargo passes `--bench` (`cargo bench`); otherwise
        // (`cargo test --benches`) it runs each benchmark once as a test.
        let quick = args.iter().any(|a| a == "--test") || !args.iter().any(|a| a == "--bench");
        let filter = args.iter().find(|a| !a.starts_with('-')).cloned();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("a tokio runtime: {e}"));
        let server = rt.block_on(MockServer::start());
        let base = data::root().join("process");
        let (home, work, new_sessions) = (base.join("home"), base.join("work"), base.join("new-sessions"));
        if new_sessions.exists() {
            std::fs::remove_dir_all(&new_sessions)
                .unwrap_or_else(|e| panic!("clearing {}: {e}", new_sessions.display()));
        }
        for d in [&home, &work] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("creating {}: {e}", d.display()));
        }
        // Compaction is off so that resuming a long session never adds a summary request: the
        // bench measures loading and sending the history, not a second model call.
        let config = base.join("config.toml");
        std::fs::write(&config, "[compaction]\nenabled = false\n")
            .unwrap_or_else(|e| panic!("writing the config: {e}"));
        let floor = floor::Program::build(&base.join("floor"));
        Env {
            // Another build of panto can be measured in the same harness (a before and after).
            panto: std::env::var_os("PANTO_BENCH_PANTO")
                .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_panto")), PathBuf::from),
            home,
            work,
            config: path_arg(&config),
            new_sessions: path_arg(&new_sessions),
            _rt: rt,
            server,
            floor,
            filter,
            quick,
        }
    }

    fn wanted(&self, id: &str) -> bool {
        self.filter.as_deref().is_none_or(|f| id.contains(f))
    }

    /// `panto ARGS` in a private home, against the mock server, with nothing from the caller's
    /// environment but PATH.
    fn command(&self, args: &[String]) -> Command {
        let mut cmd = Command::new(&self.panto);
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join("config"))
            .env("XDG_DATA_HOME", self.home.join("data"))
            .env("XDG_STATE_HOME", self.home.join("state"))
            .env("ANTHROPIC_API_KEY", "bench-key")
            .env("ANTHROPIC_BASE_URL", self.server.anthropic_base_url())
            .current_dir(&self.work)
            .stdin(Stdio::null());
        cmd
    }

    /// Forgets the previous run's requests (a resumed session's are a megabyte each) and queues
    /// the next answer.
    fn queue_answer(&self) {
        self.server.reset();
        self.server.push(Reply::sse(script::anthropic_text(ANSWER)));
    }

    fn run(&self, c: &mut Criterion, results: &mut Results, case: Case<'_>) {
        let id = case.id();
        if !self.wanted(&id) {
            return;
        }
        let cmd = || self.command(&case.args);
        (case.setup)();
        let first = cmd()
            .output()
            .unwrap_or_else(|e| panic!("{id}: cannot start panto: {e}"));
        assert!(
            first.status.success(),
            "{id}: panto failed with {}: {}",
            first.status,
            String::from_utf8_lossy(&first.stderr)
        );
        (case.check)(&first);
        let mut group = c.benchmark_group(GROUP);
        let bench_id = match &case.param {
            Some(param) => BenchmarkId::new(case.name, param),
            None => BenchmarkId::from_parameter(case.name),
        };
        group.bench_function(bench_id, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    (case.setup)();
                    let started = Instant::now();
                    let out = cmd().output();
                    total += started.elapsed();
                    match out {
                        Ok(out) if out.status.success() => {}
                        Ok(out) => panic!("{id}: panto failed: {}", String::from_utf8_lossy(&out.stderr)),
                        Err(e) => panic!("{id}: {e}"),
                    }
                }
                total
            })
        });
        group.finish();
        let mut peak = 0;
        for _ in 0..if self.quick { 1 } else { 3 } {
            (case.setup)();
            peak = peak.max(env_peak(self, &cmd()));
        }
        results.rss.push((id.clone(), peak));
        results.facts.push((id, "peak_rss_bytes", (peak * 1024).to_string()));
    }
}

impl Results {
    /// Prints the peaks and writes `target/bench-results/process.tsv` (`id<TAB>key<TAB>value`
    /// rows, the format `cargo xtask bench` joins with criterion's estimates).
    fn finish(&self, quick: bool) {
        if self.facts.is_empty() {
            return;
        }
        if quick {
            // One unoptimised run each: proof that the probe works, not a measurement.
            return;
        }
        if !self.rss.is_empty() {
            eprintln!("\npeak RSS (max of 3 runs):");
        }
        for (id, kib) in &self.rss {
            eprintln!("  {id:<40} {:>8.1} MiB", *kib as f64 / 1024.0);
        }
        let dir = data::root().with_file_name("bench-results");
        let path = dir.join("process.tsv");
        // A filtered run replaces the rows of what it measured and keeps the others.
        let measured: Vec<&str> = self.facts.iter().map(|(id, _, _)| id.as_str()).collect();
        let kept: String = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .filter(|line| !measured.iter().any(|id| line.split('\t').next() == Some(*id)))
            .map(|line| format!("{line}\n"))
            .collect();
        let fresh: String = self
            .facts
            .iter()
            .map(|(id, k, v)| format!("{id}\t{k}\t{v}\n"))
            .collect();
        let rows = kept + &fresh;
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, rows)) {
            panic!("writing {}: {e}", path.display());
        }
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

fn path_arg(p: &Path) -> String {
    p.display().to_string()
}

/// Checks that a turn printed the scripted answer.
fn answered(id: &str) -> Box<dyn Fn(&Output) + '_> {
    Box::new(move |out: &Output| {
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.trim_end(), ANSWER, "{id}: unexpected output");
    })
}

/// Checks that `sessions --json` listed `n` sessions.
fn listed(id: &str, n: usize) -> Box<dyn Fn(&Output) + '_> {
    Box::new(move |out: &Output| {
        let value: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{id}: sessions --json printed no JSON: {e}"));
        let count = value.as_array().map_or(0, Vec::len);
        assert_eq!(count, n, "{id}: listed {count} sessions, expected {n}");
    })
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let env = Env::new();
    let mut results = Results::default();

    env.run(
        &mut c,
        &mut results,
        Case {
            name: "version",
            param: None,
            args: strings(&["--version"]),
            setup: Box::new(|| {}),
            check: Box::new(|out| assert!(String::from_utf8_lossy(&out.stdout).starts_with("panto "))),
        },
    );

    let id = "process/print_new_session";
    env.run(
        &mut c,
        &mut results,
        Case {
            name: "print_new_session",
            param: None,
            args: strings(&["--config", &env.config, "--session-dir", &env.new_sessions, "-p", "hi"]),
            setup: Box::new(|| env.queue_answer()),
            check: answered(id),
        },
    );

    if !env.quick {
        resumes(&env, &mut c, &mut results);
        listings(&env, &mut c, &mut results);
    }
    floors(&env, &mut results);
    results.finish(env.quick);
    c.final_summary();
}

/// `panto -r PREFIX -p hi` on a 1 MB session, among 10 and among 1,000 sessions of 1 MB.
fn resumes(env: &Env, c: &mut Criterion, results: &mut Results) {
    let mut source = None;
    for (name, others) in [("10_sessions", 9), ("1000_sessions", 999)] {
        let id = format!("{GROUP}/resume_prefix/{name}");
        if !env.wanted(&id) {
            continue;
        }
        let source = source.get_or_insert_with(|| data::shared_set("sessions-1k-1mb", "process-1k-1mb", 1000, 1 << 20));
        let dir = data::ResumeDir::build(&format!("process-resume-{name}"), source, others);
        results
            .facts
            .push((id.clone(), "session_bytes", dir.target_bytes().to_string()));
        let args = strings(&[
            "--config",
            &env.config,
            "--session-dir",
            &path_arg(&dir.dir),
            "-r",
            &dir.prefix,
            "-p",
            "hi",
        ]);
        let check = answered(&id);
        env.run(
            c,
            results,
            Case {
                name: "resume_prefix",
                param: Some(name.to_owned()),
                args,
                setup: Box::new(|| {
                    dir.restore();
                    env.queue_answer();
                }),
                check,
            },
        );
    }
}

/// The large set, when `cargo xtask bench-data --large` has built it.
fn large_set() -> Option<PathBuf> {
    let ready = data::root().join("sessions-10k-1mb.ready").exists();
    if !ready {
        eprintln!("process bench: sessions-10k-1mb not built (cargo xtask bench-data --large); skipped");
    }
    ready.then(|| data::root().join("sessions-10k-1mb"))
}

/// `panto sessions --json` over 1,000 sessions of 1 MB and 10,000 small ones (and 10,000 of
/// 1 MB when that set exists). A set is prepared only when its benchmark is selected.
fn listings(env: &Env, c: &mut Criterion, results: &mut Results) {
    type Set = fn() -> Option<PathBuf>;
    let sets: [(&str, Set); 3] = [
        ("1000", || {
            Some(data::shared_set("sessions-1k-1mb", "process-1k-1mb", 1000, 1 << 20))
        }),
        ("10000", || {
            Some(data::shared_set(
                "sessions-10k-1kb",
                "process-10k-small",
                10_000,
                1 << 10,
            ))
        }),
        ("10000_1mb", large_set),
    ];
    for (name, set) in sets {
        let id = format!("{GROUP}/sessions_json/{name}");
        let Some(dir) = (if env.wanted(&id) { set() } else { None }) else {
            continue;
        };
        let n = data::session_files(&dir).len();
        // Every session of the set, whichever directory each was started in.
        let args = strings(&["sessions", "--json", "--all", "--session-dir", &path_arg(&dir)]);
        let check = listed(&id, n);
        env.run(
            c,
            results,
            Case {
                name: "sessions_json",
                param: Some(name.to_owned()),
                args,
                setup: Box::new(|| {}),
                check,
            },
        );
    }
}

/// The peak RSS of `cmd` in KiB, by the floor program's probe.
fn env_peak(env: &Env, cmd: &Command) -> u64 {
    rss::peak_kib(env.floor.exe(), cmd)
}

/// Where the floors keep what they replay and write.
fn floor_base() -> PathBuf {
    data::root().join("process-floor")
}

/// Removes every entry of `dir` (creating it if needed).
fn empty(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("listing {}: {e}", dir.display())) {
        let path = entry
            .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
            .path();
        std::fs::remove_file(&path).unwrap_or_else(|e| panic!("removing {}: {e}", path.display()));
    }
}

/// Writes `bytes` under the floors' directory and returns the path as an argument.
fn keep(name: &str, bytes: &[u8]) -> String {
    let path = floor_base().join(name);
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path_arg(&path)
}

/// The one request the mock recorded since its last reset, as sent.
fn the_request(env: &Env, id: &str) -> Vec<u8> {
    let requests = env.server.requests();
    assert_eq!(
        requests.len(),
        1,
        "{id}: panto sent {} requests, expected 1",
        requests.len()
    );
    floor::request_bytes(&requests[0])
}

/// Measures one row against its floor and records it under `id`.
fn floor_row(
    env: &Env,
    results: &mut Results,
    id: &str,
    setup: &dyn Fn(),
    panto: &dyn Fn() -> Command,
    floor: &dyn Fn() -> Command,
) {
    let m = floor::alternate(id, env.quick, setup, panto, floor);
    let peak = |cmd: &dyn Fn() -> Command| {
        let mut peak = 0;
        for _ in 0..if env.quick { 1 } else { 3 } {
            setup();
            peak = peak.max(env_peak(env, &cmd()));
        }
        peak
    };
    let (panto_kib, floor_kib) = (peak(panto), peak(floor));
    eprintln!(
        "{id}: panto {:.2} ms, floor {:.2} ms: {:.2}x ({} alternating rounds); peak RSS {:.1} MiB, floor {:.1} MiB",
        m.panto_ns / 1e6,
        m.floor_ns / 1e6,
        m.ratio(),
        m.rounds,
        panto_kib as f64 / 1024.0,
        floor_kib as f64 / 1024.0,
    );
    for (key, value) in [
        ("panto_ns", m.panto_ns),
        ("floor_ns", m.floor_ns),
        ("ratio", m.ratio()),
        ("rounds", m.rounds as f64),
        ("panto_peak_rss_bytes", (panto_kib * 1024) as f64),
        ("floor_peak_rss_bytes", (floor_kib * 1024) as f64),
    ] {
        results.facts.push((id.to_owned(), key, value.to_string()));
    }
}

/// The five everyday commands against their floors (issue 50; `floor.rs` says how), recorded
/// under `floor/…`. In test mode only the first two run, once each.
fn floors(env: &Env, results: &mut Results) {
    const IDS: [&str; 5] = [
        "floor/version",
        "floor/print_new_session",
        "floor/sessions/1000",
        "floor/resume_prefix/1000_sessions",
        "floor/resume_128mb_compacted",
    ];
    if !IDS.iter().any(|id| env.wanted(id)) {
        return;
    }
    let base = floor_base();
    std::fs::create_dir_all(&base).unwrap_or_else(|e| panic!("creating {}: {e}", base.display()));
    let program = &env.floor;
    let port = env.server.port().to_string();
    let answer = ANSWER.to_owned();

    let id = IDS[0];
    if env.wanted(id) {
        let args = strings(&["--version"]);
        let out = floor::ok(id, "panto", env.command(&args).output());
        let line = String::from_utf8_lossy(&out.stdout).trim_end().to_owned();
        let floor_args = vec!["version".to_owned(), line];
        let floor_out = floor::ok(id, "the floor", program.command(&floor_args).output());
        assert_eq!(floor_out.stdout, out.stdout, "{id}: the floor printed another line");
        floor_row(env, results, id, &|| {}, &|| env.command(&args), &|| {
            program.command(&floor_args)
        });
    }

    let id = IDS[1];
    if env.wanted(id) {
        let (panto_dir, floor_dir) = (base.join("new-panto"), base.join("new-floor"));
        // Each run starts from empty directories, both programs alike.
        let setup = || {
            empty(&panto_dir);
            empty(&floor_dir);
            env.queue_answer();
        };
        let args = strings(&[
            "--config",
            &env.config,
            "--session-dir",
            &path_arg(&panto_dir),
            "-p",
            "hi",
        ]);
        setup();
        let out = floor::ok(id, "panto", env.command(&args).output());
        answered(id)(&out);
        let request = keep("new-request", &the_request(env, id));
        let written = data::session_files(&panto_dir);
        assert_eq!(written.len(), 1, "{id}: panto wrote {} session files", written.len());
        let lines = std::fs::read(&written[0]).unwrap_or_else(|e| panic!("{id}: reading the new session: {e}"));
        let entries = keep("new-entries", &lines);
        let floor_args = vec![
            "new".to_owned(),
            port.clone(),
            request,
            path_arg(&floor_dir),
            entries,
            answer.clone(),
        ];
        setup();
        let floor_out = floor::ok(id, "the floor", program.command(&floor_args).output());
        assert_eq!(floor_out.stdout, out.stdout, "{id}: the floor printed another answer");
        floor_row(env, results, id, &setup, &|| env.command(&args), &|| {
            program.command(&floor_args)
        });
    }
    if env.quick {
        return;
    }

    let id = IDS[2];
    if env.wanted(id) {
        let dir = data::shared_set("sessions-1k-1mb", "process-1k-1mb", 1000, 1 << 20);
        let files = data::session_files(&dir);
        // `panto sessions` lists the sessions started in its working directory: it runs in the
        // one the set's sessions recorded, so that it prints all of them.
        let here = files
            .first()
            .and_then(|f| floor::recorded_cwd(f))
            .filter(|d| d.is_dir());
        let mut args = strings(&["sessions", "--session-dir", &path_arg(&dir)]);
        if here.is_none() {
            args.push("--all".to_owned());
        }
        let panto = || {
            let mut cmd = env.command(&args);
            if let Some(here) = &here {
                cmd.current_dir(here);
            }
            cmd
        };
        let out = floor::ok(id, "panto", panto().output());
        let listed = String::from_utf8_lossy(&out.stdout).lines().count();
        assert!(
            listed >= files.len(),
            "{id}: panto sessions printed {listed} lines for {} sessions",
            files.len()
        );
        let floor_args = vec!["sessions".to_owned(), path_arg(&dir)];
        let floor_out = floor::ok(id, "the floor", program.command(&floor_args).output());
        let floor_listed = String::from_utf8_lossy(&floor_out.stdout).lines().count();
        assert_eq!(
            floor_listed,
            files.len(),
            "{id}: the floor listed {floor_listed} sessions"
        );
        floor_row(env, results, id, &|| {}, &panto, &|| program.command(&floor_args));
    }

    let id = IDS[3];
    if env.wanted(id) {
        let source = data::shared_set("sessions-1k-1mb", "process-1k-1mb", 1000, 1 << 20);
        let dir = data::ResumeDir::build("process-floor-resume", &source, 999);
        let setup = || {
            dir.restore();
            env.queue_answer();
        };
        let args = strings(&[
            "--config",
            &env.config,
            "--session-dir",
            &path_arg(&dir.dir),
            "-r",
            &dir.prefix,
            "-p",
            "hi",
        ]);
        let floor_args = resume_floor(
            env,
            program,
            id,
            &setup,
            &args,
            dir.target(),
            dir.target_bytes(),
            "resume-1mb",
            &dir.dir,
            &dir.prefix,
        );
        floor_row(env, results, id, &setup, &|| env.command(&args), &|| {
            program.command(&floor_args)
        });
    }

    let id = IDS[4];
    if env.wanted(id) {
        let source = data::root().join("session-128mb-compacted");
        let ready = data::root().join("session-128mb-compacted.ready").exists();
        let file = data::session_files(&source).into_iter().next().filter(|_| ready);
        let Some(file) = file else {
            eprintln!("{id}: session-128mb-compacted not built (cargo xtask bench-data); skipped");
            return;
        };
        let dir = base.join("resume-128mb");
        let target = dir.join(file.file_name().unwrap_or_default());
        let bytes = std::fs::metadata(&file).map_or(0, |m| m.len());
        if std::fs::metadata(&target).map_or(0, |m| m.len()) < bytes {
            empty(&dir);
            std::fs::copy(&file, &target).unwrap_or_else(|e| panic!("copying {}: {e}", file.display()));
        }
        let session = target
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_else(|| panic!("{} is not named for a session id", target.display()))
            .to_owned();
        // panto only appends to a session it resumes: cutting the file back restores it.
        let setup = || {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .unwrap_or_else(|e| panic!("opening {}: {e}", target.display()));
            f.set_len(bytes)
                .unwrap_or_else(|e| panic!("restoring {}: {e}", target.display()));
            env.queue_answer();
        };
        let args = strings(&[
            "--config",
            &env.config,
            "--session-dir",
            &path_arg(&dir),
            "-r",
            &session,
            "-p",
            "hi",
        ]);
        let floor_args = resume_floor(
            env,
            program,
            id,
            &setup,
            &args,
            &target,
            bytes,
            "resume-128mb",
            &dir,
            &session,
        );
        floor_row(env, results, id, &setup, &|| env.command(&args), &|| {
            program.command(&floor_args)
        });
    }
}

/// Runs a resume once, keeps its request and what it appended, and returns the floor's
/// arguments for the same resume (checked to print the same answer).
#[allow(clippy::too_many_arguments)]
fn resume_floor(
    env: &Env,
    program: &floor::Program,
    id: &str,
    setup: &dyn Fn(),
    args: &[String],
    target: &Path,
    pristine: u64,
    name: &str,
    dir: &Path,
    prefix: &str,
) -> Vec<String> {
    setup();
    let out = floor::ok(id, "panto", env.command(args).output());
    answered(id)(&out);
    let request = keep(&format!("{name}-request"), &the_request(env, id));
    let after = std::fs::read(target).unwrap_or_else(|e| panic!("{id}: reading {}: {e}", target.display()));
    let appended = after
        .get(pristine as usize..)
        .unwrap_or_else(|| panic!("{id}: the session shrank"));
    let entries = keep(&format!("{name}-entries"), appended);
    let floor_args = vec![
        "resume".to_owned(),
        env.server.port().to_string(),
        request,
        path_arg(dir),
        prefix.to_owned(),
        entries,
        ANSWER.to_owned(),
    ];
    setup();
    let floor_out = floor::ok(id, "the floor", program.command(&floor_args).output());
    assert_eq!(floor_out.stdout, out.stdout, "{id}: the floor printed another answer");
    let after_floor = std::fs::metadata(target).map_or(0, |m| m.len());
    assert_eq!(
        after_floor,
        after.len() as u64,
        "{id}: the floor appended other bytes than panto"
    );
    floor_args
}
