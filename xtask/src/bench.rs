//! `cargo xtask bench` and `cargo xtask bench-data`: the performance targets of issue 7, measured
//! and checked.
//!
//! `bench-data` builds the data sets under `target/bench-data/` through the real
//! `JsonlStore` (the `bench_data` bench of panto-store-fs does the writing; about
//! 1.3 GB, or 12 GB more with `--large`).
//!
//! `bench` builds the default data sets if needed, runs every criterion bench, and prints one
//! table of measured numbers against the targets. Criterion keeps the timings
//! (`target/criterion/<id>/new/estimates.json`); each bench binary adds the facts criterion
//! does not know (bytes and events per body, latency percentiles, peak RSS) in
//! `target/bench-results/<bench>.tsv`. The table is also written to
//! `target/bench-results/summary.md` for `docs/performance.md`.
//!
//! Times are criterion's **median** estimate: the machine is shared, and the median is the
//! number least moved by another process's burst.
//!
//! Whole-process targets (`panto --version`, `panto -p hi`, resume by prefix and `panto sessions
//! --json`) come from the `process` bench of panto-cli, which runs the release binary against
//! the loopback mock server and records each child's peak RSS. The same bench runs each of the
//! five everyday commands alternately with its floor (a C program doing the same input and output
//! and nothing else) and records both medians and their ratio, checked here against issue 50's
//! bounds.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::{cargo_command, run, target_dir};

/// The benches, by package: `(package, bench targets)`.
const BENCHES: &[(&str, &[&str])] = &[
    ("panto-core", &["sse", "turn", "cache", "request"]),
    ("panto-store-fs", &["append", "list", "load", "search"]),
    ("panto-store-postgres", &["pg_search"]),
    ("panto-cli", &["process"]),
    ("panto-service-example", &["fleet"]),
    ("panto-tools", &["grep"]),
    ("panto-mcp", &["mcp"]),
];

const BENCH_USAGE: &str = "usage: cargo xtask bench [--cold] [--only <bench>...]
       cargo xtask bench-data [--large] [--force]

bench:       build the default data sets if needed, run every bench, print the targets table
  --cold     list, resolve and search with the page cache dropped before each iteration (root only)
  --only B   run only bench B (sse, turn, cache, request, append, list, load, search, pg_search, process, grep, mcp,
             fleet); repeatable; the
             table still shows every target, from the latest results on disk
             (fleet: PANTO_FLEET_SIZES=100,1000 and PANTO_FLEET_STORES=jsonl|postgres narrow it)
bench-data:  build the data sets under target/bench-data (about 1.3 GB)
  --large    also the 10,000 × 1 MB set (about 11 GB; checks free space first)
  --force    rebuild sets that are already there";

/// `cargo xtask bench-data [--large] [--force]`.
pub fn bench_data(root: &Path, args: &[String]) -> Result<()> {
    let mut pass = vec!["--generate".to_owned()];
    for arg in args {
        match arg.as_str() {
            "--large" | "--force" => pass.push(arg.clone()),
            "-h" | "--help" => {
                println!("{BENCH_USAGE}");
                return Ok(());
            }
            other => bail!("unknown option {other:?}\n\n{BENCH_USAGE}"),
        }
    }
    let mut cmd = cargo_command(root);
    cmd.args(["bench", "-p", "panto-store-fs", "--bench", "bench_data", "--"])
        .args(&pass);
    run(&mut cmd)
}

/// `cargo xtask bench [--cold] [--only <bench>...]`.
pub fn bench(root: &Path, args: &[String]) -> Result<()> {
    let mut cold = false;
    let mut only: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--cold" => cold = true,
            "--only" => only.push(it.next().context("--only needs a bench name")?.clone()),
            "-h" | "--help" => {
                println!("{BENCH_USAGE}");
                return Ok(());
            }
            other => bail!("unknown option {other:?}\n\n{BENCH_USAGE}"),
        }
    }
    let known: Vec<&str> = BENCHES.iter().flat_map(|(_, b)| b.iter().copied()).collect();
    if let Some(bad) = only.iter().find(|b| !known.contains(&b.as_str())) {
        bail!("unknown bench {bad:?}; benches: {}", known.join(", "));
    }
    let wanted = |b: &str| only.is_empty() || only.iter().any(|o| o == b);

    // The store benches would build missing sets themselves; building them first keeps that
    // time out of the first bench's output.
    if ["list", "load", "search", "process"].iter().any(|b| wanted(b)) {
        bench_data(root, &[])?;
    }
    for (package, benches) in BENCHES {
        let selected: Vec<&str> = benches.iter().copied().filter(|b| wanted(b)).collect();
        if selected.is_empty() {
            continue;
        }
        let mut cmd = cargo_command(root);
        cmd.args(["bench", "-p", package]);
        for b in &selected {
            cmd.args(["--bench", b]);
        }
        if cold {
            cmd.env("PANTO_BENCH_COLD", "1");
        }
        run(&mut cmd)?;
    }

    let results = Results::read(&target_dir(root))?;
    let mut rows = library_rows(&results);
    rows.extend(process_rows(&results));
    rows.extend(floor_rows(&results));
    rows.extend(fleet_rows(&results));
    let table = render(&rows, &machine());
    println!("\n{table}");
    let summary = target_dir(root).join("bench-results").join("summary.md");
    std::fs::write(&summary, &table).with_context(|| format!("writing {}", summary.display()))?;
    println!("(also written to {})", summary.display());
    let missed: Vec<&str> = rows
        .iter()
        .filter(|r| r.status() == Status::Missed)
        .map(|r| r.name.as_str())
        .collect();
    if !missed.is_empty() {
        println!("targets missed: {}", missed.join("; "));
    }
    Ok(())
}

