//! The mock server as its users see it: over real sockets, with reqwest and with raw HTTP.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use panto_core::Usage;
use panto_testkit::{fixture_bytes, fixtures_dir, script, Chunking, MockServer, Reply};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// ---------------------------------------------------------------------------------------------
// Helpers.

fn anthropic_body(messages: Value) -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": true, "messages": messages})
}

fn openai_body(messages: Value) -> Value {
    json!({"model": "gpt-4o", "stream": true, "messages": messages})
}

fn hello() -> Value {
    json!([{"role": "user", "content": "Hello"}])
}

/// A request panto would send to the Anthropic endpoint.
fn anthropic_post(server: &MockServer, body: &Value) -> reqwest::RequestBuilder {
    anthropic_post_with(&reqwest::Client::new(), server, body)
}

/// [`anthropic_post`] through `client`.
fn anthropic_post_with(client: &reqwest::Client, server: &MockServer, body: &Value) -> reqwest::RequestBuilder {
    client
        .post(format!("{}/v1/messages", server.anthropic_base_url()))
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(body.to_string())
}

/// A request panto would send to the OpenAI endpoint.
fn openai_post(server: &MockServer, body: &Value) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .header("authorization", "Bearer sk-test")
        .header("content-type", "application/json")
        .body(body.to_string())
}

/// Sends raw bytes and reads the whole response until the server closes the connection.
async fn raw_exchange(server: &MockServer, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(server.addr()).await.expect("connect");
    stream.write_all(request).await.expect("send");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.expect("read");
    response
}

fn raw_anthropic_request(body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: k\r\nanthropic-version: 2023-06-01\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Splits a raw response into its head (as text) and the bytes after the blank line.
fn split_head(raw: &[u8]) -> (String, Vec<u8>) {
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
    (String::from_utf8_lossy(&raw[..at]).into_owned(), raw[at + 4..].to_vec())
}

/// The chunks of a chunked body, and whether it ended with the last (empty) chunk.
fn dechunk(mut rest: &[u8]) -> (Vec<Vec<u8>>, bool) {
    let mut chunks = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (chunks, false);
        };
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).expect("hex size"), 16).expect("hex size");
        if size == 0 {
            return (chunks, &rest[eol..] == b"\r\n\r\n");
        }
        let data = &rest[eol + 2..];
        if data.len() < size + 2 {
            chunks.push(data[..data.len().min(size)].to_vec());
            return (chunks, false);
        }
        chunks.push(data[..size].to_vec());
        assert_eq!(&data[size..size + 2], b"\r\n", "chunk data must end with CRLF");
        rest = &data[size + 2..];
    }
}

/// The `data:` payloads of an SSE body, with their `event:` names (empty when absent).
fn sse_events(body: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8(body.to_vec()).expect("SSE is UTF-8");
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|event| {
            let mut name = String::new();
            let mut data = String::new();
            for line in event.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    name = v.to_owned();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = v.to_owned();
                }
            }
            (name, data)
        })
        .collect()
}

async fn json_of(response: reqwest::Response) -> Value {
    let bytes = response.bytes().await.expect("body");
    parse(&String::from_utf8_lossy(&bytes))
}

fn parse(data: &str) -> Value {
    serde_json::from_str(data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}"))
}

/// Every provider `.sse` fixture the SDK check covers too.
fn provider_sse_fixtures() -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["anthropic", "openai", "openai-compat"] {
        for entry in std::fs::read_dir(fixtures_dir().join(dir)).expect("fixture dir") {
            let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
            if name.ends_with(".sse") {
                out.push(format!("{dir}/{name}"));
            }
        }
    }
    out.sort();
    assert!(out.len() >= 20, "expected the recorded fixtures, found {out:?}");
    out
}

// ---------------------------------------------------------------------------------------------
// Serving bytes.

#[tokio::test]
async fn fixtures_are_served_byte_for_byte_under_every_chunking() {
    let server = MockServer::start().await;
    for fixture in provider_sse_fixtures() {
        let expected = fixture_bytes(&fixture).expect("fixture");
        for chunking in [
            Chunking::Whole,
            Chunking::EveryByte,
            Chunking::Fixed(37),
            Chunking::SplitAt(expected.len() / 2),
        ] {
            server.push(Reply::fixture(&fixture).chunking(chunking));
            let response = anthropic_post(&server, &anthropic_body(hello()))
                .send()
                .await
                .expect("send");
            assert_eq!(response.status(), 200, "{fixture} {chunking:?}");
            assert_eq!(
                response.headers()["content-type"],
                "text/event-stream",
                "{fixture} {chunking:?}"
            );
            let body = response.bytes().await.expect("body");
            assert!(body == expected, "{fixture} under {chunking:?}: the bytes differ");
        }
    }
}

