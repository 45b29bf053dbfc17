//! Servers that attack panto rather than fail: a `tools/list` that pages forever, a flood of
//! `list_changed`, a server that exits while a child it started holds its stdout. Each is a
//! small bash script speaking JSON-RPC over stdio, so it can do what no well-behaved SDK server
//! does.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use panto_core::ToolSource;
use panto_mcp::{Error, McpSource, ServerConfig, MAX_LISTED_TOOLS, MAX_LIST_PAGES};
use serde_json::json;

use crate::support::*;

/// The hostile server. `$1` is the mode, `$2` a directory for its traces: `lists` gets a line
/// per `tools/list` request, `sleep-pids` the pid of each `sleep` it leaves behind.
///
/// Modes: `pages` answers every `tools/list` with one tool and a new `nextCursor`, forever;
/// `pages-later` lists tool `change` once, then pages forever, and `change` announces
/// `list_changed`; `flood` lists tool `flood`, which writes 200,000 `list_changed` before its
/// answer; `orphan` starts `sleep 1000` on its own stdout, lists tool `quit`, and exits
/// without answering the first `quit` of its directory (later ones answer `ok`);
/// `orphan-at-start` starts that `sleep` and exits before reading anything; `many` lists 10,001
/// tools in one page; `bytes` lists three pages of one tool with a 9 MiB description each (27 MiB in all).
const SCRIPT: &str = r#"
mode=$1; dir=$2
if [ "$mode" = orphan ] || [ "$mode" = orphan-at-start ]; then
    sleep 1000 &
    echo $! >> "$dir/sleep-pids"
fi
[ "$mode" = orphan-at-start ] && exit 1
reply() { printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$1" "$2"; }
tool() { printf '{"name":"%s","inputSchema":{"type":"object"}}' "$1"; }
while IFS= read -r line; do
    id=
    [[ $line =~ \"id\":([0-9]+) ]] && id=${BASH_REMATCH[1]}
    case $line in
    *'"method":"initialize"'*)
        [[ $line =~ \"protocolVersion\":\"([^\"]+)\" ]]
        reply "$id" "{\"protocolVersion\":\"${BASH_REMATCH[1]}\",\"capabilities\":{\"tools\":{\"listChanged\":true}},\"serverInfo\":{\"name\":\"hostile\",\"version\":\"1\"}}"
        ;;
    *'"method":"tools/list"'*)
        echo "$line" >> "$dir/lists"
        n=$(wc -l < "$dir/lists")
        case $mode in
        pages) reply "$id" "{\"tools\":[$(tool "t$n")],\"nextCursor\":\"c$n\"}" ;;
        pages-later)
            if [ "$n" = 1 ]; then reply "$id" "{\"tools\":[$(tool change)]}"
            else reply "$id" "{\"tools\":[$(tool "t$n")],\"nextCursor\":\"c$n\"}"; fi ;;
        flood) reply "$id" "{\"tools\":[$(tool flood)]}" ;;
        many)
            tools=$(for i in $(seq 1 10001); do printf '%s,' "$(tool "t$i")"; done)
            reply "$id" "{\"tools\":[${tools%,}]}" ;;
        bytes)
            big=$(head -c 9437184 /dev/zero | tr '\0' x)
            reply "$id" "{\"tools\":[{\"name\":\"t$n\",\"description\":\"$big\",\"inputSchema\":{\"type\":\"object\"}}]$([ "$n" -lt 3 ] && echo ",\"nextCursor\":\"c$n\"")}" ;;
        orphan) reply "$id" "{\"tools\":[$(tool quit)]}" ;;
        esac
        ;;
    *'"method":"tools/call"'*)
        case $mode in
        pages-later)
            printf '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n' ;;
        flood)
            yes '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}' | head -n 200000 ;;
        orphan)
            if [ ! -e "$dir/quit" ]; then touch "$dir/quit"; exit 0; fi ;;
        esac
        reply "$id" '{"content":[{"type":"text","text":"ok"}]}'
        ;;
    *'"id":'*)
        printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"not here"}}\n' "$id"
        ;;
    esac