/// What the benches left on disk.
#[derive(Debug, Default)]
pub(crate) struct Results {
    /// Criterion median estimates in nanoseconds, by benchmark id (`group/function[/value]`).
    medians: BTreeMap<String, f64>,
    /// Facts by benchmark id, then key.
    facts: BTreeMap<String, BTreeMap<String, f64>>,
}

impl Results {
    fn read(target: &Path) -> Result<Self> {
        let mut results = Results::default();
        let criterion = target.join("criterion");
        if criterion.is_dir() {
            collect_estimates(&criterion, &criterion, &mut results.medians)?;
        }
        let facts = target.join("bench-results");
        if let Ok(entries) = std::fs::read_dir(&facts) {
            for entry in entries {
                let path = entry?.path();
                if path.extension().is_some_and(|e| e == "tsv") {
                    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
                    for line in text.lines() {
                        let mut cols = line.split('\t');
                        if let (Some(id), Some(key), Some(value)) = (cols.next(), cols.next(), cols.next()) {
                            if let Ok(v) = value.parse::<f64>() {
                                results
                                    .facts
                                    .entry(id.to_owned())
                                    .or_default()
                                    .insert(key.to_owned(), v);
                            }
                        }
                    }
                }
            }
        }
        Ok(results)
    }

    /// Criterion's median for `id`, in nanoseconds.
    pub(crate) fn median_ns(&self, id: &str) -> Option<f64> {
        self.medians.get(id).copied()
    }

    /// A fact the bench recorded for `id`.
    pub(crate) fn fact(&self, id: &str, key: &str) -> Option<f64> {
        self.facts.get(id)?.get(key).copied()
    }
}

/// Walks `target/criterion`, reading every `new/estimates.json`.
fn collect_estimates(base: &Path, dir: &Path, out: &mut BTreeMap<String, f64>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|n| n == "new") {
            let estimates = path.join("estimates.json");
            if let Ok(text) = std::fs::read_to_string(&estimates) {
                let id = dir
                    .strip_prefix(base)
                    .unwrap_or(dir)
                    .to_string_lossy()
                    .replace('\\', "/");
                if let Some(median) = json_number_after(&text, &["\"median\"", "\"point_estimate\""]) {
                    out.insert(id, median);
                }
            }
        } else if path
            .file_name()
            .is_some_and(|n| n != "report" && n != "base" && n != "change")
        {
            collect_estimates(base, &path, out)?;
        }
    }
    Ok(())
}

/// The number after the last of `keys`, each searched for after the one before: enough JSON for
/// criterion's flat estimates files without a JSON dependency in xtask.
fn json_number_after(text: &str, keys: &[&str]) -> Option<f64> {
    let mut at = 0;
    for key in keys {
        at += text[at..].find(key)? + key.len();
    }
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// How a measured value compares to its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// The value must be at most the limit.
    AtMost,
    /// The value must be at least the limit.
    AtLeast,
    /// No target; shown for context.
    Info,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Met,
    Missed,
    NotMeasured,
    Info,
}

/// One line of the table.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub name: String,
    pub value: Option<f64>,
    pub unit: &'static str,
    pub bound: Bound,
    pub limit: f64,
    /// How it was measured, in a few words.
    pub how: String,
}

impl Row {
    fn status(&self) -> Status {
        match (self.value, self.bound) {
            (None, Bound::Info) => Status::Info,
            (None, _) => Status::NotMeasured,
            (Some(_), Bound::Info) => Status::Info,
            (Some(v), Bound::AtMost) if v <= self.limit => Status::Met,
            (Some(v), Bound::AtLeast) if v >= self.limit => Status::Met,
            (Some(_), _) => Status::Missed,
        }
    }
}

