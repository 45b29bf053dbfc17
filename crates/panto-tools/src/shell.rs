//! Splits a `bash` command line into its simple commands, conservatively, for the rules.
//!
//! A `bash(GLOB)` allow rule lets a command line run only when every simple command in it
//! matches, so the line must be split exactly where bash splits it: at `;`, `&`, `&&`, `||`,
//! `|`, `|&` and newlines outside quotes, with quotes (`'…'`, `"…"`, `$'…'`), backslash escapes,
//! line continuations and comments read as bash reads them. Anything whose effect the splitter
//! cannot see from the text makes the line *opaque*, and an opaque line is matched by no allow
//! rule: command substitution (`$(…)`, backticks, also inside double quotes), process
//! substitution (`<(…)`, `>(…)`), subshells and groups, arithmetic (`$((…))`, `$[…]`),
//! parameter expansions with operators (`${x:-…}`; a plain `$x` or `${x}` is fine), here-docs
//! and here-strings, output redirections to anything but `/dev/null` (`>`, `>>`, `>|`, `&>`,
//! `&>>`; fd duplications like `2>&1` are fine, so is `<` from a file), `<>`, variable
//! assignments (`LD_PRELOAD=x git status`, `X=1`), shell keywords (`if`, `for`, `case`, `!`,
//! `time`, `{`, …), an unclosed quote and an unmatched `)`.
//!
//! The commands found inside substitutions, subshells and groups are still listed (best effort),
//! so a deny rule or a hook can match them.
//!
//! Normalisation: a simple command's [`SimpleCommand::text`] is its words as written (quotes
//! and escapes kept, line continuations removed), joined by one space, then its redirections as
//! written with the operator and the target joined (`2>&1`, `>/dev/null`); leading keywords
//! (`if`, `then`, `!`, `time`, `{`, …) are left out. [`SimpleCommand::plain`] is the same with
//! quotes and escapes removed and leading assignments left out: `\rm -rf 'x'` is `rm -rf x`.

/// How deep substitutions and subshells are followed; deeper text makes the line opaque.
const MAX_DEPTH: usize = 32;

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Its words as written, joined by one space, then its redirections (see the module docs).
    pub text: String,
    /// Its words with quotes and escapes removed and leading assignments left out.
    pub plain: String,
}

/// A command line split into simple commands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// The simple commands, in order, those inside substitutions and subshells included.
    pub commands: Vec<SimpleCommand>,
    /// Why the line cannot be reasoned about command by command: the first such construct.
    pub opaque: Option<String>,
}

impl Split {
    /// Whether the line is only simple commands joined by the list operators (not opaque).
    pub fn is_plain(&self) -> bool {
        self.opaque.is_none()
    }
}

/// Splits `line` into its simple commands (see the module docs).
pub fn split(line: &str) -> Split {
    let mut parser = Parser {
        chars: line.chars().collect(),
        pos: 0,
        split: Split::default(),
        depth: 0,
    };
    parser.list(false);
    parser.split
}

/// Words at the start of a command that bash reads as keywords. The first group is left out of
/// the command's text (what follows is the command); every one makes the line opaque.
const PREFIX_KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "time", "{", "}", "esac",
];
const OTHER_KEYWORDS: &[&str] = &["for", "select", "case", "function", "coproc", "[[", "]]", "in"];

/// A word: as written and with quotes removed.
#[derive(Debug, Default)]
struct Word {
    written: String,
    plain: String,
}

/// The simple command being read.
#[derive(Debug, Default)]
struct Command {
    /// Whether a word that is not a keyword or an assignment was read (the command's name).
    named: bool,
    words: Vec<Word>,
    assignments: usize,
    redirections: Vec<Word>,
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    split: Split,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn opaque(&mut self, why: &str) {
        if self.split.opaque.is_none() {
            self.split.opaque = Some(why.to_owned());
        }
    }

    fn finish(&mut self, command: &mut Command) {
        let command = std::mem::take(command);
        if command.words.is_empty() && command.redirections.is_empty() {
            return;
        }
        let text: Vec<&str> = command
            .words
            .iter()
            .chain(&command.redirections)
            .map(|w| w.written.as_str())
            .collect();
        let plain: Vec<&str> = command
            .words
            .iter()
            .skip(command.assignments)
            .chain(&command.redirections)
            .map(|w| w.plain.as_str())
            .collect();
        let (text, plain) = (text.join(" "), plain.join(" "));
        self.split.commands.push(SimpleCommand { text, plain });
    }

