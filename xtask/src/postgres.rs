//! `cargo xtask postgres [COMMAND [ARGS...]]`: a throwaway PostgreSQL server for trying panto's
//! PostgreSQL store and for end-to-end tests.
//!
//! Starts a server on 127.0.0.1 on a free port with trust authentication and a fresh data
//! directory (as the `postgres` user when run as root, since `initdb` refuses root), creates the
//! database `panto`, and then:
//!
//! - with a command: runs it with `PANTO_PG_URL` set to the database's URL, stops the server
//!   and exits with the command's status (`cargo xtask postgres -- cargo run --bin panto --
//!   --store '$PANTO_PG_URL'` style end-to-end checks);
//! - without: prints the URL and keeps the server until standard input closes (Ctrl-D).
//!
//! Either way the server and its directory are gone afterwards, even if this process is killed.
//! The server logic is the one the tests use (`panto_testkit::postgres`).

use std::io::Read;
use std::path::Path;
use std::process::Command;

use anyhow::{anyhow, Result};
use panto_testkit::postgres as server;

/// The variable that carries the database URL to the command.
pub const URL_ENV: &str = "PANTO_PG_URL";

/// Runs the task; `args` are the words after `postgres` (a leading `--` is skipped).
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let args = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        _ => args,
    };
    let server = server::start(server::Durability::Fsync).map_err(|e| anyhow!("starting PostgreSQL: {e}"))?;
    server
        .createdb("panto")
        .map_err(|e| anyhow!("creating the database `panto`: {e}"))?;
    let url = server.url("panto");

    let Some((program, rest)) = args.split_first() else {
        println!("PostgreSQL is running; {URL_ENV}={url}");
        println!("press Ctrl-D (close standard input) to stop it and delete its data");
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        server.stop();
        return Ok(());
    };
    let result = crate::run(Command::new(program).args(rest).env(URL_ENV, &url).current_dir(root));
    server.stop();
    result
}
