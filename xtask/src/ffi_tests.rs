//! `cargo xtask ffi-test [c|go]`: libpanto as C and Go programs see it.
//!
//! C (`c`): checks that `libpanto.so` exports only `panto_` symbols, that `include/panto.h`
//! compiles as C and as C++, that docs/ffi.md carries `tests/c/example.c` verbatim, and that a
//! program links against the static library; then builds every program in `tests/c/` with
//! `-Wall -Wextra -Werror` and runs each against its own `panto-mock`: plainly, under valgrind
//! (`--leak-check=full --error-exitcode=1` with the shipped suppressions: no errors, nothing
//! definitely or possibly lost; children traced), and built with AddressSanitizer.
//!
//! Installed (`installed PREFIX`): the C programs and the Go tests built against a libpanto that
//! `cargo xtask install --prefix PREFIX` installed, with pkg-config alone.
//!
//! Go (`go`): `gofmt`, `go vet` and `go test` in `bindings/go/` (the module users import; it finds
//! libpanto through pkg-config, here a `panto.pc` for the build tree), then again with `GOGC=1` (a collection at
//! nearly every allocation, so a pointer libpanto kept into Go memory would show), with the
//! race detector, and the test binary (`go test -c`) under valgrind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use panto_testkit::real_mcp;

use crate::mock::MockProcess;

/// The everything MCP server the C and Go tests call a tool of (tests/c/mcp.c, the Go binding's
/// MCP test), or what to run to install it.
fn everything() -> Result<PathBuf> {
    real_mcp::locate_everything().map_err(anyhow::Error::msg)
}

/// Programs in tests/c that other programs run, not the harness (the documented example needs a
/// provider; `example_driver` gives it the mock).
const DRIVEN: &[&str] = &["example"];

/// The Go binding's module, relative to the workspace root.
const GO_MODULE: &str = "bindings/go";

/// Sources linked into every program.
const SHARED_SOURCES: &[&str] = &["common.c"];

const CFLAGS: &[&str] = &["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O1"];

/// How long one program may run (valgrind is slow).
const PROGRAM_TIMEOUT: Duration = Duration::from_secs(300);

pub(crate) fn main(root: &Path, args: &[String]) -> Result<()> {
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => {
            c(root)?;
            go(root)
        }
        ["c"] => c(root),
        ["go"] => go(root),
        ["installed", prefix] => installed(root, Path::new(prefix)),
        other => bail!("usage: cargo xtask ffi-test [c|go|installed PREFIX] (got {other:?})"),
    }
}

/// Where the built library and mock are.
struct Built {
    lib_dir: PathBuf,
    mock: PathBuf,
}

fn build(root: &Path) -> Result<Built> {
    // Timed, so that a CI log shows whether this found the test step's build fresh (seconds) or
    // built again (minutes).
    let started = std::time::Instant::now();
    crate::build_debug(root)?;
    println!("ffi-test: the debug build took {:.1}s", started.elapsed().as_secs_f64());
    let lib_dir = crate::target_dir(root).join("debug");
    let built = Built {
        mock: lib_dir.join("panto-mock"),
        lib_dir,
    };
    for file in [
        built.lib_dir.join("libpanto.so"),
        built.lib_dir.join("libpanto.a"),
        built.mock.clone(),
    ] {
        if !file.exists() {
            bail!("{} is missing after the build", file.display());
        }
    }
    Ok(built)
}

