//! `panto-mock`: the scripted mock LLM server as a process, for the C and Go tests and the SDK
//! check.
//!
//! ```text
//! panto-mock [--script FILE.json] [--fixtures DIR] [--no-validate] [--ignore-stdin]
//! ```
//!
//! Binds 127.0.0.1 on a free port and prints `PORT=<n>` as its first stdout line. It serves
//! until its stdin closes (so a test that dies takes the server with it) or it is killed; with
//! `--ignore-stdin` only until it is killed. Control endpoints: `POST /__mock/push` (a reply or
//! an array of replies as JSON, see `panto_testkit::spec`), `GET /__mock/requests`,
//! `POST /__mock/reset`, `POST /__mock/validation` (`{"enforce": bool}`), `POST
//! /__mock/prompt-cache` (`{"enabled": bool}` to bill Anthropic requests by the prompt cache, see
//! `panto_testkit::cache`; `{"advance_secs": n}` to move its clock), `GET /__mock/stats`
//! (connection counts and time served per `x-mock-key`), `GET /__mock/builders`,
//! `POST /__mock/check-events` (a JSON array of events, validated against
//! docs/events.schema.json: 200 `{"checked": n}`, or 422 `{"error": "..."}` naming the event and
//! the field).
#![allow(clippy::print_stderr)]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use panto_testkit::MockServer;
use tokio::io::AsyncReadExt;

const USAGE: &str = "usage: panto-mock [--script FILE.json] [--fixtures DIR] [--no-validate] [--ignore-stdin]";

#[derive(Debug, Default)]
struct Options {
    script: Option<PathBuf>,
    fixtures: Option<PathBuf>,
    no_validate: bool,
    ignore_stdin: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--script") => options.script = Some(args.next().ok_or("--script needs a file")?.into()),
            Some("--fixtures") => options.fixtures = Some(args.next().ok_or("--fixtures needs a directory")?.into()),
            Some("--no-validate") => options.no_validate = true,
            Some("--ignore-stdin") => options.ignore_stdin = true,
            Some("-h" | "--help") => return Err(USAGE.to_owned()),
            _ => return Err(format!("unknown argument {arg:?}\n{USAGE}")),
        }
    }
    Ok(options)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("panto-mock: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let options = parse_args()?;
    let server = MockServer::try_start().await.map_err(|e| e.to_string())?;
    let fixtures = options.fixtures.clone().unwrap_or_else(panto_testkit::fixtures_dir);
    server.set_fixtures_dir(fixtures.clone());
    server.set_validation(!options.no_validate);
    if let Some(path) = &options.script {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        let replies = panto_testkit::spec::replies_from_json(&value, &fixtures)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        for reply in replies {
            server.push(reply);
        }
    }
    // The port line is the handshake with whoever started us, so it must leave now.
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "PORT={}", server.port()).map_err(|e| format!("cannot write to stdout: {e}"))?;
    stdout.flush().map_err(|e| format!("cannot write to stdout: {e}"))?;
    drop(stdout);

    if options.ignore_stdin {
        std::future::pending::<()>().await;
    }
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 1024];
    while let Ok(n) = stdin.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
    drop(server);
    Ok(())
}