fn row(name: &str, value: Option<f64>, unit: &'static str, bound: Bound, limit: f64, how: &str) -> Row {
    Row {
        name: name.to_owned(),
        value,
        unit,
        bound,
        limit,
        how: how.to_owned(),
    }
}

/// The SSE input names and chunkings the `sse` bench measures.
const SSE_CASES: &[&str] = &[
    "anthropic-recorded/whole",
    "openai-recorded/whole",
    "anthropic-recorded-10k-deltas/whole",
    "anthropic-recorded-10k-deltas/segments",
    "openai-recorded-10k-deltas/whole",
    "openai-recorded-10k-deltas/segments",
];

const NS_PER_MS: f64 = 1e6;
const NS_PER_US: f64 = 1e3;

/// The targets the library benches measure.
pub(crate) fn library_rows(r: &Results) -> Vec<Row> {
    let mut rows = Vec::new();
    for case in SSE_CASES {
        let id = format!("sse/{case}");
        let median = r.median_ns(&id);
        let mbps = median.zip(r.fact(&id, "bytes")).map(|(ns, b)| b / (ns / 1e9) / 1e6);
        let per_event = median.zip(r.fact(&id, "sse_events")).map(|(ns, e)| ns / e / NS_PER_US);
        rows.push(row(
            &format!("SSE decode {case}: throughput"),
            mbps,
            "MB/s",
            Bound::AtLeast,
            400.0,
            "wire bytes / median time",
        ));
        rows.push(row(
            &format!("SSE decode {case}: per event"),
            per_event,
            "µs",
            Bound::AtMost,
            1.0,
            "median time / SSE events",
        ));
    }

    // One event on one line: linear time means the line costs the same in TCP segments as in
    // one piece (the parser once searched the line again on every segment: quadratic).
    let long_line = |mib: u32, how: &str| {
        let id = format!("sse-long-line/{mib}MiB/{how}");
        r.median_ns(&id).zip(r.fact(&id, "bytes"))
    };
    for mib in [1, 4, 15] {
        rows.push(row(
            &format!("SSE one {mib} MiB line in segments: throughput"),
            long_line(mib, "segments").map(|(ns, b)| b / (ns / 1e9) / 1e6),
            "MB/s",
            Bound::Info,
            0.0,
            "wire bytes / median time",
        ));
    }
    rows.push(row(
        "SSE one 15 MiB line: segments / whole",
        long_line(15, "segments")
            .zip(long_line(15, "whole"))
            .map(|((segments, _), (whole, _))| segments / whole),
        "×",
        Bound::AtMost,
        1.5,
        "ratio of medians; 1 is linear",
    ));

    // The grep tool against ripgrep, the same search of the same 100 MB tree.
    let (panto, rg) = (r.median_ns("grep-100mb/panto"), r.median_ns("grep-100mb/rg"));
    rows.push(row(
        "grep tool over 100 MB: time",
        panto.map(|ns| ns / NS_PER_MS),
        "ms",
        Bound::Info,
        0.0,
        "median time of one search",
    ));
    rows.push(row(
        "grep tool over 100 MB: / ripgrep",
        panto.zip(rg).map(|(p, g)| p / g),
        "×",
        Bound::AtMost,
        2.0,
        "ratio of medians, rg run as a process on the same tree",
    ));

    // MCP over stdio: panto's share of a tool call's round trip, and parallel start-up.
    rows.push(row(
        "MCP stdio call: panto overhead p50",
        r.fact("mcp-call/panto", "overhead_p50_us").map(|us| us / 1000.0),
        "ms",
        Bound::AtMost,
        1.0,
        "p50 through McpSource minus p50 of the same call by hand",
    ));
    rows.push(row(
        "MCP start: 5 servers / 1",
        r.median_ns("mcp-start/5")
            .zip(r.median_ns("mcp-start/1"))
            .map(|(five, one)| five / one),
        "×",
        Bound::Info,
        0.0,
        "ratio of medians; 5 would be one after another",
    ));

    let agent = r.median_ns("turn/agent-100k-deltas");
    let bare = r.median_ns("turn/bare-reqwest-100k-deltas");
    let deltas = r.fact("turn/agent-100k-deltas", "deltas");
    rows.push(row(
        "turn, 100k deltas: Agent + reqwest",
        agent.map(|ns| ns / NS_PER_MS),
        "ms",
        Bound::Info,
        0.0,
        "median",
    ));
    rows.push(row(
        "turn, 100k deltas: bare reqwest read",
        bare.map(|ns| ns / NS_PER_MS),
        "ms",
        Bound::Info,
        0.0,
        "median",
    ));
    let overhead = match (agent, bare, deltas) {
        (Some(a), Some(b), Some(d)) => Some((a - b) / d / NS_PER_US),
        _ => None,
    };
    rows.push(row(
        "turn: agent overhead per event",
        overhead,
        "µs",
        Bound::AtMost,
        2.0,
        "(agent − bare) / deltas",
    ));

    rows.extend(cache_rows(r));

    let p99 = |id: &str| r.fact(id, "p99_ns").map(|ns| ns / NS_PER_MS);
    rows.push(row(
        "append one tool turn, fsync: p99",
        p99("append/turn-fsync"),
        "ms",
        Bound::AtMost,
        20.0,
        "every append timed",
    ));
    rows.push(row(
        "append one tool turn, no fsync: median",
        r.median_ns("append/turn-no-fsync").map(|ns| ns / NS_PER_US),
        "µs",
        Bound::AtMost,
        50.0,
        "criterion median",
    ));
    rows.push(row(
        "append one tool turn, no fsync: p99",
        r.fact("append/turn-no-fsync", "p99_ns").map(|ns| ns / NS_PER_US),
        "µs",
        Bound::Info,
        0.0,
        "every append timed",
    ));
    rows.push(row(
        "append one text turn, no fsync: median",
        r.median_ns("append/text-turn-no-fsync").map(|ns| ns / NS_PER_US),
        "µs",
        Bound::AtMost,
        50.0,
        "criterion median",
    ));
    rows.push(row(
        "append one message, no fsync: median",
        r.median_ns("append/message-no-fsync").map(|ns| ns / NS_PER_US),
        "µs",
        Bound::AtMost,
        50.0,
        "criterion median",
    ));
    rows.push(row(
        "append one message, fsync: p99",
        p99("append/message-fsync"),
        "ms",
        Bound::AtMost,
        20.0,
        "every append timed",
    ));

    let ms = |id: &str| r.median_ns(id).map(|ns| ns / NS_PER_MS);
    for suffix in ["", "-cold"] {
        let label = if suffix.is_empty() { "warm cache" } else { "cold cache" };
        let k1 = ms(&format!("list/sessions-1k-1mb{suffix}"));
        let small = ms(&format!("list/sessions-10k-1kb{suffix}"));
        let large = ms(&format!("list/sessions-10k-1mb{suffix}"));
        if suffix == "-cold" && k1.is_none() && small.is_none() {
            continue;
        }
        rows.push(row(
            &format!("list 1,000 × 1 MB ({label})"),
            k1,
            "ms",
            Bound::AtMost,
            30.0,
            "median",
        ));
        rows.push(row(
            &format!("list 10,000 × 1 KB ({label})"),
            small,
            "ms",
            Bound::AtMost,
            150.0,
            "median",
        ));
        rows.push(row(
            &format!("list 10,000 × 1 MB ({label})"),
            large,
            "ms",
            Bound::AtMost,
            150.0,
            "median; needs bench-data --large",
        ));
        rows.push(row(
            &format!("list 10,000 × 1 MB / 10,000 × 1 KB ({label})"),
            large.zip(small).map(|(l, s)| l / s),
            "×",
            Bound::AtMost,
            1.5,
            "ratio of medians",
        ));
        rows.push(row(
            &format!("resolve prefix among 1,000 × 1 MB ({label})"),
            ms(&format!("resolve/prefix-sessions-1k-1mb{suffix}")),
            "ms",
            Bound::Info,
            0.0,
            "median",
        ));
    }

    // Search (issue 49): a word said in one session of 1,000 of 1 MB; PostgreSQL over 100,000.
    rows.push(row(
        "search 1,000 × 1 MB, a word in 1 session (warm cache)",
        ms("search/sessions-1k-1mb"),
        "ms",
        Bound::AtMost,
        500.0,
        "median",
    ));
    rows.push(row(
        "search 1,000 × 1 MB, a word in 1 session (cold cache)",
        ms("search/sessions-1k-1mb-cold"),
        "ms",
        Bound::AtMost,
        1500.0,
        "median; needs --cold",
    ));
    rows.push(row(
        "PostgreSQL search over 100,000 sessions, a word in 1",
        ms("sessions/search/100k"),
        "ms",
        Bound::AtMost,
        50.0,
        "median; trigram index",
    ));

    let compacted = "load/session-128mb-compacted";
    let full = "load/session-128mb-full";
    let mb = |id: &str, key: &str| r.fact(id, key).map(|b| b / 1e6);
    rows.push(row(
        "load 128 MB, compacted late",
        ms(compacted),
        "ms",
        Bound::AtMost,
        300.0,
        "median",
    ));
    rows.push(row(
        "load 128 MB, compacted late: peak RSS",
        mb(compacted, "peak_rss_bytes"),
        "MB",
        Bound::AtMost,
        mb(compacted, "file_bytes").unwrap_or(0.0),
        "VmHWM of a fresh process; limit = file size",
    ));
    rows.push(row(
        "load 128 MB, never compacted",
        ms(full),
        "ms",
        Bound::AtMost,
        1000.0,
        "median",
    ));
    rows.push(row(
        "load 128 MB, never compacted: peak RSS",
        mb(full, "peak_rss_bytes"),
        "MB",
        Bound::Info,
        0.0,
        "VmHWM of a fresh process",
    ));
    rows.push(row(
        "first append after resume, 128 MB compacted",
        ms(&format!("{compacted}-reopen-append")),
        "ms",
        Bound::Info,
        0.0,
        "median; reopens the file for writing",
    ));
    rows.push(row(
        "first append after resume, 128 MB never compacted",
        ms(&format!("{full}-reopen-append")),
        "ms",
        Bound::Info,
        0.0,
        "median; reopens the file for writing",
    ));
    // Building a request body (no target): the fleet's small request and a 1 MB session.
    for (case, what) in [
        ("fleet-turn", "the fleet's third request"),
        ("session-1mb", "a 1 MB session"),
    ] {
        for style in ["anthropic", "openai-chat", "openai-responses"] {
            rows.push(row(
                &format!("request body, {what}, {style}"),
                r.median_ns(&format!("request/{case}/{style}")).map(|ns| ns / NS_PER_US),
                "µs",
                Bound::Info,
                0.0,
                "median; typed wire structs to bytes",
            ));
        }
    }
    rows
}

