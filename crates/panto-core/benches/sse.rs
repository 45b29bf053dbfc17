//! SSE → provider events, from memory: the SSE parser and each API's decoder on recorded
//! streams, exactly as a live response drives them (`panto_core::__bench::decode`).
//!
//! Targets (issue 7): at least 400 MB/s of wire bytes and at most 1 µs per event.
//!
//! The recorded fixtures are short (a dozen events), so each is also measured extended to
//! 10,000 text deltas: the recording's own delta events, byte for byte (padding, field order,
//! non-ASCII text), repeated in order between its real opening and closing events. Each long
//! body is decoded whole (one buffer) and in 1,460-byte pieces (one TCP segment each), which is
//! how bytes come off a socket.
//!
//! `sse-long-line/*` is one event whose single line is 1, 4 and 15 MiB long, parsed whole and
//! split into TCP segments. The parser must search each byte once however many pieces the line
//! arrives in, so the segmented line costs what the whole one does, at every size (time linear
//! in bytes). A parser that searched the line again on every segment spent time quadratic in its
//! length (80 MB took 50 s).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use panto_core::__bench::{decode, sse_data_lengths, WireCounts};
use panto_core::ApiStyle;
use panto_testkit::bench::Facts;
use panto_testkit::fixture_bytes;

/// How many text deltas the extended bodies carry.
const DELTAS: usize = 10_000;

/// A TCP segment's payload on a typical link.
const SEGMENT: usize = 1460;

/// One body to decode.
struct Input {
    name: &'static str,
    style: ApiStyle,
    body: Vec<u8>,
}

/// Repeats the delta events of a recorded body (in order, cycling) until there are `n` of them,
/// keeping the events before the first delta and after the last one as recorded.
fn extend(body: &[u8], is_delta: impl Fn(&str) -> bool, n: usize) -> Vec<u8> {
    let text = std::str::from_utf8(body).expect("fixtures are UTF-8");
    let events: Vec<&str> = text.split("\n\n").filter(|e| !e.trim().is_empty()).collect();
    let first = events.iter().position(|e| is_delta(e)).expect("a delta event");
    let last = events.iter().rposition(|e| is_delta(e)).expect("a delta event");
    let deltas = &events[first..=last];
    let mut out = String::new();
    for e in &events[..first] {
        out.push_str(e);
        out.push_str("\n\n");
    }
    for e in deltas.iter().cycle().take(n) {
        out.push_str(e);
        out.push_str("\n\n");
    }
    for e in &events[last + 1..] {
        out.push_str(e);
        out.push_str("\n\n");
    }
    out.into_bytes()
}

fn fixture(path: &str) -> Vec<u8> {
    fixture_bytes(path).unwrap_or_else(|e| panic!("{e}"))
}

fn inputs() -> Vec<Input> {
    let anthropic = fixture("anthropic/text-recorded-padded.sse");
    let openai = fixture("openai/text-basic.sse");
    let openai_new = fixture("openai/text-usage-obfuscation.sse");
    let anthropic_delta = |e: &str| e.contains("\"type\":\"content_block_delta\"");
    let openai_delta = |e: &str| e.contains("\"delta\":{\"content\":\"");
    vec![
        Input {
            name: "anthropic-recorded",
            style: ApiStyle::AnthropicMessages,
            body: anthropic.clone(),
        },
        Input {
            name: "openai-recorded",
            style: ApiStyle::OpenAiChat,
            body: openai,
        },
        Input {
            name: "anthropic-recorded-10k-deltas",
            style: ApiStyle::AnthropicMessages,
            body: extend(&anthropic, anthropic_delta, DELTAS),
        },
        Input {
            name: "openai-recorded-10k-deltas",
            style: ApiStyle::OpenAiChat,
            body: extend(&openai_new, openai_delta, DELTAS),
        },
    ]
}

/// Decodes `body` in pieces of `chunk` bytes (`0`: whole), failing loudly on a decoding error
/// since the inputs are known-good.
fn run(style: ApiStyle, body: &[u8], chunk: usize) -> WireCounts {
    let result = if chunk == 0 {
        decode(style, [body])
    } else {
        decode(style, body.chunks(chunk))
    };
    match result {
        Ok(counts) if counts.complete => counts,
        Ok(counts) => panic!("the body did not decode to a complete message: {counts:?}"),
        Err(e) => panic!("decoding failed: {e}"),
    }
}

fn sse(c: &mut Criterion) {
    let mut facts = Facts::new("sse");
    let mut group = c.benchmark_group("sse");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for input in inputs() {
        let long = input.body.len() > 100_000;
        let chunkings: &[(&str, usize)] = if long {
            &[("whole", 0), ("segments", SEGMENT)]
        } else {
            &[("whole", 0)]
        };
        for &(how, chunk) in chunkings {
            let counts = run(input.style, &input.body, chunk);
            let id = BenchmarkId::new(input.name, how);
            let full = format!("sse/{}/{how}", input.name);
            facts.add(&full, "bytes", input.body.len());
            facts.add(&full, "sse_events", counts.sse_events);
            facts.add(&full, "provider_events", counts.provider_events);
            group.throughput(Throughput::Bytes(input.body.len() as u64));
            group.bench_with_input(id, &input.body, |b, body| {
                b.iter(|| run(input.style, std::hint::black_box(body), chunk))
            });
        }
    }
    group.finish();
    long_line(c, &mut facts);
    facts.save();
}

/// One event of `mib` MiB on a single line: `data: xxx…` then the blank line.
fn long_line_body(mib: usize) -> Vec<u8> {
    let mut body = b"data: ".to_vec();
    body.resize(6 + mib * 1024 * 1024, b'x');
    body.extend_from_slice(b"\n\n");
    body
}

/// Splits `body`, delivered in pieces of `chunk` bytes (`0`: whole), into SSE events; panics
/// unless it is one event. The event's data is not copied: the parser is what is measured.
fn long_line_events(body: &[u8], chunk: usize) -> usize {
    let lengths = if chunk == 0 {
        sse_data_lengths([body])
    } else {
        sse_data_lengths(body.chunks(chunk))
    };
    match lengths.as_deref() {
        Ok([length]) => *length,
        other => panic!("expected one event, got {other:?}"),
    }
}

fn long_line(c: &mut Criterion, facts: &mut Facts) {
    let mut group = c.benchmark_group("sse-long-line");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for mib in [1, 4, 15] {
        let body = long_line_body(mib);
        let name = format!("{mib}MiB");
        for (how, chunk) in [("whole", 0), ("segments", SEGMENT)] {
            facts.add(&format!("sse-long-line/{name}/{how}"), "bytes", body.len());
            group.throughput(Throughput::Bytes(body.len() as u64));
            group.bench_with_input(BenchmarkId::new(&name, how), &body, |b, body| {
                b.iter(|| long_line_events(std::hint::black_box(body), chunk))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, sse);
criterion_main!(benches);
