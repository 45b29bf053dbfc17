//! Things that must work with no configuration at all.

use super::support::{panto_bin, Home};

#[tokio::test(flavor = "multi_thread")]
async fn version_and_help_need_no_config_or_key() {
    let home = Home::new();
    // A broken config file must not matter to --version and --help.
    home.write_config("this is = = not toml");
    let version = home.run(&["--version"], None).await;
    let version = version.ok();
    assert!(
        version.starts_with(&format!("panto {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    let help = home.run(&["--help"], None).await;
    let text = help.ok();
    for flag in [
        "--print",
        "--continue",
        "--resume",
        "--model",
        "--approve",
        "--output-format",
        "sessions",
        "completions",
    ] {
        assert!(text.contains(flag), "--help lacks {flag}:\n{text}");
    }
    assert!(text.contains("130"), "--help documents the exit codes:\n{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn version_works_with_an_empty_environment() {
    let out = tokio::process::Command::new(panto_bin())
        .arg("--version")
        .env_clear()
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
}

/// `panto --version` names the commit it was built from (this checkout's HEAD: the test binary
/// and panto are built from the same tree).
#[tokio::test(flavor = "multi_thread")]
async fn version_names_the_commit() {
    let out = tokio::process::Command::new(panto_bin())
        .arg("--version")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout);
    assert!(head.len() >= 12, "git rev-parse HEAD said {head:?}");
    assert_eq!(
        text.trim(),
        format!("panto {} (commit {})", env!("CARGO_PKG_VERSION"), &head[..12])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_man_page_documents_the_flags() {
    let home = Home::new();
    let man = home.run(&["man"], None).await;
    let page = man.ok();
    assert!(
        page.starts_with(".ie") || page.contains(".TH panto 1"),
        "not a roff page:\n{page}"
    );
    assert!(page.contains("\\-\\-resume") && page.contains("completions"), "{page}");
    // The keys and files a user must know are on the page, and it names no page panto does not
    // ship (clap_mangen's default lists `panto-sessions(1)` and the like).
    for section in [".SH ENVIRONMENT", ".SH FILES", ".SH EXIT STATUS"] {
        assert!(page.contains(section), "{section}:\n{page}");
    }
    assert!(
        page.contains("ANTHROPIC_API_KEY") && page.contains("OPENAI_BASE_URL"),
        "{page}"
    );
    assert!(!page.contains("(1)"), "a reference to another page:\n{page}");
    let help = home.run(&["--help"], None).await;
    let help = help.ok();
    assert!(
        help.contains("Environment:") && help.contains("OPENAI_API_KEY") && help.contains("config.toml"),
        "{help}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn completions_are_generated_for_each_shell() {
    let home = Home::new();
    let bash = home.run(&["completions", "bash"], None).await;
    let script = bash.ok();
    assert!(script.contains("_panto()"), "not a bash completion function:\n{script}");
    assert!(
        script.contains("--continue") && script.contains("--output-format"),
        "{script}"
    );
    let zsh = home.run(&["completions", "zsh"], None).await;
    assert!(zsh.ok().contains("--resume"), "{}", zsh.stdout);
    let fish = home.run(&["completions", "fish"], None).await;
    assert!(
        fish.ok().contains("complete -c panto") && fish.stdout.contains("resume"),
        "{}",
        fish.stdout
    );
    let bad = home.run(&["completions", "tcsh"], None).await;
    assert_eq!(bad.code, Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_key_names_both_variables_and_the_config_file() {
    let home = Home::new();
    let out = home.run(&["-p", "hi"], None).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stdout.is_empty());
    let err = out.stderr.trim();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.contains("OPENAI_API_KEY"),
        "{err}"
    );
    assert!(err.contains(&home.config_file().display().to_string()), "{err}");
    // The REPL refuses the same way, before reading any input.
    let repl = home.run(&[], Some("hello\n")).await;
    assert_eq!(repl.code, Some(2));
    assert!(repl.stderr.contains("ANTHROPIC_API_KEY"));
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_flags_are_usage_errors() {
    let home = Home::new();
    let out = home.run(&["--tools", "read,rm", "-p", "x"], None).await;
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("rm")
            && out
                .stderr
                .contains("read, write, edit, bash, grep, find, ls, web_fetch"),
        "{}",
        out.stderr
    );
    let out = home.run(&["--approve", "ask", "-p", "x"], None).await;
    assert_eq!(out.code, Some(2));
    let out = home.run(&["--bogus"], None).await;
    assert_eq!(out.code, Some(2));
}
