use super::testing::{fixture, parse_chunks, sse_fixtures, OwnedEvent};
use super::*;

/// Parses a whole body given as text.
fn parse(body: &str) -> Vec<OwnedEvent> {
    parse_chunks([body.as_bytes()]).expect("valid body")
}

/// `(event, data)` pairs, for tests that do not care about offsets.
fn names_and_data(events: &[OwnedEvent]) -> Vec<(&str, &str)> {
    events.iter().map(|(e, d, _)| (e.as_str(), d.as_str())).collect()
}

fn ev(event: &str, data: &str, offset: u64) -> OwnedEvent {
    (event.to_owned(), data.to_owned(), offset)
}

#[test]
fn lf_crlf_and_cr_line_ends_are_equivalent() {
    let lf = "event: a\ndata: 1\n\ndata: 2\ndata: 3\n\n";
    let expected = vec![("a", "1"), ("", "2\n3")];
    assert_eq!(names_and_data(&parse(lf)), expected);
    assert_eq!(names_and_data(&parse(&lf.replace('\n', "\r\n"))), expected);
    assert_eq!(names_and_data(&parse(&lf.replace('\n', "\r"))), expected);
    // Mixed within one stream.
    let mixed = "event: a\r\ndata: 1\r\rdata: 2\ndata: 3\r\n\n";
    assert_eq!(names_and_data(&parse(mixed)), expected);
}

#[test]
fn cr_at_chunk_end_with_lf_in_next_chunk_is_one_line_end() {
    // Were the `\n` a second line end, the blank line would split this into two events.
    let events = parse_chunks([&b"data: a\r"[..], b"\ndata: b\r", b"\n\r", b"\n"]).unwrap();
    assert_eq!(events, vec![ev("", "a\nb", 0)]);
    // A lone `\r` at a chunk end followed by a non-`\n` byte is still a line end.
    let events = parse_chunks([&b"data: a\r"[..], b"data: b\r\r"]).unwrap();
    assert_eq!(names_and_data(&events), vec![("", "a\nb")]);
}

#[test]
fn multi_line_data_is_joined_with_newlines() {
    let events = parse("data: first\ndata:\ndata: third\n\n");
    assert_eq!(names_and_data(&events), vec![("", "first\n\nthird")]);
}

#[test]
fn comments_are_ignored() {
    let events = parse(": keep-alive\n\n: hello\ndata: x\n: between\ndata: y\n\n:\n\n");
    assert_eq!(names_and_data(&events), vec![("", "x\ny")]);
}

#[test]
fn event_and_id_fields() {
    let mut p = SseParser::default();
    p.feed(b"id: 42\nevent: first\nevent: second\ndata: d\n\n");
    let e = p.next_event().unwrap().unwrap();
    assert_eq!((e.event, e.data), ("second", "d"));
    assert_eq!(p.last_event_id, "42");
    // The id persists across events until replaced; one containing NUL is ignored.
    p.feed(b"data: e\n\nid: 4\x003\ndata: f\n\nid\ndata: g\n\n");
    assert_eq!(p.next_event().unwrap().unwrap().data, "e");
    assert_eq!(p.last_event_id, "42");
    assert_eq!(p.next_event().unwrap().unwrap().data, "f");
    assert_eq!(p.last_event_id, "42");
    assert_eq!(p.next_event().unwrap().unwrap().data, "g");
    assert_eq!(p.last_event_id, "");
}

#[test]
fn exactly_one_leading_space_is_stripped() {
    let events = parse("data:x\n\ndata: x\n\ndata:  x\n\nevent:  spaced\ndata:\t\n\n");
    assert_eq!(
        names_and_data(&events),
        vec![("", "x"), ("", "x"), ("", " x"), (" spaced", "\t")]
    );
}

#[test]
fn a_line_without_colon_is_a_field_with_empty_value() {
    let events = parse("data\n\nevent\ndata\ndata\n\n");
    assert_eq!(names_and_data(&events), vec![("", ""), ("", "\n")]);
}

#[test]
fn unknown_fields_and_retry_are_ignored() {
    let events = parse("retry: 1000\nfoo: bar\nDATA: upper\ndata: kept\nevent-x: y\n\n");
    assert_eq!(names_and_data(&events), vec![("", "kept")]);
}

