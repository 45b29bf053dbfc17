//! Replies described as JSON, as the `panto-mock` binary takes them (`POST /__mock/push` and
//! `--script FILE.json`).
//!
//! A reply is an object with exactly one body key and optional modifiers:
//!
//! ```json
//! {"status": 200,
//!  "headers": [["retry-after", "0"]],
//!  "fixture": "anthropic/text-basic.sse",
//!  "chunking": "every_byte",
//!  "crlf": false, "delay_ms": 0, "first_delay_ms": 0, "stall_after": 10, "close_after": 10, "end_after": 10}
//! ```
//!
//! Body keys: `fixture` (a path under the fixtures directory, see
//! [`Reply::fixture`](crate::Reply::fixture)), `sse` (a string sent as an SSE stream), `json`
//! (any JSON value sent as `application/json`), `body` (a string sent as is, with
//! `Content-Length`), `builder` (`{"name": …, "args": {…}}`, see
//! [`script::build_named`](crate::script::build_named)) or `"hang": true`
//! ([`Reply::hang`](crate::Reply::hang)). `status` defaults to what the body implies (200, or the
//! recorded status of an error fixture). `headers` is a list of `[name, value]` pairs or an
//! object. `chunking` is `"whole"`, `"every_byte"`, `{"fixed": n}` / `"fixed:n"` or
//! `{"split_at": n}` / `"split_at:n"`. Unknown keys are errors, so that a misspelt modifier
//! cannot be silently ignored.

use std::path::Path;
use std::time::Duration;

use crate::Error;
use serde_json::{Map, Value};

use crate::reply::{Chunking, Reply};

const KEYS: &[&str] = &[
    "status",
    "headers",
    "fixture",
    "sse",
    "json",
    "body",
    "builder",
    "hang",
    "chunking",
    "crlf",
    "delay_ms",
    "first_delay_ms",
    "stall_after",
    "close_after",
    "end_after",
];

const BODY_KEYS: &[&str] = &["fixture", "sse", "json", "body", "builder", "hang"];

/// One reply, or an array of replies, from JSON. Fixture paths are resolved under
/// `fixtures_dir`. Errors name the reply (by position in an array) and the key.
pub fn replies_from_json(value: &Value, fixtures_dir: &Path) -> Result<Vec<Reply>, Error> {
    match value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| reply_from_json(item, fixtures_dir).map_err(|e| Error::Spec(format!("reply [{i}]: {e}"))))
            .collect(),
        other => reply_from_json(other, fixtures_dir).map(|r| vec![r]),
    }
}

/// One reply from JSON (see the [module documentation](self)).
pub fn reply_from_json(value: &Value, fixtures_dir: &Path) -> Result<Reply, Error> {
    let obj = value
        .as_object()
        .ok_or_else(|| bad(format!("a reply must be a JSON object, got {value}")))?;
    if let Some(unknown) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(bad(format!("unknown key {unknown:?} (known: {})", KEYS.join(", "))));
    }
    let bodies: Vec<&str> = BODY_KEYS.iter().copied().filter(|k| obj.contains_key(*k)).collect();
    let mut reply = match bodies.as_slice() {
        [key] => body(obj, key, fixtures_dir)?,
        [] => return Err(bad(format!("a reply needs one of {}", BODY_KEYS.join(", ")))),
        several => return Err(bad(format!("a reply takes one body key, got {}", several.join(", ")))),
    };
    if let Some(status) = obj.get("status") {
        let status = status
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .ok_or_else(|| bad(format!("status must be an HTTP status number, got {status}")))?;
        reply = reply.status(status);
    }
    match obj.get("headers") {
        None => {}
        Some(Value::Array(pairs)) => {
            for pair in pairs {
                match pair.as_array().map(Vec::as_slice) {
                    Some([Value::String(n), Value::String(v)]) => reply = reply.header(n, v),
                    _ => {
                        return Err(bad(format!(
                            "headers entries must be [name, value] strings, got {pair}"
                        )))
                    }
                }
            }
        }
        Some(Value::Object(map)) => {
            for (n, v) in map {
                let v = v.as_str().ok_or_else(|| bad(format!("header {n} must be a string")))?;
                reply = reply.header(n, v);
            }
        }
        Some(other) => {
            return Err(bad(format!(
                "headers must be a list of pairs or an object, got {other}"
            )))
        }
    }
    if let Some(chunking) = obj.get("chunking") {
        reply = reply.chunking(parse_chunking(chunking)?);
    }
    if flag(obj, "crlf")? {
        reply = reply.crlf();
    }
    if let Some(ms) = count(obj, "delay_ms")? {
        reply = reply.delay(Duration::from_millis(ms as u64));
    }
    if let Some(ms) = count(obj, "first_delay_ms")? {
        reply = reply.first_delay(Duration::from_millis(ms as u64));
    }
    let cuts: Vec<&str> = ["stall_after", "close_after", "end_after"]
        .into_iter()
        .filter(|k| obj.contains_key(*k))
        .collect();
    if cuts.len() > 1 {
        return Err(bad(format!("use at most one of {}", cuts.join(", "))));
    }
    if let Some(n) = count(obj, "stall_after")? {
        reply = reply.stall_after(n);
    }
    if let Some(n) = count(obj, "close_after")? {
        reply = reply.close_after(n);
    }
    if let Some(n) = count(obj, "end_after")? {
        reply = reply.end_after(n);
    }
    reply.check().map_err(bad)?;
    Ok(reply)
}

