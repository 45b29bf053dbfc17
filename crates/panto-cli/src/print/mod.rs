//! Print mode: `panto -p PROMPT` runs one turn and prints the outcome for a script.
//!
//! `text` prints the final assistant text; `json` prints one result object; `stream-json` prints
//! a `session` line (with the event JSON's `version`), one line per event as it happens, in
//! panto-core's event JSON (flushed at once, so a `message_complete` line means that message is
//! persisted), and a closing `result` line. Any failure also prints a
//! one-line reason on stderr and exits non-zero.
//!
//! On a terminal, the answer is neutralised like everything else ([`crate::safe`]), and JSON lines
//! escape the few characters serde_json leaves raw that a terminal would obey; written to a pipe
//! or a file, the output is the model's bytes as they came.

mod events;
mod input;
mod rewind;

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use panto_core::{Agent, Event, Role, Usage, UserMessage};
use serde::Serialize;

use crate::attach;
use crate::exit::Failure;
use crate::mcp::McpTools;
use crate::setup::{self, Launch};
use crate::tools::{Approval, Gate};
use crate::{InputFormat, OutputFormat};
use events::{SessionLine, TurnResult};
use input::Input;

/// The approval mode of print mode: read-only unless `--approve auto`. `ask` has nobody to ask.
pub fn approval(flag: Option<Approval>) -> Result<Approval, Failure> {
    match flag {
        None | Some(Approval::ReadOnly) => Ok(Approval::ReadOnly),
        Some(Approval::Auto) => Ok(Approval::Auto),
        Some(Approval::Ask) => Err(Failure::usage(
            "--approve ask needs the interactive REPL; print mode takes --approve auto or read-only",
        )),
    }
}

/// Writes one JSON line to stdout and flushes it. A closed stdout (the reader went away) is not
/// an error worth more output. On a terminal the line goes through the neutraliser (control
/// characters as JSON escapes, the values unchanged); to a pipe it is serde's bytes.
fn emit(value: &impl Serialize) {
    // Neither a Value nor an Event can fail to serialise (no map has non-string keys).
    let Ok(line) = serde_json::to_string(value) else {
        return;
    };
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let mut out = stdout.lock();
    if terminal {
        let _ = writeln!(out, "{}", crate::safe::json_for_terminal(&line));
    } else {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
}

/// The prompt: the argument, or all of stdin for `-`.
fn read_prompt(arg: &str) -> Result<String, Failure> {
    let prompt = if arg == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::usage(format!("cannot read the prompt from stdin: {e}")))?;
        text
    } else {
        arg.to_owned()
    };
    if prompt.trim().is_empty() {
        return Err(Failure::usage("the prompt is empty"));
    }
    Ok(prompt)
}

/// How print mode runs, from the command line.
#[derive(Debug, Clone)]
pub struct Options {
    /// Tool approval ([`approval`]).
    pub approval: Approval,
    /// Images attached to the prompt.
    pub images: Vec<PathBuf>,
    /// `--output-format`.
    pub output: OutputFormat,
    /// `--input-format`.
    pub input: InputFormat,
    /// `--rewind N [--rewind-files]`.
    pub rewind: Option<RewindRequest>,
}

/// `--rewind N [--rewind-files]`: go back before the Nth last prompt first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RewindRequest {
    /// How many prompts back (1 = the last).
    pub prompts_back: usize,
    /// Whether the files changed since are put back too.
    pub files: bool,
}

/// Checks `--rewind`: it needs an existing session (`-r ID` or `-c`).
pub fn rewind_request(
    prompts_back: Option<u32>,
    files: bool,
    choice: &setup::SessionChoice,
) -> Result<Option<RewindRequest>, Failure> {
    let Some(n) = prompts_back else {
        return Ok(None);
    };
    if *choice == setup::SessionChoice::New {
        return Err(Failure::usage(
            "--rewind N needs the session to rewind: -r ID --rewind N or -c --rewind N",
        ));
    }
    Ok(Some(RewindRequest {
        prompts_back: n as usize,
        files,
    }))
}

