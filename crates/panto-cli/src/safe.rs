//! Neutralising untrusted text before it reaches a terminal.
//!
//! Model output, tool output, tool names and arguments, provider error bodies and session files
//! are untrusted. Written to a terminal as they are, their control characters would drive it:
//! `ESC[2K ESC[1A` erases and redraws lines (an approval question could show a harmless command
//! while another one runs), OSC 0 sets the window title, OSC 52 writes the clipboard, a lone CR
//! overwrites the line. So every such string passes through [`neutralise`] (or its streaming form
//! [`Neutraliser`]) whenever the stream it goes to is a terminal: control characters are shown
//! visibly (`^[` for ESC, `<U+009B>` for a C1 control) and never emitted. Written to a pipe or a
//! file, the same text stays the model's bytes verbatim: it is data there.
//!
//! What is neutralised, and why:
//! - C0 controls other than line feed and tab, and DEL: caret notation (`^[`, `^G`, `^?`).
//! - CR: a CR before a line feed is dropped (the line feed alone ends the line the same way); a
//!   lone CR would move the cursor back over the line, so it is shown as `^M`.
//! - C1 controls (U+0080..U+009F, which reach the terminal as the UTF-8 pairs C2 80..C2 9F; some
//!   terminals take U+009B as CSI): `<U+009B>`.
//! - Bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069): a terminal that
//!   implements bidi would reorder what follows ("Trojan Source"). Cheap to show, so shown.
//!
//! Zero-width and other invisible characters are left alone in prose (U+200D joins emoji, U+200C
//! is part of some scripts); [`exact`] shows them too, for approval questions, where the user must
//! see every character that will run.

use std::borrow::Cow;
use std::fmt::Write as _;

/// How one character is shown on a terminal.
enum Shown {
    /// As itself.
    Itself,
    /// In caret notation: `^` and this character.
    Caret(char),
    /// As `<U+XXXX>`.
    Code,
}

/// The rule for prose: controls and bidi overrides are shown, everything else is itself. CR is
/// decided by the caller, which knows whether a line feed follows.
fn prose(c: char) -> Shown {
    match c {
        '\n' | '\t' => Shown::Itself,
        '\u{0}'..='\u{1f}' => Shown::Caret(char::from(c as u8 + 0x40)),
        '\u{7f}' => Shown::Caret('?'),
        '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => Shown::Code,
        _ => Shown::Itself,
    }
}

/// Whether `c` is invisible or looks like a plain space without being one: non-ASCII spaces,
/// zero-width and format characters, variation selectors, tag characters. [`exact`] shows them.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{a0}' | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{1680}'
        | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}' | '\u{2000}'..='\u{200f}'
        | '\u{2028}'..='\u{202f}' | '\u{205f}'..='\u{206f}' | '\u{3000}' | '\u{3164}'
        | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}' | '\u{fff9}'..='\u{fffb}'
        | '\u{e0000}'..='\u{e007f}' | '\u{e0100}'..='\u{e01ef}')
}

/// Whether `text` holds anything [`neutralise`] changes.
fn needs_work(text: &str) -> bool {
    text.chars().any(|c| c == '\r' || !matches!(prose(c), Shown::Itself))
}

fn push_shown(out: &mut String, c: char, shown: Shown) {
    match shown {
        Shown::Itself => out.push(c),
        Shown::Caret(k) => {
            out.push('^');
            out.push(k);
        }
        Shown::Code => {
            let _ = write!(out, "<U+{:04X}>", u32::from(c));
        }
    }
}

/// `text` made safe for a terminal (see the module documentation). Borrows when nothing needed
/// changing, which is the common case.
pub fn neutralise(text: &str) -> Cow<'_, str> {
    if !needs_work(text) {
        return Cow::Borrowed(text);
    }
    let mut n = Neutraliser::default();
    let mut out = n.push(text);
    out.push_str(&n.finish());
    Cow::Owned(out)
}

/// [`neutralise`] for text that arrives in pieces (streamed deltas): a CR at the end of one piece
/// is held until the next shows whether a line feed follows it.
#[derive(Debug, Default)]
pub struct Neutraliser {
    pending_cr: bool,
}

