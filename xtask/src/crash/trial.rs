//! One trial: a run killed at a random moment (with a steer sent on its stdin, a slow hook and
//! file checkpoints), the checks on what it left, then the operations the plan asks for (a
//! rewind with files or a fork, each killed at a random moment), and resumes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use panto_core::{Role, Session};
use panto_store_fs::JsonlStore;
use serde_json::Value;

use super::checks::{check_committed, check_load, check_requests_valid, run_tag};
use super::format::{self, LogFile};
use super::mock::Mock;
use super::ops::{self, Op, Session as Sess};
use super::run::{Feed, Kill, Launcher, Outcome};
use super::script::{self, Style};
use super::stream::{self, Transcript};

/// What the harness shares between trials.
pub struct Harness<'a> {
    /// The `panto` binary.
    pub panto: &'a Path,
    /// The mock server.
    pub mock: &'a Mock,
    /// Loads sessions with the real store.
    pub runtime: &'a tokio::runtime::Runtime,
}

/// One trial's plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The trial number (0 for the calibration runs).
    pub n: u64,
    /// The API style.
    pub style: Style,
    /// When the first run is killed.
    pub kill: Kill,
    /// When the steer is sent: right after the `nth` stdout line of this type (or at the end of
    /// the turn, if that comes first).
    pub steer: (&'static str, usize),
    /// How long the `bash` hook takes, in milliseconds.
    pub hook_ms: u64,
    /// The operations after the first run, each with its kill, in order.
    pub ops: Vec<(Op, Kill)>,
    /// The trial's directory (created fresh).
    pub dir: PathBuf,
}

/// What a passing trial found.
#[derive(Debug, Clone)]
pub struct Passed {
    /// One line for the log.
    pub summary: String,
    /// The first run, for calibration.
    pub first: Transcript,
    /// How long the first run lived.
    pub first_elapsed: Duration,
    /// How many provider requests the first run made.
    pub first_requests: usize,
    /// Where the kill landed ([`Transcript::phase`]), or `None` when the run finished first.
    pub phase: Option<&'static str>,
    /// How many tool calls the kill left pending (closed by the resume).
    pub pending: usize,
    /// How long each operation's run lived, and whether it was killed.
    pub ops: Vec<(Op, Duration, bool)>,
    /// Where each operation's kill landed.
    pub op_phases: Vec<&'static str>,
    /// Whether the first run's kill landed while the hook ran.
    pub in_hook: bool,
    /// How many checkpoint blobs were checked.
    pub blobs: usize,
}

/// A failed trial: what was wrong, and everything needed to see why.
#[derive(Debug)]
pub struct Failed {
    /// The first problem found.
    pub problem: String,
    /// The session file, the stream-json and stderr of each run, and the requests.
    pub evidence: String,
}

/// Everything a trial collects, for the failure report.
#[derive(Default)]
pub struct Evidence {
    pub(super) session_file: Option<PathBuf>,
    pub(super) first_session_bytes: Option<Vec<u8>>,
    pub(super) runs: Vec<(String, Outcome)>,
    pub(super) requests: Vec<Value>,
}

impl Evidence {
    fn render(&self) -> String {
        let mut out = String::new();
        for (name, run) in &self.runs {
            out.push_str(&format!(
                "--- {name} run: exit {:?}, killed {:?}, {} ms; stream-json:\n{}",
                run.code,
                run.killed
                    .map(|(at, lines)| format!("at {} ms after {lines} lines", at.as_millis())),
                run.elapsed.as_millis(),
                String::from_utf8_lossy(&run.stdout)
            ));
            if !run.stdout.ends_with(b"\n") {
                out.push_str("\n(no line end: torn last line)\n");
            }
            out.push_str(&format!("--- {name} run stderr:\n{}\n", run.stderr));
        }
        if let Some(bytes) = &self.first_session_bytes {
            out.push_str(&format!(
                "--- session file after the killed run:\n{}\n",
                String::from_utf8_lossy(bytes)
            ));
        }
        if let Some(path) = &self.session_file {
            match std::fs::read(path) {
                Ok(bytes) => out.push_str(&format!(
                    "--- session file now ({}):\n{}\n",
                    path.display(),
                    String::from_utf8_lossy(&bytes)
                )),
                Err(e) => out.push_str(&format!("--- session file {}: {e}\n", path.display())),
            }
        }
        for r in &self.requests {
            out.push_str(&format!(
                "--- request {} {} ({}): validation {}\n",
                r["index"],
                r["path"],
                run_tag(r).unwrap_or("untagged"),
                r["validation"]
            ));
        }
        out
    }
}

