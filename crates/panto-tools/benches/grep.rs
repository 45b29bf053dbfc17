//! `grep` over a 100 MB generated tree against ripgrep run the same way: one search of the whole
//! tree for the same regex, every match collected (rg's output read from a pipe; the tool's kept
//! and counted), warm page cache. Target: within 2x of rg's time (docs/performance.md).
//!
//! The tree (`target/bench-data/grep-tree`, built once): 2,000 files of 50 KiB of code-like
//! lines in 40 directories, a `.gitignore`, and a matching line every ~100 lines.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use panto_core::{ResultPart, ToolCall};
use panto_testkit::bench::{target_dir, Facts};
use panto_tools::{Options, ToolName};

const FILES: usize = 2_000;
const FILE_BYTES: usize = 50 * 1024;
const PATTERN: &str = r"fn [a-z]+_needle\d+";

/// Builds the tree unless it is there; returns its root and its size in bytes.
fn tree() -> (PathBuf, u64) {
    let root = target_dir().join("bench-data/grep-tree");
    let done = root.join(".complete");
    if !done.exists() {
        let _ = std::fs::remove_dir_all(&root);
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let words = [
            "let", "value", "match", "self", "config", "return", "Some", "None", "iter", "map",
        ];
        for i in 0..FILES {
            let dir = root.join(format!("mod{:02}", i % 40));
            std::fs::create_dir_all(&dir).unwrap();
            let mut body = String::with_capacity(FILE_BYTES + 200);
            let mut line = 0u64;
            while body.len() < FILE_BYTES {
                line += 1;
                if next() % 100 == 0 {
                    body.push_str(&format!("    fn handler_needle{line}(x: u32) -> u32 {{ x }}\n"));
                } else {
                    body.push_str("    ");
                    for _ in 0..(4 + next() % 8) {
                        body.push_str(words[(next() % words.len() as u64) as usize]);
                        body.push(' ');
                    }
                    body.push_str(&format!("// {}\n", next() % 100_000));
                }
            }
            std::fs::write(dir.join(format!("file{i:04}.rs")), body).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(&done, "").unwrap();
    }
    let size = walk_size(&root);
    (root, size)
}

fn walk_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                walk_size(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

fn bench(c: &mut Criterion) {
    let (root, bytes) = tree();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut options = Options::new(&root);
    options.tools = Some(vec![ToolName::Grep]);
    let grep = panto_tools::builtin(&options).unwrap().remove(0);
    let run_tool = || {
        let call = ToolCall::new("b", "grep", serde_json::json!({ "pattern": PATTERN }));
        let result = rt.block_on(grep.call(call)).unwrap();
        match &result.parts[0] {
            ResultPart::Text(t) => t.len(),
            _ => 0,
        }
    };
    let run_rg = || {
        let out = Command::new("rg")
            .args(["--no-heading", "-n", PATTERN])
            .current_dir(&root)
            .output()
            .expect("rg (ripgrep) must be installed for this bench");
        out.stdout.len()
    };
    let rg_matches = {
        let out = Command::new("rg")
            .args(["-c", "--no-filename", PATTERN])
            .current_dir(&root)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse::<u64>().ok())
            .sum::<u64>()
    };
    assert!(run_tool() > 0 && run_rg() > 0);

    let mut group = c.benchmark_group("grep-100mb");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Bytes(bytes));
    group.bench_function("panto", |b| b.iter(run_tool));
    group.bench_function("rg", |b| b.iter(run_rg));
    group.finish();

    let mut facts = Facts::new("grep");
    for id in ["grep-100mb/panto", "grep-100mb/rg"] {
        facts.add(id, "bytes", bytes);
        facts.add(id, "matches", rg_matches);
    }
    facts.save();
}

criterion_group!(benches, bench);
criterion_main!(benches);