impl Neutraliser {
    /// The safe form of the next piece.
    pub fn push(&mut self, piece: &str) -> String {
        let mut out = String::with_capacity(piece.len() + 2);
        let mut chars = piece.chars().peekable();
        if std::mem::take(&mut self.pending_cr) && chars.peek() != Some(&'\n') {
            out.push_str("^M");
        }
        while let Some(c) = chars.next() {
            if c == '\r' {
                match chars.peek() {
                    Some('\n') => {}
                    Some(_) => out.push_str("^M"),
                    None => self.pending_cr = true,
                }
                continue;
            }
            push_shown(&mut out, c, prose(c));
        }
        out
    }

    /// What is still held back: a final lone CR.
    pub fn finish(&mut self) -> String {
        if std::mem::take(&mut self.pending_cr) {
            "^M".to_owned()
        } else {
            String::new()
        }
    }
}

/// A run of spaces longer than this, inside a line, is shown by its length.
const LONGEST_SHOWN_SPACE_RUN: usize = 8;

/// `text` with every character visible, for an approval question: what [`neutralise`] does,
/// plus every CR (`^M`, bash takes it as part of a word), tabs, invisible characters, trailing
/// spaces, long runs of spaces and of empty lines shown as marks such as `⟨300 spaces⟩`, so no
/// padding can push part of a command out of sight. `mark` styles a mark (reverse video on a
/// colour terminal); the brackets of a mark are themselves shown as codes where they occur in
/// `text`, so a mark cannot be faked.
pub fn exact(text: &str, mark: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let lines: Vec<&str> = text.split('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        if i > 0 {
            out.push('\n');
        }
        // A run of more than one empty line (not counting the text's own final line end).
        let run = lines[i..].iter().take_while(|l| l.is_empty()).count();
        let at_end = i + run == lines.len();
        let empties = if at_end { run.saturating_sub(1) } else { run };
        if empties > 1 {
            out.push_str(&mark(&format!("⟨{empties} empty lines⟩")));
            i += empties;
            if at_end {
                i = lines.len();
            }
            continue;
        }
        exact_line(&mut out, lines[i], &mark);
        i += 1;
    }
    out
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// One line of [`exact`].
fn exact_line(out: &mut String, line: &str, mark: &impl Fn(&str) -> String) {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == ' ' || c == '\t' {
            let run = chars[i..].iter().take_while(|&&x| x == c).count();
            let trailing = i + run == chars.len();
            if c == '\t' {
                out.push_str(&mark(&format!("⟨{}⟩", plural(run, "tab", "tabs"))));
            } else if trailing || run > LONGEST_SHOWN_SPACE_RUN {
                out.push_str(&mark(&format!("⟨{}⟩", plural(run, "space", "spaces"))));
            } else {
                out.extend(std::iter::repeat_n(' ', run));
            }
            i += run;
            continue;
        }
        let shown = match c {
            '\r' => Shown::Caret('M'),
            '⟨' | '⟩' => Shown::Code,
            c if is_invisible(c) => Shown::Code,
            c => prose(c),
        };
        match shown {
            Shown::Itself => out.push(c),
            other => {
                let mut s = String::new();
                push_shown(&mut s, c, other);
                out.push_str(&mark(&s));
            }
        }
        i += 1;
    }
}