#[test]
fn an_event_without_data_is_not_dispatched_and_its_name_does_not_leak() {
    let events = parse("event: lonely\n\nid: 1\n\ndata: next\n\n");
    assert_eq!(names_and_data(&events), vec![("", "next")]);
}

#[test]
fn a_bom_at_the_start_is_skipped_even_when_split() {
    let body = b"\xEF\xBB\xBFdata: x\n\n";
    assert_eq!(parse_chunks([&body[..]]).unwrap(), vec![ev("", "x", 3)]);
    for split in 1..4 {
        let (a, b) = body.split_at(split);
        assert_eq!(parse_chunks([a, b]).unwrap(), vec![ev("", "x", 3)], "split {split}");
    }
    assert_eq!(parse_chunks(body.chunks(1)).unwrap(), vec![ev("", "x", 3)]);
    // A BOM later in the body is part of a field name, which is then unknown.
    assert!(parse("data: a\n\n\u{FEFF}data: b\n\n").len() == 1);
    // A body shorter than a BOM that starts like one is still parsed at EOF.
    assert_eq!(parse_chunks([&b"\xEF\xBB"[..]]).unwrap(), vec![]);
}

#[test]
fn finish_dispatches_an_event_without_trailing_blank_line() {
    assert_eq!(parse("data: a\n\ndata: b\n"), vec![ev("", "a", 0), ev("", "b", 9)]);
    // …and a last line with no terminator at all.
    assert_eq!(
        parse("data: a\n\nevent: e\ndata: b"),
        vec![ev("", "a", 0), ev("e", "b", 9)]
    );
    // A trailing `\r` is a complete line end.
    assert_eq!(parse("data: a\r"), vec![ev("", "a", 0)]);
    // Nothing is invented when the body ends cleanly or holds only a comment or a name.
    assert_eq!(parse("data: a\n\n"), vec![ev("", "a", 0)]);
    assert_eq!(parse(": c"), vec![]);
    assert_eq!(parse("event: e\n"), vec![]);
}

#[test]
fn next_event_waits_for_the_blank_line() {
    let mut p = SseParser::default();
    p.feed(b"data: a\n");
    assert_eq!(p.next_event().unwrap(), None);
    p.feed(b"data: b");
    assert_eq!(p.next_event().unwrap(), None);
    p.feed(b"\n\n");
    let e = p.next_event().unwrap().unwrap();
    assert_eq!((e.event, e.data, e.offset), ("", "a\nb", 0));
    assert_eq!(p.next_event().unwrap(), None);
}

#[test]
fn multibyte_characters_split_across_chunks() {
    let body = "event: ünïcødé\ndata: 68°F — 晴れ 🌤\n\n".as_bytes();
    let whole = parse_chunks([body]).unwrap();
    assert_eq!(names_and_data(&whole), vec![("ünïcødé", "68°F — 晴れ 🌤")]);
    for split in 0..=body.len() {
        let (a, b) = body.split_at(split);
        assert_eq!(parse_chunks([a, b]).unwrap(), whole, "split at {split}");
    }
}