#[tokio::test]
async fn each_write_is_one_http_chunk() {
    let server = MockServer::start().await;
    let body = fixture_bytes("anthropic/text-basic.sse").expect("fixture");
    let cases = [
        (Chunking::Whole, vec![body.len()]),
        (Chunking::EveryByte, vec![1; body.len()]),
        (Chunking::SplitAt(10), vec![10, body.len() - 10]),
    ];
    for (chunking, sizes) in cases {
        server.push(Reply::sse(body.clone()).chunking(chunking));
        let raw = raw_exchange(&server, &raw_anthropic_request(&anthropic_body(hello()))).await;
        let (head, rest) = split_head(&raw);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(head.contains("\r\ntransfer-encoding: chunked"), "{head}");
        assert!(head.contains("\r\nconnection: close"), "{head}");
        let (chunks, ended) = dechunk(&rest);
        assert!(ended, "{chunking:?}: the body must end with the last chunk");
        assert_eq!(chunks.iter().map(Vec::len).collect::<Vec<_>>(), sizes, "{chunking:?}");
        assert_eq!(chunks.concat(), body, "{chunking:?}");
    }
    let fixed = 37;
    server.push(Reply::sse(body.clone()).chunking(Chunking::Fixed(fixed)));
    let raw = raw_exchange(&server, &raw_anthropic_request(&anthropic_body(hello()))).await;
    let (chunks, _) = dechunk(&split_head(&raw).1);
    assert_eq!(chunks.len(), body.len().div_ceil(fixed));
    assert!(chunks[..chunks.len() - 1].iter().all(|c| c.len() == fixed));
}

#[tokio::test]
async fn crlf_turns_every_line_ending_into_crlf() {
    let server = MockServer::start().await;
    let lf = fixture_bytes("openai/tool-call.sse").expect("fixture");
    server.push(
        Reply::fixture("openai/tool-call.sse")
            .crlf()
            .chunking(Chunking::Fixed(5)),
    );
    let body = openai_post(&server, &openai_body(hello()))
        .send()
        .await
        .expect("send")
        .bytes()
        .await
        .expect("body");
    let lines = lf.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(body.len(), lf.len() + lines, "one CR per line ending");
    assert_eq!(body.windows(2).filter(|w| w == b"\r\n").count(), lines);
    let back: Vec<u8> = body.iter().copied().filter(|&b| b != b'\r').collect();
    assert_eq!(back, lf, "removing the CRs gives the fixture back");
}

#[tokio::test]
async fn error_fixture_carries_its_recorded_status_headers_and_bytes() {
    let server = MockServer::start().await;
    server.push(Reply::fixture("anthropic/error-429-rate-limit.json").header("retry-after", "0"));
    let response = anthropic_post(&server, &anthropic_body(hello()))
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["x-should-retry"], "true");
    assert_eq!(response.headers()["retry-after"], "0");
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.headers()["content-length"], "606");
    let body = response.bytes().await.expect("body");
    assert!(body == fixture_bytes("anthropic/error-429-rate-limit.json").expect("fixture"));

    // No metadata beside it: the status comes from the file name.
    server.push(Reply::fixture("anthropic/error-529-overloaded.json"));
    let response = anthropic_post(&server, &anthropic_body(hello()))
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 529);
}

#[tokio::test]
async fn json_reply_has_status_headers_and_length() {
    let server = MockServer::start().await;
    let body = json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}});
    server.push(Reply::json(429, &body).header("retry-after", "2"));
    let response = anthropic_post(&server, &anthropic_body(hello()))
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "2");
    assert_eq!(json_of(response).await, body);
}

#[tokio::test]
async fn delay_spaces_the_writes() {
    let server = MockServer::start().await;
    server.push(
        Reply::sse("data: a\n\ndata: b\n\ndata: c\n\n")
            .chunking(Chunking::Fixed(9))
            .delay(Duration::from_millis(60)),
    );
    let started = Instant::now();
    let response = anthropic_post(&server, &anthropic_body(hello()))
        .send()
        .await
        .expect("send");
    let mut stream = response.bytes_stream();
    let mut arrivals = Vec::new();
    while let Some(chunk) = stream.next().await {
        chunk.expect("chunk");
        arrivals.push(started.elapsed());
    }
    assert_eq!(arrivals.len(), 3, "three writes of 9 bytes: {arrivals:?}");
    assert!(arrivals[2] >= Duration::from_millis(180), "{arrivals:?}");
    assert!(arrivals[1] - arrivals[0] >= Duration::from_millis(50), "{arrivals:?}");
}