/// A line of JSON made safe for a terminal without changing its meaning: C1 controls, DEL and bidi
/// overrides inside strings become `\uXXXX` escapes (serde_json already escapes C0 controls).
/// Outside strings valid JSON holds none of them, so the whole line can be scanned.
pub fn json_for_terminal(json: &str) -> Cow<'_, str> {
    if !json.chars().any(|c| !matches!(prose(c), Shown::Itself)) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        match prose(c) {
            Shown::Itself => out.push(c),
            _ => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

/// `text` for a stream: neutralised when the stream is a terminal, verbatim when it is data.
pub fn for_stream(text: &str, terminal: bool) -> Cow<'_, str> {
    if terminal {
        neutralise(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// Writes `panto: LINE` to stderr, neutralised when stderr is a terminal: the one way a message
/// that may quote untrusted text (a provider's error body, a session file) leaves on stderr.
pub fn eprint_line(line: &str) {
    use std::io::{IsTerminal, Write};
    let err = std::io::stderr();
    let terminal = err.is_terminal();
    // One write, so a reader never sees half a message.
    let message = format!("panto: {}\n", for_stream(line, terminal));
    let _ = err.lock().write_all(message.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_and_never_emitted() {
        let shown = neutralise("a\x1b[2K\x1b[1Ab\x07c\x7fd\u{9b}31me\tf\n");
        assert_eq!(shown, "a^[[2K^[[1Ab^Gc^?d<U+009B>31me\tf\n");
        assert!(!shown.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
        assert_eq!(neutralise("\x1b]0;pwned\x07"), "^[]0;pwned^G");
        assert_eq!(neutralise("evil\u{202e}txt"), "evil<U+202E>txt");
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(neutralise("héllo 👋\n\tworld"), Cow::Borrowed(_)));
        // A zero-width joiner is part of emoji: prose keeps it.
        assert!(matches!(neutralise("👩\u{200d}💻"), Cow::Borrowed(_)));
    }

    #[test]
    fn crlf_is_a_line_end_and_a_lone_cr_is_shown() {
        assert_eq!(neutralise("one\r\ntwo"), "one\ntwo");
        assert_eq!(neutralise("safe\rEVIL"), "safe^MEVIL");
        assert_eq!(neutralise("end\r"), "end^M");
    }

    #[test]
    fn a_cr_split_across_pieces_waits_for_the_next_one() {
        let mut n = Neutraliser::default();
        assert_eq!(n.push("one\r"), "one");
        assert_eq!(n.push("\ntwo\r"), "\ntwo");
        assert_eq!(n.push("x"), "^Mx");
        assert_eq!(n.push("\r"), "");
        assert_eq!(n.finish(), "^M");
        assert_eq!(n.finish(), "");
    }

    fn bracket(s: &str) -> String {
        format!("[{s}]")
    }

    #[test]
    fn exact_shows_padding_and_invisible_characters() {
        let padded = format!("ls -la{}; rm -rf ~", " ".repeat(300));
        assert_eq!(exact(&padded, bracket), "ls -la[⟨300 spaces⟩]; rm -rf ~");
        assert_eq!(exact("a  b", bracket), "a  b");
        assert_eq!(exact("ls ", bracket), "ls[⟨1 space⟩]");
        assert_eq!(exact("a\t\tb", bracket), "a[⟨2 tabs⟩]b");
        assert_eq!(exact("a\u{200b}b\u{a0}c", bracket), "a[<U+200B>]b[<U+00A0>]c");
        assert_eq!(exact("rm\r\n", bracket), "rm[^M]\n");
        assert_eq!(exact("x\x1b[1A", bracket), "x[^[][1A");
        assert_eq!(exact("fake ⟨3 spaces⟩", bracket), "fake [<U+27E8>]3 spaces[<U+27E9>]");
    }

    #[test]
    fn exact_counts_runs_of_empty_lines() {
        assert_eq!(exact("a\n\nb", bracket), "a\n\nb");
        let hidden = format!("rm -rf ~{}ls", "\n".repeat(60));
        assert_eq!(exact(&hidden, bracket), "rm -rf ~\n[⟨59 empty lines⟩]\nls");
        assert_eq!(exact("ls\n", bracket), "ls\n");
        assert_eq!(exact("ls\n\n\n\n", bracket), "ls\n[⟨3 empty lines⟩]");
    }

    #[test]
    fn json_keeps_its_meaning() {
        let line = serde_json::json!({"t": "a\u{9b}b\u{202e}\x1b"}).to_string();
        let safe = json_for_terminal(&line);
        assert_eq!(safe, r#"{"t":"a\u009bb\u202e\u001b"}"#);
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["t"], "a\u{9b}b\u{202e}\x1b");
    }
}