/// Prompt caching (issue 14): the input billed over a 50-step tool loop by the mock's Anthropic
/// cache, against the best placement and against no cache.
pub(crate) fn cache_rows(r: &Results) -> Vec<Row> {
    let id = "cache/tool-loop-50";
    let billed = r.fact(id, "billed");
    let ratio = |to: &str| billed.zip(r.fact(id, to)).map(|(b, t)| b / t);
    vec![
        row(
            "prompt cache, 50-step tool loop: billed / best placement",
            ratio("best"),
            "×",
            Bound::AtMost,
            1.05,
            "input cost, mock billing by the API's cache rules",
        ),
        row(
            "prompt cache, 50-step tool loop: billed / no cache",
            ratio("uncached"),
            "×",
            Bound::Info,
            0.0,
            "input cost; reads 0.1x, writes 1.25x",
        ),
        row(
            "prompt cache, 50-step tool loop: breakpoints per request",
            r.fact(id, "max_breakpoints"),
            "",
            Bound::AtMost,
            4.0,
            "most in any request",
        ),
        row(
            "prompt cache, 50-step tool loop: time",
            r.median_ns(id).map(|ns| ns / NS_PER_MS),
            "ms",
            Bound::Info,
            0.0,
            "median; 51 requests, 50 tool calls",
        ),
    ]
}

