//! `cargo xtask crash-test [--trials N] [--seed S] [--trial K] [--release] [--keep]`: the kill-9
//! crash harness (docs/robustness.md).
//!
//! Each trial runs `panto -p … --output-format stream-json --approve auto` against `panto-mock`
//! with a scripted turn that streams text, calls tools (a slow `bash`, `read`, `write`) and
//! compacts, and SIGKILLs it at a random moment: after a random number of stdout lines, or after
//! a random delay. Then it checks that:
//!
//! 1. every request the killed run sent was valid for the API;
//! 2. the session file passes an independent format check (every line but a torn last one parses,
//!    the header is right, entry ids are unique and chain by `parent_id`, each entry's activity is
//!    right) and the store loads exactly the view the specification's replay gives;
//! 3. every message the run reported as committed (`message_complete`, tool results the run
//!    went on past, `compaction_complete`) is in the log, by content;
//! 4. `panto -r ID -p continue` succeeds, its requests are valid, the first one closes every tool
//!    call the kill left pending with the interrupted-turn closer, the closer is persisted, and
//!    no committed byte of the file was rewritten.
//!
//! Trials alternate between the Anthropic and OpenAI API styles. Two calibration runs (one per
//! style, not killed) first check that the script still does what it should and measure how many
//! lines and milliseconds a whole run takes, which bound the random kill points. Every trial's
//! randomness comes from the seed and its number, so `--seed S --trial K` replays trial K (a kill
//! by line count lands at the same place; one by delay lands at about the same time).

mod format;
mod mock;
mod run;
mod script;
mod stream;
mod trial;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use crate::target_dir;
use mock::Mock;
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
/// past it), 30% by line count (uniform over its lines), 30% right after a boundary line.
fn kill_for(seed: u64, n: u64, calibration: &Calibration) -> Kill {
    let mut rng = SplitMix64(seed ^ n.wrapping_mul(0xd1b5_4a32_d192_ed03));
    let boundaries: Vec<(&'static str, usize)> =
        calibration.boundaries.iter().copied().filter(|(_, c)| *c > 0).collect();
    match rng.range(0, 9) {
        0..=3 => {
            // A little past the end, so some runs finish before the kill.
            let max = calibration.elapsed.as_millis() as u64 * 11 / 10;
            Kill::AfterDelay(Duration::from_millis(rng.range(0, max)))
        }
        4..=6 if !boundaries.is_empty() => {
            let (kind, count) = boundaries[rng.range(0, boundaries.len() as u64 - 1) as usize];
            Kill::AfterEvent(kind, rng.range(1, count as u64) as usize)
        }
        _ => Kill::AfterLines(rng.range(1, calibration.lines as u64) as usize),
    }
}

fn build(root: &Path, release: bool) -> Result<PathBuf> {
    let mut args = vec![
        "build",
        "-p",
        "panto-cli",
        "-p",
        "panto-testkit",
        "--bin",
        "panto",
        "--bin",
        "panto-mock",
    ];
    if release {
        args.push("--release");
    }
    crate::cargo(root, &args)?;
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
        };
        println!(
            "calibration {:<9} {} lines in {} ms; {}",
            style.name(),
            calibration.lines,
            calibration.elapsed.as_millis(),
            passed.summary
        );
        let _ = std::fs::remove_dir_all(&plan.dir);
        calibrations.push((style, calibration));
    }

    let (mut passed, mut failed) = (0u64, Vec::new());
    // Where the kills landed, for the closing summary: coverage is the point of random kills.
    let mut phases: Vec<(&'static str, u64)> = Vec::new();
    let mut closed = 0u64;
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
        let plan = Plan {
            n,
            style,
            kill: kill_for(seed, n, calibration),
            dir: base.join(format!("trial-{n}")),
        };
        let label = format!(
            "trial {n:>4}/{} {:<9} {:<30}",
            options.trials,
            style.name(),
            plan.kill.to_string()
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
        };
        let (mut by_lines, mut by_delay, mut by_event) = (0, 0, 0);
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
                Kill::Never => panic!("every trial kills"),
            }
        }
        assert!(
            by_lines > 50 && by_delay > 80 && by_event > 50,
            "{by_lines} / {by_delay} / {by_event}"
        );
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