/// Runs print mode.
pub async fn run(launch: Launch, prompt: &str, options: Options) -> Result<ExitCode, Failure> {
    let Options {
        approval,
        images,
        output: format,
        input: input_format,
        rewind: rewind_request,
    } = options;
    if input_format == InputFormat::StreamJson {
        if format != OutputFormat::StreamJson {
            return Err(Failure::usage(
                "--input-format stream-json needs --output-format stream-json",
            ));
        }
        if prompt == "-" {
            return Err(Failure::usage(
                "with --input-format stream-json stdin carries steer and follow-up lines: give the prompt as -p PROMPT, not -p -",
            ));
        }
    }
    let prompt = read_prompt(prompt)?;
    // Every image is read before anything else happens, so a bad one costs no request.
    let images = images
        .iter()
        .map(|path| attach::read(path).map(|a| a.bytes).map_err(Failure::usage))
        .collect::<Result<Vec<_>, _>>()?;
    let store = launch.store.open_for_writing().await?;
    let read_only_hint = " (print mode is read-only unless --approve auto is given)";
    let gate = Arc::new(Gate::new(None));
    let sandbox = setup::sandbox_for(&launch, true, approval);
    let toolbox = setup::toolbox(&launch, approval, sandbox, gate.clone(), read_only_hint, None)?;
    if let Some(note) = toolbox.sandbox().note() {
        crate::safe::eprint_line(note);
    }
    // The MCP servers start with the agent; one that does not start is a warning, not a failure.
    let mcp = McpTools::start(&launch.settings, &gate, toolbox.policy().approval_mode()).await;
    mcp.print_warnings();
    let ready = setup::start(&launch, &store, &toolbox, &mcp).await?;
    for note in &ready.notes {
        crate::safe::eprint_line(note);
    }
    let pricing = launch.settings.pricing();
    let wire = ready.selection.wire();
    let ready_provider = ready.selection.provider.clone();
    let mut agent = ready.agent;
    let saving = launch.store.persists();
    let mut result = TurnResult {
        session_id: agent.session_id().to_owned(),
        persisted: saving,
        model: ready.selection.model.clone(),
        text: String::new(),
        usage: Default::default(),
        cost: None,
        stop_reason: None,
        steps: 0,
        error: None,
    };
    if format == OutputFormat::StreamJson {
        emit(
            &SessionLine {
                session_id: &result.session_id,
                persisted: result.persisted,
                resumed: ready.resumed,
                model: &ready.selection.model,
                alias: ready.selection.alias.as_deref(),
                api_style: ready.selection.provider.api_style.as_str(),
                forked_from: agent.session().info.forked_from.as_ref(),
            }
            .to_json(),
        );
    }
    if let Some(request) = rewind_request {
        let line = rewind::apply(&mut agent, &toolbox, request).await?;
        if format == OutputFormat::StreamJson {
            emit(&line);
        }
    }
    let input = (input_format == InputFormat::StreamJson).then(|| {
        Input::start(|bad| {
            crate::safe::eprint_line(&format!("panto: {}", bad.message()));
            emit(&bad.to_json());
        })
    });

    let outcome = turns(
        &mut agent,
        UserMessage {
            text: prompt,
            images,
            attached: Vec::new(),
        },
        input.as_ref(),
        format,
        &mut result,
    )
    .await;

    // The truth, not the intent: a new session is written from its first assistant message on,
    // so a turn that failed before one leaves no session behind to resume.
    result.persisted = saving && agent.session().info.message_count > 0;
    result.cost = crate::cost::cost(&pricing, &wire, &result.usage);
    if outcome.is_ok() {
        result.text = agent
            .conversation()
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(|m| m.text())
            .unwrap_or_default();
    }
    let mut failure = outcome.err().map(|e| turn_failure(e, &ready_provider));
    if let Some(input) = &input {
        let untaken = input.untaken();
        if !untaken.is_empty() {
            crate::safe::eprint_line(&format!(
                "panto: {} message(s) from stdin were not sent: the run ended first",
                untaken.len()
            ));
        }
        // A refused line does not end the turn, but the run did not do all it was asked.
        if let (None, Some(bad)) = (&failure, input.first_bad_line()) {
            failure = Some(Failure::runtime(format!(
                "{} (the run went on without that line)",
                bad.message()
            )));
        }
    }
    result.error = failure.as_ref().map(|f| f.message.clone());
    match format {
        OutputFormat::Text => {
            if failure.is_none() {
                let stdout = std::io::stdout();
                let text = crate::safe::for_stream(&result.text, stdout.is_terminal());
                let mut out = stdout.lock();
                let _ = out.write_all(text.as_bytes());
                if !result.text.ends_with('\n') {
                    let _ = out.write_all(b"\n");
                }
                let _ = out.flush();
            }
        }
        OutputFormat::Json | OutputFormat::StreamJson => emit(&result.to_json()),
    }
    match failure {
        Some(f) => Err(f),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// Runs the turn of `first`, then, with stdin input, a turn for each message no running turn
/// took, until stdin has ended. Usage and steps add up over the turns in `result`; the first
/// error (a cancel included) ends the run.
async fn turns(
    agent: &mut Agent,
    first: UserMessage,
    input: Option<&Input>,
    format: OutputFormat,
    result: &mut TurnResult,
) -> Result<(), panto_core::Error> {
    let mut message = first;
    loop {
        let mut stream = agent.run(message);
        if let Some(input) = input {
            input.attach(stream.control());
        }
        // Ctrl-C cancels the turn; the agent keeps and persists what streamed.
        let watcher = crate::interrupt::cancel_on_interrupt(stream.cancel_token());
        // The usage of the turns this stream completed; the one still open is the stream's.
        let mut completed = Usage::default();
        let mut open = true;
        let outcome = loop {
            match stream.next().await {
                Ok(Some(event)) => {
                    match &event {
                        Event::TurnComplete {
                            usage,
                            steps,
                            stop_reason,
                        } => {
                            completed.accumulate(usage);
                            result.steps += *steps;
                            result.stop_reason = Some(stop_reason.clone());
                            open = false;
                        }
                        Event::FollowUpStart { .. } => open = true,
                        _ => {}
                    }
                    if format == OutputFormat::StreamJson {
                        // Every event, as panto-core writes it (docs/events.md).
                        emit(&event);
                    }
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        watcher.abort();
        if open {
            completed.accumulate(&stream.usage());
        }
        result.usage.accumulate(&completed);
        drop(stream);
        let Some(input) = input else {
            return outcome;
        };
        input.detach();
        outcome?;
        // Waiting for more input: Ctrl-C (whose default action the turn's listener replaced)
        // ends the run as it would end a turn.
        let (interrupted, watcher) = crate::interrupt::interrupt_token();
        let next = tokio::select! {
            next = input.next_turn() => next,
            () = interrupted.cancelled() => None,
        };
        watcher.abort();
        if interrupted.is_cancelled() {
            return Err(panto_core::Error::Cancelled);
        }
        let Some(next) = next else {
            return Ok(());
        };
        // A message no running turn took starts a turn of its own, announced as the stream
        // announces its own follow-ups.
        if format == OutputFormat::StreamJson {
            emit(&Event::FollowUpStart {
                text: next.text.clone(),
            });
        }
        message = UserMessage::text(next.text);
    }
}

/// A failed turn as the run's failure: a key the provider refused says where it came from.
fn turn_failure(error: panto_core::Error, provider: &crate::config::Provider) -> Failure {
    let hint = provider.key_hint(&error);
    let mut failure = Failure::from(error);
    if let Some(hint) = hint {
        failure.message = format!("{}; {hint}", failure.message);
    }
    failure
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn print_mode_is_read_only_unless_auto() {
        assert_eq!(approval(None).unwrap(), Approval::ReadOnly);
        assert_eq!(approval(Some(Approval::Auto)).unwrap(), Approval::Auto);
        let e = approval(Some(Approval::Ask)).unwrap_err();
        assert_eq!(e.code, crate::exit::EXIT_USAGE);
    }
}