/// Whole-process targets: the release `panto` binary, run by the `process` bench of panto-cli.
pub(crate) fn process_rows(r: &Results) -> Vec<Row> {
    let ms = |id: &str| r.median_ns(id).map(|ns| ns / NS_PER_MS);
    let mib = |id: &str| r.fact(id, "peak_rss_bytes").map(|b| b / (1024.0 * 1024.0));
    let new_session = ms("process/print_new_session");
    let resume = ms("process/resume_prefix/1000_sessions");
    let small = ms("process/sessions_json/10000");
    let large = ms("process/sessions_json/10000_1mb");
    vec![
        row(
            "panto --version",
            ms("process/version"),
            "ms",
            Bound::AtMost,
            5.0,
            "median",
        ),
        row(
            "panto -p hi, new session",
            new_session,
            "ms",
            Bound::AtMost,
            30.0,
            "median, loopback mock server",
        ),
        row(
            "panto -p hi, new session: peak RSS",
            mib("process/print_new_session"),
            "MiB",
            Bound::AtMost,
            30.0,
            "wait4 of panto's process alone",
        ),
        row(
            "panto -r PREFIX -p hi among 1,000 × 1 MB",
            resume,
            "ms",
            Bound::Info,
            0.0,
            "median",
        ),
        row(
            "resume among 1,000 × 1 MB: over a new session",
            resume.zip(new_session).map(|(r, n)| r - n),
            "ms",
            Bound::AtMost,
            20.0,
            "difference of medians",
        ),
        row(
            "resume: peak RSS, 1,000 sessions in the directory",
            mib("process/resume_prefix/1000_sessions"),
            "MiB",
            Bound::AtMost,
            // Memory must not grow with the directory: the limit is the same resume among 10
            // sessions, plus 10% for noise.
            mib("process/resume_prefix/10_sessions").map_or(0.0, |m| m * 1.1),
            "limit: the same among 10 sessions + 10%",
        ),
        row(
            "panto sessions --json, 1,000 × 1 MB",
            ms("process/sessions_json/1000"),
            "ms",
            Bound::AtMost,
            30.0,
            "median",
        ),
        row(
            "panto sessions --json, 10,000 × 1 KB",
            small,
            "ms",
            Bound::AtMost,
            150.0,
            "median",
        ),
        row(
            "panto sessions --json, 10,000 × 1 MB",
            large,
            "ms",
            Bound::Info,
            0.0,
            "median; needs bench-data --large",
        ),
        row(
            "panto sessions --json, 10,000 × 1 MB / × 1 KB",
            large.zip(small).map(|(l, s)| l / s),
            "×",
            Bound::AtMost,
            1.5,
            "ratio of medians",
        ),
    ]
}

