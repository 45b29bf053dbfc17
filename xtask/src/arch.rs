//! Architecture invariants, checked over the source tree (see docs/ARCHITECTURE.md).
//!
//! The compiler enforces part of them already (`unsafe_code = "forbid"` and clippy's
//! `print_stdout`/`print_stderr` are workspace lints); this check also catches a crate that opts out
//! of the workspace lints, and what no lint covers: filesystem I/O, sessions made outside
//! panto-core, files included across crates ([`includes`]) and the split of panto-core's API
//! between its root and `panto_core::store` ([`store_api`]), the layers of panto-core's top modules
//! ([`layers`]), docs/ARCHITECTURE.md against the tree ([`docs_map`]), and a reason for every long
//! function ([`long_fns`]).

mod docs_map;
mod includes;
mod layers;
mod long_fns;
mod store_api;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// A rule: which source trees it covers, and the tokens they must not contain.
struct Rule {
    invariant: &'static str,
    /// Source trees, relative to the workspace root; `crates/*/src` stands for every crate's.
    dirs: &'static [&'static str],
    forbidden: &'static [&'static str],
    /// Files (relative to the root) where the tokens are the sanctioned exception.
    allowed: &'static [&'static str],
    /// Whether `src/bin` trees are checked too (they print by design, but must obey the rest).
    bins: bool,
}

const RULES: &[Rule] = &[
    Rule {
        invariant: "only panto-ffi and the child-process module of panto-tools have unsafe code",
        dirs: &[
            "crates/panto-core/src",
            "crates/panto-store-fs/src",
            "crates/panto-store-postgres/src",
            "crates/panto-cli/src",
            "crates/panto-testkit/src",
            "crates/panto-tools/src",
            "crates/panto-mcp/src",
        ],
        forbidden: &["unsafe ", "unsafe{", "allow(unsafe_code)"],
        allowed: &[CHILD_MODULE],
        bins: false,
    },
    Rule {
        invariant: "only panto-cli prints",
        dirs: &[
            "crates/panto-core/src",
            "crates/panto-store-fs/src",
            "crates/panto-store-postgres/src",
            "crates/panto-ffi/src",
            "crates/panto-mcp/src",
        ],
        forbidden: &[
            "println!",
            "print!(",
            "eprintln!",
            "eprint!(",
            "dbg!(",
            "io::stdout()",
            "io::stderr()",
        ],
        allowed: &[],
        bins: false,
    },
    Rule {
        invariant: "panto-core does no filesystem I/O of its own",
        dirs: &["crates/panto-core/src"],
        forbidden: &[
            "std::fs",
            "tokio::fs",
            "File::open",
            "File::create",
            "OpenOptions",
            "read_dir",
        ],
        allowed: &[],
        bins: false,
    },
    Rule {
        invariant: "every HTTP client is built by panto_core::http_client_builder (which follows no redirects)",
        dirs: &["crates/*/src", "examples/service/src"],
        forbidden: &[
            "Client::new(",
            "Client::builder(",
            "Client::default(",
            "ClientBuilder::new(",
            "ClientBuilder::default(",
            "reqwest::get(",
            "reqwest::blocking",
        ],
        allowed: &["crates/panto-core/src/provider/http.rs"],
        bins: true,
    },
    Rule {
        // The child-process module puts a server in its own process group, kills the group on
        // drop and arms PR_SET_PDEATHSIG; a process started any other way could outlive panto.
        invariant: "MCP servers are started only through panto-tools' child-process module",
        dirs: &["crates/panto-mcp/src"],
        forbidden: &[".spawn()", "TokioChildProcess", "kill_on_drop"],
        allowed: &[],
        bins: false,
    },
    Rule {
        // `Session::create`, `Session::resolve` and `Session::latest` bind a session to the
        // store it was asked of; a session built by hand elsewhere can be bound to another one
        // (a wrapper store handing out its inner store's sessions writes past the wrapper).
        invariant: "sessions are made only by panto-core (Session::create, resolve, latest)",
        dirs: &[
            "crates/panto-store-fs/src",
            "crates/panto-store-postgres/src",
            "crates/panto-cli/src",
            "crates/panto-ffi/src",
        ],
        forbidden: &["Session::new("],
        allowed: &[],
        bins: false,
    },
];