fn tool_exists(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// The C checks and programs.
pub(crate) fn c(root: &Path) -> Result<()> {
    for tool in ["cc", "c++", "nm", "valgrind"] {
        if !tool_exists(tool) {
            bail!("`{tool}` is not installed; CI installs build-essential and valgrind (see .ci/run)");
        }
    }
    let built = build(root)?;
    check_exports(root, &built.lib_dir.join("libpanto.so"))?;
    check_header(root)?;
    check_docs_example(root)?;

    let out = crate::target_dir(root).join("ffi-tests").join("c");
    let programs = c_programs(root)?;
    let plain = compile_all(root, &built, &programs, &out.join("plain"), &[])?;
    let asan = compile_all(
        root,
        &built,
        &programs,
        &out.join("asan"),
        &["-fsanitize=address", "-fno-omit-frame-pointer"],
    )?;
    check_static_link(root, &built, &out)?;

    let mut valgrind = valgrind_command(root, &[]);
    valgrind.extend([
        "--trace-children=yes".to_owned(),
        // The real MCP servers (Node, Python) are not libpanto's memory to check.
        "--trace-children-skip=*/env,*/node,*/python3*,*mcp-server-*".to_owned(),
    ]);
    let valgrind: Vec<&str> = valgrind.iter().map(String::as_str).collect();
    let scratch = out.join("scratch");
    let asan_env = [("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")];
    let mut runs: Vec<ProgramRun<'_>> = Vec::new();
    for (name, exe) in plain.iter().filter(|(n, _)| !DRIVEN.contains(&n.as_str())) {
        runs.push(ProgramRun {
            name,
            mode: "plain",
            wrapper: &[],
            exe,
            env: &[],
        });
        runs.push(ProgramRun {
            name,
            mode: "valgrind",
            wrapper: &valgrind,
            exe,
            env: &[],
        });
    }
    for (name, exe) in asan.iter().filter(|(n, _)| !DRIVEN.contains(&n.as_str())) {
        // LeakSanitizer stays on: libpanto frees everything it allocates by the time its handles
        // are freed, so a report is a real leak. (Where LSan cannot run, e.g. under ptrace
        // restrictions, add detect_leaks=0; valgrind still checks leaks.)
        runs.push(ProgramRun {
            name,
            mode: "asan",
            wrapper: &[],
            exe,
            env: &asan_env,
        });
    }
    run_programs(&built, &scratch, &runs)?;
    println!(
        "ffi-test c: {} programs passed plain, under valgrind and with ASan",
        plain.len() - DRIVEN.len()
    );
    Ok(())
}

/// The valgrind suppressions libpanto ships (installed as `share/panto/valgrind/panto.supp`):
/// what Rust's standard library allocates once per thread that calls in and never frees.
pub(crate) const SUPPRESSIONS: &str = "bindings/valgrind/panto.supp";

/// The Go runtime's own suppressions, used only for the Go test binary (not shipped: they are
/// about Go, not libpanto).
const GO_SUPPRESSIONS: &str = "bindings/valgrind/go-runtime.supp";

/// valgrind as docs/ffi.md tells an embedder to run it: every leak kind is an error (valgrind's
/// default `--errors-for-leak-kinds=definite,possible`), with the shipped suppressions and
/// `extra` suppression files (relative to the workspace root).
fn valgrind_command(root: &Path, extra: &[&str]) -> Vec<String> {
    let mut command = vec![
        "valgrind".to_owned(),
        "-q".to_owned(),
        "--leak-check=full".to_owned(),
        "--error-exitcode=1".to_owned(),
        format!("--suppressions={}", root.join(SUPPRESSIONS).display()),
    ];
    command.extend(
        extra
            .iter()
            .map(|file| format!("--suppressions={}", root.join(file).display())),
    );
    command
}

/// `nm -D` lists only `panto_` symbols among those the library defines, exactly those of the
/// committed symbol list.
fn check_exports(root: &Path, lib: &Path) -> Result<()> {
    let output = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib)
        .output()
        .context("could not run nm")?;
    if !output.status.success() {
        bail!(
            "nm -D {} failed: {}",
            lib.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let listing = String::from_utf8_lossy(&output.stdout);
    let symbols: Vec<&str> = listing.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    let foreign: Vec<&str> = symbols.iter().copied().filter(|s| !s.starts_with("panto_")).collect();
    if symbols.is_empty() || !foreign.is_empty() {
        bail!(
            "{} must export only panto_ symbols; it also exports: {foreign:?} ({} in all)",
            lib.display(),
            symbols.len()
        );
    }
    let listed = std::fs::read_to_string(root.join(crate::symbols::SYMBOLS))
        .with_context(|| format!("cannot read {}", crate::symbols::SYMBOLS))?;
    let (_, listed) = crate::symbols::parse(&listed);
    let exported: std::collections::BTreeSet<String> = symbols.iter().map(|s| (*s).to_owned()).collect();
    if exported != listed {
        bail!(
            "{} exports {:?} beyond {} and lacks {:?} of it; run `cargo xtask codegen`",
            lib.display(),
            exported.difference(&listed).collect::<Vec<_>>(),
            crate::symbols::SYMBOLS,
            listed.difference(&exported).collect::<Vec<_>>()
        );
    }
    println!(
        "ffi-test: libpanto.so exports {} symbols, all panto_, as {} lists",
        symbols.len(),
        crate::symbols::SYMBOLS
    );
    Ok(())
}

/// The header compiles, warning-free and pedantic, as C and as C++.
fn check_header(root: &Path) -> Result<()> {
    let header = root.join(crate::codegen::HEADER);
    crate::run(
        Command::new("cc")
            .args([
                "-std=c99",
                "-pedantic",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-fsyntax-only",
                "-x",
                "c",
            ])
            .arg(&header),
    )?;
    crate::run(
        Command::new("c++")
            .args([
                "-std=c++11",
                "-pedantic",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-fsyntax-only",
                "-x",
                "c++",
            ])
            .arg(&header),
    )?;
    println!("ffi-test: {} compiles as C99 and C++11", crate::codegen::HEADER);
    Ok(())
}

/// docs/ffi.md shows tests/c/example.c exactly, so the documented example is the tested one.
fn check_docs_example(root: &Path) -> Result<()> {
    let example = std::fs::read_to_string(root.join("tests/c/example.c")).context("cannot read tests/c/example.c")?;
    let docs = std::fs::read_to_string(root.join("docs/ffi.md")).context("cannot read docs/ffi.md")?;
    if !docs.contains(&format!("```c\n{example}```")) {
        bail!("docs/ffi.md must contain tests/c/example.c verbatim in a ```c block; copy the file into the guide");
    }
    Ok(())
}

/// Every `tests/c/*.c` but the shared sources, sorted, as (name, path).
fn c_programs(root: &Path) -> Result<Vec<(String, PathBuf)>> {
    let dir = root.join("tests/c");
    let mut programs = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if let Some(stem) = name.strip_suffix(".c") {
            if !SHARED_SOURCES.contains(&name.as_str()) {
                programs.push((stem.to_owned(), path));
            }
        }
    }
    programs.sort();
    if programs.is_empty() {
        bail!("no C programs in {}", dir.display());
    }
    Ok(programs)
}

fn compile_all(
    root: &Path,
    built: &Built,
    programs: &[(String, PathBuf)],
    out: &Path,
    extra: &[&str],
) -> Result<Vec<(String, PathBuf)>> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut exes = Vec::new();
    for (name, source) in programs {
        let exe = out.join(name);
        let mut cmd = Command::new("cc");
        cmd.args(CFLAGS)
            .args(extra)
            .arg("-I")
            .arg(root.join("include"))
            .arg("-I")
            .arg(root.join("tests/c"))
            .arg(source);
        for shared in SHARED_SOURCES {
            cmd.arg(root.join("tests/c").join(shared));
        }
        cmd.arg("-L")
            .arg(&built.lib_dir)
            .arg(format!("-Wl,-rpath,{}", built.lib_dir.display()))
            .args(["-lpanto", "-lpthread", "-o"])
            .arg(&exe);
        crate::run(&mut cmd)?;
        exes.push((name.clone(), exe));
    }
    Ok(exes)
}