/// Runs trial `plan`.
pub fn run(ctx: &Harness<'_>, plan: &Plan) -> Result<Passed, Failed> {
    let mut evidence = Evidence::default();
    match run_inner(ctx, plan, &mut evidence) {
        Ok(passed) => Ok(passed),
        Err(e) => Err(Failed {
            problem: format!("{e:#}"),
            evidence: evidence.render(),
        }),
    }
}

/// A trial's directories, binaries and runs: what every run of it needs.
pub struct TrialRuns<'a> {
    /// The harness.
    pub ctx: &'a Harness<'a>,
    /// The plan.
    pub plan: &'a Plan,
    /// Starts panto in the trial's working directory.
    pub launcher: Launcher,
    /// The session directory.
    pub sessions: PathBuf,
    /// The working directory.
    pub work: PathBuf,
    /// The store over `sessions`.
    pub store: std::sync::Arc<JsonlStore>,
}

impl TrialRuns<'_> {
    /// Runs `panto args` tagged `tag` (its config file names the tag in every request) with
    /// replies `replies` queued, killed as `kill` says. Returns the run, its transcript, and
    /// the requests the mock recorded for it.
    pub fn run(
        &self,
        ev: &mut Evidence,
        tag: &str,
        replies: &Value,
        args: &[&str],
        kill: Kill,
        feed: &Feed,
    ) -> Result<(Outcome, Transcript, Vec<Value>)> {
        let dir = &self.plan.dir;
        let config = dir.join(format!("{tag}.toml"));
        let hook_log = dir.join("hook.log");
        std::fs::write(
            &config,
            script::config(
                self.plan.style,
                self.ctx.mock.port(),
                tag,
                self.plan.hook_ms,
                &hook_log.display().to_string(),
            ),
        )?;
        let (config, sessions) = (config.display().to_string(), self.sessions.display().to_string());
        let mut all = vec![
            "--config",
            &config,
            "--session-dir",
            &sessions,
            "--output-format",
            "stream-json",
            "--approve",
            "auto",
        ];
        all.extend_from_slice(args);
        self.ctx.mock.reset()?;
        self.ctx.mock.push(replies)?;
        let outcome = self
            .launcher
            .run(&all, kill, feed, &dir.join(format!("{tag}.stderr")))?;
        ev.runs.push((tag.to_owned(), outcome.clone()));
        let requests = self.ctx.mock.requests()?;
        ev.requests.extend(requests.iter().cloned());
        check_requests_valid(&requests)?;
        let t = stream::parse(&outcome.stdout).map_err(|e| anyhow!("the {tag} run: {e}"))?;
        if outcome.killed.is_none() && t.torn_tail.is_some() {
            return Err(anyhow!(
                "the {tag} run exited by itself but left a torn stream-json line"
            ));
        }
        Ok((outcome, t, requests))
    }

    /// The session file of `id`.
    pub fn file(&self, id: &str) -> PathBuf {
        self.sessions.join(format!("{id}.jsonl"))
    }

    /// Reads and checks session `id`'s file: the format, every checkpoint's blob, and the load.
    pub fn inspect(&self, id: &str) -> Result<(Vec<u8>, LogFile, usize)> {
        let file = self.file(id);
        let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        let log = format::check(&bytes, id).map_err(|e| anyhow!("{}: format check: {e}", file.display()))?;
        let blobs = format::check_blobs(&log, &self.sessions.join(format!("{id}.blobs")))
            .map_err(|e| anyhow!("{}: {e}", file.display()))?;
        if log.has_header {
            check_load(self.ctx, &self.store, id, &log)?;
        }
        Ok((bytes, log, blobs))
    }

    /// What `out/plan.txt` holds now (`None`: no file).
    pub fn plan_file(&self) -> Result<Option<Vec<u8>>> {
        match std::fs::read(self.work.join(script::PLAN_PATH)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(anyhow!("reading {}: {e}", script::PLAN_PATH)),
        }
    }
}