fn body(obj: &Map<String, Value>, key: &str, fixtures_dir: &Path) -> Result<Reply, Error> {
    let value = &obj[key];
    let text = || value.as_str().ok_or_else(|| bad(format!("{key} must be a string")));
    match key {
        "fixture" => crate::fixture::load_reply(fixtures_dir, text()?),
        "sse" => Ok(Reply::sse(text()?)),
        "json" => Ok(Reply::json(200, value)),
        "body" => Ok(Reply::raw(200, text()?)),
        "builder" => {
            let name = value
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("builder.name must be a string".to_owned()))?;
            let args = value.get("args").unwrap_or(&Value::Null);
            Ok(Reply::sse(crate::script::build_named(name, args)?))
        }
        _ => match value {
            Value::Bool(true) => Ok(Reply::hang()),
            _ => Err(bad("hang must be true".to_owned())),
        },
    }
}

fn parse_chunking(value: &Value) -> Result<Chunking, Error> {
    let with_number = |kind: &str, n: &Value| -> Result<Chunking, Error> {
        let n = n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| bad(format!("chunking {kind} needs a byte count, got {n}")))?;
        Ok(if kind == "fixed" {
            Chunking::Fixed(n)
        } else {
            Chunking::SplitAt(n)
        })
    };
    match value {
        Value::String(s) => match s.as_str() {
            "whole" => Ok(Chunking::Whole),
            "every_byte" => Ok(Chunking::EveryByte),
            other => match other.split_once(':') {
                Some((kind @ ("fixed" | "split_at"), n)) => {
                    let n: u64 = n
                        .trim()
                        .parse()
                        .map_err(|_| bad(format!("chunking {other:?}: {n:?} is not a byte count")))?;
                    with_number(kind, &Value::from(n))
                }
                _ => Err(bad(format!(
                    "chunking {other:?} is not whole, every_byte, fixed:N or split_at:N"
                ))),
            },
        },
        Value::Object(map) if map.len() == 1 => match map.iter().next().map(|(k, n)| (k.as_str(), n)) {
            Some((kind @ ("fixed" | "split_at"), n)) => with_number(kind, n),
            _ => Err(bad(format!(
                "chunking {value} is not {{\"fixed\": n}} or {{\"split_at\": n}}"
            ))),
        },
        other => Err(bad(format!("chunking {other} is not a string or a one-key object"))),
    }
}

fn flag(obj: &Map<String, Value>, key: &str) -> Result<bool, Error> {
    match obj.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(bad(format!("{key} must be true or false, got {other}"))),
    }
}

fn count(obj: &Map<String, Value>, key: &str) -> Result<Option<usize>, Error> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| bad(format!("{key} must be a non-negative integer, got {v}"))),
    }
}

fn bad(message: String) -> Error {
    Error::Spec(message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::reply::Cut;

    fn parse(v: Value) -> Result<Reply, Error> {
        reply_from_json(&v, &crate::fixtures_dir())
    }

    #[test]
    fn modifiers_are_applied() {
        let r = parse(json!({"sse": "data: x\n\n", "status": 201, "headers": [["x-a", "1"]],
            "chunking": "fixed:3", "crlf": true, "delay_ms": 5, "first_delay_ms": 300, "close_after": 4}))
        .expect("valid");
        assert_eq!(r.status, 201);
        assert_eq!(r.chunking, Chunking::Fixed(3));
        assert!(r.crlf);
        assert_eq!(r.delay, Duration::from_millis(5));
        assert_eq!(r.delay_before(0), Duration::from_millis(300));
        assert_eq!(r.delay_before(1), Duration::from_millis(5));
        assert_eq!(r.cut, Cut::Close(4));
        assert!(r.headers.contains(&("x-a".to_owned(), "1".to_owned())));
        let r = parse(json!({"json": {"a": 1}, "chunking": {"split_at": 2}})).expect("valid");
        assert_eq!((r.status, r.chunking), (200, Chunking::SplitAt(2)));
    }

    #[test]
    fn error_fixture_takes_its_recorded_status_and_headers() {
        let r = parse(json!({"fixture": "anthropic/error-429-rate-limit.json"})).expect("fixture");
        assert_eq!(r.status, 429);
        assert!(r.headers.iter().any(|(n, v)| n == "x-should-retry" && v == "true"));
        assert!(!r.headers.iter().any(|(n, _)| n == "content-length"));
    }

    #[test]
    fn mistakes_are_named() {
        let cases = [
            (json!({"sse": "x", "chunkng": "whole"}), "unknown key \"chunkng\""),
            (json!({"sse": "x", "json": {}}), "one body key, got sse, json"),
            (json!({"status": 200}), "a reply needs one of"),
            (json!({"sse": "x", "chunking": "fixed:abc"}), "is not a byte count"),
            (json!({"fixture": "nope/missing.sse"}), "cannot read fixture"),
            (
                json!({"builder": {"name": "anthropic_txt"}}),
                "unknown builder \"anthropic_txt\"",
            ),
            (
                json!({"builder": {"name": "anthropic_text", "args": {}}}),
                "args.text is required",
            ),
            (
                json!({"builder": {"name": "openai_text", "args": {"text": "a", "x": 1}}}),
                "unknown argument \"x\"",
            ),
            (
                json!({"sse": "x", "headers": [["bad name", "v"]]}),
                "not a valid HTTP header name",
            ),
            (json!({"sse": "x", "stall_after": 1, "end_after": 2}), "at most one of"),
        ];
        for (spec, expected) in cases {
            let err = parse(spec.clone()).expect_err(&spec.to_string()).to_string();
            assert!(err.contains(expected), "{spec}: got {err:?}, want {expected:?}");
        }
    }

    #[test]
    fn arrays_name_the_failing_entry() {
        let err = replies_from_json(&json!([{"sse": "x"}, {"nope": 1}]), &crate::fixtures_dir())
            .expect_err("second is bad")
            .to_string();
        assert!(err.contains("reply [1]"), "{err}");
    }
}