/// A model's time to first token: the status and headers at once, the body's first write
/// after `first_delay`, the rest `delay` apart; the same over HTTP/1.1 and HTTP/2.
#[tokio::test]
async fn first_delay_holds_the_body_not_the_headers() {
    for http2 in [false, true] {
        let server = MockServer::start().await;
        server.push(
            Reply::sse("data: a\n\ndata: b\n\n")
                .chunking(Chunking::Fixed(9))
                .first_delay(Duration::from_millis(600))
                .delay(Duration::from_millis(20)),
        );
        let mut client = reqwest::Client::builder();
        if http2 {
            client = client.http2_prior_knowledge();
        }
        let client = client.build().expect("client");
        let started = Instant::now();
        let response = anthropic_post_with(&client, &server, &anthropic_body(hello()))
            .send()
            .await
            .expect("send");
        let headers_at = started.elapsed();
        assert_eq!(response.status(), 200, "http2 {http2}");
        let mut stream = response.bytes_stream();
        let mut arrivals = Vec::new();
        while let Some(chunk) = stream.next().await {
            // HTTP/2 may end the stream with an empty DATA frame: not a write of the body.
            if !chunk.expect("chunk").is_empty() {
                arrivals.push(started.elapsed());
            }
        }
        assert!(
            headers_at < Duration::from_millis(500),
            "http2 {http2}: headers after {headers_at:?}"
        );
        assert_eq!(arrivals.len(), 2, "http2 {http2}: {arrivals:?}");
        assert!(arrivals[0] >= Duration::from_millis(600), "http2 {http2}: {arrivals:?}");
        assert!(
            arrivals[1] - arrivals[0] < Duration::from_millis(500),
            "http2 {http2}: {arrivals:?}"
        );
        assert!(
            arrivals[1] - arrivals[0] >= Duration::from_millis(15),
            "http2 {http2}: {arrivals:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Endings: stall, close, end, hang.

#[tokio::test]
async fn stall_keeps_the_connection_open_until_the_server_is_dropped() {
    let server = MockServer::start().await;
    let body = script::anthropic_text("Hello there, this stream stalls.");
    server.push(Reply::sse(body.clone()).stall_after(40));
    let response = anthropic_post(&server, &anthropic_body(hello()))
        .send()
        .await
        .expect("send");
    let mut stream = response.bytes_stream();
    let mut received = Vec::new();
    while received.len() < 40 {
        let chunk = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("the first 40 bytes arrive")
            .expect("not ended")
            .expect("no error");
        received.extend_from_slice(&chunk);
    }
    assert_eq!(received, body[..40]);
    let more = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
    assert!(more.is_err(), "nothing more may arrive while stalled: {more:?}");

    drop(server);
    let after_drop = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("dropping the server must close the stalled connection");
    assert!(
        matches!(after_drop, None | Some(Err(_))),
        "the stream must end or fail, got {after_drop:?}"
    );
}

#[tokio::test]
async fn close_after_aborts_the_transfer() {
    let server = MockServer::start().await;
    let body = script::openai_text("A stream that the server cuts off.");
    server.push(Reply::sse(body.clone()).close_after(25));
    let response = openai_post(&server, &openai_body(hello())).send().await.expect("send");
    let mut stream = response.bytes_stream();
    let mut received = Vec::new();
    let mut failed = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => received.extend_from_slice(&bytes),
            Err(_) => failed = true,
        }
    }
    assert_eq!(received, body[..25]);
    assert!(failed, "the client must see an incomplete body, not a clean end");

    // Raw: no last chunk.
    server.push(Reply::sse(body.clone()).close_after(25));
    let raw = raw_exchange(&server, &raw_anthropic_request(&anthropic_body(hello()))).await;
    let (chunks, ended) = dechunk(&split_head(&raw).1);
    assert_eq!(chunks.concat(), body[..25]);
    assert!(!ended);
}

/// A client that opens with the HTTP/2 preface (h2c, prior knowledge) gets the same scripted
/// replies, keyed ones included, as streams of one connection, and a scripted close cuts its
/// stream short as it cuts an HTTP/1.1 body.
#[tokio::test]
async fn h2c_clients_get_the_scripted_replies_over_one_connection() {
    let server = MockServer::start().await;
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("an HTTP/2 client");
    let post = |key: Option<&str>| {
        let request = client
            .post(format!("{}/v1/messages", server.anthropic_base_url()))
            .header("x-api-key", "sk-ant-test")
            .header("anthropic-version", "2023-06-01")
            .header("content-type", "application/json")
            .body(anthropic_body(hello()).to_string());
        match key {
            Some(key) => request.header(panto_testkit::KEY_HEADER, key),
            None => request,
        }
    };
    let body = script::anthropic_text("Over HTTP/2.");
    server.push_keyed("k", Reply::sse(body.clone()).chunking(Chunking::Fixed(7)));
    let response = tokio::time::timeout(Duration::from_secs(10), post(Some("k")).send())
        .await
        .expect("an answer")
        .expect("send");
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.bytes().await.expect("the body"), body);
    assert!(server.served_time("k") > Duration::ZERO);

    server.push(Reply::sse(body.clone()).close_after(25));
    let response = post(None).send().await.expect("send");
    let mut stream = response.bytes_stream();
    let mut received = Vec::new();
    let mut failed = false;
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the cut stream ends")
    {
        match chunk {
            Ok(bytes) => received.extend_from_slice(&bytes),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert_eq!(received, body[..25]);
    assert!(failed, "the client must see an incomplete body, not a clean end");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(server.connections(), 1, "both requests travel over one connection");
}

#[tokio::test]
async fn end_after_ends_the_body_cleanly() {
    let server = MockServer::start().await;
    let body = script::anthropic_text("A stream that just stops.");
    server.push(Reply::sse(body.clone()).end_after(100).chunking(Chunking::EveryByte));
    let received = anthropic_post(&server, &anthropic_body(hello()))
        .send()
        .await
        .expect("send")
        .bytes()
        .await
        .expect("a complete body");
    assert_eq!(received, body[..100]);
}

#[tokio::test]
async fn hang_never_answers() {
    let server = MockServer::start().await;
    server.push(Reply::hang());
    let result = tokio::time::timeout(
        Duration::from_millis(300),
        anthropic_post(&server, &anthropic_body(hello())).send(),
    )
    .await;
    assert!(result.is_err(), "no response may arrive: {result:?}");
    assert_eq!(server.requests().len(), 1, "the request is still recorded");
}

// ---------------------------------------------------------------------------------------------
// Recording, queue, validation.

#[tokio::test]
async fn requests_are_recorded_with_method_path_headers_and_body() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_text("hi")));
    let body = openai_body(json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]));
    let response = openai_post(&server, &body)
        .header("x-custom", "Value 1")
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 200);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(
        (r.index, r.method.as_str(), r.path.as_str()),
        (1, "POST", "/v1/chat/completions")
    );
    assert_eq!(r.header("X-Custom"), Some("Value 1"));
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(r.json().expect("json body"), body);
    assert_eq!(r.validation, None);
    assert_eq!(r.to_json()["body"], body);
    assert_eq!(server.pending(), 0);
}

