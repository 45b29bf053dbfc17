//! An example program on panto-core: the model answers with streamed text and may call a tool
//! written here; the conversation is kept in a session directory and the next run resumes it.
//!
//! ```text
//! ANTHROPIC_API_KEY=sk-... cargo run -p panto-example -- "What is the weather in Paris?"
//! ANTHROPIC_API_KEY=sk-... cargo run -p panto-example -- "And tomorrow?"   # resumes
//! ```
//!
//! `PANTO_BASE_URL` replaces `https://api.anthropic.com` (CI points it at the mock server) and
//! `PANTO_SESSIONS` the session directory (`.panto-example-sessions`).

// An example program prints.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::sync::Arc;

use panto_core::{
    async_trait, Agent, ApiStyle, Config, ContentDelta, Event, ProviderConfig, Session, Tool, ToolCall, ToolCallResult,
    ToolDecl, ToolError,
};
use panto_store_fs::JsonlStore;
use serde::Deserialize;

/// The tool's arguments.
#[derive(Deserialize)]
struct WeatherArgs {
    city: String,
}

/// A custom tool: what the model may call, and what it gets back.
struct Weather;

#[async_trait]
impl Tool for Weather {
    fn declaration(&self) -> ToolDecl {
        ToolDecl {
            name: "get_weather".into(),
            description: "The current weather in a city.".into(),
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"]
            }),
        }
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        // Bad arguments become a failed call the model sees, not a crash.
        let args: WeatherArgs = serde_json::from_value(call.input)?;
        Ok(ToolCallResult::text(format!("Sunny and 21C in {}", args.city)))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What is the weather in Paris?".into());
    let base_url = std::env::var("PANTO_BASE_URL").unwrap_or_else(|_| "https://api.anthropic.com".into());
    let api_key = std::env::var("ANTHROPIC_API_KEY")?;
    let sessions = std::env::var("PANTO_SESSIONS").unwrap_or_else(|_| ".panto-example-sessions".into());
    let config = Config::new(
        ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
            .with_base_url(base_url)
            .with_api_key(api_key),
    );

    // Resume the latest session of the directory, or start one.
    let store = JsonlStore::new(sessions);
    let mut agent = match Session::latest(store.clone()).await? {
        Some(session) => {
            let agent = Agent::resume(config, session).await?;
            let held = agent.conversation().messages.len();
            println!("[resumed session {} with {held} messages]", agent.session_id());
            agent
        }
        None => Agent::new(config, Session::create(store), None)?,
    };
    agent.register_tool(Arc::new(Weather))?;

    // Stream the answer as it comes.
    let mut stream = agent.run(prompt.as_str().into());
    let mut stdout = std::io::stdout();
    while let Some(event) = stream.next().await? {
        match event {
            Event::Delta {
                delta: ContentDelta::Text(text),
                ..
            } => {
                print!("{text}");
                stdout.flush()?;
            }
            Event::ToolDispatchStart { name, input, .. } => println!("[{name} {input}]"),
            _ => {}
        }
    }
    println!();
    Ok(())
}
