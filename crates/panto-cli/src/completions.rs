//! `panto completions SHELL`: shell completion scripts generated from the clap definition, so
//! they can never disagree with the real flags.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::Cli;

/// Prints the completion script for `shell` to stdout.
pub fn print(shell: Shell) {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "panto", &mut std::io::stdout());
}