#[tokio::test]
async fn replies_are_served_in_order_and_an_empty_queue_answers_500() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("first")));
    server.push(Reply::sse(script::anthropic_text("second")));
    for word in ["first", "second"] {
        let body = anthropic_post(&server, &anthropic_body(hello()))
            .send()
            .await
            .expect("send")
            .text()
            .await
            .expect("body");
        assert!(body.contains(&format!("\"text\":\"{word}\"")), "{body}");
    }
    let response = anthropic_post(&server, &anthropic_body(hello()))
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 500);
    let error: Value = json_of(response).await;
    assert_eq!(error["type"], "error", "Anthropic-shaped: {error}");
    let message = error["error"]["message"].as_str().expect("message");
    assert!(message.contains("mock: no scripted reply for request 3"), "{message}");

    server.reset();
    let response = openai_post(&server, &openai_body(hello())).send().await.expect("send");
    let error: Value = json_of(response).await;
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no scripted reply for request 1")),
        "numbering restarts after reset, OpenAI-shaped: {error}"
    );
}

#[tokio::test]
async fn anthropic_tool_use_without_result_is_refused_and_keeps_the_reply() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("fine")));
    let dangling = anthropic_body(json!([
        {"role": "user", "content": "List files"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": "never mind"},
    ]));
    let response = anthropic_post(&server, &dangling).send().await.expect("send");
    assert_eq!(response.status(), 400);
    let error: Value = json_of(response).await;
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let message = error["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("messages.1: tool_use ids were found without tool_result blocks immediately after: toolu_01"),
        "{message}"
    );
    assert_eq!(
        server.pending(),
        1,
        "a refused request must not consume the queued reply"
    );
    assert_eq!(server.requests()[0].validation.as_deref(), Some(message));

    let answered = anthropic_body(json!([
        {"role": "user", "content": "List files"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "a.txt"}]},
    ]));
    let response = anthropic_post(&server, &answered).send().await.expect("send");
    assert_eq!(response.status(), 200);
    assert_eq!(server.requests()[1].validation, None);
    assert_eq!(server.pending(), 0);
}

