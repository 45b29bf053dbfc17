//! `cargo xtask crash-test [--trials N] [--seed S] [--trial K] [--release] [--keep]`: the kill-9
//! crash harness (docs/robustness.md).
//!
//! Each trial runs `panto -p … --input-format stream-json --output-format stream-json --approve
//! auto` against `panto-mock` with a scripted turn that streams text, calls tools (a slow `bash`
//! behind a slow command hook, `read`, a `write` and an `edit` of an existing file, so file
//! checkpoints are recorded mid-turn) and compacts, sends it a steer on stdin at a random
//! moment, and SIGKILLs it at a random moment: after a random number of stdout lines, after a
//! random delay, right after a boundary line, or shortly after the steer. Then it checks that:
//!
//! 1. every request the killed run sent was valid for the API;
//! 2. the session file passes an independent format check (every line but a torn last one parses,
//!    the header is right, entry ids are unique, messages follow the tip, `branch` lines and
//!    their checkpoints are right, each entry's activity is its path's), every checkpoint names a
//!    whole blob, and the store loads exactly the view the specification's replay gives;
//! 3. every message the run reported as committed (`message_complete`, tool results the run
//!    went on past, `compaction_complete`) is in the log, by content; the steer is there once
//!    when a message came after it, and a request carried it; the edited file holds what the
//!    newest checkpoint says panto left there (or, killed in between, what it held before);
//! 4. then, in a third of the trials each, a rewind with files (`-r ID --rewind N
//!    --rewind-files`) or a fork (`-r ID --fork`) is run and killed at a random moment: the
//!    original is never rewritten (a fork leaves it byte for byte), a fork is absent or whole
//!    and resumable, and a rewind (which puts the files back before it switches) either did
//!    not switch yet, the file holding its old or its restored content (then run again it
//!    restores the file byte for byte), or switched with the file restored; a file is never
//!    reported "changed outside panto", not even after the first run was killed between
//!    recording its last change and making it;
//! 5. `panto -r ID -p continue` succeeds, its requests are valid, the first one closes every tool
//!    call the kill left pending with the interrupted-turn closer, the closer is persisted, and
//!    no committed byte of the file was rewritten.
//!
//! Trials alternate between the Anthropic and OpenAI API styles. Two calibration runs (one per
//! style, not killed, each followed by an unkilled rewind and fork) first check that the script
//! still does what it should and measure how many lines and milliseconds a whole run takes,
//! which bound the random kill points. Every trial's randomness comes from the seed and its
//! number, so `--seed S --trial K` replays trial K (a kill by line count lands at the same place;
//! one by delay lands at about the same time).

mod checks;
mod format;
mod mock;
mod ops;
mod run;
mod script;
mod stream;
mod trial;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use crate::target_dir;
use mock::Mock;
use ops::Op;
use run::Kill;
use script::Style;
use trial::Plan;

const USAGE: &str = "usage: cargo xtask crash-test [--trials N] [--seed S] [--trial K] [--release] [--keep]

  --trials N   how many trials (default 50)
  --seed S     the seed of the random kill points (default: from the clock; always printed)
  --trial K    run only trial K of the seed (to replay a failure)
  --release    test release binaries instead of debug ones
  --keep       keep the directories of passing trials too (failing ones are always kept)";

/// How a harness run is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// How many trials.
    pub trials: u64,
    /// The seed.
    pub seed: u64,
    /// Only this trial.
    pub only: Option<u64>,
    /// Release binaries.
    pub release: bool,
    /// Keep every trial directory.
    pub keep: bool,
}

/// `cargo xtask crash-test ARGS`.
pub fn main(root: &Path, args: &[String]) -> Result<()> {
    let options = parse_args(args)?;
    run_with(root, &options)
}

/// Runs `trials` trials with a fresh seed and debug binaries.
pub fn run(root: &Path, trials: u64) -> Result<()> {
    run_with(
        root,
        &Options {
            trials,
            seed: fresh_seed(),
            only: None,
            release: false,
            keep: false,
        },
    )
}

