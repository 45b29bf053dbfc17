//! `grep` and `find` agree with ripgrep and find(1) on a generated tree with ignore files, hidden
//! files and binary files; `ls` lists what is there; output caps are stated.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use panto_core::Tool;
use panto_tools::{Options, ToolName};
use serde_json::json;

use crate::support::{self, call};

fn tool(cwd: &Path, name: ToolName, max_output_bytes: usize) -> std::sync::Arc<dyn Tool> {
    let mut o = Options::new(cwd);
    o.max_output_bytes = max_output_bytes;
    support::tool(&o, name)
}

/// A git repository with sources, ignored files (`.gitignore`, `.ignore`, nested), hidden files
/// and binary files, every one holding the word `needle` somewhere.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let git = Command::new("git").arg("init").arg("-q").arg(root).status().unwrap();
    assert!(git.success());
    let files: &[(&str, &[u8])] = &[
        (".gitignore", b"target/\n*.log\n"),
        ("src/.ignore", b"generated.rs\n"),
        ("src/main.rs", b"fn main() {\n    // needle one\n}\nneedle two\n"),
        ("src/lib.rs", b"pub fn f() {}\n"),
        ("src/generated.rs", b"needle ignored by .ignore\n"),
        ("src/deep/a/b/mod.rs", b"x\nNEEDLE upper\nneedle lower\n"),
        ("target/debug/out.rs", b"needle in target\n"),
        ("build.log", b"needle in a log\n"),
        (".hidden/secret.rs", b"needle hidden\n"),
        ("docs/readme.md", b"a needle in docs\n"),
        ("docs/blob.bin", b"needle\x00binary\x00"),
        ("docs/sub/.gitignore", b"local.md\n"),
        ("docs/sub/local.md", b"needle local\n"),
        ("docs/sub/kept.md", b"needle kept\n"),
    ];
    for (path, bytes) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    for i in 0..100 {
        std::fs::write(root.join(format!("src/gen{i:02}.txt")), format!("line\nneedle {i}\n")).unwrap();
    }
    dir
}

fn lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.trim_start_matches("./").to_owned())
        .collect()
}

fn rg(root: &Path, args: &[&str]) -> BTreeSet<String> {
    // No skipping without it: these tests are the proof that grep and find agree with ripgrep.
    let out = Command::new("rg")
        .current_dir(root)
        .args(args)
        .output()
        .expect("running rg (ripgrep), which these tests compare against: install it (.ci/run does)");
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    lines(&String::from_utf8(out.stdout).unwrap())
}

#[tokio::test]
async fn grep_agrees_with_ripgrep() {
    let dir = tree();
    let root = dir.path();
    let grep = tool(root, ToolName::Grep, 100_000);
    for (input, rg_args) in [
        (json!({"pattern": "needle"}), vec!["--no-heading", "-n", "needle"]),
        (
            json!({"pattern": "needle", "ignore_case": true}),
            vec!["--no-heading", "-n", "-i", "needle"],
        ),
        (
            json!({"pattern": "needle \\d+", "glob": "*.txt"}),
            vec!["--no-heading", "-n", "-g", "*.txt", "needle \\d+"],
        ),
        (
            json!({"pattern": "needle", "path": "docs"}),
            vec!["--no-heading", "-n", "--with-filename", "needle", "docs"],
        ),
    ] {
        let (is_error, text) = call(grep.as_ref(), input.clone()).await;
        assert!(!is_error, "{input}: {text}");
        let ours = lines(&text);
        assert_eq!(ours, rg(root, &rg_args), "{input}");
        assert!(!ours.is_empty());
    }
    let (_, text) = call(grep.as_ref(), json!({"pattern": "needle"})).await;
    for skipped in [
        "generated.rs",
        "target/",
        "build.log",
        ".hidden",
        "blob.bin",
        "local.md",
    ] {
        assert!(!text.contains(skipped), "{skipped} was searched: {text}");
    }
    assert!(text.contains("src/main.rs:2:    // needle one\n"), "{text}");
}

#[tokio::test]
async fn find_agrees_with_ripgrep_and_find() {
    let dir = tree();
    let root = dir.path();
    let find = tool(root, ToolName::Find, 100_000);
    let (is_error, text) = call(find.as_ref(), json!({"pattern": "*.rs"})).await;
    assert!(!is_error, "{text}");
    // `rg -g` would bring back files the ignore rules exclude; `find`'s glob only narrows.
    let rs_files: BTreeSet<String> = rg(root, &["--files"])
        .into_iter()
        .filter(|f| f.ends_with(".rs"))
        .collect();
    assert_eq!(lines(&text), rs_files);
    assert_eq!(
        lines(&text),
        ["src/deep/a/b/mod.rs", "src/lib.rs", "src/main.rs"]
            .map(String::from)
            .into()
    );
    let (_, text) = call(find.as_ref(), json!({"pattern": "src/*/a/**/*.rs"})).await;
    assert_eq!(lines(&text), ["src/deep/a/b/mod.rs".to_owned()].into());
    // Where no ignore file applies, find(1) is the reference.
    let out = Command::new("find")
        .current_dir(root.join("src"))
        .args([".", "-type", "f", "-name", "gen*.txt"])
        .output()
        .unwrap();
    let expected: BTreeSet<String> = lines(&String::from_utf8(out.stdout).unwrap())
        .into_iter()
        .map(|l| format!("src/{l}"))
        .collect();
    let (_, text) = call(find.as_ref(), json!({"pattern": "gen*.txt", "path": "src"})).await;
    assert_eq!(lines(&text), expected);
    assert_eq!(expected.len(), 100);
}

#[tokio::test]
async fn output_caps_are_stated() {
    let dir = tree();
    let root = dir.path();
    let (is_error, text) = call(tool(root, ToolName::Grep, 1024).as_ref(), json!({"pattern": "needle"})).await;
    assert!(!is_error, "{text}");
    let total = rg(root, &["--no-heading", "-n", "needle"]).len();
    assert!(text.len() < 1024 + 200, "{}", text.len());
    assert!(
        text.contains(&format!(" of {total} matches; output is capped at 1024 bytes")),
        "{text}"
    );
    let (_, text) = call(tool(root, ToolName::Find, 1024).as_ref(), json!({"pattern": "*.txt"})).await;
    assert!(text.contains(" of 100 files; output is capped at 1024 bytes"), "{text}");
    let (_, text) = call(tool(root, ToolName::Ls, 1024).as_ref(), json!({"path": "src"})).await;
    assert!(text.contains("entries; output is capped at 1024 bytes"), "{text}");
}

#[tokio::test]
async fn ls_lists_everything_and_bad_input_says_why() {
    let dir = tree();
    let root = dir.path();
    let ls = tool(root, ToolName::Ls, 100_000);
    let (is_error, text) = call(ls.as_ref(), json!({})).await;
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        ".git/\n.gitignore (14 bytes)\n.hidden/\nbuild.log (16 bytes)\ndocs/\nsrc/\ntarget/\n"
    );
    let (is_error, text) = call(ls.as_ref(), json!({"path": "missing"})).await;
    assert!(
        is_error && text.contains("cannot list") && text.contains("missing"),
        "{text}"
    );
    let grep = tool(root, ToolName::Grep, 100_000);
    let (is_error, text) = call(grep.as_ref(), json!({"pattern": "("})).await;
    assert!(is_error && text.contains("bad pattern"), "{text}");
    let (_, text) = call(grep.as_ref(), json!({"pattern": "no such text anywhere"})).await;
    assert_eq!(text, "no matches");
}