#[tokio::test]
async fn openai_dangling_tool_call_is_refused_and_a_valid_one_accepted() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::openai_text("fine")));
    let call =
        json!({"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}});
    let dangling = openai_body(json!([
        {"role": "user", "content": "List files"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "user", "content": "never mind"},
    ]));
    let response = openai_post(&server, &dangling).send().await.expect("send");
    assert_eq!(response.status(), 400);
    let error: Value = json_of(response).await;
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let message = error["error"]["message"].as_str().expect("message");
    assert!(
        message.contains("messages[1]: an assistant message with tool_calls must be followed by tool messages")
            && message.contains("call_1"),
        "{message}"
    );
    assert_eq!(server.pending(), 1);

    let answered = openai_body(json!([
        {"role": "user", "content": "List files"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
    ]));
    assert_eq!(
        openai_post(&server, &answered).send().await.expect("send").status(),
        200
    );
}

#[tokio::test]
async fn missing_credentials_are_named() {
    let server = MockServer::start().await;
    let response = reqwest::Client::new()
        .post(format!("{}/v1/messages", server.anthropic_base_url()))
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(anthropic_body(hello()).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 400);
    let error: Value = json_of(response).await;
    assert!(error["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("missing x-api-key header")));

    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .header("content-type", "application/json")
        .body(openai_body(hello()).to_string())
        .send()
        .await
        .expect("send");
    let error: Value = json_of(response).await;
    assert!(error["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("missing Authorization: Bearer header")));
}

#[tokio::test]
async fn validation_can_be_turned_off_but_is_still_recorded() {
    let server = MockServer::start().await;
    server.set_validation(false);
    server.push(Reply::sse(script::anthropic_text("served anyway")));
    let mut body = anthropic_body(hello());
    body["stream"] = json!(false);
    let response = anthropic_post(&server, &body).send().await.expect("send");
    assert_eq!(response.status(), 200);
    let validation = server.requests()[0].validation.clone();
    assert!(
        validation
            .as_deref()
            .is_some_and(|v| v.contains("stream: must be true")),
        "{validation:?}"
    );
}

#[tokio::test]
async fn unknown_endpoints_and_chunked_request_bodies_are_refused() {
    let server = MockServer::start().await;
    server.push(Reply::sse(script::anthropic_text("unused")));
    let response = reqwest::Client::new()
        .post(format!("{}/v1/complete", server.base_url()))
        .body("{}")
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 404);
    let text = response.text().await.expect("body");
    assert!(text.contains("no endpoint POST /v1/complete"), "{text}");
    assert_eq!(server.pending(), 1);

    let raw = raw_exchange(
        &server,
        b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    )
    .await;
    let (head, body) = split_head(&raw);
    assert!(head.starts_with("HTTP/1.1 411 "), "{head}");
    assert!(String::from_utf8_lossy(&body).contains("Content-Length"));
}

// ---------------------------------------------------------------------------------------------
// Scripted streams.

/// Reassembles an Anthropic stream: (block type, text or input JSON) per block, stop reason,
/// final usage, and whether it ended with message_stop.
fn replay_anthropic(body: &[u8]) -> (Vec<(String, String)>, Option<String>, Value, bool) {
    let mut blocks: Vec<(String, String)> = Vec::new();
    let mut stop = None;
    let mut usage = Value::Null;
    let mut stopped = false;
    for (event, data) in sse_events(body) {
        let v = parse(&data);
        assert_eq!(v["type"], event.as_str(), "event name and payload type agree");
        match event.as_str() {
            "content_block_start" => {
                assert_eq!(v["index"], blocks.len(), "blocks are numbered in order");
                let block = &v["content_block"];
                let kind = block["type"].as_str().expect("type").to_owned();
                let initial = block["data"].as_str().unwrap_or_default().to_owned();
                blocks.push((kind, initial));
            }
            "content_block_delta" => {
                let i = v["index"].as_u64().expect("index") as usize;
                let d = &v["delta"];
                let piece = d["text"]
                    .as_str()
                    .or(d["thinking"].as_str())
                    .or(d["partial_json"].as_str())
                    .or(d["signature"].as_str().map(|_| ""))
                    .expect("a known delta");
                blocks[i].1.push_str(piece);
            }
            "message_delta" => {
                stop = v["delta"]["stop_reason"].as_str().map(str::to_owned);
                usage = v["usage"].clone();
            }
            "message_stop" => stopped = true,
            _ => {}
        }
    }
    (blocks, stop, usage, stopped)
}

#[test]
fn anthropic_scripts_reassemble_to_what_was_scripted() {
    let text = "Hello, wörld! Let me check a few things for you. 🎉";
    let (blocks, stop, usage, stopped) = replay_anthropic(&script::anthropic_text(text));
    assert_eq!(blocks, vec![("text".to_owned(), text.to_owned())]);
    assert_eq!((stop.as_deref(), stopped), (Some("end_turn"), true));
    assert!(usage["output_tokens"].as_u64().is_some_and(|n| n > 0));

    let input = r#"{"command": "ls -la", "timeout_ms": 5000}"#;
    let body = script::anthropic_text_and_tool_uses(
        "Checking.",
        &[
            ("toolu_01", "bash", input),
            ("toolu_02", "read_file", r#"{"path":"a.txt"}"#),
        ],
    );
    let (blocks, stop, _, _) = replay_anthropic(&body);
    assert_eq!(blocks.len(), 3);
    assert_eq!(blocks[1], ("tool_use".to_owned(), input.to_owned()));
    assert_eq!(parse(&blocks[2].1), json!({"path": "a.txt"}));
    assert_eq!(stop.as_deref(), Some("tool_use"));
    let events = sse_events(&body);
    let tool_start = events
        .iter()
        .find(|(e, d)| e == "content_block_start" && d.contains("toolu_01"))
        .expect("tool start");
    assert_eq!(parse(&tool_start.1)["content_block"]["name"], "bash");
    let fragments = events
        .iter()
        .filter(|(_, d)| d.contains("input_json_delta") && d.contains("\"index\":1"))
        .count();
    assert!(
        fragments >= 5,
        "tool input arrives in several fragments, got {fragments}"
    );

    let (blocks, _, _, _) = replay_anthropic(&script::anthropic_thinking("Think first.", "c2lnbmF0dXJl", "Answer."));
    assert_eq!(
        blocks,
        vec![
            ("thinking".to_owned(), "Think first.".to_owned()),
            ("text".to_owned(), "Answer.".to_owned())
        ]
    );
    let body = script::anthropic_thinking("Think first.", "c2lnbmF0dXJl", "Answer.");
    assert!(sse_events(&body)
        .iter()
        .any(|(_, d)| parse(d)["delta"]["signature"] == "c2lnbmF0dXJl"));
}

#[test]
fn anthropic_usage_and_errors_are_scripted() {
    let usage = Usage {
        input_tokens: 1200,
        output_tokens: 85,
        cache_read_tokens: 3400,
        cache_write_tokens: 7,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    };
    let body = script::AnthropicScript::new().text("hi").usage(usage).build();
    let events = sse_events(&body);
    let start = parse(&events[0].1);
    assert_eq!(start["message"]["usage"]["input_tokens"], 1200);
    assert_eq!(start["message"]["usage"]["cache_read_input_tokens"], 3400);
    assert_eq!(start["message"]["usage"]["cache_creation_input_tokens"], 7);
    let (_, _, final_usage, _) = replay_anthropic(&body);
    assert_eq!(final_usage["output_tokens"], 85);

    let overloaded = sse_events(&script::anthropic_overloaded_mid_stream());
    let names: Vec<&str> = overloaded.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names, ["message_start", "ping", "error"]);
    assert_eq!(parse(&overloaded[2].1)["error"]["type"], "overloaded_error");

    let partial = script::AnthropicScript::new()
        .text("partial answer")
        .error("api_error", "Internal server error")
        .build();
    let (blocks, stop, _, stopped) = replay_anthropic(&partial);
    assert_eq!(blocks, vec![("text".to_owned(), "partial answer".to_owned())]);
    assert_eq!((stop, stopped), (None, false));
    assert_eq!(sse_events(&partial).last().map(|(e, _)| e.as_str()), Some("error"));
}

/// Reassembles an OpenAI stream: content, reasoning, tool calls (id, name, arguments), finish
/// reason, usage and whether it ended with [DONE].
#[allow(clippy::type_complexity)]
fn replay_openai(
    body: &[u8],
) -> (
    String,
    String,
    Vec<(String, String, String)>,
    Option<String>,
    Value,
    bool,
) {
    let (mut content, mut reasoning) = (String::new(), String::new());
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let (mut finish, mut usage, mut done) = (None, Value::Null, false);
    for (event, data) in sse_events(body) {
        assert_eq!(event, "", "OpenAI sends no event: lines");
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let v = parse(&data);
        assert_eq!(v["object"], "chat.completion.chunk");
        if v["choices"].as_array().is_some_and(Vec::is_empty) {
            usage = v["usage"].clone();
            continue;
        }
        let choice = &v["choices"][0];
        if let Some(f) = choice["finish_reason"].as_str() {
            finish = Some(f.to_owned());
        }
        let d = &choice["delta"];
        content.push_str(d["content"].as_str().unwrap_or_default());
        reasoning.push_str(d["reasoning_content"].as_str().unwrap_or_default());
        for call in d["tool_calls"].as_array().into_iter().flatten() {
            let i = call["index"].as_u64().expect("index") as usize;
            if let Some(id) = call["id"].as_str() {
                assert_eq!(i, calls.len(), "a new call takes the next index");
                calls.push((
                    id.to_owned(),
                    call["function"]["name"].as_str().expect("name").to_owned(),
                    String::new(),
                ));
            }
            calls[i]
                .2
                .push_str(call["function"]["arguments"].as_str().unwrap_or_default());
        }
    }
    (content, reasoning, calls, finish, usage, done)
}

#[test]
fn openai_scripts_reassemble_to_what_was_scripted() {
    let text = "Sure — here is the answer, in a few words.";
    let (content, _, calls, finish, usage, done) = replay_openai(&script::openai_text(text));
    assert_eq!(content, text);
    assert!(calls.is_empty());
    assert_eq!((finish.as_deref(), done), (Some("stop"), true));
    assert!(usage["completion_tokens"].as_u64().is_some_and(|n| n > 0));

    let args = r#"{"city":"San Francisco","state":"CA"}"#;
    let body = script::openai_tool_calls(&[("call_1", "get_weather", args), ("call_2", "get_time", "{}")]);
    let (content, _, calls, finish, _, _) = replay_openai(&body);
    assert_eq!(content, "");
    assert_eq!(
        calls,
        vec![
            ("call_1".to_owned(), "get_weather".to_owned(), args.to_owned()),
            ("call_2".to_owned(), "get_time".to_owned(), "{}".to_owned())
        ]
    );
    assert_eq!(finish.as_deref(), Some("tool_calls"));

    let (content, reasoning, _, _, _, _) = replay_openai(&script::openai_reasoning("Weigh it up.", "Done."));
    assert_eq!((content.as_str(), reasoning.as_str()), ("Done.", "Weigh it up."));

    let usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: 50,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    };
    let (_, _, _, _, reported, _) = replay_openai(&script::OpenAiScript::new().text("x").usage(usage).build());
    assert_eq!(reported["prompt_tokens"], 150);
    assert_eq!(reported["prompt_tokens_details"]["cached_tokens"], 50);
    assert_eq!(reported["completion_tokens"], 20);
    assert_eq!(reported["total_tokens"], 170);
}

#[test]
fn benchmark_streams_have_exactly_n_deltas() {
    let n = 100_000;
    let anthropic = script::anthropic_text_deltas(n);
    let deltas = sse_events(&anthropic)
        .iter()
        .filter(|(e, _)| e == "content_block_delta")
        .count();
    assert_eq!(deltas, n);
    let openai = script::openai_text_deltas(n);
    let (content, ..) = replay_openai(&openai);
    assert_eq!(content, script::numbered_words(n).concat());
    let content_chunks = sse_events(&openai)
        .iter()
        .filter(|(_, d)| d.contains("\"delta\":{\"content\":"))
        .count();
    assert_eq!(content_chunks, n);
}

// ---------------------------------------------------------------------------------------------
// Control API and the binary.

#[tokio::test]
async fn control_push_names_what_is_wrong() {
    let server = MockServer::start().await;
    let client = reqwest::Client::new();
    let response = client
        .post(format!("{}/__mock/push", server.base_url()))
        .body(r#"{"sse": "data: x\n\n", "chunking": "every_other_byte"}"#)
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 400);
    let error: Value = json_of(response).await;
    assert!(
        error["error"]
            .as_str()
            .is_some_and(|m| m.contains("\"every_other_byte\"")),
        "{error}"
    );
    assert_eq!(server.pending(), 0);
    assert!(server.requests().is_empty(), "control requests are not recorded");
}

#[tokio::test]
async fn control_check_events_validates_against_the_schema() {
    let server = MockServer::start().await;
    let client = reqwest::Client::new();
    let check = |body: &'static str| {
        client
            .post(format!("{}/__mock/check-events", server.base_url()))
            .body(body)
            .send()
    };
    let good = check(r#"[{"type":"text_delta","index":0,"text":"Hi"},{"type":"compaction_start","tokens_before":3}]"#)
        .await
        .expect("send");
    assert_eq!(good.status(), 200);
    assert_eq!(json_of(good).await, json!({"checked": 2}));
    let bad =
        check(r#"[{"type":"text_delta","index":0,"text":"Hi"},{"type":"tool_input_delta","index":1,"text":"{"}]"#)
            .await
            .expect("send");
    assert_eq!(bad.status(), 422);
    let error = json_of(bad).await;
    let message = error["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("event 2 of the stream") && message.contains("\"partial_json\" is a required property"),
        "{error}"
    );
    let not_a_list = check(r#"{"type":"text_delta"}"#).await.expect("send");
    assert_eq!(not_a_list.status(), 400);
    assert!(server.requests().is_empty(), "control requests are not recorded");
}

#[tokio::test]
async fn the_binary_prints_its_port_and_serves_pushed_replies() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_panto-mock"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start panto-mock");
    let stdout = child.stdout.take().expect("stdout");
    let mut first = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut first)
        .expect("first line");
    let port: u16 = first
        .trim()
        .strip_prefix("PORT=")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("first line must be PORT=<n>, got {first:?}"));
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();

    let push = json!([
        {"builder": {"name": "anthropic_text", "args": {"text": "Hello from the binary"}}, "chunking": "every_byte"},
        {"fixture": "openai/text-basic.sse", "chunking": {"fixed": 37}},
    ]);
    let queued: Value = client
        .post(format!("{base}/__mock/push"))
        .body(push.to_string())
        .send()
        .await
        .expect("push")
        .bytes()
        .await
        .map(|b| parse(&String::from_utf8_lossy(&b)))
        .expect("json");
    assert_eq!(queued["queued"], 2);

    let body = client
        .post(format!("{base}/v1/messages"))
        .header("x-api-key", "k")
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(anthropic_body(hello()).to_string())
        .send()
        .await
        .expect("send")
        .bytes()
        .await
        .expect("body");
    assert_eq!(body, script::anthropic_text("Hello from the binary"));
    let body = client
        .post(format!("{base}/v1/chat/completions"))
        .header("authorization", "Bearer k")
        .header("content-type", "application/json")
        .body(openai_body(hello()).to_string())
        .send()
        .await
        .expect("send")
        .bytes()
        .await
        .expect("body");
    assert!(body == fixture_bytes("openai/text-basic.sse").expect("fixture"));

    let requests: Value = client
        .get(format!("{base}/__mock/requests"))
        .send()
        .await
        .expect("requests")
        .bytes()
        .await
        .map(|b| parse(&String::from_utf8_lossy(&b)))
        .expect("json");
    assert_eq!(requests.as_array().map(Vec::len), Some(2));
    assert_eq!(requests[0]["path"], "/v1/messages");
    assert_eq!(requests[0]["body"]["messages"][0]["content"], "Hello");
    assert_eq!(requests[0]["validation"], Value::Null);

    client.post(format!("{base}/__mock/reset")).send().await.expect("reset");
    let requests: Value = client
        .get(format!("{base}/__mock/requests"))
        .send()
        .await
        .expect("requests")
        .bytes()
        .await
        .map(|b| parse(&String::from_utf8_lossy(&b)))
        .expect("json");
    assert_eq!(requests, json!([]));

    // Closing stdin stops the server.
    drop(child.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "{status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("panto-mock did not exit after its stdin closed");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_binary_loads_a_script_file() {
    let dir = std::env::temp_dir().join(format!("panto-mock-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let script_path = dir.join("script.json");
    std::fs::write(
        &script_path,
        json!([{"json": {"error": {"message": "slow down", "type": "rate_limit_exceeded"}}, "status": 429,
                "headers": [["retry-after-ms", "10"]]}])
        .to_string(),
    )
    .expect("write script");
    let mut child = Command::new(env!("CARGO_BIN_EXE_panto-mock"))
        .arg("--script")
        .arg(&script_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start panto-mock");
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("first line");
    let port = first.trim().strip_prefix("PORT=").expect("PORT= line").to_owned();
    let response = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/v1/chat/completions"))
        .header("authorization", "Bearer k")
        .header("content-type", "application/json")
        .body(openai_body(hello()).to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after-ms"], "10");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);

    // A bad script is refused at start with a message naming the file and the problem.
    let bad = dir.with_extension("bad.json");
    std::fs::write(&bad, r#"[{"sse": "x"}, {"fixture": "anthropic/nope.sse"}]"#).expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_panto-mock"))
        .arg("--script")
        .arg(&bad)
        .stdin(Stdio::null())
        .output()
        .expect("run");
    let _ = std::fs::remove_file(&bad);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("reply [1]") && stderr.contains("anthropic/nope.sse"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// The prompt cache.

/// A Messages body whose system prompt (about 2,000 tokens) carries a breakpoint.
fn cached_body(question: &str) -> Value {
    json!({
        "model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": true,
        "system": [{"type": "text", "text": "Be precise. ".repeat(700), "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": question}],
    })
}

/// The usage of `message_start` and of `message_delta` in an Anthropic stream.
fn stream_usages(body: &[u8]) -> Vec<Value> {
    sse_events(body)
        .into_iter()
        .filter_map(|(_, data)| {
            let payload = parse(&data);
            match payload["type"].as_str() {
                Some("message_start") => Some(payload["message"]["usage"].clone()),
                Some("message_delta") => Some(payload["usage"].clone()),
                _ => None,
            }
        })
        .collect()
}

#[tokio::test]
async fn the_prompt_cache_is_turned_on_over_http_and_bills_as_the_api_does() {
    let server = MockServer::start().await;
    let client = reqwest::Client::new();
    let control = |body: Value| {
        client
            .post(format!("{}/__mock/prompt-cache", server.base_url()))
            .body(body.to_string())
            .send()
    };
    let on = control(json!({"enabled": true})).await.expect("control");
    assert_eq!(json_of(on).await, json!({"enabled": true}));
    for _ in 0..3 {
        server.push(Reply::sse(script::anthropic_text("Sure.")));
    }
    let first = anthropic_post(&server, &cached_body("One?"))
        .send()
        .await
        .expect("send");
    let first = first.bytes().await.expect("body");
    let written = stream_usages(&first);
    assert_eq!(written.len(), 2, "{written:?}");
    for usage in &written {
        assert_eq!(usage["cache_read_input_tokens"], 0, "{usage}");
        assert!(usage["cache_creation_input_tokens"].as_u64().unwrap() > 1024, "{usage}");
        assert_eq!(
            usage["cache_creation"]["ephemeral_5m_input_tokens"],
            usage["cache_creation_input_tokens"]
        );
    }
    let second = anthropic_post(&server, &cached_body("Two?"))
        .send()
        .await
        .expect("send");
    let read = stream_usages(&second.bytes().await.expect("body"));
    assert_eq!(
        read[1]["cache_read_input_tokens"],
        written[1]["cache_creation_input_tokens"]
    );
    assert_eq!(read[1]["cache_creation_input_tokens"], 0);
    // Six minutes later the five-minute entry is gone.
    control(json!({"advance_secs": 360})).await.expect("control");
    let third = anthropic_post(&server, &cached_body("Three?"))
        .send()
        .await
        .expect("send");
    let expired = stream_usages(&third.bytes().await.expect("body"));
    assert_eq!(expired[1]["cache_read_input_tokens"], 0, "{:?}", expired);
    let recorded = server.requests();
    assert_eq!(
        recorded[1].cache.unwrap().cache_read_input_tokens,
        read[1]["cache_read_input_tokens"].as_u64().unwrap()
    );
    let bad = control(json!({"on": 1})).await.expect("control");
    assert_eq!(bad.status(), 400);
}

#[tokio::test]
async fn more_than_four_breakpoints_are_refused_naming_them() {
    let server = MockServer::start().await;
    let marked = |text: &str| json!({"type": "text", "text": text, "cache_control": {"type": "ephemeral"}});
    let content: Vec<Value> = ["a", "b", "c", "d", "e"].iter().map(|t| marked(t)).collect();
    let body = anthropic_body(json!([{"role": "user", "content": content}]));
    let response = anthropic_post(&server, &body).send().await.expect("send");
    assert_eq!(response.status(), 400);
    let error = json_of(response).await;
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("A maximum of 4 blocks with cache_control may be provided. Found 5")
            && message.contains("messages.0.content.4"),
        "{message}"
    );
}