fn run_inner(ctx: &Harness<'_>, plan: &Plan, ev: &mut Evidence) -> Result<Passed> {
    let dir = &plan.dir;
    let (work, sessions, home) = (dir.join("work"), dir.join("sessions"), dir.join("home"));
    for d in [&work, &sessions, &home, &work.join("out")] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(work.join("notes.txt"), script::NOTES).context("writing notes.txt")?;
    std::fs::write(work.join(script::PLAN_PATH), script::PLAN_BEFORE).context("writing the plan")?;
    let runs = TrialRuns {
        ctx,
        plan,
        launcher: Launcher {
            binary: ctx.panto.to_path_buf(),
            cwd: work.clone(),
            home,
        },
        store: JsonlStore::new(&sessions),
        sessions: sessions.clone(),
        work,
    };

    // The killed run, steered on its stdin.
    let first_tag = format!("t{}-first", plan.n);
    let feed = Feed::Steer {
        kind: plan.steer.0,
        nth: plan.steer.1,
        line: serde_json::json!({"type": "steer", "text": script::STEER}).to_string(),
    };
    let (first, t1, first_requests) = runs.run(
        ev,
        &first_tag,
        &script::first_run(plan.style),
        &["--input-format", "stream-json", "-p", script::PROMPT],
        plan.kill,
        &feed,
    )?;
    let kill_text = match first.killed {
        Some((at, lines)) => format!("killed at {} ms after {lines} lines, {}", at.as_millis(), t1.phase()),
        None => format!("finished in {} ms", first.elapsed.as_millis()),
    };
    if first.killed.is_none() && (first.code != Some(0) || !t1.succeeded() || !t1.turn_complete) {
        return Err(anyhow!(
            "the run was not killed but did not succeed (exit {:?})",
            first.code
        ));
    }
    let in_hook = killed_in_hook(&dir.join("hook.log"), first.killed_wall_ms);
    let phase = first
        .killed
        .map(|_| if in_hook { "inside the bash hook" } else { t1.phase() });
    let mut passed = Passed {
        summary: String::new(),
        first: t1.clone(),
        first_elapsed: first.elapsed,
        first_requests: first_requests.len(),
        phase,
        pending: 0,
        ops: Vec::new(),
        op_phases: Vec::new(),
        in_hook,
        blobs: 0,
    };

    let Some(id) = t1.session_id.clone() else {
        let files = std::fs::read_dir(&sessions).map(Iterator::count).unwrap_or(0);
        if files > 0 {
            return Err(anyhow!(
                "killed before the session line, yet {files} session files exist"
            ));
        }
        check_plan_untouched(&runs)?;
        passed.summary = format!("{kill_text}: before the session line; nothing written");
        return Ok(passed);
    };
    let file = runs.file(&id);
    ev.session_file = Some(file.clone());
    if !file.exists() {
        if t1.committed_anything() {
            return Err(anyhow!(
                "the run reported committed messages but left no session file {}",
                file.display()
            ));
        }
        check_plan_untouched(&runs)?;
        passed.summary = format!("{kill_text}: before the first commit; no session file");
        return Ok(passed);
    }
    let (bytes1, log1, blobs) = runs.inspect(&id)?;
    ev.first_session_bytes = Some(bytes1.clone());
    passed.blobs += blobs;
    if !log1.has_header {
        check_headerless(ctx, &runs, &t1, &id, &bytes1)?;
        check_plan_untouched(&runs)?;
        passed.summary = format!(
            "{kill_text}: killed inside the first write; {} byte(s), nothing committed",
            bytes1.len()
        );
        return Ok(passed);
    }
    let committed = check_committed(&t1, &log1, script::PROMPT, script::SUMMARY, first.killed.is_some())?;
    check_steer(&t1, &first, &log1, &first_requests)?;
    check_plan_checkpoints(&runs, &t1, &log1)?;

    // The operations, then a resume of everything they left.
    let mut session = Sess {
        id: id.clone(),
        bytes: bytes1,
        log: log1,
        rewound: false,
    };
    let mut forks = Vec::new();
    let mut notes = Vec::new();
    for (i, (op, kill)) in plan.ops.iter().enumerate() {
        let tag = format!("t{}-{}{i}", plan.n, op.name());
        let done = match op {
            Op::Rewind => ops::rewind(&runs, ev, &tag, &mut session, *kill, &t1)?,
            Op::Fork => {
                let done = ops::fork(&runs, ev, &tag, &session, *kill, &t1)?;
                forks.extend(done.fork.clone());
                done
            }
        };
        passed.ops.push((*op, done.elapsed, done.killed));
        passed.op_phases.push(done.phase);
        passed.blobs += done.blobs;
        notes.push(done.note);
    }
    for fork in forks {
        let tag = format!("t{}-resume-fork", plan.n);
        let resumed = ops::resume(&runs, ev, &tag, &fork, &[])?;
        notes.push(format!("fork resumed ({} request(s))", resumed.requests));
    }
    let tag = format!("t{}-resume", plan.n);
    let first_run = [(&t1, script::PROMPT, script::SUMMARY)];
    let earlier: &[(&Transcript, &str, &str)] = if session.rewound { &[] } else { &first_run };
    let resumed = ops::resume(&runs, ev, &tag, &session, earlier)?;
    passed.pending = resumed.pending;
    passed.blobs += resumed.blobs;
    let pending_text = if resumed.pending == 0 {
        String::new()
    } else {
        format!("; closed {} pending call(s)", resumed.pending)
    };
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!("; {}", notes.join("; "))
    };
    passed.summary = format!(
        "{kill_text}: {} entries, {committed} committed message(s){pending_text}{notes}; resume ok ({} request(s))",
        session.log.entries.len(),
        resumed.requests
    );
    Ok(passed)
}