/// The everyday commands against their floors (issue 50): `(id, command, most panto / floor)`.
const FLOORS: &[(&str, &str, f64)] = &[
    ("floor/version", "panto --version", 1.5),
    ("floor/print_new_session", "panto -p hi, new session", 1.5),
    ("floor/sessions/1000", "panto sessions, 1,000 × 1 MB", 2.0),
    (
        "floor/resume_prefix/1000_sessions",
        "panto -r PREFIX -p hi among 1,000 × 1 MB",
        2.0,
    ),
    (
        "floor/resume_128mb_compacted",
        "panto -r ID -p hi, 128 MB session compacted late",
        2.0,
    ),
];

/// Each everyday command against its floor, the least possible program doing the same input and
/// output (`crates/panto-cli/benches/process/floor.c`), run alternately by the `process` bench.
pub(crate) fn floor_rows(r: &Results) -> Vec<Row> {
    let mut rows = Vec::new();
    for &(id, command, limit) in FLOORS {
        let fact = |key: &str| r.fact(id, key);
        let ms = |key: &str| fact(key).map_or("?".to_owned(), |ns| fmt(ns / NS_PER_MS));
        rows.push(row(
            &format!("{command}: / floor"),
            fact("ratio"),
            "×",
            Bound::AtMost,
            limit,
            &format!(
                "panto {} ms, floor {} ms: medians of {} alternating runs each",
                ms("panto_ns"),
                ms("floor_ns"),
                fact("rounds").map_or("?".to_owned(), |n| format!("{n:.0}")),
            ),
        ));
        let mib = |key: &str| fact(key).map(|b| b / (1024.0 * 1024.0));
        rows.push(row(
            &format!("{command}: peak RSS"),
            mib("panto_peak_rss_bytes"),
            "MiB",
            Bound::Info,
            0.0,
            &format!(
                "wait4 of panto's process alone; the floor's {} MiB",
                mib("floor_peak_rss_bytes").map_or("?".to_owned(), fmt)
            ),
        ));
    }
    rows
}

/// The fleet sizes and stores the `fleet` bench runs (examples/service/benches/fleet.rs).
const FLEET_SIZES: &[u32] = &[100, 1_000, 10_000];
const FLEET_STORES: &[&str] = &["jsonl", "postgres"];