/// The one module outside panto-ffi that may hold `unsafe` (the `pre_exec` setup of child
/// processes: its `mod.rs` and the submodules beside it), each block under a `// SAFETY:` comment.
const CHILD_MODULE: &str = "crates/panto-tools/src/child";

/// The crate holding [`CHILD_MODULE`]: it cannot inherit the workspace lints (`forbid` cannot be
/// relaxed for one module), so its own must deny `unsafe_code`.
const CHILD_CRATE: &str = "crates/panto-tools";

/// Crates that must inherit the workspace lints (which forbid `unsafe`).
const LINTED_CRATES: &[&str] = &[
    "crates/panto-core",
    "crates/panto-store-fs",
    "crates/panto-cli",
    "crates/panto-testkit",
    "crates/panto-mcp",
    "examples/service",
];

pub fn check(root: &Path) -> Result<()> {
    let mut violations = Vec::new();
    for rule in RULES {
        for dir in expand(root, rule.dirs)? {
            if !dir.exists() {
                continue;
            }
            let files = rust_files(&dir, rule.bins)?;
            let test_only = test_only_files(&files)?;
            let allowed = |f: &PathBuf| rule.allowed.iter().any(|a| f.starts_with(root.join(a)));
            for file in files
                .iter()
                .filter(|f| !test_only.iter().any(|t| f.starts_with(t)) && !allowed(f))
            {
                let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
                for (line, token) in find_forbidden(&text, rule.forbidden) {
                    violations.push(format!(
                        "{}:{line}: `{token}` breaks the invariant \"{}\"",
                        file.strip_prefix(root).unwrap_or(file).display(),
                        rule.invariant
                    ));
                }
            }
        }
    }
    check_child_module(root, &mut violations)?;
    includes::check(root, &mut violations)?;
    store_api::check(root, &mut violations)?;
    docs_map::check(root, &mut violations)?;
    layers::check(root, &mut violations)?;
    long_fns::check(root, &mut violations)?;
    check_library_lints(root, &mut violations)?;
    for krate in LINTED_CRATES {
        let manifest = root.join(krate).join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
        if !inherits_workspace_lints(&text) {
            violations.push(format!(
                "{}: must inherit the workspace lints ([lints] workspace = true), which forbid unsafe code",
                manifest.strip_prefix(root).unwrap_or(&manifest).display()
            ));
        }
    }
    if !violations.is_empty() {
        bail!("architecture invariants broken:\n  {}", violations.join("\n  "));
    }
    println!("architecture invariants hold");
    Ok(())
}

/// The attributes every library crate's `lib.rs` carries: every public item documented, and
/// nothing `pub` that its public API cannot reach (a `pub` item in a private module is what made
/// the API drift from the `pub use` allowlist).
const LIBRARY_LINTS: &[&str] = &["#![deny(missing_docs)]", "#![deny(unreachable_pub)]"];

/// Adds a violation for every library crate (`crates/*/src/lib.rs`) without [`LIBRARY_LINTS`].
fn check_library_lints(root: &Path, violations: &mut Vec<String>) -> Result<()> {
    for src in expand(root, &["crates/*/src"])? {
        let lib = src.join("lib.rs");
        if !lib.exists() {
            continue;
        }
        let text = std::fs::read_to_string(&lib).with_context(|| format!("reading {}", lib.display()))?;
        violations.extend(missing_library_lints(&text).into_iter().map(|lint| {
            format!(
                "{}: a library crate must say `{lint}`",
                lib.strip_prefix(root).unwrap_or(&lib).display()
            )
        }));
    }
    Ok(())
}

/// The [`LIBRARY_LINTS`] that `lib` (a `lib.rs`) does not carry as a line of its own.
fn missing_library_lints(lib: &str) -> Vec<&'static str> {
    LIBRARY_LINTS
        .iter()
        .copied()
        .filter(|lint| !lib.lines().any(|line| line.trim() == *lint))
        .collect()
}

