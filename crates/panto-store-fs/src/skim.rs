//! Skimming an entry line for the listing fields (`type`, `timestamp`, `activity`) without
//! parsing its message, which is most of the line.

use crate::format::{TailEntry, MESSAGE_TYPE};

/// The listing fields of an entry line, found without parsing its message: the line is walked
/// at its top level, values are skipped by structure (strings with `memchr`, at memory speed),
/// and only `type`, `timestamp` and `activity` are parsed.
///
/// The message is most of a line, often tens of kilobytes of tool output, and `list` needs none
/// of it. `None` whenever the line is anything but a plain message entry (a syntax error, a
/// duplicate field, another type): the caller then parses it in full, which gives the error its
/// usual wording. Unlike that full parse, this does not check the JSON grammar inside the values
/// it skips; `load` does.
pub(crate) fn skim_tail(line: &[u8]) -> Option<TailEntry> {
    let pos = skip_ws(line, 0);
    if line.get(pos) != Some(&b'{') {
        return None;
    }
    let fields = skim_fields(line, pos + 1)?;
    let kind: String = serde_json::from_slice(fields.kind?).ok()?;
    if kind != MESSAGE_TYPE {
        return None;
    }
    fields.into_tail(kind)
}

/// The listing fields of an entry line from its **last bytes** alone: `end` is the end of the
/// line (without its `\n`) and may start anywhere inside it.
///
/// The writer puts `timestamp` and `activity` last (see `format::EntryOut`), so the last
/// `,"timestamp":"` in the line starts them: in valid JSON those bytes can only be a key (a
/// quote inside a string is escaped), and no key inside `activity` is `timestamp`. From there the
/// remaining fields are walked as in [`skim_tail`] and must close the line. So a listing reads
/// the same few hundred bytes whether the message before them is 100 bytes or 100 KB.
///
/// Nothing before `timestamp` is seen, the line's `type` included: only message entries follow
/// the header of a version 1 file, and a line damaged there lists but fails when loaded. `None`
/// when the bytes do not end that way (a line from an older writer with another field order, a
/// damaged line): the caller then reads the whole line.
pub(crate) fn skim_tail_end(end: &[u8]) -> Option<TailEntry> {
    const KEY: &[u8] = b",\"timestamp\":\"";
    let at = memchr::memmem::rfind(end, KEY)?;
    let fields = skim_fields(end, at + 1)?;
    fields.into_tail(MESSAGE_TYPE.to_owned())
}

/// The raw values of the fields a listing needs.
#[derive(Default)]
struct Fields<'a> {
    kind: Option<&'a [u8]>,
    timestamp: Option<&'a [u8]>,
    activity: Option<&'a [u8]>,
}

impl Fields<'_> {
    fn into_tail(self, kind: String) -> Option<TailEntry> {
        Some(TailEntry {
            kind,
            timestamp: crate::timestamp::read_json(self.timestamp?).ok()?,
            activity: serde_json::from_slice(self.activity?).ok()?,
        })
    }
}