    /// Skips blanks and line continuations.
    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t') => self.pos += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.pos += 2,
                _ => return,
            }
        }
    }

    /// Reads a list of commands up to the end, or (`nested`) up to its closing `)`.
    fn list(&mut self, nested: bool) {
        if self.depth >= MAX_DEPTH {
            self.opaque("substitutions or subshells nested too deep");
            self.pos = self.chars.len();
            return;
        }
        self.depth += 1;
        let mut command = Command::default();
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if nested {
                    self.opaque("an unclosed `(`");
                }
                break;
            };
            match c {
                ')' => {
                    self.pos += 1;
                    if nested {
                        break;
                    }
                    self.opaque("an unmatched `)`");
                    self.finish(&mut command);
                }
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '\n' => {
                    self.pos += 1;
                    self.finish(&mut command);
                }
                ';' => {
                    self.pos += 1;
                    if matches!(self.peek(), Some(';' | '&')) {
                        self.opaque("`case` syntax (`;;`, `;&`)");
                        self.pos += 1;
                    }
                    self.finish(&mut command);
                }
                '&' if matches!(self.peek_at(1), Some('>')) => self.redirection(&mut command, String::new()),
                '&' | '|' => {
                    self.pos += 1;
                    if (c == '&' && self.peek() == Some('&')) || (c == '|' && matches!(self.peek(), Some('|' | '&'))) {
                        self.pos += 1;
                    }
                    self.finish(&mut command);
                }
                '(' => {
                    self.opaque(if command.words.is_empty() {
                        "a subshell `( … )`"
                    } else {
                        "a `(` inside a command (a function definition or a pattern)"
                    });
                    self.pos += 1;
                    self.finish(&mut command);
                    self.list(true);
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    self.opaque("a process substitution `<(…)` or `>(…)`");
                    self.pos += 2;
                    let outer = std::mem::take(&mut command);
                    self.list(true);
                    command = outer;
                    command.words.push(Word {
                        written: format!("{c}(…)"),
                        plain: format!("{c}(…)"),
                    });
                }
                '<' | '>' => self.redirection(&mut command, String::new()),
                _ => {
                    let word = self.word();
                    let fd = !word.written.is_empty() && word.written.chars().all(|c| c.is_ascii_digit());
                    if fd && matches!(self.peek(), Some('<' | '>')) && self.peek_at(1) != Some('(') {
                        self.redirection(&mut command, word.written);
                    } else {
                        self.add_word(&mut command, word);
                    }
                }
            }
        }
        self.finish(&mut command);
        self.depth -= 1;
    }

    /// Adds a word to the command: a keyword or an assignment at its start is noted.
    fn add_word(&mut self, command: &mut Command, word: Word) {
        if !command.named {
            if PREFIX_KEYWORDS.contains(&word.written.as_str()) {
                self.opaque(&format!("the shell keyword `{}`", word.written));
                return;
            }
            if OTHER_KEYWORDS.contains(&word.written.as_str()) {
                self.opaque(&format!("the shell keyword `{}`", word.written));
            } else if is_assignment(&word.written) {
                self.opaque("a variable assignment");
                command.assignments += 1;
                command.words.push(word);
                return;
            }
            command.named = true;
        }
        command.words.push(word);
    }

    /// Reads a redirection at `<`, `>` or `&>`, `fd` the number written before it.
    fn redirection(&mut self, command: &mut Command, fd: String) {
        let mut op = fd.clone();
        let start = self.pos;
        while let Some(c) = self.peek() {
            let extends = match (self.pos - start, c) {
                (0, '<' | '>' | '&') => true,
                (_, '<' | '>' | '&' | '|' | '-') => {
                    // `<<<`, `<<-`, `>>`, `>&`, `<&`, `&>>`, `>|`, `<>`, but not a `|` pipe after
                    // a complete operator such as `>|`'s.
                    let so_far: String = self.chars[start..self.pos].iter().collect();
                    matches!(
                        (so_far.as_str(), c),
                        ("<", '<' | '&' | '>') | ("<<", '<' | '-') | (">", '>' | '&' | '|') | ("&", '>') | ("&>", '>')
                    )
                }
                _ => false,
            };
            if !extends {
                break;
            }
            self.pos += 1;
        }
        let operator: String = self.chars[start..self.pos].iter().collect();
        op.push_str(&operator);
        self.skip_blanks();
        let target = match self.peek() {
            None | Some('\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>') => {
                self.opaque("a redirection without a target");
                Word::default()
            }
            Some(_) => self.word(),
        };
        let dup_target = !target.plain.is_empty()
            && target.plain.trim_end_matches('-').chars().all(|c| c.is_ascii_digit())
            && target.written == target.plain;
        let null = target.plain == "/dev/null";
        match operator.as_str() {
            "<" => {}
            "<<" | "<<-" => self.opaque("a here-document"),
            "<<<" => self.opaque("a here-string"),
            "<>" => self.opaque("a `<>` redirection (opens a file for writing)"),
            "<&" if dup_target => {}
            ">&" if dup_target || null => {}
            ">" | ">>" | ">|" | "&>" | "&>>" if null => {}
            _ => self.opaque("output redirected to a file"),
        }
        command.redirections.push(Word {
            written: format!("{op}{}", target.written),
            plain: format!("{op}{}", target.plain),
        });
    }

    /// Reads one word from the current position up to a blank or an operator.
    fn word(&mut self) -> Word {
        let mut word = Word::default();
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(next) => {
                            self.pos += 1;
                            word.written.push('\\');
                            word.written.push(next);
                            word.plain.push(next);
                        }
                        None => {
                            word.written.push('\\');
                            word.plain.push('\\');
                        }
                    }
                }
                '\'' => {
                    self.pos += 1;
                    word.written.push('\'');
                    self.single_quoted(&mut word, false);
                }
                '"' => {
                    self.pos += 1;
                    word.written.push('"');
                    self.double_quoted(&mut word);
                }
                '$' if self.peek_at(1) == Some('\'') => {
                    self.pos += 2;
                    word.written.push_str("$'");
                    self.single_quoted(&mut word, true);
                }
                '$' if self.peek_at(1) == Some('"') => {
                    self.pos += 2;
                    word.written.push_str("$\"");
                    self.double_quoted(&mut word);
                }
                '$' => self.dollar(&mut word),
                '`' => self.backticks(&mut word),
                _ => {
                    self.pos += 1;
                    word.written.push(c);
                    word.plain.push(c);
                }
            }
        }
        word
    }

    /// The rest of a `'…'` (or, `ansi`, a `$'…'` where `\` escapes any character) after its
    /// opening quote.
    fn single_quoted(&mut self, word: &mut Word, ansi: bool) {
        loop {
            let Some(c) = self.peek() else {
                self.opaque("an unclosed quote");
                return;
            };
            self.pos += 1;
            word.written.push(c);
            match c {
                '\'' => return,
                '\\' if ansi => {
                    if let Some(next) = self.peek() {
                        self.pos += 1;
                        word.written.push(next);
                        word.plain.push('\\');
                        word.plain.push(next);
                    }
                }
                _ => word.plain.push(c),
            }
        }
    }

    /// The rest of a `"…"` after its opening quote: `\` escapes `$`, `` ` ``, `"`, `\` and a
    /// newline; `$` and backticks expand.
    fn double_quoted(&mut self, word: &mut Word) {
        loop {
            let Some(c) = self.peek() else {
                self.opaque("an unclosed quote");
                return;
            };
            match c {
                '"' => {
                    self.pos += 1;
                    word.written.push('"');
                    return;
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(next @ ('$' | '`' | '"' | '\\')) => {
                            self.pos += 1;
                            word.written.push('\\');
                            word.written.push(next);
                            word.plain.push(next);
                        }
                        _ => {
                            word.written.push('\\');
                            word.plain.push('\\');
                        }
                    }
                }
                '$' => self.dollar(word),
                '`' => self.backticks(word),
                _ => {
                    self.pos += 1;
                    word.written.push(c);
                    word.plain.push(c);
                }
            }
        }
    }

    /// A `$` in a word: a substitution (opaque, its commands listed), an expansion, or a `$`.
    fn dollar(&mut self, word: &mut Word) {
        self.pos += 1;
        match self.peek() {
            Some('(') => {
                self.pos += 1;
                if self.peek() == Some('(') {
                    self.opaque("an arithmetic expansion `$((…))`");
                } else {
                    self.opaque("a command substitution `$(…)`");
                }
                let start = self.pos;
                self.list(true);
                let inner: String = self.chars[start..self.pos].iter().collect();
                word.written.push_str("$(");
                word.written.push_str(&inner);
                word.plain.push_str("$(");
                word.plain.push_str(&inner);
            }
            Some('[') => {
                self.opaque("an arithmetic expansion `$[…]`");
                word.written.push('$');
                word.plain.push('$');
            }
            Some('{') => {
                let start = self.pos;
                let mut depth = 0usize;
                while let Some(c) = self.peek() {
                    self.pos += 1;
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let inner: String = self.chars[start..self.pos].iter().collect();
                let name = inner.trim_start_matches('{').trim_end_matches('}');
                if depth != 0 {
                    self.opaque("an unclosed `${`");
                } else if !is_parameter(name) {
                    self.opaque("a parameter expansion with an operator `${…}`");
                }
                word.written.push('$');
                word.written.push_str(&inner);
                word.plain.push('$');
                word.plain.push_str(&inner);
            }
            _ => {
                word.written.push('$');
                word.plain.push('$');
            }
        }
    }

    /// A backtick substitution: opaque, its text split for the commands in it.
    fn backticks(&mut self, word: &mut Word) {
        self.opaque("a command substitution in backticks");
        self.pos += 1;
        let mut inner = String::new();
        loop {
            let Some(c) = self.peek() else {
                self.opaque("an unclosed backtick");
                break;
            };
            self.pos += 1;
            match c {
                '`' => break,
                '\\' if matches!(self.peek(), Some('`' | '\\' | '$')) => {
                    inner.push(self.peek().unwrap_or('\\'));
                    self.pos += 1;
                }
                _ => inner.push(c),
            }
        }
        if self.depth >= MAX_DEPTH {
            self.opaque("substitutions or subshells nested too deep");
        } else {
            let mut nested = Parser {
                chars: inner.chars().collect(),
                pos: 0,
                split: Split::default(),
                depth: self.depth + 1,
            };
            nested.list(false);
            self.split.commands.extend(nested.split.commands);
        }
        word.written.push('`');
        word.written.push_str(&inner);
        word.written.push('`');
        word.plain.push('`');
        word.plain.push_str(&inner);
        word.plain.push('`');
    }
}

