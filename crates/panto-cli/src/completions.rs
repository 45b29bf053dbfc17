//! `panto completions SHELL` and `panto man`: shell completion scripts and the manual page,
//! generated from the clap definition, so they can never disagree with the real flags. The
//! environment variables and files panto reads are listed once here, for both `--help` and the
//! manual page.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::Cli;

/// Prints the completion script for `shell` to stdout.
pub fn print(shell: Shell) {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "panto", &mut std::io::stdout());
}

/// The environment variables panto reads, and what each does.
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "ANTHROPIC_API_KEY",
        "the key for Anthropic's API (a config file's api_key_env may name another variable)",
    ),
    ("OPENAI_API_KEY", "the key for OpenAI's API and compatible servers"),
    (
        "ANTHROPIC_BASE_URL",
        "where Anthropic requests go (default https://api.anthropic.com)",
    ),
    (
        "OPENAI_BASE_URL",
        "where OpenAI requests go (default https://api.openai.com/v1)",
    ),
    (
        "PANTO_CONFIG",
        "the config file, instead of $XDG_CONFIG_HOME/panto/config.toml",
    ),
    (
        "PANTO_SESSION_DIR",
        "the session directory, instead of $XDG_DATA_HOME/panto/sessions",
    ),
    ("PANTO_STORE", "a postgres:// URL: keep sessions in PostgreSQL instead"),
    ("PANTO_LOG", "the log level or filter directives (--log-level wins)"),
    (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "export traces and metrics over OTLP (and the other OTEL_ variables)",
    ),
    ("NO_COLOR", "when set to anything non-empty, no colour"),
    (
        "XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_STATE_HOME, HOME",
        "the base directories of the files below",
    ),
];

/// The files panto reads and writes.
const FILES: &[(&str, &str)] = &[
    (
        "$XDG_CONFIG_HOME/panto/config.toml",
        "the config file (~/.config/panto/config.toml)",
    ),
    ("./AGENTS.md", "the project's instructions, added to the system prompt"),
    (
        "$XDG_DATA_HOME/panto/sessions/",
        "the sessions, one JSONL file each (~/.local/share/panto/sessions)",
    ),
    (
        "$XDG_STATE_HOME/panto/history",
        "the REPL's input history (~/.local/state/panto/history)",
    ),
    (
        "$XDG_STATE_HOME/panto/panto.log",
        "the log, with --log-level or PANTO_LOG",
    ),
    (
        "$XDG_STATE_HOME/panto/mcp/NAME.log",
        "what MCP server NAME writes to its standard error",
    ),
];

/// What `--help` shows after the options: the REPL, the exit codes, the environment and files.
pub fn long_help() -> String {
    let mut out = String::from(
        "Without -p, panto starts the interactive REPL.\n\nExit codes: 0 success, 1 a turn or an \
         operation failed, 2 bad usage or configuration, 130 interrupted by Ctrl-C.\n",
    );
    for (heading, rows) in [("Environment", ENVIRONMENT), ("Files", FILES)] {
        out.push_str(&format!("\n{heading}:\n"));
        for (name, meaning) in rows {
            out.push_str(&format!("  {name}\n          {meaning}\n"));
        }
    }
    out
}

/// Prints the manual page, `panto.1` in roff, to stdout: clap's sections, the subcommands (each
/// described here: panto ships one page), then exit status, environment and files.
pub fn print_man() -> Result<(), crate::exit::Failure> {
    let mut page = Vec::new();
    render_man(&mut page).map_err(|e| crate::exit::Failure::runtime(format!("cannot render the manual page: {e}")))?;
    std::io::Write::write_all(&mut std::io::stdout(), &page)
        .map_err(|e| crate::exit::Failure::runtime(format!("cannot write the manual page: {e}")))
}

fn render_man(out: &mut Vec<u8>) -> std::io::Result<()> {
    let command = Cli::command();
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    let mut text = String::from(".SH COMMANDS\n");
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
        text.push_str(&format!(
            ".TP\n\\fBpanto {}\\fR\n{}\n",
            roff(sub.get_name()),
            roff(&about)
        ));
    }
    text.push_str(".SH EXIT STATUS\n0 success; 1 a turn or an operation failed; 2 bad usage or configuration; 130 interrupted by Ctrl\\-C.\n");
    for (heading, rows) in [("ENVIRONMENT", ENVIRONMENT), ("FILES", FILES)] {
        text.push_str(&format!(".SH {heading}\n"));
        for (name, meaning) in rows {
            text.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(name), roff(meaning)));
        }
    }
    out.extend_from_slice(text.as_bytes());
    man.render_version_section(out)
}

/// `text` as roff body text: backslashes and hyphens escaped, no line starting with a control
/// character.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    match escaped.chars().next() {
        Some('.' | '\'') => format!("\\&{escaped}"),
        _ => escaped,
    }
}
