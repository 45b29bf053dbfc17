//! `panto`: the terminal front end of the panto agent runtime.
//!
//! One binary, three ways to use it:
//!
//! - **The REPL** (`panto`): a rustyline prompt with history, slash commands and tab completion.
//!   Each line is one turn of the agent; its events are rendered as they stream (text, dimmed
//!   thinking, tool calls and summarised results, a cost line per turn). Ctrl-C cancels a running
//!   turn and keeps what already streamed.
//! - **Print mode** (`panto -p PROMPT`): one turn, the answer on stdout, in `text`, `json` or
//!   `stream-json` form, for scripts.
//! - **Commands**: `panto sessions` (list, export), `panto models`, `panto mcp list`,
//!   `panto completions SHELL`.
//!
//! The code is split by concept: [`config`] reads the TOML file, XDG paths and environment and
//! picks the model; [`store`] opens the session store; [`setup`] chooses or resumes the session
//! (the `-r` [`picker`]) and builds the [`panto_core::Agent`] with its system prompt, its
//! [`tools`] and the [`mcp`] servers' tools; [`print`](mod@print) and [`repl`] drive turns;
//! [`render`] decides about colour and draws events; [`safe`] neutralises what a model, a tool
//! or a server wrote before it reaches a terminal; [`sessions`] lists, exports and imports logs;
//! [`models`] lists the models. The agent persists everything itself: this crate never calls a
//! persist function.
//!
//! Startup stays fast: arguments are parsed before anything else happens, and nothing touches the
//! network until the first turn (configured MCP servers are started with the agent, in parallel).
#![deny(missing_docs)]
// Printing is the point of a command-line front end.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod attach;
mod completions;
mod config;
mod cost;
mod exit;
mod interrupt;
mod log;
mod mcp;
mod models;
mod picker;
mod print;
mod prompt;
mod render;
mod repl;
mod rewind;
mod safe;
mod sessions;
mod setup;
mod store;
mod telemetry;
mod terminal;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::exit::{usage, Failure};
use crate::tools::{Approval, Sandbox};

/// The version and the commit it was built from (build.rs).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("PANTO_GIT_COMMIT"), ")");

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "panto",
    version = VERSION,
    about = "A terminal agent: chat with an LLM that can read, write, edit files and run commands.",
    after_help = "Without -p, panto starts the interactive REPL. Exit codes: 0 success, 1 a turn or \
                  an operation failed, 2 bad usage or configuration, 130 interrupted by Ctrl-C. \
                  --help also lists the environment variables and files panto reads.",
    after_long_help = completions::long_help()
)]
pub struct Cli {
    /// Print mode: run one turn with PROMPT and print the answer (`-` reads the prompt from stdin).
    #[arg(short = 'p', long = "print", value_name = "PROMPT")]
    print: Option<String>,

    /// Output of print mode.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, requires = "print")]
    output_format: OutputFormat,

    /// Input of print mode besides PROMPT: none, or (with `--output-format stream-json`) JSON
    /// lines on stdin while the run goes on: `{"type":"steer","text":…}` joins the running turn
    /// at its next step boundary, `{"type":"follow_up","text":…}` starts a turn after it. The run
    /// ends when stdin is closed and the last turn is over.
    #[arg(long, value_enum, default_value_t = InputFormat::Text, requires = "print")]
    input_format: InputFormat,

    /// With `-r ID` or `-c` in print mode: first go back to before the Nth last prompt of the
    /// session's active branch (1 = the last), like the REPL's `/rewind N`; PROMPT then starts a
    /// new branch there, and the abandoned branch stays in the log.
    #[arg(long, value_name = "N", requires = "print", value_parser = clap::value_parser!(u32).range(1..))]
    rewind: Option<u32>,

    /// With `--rewind N`: also put back the files panto's write and edit tools changed since that
    /// prompt, byte for byte (like `/rewind N --files`); a file changed outside panto since is
    /// reported, not overwritten.
    #[arg(long, requires = "rewind")]
    rewind_files: bool,

    /// Attach an image (PNG, JPEG, GIF or WebP) to the print-mode prompt; repeatable.
    #[arg(long = "image", value_name = "FILE", requires = "print")]
    images: Vec<PathBuf>,