/// Walks `"key":value` pairs from `pos` (just after a `{` or a `,`) to the `}` that must end
/// `line`, keeping the values of `type`, `timestamp` and `activity`. `None` on anything
/// unexpected, a field seen twice included.
fn skim_fields(line: &[u8], mut pos: usize) -> Option<Fields<'_>> {
    let mut fields = Fields::default();
    loop {
        pos = skip_ws(line, pos);
        if line.get(pos) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(line, pos)?;
        let key = &line[pos + 1..key_end - 1];
        pos = skip_ws(line, key_end);
        if line.get(pos) != Some(&b':') {
            return None;
        }
        pos = skip_ws(line, pos + 1);
        let value_end = skip_value(line, pos)?;
        let value = &line[pos..value_end];
        let slot = match key {
            b"type" => Some(&mut fields.kind),
            b"timestamp" => Some(&mut fields.timestamp),
            b"activity" => Some(&mut fields.activity),
            _ => None,
        };
        if let Some(slot) = slot {
            if slot.replace(value).is_some() {
                return None;
            }
        }
        pos = skip_ws(line, value_end);
        match line.get(pos) {
            Some(b',') => pos += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    (skip_ws(line, pos + 1) == line.len()).then_some(fields)
}

fn skip_ws(line: &[u8], mut pos: usize) -> usize {
    while matches!(line.get(pos), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        pos += 1;
    }
    pos
}

/// The position after the string starting at `pos` (which holds its opening quote).
fn skip_string(line: &[u8], pos: usize) -> Option<usize> {
    // Search for quotes only: tool output is dense with escapes (every newline is one), and
    // stopping at each backslash would cost a search per line of output. A quote closes the
    // string unless an odd number of backslashes precedes it.
    let mut at = pos + 1;
    loop {
        at += memchr::memchr(b'"', line.get(at..)?)?;
        let backslashes = line[pos + 1..at].iter().rev().take_while(|&&b| b == b'\\').count();
        if backslashes % 2 == 0 {
            return Some(at + 1);
        }
        at += 1;
    }
}

/// The position after the JSON value starting at `pos`, found by structure alone.
fn skip_value(line: &[u8], pos: usize) -> Option<usize> {
    match *line.get(pos)? {
        b'"' => skip_string(line, pos),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = pos;
            loop {
                match *line.get(at)? {
                    b'"' => {
                        at = skip_string(line, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        _ => {
            let end = line[pos..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
                .map_or(line.len(), |n| pos + n);
            (end > pos).then_some(end)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::parse_tail;

    #[test]
    fn the_tail_skim_agrees_with_the_full_parse_and_declines_what_it_cannot_read() {
        let activity =
            r#"{"message_count":3,"last_prompt_at":null,"last_user_message":"a \"quoted\" }]{[ prompt","wire":null}"#;
        let message = r#"{"role":"user","content":[{"type":"text","text":"x \\\" } ] { [ , \u00e9 \n"}],"metadata":"{\"a\":[1,2]}"}"#;
        let good = format!(
            r#"{{"type":"message","id":"0a0b0c0d","parent_id":null,"timestamp":"2026-01-02T03:04:05Z","message":{message},"usage":{{"input_tokens":1}},"wire":null,"activity":{activity}}}"#
        );
        let skimmed = skim_tail(good.as_bytes()).expect("a plain entry is skimmed");
        let full = parse_tail(good.as_bytes(), "f").unwrap();
        assert_eq!(
            (skimmed.kind, skimmed.timestamp, skimmed.activity),
            (full.kind, full.timestamp, full.activity)
        );
        // Field order does not matter, and whitespace between tokens is allowed.
        let reordered = format!(
            r#" {{ "activity" : {activity} , "message":{message}, "timestamp":"2026-01-02T03:04:05Z","type":"message"}} "#
        );
        assert!(skim_tail(reordered.as_bytes()).is_some());
        // Anything unusual goes to the full parse.
        let declined = [
            good.replace(r#""type":"message""#, r#""type":"session""#),
            good.replace(r#""wire":null"#, r#""activity":{},"wire":null"#),
            good[..good.len() - 1].to_owned(),
            format!("{good}x"),
            good.replace(r#""usage":{"input_tokens":1}"#, r#""usage":{"input_tokens":1"#),
            "not json".to_owned(),
            String::new(),
        ];
        for line in declined {
            assert!(skim_tail(line.as_bytes()).is_none(), "{line}");
        }
    }

    #[test]
    fn the_end_of_a_line_gives_its_listing_fields() {
        let activity =
            r#"{"message_count":3,"last_prompt_at":null,"last_user_message":"say \",\"timestamp\":\" }","wire":null}"#;
        // A tool input with a `timestamp` key of its own, before the entry's.
        let message = r#"{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"a":1,"timestamp":"2020-01-01T00:00:00Z","activity":{}}}]}"#;
        let line = format!(
            r#"{{"type":"message","id":"0a0b0c0d","parent_id":null,"message":{message},"usage":null,"wire":null,"timestamp":"2026-01-02T03:04:05Z","activity":{activity}}}"#
        );
        let full = parse_tail(line.as_bytes(), "f").unwrap();
        // Whatever part of the line is read, as long as it holds the listing fields.
        let from = line.find(r#","timestamp":"2026"#).unwrap();
        for start in [0, 1, 40, from] {
            let skimmed = skim_tail_end(&line.as_bytes()[start..]).expect("the listing fields are found");
            assert_eq!(
                (skimmed.kind.as_str(), skimmed.timestamp, &skimmed.activity),
                (full.kind.as_str(), full.timestamp, &full.activity),
                "from byte {start}"
            );
        }
        // Too little of the line, an older field order, and damaged ends are declined.
        let older = format!(
            r#"{{"type":"message","id":"0a0b0c0d","parent_id":null,"timestamp":"2026-01-02T03:04:05Z","message":{message},"usage":null,"wire":null,"activity":{activity}}}"#
        );
        let declined = [
            line[from + 1..].to_owned(),
            older,
            line[..line.len() - 1].to_owned(),
            format!("{line}}}"),
            line.replace(r#""message_count":3,"#, ""),
            line.replace(r#","activity""#, r#","activity":{},"activity""#),
        ];
        for bytes in declined {
            assert!(skim_tail_end(bytes.as_bytes()).is_none(), "{bytes}");
        }
    }
}
