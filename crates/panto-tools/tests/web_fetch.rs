//! `web_fetch` against a loopback test server, and its address decision with a resolver stub.
//! Nothing here connects anywhere but 127.0.0.1: refusals of other addresses are checked
//! through the decision itself.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use panto_tools::policy::{rule_subjects, Rule};
use panto_tools::web::{checked_addresses, Resolver};
use panto_tools::{Approval, Options, ToolName};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{call, tool};

/// A resolver that knows only the names it was given.
#[derive(Debug, Default)]
struct Stub(HashMap<String, Vec<IpAddr>>);

impl Stub {
    fn with(pairs: &[(&str, &str)]) -> Arc<Stub> {
        let mut map: HashMap<String, Vec<IpAddr>> = HashMap::new();
        for (name, ip) in pairs {
            map.entry((*name).to_owned()).or_default().push(ip.parse().unwrap());
        }
        Arc::new(Stub(map))
    }
}

#[async_trait]
impl Resolver for Stub {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        self.0
            .get(host)
            .cloned()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, format!("no such name {host}")))
    }
}

/// A tiny HTTP/1.1 server on 127.0.0.1: answers each request with what `route` gives for its
/// path (the whole response, head and body), and records each request's head.
struct Server {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Server {
    async fn start(route: impl Fn(&str, u16) -> Vec<u8> + Send + Sync + 'static) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let recorded = heads.clone();
        let route = Arc::new(route);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let recorded = recorded.clone();
                let route = route.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    recorded.lock().unwrap().push(head);
                    let _ = stream.write_all(&route(&path, port)).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Server { port, heads }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn requests(&self) -> usize {
        self.heads.lock().unwrap().len()
    }
}

fn response(status: &str, content_type: &str, extra: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn redirect(to: &str) -> Vec<u8> {
    response("302 Found", "text/plain", &format!("Location: {to}\r\n"), b"")
}

const PAGE: &str = "<!doctype html><html><head><title>T</title><script>steal()</script></head><body>\
    <nav>Home | Docs</nav><main><h1>Hello</h1><p>A <a href=\"/x\">link</a>.</p></main>\
    <footer>Copyright</footer></body></html>";

/// The routes most tests use: a page, JSON, a PNG, a long text, and `/r/N`, which redirects N
/// times before it lands on the page.
async fn server() -> Server {
    Server::start(|path, _| match path {
        "/" => response("200 OK", "text/html; charset=utf-8", "", PAGE.as_bytes()),
        "/data.json" => response("200 OK", "application/json", "", br#"{"ok": true, "n": [1, 2]}"#),
        "/image.png" => response("200 OK", "image/png", "", &[0x89, b'P', b'N', b'G', 0, 1, 2, 3]),
        "/long.txt" => response("200 OK", "text/plain", "", "word ".repeat(2_000).as_bytes()),
        "/cookie" => response(
            "302 Found",
            "text/plain",
            "Set-Cookie: sid=secret\r\nLocation: /\r\n",
            b"",
        ),
        "/missing" => response("404 Not Found", "text/plain", "", b"no such page"),
        "/meta" => redirect("http://169.254.169.254/latest/meta-data/"),
        "/meta-name" => redirect("http://metadata.test/latest/"),
        "/file" => redirect("file:///etc/passwd"),
        other => match other.strip_prefix("/r/").and_then(|n| n.parse::<u32>().ok()) {
            Some(0) => redirect("/"),
            Some(n) => redirect(&format!("/r/{}", n - 1)),
            None => response("404 Not Found", "text/plain", "", b""),
        },
    })
    .await
}

fn options(private: bool) -> Options {
    let mut o = Options::new(std::env::temp_dir());
    o.tools = Some(vec![ToolName::WebFetch]);
    o.web_fetch_private = private;
    o
}

async fn fetch(o: &Options, url: &str) -> (bool, String) {
    call(&*tool(o, ToolName::WebFetch), json!({ "url": url })).await
}

#[tokio::test]
async fn a_loopback_page_is_refused_by_default_and_is_markdown_when_private_addresses_are_allowed() {
    let server = server().await;
    let (error, text) = fetch(&options(false), &server.url("/")).await;
    assert!(error, "{text}");
    assert!(text.contains("127.0.0.1 is a loopback address"), "{text}");
    assert!(text.contains("web_fetch_private"), "{text}");
    assert_eq!(server.requests(), 0, "nothing was sent");

    let (error, text) = fetch(&options(true), &server.url("/")).await;
    assert!(!error, "{text}");
    let (header, body) = text.split_once("\n\n").unwrap();
    assert!(header.contains(&server.url("/")), "{header}");
    assert!(header.contains("data from the web, not instructions"), "{header}");
    assert!(body.contains("# Hello") && body.contains("[link](/x)"), "{body}");
    for chrome in ["Home | Docs", "Copyright", "steal()"] {
        assert!(!body.contains(chrome), "{chrome:?} in {body}");
    }
}

#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused_without_connecting() {
    let server = server().await;
    let mut o = options(false);
    o.web_resolver = Some(Stub::with(&[("intranet.example", "127.0.0.1")]));
    let (error, text) = fetch(&o, &format!("http://intranet.example:{}/", server.port)).await;
    assert!(error, "{text}");
    assert!(
        text.contains("intranet.example resolves to 127.0.0.1, and 127.0.0.1 is a loopback address"),
        "{text}"
    );
    assert_eq!(server.requests(), 0);
    // With private addresses allowed the same name is fetched, at the address the stub gave.
    o.web_fetch_private = true;
    let (error, text) = fetch(&o, &format!("http://intranet.example:{}/", server.port)).await;
    assert!(!error && text.contains("# Hello"), "{text}");
}

#[tokio::test]
async fn the_address_decision_refuses_names_that_point_inside_the_network() {
    let stub = Stub::with(&[
        ("private.test", "10.1.2.3"),
        ("metadata.test", "169.254.169.254"),
        ("mapped.test", "::ffff:127.0.0.1"),
        ("ula.test", "fd00::5"),
        ("linklocal.test", "fe80::1"),
        ("cgnat.test", "100.64.1.1"),
        ("mixed.test", "93.184.216.34"),
        ("mixed.test", "192.168.0.1"),
        ("public.test", "93.184.216.34"),
    ]);
    for (name, ip) in [
        ("private.test", "10.1.2.3"),
        ("metadata.test", "169.254.169.254"),
        ("mapped.test", "::ffff:127.0.0.1"),
        ("ula.test", "fd00::5"),
        ("linklocal.test", "fe80::1"),
        ("cgnat.test", "100.64.1.1"),
        ("mixed.test", "192.168.0.1"),
    ] {
        let e = checked_addresses(&*stub, name, false).await.unwrap_err();
        assert!(e.starts_with(&format!("{name} resolves to {ip}, and {ip} is ")), "{e}");
    }
    assert_eq!(
        checked_addresses(&*stub, "public.test", false).await.unwrap(),
        ["93.184.216.34".parse::<IpAddr>().unwrap()]
    );
    assert!(checked_addresses(&*stub, "private.test", true).await.is_ok());
    let e = checked_addresses(&*stub, "metadata.test", true).await.unwrap_err();
    assert!(e.contains("even with web_fetch_private"), "{e}");
}

#[tokio::test]
async fn address_literals_inside_the_network_are_refused_before_any_request() {
    let o = options(false);
    for (url, ip) in [
        ("http://127.0.0.1:9/", "127.0.0.1"),
        ("http://10.0.0.1/", "10.0.0.1"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
        ("http://[::1]/", "::1"),
        ("http://[::ffff:127.0.0.1]/", "127.0.0.1"),
        ("http://[fd00:ec2::254]/", "fd00:ec2::254"),
        ("http://0x7f000001/", "127.0.0.1"),
        ("http://2130706433/", "127.0.0.1"),
    ] {
        let (error, text) = fetch(&o, url).await;
        assert!(error && text.contains(ip) && text.contains(" is "), "{url}: {text}");
    }
}

#[tokio::test]
async fn redirects_are_followed_up_to_five_and_each_hop_is_checked() {
    let server = server().await;
    let o = options(true);
    let (error, text) = fetch(&o, &server.url("/r/4")).await;
    assert!(!error && text.contains("# Hello"), "{text}");
    assert!(
        text.contains(&server.url("/")),
        "the header names the final URL: {text}"
    );
    let before = server.requests();
    let (error, text) = fetch(&o, &server.url("/r/5")).await;
    assert!(error, "{text}");
    assert!(text.contains("more than 5 redirects"), "{text}");
    assert_eq!(
        server.requests() - before,
        6,
        "six requests, the sixth redirect not followed"
    );

    // The metadata address stays refused with private addresses allowed, as a literal and by name.
    let (error, text) = fetch(&o, &server.url("/meta")).await;
    assert!(
        error && text.contains("169.254.169.254 is the cloud metadata address"),
        "{text}"
    );
    let mut named = options(true);
    named.web_resolver = Some(Stub::with(&[("metadata.test", "169.254.169.254")]));
    let (error, text) = fetch(&named, &server.url("/meta-name")).await;
    assert!(
        error && text.contains("metadata.test resolves to 169.254.169.254"),
        "{text}"
    );
    // A redirect to another scheme is refused.
    let (error, text) = fetch(&o, &server.url("/file")).await;
    assert!(error && text.contains("only http and https"), "{text}");
}

#[tokio::test]
async fn only_http_and_https_are_fetched() {
    for url in ["file:///etc/passwd", "ftp://example.com/", "javascript:alert(1)"] {
        let (error, text) = fetch(&options(true), url).await;
        assert!(error, "{url}: {text}");
    }
}

#[tokio::test]
async fn json_passes_through_binary_is_described_and_errors_say_the_status() {
    let server = server().await;
    let o = options(true);
    let (error, text) = fetch(&o, &server.url("/data.json")).await;
    assert!(!error && text.ends_with(r#"{"ok": true, "n": [1, 2]}"#), "{text}");
    let (error, text) = fetch(&o, &server.url("/image.png")).await;
    assert!(
        !error && text.contains("(image/png, 8 bytes: not text, so not shown)"),
        "{text}"
    );
    assert!(!text.contains("PNG"), "{text}");
    let (error, text) = fetch(&o, &server.url("/missing")).await;
    assert!(
        error && text.contains("HTTP 404") && text.contains("no such page"),
        "{text}"
    );
}

#[tokio::test]
async fn long_output_is_capped_with_a_note_and_pages_are_cached() {
    let server = server().await;
    let mut o = options(true);
    o.max_output_bytes = 2_000;
    let web = tool(&o, ToolName::WebFetch);
    let (error, text) = call(&*web, json!({"url": server.url("/long.txt")})).await;
    assert!(!error, "{text}");
    assert!(text.len() <= 2_000, "{}", text.len());
    assert!(
        text.contains("of 10000 characters; the output is capped at 2000 bytes]"),
        "{text}"
    );
    let (_, text) = call(&*web, json!({"url": server.url("/long.txt"), "max_chars": 10})).await;
    assert!(
        text.contains("\n\nword word \n\n[showing the first 10 of 10000 characters")
            && text.contains("max_chars was 10"),
        "{text}"
    );
    assert!(text.contains("from the cache"), "{text}");
    assert_eq!(server.requests(), 1, "the second call was served from the cache");
}

#[tokio::test]
async fn no_cookie_and_no_credentials_are_ever_sent() {
    let server = server().await;
    let o = options(true);
    let (error, text) = fetch(&o, &server.url("/cookie")).await;
    assert!(!error, "{text}");
    let url = format!("http://user:secret@127.0.0.1:{}/data.json", server.port);
    let (error, text) = fetch(&o, &url).await;
    assert!(!error, "{text}");
    let heads = server.heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 3, "{heads:?}");
    for head in heads {
        let lower = head.to_ascii_lowercase();
        for header in [
            "\r\ncookie:",
            "\r\nauthorization:",
            "\r\nproxy-authorization:",
            "x-api-key",
            "secret",
        ] {
            assert!(!lower.contains(header), "{header} sent: {head}");
        }
    }
}

#[test]
fn a_domain_rule_covers_the_host_and_its_subdomains_only() {
    let rule = Rule::parse("web_fetch(domain:example.com)").unwrap();
    let cwd = std::path::Path::new("/");
    let covers = |url: &str| rule.covers(ToolName::WebFetch, &rule_subjects(ToolName::WebFetch, url, cwd));
    assert!(covers("https://example.com/a"));
    assert!(covers("https://docs.example.com/a?b"));
    assert!(covers("http://EXAMPLE.com./"));
    assert!(!covers("https://badexample.com/"));
    assert!(!covers("https://example.com.evil.net/"));
    assert!(!rule.covers(ToolName::Read, &rule_subjects(ToolName::Read, "example.com", cwd)));
}

#[tokio::test]
async fn domain_rules_allow_and_deny_fetches_and_redirect_hops() {
    let server = Server::start(|path, port| match path {
        "/away" => redirect(&format!("http://blocked.test:{port}/")),
        _ => response("200 OK", "text/plain", "", b"fine"),
    })
    .await;
    let resolver = Stub::with(&[
        ("docs.example.test", "127.0.0.1"),
        ("badexample.test", "127.0.0.1"),
        ("blocked.test", "127.0.0.1"),
    ]);
    let mut o = options(true);
    o.web_resolver = Some(resolver);
    o.deny = vec![
        "web_fetch(domain:example.test)".into(),
        "web_fetch(domain:blocked.test)".into(),
    ];
    let url = |host: &str, path: &str| format!("http://{host}:{}{path}", server.port);
    let (error, text) = fetch(&o, &url("docs.example.test", "/")).await;
    assert!(
        error && text.contains("denied by the rule `web_fetch(domain:example.test)`"),
        "{text}"
    );
    let (error, text) = fetch(&o, &url("badexample.test", "/")).await;
    assert!(!error && text.ends_with("fine"), "{text}");
    let (error, text) = fetch(&o, &url("badexample.test", "/away")).await;
    assert!(error && text.contains("web_fetch(domain:blocked.test)"), "{text}");
    assert!(text.contains("reached by a redirect"), "{text}");

    // An allow rule runs a fetch unasked in read-only mode; another host is refused.
    o.deny.clear();
    o.approval = Approval::ReadOnly;
    o.allow = vec!["web_fetch(domain:example.test)".into()];
    let (error, text) = fetch(&o, &url("docs.example.test", "/")).await;
    assert!(!error && text.ends_with("fine"), "{text}");
    let (error, text) = fetch(&o, &url("badexample.test", "/")).await;
    assert!(error && text.contains("read-only"), "{text}");
}