fn parse_args(args: &[String]) -> Result<Options> {
    let mut options = Options {
        trials: 50,
        seed: fresh_seed(),
        only: None,
        release: false,
        keep: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut number = |name: &str| -> Result<u64> {
            let value = it.next().with_context(|| format!("{name} needs a number\n\n{USAGE}"))?;
            value
                .parse()
                .with_context(|| format!("{name} {value:?} is not a non-negative integer\n\n{USAGE}"))
        };
        match arg.as_str() {
            "--trials" => options.trials = number("--trials")?,
            "--seed" => options.seed = number("--seed")?,
            "--trial" => options.only = Some(number("--trial")?),
            "--release" => options.release = true,
            "--keep" => options.keep = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?}\n\n{USAGE}"),
        }
    }
    if options.trials == 0 {
        bail!("--trials must be at least 1");
    }
    if let Some(k) = options.only {
        if k == 0 || k > options.trials {
            bail!("--trial {k} is not one of the trials 1..={}", options.trials);
        }
    }
    Ok(options)
}

fn fresh_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    SplitMix64(nanos ^ u64::from(std::process::id()).rotate_left(32)).next() % 1_000_000_000
}

/// A small seedable generator (SplitMix64), so a seed means the same kill points forever.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// What a whole, unkilled run of one style looks like: the bounds of the random kill points.
#[derive(Debug, Clone)]
struct Calibration {
    lines: usize,
    elapsed: Duration,
    /// How many lines of each boundary type ([`BOUNDARIES`]) the run wrote.
    boundaries: Vec<(&'static str, usize)>,
    /// How long a whole rewind run and a whole fork run take.
    ops: Vec<(Op, Duration)>,
}

/// The lines after which panto is about to persist something or start work: a kill right
/// there hits the narrow windows a uniform choice rarely finds.
const BOUNDARIES: &[&str] = &[
    "message_complete",
    "tool_start",
    "tool_complete",
    "compaction_start",
    "compaction_complete",
];

/// The kill point of trial `n`: 40% by delay (uniform over the run's duration and a little
/// past it), 20% by line count (uniform over its lines), 20% right after a boundary line, 20%
/// shortly (0 to 300 ms) after the steer was sent.
fn kill_for(seed: u64, n: u64, calibration: &Calibration) -> Kill {
    let mut rng = SplitMix64(seed ^ n.wrapping_mul(0xd1b5_4a32_d192_ed03));
    let boundaries = nonzero_boundaries(calibration);
    match rng.range(0, 9) {
        0..=3 => {
            // A little past the end, so some runs finish before the kill.
            let max = calibration.elapsed.as_millis() as u64 * 11 / 10;
            Kill::AfterDelay(Duration::from_millis(rng.range(0, max)))
        }
        4..=5 if !boundaries.is_empty() => {
            let (kind, count) = boundaries[rng.range(0, boundaries.len() as u64 - 1) as usize];
            Kill::AfterEvent(kind, rng.range(1, count as u64) as usize)
        }
        6..=7 => Kill::AfterSteer(Duration::from_millis(rng.range(0, 300))),
        _ => Kill::AfterLines(rng.range(1, calibration.lines as u64) as usize),
    }
}

fn nonzero_boundaries(calibration: &Calibration) -> Vec<(&'static str, usize)> {
    calibration.boundaries.iter().copied().filter(|(_, c)| *c > 0).collect()
}

/// The rest of trial `n`'s plan, from its own random stream: when the steer is sent (right
/// after a random boundary line), how long the hook takes (100 to 300 ms), and the operation
/// after the killed run (none, a rewind with files or a fork, a third each) with its kill: 70%
/// after a delay uniform over a whole run of that operation and a little past it, 30% right
/// after its first or second stdout line (the fork is written before the first, the rewind
/// right after it).
fn rest_of_plan(seed: u64, n: u64, calibration: &Calibration) -> ((&'static str, usize), u64, Vec<(Op, Kill)>) {
    let mut rng = SplitMix64(seed.rotate_left(17) ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let boundaries = nonzero_boundaries(calibration);
    let steer = if boundaries.is_empty() {
        ("tool_start", 1)
    } else {
        let (kind, count) = boundaries[rng.range(0, boundaries.len() as u64 - 1) as usize];
        (kind, rng.range(1, count as u64) as usize)
    };
    let hook_ms = rng.range(100, 300);
    let op = match rng.range(0, 2) {
        0 => None,
        1 => Some(Op::Rewind),
        _ => Some(Op::Fork),
    };
    let ops = op
        .map(|op| {
            // An operation without a calibration of its own (a refused rewind) takes the
            // other's: a rewind with files, like a fork, resumes the session, writes to it and
            // answers a prompt.
            let whole = calibration
                .ops
                .iter()
                .find(|(o, _)| *o == op)
                .or_else(|| calibration.ops.first())
                .map_or(Duration::from_millis(500), |(_, d)| *d);
            let kill = if rng.range(0, 9) < 7 {
                Kill::AfterDelay(Duration::from_millis(rng.range(0, whole.as_millis() as u64 * 11 / 10)))
            } else {
                Kill::AfterLines(rng.range(1, 2) as usize)
            };
            vec![(op, kill)]
        })
        .unwrap_or_default();
    (steer, hook_ms, ops)
}

fn build(root: &Path, release: bool) -> Result<PathBuf> {
    if release {
        crate::cargo(
            root,
            &[
                "build",
                "--release",
                "-p",
                "panto-cli",
                "-p",
                "panto-testkit",
                "--bin",
                "panto",
                "--bin",
                "panto-mock",
            ],
        )?;
    } else {
        // The debug build every check shares (see `build_debug`), so nothing compiles again.
        crate::build_debug(root)?;
    }
    Ok(target_dir(root).join(if release { "release" } else { "debug" }))
}

/// Runs the harness.
pub fn run_with(root: &Path, options: &Options) -> Result<()> {
    let started = Instant::now();
    let seed = options.seed;
    println!(
        "crash-test: seed {seed} (replay with --seed {seed}), {} trials",
        options.trials
    );
    let bin = build(root, options.release)?;
    let panto = bin.join("panto");
    let mock = Mock::start(&bin.join("panto-mock"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting a tokio runtime")?;
    let base = target_dir(root).join("crash-test").join(format!("seed-{seed}"));
    if base.exists() {
        std::fs::remove_dir_all(&base).with_context(|| format!("removing {}", base.display()))?;
    }
    let ctx = trial::Harness {
        panto: &panto,
        mock: &mock,
        runtime: &runtime,
    };

    let mut calibrations = Vec::new();
    for style in [Style::Anthropic, Style::OpenAi] {
        let plan = Plan {
            n: 0,
            style,
            kill: Kill::Never,
            steer: ("tool_start", 1),
            hook_ms: 200,
            ops: vec![(Op::Rewind, Kill::Never), (Op::Fork, Kill::Never)],
            dir: base.join(format!("calibrate-{}", style.name())),
        };
        let passed = match trial::run(&ctx, &plan) {
            Ok(p) => p,
            Err(failed) => {
                println!("{}", failed.evidence);
                bail!(
                    "the {} calibration run (not killed) failed: {}; its files are in {}",
                    style.name(),
                    failed.problem,
                    plan.dir.display()
                );
            }
        };
        check_script_shape(style, &passed)?;
        let calibration = Calibration {
            lines: passed.first.lines,
            elapsed: passed.first_elapsed,
            boundaries: BOUNDARIES
                .iter()
                .map(|&kind| (kind, passed.first.counts.get(kind).copied().unwrap_or(0)))
                .collect(),
            // A refused rewind (the whole calibration run compacts every prompt away) measures
            // only a start-up: its time would put every rewind's kill before the rewind began.
            ops: passed
                .ops
                .iter()
                .zip(&passed.op_phases)
                .filter(|(_, phase)| !phase.starts_with("refused"))
                .map(|((op, d, _), _)| (*op, *d))
                .collect(),
        };
        let ops: Vec<String> = calibration
            .ops
            .iter()
            .map(|(op, d)| format!("{} {} ms", op.name(), d.as_millis()))
            .collect();
        println!(
            "calibration {:<9} {} lines in {} ms ({}); {}",
            style.name(),
            calibration.lines,
            calibration.elapsed.as_millis(),
            ops.join(", "),
            passed.summary
        );
        let _ = std::fs::remove_dir_all(&plan.dir);
        calibrations.push((style, calibration));
    }

    let (mut passed, mut failed) = (0u64, Vec::new());
    // Where the kills landed, for the closing summary: coverage is the point of random kills.
    let mut phases: Vec<(&'static str, u64)> = Vec::new();
    let mut closed = 0u64;
    let (mut in_hook, mut blobs) = (0u64, 0usize);
    let mut op_phases: Vec<(String, u64)> = Vec::new();
    let mut findings: Vec<u64> = Vec::new();
    let trials: Vec<u64> = match options.only {
        Some(k) => vec![k],
        None => (1..=options.trials).collect(),
    };
    for n in trials {
        let style = Style::of_trial(n);
        let calibration = calibrations
            .iter()
            .find(|(s, _)| *s == style)
            .map(|(_, c)| c)
            .context("a style without calibration")?;
        let (steer, hook_ms, ops) = rest_of_plan(seed, n, calibration);
        let plan = Plan {
            n,
            style,
            kill: kill_for(seed, n, calibration),
            steer,
            hook_ms,
            ops,
            dir: base.join(format!("trial-{n}")),
        };
        let then: Vec<String> = plan
            .ops
            .iter()
            .map(|(op, kill)| format!(", {} {kill}", op.name()))
            .collect();
        let label = format!(
            "trial {n:>4}/{} {:<9} {:<30}",
            options.trials,
            style.name(),
            format!("{}{}", plan.kill, then.join(""))
        );
        match trial::run(&ctx, &plan) {
            Ok(ok) => {
                passed += 1;
                let phase = ok.phase.unwrap_or("not killed: the run finished first");
                match phases.iter_mut().find(|(p, _)| *p == phase) {
                    Some((_, count)) => *count += 1,
                    None => phases.push((phase, 1)),
                }
                closed += u64::from(ok.pending > 0);
                in_hook += u64::from(ok.in_hook);
                blobs += ok.blobs;
                for ((op, _, _), phase) in ok.ops.iter().zip(&ok.op_phases) {
                    let key = format!("{} {phase}", op.name());
                    match op_phases.iter_mut().find(|(p, _)| *p == key) {
                        Some((_, count)) => *count += 1,
                        None => op_phases.push((key, 1)),
                    }
                }
                if ok.summary.contains("FINDING") {
                    findings.push(n);
                }
                println!("{label} ok    {}", ok.summary);
                if !options.keep {
                    let _ = std::fs::remove_dir_all(&plan.dir);
                }
            }
            Err(bad) => {
                println!("{label} FAIL  {}", bad.problem);
                println!("{}", bad.evidence);
                println!(
                    "trial {n} kept in {}; replay with: cargo xtask crash-test --seed {seed} --trials {} --trial {n}",
                    plan.dir.display(),
                    options.trials
                );
                failed.push(n);
            }
        }
    }
    phases.sort_by_key(|p| std::cmp::Reverse(p.1));
    let phases: Vec<String> = phases.iter().map(|(p, n)| format!("{p} {n}")).collect();
    println!("crash-test: kills landed: {}", phases.join(", "));
    println!("crash-test: {closed} resume(s) closed tool calls the kill left pending");
    println!("crash-test: {in_hook} kill(s) landed inside the bash hook; {blobs} checkpoint blob(s) checked whole");
    op_phases.sort_by_key(|p| std::cmp::Reverse(p.1));
    let op_phases: Vec<String> = op_phases.iter().map(|(p, n)| format!("{p} {n}")).collect();
    println!("crash-test: operations: {}", op_phases.join(", "));
    if !findings.is_empty() {
        println!("crash-test: trials with a FINDING (not failures; see their lines): {findings:?}");
    }
    println!(
        "crash-test: {passed} passed, {} failed (seed {seed}, {:.1} s)",
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        bail!("{} crash trial(s) failed: {:?} (seed {seed})", failed.len(), failed);
    }
    Ok(())
}

/// The calibration run must still exercise what the harness is about: tool calls including the
/// slow one, a compaction, and four model messages over five requests. A script that drifted
/// would otherwise make every trial pass vacuously.
fn check_script_shape(style: Style, run: &trial::Passed) -> Result<()> {
    let t = &run.first;
    let problems: Vec<String> = [
        (
            t.committed.len() == 4,
            format!("{} assistant messages, expected 4", t.committed.len()),
        ),
        (
            t.tool_starts.len() == 4,
            format!("{} tool calls, expected 4", t.tool_starts.len()),
        ),
        (t.compactions == 1, format!("{} compactions, expected 1", t.compactions)),
        (
            run.first_requests == 5,
            format!("{} requests, expected 5", run.first_requests),
        ),
        (t.tools.iter().all(|o| !o.is_error), "a tool call failed".to_owned()),
        (
            t.steers == [script::STEER],
            format!("steers taken {:?}, expected the one sent", t.steers),
        ),
        (
            run.ops.len() == 2 && run.ops.iter().all(|(_, _, killed)| !killed),
            "the rewind and fork runs did not both run".to_owned(),
        ),
        (
            run.blobs >= 2,
            format!("{} checkpoint blobs checked, expected at least 2", run.blobs),
        ),
    ]
    .into_iter()
    .filter(|(ok, _)| !ok)
    .map(|(_, problem)| problem)
    .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        bail!(
            "the {} calibration run no longer has the scripted shape: {}",
            style.name(),
            problems.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_points_are_reproducible_and_bounded() {
        let c = Calibration {
            lines: 100,
            elapsed: Duration::from_millis(1000),
            boundaries: vec![("tool_start", 4), ("compaction_start", 1), ("retry", 0)],
            ops: vec![
                (Op::Rewind, Duration::from_millis(300)),
                (Op::Fork, Duration::from_millis(300)),
            ],
        };
        let (mut by_lines, mut by_delay, mut by_event, mut by_steer) = (0, 0, 0, 0);
        let (mut plain, mut rewinds, mut forks) = (0, 0, 0);
        for n in 1..=300 {
            let k = kill_for(42, n, &c);
            assert_eq!(k, kill_for(42, n, &c), "the same seed and trial give the same kill");
            match k {
                Kill::AfterLines(l) => {
                    assert!((1..=100).contains(&l), "{l}");
                    by_lines += 1;
                }
                Kill::AfterDelay(d) => {
                    assert!(d <= Duration::from_millis(1100), "{d:?}");
                    by_delay += 1;
                }
                Kill::AfterEvent(kind, nth) => {
                    let bound = if kind == "tool_start" { 4 } else { 1 };
                    assert!(kind != "retry" && (1..=bound).contains(&nth), "{kind} {nth}");
                    by_event += 1;
                }
                Kill::AfterSteer(d) => {
                    assert!(d <= Duration::from_millis(300), "{d:?}");
                    by_steer += 1;
                }
                Kill::Never => panic!("every trial kills"),
            }
            let (steer, hook_ms, ops) = rest_of_plan(42, n, &c);
            assert!(steer.0 != "retry" && steer.1 >= 1, "{steer:?}");
            assert!((100..=300).contains(&hook_ms), "{hook_ms}");
            for (_, kill) in &ops {
                assert!(
                    matches!(kill, Kill::AfterLines(1..=2))
                        || matches!(kill, Kill::AfterDelay(d) if *d <= Duration::from_millis(330)),
                    "{kill:?}"
                );
            }
            match ops.first().map(|(op, _)| *op) {
                None => plain += 1,
                Some(Op::Rewind) => rewinds += 1,
                Some(Op::Fork) => forks += 1,
            }
        }
        assert!(
            by_lines > 30 && by_delay > 80 && by_event > 30 && by_steer > 30,
            "{by_lines} / {by_delay} / {by_event} / {by_steer}"
        );
        assert!(
            plain > 60 && rewinds > 60 && forks > 60,
            "{plain} / {rewinds} / {forks}"
        );
        // A rewind without a calibration of its own (it was refused) is killed within the
        // fork's time, not within a start-up's.
        let fork_only = Calibration {
            ops: vec![(Op::Fork, Duration::from_millis(300))],
            ..c.clone()
        };
        let mut longest = Duration::ZERO;
        for n in 1..=300 {
            for (op, kill) in rest_of_plan(42, n, &fork_only).2 {
                if let (Op::Rewind, Kill::AfterDelay(d)) = (op, kill) {
                    assert!(d <= Duration::from_millis(330), "{d:?}");
                    longest = longest.max(d);
                }
            }
        }
        assert!(longest > Duration::from_millis(200), "{longest:?}");
        let differs = (1..=20).any(|n| kill_for(1, n, &c) != kill_for(2, n, &c));
        assert!(differs, "another seed gives other kill points");
    }

    #[test]
    fn arguments_are_checked() {
        let args = |a: &[&str]| parse_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let o = args(&["--trials", "7", "--seed", "99", "--trial", "3", "--release"]).unwrap();
        assert_eq!((o.trials, o.seed, o.only, o.release), (7, 99, Some(3), true));
        assert_eq!(args(&[]).unwrap().trials, 50);
        for (bad, expected) in [
            (&["--trials"][..], "needs a number"),
            (&["--trials", "x"][..], "not a non-negative integer"),
            (&["--trials", "0"][..], "at least 1"),
            (&["--trials", "5", "--trial", "6"][..], "not one of the trials"),
            (&["--bogus"][..], "unknown argument"),
        ] {
            let err = format!("{:#}", args(bad).unwrap_err());
            assert!(err.contains(expected), "{bad:?}: {err}");
        }
    }
}
