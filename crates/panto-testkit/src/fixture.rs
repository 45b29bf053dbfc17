//! Reading the recorded wire fixtures under `fixtures/wire/`.

use std::path::{Component, Path, PathBuf};

use crate::Error;

use crate::reply::Reply;

/// The directory of the recorded wire fixtures (`crates/panto-testkit/fixtures/wire`), found from
/// where this crate was built.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join("wire")
}

/// The bytes of a fixture, e.g. `fixture_bytes("openai/tool-call.sse")`, unmodified.
///
/// The path is relative to [`fixtures_dir`]; absolute paths and `..` are refused so that a path
/// taken from a control request cannot read other files.
pub fn fixture_bytes(path: &str) -> Result<Vec<u8>, Error> {
    read(&fixtures_dir(), path)
}

/// Joins `rel` onto `dir` after checking that it stays inside.
fn resolve(dir: &Path, rel: &str) -> Result<PathBuf, Error> {
    let candidate = Path::new(rel);
    let stays_inside = !rel.is_empty() && candidate.components().all(|c| matches!(c, Component::Normal(_)));
    if !stays_inside {
        return Err(Error::Fixture(format!(
            "fixture path {rel:?} must be relative to the fixtures directory, without `..`"
        )));
    }
    Ok(dir.join(candidate))
}

fn read(dir: &Path, rel: &str) -> Result<Vec<u8>, Error> {
    let path = resolve(dir, rel)?;
    std::fs::read(&path).map_err(|e| Error::Fixture(format!("cannot read fixture {}: {e}", path.display())))
}

/// Builds the reply for a fixture: `.sse` as a 200 stream, `.json` as a response whose status and
/// headers come from the recorded metadata beside it.
pub(crate) fn load_reply(dir: &Path, rel: &str) -> Result<Reply, Error> {
    let body = read(dir, rel)?;
    if rel.ends_with(".sse") {
        return Ok(Reply::sse(body));
    }
    let Some(stem) = rel.strip_suffix(".json") else {
        return Err(Error::Fixture(format!(
            "fixture {rel:?}: only .sse streams and .json bodies can be served"
        )));
    };
    let (status, headers) = match (
        read(dir, &format!("{stem}.meta.json")),
        read(dir, &format!("{stem}.headers.txt")),
    ) {
        (Ok(meta), _) => parse_meta(&meta).map_err(|m| Error::Fixture(format!("fixture {stem}.meta.json: {m}")))?,
        (_, Ok(dump)) => {
            parse_header_dump(&dump).map_err(|m| Error::Fixture(format!("fixture {stem}.headers.txt: {m}")))?
        }
        _ => (status_from_name(stem).unwrap_or(200), Vec::new()),
    };
    let mut reply = Reply::raw(status, body).header("content-type", "application/json");
    for (name, value) in headers {
        if !is_framing_header(&name) {
            reply = reply.header(&name, &value);
        }
    }
    Ok(reply)
}

/// Headers describing the recorded connection rather than the response; the mock computes its own.
fn is_framing_header(name: &str) -> bool {
    ["content-length", "connection", "transfer-encoding", "keep-alive"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

/// `{"status": 429, "headers": {"name": "value", ...}}`.
fn parse_meta(bytes: &[u8]) -> Result<(u16, Vec<(String, String)>), String> {
    let meta: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let status = meta
        .get("status")
        .and_then(serde_json::Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .ok_or("`status` must be an HTTP status number")?;
    let mut headers = Vec::new();
    if let Some(map) = meta.get("headers").and_then(serde_json::Value::as_object) {
        for (name, value) in map {
            let value = value.as_str().ok_or(format!("header {name} must be a string"))?;
            headers.push((name.clone(), value.to_owned()));
        }
    }
    Ok((status, headers))
}

/// A raw response head: `HTTP/1.1 429 Too Many Requests` then `name: value` lines.
fn parse_header_dump(bytes: &[u8]) -> Result<(u16, Vec<(String, String)>), String> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or("the first line must be a status line such as `HTTP/1.1 429 Too Many Requests`")?;
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Ok((status, headers))
}

/// The status in a name like `error-429-rate-limit` or `chat-error-400-context`.
fn status_from_name(stem: &str) -> Option<u16> {
    let name = stem.rsplit('/').next()?;
    let at = name.find("error-")? + "error-".len();
    let digits = name.get(at..at + 3)?;
    digits.parse::<u16>().ok().filter(|s| (100..=599).contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_comes_from_the_name_when_there_is_no_metadata() {
        assert_eq!(status_from_name("anthropic/error-529-overloaded"), Some(529));
        assert_eq!(status_from_name("litellm/chat-error-400-context"), Some(400));
        assert_eq!(status_from_name("litellm/messages-mock-response-NOT-streamed"), None);
    }

    #[test]
    fn paths_cannot_escape_the_fixture_directory() {
        for bad in ["../Cargo.toml", "/etc/passwd", "anthropic/../../x", ""] {
            let err = fixture_bytes(bad).expect_err(bad).to_string();
            assert!(err.contains("relative"), "{bad}: {err}");
        }
    }

    #[test]
    fn header_dump_gives_status_and_headers() {
        let (status, headers) = parse_header_dump(b"HTTP/1.1 429 Too Many Requests\r\nx-a: 1\r\n\r\n").expect("dump");
        assert_eq!(status, 429);
        assert_eq!(headers, vec![("x-a".to_owned(), "1".to_owned())]);
    }
}