/// The static library links too (with the system libraries Rust's std needs) and the result runs.
fn check_static_link(root: &Path, built: &Built, out: &Path) -> Result<()> {
    let exe = out.join("version-static");
    crate::run(
        Command::new("cc")
            .args(CFLAGS)
            .arg("-I")
            .arg(root.join("include"))
            .arg("-I")
            .arg(root.join("tests/c"))
            .arg(root.join("tests/c/version.c"))
            .arg(root.join("tests/c/common.c"))
            .arg(built.lib_dir.join("libpanto.a"))
            .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lgcc_s", "-lc", "-o"])
            .arg(&exe),
    )?;
    crate::run(&mut Command::new(&exe))?;
    println!("ffi-test: libpanto.a links statically");
    Ok(())
}

/// Runs one program (through `wrapper`, if any) against a fresh mock and scratch directory.
/// One run of a C program: how (`mode`: plain, under a wrapper such as valgrind, with an
/// environment such as ASan's) and which executable.
struct ProgramRun<'a> {
    name: &'a str,
    mode: &'a str,
    wrapper: &'a [&'a str],
    exe: &'a Path,
    env: &'a [(&'a str, &'a str)],
}

/// How many programs run at once: CI has two cores, and a program under valgrind keeps one busy
/// (run one after another, the valgrind runs were most of this step's time). Each run has a mock
/// and a scratch directory of its own, so runs share nothing.
const PARALLEL_RUNS: usize = 2;