    /// Continue the most recent session started in this directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    continue_last: bool,

    /// Resume a session by id or unique id prefix (from any directory); without ID, pick one of
    /// this directory's sessions from a numbered list.
    #[arg(short = 'r', long, value_name = "ID", num_args = 0..=1)]
    resume: Option<Option<String>>,

    /// With -c: continue the most recent session of any directory. With -r and no ID: pick
    /// among every directory's sessions.
    #[arg(long = "all")]
    all_dirs: bool,

    /// The model: a configured alias or, failing that, a model name for the provider in use.
    #[arg(short = 'm', long, value_name = "NAME")]
    model: Option<String>,

    /// Tool approval: ask before write/edit/bash (REPL default), run everything, or refuse them
    /// (print-mode default).
    #[arg(long, value_name = "MODE", value_parser = modes::<Approval>(Approval::ALL.map(Approval::as_str)))]
    approve: Option<Approval>,

    /// The sandbox of bash, write and edit (Linux): none, no writes at all, or writes only in the
    /// working directory, `[tools] writable_roots` and a private /tmp; no internet sockets
    /// unless `[tools] sandbox_network = true`. Default: `[tools] sandbox`, else
    /// workspace-write in print mode with `--approve auto`, else off.
    #[arg(long, value_name = "MODE", value_parser = modes::<Sandbox>(Sandbox::ALL.map(Sandbox::as_str)))]
    sandbox: Option<Sandbox>,

    /// The built-in tools offered to the model, comma separated (`none` for no tools).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    tools: Option<Vec<String>>,

    /// The config file (default: $XDG_CONFIG_HOME/panto/config.toml; env: PANTO_CONFIG).
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,

    /// Where sessions are stored (default: $XDG_DATA_HOME/panto/sessions; env: PANTO_SESSION_DIR).
    #[arg(long, value_name = "DIR", global = true)]
    session_dir: Option<PathBuf>,

    /// Keep sessions in this PostgreSQL database instead of the session directory (env:
    /// PANTO_STORE; config: [store] url).
    #[arg(long, value_name = "postgres://…", global = true)]
    store: Option<String>,

    /// With `-r ID`: continue in a new session forked from that session's active branch (the
    /// original stays as it is).
    #[arg(long, requires = "resume")]
    fork: bool,

    /// Write a log to $XDG_STATE_HOME/panto/panto.log: a level (error, warn, info, debug, trace)
    /// or RUST_LOG-style directives (env: PANTO_LOG). Never to the terminal.
    #[arg(long, value_name = "LEVEL", global = true)]
    log_level: Option<String>,

    /// Persist nothing: the conversation lives only as long as the process.
    #[arg(long, conflicts_with_all = ["continue_last", "resume"])]
    no_session: bool,

    /// Start the REPL with PROMPT as its first message. A prompt that is exactly a subcommand's
    /// name runs the subcommand; `panto -- sessions` sends it as a prompt.
    #[arg(value_name = "PROMPT", conflicts_with = "print")]
    prompt: Option<String>,

    #[command(subcommand)]
    command: Option<Command>,
}

/// How print mode writes its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// The final assistant text.
    Text,
    /// One JSON result object.
    Json,
    /// One JSON object per event, one per line.
    StreamJson,
}

/// What print mode reads from stdin while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// Nothing (stdin is read only for `-p -`).
    Text,
    /// Steer and follow-up messages, one JSON object per line.
    StreamJson,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// List sessions, newest first, or export one.
    Sessions(SessionsArgs),
    /// List the configured model aliases and the default.
    Models,
    /// MCP servers: `panto mcp list` starts each configured one and lists its status and tools.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Print shell completions.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `panto man > panto.1`.
    Man,
}

/// `panto mcp …`.
#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Start every configured MCP server and list it: how it is reached, whether it runs (or
    /// why not), and its tools by the names the model is offered. Exit code 1 when an enabled
    /// server does not start.
    List,
}

/// `panto sessions`.
#[derive(Debug, Args)]
struct SessionsArgs {
    /// Print the listing as JSON.
    #[arg(long)]
    json: bool,
    /// List every directory's sessions (by default only those started in this directory).
    #[arg(long)]
    all: bool,
    #[command(subcommand)]
    command: Option<SessionsCommand>,
}

