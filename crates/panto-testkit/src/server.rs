//! The mock server: accept loop, request handling, control endpoints and response writing.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::cache::PromptCache;
use crate::Error;
use panto_core::{ApiStyle, Config, ProviderConfig};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::http::{self, ReadError, Request};
use crate::recorded::RecordedRequest;
use crate::reply::{Cut, Framing, Reply};
use crate::validate::{self, Api};

/// How long a finished connection waits for the client to close its side. Closing a socket
/// with unread input makes the kernel send a reset, which can destroy a response the client
/// has not read yet; draining first avoids that.
const LINGER: Duration = Duration::from_secs(2);

/// The request header that picks a keyed script ([`MockServer::push_keyed`]).
pub const KEY_HEADER: &str = "x-mock-key";

/// A scripted LLM server on `127.0.0.1`, serving on tokio tasks of the runtime it was started
/// in. Dropping it stops the server and closes every open connection (stalled ones included).
///
/// Requests to `POST /v1/messages` (Anthropic) and `POST …/chat/completions` (OpenAI) are
/// recorded, validated, and answered with the queued replies in order. When the queue is empty
/// the answer is a 500 whose message says `mock: no scripted reply for request N`. Requests under
/// `/__mock/` are control requests (see the `panto-mock` binary) and are not recorded.
///
/// Many clients at once (a fleet of agents) each follow their own script: a request carrying the
/// header [`KEY_HEADER`] (`x-mock-key: K`) is answered from the queue of key `K`
/// ([`MockServer::push_keyed`]), however the requests of different keys interleave. For such
/// loads the server can keep connections alive ([`MockServer::set_keep_alive`]), count them
/// ([`MockServer::connections`]), stop recording request bodies ([`MockServer::set_recording`])
/// and say how long it spent answering each key ([`MockServer::served_time`]).
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Dropping this wakes every connection task, which then closes its socket.
    _shutdown: watch::Sender<()>,
    accept: JoinHandle<()>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    queue: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
    enforce: AtomicBool,
    fixtures_dir: Mutex<PathBuf>,
    /// The Anthropic prompt cache, when the server bills by it.
    prompt_cache: Mutex<Option<PromptCache>>,
    /// The scripts of keyed requests, by key.
    keyed: Mutex<HashMap<String, VecDeque<Reply>>>,
    /// Time spent answering each key's requests (from the request read to the last byte).
    keyed_time: Mutex<HashMap<String, Duration>>,
    /// Each keyed request's span, in seconds since the Unix epoch: when its request had been
    /// read and when its response's last byte was written. Wall-clock time, so that a client in
    /// another process on the same machine can line them up with its own timeline.
    keyed_spans: Mutex<HashMap<String, Vec<[f64; 2]>>>,
    pub(crate) keep_alive: AtomicBool,
    record: AtomicBool,
    /// Provider requests received, recorded or not.
    received: AtomicUsize,
    /// TCP connections accepted.
    connections: AtomicUsize,
    /// TCP connections accepted and not closed yet.
    open_connections: AtomicUsize,
    /// What the model listing `GET /v1/models` and `GET /models` answers.
    models: Mutex<Listing>,
}