#[test]
fn invalid_utf8_is_a_protocol_error_at_the_event_offset() {
    let body = b"data: ok\n\n: comment \xFF is fine\nevent: e\ndata: bad \xC3(\n\n";
    let mut p = SseParser::default();
    p.feed(body);
    assert_eq!(p.next_event().unwrap().unwrap().data, "ok");
    match p.next_event() {
        Err(Error::Protocol { offset, message }) => {
            // The comment before it is a keep-alive between events, not part of the event.
            assert_eq!(offset, 30, "the offset of the event's first field line");
            assert!(message.contains("data") && message.contains("UTF-8"), "{message}");
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    // In an event name, and in one line of multi-line data.
    let mut p = SseParser::default();
    p.feed(b"event: \xFF\ndata: x\n\n");
    assert!(matches!(p.next_event(), Err(Error::Protocol { offset: 0, .. })));
    let mut p = SseParser::default();
    p.feed(b"data: x\ndata: \xFE\n\n");
    assert!(matches!(p.next_event(), Err(Error::Protocol { offset: 0, .. })));
}

#[test]
fn offsets_stay_exact_across_compaction() {
    // Well over COMPACT_MIN, with events of varied sizes, fed in chunks that straddle lines.
    let mut body = String::new();
    let mut expected = Vec::new();
    for i in 0..3000 {
        let offset = body.len() as u64;
        let data = format!("{{\"i\":{i},\"pad\":\"{}\"}}", "x".repeat(i % 97));
        if i % 3 == 0 {
            body.push_str(&format!("event: e{i}\r\ndata: {data}\r\n\r\n"));
            expected.push(ev(&format!("e{i}"), &data, offset));
        } else {
            body.push_str(&format!("data: {data}\ndata: second\n\n"));
            expected.push(ev("", &format!("{data}\nsecond"), offset));
        }
    }
    assert!(body.len() > 3 * COMPACT_MIN);
    for chunk in [1, 7, 1000, 4096, 70_000, body.len()] {
        let got = parse_chunks(body.as_bytes().chunks(chunk)).unwrap();
        assert_eq!(got.len(), expected.len(), "chunk size {chunk}");
        assert!(got == expected, "chunk size {chunk}: events differ");
    }
}

#[test]
fn a_huge_event_survives_compaction_mid_event() {
    let big = "y".repeat(3 * COMPACT_MIN);
    let body = format!("data: small\n\ndata: {big}\ndata: tail\n\ndata: end\n\n");
    let got = parse_chunks(body.as_bytes().chunks(5000)).unwrap();
    assert_eq!(
        got,
        vec![
            ev("", "small", 0),
            ev("", &format!("{big}\ntail"), 13),
            ev("", "end", 13 + 6 + big.len() as u64 + 1 + 11 + 1),
        ]
    );
}

#[test]
fn every_fixture_parses_the_same_however_it_is_chunked() {
    for path in sse_fixtures() {
        let body = fixture(&path);
        let whole = parse_chunks([&body[..]]).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(!whole.is_empty(), "{path}: no events");
        for split in 0..=body.len() {
            let (a, b) = body.split_at(split);
            let got = parse_chunks([a, b]).unwrap();
            assert!(got == whole, "{path}: split at byte {split} differs");
        }
        assert_eq!(parse_chunks(body.chunks(1)).unwrap(), whole, "{path}: 1-byte feeding");
        let crlf = String::from_utf8(body.clone()).unwrap().replace('\n', "\r\n");
        let converted = parse_chunks([crlf.as_bytes()]).unwrap();
        assert_eq!(names_and_data(&converted), names_and_data(&whole), "{path}: CRLF");
        let crlf_bytes = parse_chunks(crlf.as_bytes().chunks(1)).unwrap();
        assert_eq!(crlf_bytes, converted, "{path}: CRLF fed one byte at a time");
    }
}

#[test]
fn anthropic_text_basic_events() {
    // This fixture has no blank line after its last event.
    let events = parse_chunks([&fixture("anthropic/text-basic.sse")[..]]).unwrap();
    let names: Vec<&str> = events.iter().map(|(e, _, _)| e.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[0].2, 0);
    assert_eq!(events[2].1, r#"{"type": "ping"}"#);
    assert_eq!(
        events[3].1,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#
    );
    assert_eq!(events[8].1, r#"{"type":"message_stop"}"#);
}

#[test]
fn openrouter_comment_lines_are_skipped() {
    let body = fixture("openai-compat/openrouter-reasoning-tool-call.sse");
    let events = parse_chunks([&body[..]]).unwrap();
    let text = String::from_utf8(body).unwrap();
    let data_lines = text.lines().filter(|l| l.starts_with("data: ")).count();
    assert_eq!(events.len(), data_lines);
    assert!(events.iter().all(|(e, d, _)| e.is_empty() && !d.contains("OPENROUTER")));
    // The first event starts after the two comment blocks.
    let first = text.find("data: ").unwrap() as u64;
    assert_eq!(events[0].2, first);
    assert!(events[0]
        .1
        .starts_with(r#"{"id":"gen-1777319950-BX6MCZRmFqpAw5lUPuhg""#));
    assert!(events[0].1.contains(r#""reasoning":"The user is asking for""#));
    assert_eq!(events.last().unwrap().1, "[DONE]");
}

/// Runs `chunks` through a parser with a `limit`-byte event cap, like [`parse_chunks`].
fn parse_limited<'a>(chunks: impl IntoIterator<Item = &'a [u8]>, limit: usize) -> Result<Vec<OwnedEvent>> {
    match super::collect_events_limited(chunks, limit) {
        (events, None) => Ok(events),
        (_, Some(e)) => Err(e),
    }
}

#[test]
fn an_event_over_the_limit_is_a_protocol_error_naming_the_limit() {
    // Complete, with several data lines: the size counts every line of the event.
    let body = format!(
        "data: ok\n\nevent: big\ndata: {}\ndata: {}\n\n",
        "a".repeat(40),
        "b".repeat(40)
    );
    match parse_limited([body.as_bytes()], 64) {
        Err(Error::Protocol { offset, message }) => {
            assert_eq!(offset, 10, "the offset of the oversized event");
            assert!(message.contains("larger than 64 bytes"), "{message}");
            assert!(message.contains("max_event_bytes"), "{message}");
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    // An event of exactly the limit (its lines and line ends) passes.
    let exact = format!("data: {}\n\n", "x".repeat(64 - 7));
    assert_eq!(parse_limited([exact.as_bytes()], 64).unwrap().len(), 1);
    let over = format!("data: {}\n\n", "x".repeat(64 - 6));
    assert!(parse_limited([over.as_bytes()], 64).is_err());
}

#[test]
fn an_endless_line_fails_as_soon_as_it_passes_the_limit() {
    // No line end ever comes: the parser must not wait for one while buffering without bound.
    let mut p = SseParser::new(1000);
    p.feed(b"data: ok\n\n");
    assert_eq!(p.next_event().unwrap().unwrap().data, "ok");
    let mut fed = 0;
    let err = loop {
        p.feed(&[b'z'; 100]);
        fed += 100;
        assert!(fed <= 1100, "no error after {fed} bytes of one line");
        match p.next_event() {
            Ok(None) => {}
            Ok(Some(e)) => panic!("unexpected event {e:?}"),
            Err(e) => break e,
        }
    };
    assert!(fed > 1000);
    let text = err.to_string();
    assert!(
        text.contains("at byte 10") && text.contains("larger than 1000 bytes"),
        "{text}"
    );
    // The same for a comment line and for a field name that never ends.
    for start in [&b": "[..], b"dat"] {
        let mut body = start.to_vec();
        body.extend_from_slice(&[b'z'; 2000]);
        assert!(parse_limited(body.chunks(7), 1000).is_err());
    }
}

#[test]
fn keep_alive_comments_between_events_count_towards_no_event() {
    // Thousands of keep-alives without blank lines, then a small event: only the event counts.
    let mut body = ": ping\n".repeat(5000);
    body.push_str("data: real\n\n");
    let events = parse_limited(body.as_bytes().chunks(13), 64).unwrap();
    assert_eq!(events, vec![ev("", "real", 5000 * 7)]);
    // A comment inside an event is part of it.
    let inside = format!("data: a\n: {}\ndata: b\n\n", "c".repeat(100));
    assert!(parse_limited([inside.as_bytes()], 64).is_err());
}

#[test]
fn a_line_fed_in_many_chunks_is_searched_once() {
    // A 200 KB line in 1-byte chunks: searching the line again on every chunk would look at
    // 20 billion bytes.
    let mut body = format!("data: {}", "y".repeat(200_000)).into_bytes();
    body.extend_from_slice(b"\r\n\r\n");
    let mut p = SseParser::default();
    let mut lengths = Vec::new();
    for byte in body.chunks(1) {
        p.feed(byte);
        while let Some(e) = p.next_event().unwrap() {
            lengths.push(e.data.len());
        }
    }
    assert_eq!(lengths, vec![200_000]);
    assert!(
        p.searched <= body.len() as u64,
        "searched {} bytes of a {}-byte body",
        p.searched,
        body.len()
    );
}