/// Many agents in one process (issue 21): one group of rows per store and fleet size.
pub(crate) fn fleet_rows(r: &Results) -> Vec<Row> {
    let mut rows = Vec::new();
    for store in FLEET_STORES {
        for &n in FLEET_SIZES {
            let id = format!("fleet/{store}/{n}");
            let fact = |key: &str| r.fact(&id, key);
            let name = |what: &str| format!("fleet {store}, {n} agents: {what}");
            rows.push(row(
                &name("turns failed"),
                fact("failed"),
                "",
                Bound::AtMost,
                0.0,
                "3-step tool turns, 2 worker threads",
            ));
            rows.push(row(
                &name("turns/s"),
                fact("turns_per_s"),
                "/s",
                Bound::Info,
                0.0,
                "agents / wall time, starts spread over 1 s, each reply's first token after 400 ms",
            ));
            rows.push(row(
                &name("added latency p50"),
                fact("added_p50_ms"),
                "ms",
                Bound::Info,
                0.0,
                "turn wall time minus the mock's time",
            ));
            rows.push(row(
                &name("added latency p99"),
                fact("added_p99_ms"),
                "ms",
                Bound::Info,
                0.0,
                "turn wall time minus the mock's time",
            ));
            rows.push(row(
                &name("HTTP floor: a bare HTTP client's added latency p99"),
                fact("http_floor_added_p99_ms"),
                "ms",
                Bound::Info,
                0.0,
                "the same requests and mock, replies read to their end, nothing written",
            ));
            rows.push(row(
                &name("floor: the bare client writing as the store, added latency p99"),
                fact("bare_added_p99_ms"),
                "ms",
                Bound::Info,
                0.0,
                "the HTTP floor plus each append written as the store must (synced lines; committed rows)",
            ));
            rows.push(row(
                &name("panto and its store's added latency p99 over the HTTP floor"),
                fact("panto_added_over_http_p99_ms"),
                "ms",
                Bound::Info,
                0.0,
                "added latency p99 minus the HTTP floor's: the store's durable writes included",
            ));
            // The issue's latency target is set at 1,000 agents, on what panto adds: the floor
            // (HTTP, loopback, the mock's own queue on the same two cores, and the writes any
            // store must make durable before a turn goes on) is not panto's.
            let (bound, limit) = if n == 1_000 {
                (Bound::AtMost, 5.0)
            } else {
                (Bound::Info, 0.0)
            };
            rows.push(row(
                &name("panto's added latency p99 over the floor"),
                fact("panto_added_p99_ms"),
                "ms",
                bound,
                limit,
                "added latency p99 minus the bare client's",
            ));
            rows.push(row(
                &name("descriptors per idle agent"),
                fact("fds_idle"),
                "",
                Bound::AtMost,
                2.0,
                "after the turns, agents live (the mock runs in another process)",
            ));
            rows.push(row(
                &name("descriptors per agent, peak"),
                fact("fds_peak"),
                "",
                Bound::Info,
                0.0,
                "sampled every 100 ms",
            ));
            rows.push(row(
                &name("idle agent heap beyond its conversation"),
                fact("heap_idle_beyond_conversation_kb"),
                "KB",
                Bound::AtMost,
                64.0,
                "counting allocator; pooled connections and store state included",
            ));
            rows.push(row(
                &name("heap per agent mid-turn, peak"),
                fact("heap_peak_kb"),
                "KB",
                Bound::Info,
                0.0,
                "counting allocator, conversation included",
            ));
            rows.push(row(
                &name("RSS per agent mid-turn, peak"),
                fact("rss_peak_kb"),
                "KB",
                Bound::Info,
                0.0,
                "/proc/self/statm, sampled",
            ));
            rows.push(row(
                &name("RSS per idle agent"),
                fact("rss_idle_kb"),
                "KB",
                Bound::Info,
                0.0,
                "/proc/self/statm",
            ));
            rows.push(row(
                &name("CPU per turn"),
                fact("cpu_ms_per_turn"),
                "ms",
                Bound::Info,
                0.0,
                "fleet process user+system time / turns",
            ));
            rows.push(row(
                &name("descriptors needed"),
                fact("peak_descriptors"),
                "",
                Bound::Info,
                0.0,
                "peak open descriptors of the fleet process",
            ));
        }
    }
    rows
}

/// The machine, for the table's heading.
fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    format!("{cpus} CPUs ({model}), load average {load}")
}

fn render(rows: &[Row], machine: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Machine: {machine}\n");
    let _ = writeln!(out, "| target | measured | limit | status | how |");
    let _ = writeln!(out, "| --- | ---: | ---: | --- | --- |");
    for r in rows {
        let value = r
            .value
            .map_or("not measured".to_owned(), |v| format!("{} {}", fmt(v), r.unit));
        let limit = match r.bound {
            Bound::AtMost => format!("≤ {} {}", fmt(r.limit), r.unit),
            Bound::AtLeast => format!("≥ {} {}", fmt(r.limit), r.unit),
            Bound::Info => String::new(),
        };
        let status = match r.status() {
            Status::Met => "met",
            Status::Missed => "**MISSED**",
            Status::NotMeasured => "not measured",
            Status::Info => "info",
        };
        let _ = writeln!(out, "| {} | {value} | {limit} | {status} | {} |", r.name, r.how);
    }
    out
}

