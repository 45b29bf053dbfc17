//! Shared helpers: configs pointing at the mock server, scripted streams per API style, tools.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use panto_core::store::{PersistentMessage, StoreWrapper};
use panto_core::{
    Agent, ApiStyle, Config, ContentBlock, ContentDelta, Event, MemoryStore, NullStore, Session, SessionStore, Tool,
    ToolCall, ToolCallResult, ToolDecl, ToolError, Usage,
};
use panto_testkit::script::Script;
use panto_testkit::{MockServer, RecordedRequest};
use serde_json::{json, Value};

pub const KEY: &str = "test-key-7f3a";

pub const STYLES: [ApiStyle; 2] = [ApiStyle::AnthropicMessages, ApiStyle::OpenAiChat];

/// A config for `style` against `server`, with fast retries.
pub fn config(style: ApiStyle, server: &MockServer) -> Config {
    let mut config = server.config(style, KEY);
    config.retry.max_attempts = 3;
    config.idle_timeout = Duration::from_secs(10);
    config
}

pub fn agent(style: ApiStyle, server: &MockServer) -> Agent {
    Agent::new(config(style, server), Session::create(NullStore::shared()), None).unwrap()
}

pub fn agent_on(style: ApiStyle, server: &MockServer, session: Session) -> Agent {
    Agent::new(config(style, server), session, None).unwrap()
}

pub fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    }
}

/// A stream with one text block.
pub fn text(style: ApiStyle, text: &str) -> Vec<u8> {
    text_with_usage(style, text, usage(11, 7))
}

pub fn text_with_usage(style: ApiStyle, text: &str, u: Usage) -> Vec<u8> {
    Script::new(style).usage(u).text(text).build()
}

/// A stream with one tool call per `(id, name, input)`.
pub fn tool_calls(style: ApiStyle, calls: &[(&str, &str, &str)]) -> Vec<u8> {
    calls
        .iter()
        .fold(Script::new(style).usage(usage(20, 9)), |script, (id, name, input)| {
            script.tool_call(id, name, input)
        })
        .build()
}

/// Pulls every event of a turn, each [`checked`].
pub async fn collect(agent: &mut Agent, prompt: &str) -> panto_core::Result<Vec<Event>> {
    let mut stream = agent.run(prompt.into());
    let mut events = Vec::new();
    while let Some(event) = stream.next().await? {
        events.push(checked(event));
    }
    Ok(events)
}

/// Checks that an event's JSON matches docs/events.schema.json and reads back into an event
/// that writes the same JSON (a retry's delay is whole milliseconds there, so the event itself
/// may differ below a millisecond); every test that pulls events passes them through here.
pub fn checked(event: Event) -> Event {
    let json = serde_json::to_value(&event).unwrap();
    panto_testkit::assert_event(&json);
    let read: Event = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(&read).unwrap(),
        json,
        "the event JSON reads back: {event:?}"
    );
    event
}

/// The concatenated text deltas of `events`.
pub fn streamed_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Delta {
                delta: ContentDelta::Text(t),
                ..
            } => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The JSON body of the `n`th (0-based) request, after checking the mock accepted it.
pub fn body(requests: &[RecordedRequest], n: usize) -> Value {
    let r = &requests[n];
    assert_eq!(r.validation, None, "request {n} was invalid for the API");
    r.json().unwrap()
}

/// The messages of a request, with OpenAI's leading system message removed (the Responses
/// API's input items).
pub fn wire_messages(style: ApiStyle, body: &Value) -> Vec<Value> {
    if style == ApiStyle::OpenAiResponses {
        return body["input"].as_array().unwrap().clone();
    }
    let messages = body["messages"].as_array().unwrap().clone();
    match style {
        ApiStyle::AnthropicMessages => messages,
        _ => messages.into_iter().filter(|m| m["role"] != "system").collect(),
    }
}

/// `echo`: returns its `text` argument.
pub struct Echo;

#[async_trait]
impl Tool for Echo {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: "echo".into(),
            description: "Returns its text".into(),
            input_schema: json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
        }
    }
    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let delay = call.input["delay_ms"].as_u64().unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        Ok(ToolCallResult::text(
            call.input["text"].as_str().unwrap_or("").to_owned(),
        ))
    }
}

/// `fail`: always returns an error.
pub struct Fail;

#[async_trait]
impl Tool for Fail {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: "fail".into(),
            description: "Always fails".into(),
            input_schema: json!({"type":"object"}),
        }
    }
    async fn call(&self, _call: ToolCall) -> Result<ToolCallResult, ToolError> {
        Err("disk on fire".into())
    }
}

/// `boom`: panics.
pub struct Boom;

#[async_trait]
impl Tool for Boom {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: "boom".into(),
            description: "Panics".into(),
            input_schema: json!({"type":"object"}),
        }
    }
    async fn call(&self, _call: ToolCall) -> Result<ToolCallResult, ToolError> {
        panic!("tool exploded")
    }
}

/// `wait`: blocks until cancelled, and records that it saw the cancel.
pub struct Wait {
    pub started: Arc<tokio::sync::Notify>,
    pub saw_cancel: Arc<AtomicBool>,
}

#[async_trait]
impl Tool for Wait {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: "wait".into(),
            description: "Waits to be cancelled".into(),
            input_schema: json!({"type":"object"}),
        }
    }
    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        self.started.notify_one();
        call.cancel.cancelled().await;
        self.saw_cancel.store(true, Ordering::SeqCst);
        Ok(ToolCallResult::text("stopped"))
    }
}

/// `picture`: returns a PNG of the given size.
pub struct Picture;

#[async_trait]
impl Tool for Picture {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: "picture".into(),
            description: "Returns an image".into(),
            input_schema: json!({"type":"object"}),
        }
    }
    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let w = call.input["w"].as_u64().unwrap_or(10) as u32;
        let h = call.input["h"].as_u64().unwrap_or(10) as u32;
        let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x % 255) as u8, (y % 255) as u8, 9]));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png)?;
        Ok(ToolCallResult::image(out.into_inner()))
    }
}

/// Whether a batch being appended holds tool results.
pub fn holds_tool_results(messages: &[PersistentMessage<'_>]) -> bool {
    messages.iter().any(|m| {
        m.message
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
    })
}

/// A `MemoryStore` whose writes of tool results take `delay`, and that says when one is stored.
#[derive(Debug)]
pub struct SlowResults {
    pub memory: Arc<MemoryStore>,
    pub delay: Duration,
    pub written: AtomicBool,
}

impl SlowResults {
    pub fn new(memory: Arc<MemoryStore>, delay: Duration) -> Arc<Self> {
        Arc::new(SlowResults {
            memory,
            delay,
            written: false.into(),
        })
    }
}

#[async_trait]
impl StoreWrapper for SlowResults {
    fn inner(&self) -> &dyn SessionStore {
        &*self.memory
    }
    async fn append(&self, id: &str, messages: &[PersistentMessage<'_>]) -> panto_core::Result<Vec<String>> {
        let results = holds_tool_results(messages);
        if results {
            tokio::time::sleep(self.delay).await;
        }
        let ids = self.memory.append(id, messages).await?;
        if results {
            self.written.store(true, Ordering::SeqCst);
        }
        Ok(ids)
    }
}