/// Whether the kill (at `killed_wall_ms`) landed between a `start` and its `end` in the hook's
/// log, or after a `start` without an `end` before the kill.
fn killed_in_hook(hook_log: &Path, killed_wall_ms: Option<u128>) -> bool {
    let (Some(kill), Ok(text)) = (killed_wall_ms, std::fs::read_to_string(hook_log)) else {
        return false;
    };
    let mut open: Option<u128> = None;
    let mut inside = false;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(what), Some(Ok(at))) = (words.next(), words.next().map(str::parse::<u128>)) else {
            continue;
        };
        match what {
            "start" => open = Some(at),
            "end" => {
                if open.is_some_and(|s| s <= kill && kill < at) {
                    inside = true;
                }
                open = None;
            }
            _ => {}
        }
    }
    inside || open.is_some_and(|s| s <= kill)
}

/// A file without a header: nothing was committed, and listing must go on working without
/// listing a session. An empty file (the only kind a kill can leave: a batch is one `write`) is
/// no session at all, so it is not reported either, and resolving its id finds nothing.
fn check_headerless(ctx: &Harness<'_>, runs: &TrialRuns<'_>, t1: &Transcript, id: &str, bytes: &[u8]) -> Result<()> {
    if t1.committed_anything() {
        return Err(anyhow!(
            "the run reported committed messages but the session file has no header"
        ));
    }
    let store = &runs.store;
    let (listed, problems) = ctx
        .runtime
        .block_on(store.list_with_problems())
        .map_err(|e| anyhow!("listing fails over a session file without a header: {e}"))?;
    if listed.iter().any(|info| info.id == id) {
        return Err(anyhow!("a session file without a header is listed as a session"));
    }
    if bytes.is_empty() {
        if let Some((path, e)) = problems.first() {
            return Err(anyhow!(
                "an empty session file is reported as a problem: {}: {e}",
                path.display()
            ));
        }
        let resolved = ctx
            .runtime
            .block_on(Session::resolve(store.clone(), id))
            .map_err(|e| anyhow!("resolving the id of an empty session file: {e}"))?;
        if resolved.is_some() {
            return Err(anyhow!("an empty session file resolves as a session"));
        }
    }
    Ok(())
}