/// Locks a mutex even if a panicking test thread poisoned it; the data stays consistent because
/// every critical section here is a single push, pop or clone.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MockServer {
    /// Binds `127.0.0.1:0` and starts serving. Must be called inside a tokio runtime.
    ///
    /// # Panics
    ///
    /// When no port can be bound. This is for tests, where the panic is the failure; use
    /// [`MockServer::try_start`] to handle the error.
    pub async fn start() -> MockServer {
        match MockServer::try_start().await {
            Ok(server) => server,
            Err(e) => panic!("panto-testkit: {e}"),
        }
    }

    /// [`MockServer::start`], returning an error instead of panicking when binding fails.
    pub async fn try_start() -> Result<MockServer, Error> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| Error::Listen(format!("mock server cannot listen on 127.0.0.1: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Listen(format!("mock server has no local address: {e}")))?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            enforce: AtomicBool::new(true),
            fixtures_dir: Mutex::new(crate::fixtures_dir()),
            prompt_cache: Mutex::new(None),
            keyed: Mutex::new(HashMap::new()),
            keyed_time: Mutex::new(HashMap::new()),
            keyed_spans: Mutex::new(HashMap::new()),
            keep_alive: AtomicBool::new(false),
            record: AtomicBool::new(true),
            received: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            open_connections: AtomicUsize::new(0),
            models: Mutex::new(Listing::Absent),
        });
        let (shutdown, watch) = watch::channel(());
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared), watch));
        Ok(MockServer {
            addr,
            shared,
            _shutdown: shutdown,
            accept,
        })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The listening port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The Anthropic base URL, `http://127.0.0.1:PORT` (panto appends `/v1/messages`).
    pub fn anthropic_base_url(&self) -> String {
        self.base_url()
    }

    /// The OpenAI base URL, `http://127.0.0.1:PORT/v1` (panto appends `/chat/completions`).
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// The model a test names for `style`: a real model of that API, so that pricing and context
    /// windows apply as they would.
    pub fn model(style: ApiStyle) -> &'static str {
        match style {
            ApiStyle::AnthropicMessages => "claude-sonnet-4-5",
            ApiStyle::OpenAiChat => "gpt-4o",
            ApiStyle::OpenAiResponses => "gpt-5",
        }
    }

    /// An agent configuration for `style` against this server: its base URL for that API,
    /// [`MockServer::model`], the key `key`, and retries that back off in milliseconds (1 ms
    /// doubling to 50 ms) so that a test of a retry does not wait. Change what a test needs on the
    /// returned value (`config.retry.max_attempts = 1`).
    pub fn config(&self, style: ApiStyle, key: &str) -> Config {
        let base = match style {
            ApiStyle::AnthropicMessages => self.anthropic_base_url(),
            ApiStyle::OpenAiChat | ApiStyle::OpenAiResponses => self.openai_base_url(),
        };
        let mut config = Config::new(
            ProviderConfig::new(style, Self::model(style))
                .with_base_url(base)
                .with_api_key(key),
        );
        config.retry.base_delay = Duration::from_millis(1);
        config.retry.max_delay = Duration::from_millis(50);
        config
    }

    /// Queues a reply; replies are served in the order pushed, one per accepted request.
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.queue).push_back(reply);
    }

    /// Queues a reply for the requests carrying `x-mock-key: key` ([`KEY_HEADER`]); each key's
    /// replies are served in the order pushed, independently of every other key's. A keyed
    /// request whose queue is empty gets the 500 of an unscripted request, naming the key.
    pub fn push_keyed(&self, key: &str, reply: Reply) {
        lock(&self.shared.keyed)
            .entry(key.to_owned())
            .or_default()
            .push_back(reply);
    }

    /// How long the server spent answering the requests of `key` so far: from each request
    /// read to the last byte of its response written (its scripted delays included). What a
    /// client's latency is measured against. `GET /__mock/stats` answers the same for every key
    /// (`served_seconds`), with the connection counts, for a client in another process, and
    /// each keyed request's span (`served_spans`: per key, `[read, done]` pairs in seconds since
    /// the Unix epoch, in the order served), which a client on the same machine lines up with
    /// its own clock to see where a request's time went.
    pub fn served_time(&self, key: &str) -> Duration {
        lock(&self.shared.keyed_time).get(key).copied().unwrap_or_default()
    }

    /// Whether responses keep the connection open for the next request (`Connection:
    /// keep-alive`) instead of closing it (the default). A reply cut short (stall, close) still
    /// ends its connection.
    pub fn set_keep_alive(&self, keep_alive: bool) {
        self.shared.keep_alive.store(keep_alive, Ordering::SeqCst);
    }

    /// Whether provider requests are recorded for [`MockServer::requests`] (the default). A
    /// load test turns it off so that the server's memory does not grow with every request.
    pub fn set_recording(&self, record: bool) {
        self.shared.record.store(record, Ordering::SeqCst);
    }

    /// How many TCP connections the server has accepted since it started.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// How many of the accepted TCP connections are still open on the server's side: what the
    /// server itself holds in descriptors, for a load test to tell its own from the client's.
    pub fn open_connections(&self) -> usize {
        self.shared.open_connections.load(Ordering::SeqCst)
    }

    /// Every provider request received so far (since the last [`MockServer::reset`]), in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// How many queued replies have not been served yet.
    pub fn pending(&self) -> usize {
        lock(&self.shared.queue).len()
    }

    /// Answers the model listing, `GET /v1/models` (Anthropic, and the OpenAI styles' `/v1` base)
    /// and `GET /models`, with `models` (`{"data": [{"id": ...}], "has_more": false, ...}`, the
    /// shape both APIs share); `None` (the default) answers 404, as a provider without a
    /// listing does. A listing takes no queued reply and is not recorded.
    pub fn set_models(&self, models: Option<Vec<String>>) {
        *lock(&self.shared.models) = models.map_or(Listing::Absent, Listing::Models);
    }

    /// Answers every model listing with `reply` (a refusal, a page, a body that never ends)
    /// until [`MockServer::set_models`] is called; the queued replies stay for provider
    /// requests.
    pub fn set_models_reply(&self, reply: Reply) {
        *lock(&self.shared.models) = Listing::Reply(reply);
    }

    /// Forgets the queued replies and the recorded requests (request numbers start at 1 again).
    pub fn reset(&self) {
        lock(&self.shared.queue).clear();
        lock(&self.shared.requests).clear();
        lock(&self.shared.keyed).clear();
        self.shared.received.store(0, Ordering::SeqCst);
    }

    /// Whether a request that fails validation is refused with a 400 (the default) instead of
    /// being served. The validation result is recorded either way.
    pub fn set_validation(&self, enforce: bool) {
        self.shared.enforce.store(enforce, Ordering::SeqCst);
    }

    /// Bills Anthropic requests by the prompt cache from now on (see [`cache`](crate::cache)):
    /// the usage of every scripted Anthropic stream served is replaced by what the API would
    /// report for the request (`input_tokens`, `cache_read_input_tokens`,
    /// `cache_creation_input_tokens` and its split by lifetime; output is kept), and each
    /// recorded request carries it ([`RecordedRequest::cache`]). Off by default, so that scripted
    /// usage reaches the client as written.
    pub fn enable_prompt_cache(&self) {
        lock(&self.shared.prompt_cache).get_or_insert_with(PromptCache::new);
    }

    /// Moves the prompt cache's clock forward, as if `by` had passed (entries live five minutes
    /// or an hour after their last use).
    pub fn advance_prompt_cache(&self, by: Duration) {
        if let Some(cache) = lock(&self.shared.prompt_cache).as_mut() {
            cache.advance(by);
        }
    }

    /// Where control requests (`POST /__mock/push` with `"fixture"`) look for fixtures. Defaults
    /// to [`fixtures_dir`](crate::fixtures_dir).
    pub fn set_fixtures_dir(&self, dir: impl Into<PathBuf>) {
        *lock(&self.shared.fixtures_dir) = dir.into();
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        // The connection tasks end when `_shutdown` is dropped right after this.
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, watch: watch::Receiver<()>) {
    let mut stop = watch.clone();
    loop {
        let accepted = tokio::select! {
            _ = stop.changed() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((mut stream, _)) = accepted else {
            // Out of file descriptors or similar: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        shared.connections.fetch_add(1, Ordering::SeqCst);
        // Every write must leave at once so that chunking is visible to the client.
        let _ = stream.set_nodelay(true);
        let shared = Arc::clone(&shared);
        let mut stop = watch.clone();
        shared.open_connections.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let connection = async {
                if crate::h2c::starts_with_preface(&stream).await {
                    crate::h2c::serve(&mut stream, Arc::clone(&shared)).await;
                } else {
                    serve(&mut stream, &shared).await;
                }
            };
            tokio::select! {
                _ = stop.changed() => {}
                _ = connection => {}
            }
            drop(stream);
            shared.open_connections.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// Handles one connection: one request and its response, or, with keep-alive, as many as the
/// client sends.
async fn serve(stream: &mut TcpStream, shared: &Shared) {
    loop {
        let request = match http::read_request(stream).await {
            Ok(request) => request,
            Err(ReadError::Closed) => return,
            Err(ReadError::Bad(status, message)) => {
                let body = Api::error_body(None, "invalid_request_error", &format!("mock: {message}"));
                let _ = write_reply(stream, &Reply::json(status, &body), false).await;
                return;
            }
        };
        let started = std::time::Instant::now();
        let read_at = unix_seconds();
        let (reply, key) = answer(&request, shared);
        let keep_alive = shared.keep_alive.load(Ordering::SeqCst);
        let open = write_reply(stream, &reply, keep_alive).await;
        if let Some(key) = key {
            record_served(shared, key, started, read_at);
        }
        if !matches!(open, Ok(true)) {
            return;
        }
    }
}

/// The reply to one request, whatever the protocol it came by, and the script key it carried.
pub(crate) fn answer(request: &Request, shared: &Shared) -> (Reply, Option<String>) {
    let key = request
        .headers
        .iter()
        .find(|(name, _)| name == KEY_HEADER)
        .map(|(_, value)| value.clone());
    let reply = if request.path().starts_with("/__mock/") {
        control(request, shared)
    } else if request.method == "GET" && matches!(request.path(), "/v1/models" | "/models") {
        models(shared)
    } else {
        provider(request, key.as_deref(), shared)
    };
    (reply, key)
}

/// Counts a keyed request's time: `started` and `read_at` are when its request had been read.
pub(crate) fn record_served(shared: &Shared, key: String, started: std::time::Instant, read_at: f64) {
    let done_at = unix_seconds();
    *lock(&shared.keyed_time).entry(key.clone()).or_default() += started.elapsed();
    lock(&shared.keyed_spans)
        .entry(key)
        .or_default()
        .push([read_at, done_at]);
}

/// Now, in seconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn unix_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// What the model listing answers ([`MockServer::set_models`], [`MockServer::set_models_reply`]).
#[derive(Debug)]
pub(crate) enum Listing {
    /// 404, as from a provider without a listing.
    Absent,
    /// These model ids.
    Models(Vec<String>),
    /// This reply, every time.
    Reply(Reply),
}

/// The model listing's answer.
fn models(shared: &Shared) -> Reply {
    match &*lock(&shared.models) {
        Listing::Models(ids) => Reply::json(
            200,
            &json!({
                "data": ids.iter().map(|id| json!({"id": id, "type": "model", "object": "model"})).collect::<Vec<_>>(),
                "has_more": false,
                "first_id": ids.first(),
                "last_id": ids.last(),
            }),
        ),
        Listing::Reply(reply) => reply.clone(),
        Listing::Absent => Reply::json(
            404,
            &json!({"type": "error", "error": {"type": "not_found_error", "message": "mock: no model listing set"}}),
        ),
    }
}

/// Records, validates and answers a provider request.
fn provider(request: &Request, key: Option<&str>, shared: &Shared) -> Reply {
    let verdict = validate::validate(request);
    let api = Api::of_path(request.path());
    // A refused request is not billed and touches no cache, as with the real API.
    let cache = match (&verdict, api) {
        (Ok(()), Some(Api::Anthropic)) => lock(&shared.prompt_cache).as_mut().and_then(|c| c.bill(&request.body)),
        _ => None,
    };
    let index = shared.received.fetch_add(1, Ordering::SeqCst) + 1;
    if shared.record.load(Ordering::SeqCst) {
        lock(&shared.requests).push(RecordedRequest {
            index,
            method: request.method.clone(),
            path: request.target.clone(),
            headers: request.headers.clone(),
            body: request.body.clone(),
            validation: verdict.as_ref().err().map(|r| r.message.clone()),
            cache,
        });
    }
    if let Err(rejection) = &verdict {
        if shared.enforce.load(Ordering::SeqCst) {
            return Reply::json(rejection.status, &rejection.body());
        }
    }
    let server_error = |message: String| {
        let error_type = if api == Some(Api::Anthropic) {
            "api_error"
        } else {
            "server_error"
        };
        Reply::json(500, &Api::error_body(api, error_type, &message))
    };
    let next = match key {
        Some(key) => lock(&shared.keyed).get_mut(key).and_then(VecDeque::pop_front),
        None => lock(&shared.queue).pop_front(),
    };
    let Some(reply) = next else {
        let keyed = key.map(|k| format!(" with {KEY_HEADER} {k:?}")).unwrap_or_default();
        return server_error(format!(
            "mock: no scripted reply for request {index} ({} {}){keyed}",
            request.method, request.target
        ));
    };
    match reply.check() {
        Ok(()) => match cache {
            Some(usage) => reply.with_anthropic_usage(&usage),
            None => reply,
        },
        Err(problem) => server_error(format!(
            "mock: the scripted reply for request {index} cannot be sent: {problem}"
        )),
    }
}

/// The control API of the `panto-mock` binary (also served by every [`MockServer`]).
fn control(request: &Request, shared: &Shared) -> Reply {
    let error = |status: u16, message: String| Reply::json(status, &json!({ "error": message }));
    match (request.method.as_str(), request.path()) {
        ("POST", "/__mock/push") => {
            let value: Value = match serde_json::from_slice(&request.body) {
                Ok(v) => v,
                Err(e) => return error(400, format!("mock: push body is not JSON: {e}")),
            };
            let dir = lock(&shared.fixtures_dir).clone();
            match crate::spec::replies_from_json(&value, &dir) {
                Ok(replies) => {
                    let mut queue = lock(&shared.queue);
                    queue.extend(replies);
                    Reply::json(200, &json!({ "queued": queue.len() }))
                }
                Err(e) => error(400, format!("mock: bad reply: {e}")),
            }
        }
        ("GET", "/__mock/requests") => {
            let requests: Vec<Value> = lock(&shared.requests).iter().map(RecordedRequest::to_json).collect();
            Reply::json(200, &Value::Array(requests))
        }
        ("POST", "/__mock/reset") => {
            lock(&shared.queue).clear();
            lock(&shared.requests).clear();
            lock(&shared.keyed).clear();
            shared.received.store(0, Ordering::SeqCst);
            Reply::json(200, &json!({ "ok": true }))
        }
        ("POST", "/__mock/prompt-cache") => {
            let body = serde_json::from_slice::<Value>(&request.body).ok();
            let enabled = body.as_ref().and_then(|v| v.get("enabled")).and_then(Value::as_bool);
            let advance = body.as_ref().and_then(|v| v.get("advance_secs")).and_then(Value::as_u64);
            let mut cache = lock(&shared.prompt_cache);
            match (enabled, advance) {
                (Some(true), _) => {
                    cache.get_or_insert_with(PromptCache::new);
                }
                (Some(false), _) => *cache = None,
                (None, Some(secs)) => {
                    if let Some(cache) = cache.as_mut() {
                        cache.advance(Duration::from_secs(secs));
                    }
                }
                (None, None) => {
                    return error(
                        400,
                        "mock: expected {\"enabled\": true|false} or {\"advance_secs\": N}".to_owned(),
                    )
                }
            }
            Reply::json(200, &json!({ "enabled": cache.is_some() }))
        }
        ("POST", "/__mock/validation") => {
            let enforce = serde_json::from_slice::<Value>(&request.body)
                .ok()
                .and_then(|v| v.get("enforce").and_then(Value::as_bool));
            match enforce {
                Some(enforce) => {
                    shared.enforce.store(enforce, Ordering::SeqCst);
                    Reply::json(200, &json!({ "enforce": enforce }))
                }
                None => error(400, "mock: expected {\"enforce\": true|false}".to_owned()),
            }
        }
        ("GET", "/__mock/stats") => {
            // Seconds, as floats: what a load test in another process needs of `served_time`.
            let served: serde_json::Map<String, Value> = lock(&shared.keyed_time)
                .iter()
                .map(|(key, time)| (key.clone(), json!(time.as_secs_f64())))
                .collect();
            let spans: serde_json::Map<String, Value> = lock(&shared.keyed_spans)
                .iter()
                .map(|(key, spans)| (key.clone(), json!(spans)))
                .collect();
            Reply::json(
                200,
                &json!({
                    "connections": shared.connections.load(Ordering::SeqCst),
                    "open_connections": shared.open_connections.load(Ordering::SeqCst),
                    "served_seconds": served,
                    "served_spans": spans,
                }),
            )
        }
        ("GET", "/__mock/builders") => Reply::json(200, &json!(crate::script::BUILDERS)),
        ("POST", "/__mock/check-events") => {
            // The C and Go tests hand every event they saw to the one schema check.
            let events = match serde_json::from_slice::<Value>(&request.body) {
                Ok(Value::Array(events)) => events,
                Ok(_) => return error(400, "mock: check-events takes a JSON array of events".to_owned()),
                Err(e) => return error(400, format!("mock: check-events body is not JSON: {e}")),
            };
            match crate::events::check_events(&events) {
                Ok(checked) => Reply::json(200, &json!({ "checked": checked })),
                Err(e) => error(422, e),
            }
        }
        (method, path) => error(
            404,
            format!(
                "mock: no control endpoint {method} {path} (POST /__mock/push, GET /__mock/requests, POST /__mock/reset, POST /__mock/validation, POST /__mock/prompt-cache, GET /__mock/stats, GET /__mock/builders, POST /__mock/check-events)"
            ),
        ),
    }
}

/// Writes `reply` as scripted: head, body writes with delays, then the scripted ending.
/// `Ok(true)` when the connection stays open for another request (`keep_alive` and a whole
/// response).
async fn write_reply(stream: &mut TcpStream, reply: &Reply, keep_alive: bool) -> std::io::Result<bool> {
    if reply.hang {
        drain(stream).await;
        return Ok(false);
    }
    let keep_alive = keep_alive && matches!(reply.cut, Cut::None | Cut::End(_));
    let body = reply.wire_body();
    stream
        .write_all(&http::response_head(
            reply.status,
            &reply.headers,
            reply.framing,
            body.len(),
            keep_alive,
        ))
        .await?;
    stream.flush().await?;
    let limit = match reply.cut {
        Cut::Stall(n) | Cut::Close(n) => n.min(body.len()),
        Cut::None | Cut::End(_) => body.len(),
    };
    for (index, piece) in reply.chunking.pieces(&body[..limit]).into_iter().enumerate() {
        let delay = reply.delay_before(index);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        match reply.framing {
            Framing::Chunked => stream.write_all(&http::chunk(piece)).await?,
            Framing::Length => stream.write_all(piece).await?,
        }
        stream.flush().await?;
    }
    match reply.cut {
        Cut::Stall(_) => drain(stream).await,
        Cut::Close(_) => {
            let _ = stream.shutdown().await;
        }
        Cut::None | Cut::End(_) => {
            if reply.framing == Framing::Chunked {
                stream.write_all(http::LAST_CHUNK).await?;
                stream.flush().await?;
            }
            if keep_alive {
                return Ok(true);
            }
            let _ = stream.shutdown().await;
            let _ = tokio::time::timeout(LINGER, drain(stream)).await;
        }
    }
    Ok(false)
}

/// Reads and discards until the client closes the connection (or it fails).
async fn drain(stream: &mut TcpStream) {
    let mut sink = [0u8; 4096];
    while let Ok(n) = stream.read(&mut sink).await {
        if n == 0 {
            break;
        }
    }
}
