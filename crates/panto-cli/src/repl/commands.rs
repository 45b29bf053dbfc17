//! Slash commands: the one table of them (name, arguments, what the argument completes to,
//! help), parsing, and suggestions for a mistyped name; and what a typed line is (command,
//! shell line or message).

use std::borrow::Cow;

/// What the argument of a command completes to on Tab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completes {
    /// Nothing.
    Nothing,
    /// A configured model alias.
    Alias,
    /// A recent session id.
    Session,
    /// File names (spaces escaped, as `/image` reads them).
    Files,
    /// An approval mode.
    Mode,
}

/// One slash command's row in [`COMMANDS`].
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// The command.
    pub command: Command,
    /// The name, with its slash.
    pub name: &'static str,
    /// Its arguments, for help.
    pub args: &'static str,
    /// What its argument completes to.
    pub completes: Completes,
    /// What it does.
    pub help: &'static str,
}

/// What `/init` asks the model: an `AGENTS.md` that panto (and other agents) read at start.
pub const INIT_PROMPT: &str = "Look around this project (its layout, build and test commands, \
conventions and anything a newcomer would trip over) and write an AGENTS.md at its root for \
coding agents working in it: how to build, test and run it, where things are, and the rules the \
code follows. Keep it short and factual. If an AGENTS.md exists, improve it instead of starting \
over.";

/// Declares [`Command`] and [`COMMANDS`] from one list, so that a command cannot be added to one
/// and not the other: the table drives parsing, `/help` and Tab completion, and the REPL matches
/// on the enum, so the compiler asks for the new command's handler.
macro_rules! slash_commands {
    ($($variant:ident = $name:literal, $args:literal, $completes:ident, $help:literal;)*) => {
        /// A slash command.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Command {
            $(
                #[doc = $help]
                $variant,
            )*
        }

        /// Every slash command, in help order (the order of [`Command`]'s variants).
        pub const COMMANDS: &[Spec] = &[
            $(
                Spec {
                    command: Command::$variant,
                    name: $name,
                    args: $args,
                    completes: Completes::$completes,
                    help: $help,
                },
            )*
        ];
    };
}

slash_commands! {
    Help = "/help", "", Nothing, "show commands and keys";
    Model = "/model", "[ALIAS]", Alias,
        "show the model, or switch to an alias or a model name of the current provider";
    Models = "/models", "", Nothing, "list configured model aliases";
    Compact = "/compact", "[INSTRUCTIONS]", Nothing,
        "summarise older messages to free context (optionally saying what to keep)";
    Image = "/image", "[FILE...]", Files,
        "attach images to your next prompt (dropping an image file onto the terminal does too)";
    Sessions = "/sessions", "[--all]", Nothing, "list this directory's recent sessions (--all: every directory's)";
    Resume = "/resume", "[ID|--all]", Session,
        "switch to another session (id or unique prefix; without one, pick one of this directory's; --all: of any)";
    New = "/new", "", Nothing, "start a new session with the current model";
    Clear = "/clear", "", Nothing, "start a new session with the current model (as /new)";
    Rewind = "/rewind", "[N] [--files]", Nothing,
        "go back to before the Nth last prompt, or pick one (a new branch starts there); --files puts back the files changed since";
    Fork = "/fork", "", Nothing, "continue in a new session holding this conversation (the original stays)";
    Tree = "/tree", "", Nothing, "show the session's branches, the active one marked";
    Export = "/export", "[FORMAT] [FILE]", Files,
        "write this session to FILE (default: panto-ID.md here); FORMAT: md (Markdown), html or json";
    System = "/system", "[TEXT]", Nothing, "show the system prompt, or replace it";
    Init = "/init", "", Nothing, "ask the model to write an AGENTS.md for this project";
    Tools = "/tools", "", Nothing, "list the tools and their approval";
    Approve = "/approve", "[MODE]", Mode,
        "show the approval mode, or change it: ask, auto or read-only (Shift-Tab cycles it)";
    Mcp = "/mcp", "", Nothing, "list the MCP servers: status, tools and approval, or why one is not running";
    Cost = "/cost", "", Nothing, "tokens and cost so far, and how full the context is";
    Status = "/status", "", Nothing,
        "model, provider, directory, session, approval and sandbox modes, MCP servers";
    Quit = "/quit", "", Nothing, "exit (Ctrl-D does too)";
    Exit = "/exit", "", Nothing, "exit (as /quit)";
}

impl Command {
    /// Its row of the table: the variants and the rows are declared in the same order.
    pub fn spec(self) -> &'static Spec {
        &COMMANDS[self as usize]
    }

    /// The command called `name` (with its slash).
    pub fn named(name: &str) -> Option<Command> {
        COMMANDS.iter().find(|c| c.name == name).map(|c| c.command)
    }
}