/// Whether `word` (as written) is a variable assignment: `NAME=…`, `NAME+=…`, `NAME[…]=…`.
fn is_assignment(word: &str) -> bool {
    let Some(eq) = word.find('=') else {
        return false;
    };
    let name = word[..eq].trim_end_matches('+');
    let name = match name.find('[') {
        Some(open) if name.ends_with(']') => &name[..open],
        _ => name,
    };
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `${name}` is a plain parameter: a variable name, a positional number or a special
/// parameter.
fn is_parameter(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => chars.all(|c| c.is_ascii_alphanumeric() || c == '_'),
        Some(c) if c.is_ascii_digit() => chars.all(|c| c.is_ascii_digit()),
        Some('@' | '*' | '#' | '?' | '$' | '!' | '-') => chars.next().is_none(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts of the simple commands of a line that must split plainly.
    fn plain(line: &str) -> Vec<String> {
        let s = split(line);
        assert!(s.is_plain(), "{line:?} is opaque: {:?}", s.opaque);
        s.commands.into_iter().map(|c| c.text).collect()
    }

    /// Why a line is opaque, and the plain texts of the commands found in it.
    fn opaque(line: &str) -> (String, Vec<String>) {
        let s = split(line);
        let why = s
            .opaque
            .unwrap_or_else(|| panic!("{line:?} was not opaque: {:?}", s.commands));
        (why, s.commands.into_iter().map(|c| c.plain).collect())
    }

    #[test]
    fn list_operators_split_commands() {
        assert_eq!(plain("git status"), ["git status"]);
        assert_eq!(plain("  git   status\t--short  "), ["git status --short"]);
        assert_eq!(plain("git status; echo PWN"), ["git status", "echo PWN"]);
        assert_eq!(plain("git status\necho PWN"), ["git status", "echo PWN"]);
        for op in ["&", "&&", "||", "|", "|&", ";"] {
            assert_eq!(plain(&format!("a x{op}b y")), ["a x", "b y"], "{op}");
            assert_eq!(plain(&format!("a x {op} b y")), ["a x", "b y"], "{op}");
        }
        assert_eq!(plain("git status;"), ["git status"]);
        assert_eq!(plain("a & b && c || d | e |& f"), ["a", "b", "c", "d", "e", "f"]);
    }

    #[test]
    fn quotes_and_escapes_keep_operators_inside_words() {
        assert_eq!(plain("git status ';' x"), ["git status ';' x"]);
        assert_eq!(plain("git status \"a; b && c\""), ["git status \"a; b && c\""]);
        assert_eq!(plain(r"git status \; rm x"), [r"git status \; rm x"]);
        assert_eq!(plain("git status 'a\nb'"), ["git status 'a\nb'"]);
        assert_eq!(plain("git status \"a\nb\""), ["git status \"a\nb\""]);
        assert_eq!(plain(r#"echo "a \" ; b""#), [r#"echo "a \" ; b""#]);
        assert_eq!(plain(r"echo $'it\'s; x'"), [r"echo $'it\'s; x'"]);
        assert_eq!(plain(r"echo 'a\'; b"), [r"echo 'a\'", "b"]);
        assert_eq!(plain("echo a#b # c; d\ne"), ["echo a#b", "e"]);
        assert_eq!(plain("# only a comment"), Vec::<String>::new());
        // A line continuation joins lines; inside single quotes it is kept.
        assert_eq!(plain("git \\\nstatus"), ["git status"]);
        assert_eq!(plain("git sta\\\ntus"), ["git status"]);
        assert_eq!(plain("echo \"a\\\nb\""), ["echo \"ab\""]);
        assert_eq!(plain("echo 'a\\\nb'"), ["echo 'a\\\nb'"]);
        // Expansions without code are plain.
        assert_eq!(
            plain("echo $HOME ${HOME} $1 ${10} $? ~/x *.rs {a,b}"),
            ["echo $HOME ${HOME} $1 ${10} $? ~/x *.rs {a,b}"]
        );
        let s = split(r#"\rm -rf 'x y' "z""#);
        assert_eq!(s.commands[0].plain, "rm -rf x y z");
    }

    #[test]
    fn substitutions_are_opaque_and_their_commands_listed() {
        let (why, cmds) = opaque("git status \"$(rm x)\"");
        assert!(why.contains("command substitution"), "{why}");
        assert!(cmds.contains(&"rm x".to_owned()), "{cmds:?}");
        let (why, cmds) = opaque("git status `rm x`");
        assert!(why.contains("backticks"), "{why}");
        assert!(cmds.contains(&"rm x".to_owned()), "{cmds:?}");
        let (_, cmds) = opaque("echo \"`rm \\`y\\``\"");
        assert!(cmds.iter().any(|c| c.starts_with("rm")), "{cmds:?}");
        let (why, cmds) = opaque("diff <(rm a) >(rm b)");
        assert!(why.contains("process substitution"), "{why}");
        assert!(
            cmds.contains(&"rm a".to_owned()) && cmds.contains(&"rm b".to_owned()),
            "{cmds:?}"
        );
        let (why, cmds) = opaque("git status; (rm x)");
        assert!(why.contains("subshell"), "{why}");
        assert_eq!(cmds, ["git status", "rm x"]);
        let (why, cmds) = opaque("{ rm x; }");
        assert!(why.contains('{'), "{why}");
        assert_eq!(cmds, ["rm x"]);
        assert!(opaque("echo $((1+2))").0.contains("arithmetic"));
        assert!(opaque("echo $[1+2]").0.contains("arithmetic"));
        assert!(opaque("echo ${x:-$(rm y)}").0.contains("parameter expansion"));
        assert!(opaque("echo ${x:=y}").0.contains("parameter expansion"));
        assert!(opaque("echo $(echo $(echo $(rm z)))").1.contains(&"rm z".to_owned()));
        assert!(opaque("f() { rm x; }").0.contains('('));
        assert!(opaque("git status )").0.contains("unmatched"));
        assert_eq!(opaque("echo $(rm x").1, ["rm x", "echo $(rm x"]);
    }

    #[test]
    fn redirections_to_files_are_opaque_but_dev_null_and_fd_duplications_are_not() {
        assert_eq!(plain("git status 2>&1"), ["git status 2>&1"]);
        assert_eq!(plain("git status >/dev/null 2>&1"), ["git status >/dev/null 2>&1"]);
        assert_eq!(plain("git status > /dev/null"), ["git status >/dev/null"]);
        assert_eq!(plain("2>/dev/null git status"), ["git status 2>/dev/null"]);
        assert_eq!(plain("git status &>/dev/null"), ["git status &>/dev/null"]);
        assert_eq!(plain("git status 2>&-"), ["git status 2>&-"]);
        assert_eq!(plain("wc -l < input.txt"), ["wc -l <input.txt"]);
        assert_eq!(plain("git status 2>&1 | head"), ["git status 2>&1", "head"]);
        for line in [
            "git status > ~/x",
            "git status >> x",
            "git status >| x",
            "git status &> x",
            "git status &>> x",
            "git status 2> x",
            "git status >& x",
            "git status>x",
            "git status 1>'/dev/null'x",
        ] {
            assert!(opaque(line).0.contains("output redirected"), "{line}");
        }
        assert!(opaque("git status <> x").0.contains("<>"));
        assert!(opaque("cat <<EOF\nrm x\nEOF").0.contains("here-document"));
        assert!(opaque("cat <<< 'x'").0.contains("here-string"));
        assert!(opaque("git status >").0.contains("without a target"));
        assert!(opaque("git status > $(rm x)").1.contains(&"rm x".to_owned()));
    }

    #[test]
    fn assignments_keywords_and_broken_quotes_are_opaque() {
        let (why, cmds) = opaque("LD_PRELOAD=/tmp/x.so git status");
        assert!(why.contains("assignment"), "{why}");
        assert_eq!(cmds, ["git status"]);
        assert_eq!(
            split("LD_PRELOAD=/tmp/x.so git status").commands[0].text,
            "LD_PRELOAD=/tmp/x.so git status"
        );
        assert!(opaque("X=1").0.contains("assignment"));
        assert!(opaque("a[1]+=2 git status").0.contains("assignment"));
        // An argument that looks like one is an argument.
        assert_eq!(plain("git status a=b"), ["git status a=b"]);
        let (why, cmds) = opaque("if true; then rm -rf x; fi");
        assert!(why.contains("`if`"), "{why}");
        assert_eq!(cmds, ["true", "rm -rf x"]);
        assert_eq!(opaque("! rm x").1, ["rm x"]);
        assert_eq!(opaque("time rm x").1, ["rm x"]);
        assert!(opaque("for f in *; do rm $f; done").1.contains(&"rm $f".to_owned()));
        assert!(opaque("case x in x) rm y;; esac").0.contains("case"));
        assert!(opaque("[[ -f x ]]").0.contains("[["));
        assert!(opaque("echo 'unclosed").0.contains("unclosed quote"));
        assert!(opaque("echo \"unclosed").0.contains("unclosed quote"));
        assert!(!split("echo `unclosed").is_plain());
        // A keyword later in a command is an argument.
        assert_eq!(plain("echo if then"), ["echo if then"]);
    }

    #[test]
    fn hostile_nesting_is_bounded() {
        // The first reason is the substitution; the depth bound keeps the stack small.
        let deep = "$(".repeat(100_000);
        assert!(opaque(&format!("echo {deep}")).0.contains("command substitution"));
        let deep = "(".repeat(100_000);
        assert!(opaque(&deep).0.contains("subshell"));
        let ticks = "`".repeat(100_001);
        assert!(!split(&ticks).is_plain());
        let ticks = "echo `echo \\`echo \\\\\\`rm x\\\\\\`\\``";
        assert!(!split(ticks).is_plain());
    }
}