/// Three significant figures, without exponent notation.
fn fmt(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_criterion_medians() {
        let text = r#"{"mean":{"confidence_interval":{"lower_bound":1.0},"point_estimate":12.5},"median":{"confidence_interval":{"confidence_level":0.95,"lower_bound":3.0,"upper_bound":5.0},"point_estimate":4.25e3,"standard_error":1.0}}"#;
        assert_eq!(
            json_number_after(text, &["\"median\"", "\"point_estimate\""]),
            Some(4250.0)
        );
        assert_eq!(json_number_after(text, &["\"slope\"", "\"point_estimate\""]), None);
    }

    #[test]
    fn process_rows_compare_resume_and_listing_against_their_baselines() {
        let mut r = Results::default();
        for (id, ms) in [
            ("process/version", 1.5),
            ("process/print_new_session", 3.5),
            ("process/resume_prefix/1000_sessions", 30.0),
            ("process/sessions_json/1000", 18.0),
            ("process/sessions_json/10000", 100.0),
            ("process/sessions_json/10000_1mb", 160.0),
        ] {
            r.medians.insert(id.to_owned(), ms * NS_PER_MS);
        }
        let mib = 1024.0 * 1024.0;
        for (id, rss) in [
            ("process/resume_prefix/10_sessions", 12.0),
            ("process/resume_prefix/1000_sessions", 12.5),
        ] {
            r.facts
                .entry(id.to_owned())
                .or_default()
                .insert("peak_rss_bytes".to_owned(), rss * mib);
        }
        let rows = process_rows(&r);
        let find = |name: &str| rows.iter().find(|row| row.name.starts_with(name)).unwrap();
        let over = find("resume among 1,000 × 1 MB: over a new session");
        assert_eq!(over.value, Some(26.5));
        assert_eq!(over.status(), Status::Missed);
        assert_eq!(find("resume: peak RSS").status(), Status::Met);
        let ratio = find("panto sessions --json, 10,000 × 1 MB / × 1 KB");
        assert_eq!(ratio.value, Some(1.6));
        assert_eq!(ratio.status(), Status::Missed);
        assert_eq!(find("panto --version").status(), Status::Met);
        assert_eq!(find("panto -p hi, new session: peak RSS").status(), Status::NotMeasured);
    }

    #[test]
    fn floor_rows_hold_each_command_to_its_ratio() {
        let mut r = Results::default();
        for (id, ratio) in [("floor/version", 1.6), ("floor/sessions/1000", 1.9)] {
            let facts = r.facts.entry(id.to_owned()).or_default();
            facts.insert("ratio".to_owned(), ratio);
            facts.insert("panto_ns".to_owned(), 1.6e6);
            facts.insert("floor_ns".to_owned(), 1.0e6);
            facts.insert("rounds".to_owned(), 101.0);
            facts.insert("panto_peak_rss_bytes".to_owned(), 4.0 * 1024.0 * 1024.0);
        }
        let rows = floor_rows(&r);
        let find = |name: &str| rows.iter().find(|row| row.name == name).unwrap();
        // 1.6x misses the 1.5x of the first two commands but would meet the others' 2x.
        let version = find("panto --version: / floor");
        assert_eq!(version.status(), Status::Missed);
        assert_eq!(
            version.how,
            "panto 1.60 ms, floor 1.00 ms: medians of 101 alternating runs each"
        );
        assert_eq!(find("panto sessions, 1,000 × 1 MB: / floor").status(), Status::Met);
        assert_eq!(find("panto --version: peak RSS").value, Some(4.0));
        assert_eq!(find("panto -p hi, new session: / floor").status(), Status::NotMeasured);
    }

    #[test]
    fn cache_rows_compare_the_bill_with_the_best_placement() {
        let mut r = Results::default();
        let facts = r.facts.entry("cache/tool-loop-50".to_owned()).or_default();
        for (key, value) in [
            ("billed", 1060.0),
            ("best", 1000.0),
            ("uncached", 8000.0),
            ("max_breakpoints", 3.0),
        ] {
            facts.insert(key.to_owned(), value);
        }
        let rows = cache_rows(&r);
        let find = |name: &str| rows.iter().find(|row| row.name.ends_with(name)).unwrap();
        let best = find("billed / best placement");
        assert_eq!(best.value, Some(1.06));
        assert_eq!(best.status(), Status::Missed);
        assert_eq!(find("billed / no cache").value, Some(0.1325));
        assert_eq!(find("breakpoints per request").status(), Status::Met);
        assert_eq!(find("time").status(), Status::Info);
    }

    #[test]
    fn statuses_follow_the_bound() {
        let at_most = row("x", Some(2.0), "ms", Bound::AtMost, 3.0, "");
        assert_eq!(at_most.status(), Status::Met);
        let missed = row("x", Some(4.0), "ms", Bound::AtMost, 3.0, "");
        assert_eq!(missed.status(), Status::Missed);
        let at_least = row("x", Some(399.0), "MB/s", Bound::AtLeast, 400.0, "");
        assert_eq!(at_least.status(), Status::Missed);
        assert_eq!(
            row("x", None, "ms", Bound::AtMost, 1.0, "").status(),
            Status::NotMeasured
        );
    }
}