/// `panto sessions …`.
#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// Export one session: a Markdown transcript, a self-contained HTML page, or JSON that
    /// `panto sessions import FILE` reads back (docs/cli.md). Keys are never exported; paths
    /// under the home directory are written `~/…`.
    Export {
        /// The session id or a unique prefix.
        id: String,
        /// The output format (`markdown` is `md`).
        #[arg(long, value_enum, default_value_t = sessions::ExportFormat::Md)]
        format: sessions::ExportFormat,
        /// Write FILE (whole or not at all) instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// Every branch of the session, not only the active one.
        #[arg(long)]
        all_branches: bool,
        /// Keep absolute paths under the home directory as they are (a byte-exact JSON round
        /// trip of such paths needs it).
        #[arg(long)]
        keep_paths: bool,
    },
    /// Copy every session of a session directory into the PostgreSQL store (--store): whole
    /// histories, ids kept; sessions already there are skipped, so it can be run again. Or read
    /// a session exported with `--format json` into the store in use (refused if its id is
    /// there already).
    Import {
        /// The session directory, or the JSON file, to read.
        dir: PathBuf,
    },
    /// Find what was said: prompts and answers (with --tools, tool inputs and outputs too) of
    /// this directory's sessions (--all: every session), newest first. Exit code 1 when nothing
    /// matches.
    Search(SearchArgs),
}

/// `panto sessions search`.
#[derive(Debug, Args)]
struct SearchArgs {
    /// The text to find (letter case ignored), or with --regex a regular expression.
    text: String,
    /// Search tool calls' inputs and tool results too.
    #[arg(long)]
    tools: bool,
    /// TEXT is a regular expression (Rust regex syntax, case ignored unless it says `(?-i)`).
    #[arg(long)]
    regex: bool,
    /// Search every directory's sessions (by default only those started in this directory).
    #[arg(long)]
    all: bool,
    /// Print the hits as JSON.
    #[arg(long)]
    json: bool,
    /// At most N hits, the newest.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Resume the session at the newest hit (on a terminal, pick among the hits), on the
    /// hit's branch.
    #[arg(short = 'r', long, conflicts_with = "json")]
    resume: bool,
}

impl SearchArgs {
    fn request(&self) -> sessions::SearchRequest {
        sessions::SearchRequest {
            text: self.text.clone(),
            regex: self.regex,
            tools: self.tools,
            all: self.all,
            limit: self.limit,
        }
    }
}

fn main() -> ExitCode {
    // `panto --version` alone is answered before clap builds the definition of the whole command
    // line, a third of that command's instructions; the line is the one clap prints.
    let mut args = std::env::args_os();
    if args.len() == 2
        && matches!(
            args.nth(1).as_deref().and_then(|a| a.to_str()),
            Some("--version" | "-V")
        )
    {
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), "panto {VERSION}");
        return ExitCode::SUCCESS;
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(failure) => failure.report(),
    }
}

/// A parser of one of `names` into `T` (the mode enums of panto-tools, which know nothing of
/// clap): completions and `--help` list the names.
fn modes<T>(names: [&'static str; 3]) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr<Err = String> + Clone + Send + Sync + 'static,
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names).try_map(|s| s.parse::<T>())
}

/// `panto sessions …` but `search -r`, which `run` turns into a resume.
async fn sessions_command(
    args: SessionsArgs,
    sessions_at: &store::StoreLocation,
    settings: &config::Settings,
    env: &config::Env,
) -> Result<ExitCode, Failure> {
    // Import opens the PostgreSQL store it imports into itself; the others read the store.
    if let Some(SessionsCommand::Import { dir }) = &args.command {
        return sessions::import_command(sessions_at, dir).await;
    }
    let store = sessions_at.open().await?;
    match args.command {
        Some(SessionsCommand::Export {
            id,
            format,
            output,
            all_branches,
            keep_paths,
        }) => {
            let options = sessions::ExportOptions {
                format,
                output,
                all_branches,
                keep_paths,
            };
            let context = sessions::ExportContext::of(settings, env);
            sessions::export_command(&store, &id, &options, &context).await
        }
        Some(SessionsCommand::Search(search)) => {
            sessions::search_command(&store, &search.request(), search.json, &setup::working_dir()?).await
        }
        None | Some(SessionsCommand::Import { .. }) => {
            sessions::list_command(&store, args.json, args.all, &setup::working_dir()?).await
        }
    }
}