/// The source trees `dirs` name, with `crates/*/src` expanded to every crate's `src`, so that a
/// crate added later is covered without editing the rule.
fn expand(root: &Path, dirs: &[&str]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for dir in dirs {
        let Some(tail) = dir.strip_prefix("crates/*/") else {
            out.push(root.join(dir));
            continue;
        };
        let crates = root.join("crates");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&crates).with_context(|| format!("listing {}", crates.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                found.push(path.join(tail));
            }
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// The `.rs` files under `dir`; with `bins` false, without `src/bin` trees (binaries there print
/// by design: test-support tools).
fn rust_files(dir: &Path, bins: bool) -> Result<Vec<PathBuf>> {
    rust_files_where(dir, |subdir| bins || subdir.file_name().is_none_or(|n| n != "bin"))
}

/// Every `.rs` file below `dir`, descending only into the directories `descend` accepts.
fn rust_files_where(dir: &Path, descend: impl Fn(&Path) -> bool) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                if descend(&path) {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The files and directories of modules declared under `#[cfg(test)]` (`#[cfg(test)] mod x;`),
/// which are compiled only into tests and may do what tests do.
fn test_only_files(files: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        for name in test_only_modules(&text) {
            // `lib.rs`, `main.rs` and `mod.rs` declare children beside them; `foo.rs` in `foo/`.
            let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let dir = match (file.parent(), stem) {
                (Some(parent), "lib" | "main" | "mod") => parent.to_path_buf(),
                (Some(parent), stem) => parent.join(stem),
                (None, _) => continue,
            };
            out.push(dir.join(format!("{name}.rs")));
            out.push(dir.join(name));
        }
    }
    Ok(out)
}

/// Names of the modules a file declares right after a `#[cfg(test)]` attribute.
fn test_only_modules(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut after_cfg_test = false;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        if after_cfg_test {
            let decl = line.trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            if let Some(name) = decl.strip_prefix("mod ").and_then(|rest| rest.strip_suffix(';')) {
                out.push(name.trim().to_owned());
            }
        }
        after_cfg_test = line == "#[cfg(test)]";
    }
    out
}

/// Lines (1-based) where a forbidden token appears in code, ignoring `//` comments (doc comments
/// included) and the contents of `#[cfg(test)]` modules at the end of a file. A token that starts
/// with a name matches only where the name starts (`Session::new(` is not in `OpenSession::new(`).
fn find_forbidden(text: &str, forbidden: &[&'static str]) -> Vec<(usize, &'static str)> {
    let mut hits = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        let code = match trimmed.find("//") {
            Some(at) => &trimmed[..at],
            None => trimmed,
        };
        for token in forbidden {
            if contains_token(code, token) {
                hits.push((i + 1, *token));
            }
        }
    }
    hits
}

/// Whether `token` occurs in `code` at a place where no name continues into it from the left.
fn contains_token(code: &str, token: &str) -> bool {
    let is_name = |c: char| c.is_alphanumeric() || c == '_';
    let starts_with_name = token.starts_with(is_name);
    code.match_indices(token)
        .any(|(at, _)| !starts_with_name || !code[..at].ends_with(is_name))
}

/// The sanctioned `unsafe` of panto-tools: every `unsafe` in [`CHILD_MODULE`] sits under a
/// `// SAFETY:` comment, and its crate denies `unsafe_code` (so any other file fails to build).
fn check_child_module(root: &Path, violations: &mut Vec<String>) -> Result<()> {
    let dir = root.join(CHILD_MODULE);
    if dir.exists() {
        for file in rust_files(&dir, true)? {
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            for line in unsafe_without_safety_comment(&text) {
                violations.push(format!(
                    "{}:{line}: `unsafe` without a `// SAFETY:` comment right above it",
                    file.strip_prefix(root).unwrap_or(&file).display()
                ));
            }
        }
    }
    let manifest = root.join(CHILD_CRATE).join("Cargo.toml");
    if manifest.exists() {
        let text = std::fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
        if !denies_unsafe_code(&text) {
            violations.push(format!(
                "{CHILD_CRATE}/Cargo.toml: [lints.rust] must set unsafe_code = \"deny\" (only {CHILD_MODULE} may allow it)"
            ));
        }
    }
    Ok(())
}

/// Lines (1-based) of code holding `unsafe` whose comment block right above has no `// SAFETY:`.
fn unsafe_without_safety_comment(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        let code = trimmed.find("//").map_or(trimmed, |at| &trimmed[..at]);
        if !(contains_token(code, "unsafe ") || contains_token(code, "unsafe{")) {
            continue;
        }
        let justified = lines[..i]
            .iter()
            .rev()
            .map(|l| l.trim_start())
            .take_while(|l| l.starts_with("//"))
            .any(|l| l.starts_with("// SAFETY:"));
        if !justified {
            out.push(i + 1);
        }
    }
    out
}