/// Runs every program run, [`PARALLEL_RUNS`] at a time; the first failure (in list order) is the
/// error, after the runs already started have finished.
fn run_programs(built: &Built, scratch: &Path, runs: &[ProgramRun<'_>]) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let results: Vec<std::sync::Mutex<Option<Result<()>>>> = runs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL_RUNS {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= runs.len() || failed.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let result = run_program(built, scratch, &runs[i]);
                if result.is_err() {
                    failed.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                *results[i].lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(result);
            });
        }
    });
    for slot in results {
        if let Some(Err(e)) = slot.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
            return Err(e);
        }
    }
    Ok(())
}

fn run_program(built: &Built, scratch: &Path, run: &ProgramRun<'_>) -> Result<()> {
    let ProgramRun {
        name,
        mode,
        wrapper,
        exe,
        env,
    } = *run;
    let started = Instant::now();
    let mock = MockProcess::start(&built.mock, &[])?;
    let tmp = scratch.join(format!("{name}-{mode}"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).with_context(|| format!("cannot clear {}", tmp.display()))?;
    }
    std::fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let mut cmd = match wrapper.split_first() {
        Some((program, args)) => {
            let mut cmd = Command::new(program);
            cmd.args(args).arg(exe);
            cmd
        }
        None => Command::new(exe),
    };
    cmd.env("PANTO_MOCK_URL", mock.url())
        .env("PANTO_TEST_TMP", &tmp)
        .env(real_mcp::EVERYTHING_ENV, everything()?)
        .envs(env.iter().copied());
    let line = format!("{cmd:?}");
    let mut child = cmd.spawn().with_context(|| format!("could not start {line}"))?;
    let deadline = started + PROGRAM_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("c/{name} ({mode}) did not finish within {PROGRAM_TIMEOUT:?}: {line}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(mock);
    if !status.success() {
        bail!("c/{name} ({mode}) failed with {status}: {line}");
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!(
        "ffi-test: c/{name} ({mode}) ok in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The C programs (plainly) and the Go tests once more, built against the libpanto installed in
/// `prefix` the way docs/ffi.md tells a user to: `$(pkg-config --cflags --libs panto)` with
/// `PKG_CONFIG_PATH=<prefix>/lib/pkgconfig`, and nothing else (no -L, -I or rpath of our own).
pub(crate) fn installed(root: &Path, prefix: &Path) -> Result<()> {
    crate::build_debug(root)?;
    let built = Built {
        lib_dir: prefix.join("lib"),
        mock: crate::target_dir(root).join("debug").join("panto-mock"),
    };
    let pkgconfig = prefix.join("lib").join("pkgconfig");
    let flags = crate::examples::pkg_config(&pkgconfig)?;
    let out = crate::target_dir(root).join("ffi-tests").join("installed");
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let programs = c_programs(root)?;
    for (name, source) in &programs {
        let exe = out.join(name);
        let mut cmd = Command::new("cc");
        cmd.args(CFLAGS).arg("-I").arg(root.join("tests/c")).arg(source);
        for shared in SHARED_SOURCES {
            cmd.arg(root.join("tests/c").join(shared));
        }
        cmd.args(flags.split_whitespace()).args(["-lpthread", "-o"]).arg(&exe);
        crate::run(&mut cmd)?;
    }
    let scratch = out.join("scratch");
    let exes: Vec<(&str, PathBuf)> = programs
        .iter()
        .filter(|(n, _)| !DRIVEN.contains(&n.as_str()))
        .map(|(name, _)| (name.as_str(), out.join(name)))
        .collect();
    let runs: Vec<ProgramRun<'_>> = exes
        .iter()
        .map(|(name, exe)| ProgramRun {
            name,
            mode: "installed",
            wrapper: &[],
            exe,
            env: &[],
        })
        .collect();
    run_programs(&built, &scratch, &runs)?;
    crate::run(
        Command::new("go")
            .args(["test", "-count=1", "./..."])
            .current_dir(root.join(GO_MODULE))
            .env("PANTO_MOCK_BIN", &built.mock)
            .env("PKG_CONFIG_PATH", &pkgconfig)
            .env("GOPROXY", "off")
            .env("GOTOOLCHAIN", "local")
            .env("GOFLAGS", "-mod=mod")
            .env(real_mcp::EVERYTHING_ENV, everything()?)
            .env_remove("PANTO_MOCK_URL"),
    )?;
    println!(
        "ffi-test installed: {} C programs and the Go tests passed against {}",
        programs.len() - DRIVEN.len(),
        prefix.display()
    );
    Ok(())
}

/// The Go wrapper's tests.
pub(crate) fn go(root: &Path) -> Result<()> {
    if !tool_exists("go") {
        bail!("`go` is not installed; CI installs Debian's golang-go (see .ci/run)");
    }
    let built = build(root)?;
    let dir = root.join(GO_MODULE);
    // The package links through `#cgo pkg-config: panto`; point pkg-config at the build tree.
    let pkgconfig = crate::target_dir(root).join("ffi-tests").join("pkgconfig");
    crate::pkgconfig::write_for_build_tree(root, &built.lib_dir, &pkgconfig)?;
    let go = |args: &[&str], env: &[(&str, &str)]| -> Result<()> {
        let mut cmd = Command::new("go");
        cmd.args(args)
            .current_dir(&dir)
            .env("PANTO_MOCK_BIN", &built.mock)
            // The module has no dependencies: never reach for a proxy or a newer toolchain.
            .env("GOPROXY", "off")
            .env("GOTOOLCHAIN", "local")
            .env("GOFLAGS", "-mod=mod")
            .env("PKG_CONFIG_PATH", &pkgconfig)
            .env(real_mcp::EVERYTHING_ENV, everything()?)
            .env_remove("PANTO_MOCK_URL")
            .envs(env.iter().copied());
        crate::run(&mut cmd)
    };
    let unformatted = Command::new("gofmt")
        .args(["-l", "."])
        .current_dir(&dir)
        .output()
        .context("could not run gofmt")?;
    let unformatted = String::from_utf8_lossy(&unformatted.stdout).trim().to_owned();
    if !unformatted.is_empty() {
        bail!("gofmt would reformat these files in {GO_MODULE} (run `gofmt -w {GO_MODULE}`): {unformatted}");
    }
    go(&["vet", "./..."], &[])?;
    go(&["test", "-count=1", "./..."], &[])?;
    go(&["test", "-count=1", "./..."], &[("GOGC", "1")])?;
    go(&["test", "-count=1", "-race", "./..."], &[])?;

    // Under valgrind: the test binary, built once, run with the flags docs/ffi.md gives (and the
    // Go runtime's own suppressions, see that file). Children (the mock, the resume test's second
    // process, MCP servers) are not traced: the C programs check a second libpanto process.
    let test_binary = crate::target_dir(root).join("ffi-tests").join("go").join("panto.test");
    let test_binary_arg = test_binary.display().to_string();
    go(&["test", "-c", "-o", &test_binary_arg, "./panto"], &[])?;
    let started = Instant::now();
    let valgrind = valgrind_command(root, &[GO_SUPPRESSIONS]);
    let (program, args) = valgrind.split_first().context("an empty valgrind command")?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .arg(&test_binary)
        .arg("-test.count=1")
        // A test binary runs in its package's directory, as `go test` runs it.
        .current_dir(dir.join("panto"))
        .env("PANTO_MOCK_BIN", &built.mock)
        .env(real_mcp::EVERYTHING_ENV, everything()?)
        .env_remove("PANTO_MOCK_URL");
    crate::run(&mut cmd)?;
    println!(
        "ffi-test go: the test binary passed under valgrind in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    println!("ffi-test go: passed, also with GOGC=1, -race and under valgrind");
    Ok(())
}