/// Dispatches the parsed command line.
fn run(cli: Cli) -> Result<ExitCode, Failure> {
    if let Some(Command::Completions { shell }) = &cli.command {
        completions::print(*shell);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(Command::Man) = &cli.command {
        return completions::print_man().map(|()| ExitCode::SUCCESS);
    }
    let env = config::Env::from_process();
    // The subscriber is installed once the runtime exists: the OpenTelemetry export, whose
    // layer joins the file log's, runs on it.
    let mut layers = log::requested_layers(cli.log_level.as_deref(), &env)?;
    let settings = config::Settings::load(cli.config.as_deref(), &env)?;
    for warning in &settings.warnings {
        safe::eprint_line(&format!("warning: {warning}"));
    }
    let tool_names = match &cli.tools {
        Some(list) => tools::parse_list(list).map_err(usage)?,
        None => settings.tools.enabled.clone(),
    };
    let sessions_at = store::StoreLocation::new(
        config::store_url(cli.store.as_deref(), &settings, &env)?,
        config::session_dir(cli.session_dir.as_deref(), &settings, &env)?,
    );
    // One agent's turn (print mode) and the commands run on this thread alone: worker threads
    // would be started, and the work handed between threads, for a single request. The REPL keeps
    // them: between turns its line editor blocks this thread, while MCP servers, signal watchers
    // and the key reader's tasks must go on.
    // `sessions search TEXT -r` ends in the REPL, resumed at the hit.
    let repl = cli.print.is_none()
        && match &cli.command {
            None => true,
            Some(Command::Sessions(SessionsArgs {
                command: Some(SessionsCommand::Search(search)),
                ..
            })) => search.resume,
            Some(_) => false,
        };
    let mut builder = if repl {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = builder
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("cannot start the async runtime: {e}")))?;
    let telemetry = start_telemetry(&runtime, &mut layers);
    log::install(layers);

    // `panto sessions search TEXT -r` resumes at a hit: the search picks the session, then the
    // REPL starts as `panto -r ID` would.
    let mut command = cli.command;
    let mut resume_at_hit = None;
    // A failed search ends the run through the same exit as every other outcome.
    let outcome = 'outcome: {
        if let Some(Command::Sessions(SessionsArgs {
            command: Some(SessionsCommand::Search(search)),
            ..
        })) = &command
        {
            if search.resume {
                let request = search.request();
                let found = runtime.block_on(async {
                    let store = sessions_at.open().await?;
                    sessions::resume_at_hit(&store, &request, &setup::working_dir()?).await
                });
                match found {
                    Ok(id) => {
                        resume_at_hit = Some(id);
                        command = None;
                    }
                    Err(failure) => break 'outcome Err(failure),
                }
            }
        }
        match command {
            // Answered above, before any configuration is read.
            Some(Command::Completions { .. } | Command::Man) => Ok(ExitCode::SUCCESS),
            Some(Command::Models) => {
                models::print_models(&settings);
                Ok(ExitCode::SUCCESS)
            }
            Some(Command::Mcp {
                command: McpCommand::List,
            }) => runtime.block_on(mcp::list_command(&settings)),
            Some(Command::Sessions(args)) => runtime.block_on(sessions_command(args, &sessions_at, &settings, &env)),
            None => {
                let all = cli.all_dirs;
                let choice = if let Some(id) = resume_at_hit {
                    setup::SessionChoice::Resume(id)
                } else if cli.continue_last {
                    setup::SessionChoice::Continue { all }
                } else {
                    match cli.resume {
                        Some(Some(id)) if cli.fork => setup::SessionChoice::Fork(id),
                        Some(None) if cli.fork => {
                            return Err(Failure::usage("--fork needs the session to fork: -r ID --fork"));
                        }
                        Some(None) => setup::SessionChoice::Pick { all },
                        _ if all => {
                            return Err(Failure::usage(
                                "--all goes with -c (the latest session of any directory) or with -r without an ID \
                             (pick among every directory's sessions); `panto sessions --all` lists them all",
                            ));
                        }
                        Some(Some(id)) => setup::SessionChoice::Resume(id),
                        None => setup::SessionChoice::New,
                    }
                };
                let launch = setup::Launch {
                    settings,
                    env,
                    store: if cli.no_session {
                        store::StoreLocation::Nowhere
                    } else {
                        sessions_at
                    },
                    choice,
                    model: cli.model,
                    tools: tool_names,
                    sandbox: cli.sandbox,
                };
                match cli.print {
                    Some(prompt) => {
                        let options = print::Options {
                            approval: print::approval(cli.approve)?,
                            images: cli.images,
                            output: cli.output_format,
                            input: cli.input_format,
                            rewind: print::rewind_request(cli.rewind, cli.rewind_files, &launch.choice)?,
                        };
                        runtime.block_on(print::run(launch, &prompt, options))
                    }
                    None => {
                        let approval = cli.approve.or(launch.settings.tools.approval).unwrap_or(Approval::Ask);
                        repl::run(&runtime, launch, approval, cli.prompt)
                    }
                }
            }
        }
    };
    // The export sends on the runtime's tasks: the runtime is driven while it flushes.
    if let Some(warning) = interrupt::while_driving(&runtime, move || telemetry.finish()).flatten() {
        safe::eprint_line(&format!("warning: {warning}"));
    }
    // A tool that cannot be stopped (a read stuck in the kernel) must not keep panto alive.
    interrupt::shutdown(runtime, tools::running(), interrupt::SHUTDOWN_GRACE);
    outcome
}