/// Whether a manifest's `[lints.rust]` sets `unsafe_code = "deny"` (or `"forbid"`).
fn denies_unsafe_code(manifest: &str) -> bool {
    let mut in_rust_lints = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_rust_lints = line == "[lints.rust]";
        } else if in_rust_lints {
            let compact = line.replace(' ', "");
            if compact == "unsafe_code=\"deny\"" || compact == "unsafe_code=\"forbid\"" {
                return true;
            }
        }
    }
    false
}

fn inherits_workspace_lints(manifest: &str) -> bool {
    let mut in_lints = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_lints = line == "[lints]";
        } else if in_lints && line.replace(' ', "") == "workspace=true" {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_without_its_lints_is_named() {
        let both = "//! doc\n#![deny(missing_docs)]\n#![deny(unreachable_pub)]\n";
        assert!(missing_library_lints(both).is_empty());
        let one = "#![deny(missing_docs)]\n// #![deny(unreachable_pub)]\n";
        assert_eq!(missing_library_lints(one), ["#![deny(unreachable_pub)]"]);
    }

    /// The whole check over this checkout, so that plain `cargo test` fails on a broken
    /// invariant or a stale docs/ARCHITECTURE.md, as `cargo xtask arch` does.
    #[test]
    fn this_workspace_keeps_its_architecture_invariants_and_its_map() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask sits in the workspace root");
        if let Err(e) = check(root) {
            panic!("{e:#}");
        }
    }

    #[test]
    fn finds_tokens_in_code_but_not_in_comments_or_tests() {
        let src = "fn a() {\n    println!(\"x\"); // fine?\n    // println!(\"comment\")\n}\n#[cfg(test)]\nmod tests { fn t() { println!(); } }\n";
        assert_eq!(find_forbidden(src, &["println!"]), vec![(2, "println!")]);
    }

    #[test]
    fn http_clients_are_found_however_they_are_spelled() {
        let rule = RULES
            .iter()
            .find(|r| r.invariant.contains("HTTP client"))
            .expect("the HTTP client rule");
        for src in [
            "let c = reqwest::Client::new();",
            "let c = Client::builder().build()?;",
            "let b = reqwest::ClientBuilder::new();",
            "let body = reqwest::get(url).await?;",
            "let c = reqwest::blocking::Client::new();",
        ] {
            assert!(!find_forbidden(src, rule.forbidden).is_empty(), "{src}");
        }
        let sanctioned = "let c = panto_core::http_client_builder().build()?;";
        assert!(find_forbidden(sanctioned, rule.forbidden).is_empty());
    }

    #[test]
    fn tokens_that_start_with_a_name_match_whole_names_only() {
        let src = "let s = OpenSession::new(x);\nlet t = Session::new(info, store);\n";
        assert_eq!(find_forbidden(src, &["Session::new("]), vec![(2, "Session::new(")]);
        assert_eq!(
            find_forbidden("a(std::fs::read(p))", &["std::fs"]),
            vec![(1, "std::fs")]
        );
    }

    #[test]
    fn test_only_module_declarations() {
        let src = "mod a;\n#[cfg(test)]\nmod testing;\n#[cfg(test)]\n// why\npub(crate) mod helpers;\nmod b;\n";
        assert_eq!(test_only_modules(src), vec!["testing".to_owned(), "helpers".to_owned()]);
    }

    #[test]
    fn unsafe_needs_a_safety_comment_right_above() {
        let src = "// SAFETY: the fd is ours.\nunsafe { a() };\nlet x = 1;\n// why\nunsafe { b() };\n// SAFETY: old\n\nunsafe fn c() {}\n// \"unsafe \" in a comment\n";
        assert_eq!(unsafe_without_safety_comment(src), vec![5, 8]);
        assert!(denies_unsafe_code("[lints.rust]\nunsafe_code = \"deny\"\n"));
        assert!(!denies_unsafe_code("[lints.rust]\nunsafe_code = \"allow\"\n"));
    }

    #[test]
    fn lints_table_detection() {
        assert!(inherits_workspace_lints(
            "[package]\nname=\"x\"\n\n[lints]\nworkspace = true\n"
        ));
        assert!(!inherits_workspace_lints("[package]\nworkspace = true\n"));
    }
}