/// Without a session, no tool ran: the plan is as it was.
fn check_plan_untouched(runs: &TrialRuns<'_>) -> Result<()> {
    if runs.plan_file()?.as_deref() != Some(script::PLAN_BEFORE.as_bytes()) {
        return Err(anyhow!(
            "{} changed although no session (and so no checkpoint) was written",
            script::PLAN_PATH
        ));
    }
    Ok(())
}

/// The steer is never lost or doubled: the log holds it at most once, in a user message; once
/// a message came after it joined, it is in the log and a request carried it to the model; and
/// a run that ended by itself took it.
fn check_steer(t: &Transcript, run: &Outcome, log: &LogFile, requests: &[Value]) -> Result<()> {
    let holding: Vec<&format::Entry> = log
        .entries
        .iter()
        .filter(|e| e.message.text().contains(script::STEER))
        .collect();
    if holding.len() > 1 {
        return Err(anyhow!(
            "the steer is in the log {} times (lines {:?})",
            holding.len(),
            holding.iter().map(|e| e.line).collect::<Vec<_>>()
        ));
    }
    if let Some(e) = holding.first() {
        if e.message.role != Role::User {
            return Err(anyhow!(
                "line {}: the steer is in a {:?} message",
                e.line,
                e.message.role
            ));
        }
    }
    if t.steers.iter().any(|s| s != script::STEER) {
        return Err(anyhow!("the run reported a steer it was not sent: {:?}", t.steers));
    }
    let must_hold = t.steer_committed || (run.killed.is_none() && run.steered.is_some());
    if must_hold && holding.is_empty() {
        return Err(anyhow!(
            "the steer joined the turn (and a message came after it) but is not in the log"
        ));
    }
    if t.steer_committed && !requests.iter().any(|r| r["body"].to_string().contains(script::STEER)) {
        return Err(anyhow!(
            "the steer joined the turn, but no request carried it to the model"
        ));
    }
    Ok(())
}

/// `out/plan.txt` holds what the newest checkpoint record says panto left there, or (killed
/// between recording a change and making it) what it held before; every change was recorded
/// before it was made, and a change the run reported as done is there.
fn check_plan_checkpoints(runs: &TrialRuns<'_>, t: &Transcript, log: &LogFile) -> Result<()> {
    let now = runs.plan_file()?;
    let records: Vec<&format::Checkpoint> = log
        .checkpoints()
        .map(|(_, c)| c)
        .filter(|c| c.path.ends_with(script::PLAN_PATH))
        .collect();
    let address = now.as_deref().map(panto_core::store::checkpoint_address);
    match records.last() {
        None if now.as_deref() != Some(script::PLAN_BEFORE.as_bytes()) => {
            return Err(anyhow!(
                "{} changed, but no checkpoint of it was committed first",
                script::PLAN_PATH
            ))
        }
        None => {}
        Some(last) if address != last.after && address != last.before => {
            return Err(anyhow!(
                "{} holds content (address {address:?}) that is neither the before ({:?}) nor the after ({:?}) of its newest checkpoint",
                script::PLAN_PATH,
                last.before,
                last.after
            ))
        }
        Some(_) => {}
    }
    let reported: Vec<&str> = t
        .tools
        .iter()
        .filter(|o| !o.is_error && (o.id.contains("write") || o.id.contains("edit")))
        .map(|o| o.id.as_str())
        .collect();
    // A change reported done is there (a later one may be too: made before the kill, not
    // reported yet).
    let allowed: &[&str] = if reported.iter().any(|id| id.contains("edit")) {
        &[script::PLAN_EDITED]
    } else if reported.iter().any(|id| id.contains("write")) {
        &[script::PLAN_WRITTEN, script::PLAN_EDITED]
    } else {
        &[script::PLAN_BEFORE, script::PLAN_WRITTEN, script::PLAN_EDITED]
    };
    if !allowed.iter().any(|a| now.as_deref() == Some(a.as_bytes())) {
        return Err(anyhow!(
            "{} holds {:?}, not what the changes the run reported leave ({allowed:?})",
            script::PLAN_PATH,
            now.as_deref().map(String::from_utf8_lossy)
        ));
    }
    Ok(())
}
