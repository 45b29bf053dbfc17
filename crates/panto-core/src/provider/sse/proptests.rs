//! Property tests of the SSE layer: however a body is cut into chunks, the parser dispatches the
//! same events (same names, data and offsets) and stops at the same error, and each decoder
//! produces the same provider events from a recorded stream.
//!
//! Bodies are generated line by line from the grammar's pieces (every field, comments, the
//! three line endings, blank lines, a byte order mark, non-ASCII and invalid UTF-8 values), so
//! that cuts land inside CRLF pairs, multi-byte characters and events.

use proptest::prelude::*;

use super::testing::{decode_chunks, fixture, sse_fixtures, Decoded};
use super::SseParser;
use crate::provider::anthropic::AnthropicDecoder;
use crate::provider::openai::OpenAiDecoder;
use crate::provider::responses::ResponsesDecoder;
use crate::provider::Decoder;

/// What a parse produced: the events, and the error that stopped it (as text).
type Outcome = (Vec<(String, String, u64)>, Option<String>);

/// Parses `chunks` as a live body is parsed, keeping the events that came before an error.
fn parse(chunks: &[&[u8]]) -> Outcome {
    let (events, error) = super::collect_events(chunks.iter().copied());
    (events, error.map(|e| e.to_string()))
}

/// Cuts `body` at the given points (taken modulo its length, sorted, duplicates kept so that
/// empty chunks occur too).
fn cut<'a>(body: &'a [u8], points: &[prop::sample::Index]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = points.iter().map(|p| p.index(body.len() + 1)).collect();
    at.sort_unstable();
    let mut chunks = Vec::with_capacity(at.len() + 1);
    let mut start = 0;
    for end in at {
        chunks.push(&body[start..end]);
        start = end;
    }
    chunks.push(&body[start..]);
    chunks
}

/// A field value: text with spaces, colons and non-ASCII characters, and sometimes bytes that
/// are not UTF-8.
fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => "[ a-z0-9:{}\",é日🦀]{0,12}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>().prop_filter("no line ends", |b| *b != b'\n' && *b != b'\r'), 0..6),
    ]
}

/// One line without its ending.
fn line() -> impl Strategy<Value = Vec<u8>> {
    let field = prop_oneof![
        Just(&b"data"[..]),
        Just(&b"data"[..]),
        Just(&b"event"[..]),
        Just(&b"id"[..]),
        Just(&b"retry"[..]),
        Just(&b""[..]),
        Just(&b"unknown"[..]),
    ];
    let separator = prop_oneof![Just(&b": "[..]), Just(&b":"[..]), Just(&b""[..])];
    prop_oneof![
        6 => (field, separator, value()).prop_map(|(f, s, v)| [f, s, &v].concat()),
        1 => Just(Vec::new()),
    ]
}

/// A body: lines with mixed endings, maybe a byte order mark, maybe no final line ending.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let ending = prop_oneof![
        6 => Just(&b"\n"[..]),
        2 => Just(&b"\r\n"[..]),
        1 => Just(&b"\r"[..]),
    ];
    (
        any::<bool>(),
        prop::collection::vec((line(), ending), 0..24),
        any::<bool>(),
    )
        .prop_map(|(bom, lines, end_open)| {
            let mut out = Vec::new();
            if bom {
                out.extend_from_slice(b"\xEF\xBB\xBF");
            }
            let n = lines.len();
            for (i, (line, ending)) in lines.into_iter().enumerate() {
                out.extend_from_slice(&line);
                if !(end_open && i + 1 == n) {
                    out.extend_from_slice(ending);
                }
            }
            out
        })
}

fn comparable(d: &Decoded) -> String {
    format!("{:?} {:?}", d.events, d.error.as_ref().map(|e| format!("{e:?}")))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_chunking_of_a_body_gives_the_same_events(
        body in body(),
        points in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let whole = parse(&[&body]);
        let chunked = parse(&cut(&body, &points));
        prop_assert_eq!(&chunked, &whole, "cut at {:?}", points);
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        prop_assert_eq!(parse(&bytes), whole);
    }

    #[test]
    fn every_byte_is_searched_at_most_once_however_the_body_is_cut(
        body in long_lines(),
        points in prop::collection::vec(any::<prop::sample::Index>(), 0..64),
    ) {
        // Time linear in bytes: the line search never looks at a byte twice, so cutting a body
        // into more pieces cannot make parsing it slower than one pass.
        for chunks in [cut(&body, &points), body.chunks(1).collect()] {
            let mut parser = SseParser::default();
            for chunk in chunks {
                parser.feed(chunk);
                while let Ok(Some(_)) = parser.next_event() {}
            }
            let _ = parser.finish();
            while let Ok(Some(_)) = parser.next_event() {}
            prop_assert!(
                parser.searched <= body.len() as u64,
                "searched {} bytes of a {}-byte body", parser.searched, body.len()
            );
        }
    }
}

/// A body of the usual lines with some long ones among them (a large event's data line).
fn long_lines() -> impl Strategy<Value = Vec<u8>> {
    (
        body(),
        prop::collection::vec((0usize..4096, any::<prop::sample::Index>()), 0..4),
    )
        .prop_map(|(mut body, long)| {
            for (len, at) in long {
                let mut line = b"data: ".to_vec();
                line.resize(6 + len, b'w');
                line.extend_from_slice(b"\n\n");
                let at = at.index(body.len() + 1);
                body.splice(at..at, line);
            }
            body
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_chunking_of_a_recorded_stream_decodes_to_the_same_events(
        which in any::<prop::sample::Index>(),
        points in prop::collection::vec(any::<prop::sample::Index>(), 1..12),
    ) {
        let fixtures = sse_fixtures();
        let path = which.get(&fixtures);
        let body = fixture(path);
        let decoder = || -> Box<dyn Decoder> {
            if path.starts_with("anthropic/") || path.contains("messages-") {
                Box::new(AnthropicDecoder::default())
            } else if path.starts_with("responses/") || path.contains("responses-") {
                Box::new(ResponsesDecoder::default())
            } else {
                Box::new(OpenAiDecoder::default())
            }
        };
        let whole = decode_chunks(decoder().as_mut(), [&body[..]]);
        let chunked = decode_chunks(decoder().as_mut(), cut(&body, &points));
        prop_assert_eq!(comparable(&chunked), comparable(&whole), "{} cut at {:?}", path, points);
    }
}