/// What a line typed at the REPL is: the prompt and the keys typed during a turn read it alike.
#[derive(Debug, PartialEq, Eq)]
pub enum Input<'a> {
    /// `!command`: runs in the shell (the command, trimmed).
    Shell(&'a str),
    /// `/name args`: a slash command (the line from its slash on).
    Command(&'a str),
    /// A message to the model; `//text` is the message `/text`.
    Message(Cow<'a, str>),
}

/// Reads `line` as the REPL does.
pub fn classify(line: &str) -> Input<'_> {
    let trimmed = line.trim_start();
    if let Some(command) = trimmed.strip_prefix('!') {
        Input::Shell(command.trim())
    } else if let Some(literal) = trimmed.strip_prefix("//") {
        Input::Message(Cow::Owned(format!("/{literal}")))
    } else if trimmed.starts_with('/') {
        Input::Command(trimmed)
    } else {
        Input::Message(Cow::Borrowed(line))
    }
}

/// A line that starts with `/`.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A known command and its (trimmed) argument text.
    Command(Command, &'a str),
    /// An unknown name, with the close matches.
    Unknown(&'a str, Vec<&'static str>),
}

/// Parses a slash-command line.
pub fn parse(line: &str) -> Parsed<'_> {
    let line = line.trim();
    let (name, args) = match line.find(char::is_whitespace) {
        Some(i) => (&line[..i], line[i..].trim()),
        None => (line, ""),
    };
    match Command::named(name) {
        Some(command) => Parsed::Command(command, args),
        None => Parsed::Unknown(name, suggestions(name)),
    }
}

/// Commands close to `name`: an edit distance of at most 2, or a prefix either way.
pub fn suggestions(name: &str) -> Vec<&'static str> {
    let name = name.to_ascii_lowercase();
    COMMANDS
        .iter()
        .map(|c| c.name)
        .filter(|c| {
            (name.len() > 1 && (c.starts_with(name.as_str()) || name.starts_with(c))) || distance(&name, c) <= 2
        })
        .collect()
}

/// Levenshtein distance, by characters.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The `/help` text for a terminal `columns` wide: a command per entry, its description
/// wrapped under itself.
pub fn help(columns: usize) -> Vec<String> {
    use crate::render::wrap::labelled;
    // Two spaces, the command in 26 columns, a space: where every description starts.
    const DESCRIPTION_AT: usize = 29;
    let mut lines = Vec::new();
    for c in COMMANDS {
        let usage = format!("  {} {}", c.name, c.args);
        lines.extend(labelled(usage.trim_end(), c.help, DESCRIPTION_AT, columns));
    }
    lines.push(String::new());
    for key in [
        "Enter sends. Alt-Enter, or a trailing \\, starts a new line.",
        "Ctrl-C cancels a running turn (what streamed is kept) or clears the line.",
        "Ctrl-D on an empty line, /quit, or Ctrl-C twice exits.",
        "/ at the line start and @ open a menu of commands and files; Tab takes its candidates in turn, Esc closes it.",
        "Shift-Tab cycles the approval mode: ask, auto, read-only.",
        "A line starting with // is sent as a message that starts with /.",
    ] {
        lines.extend(labelled("", key, 2, columns));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_fits_the_terminal_with_each_description_wrapped_under_its_start() {
        for columns in [60, 80, 120] {
            for line in help(columns) {
                assert!(crate::render::wrap::width(&line) <= columns, "{columns}: {line:?}");
            }
        }
        let help = help(60);
        let model = help.iter().position(|l| l.starts_with("  /model [ALIAS]")).unwrap();
        assert!(help[model].contains(" show the model,"), "{help:#?}");
        let rest = &help[model + 1];
        assert!(
            rest.starts_with(&" ".repeat(29)) && !rest.trim().is_empty(),
            "{help:#?}"
        );
    }

    #[test]
    fn a_line_is_a_command_a_shell_line_or_a_message() {
        assert_eq!(classify("  /quit"), Input::Command("/quit"));
        assert_eq!(classify("! git status "), Input::Shell("git status"));
        assert_eq!(
            classify("//etc is empty"),
            Input::Message(Cow::Borrowed("/etc is empty"))
        );
        assert_eq!(classify("what next?"), Input::Message(Cow::Borrowed("what next?")));
    }

    #[test]
    fn parses_commands_with_arguments() {
        assert_eq!(parse("/model  sonnet "), Parsed::Command(Command::Model, "sonnet"));
        assert_eq!(
            parse("/compact keep the plan"),
            Parsed::Command(Command::Compact, "keep the plan")
        );
        assert_eq!(parse("/quit"), Parsed::Command(Command::Quit, ""));
    }

    #[test]
    fn each_command_is_its_row_of_the_table_and_parses_back() {
        for (i, spec) in COMMANDS.iter().enumerate() {
            assert_eq!(spec.command as usize, i, "{}", spec.name);
            assert_eq!(spec.command.spec().name, spec.name);
            assert_eq!(parse(spec.name), Parsed::Command(spec.command, ""));
            assert!(spec.name.starts_with('/') && !spec.help.is_empty(), "{}", spec.name);
        }
        let help = help(200);
        assert!(help
            .iter()
            .any(|l| l.contains("/resume [ID|--all]") && l.contains("switch to another session")));
    }

    #[test]
    fn unknown_commands_get_close_matches() {
        match parse("/modle x") {
            Parsed::Unknown(name, close) => {
                assert_eq!(name, "/modle");
                assert!(close.contains(&"/model"), "{close:?}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(suggestions("/sess"), vec!["/sessions"]);
        assert_eq!(suggestions("/zzzzzz"), Vec::<&str>::new());
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("/quit", "/quti"), 2);
    }
}