done
"#;

/// The hostile server in `mode`, tracing into `dir`.
fn hostile(dir: &Path, mode: &str) -> ServerConfig {
    let script = dir.join("server.sh");
    std::fs::write(&script, SCRIPT).unwrap();
    ServerConfig::stdio("bash").args([
        script.to_string_lossy().into_owned(),
        mode.to_owned(),
        dir.to_string_lossy().into_owned(),
    ])
}

/// How many `tools/list` requests the server in `dir` received.
fn lists(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("lists"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// Waits until the count of `tools/list` requests has not moved for a second, and returns it;
/// after 20 s, returns the count as it is (a listing without bound is still growing then, and
/// the caller's comparison fails).
async fn settled_lists(dir: &Path) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = lists(dir);
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = lists(dir);
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

#[tokio::test]
async fn a_listing_that_pages_forever_stops_at_the_page_limit_and_the_start_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let error = McpSource::start("pager", hostile(dir.path(), "pages").startup_timeout_secs(120))
        .await
        .expect_err("a listing without end is refused");
    assert!(matches!(error, Error::Start { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("MCP server `pager`"), "{message}");
    assert!(message.contains(&format!("after {MAX_LIST_PAGES} pages")), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(settled_lists(dir.path()).await, MAX_LIST_PAGES, "pages requested");
}

#[tokio::test]
async fn a_listing_past_the_tool_limit_fails_the_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let error = McpSource::start("crowd", hostile(dir.path(), "many"))
        .await
        .expect_err("10,001 tools are refused");
    let message = error.to_string();
    assert!(message.contains("MCP server `crowd` failed to start"), "{message}");
    assert!(
        message.contains(&format!("more than {MAX_LISTED_TOOLS} tools")),
        "{message}"
    );
}

#[tokio::test]
async fn a_listing_past_the_byte_limit_stops_and_fails_the_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let error = McpSource::start("verbose", hostile(dir.path(), "bytes"))
        .await
        .expect_err("27 MiB of tool definitions are refused");
    let message = error.to_string();
    assert!(message.contains("MCP server `verbose` failed to start"), "{message}");
    assert!(message.contains("exceed 16 MiB"), "{message}");
    assert_eq!(
        settled_lists(dir.path()).await,
        2,
        "the listing stops at the page that crossed the limit"
    );
}

#[tokio::test]
async fn a_relisting_that_pages_forever_stops_at_the_limit_and_keeps_the_previous_list() {
    let dir = tempfile::tempdir().unwrap();
    let source = start("pager", hostile(dir.path(), "pages-later")).await;
    assert_eq!(text(&call(&source, "change", json!({})).await), "ok");
    assert_eq!(settled_lists(dir.path()).await, 1 + MAX_LIST_PAGES, "pages requested");
    let names: Vec<String> = source.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["change"], "the previous list stays");
    assert_eq!(
        text(&call(&source, "change", json!({})).await),
        "ok",
        "the server still works"
    );
}

#[tokio::test]
async fn a_flood_of_list_changed_during_a_call_costs_one_or_two_relistings() {
    let dir = tempfile::tempdir().unwrap();
    let source = start("flooder", hostile(dir.path(), "flood").tool_timeout_secs(120)).await;
    let result = call(&source, "flood", json!({})).await;
    assert!(!result.is_error, "{}", text(&result));
    let relistings = settled_lists(dir.path()).await - 1;
    assert!(
        (1..=3).contains(&relistings),
        "200,000 announcements coalesce into a pending re-listing, got {relistings} re-listings"
    );
}

/// Reads the pids of the `sleep`s the orphan server in `dir` left behind.
fn sleep_pids(dir: &Path) -> Vec<i32> {
    pids(&dir.join("sleep-pids"))
}

#[tokio::test]
async fn a_server_that_exits_while_its_child_holds_stdout_is_restarted_and_the_child_killed() {
    let dir = tempfile::tempdir().unwrap();
    let dir: PathBuf = dir.keep();
    let source = start("leaver", hostile(&dir, "orphan").tool_timeout_secs(60)).await;
    let first_sleep = sleep_pids(&dir)[0];
    assert!(exists(first_sleep));

    let started = Instant::now();
    let quit = call(&source, "quit", json!({})).await;
    assert!(quit.is_error, "{}", text(&quit));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the exit is noticed, not waited out to the 60 s tool timeout: {:?}",
        started.elapsed()
    );
    let message = text(&quit);
    assert!(
        message.contains("MCP server `leaver` stopped during the call of `quit`"),
        "{message}"
    );
    assert!(
        eventually_async(|| !exists(first_sleep)).await,
        "the child of the exited server was killed with its process group"
    );

    let again = call(&source, "quit", json!({})).await;
    assert!(!again.is_error, "{}", text(&again));
    assert_eq!(text(&again), "ok");
    let sleeps = sleep_pids(&dir);
    assert_eq!(sleeps.len(), 2, "restarted once: {sleeps:?}");
    assert!(exists(sleeps[1]));
    drop(source);
    assert!(
        eventually_async(|| !exists(sleeps[1])).await,
        "dropping the source kills the restarted server's child"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_server_that_exits_at_start_while_its_child_holds_stdout_fails_at_once_and_the_child_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let error = McpSource::start(
        "quitter",
        hostile(dir.path(), "orphan-at-start").startup_timeout_secs(60),
    )
    .await
    .expect_err("the server exited");
    let message = error.to_string();
    assert!(
        message.contains("MCP server `quitter` failed to start: it exited during the MCP initialization"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not waited out to the 60 s startup timeout: {:?}",
        started.elapsed()
    );
    let sleep = sleep_pids(dir.path())[0];
    assert!(
        eventually_async(|| !exists(sleep)).await,
        "the child it left holding its stdout was killed with its group"
    );
}

/// A streamable HTTP MCP server whose `tools/list` pages forever (plain JSON responses, one
/// request per connection). Returns its URL and the count of `tools/list` requests it answered.
async fn paging_http_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let lists = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = lists.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let lists = counter.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head_end, length) = loop {
                    let Ok(n) = stream.read(&mut chunk).await else { return };
                    if n == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                    if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (end + 4, length);
                    }
                };
                while buffer.len() < head_end + length {
                    let Ok(n) = stream.read(&mut chunk).await else { return };
                    if n == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                }
                let (status, body) = if !buffer.starts_with(b"POST") {
                    ("405 Method Not Allowed", String::new())
                } else {
                    let request: serde_json::Value =
                        serde_json::from_slice(&buffer[head_end..head_end + length]).unwrap_or_default();
                    let id = request["id"].clone();
                    let result = match request["method"].as_str().unwrap_or_default() {
                        _ if id.is_null() => None,
                        "initialize" => Some(json!({
                            "protocolVersion": request["params"]["protocolVersion"],
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "hostile-http", "version": "1"},
                        })),
                        "tools/list" => {
                            let n = lists.fetch_add(1, Ordering::SeqCst) + 1;
                            Some(json!({
                                "tools": [{"name": format!("t{n}"), "inputSchema": {"type": "object"}}],
                                "nextCursor": format!("c{n}"),
                            }))
                        }
                        _ => Some(json!({})),
                    };
                    match result {
                        Some(result) => (
                            "200 OK",
                            json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
                        ),
                        None => ("202 Accepted", String::new()),
                    }
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: \
                     close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (url, lists)
}

#[tokio::test]
async fn an_http_listing_that_pages_forever_stops_at_the_page_limit_and_the_start_fails_naming_it() {
    let (url, lists) = paging_http_server().await;
    let started = Instant::now();
    let error = McpSource::start("web-pager", ServerConfig::http(url).startup_timeout_secs(120))
        .await
        .expect_err("a listing without end is refused");
    let message = error.to_string();
    assert!(message.contains("MCP server `web-pager`"), "{message}");
    assert!(message.contains(&format!("after {MAX_LIST_PAGES} pages")), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        lists.load(std::sync::atomic::Ordering::SeqCst),
        MAX_LIST_PAGES,
        "pages requested"
    );
}