/// Starts the OpenTelemetry export the environment asks for and adds the layer that feeds it to
/// the process subscriber's `layers` (beside the file log, so both see the same spans).
fn start_telemetry(runtime: &tokio::runtime::Runtime, layers: &mut Vec<log::BoxedLayer>) -> telemetry::Telemetry {
    let mut warnings = Vec::new();
    let (telemetry, layer) = telemetry::Telemetry::start(runtime, &mut warnings);
    #[cfg(feature = "otel")]
    if let Some(layer) = layer {
        layers.push(layer);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (layer, layers);
    for warning in warnings {
        safe::eprint_line(&format!("warning: {warning}"));
    }
    telemetry
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_early_version_line_is_the_one_clap_prints() {
        assert_eq!(Cli::command().render_version(), format!("panto {VERSION}\n"));
        let err = Cli::try_parse_from(["panto", "-V"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayVersion);
        assert_eq!(err.to_string(), format!("panto {VERSION}\n"));
    }

    #[test]
    fn resume_takes_an_optional_id() {
        let cli = Cli::try_parse_from(["panto", "-r"]).unwrap();
        assert_eq!(cli.resume, Some(None));
        let cli = Cli::try_parse_from(["panto", "-r", "0190ab"]).unwrap();
        assert_eq!(cli.resume, Some(Some("0190ab".to_owned())));
        assert!(Cli::try_parse_from(["panto", "-c", "-r", "x"]).is_err());
        assert!(Cli::try_parse_from(["panto", "--no-session", "-c"]).is_err());
    }

    #[test]
    fn export_takes_markdown_as_md_and_refuses_the_old_jsonl() {
        let cli = Cli::try_parse_from(["panto", "sessions", "export", "0190", "--format", "markdown"]).unwrap();
        let Some(Command::Sessions(SessionsArgs {
            command: Some(SessionsCommand::Export { format, .. }),
            ..
        })) = cli.command
        else {
            panic!("not an export");
        };
        assert_eq!(format, sessions::ExportFormat::Md);
        assert!(Cli::try_parse_from(["panto", "sessions", "export", "0190", "--format", "jsonl"]).is_err());
    }

    #[test]
    fn output_format_needs_print_mode() {
        assert!(Cli::try_parse_from(["panto", "--output-format", "json"]).is_err());
        let cli = Cli::try_parse_from(["panto", "-p", "hi", "--output-format", "stream-json"]).unwrap();
        assert_eq!(cli.output_format, OutputFormat::StreamJson);
    }
}
