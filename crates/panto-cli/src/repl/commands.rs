//! Slash commands: the table, parsing, and suggestions for a mistyped name.

/// One slash command.
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
    /// The name, with its slash.
    pub name: &'static str,
    /// Its arguments, for help.
    pub args: &'static str,
    /// What it does.
    pub help: &'static str,
}

/// Every slash command, in help order.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "/help",
        args: "",
        help: "show commands and keys",
    },
    CommandSpec {
        name: "/model",
        args: "[ALIAS]",
        help: "show the model, or switch to an alias or a model name of the current provider",
    },
    CommandSpec {
        name: "/models",
        args: "",
        help: "list configured model aliases",
    },
    CommandSpec {
        name: "/compact",
        args: "[INSTRUCTIONS]",
        help: "summarise older messages to free context (optionally saying what to keep)",
    },
    CommandSpec {
        name: "/image",
        args: "[FILE...]",
        help: "attach images to your next prompt (dropping an image file onto the terminal does too)",
    },
    CommandSpec {
        name: "/sessions",
        args: "",
        help: "list recent sessions",
    },
    CommandSpec {
        name: "/resume",
        args: "ID",
        help: "switch to another session (id or unique prefix)",
    },
    CommandSpec {
        name: "/new",
        args: "",
        help: "start a new session with the current model",
    },
    CommandSpec {
        name: "/system",
        args: "[TEXT]",
        help: "show the system prompt, or replace it",
    },
    CommandSpec {
        name: "/tools",
        args: "",
        help: "list the tools and their approval",
    },
    CommandSpec {
        name: "/cost",
        args: "",
        help: "tokens and cost so far, and how full the context is",
    },
    CommandSpec {
        name: "/quit",
        args: "",
        help: "exit (Ctrl-D does too)",
    },
];

/// A line that starts with `/`.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A known command and its (trimmed) argument text.
    Command(&'static str, &'a str),
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
    match COMMANDS.iter().find(|c| c.name == name) {
        Some(c) => Parsed::Command(c.name, args),
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
fn distance(a: &str, b: &str) -> usize {
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

/// The `/help` text.
pub fn help() -> Vec<String> {
    let mut lines: Vec<String> = COMMANDS
        .iter()
        .map(|c| format!("  {:<26} {}", format!("{} {}", c.name, c.args).trim_end(), c.help))
        .collect();
    lines.push(String::new());
    lines.push("  Enter sends. Alt-Enter, or a trailing \\, starts a new line.".into());
    lines.push("  Ctrl-C cancels a running turn (what streamed is kept) or clears the line.".into());
    lines.push("  Ctrl-D on an empty line, or /quit, exits. Tab completes commands and aliases.".into());
    lines.push("  A line starting with // is sent as a message that starts with /.".into());
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_with_arguments() {
        assert_eq!(parse("/model  sonnet "), Parsed::Command("/model", "sonnet"));
        assert_eq!(
            parse("/compact keep the plan"),
            Parsed::Command("/compact", "keep the plan")
        );
        assert_eq!(parse("/quit"), Parsed::Command("/quit", ""));
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
