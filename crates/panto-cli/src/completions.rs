//! `panto completions SHELL` and `panto man`: shell completion scripts and the manual page,
//! generated from the clap definition, so they can never disagree with the real flags.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::Cli;

/// Prints the completion script for `shell` to stdout.
pub fn print(shell: Shell) {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "panto", &mut std::io::stdout());
}

/// Prints the manual page, `panto.1` in roff, to stdout.
pub fn print_man() -> Result<(), crate::exit::Failure> {
    let man = clap_mangen::Man::new(Cli::command());
    man.render(&mut std::io::stdout())
        .map_err(|e| crate::exit::Failure::runtime(format!("cannot write the manual page: {e}")))
}
