//! Typed tools (`tool_fn`) and structured output (`Agent::run_typed`), for both API styles.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures_util::FutureExt;
use panto_core::{tool_fn, ApiStyle, Error, Event, ReasoningEffort, ToolCallResult};
use panto_testkit::{MockServer, Reply};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::support::*;

/// Where a trip goes.
#[derive(Debug, Deserialize, JsonSchema)]
struct TripArgs {
    /// The traveller's name.
    traveller: String,
    /// The stops, in order.
    stops: Vec<Stop>,
    /// How to travel between stops.
    #[serde(default)]
    mode: Mode,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Stop {
    /// The city.
    city: String,
    /// Nights spent there.
    nights: u32,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    #[default]
    Train,
    Bus,
}

/// A `plan_trip` tool that counts how often its body ran.
fn plan_trip(runs: Arc<AtomicUsize>) -> Arc<dyn panto_core::Tool> {
    tool_fn("plan_trip", "Plans a trip.", move |args: TripArgs, _call| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let nights: u32 = args.stops.iter().map(|s| s.nights).sum();
            let route: Vec<&str> = args.stops.iter().map(|s| s.city.as_str()).collect();
            Ok(format!(
                "{} travels {}, {nights} nights by {:?}",
                args.traveller,
                route.join("-"),
                args.mode
            ))
        }
    })
}

/// The `input_schema` (Anthropic) or `parameters` (OpenAI) of the tool named `name` in a request.
fn wire_schema(style: ApiStyle, body: &Value, name: &str) -> Value {
    let tools = body["tools"].as_array().expect("tools offered");
    let tool = tools
        .iter()
        .find(|t| match style {
            ApiStyle::AnthropicMessages => t["name"] == name,
            ApiStyle::OpenAiResponses => {
                unreachable!("written for the styles of STYLES; tests/responses.rs covers the Responses API")
            }
            ApiStyle::OpenAiChat => t["function"]["name"] == name,
        })
        .unwrap_or_else(|| panic!("no tool {name} in {tools:?}"));
    match style {
        ApiStyle::AnthropicMessages => tool["input_schema"].clone(),
        ApiStyle::OpenAiResponses => {
            unreachable!("written for the styles of STYLES; tests/responses.rs covers the Responses API")
        }
        ApiStyle::OpenAiChat => tool["function"]["parameters"].clone(),
    }
}

/// The tool results a request carried, as `(text, is_error)`.
fn results(style: ApiStyle, body: &Value) -> Vec<(String, bool)> {
    let messages = wire_messages(style, body);
    match style {
        ApiStyle::AnthropicMessages => messages
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_result")
            .map(|b| {
                let text = b["content"][0]["text"].as_str().unwrap_or("").to_owned();
                (text, b["is_error"] == true)
            })
            .collect(),
        ApiStyle::OpenAiResponses => {
            unreachable!("written for the styles of STYLES; tests/responses.rs covers the Responses API")
        }
        ApiStyle::OpenAiChat => messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| {
                let text = m["content"].as_str().unwrap_or("").to_owned();
                let is_error = text.starts_with("Error: ");
                (text, is_error)
            })
            .collect(),
    }
}

#[tokio::test]
async fn a_typed_tool_offers_an_inlined_schema_with_its_doc_comments() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(text(style, "ok")));
        let mut agent = agent(style, &server);
        agent.register_tool(plan_trip(Arc::default())).unwrap();
        collect(&mut agent, "plan").await.unwrap();

        let schema = wire_schema(style, &body(&server.requests(), 0), "plan_trip");
        let text = schema.to_string();
        assert!(
            !text.contains("$ref") && !text.contains("$defs") && !text.contains("$schema"),
            "{text}"
        );
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["traveller", "stops"]));
        assert_eq!(
            schema["properties"]["traveller"]["description"],
            "The traveller's name."
        );
        let stop = &schema["properties"]["stops"]["items"];
        assert_eq!(stop["type"], "object", "{text}");
        assert_eq!(stop["properties"]["nights"]["description"], "Nights spent there.");
        assert!(text.contains("\"bus\"") && text.contains("\"train\""), "{text}");
    }
}

#[tokio::test]
async fn a_typed_tool_runs_with_the_models_arguments() {
    for style in STYLES {
        let server = MockServer::start().await;
        let input =
            r#"{"traveller":"Ana","stops":[{"city":"Porto","nights":2},{"city":"Faro","nights":3}],"mode":"bus"}"#;
        server.push(Reply::sse(tool_calls(style, &[("call_1", "plan_trip", input)])));
        server.push(Reply::sse(text(style, "done")));
        let runs = Arc::new(AtomicUsize::new(0));
        let mut agent = agent(style, &server);
        agent.register_tool(plan_trip(runs.clone())).unwrap();
        collect(&mut agent, "plan").await.unwrap();

        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let sent = results(style, &body(&server.requests(), 1));
        assert_eq!(
            sent,
            vec![("Ana travels Porto-Faro, 5 nights by Bus".to_owned(), false)],
            "{style}"
        );
    }
}

#[tokio::test]
async fn invalid_arguments_become_an_error_result_naming_the_field_and_the_body_does_not_run() {
    let cases = [
        (
            r#"{"traveller":"Ana","stops":[{"city":"Porto","nights":2},{"city":"Faro","nights":"three"}]}"#,
            "`stops[1].nights`",
        ),
        (r#"{"stops":[]}"#, "missing field `traveller`"),
        (r#"{"traveller":"Ana","stops":[],"mode":"plane"}"#, "`mode`"),
    ];
    for style in STYLES {
        for (input, named) in cases {
            let server = MockServer::start().await;
            server.push(Reply::sse(tool_calls(style, &[("call_1", "plan_trip", input)])));
            server.push(Reply::sse(text(style, "sorry")));
            let runs = Arc::new(AtomicUsize::new(0));
            let mut agent = agent(style, &server);
            agent.register_tool(plan_trip(runs.clone())).unwrap();
            let events = collect(&mut agent, "plan").await.unwrap();

            assert_eq!(runs.load(Ordering::SeqCst), 0, "the body ran for {input}");
            let complete = events.iter().find_map(|e| match e {
                Event::ToolDispatchComplete { is_error, .. } => Some(*is_error),
                _ => None,
            });
            assert_eq!(complete, Some(true));
            let sent = results(style, &body(&server.requests(), 1));
            assert_eq!(sent.len(), 1);
            assert!(sent[0].1, "{sent:?}");
            assert!(
                sent[0].0.contains("invalid arguments") && sent[0].0.contains(named),
                "{style}: {sent:?}"
            );
        }
    }
}

/// A structured result: the capital of a country.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Capital {
    /// The city.
    city: String,
    /// Inhabitants, roughly.
    population: u64,
}

fn final_result(style: ApiStyle, id: &str, input: &str) -> Vec<u8> {
    tool_calls(style, &[(id, "final_result", input)])
}

#[tokio::test]
async fn run_typed_forces_the_result_tool_and_returns_its_value() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(final_result(
            style,
            "call_1",
            r#"{"city":"Lisbon","population":545000}"#,
        )));
        server.push(Reply::sse(text(style, "You're welcome.")));
        let mut agent = agent(style, &server);
        agent.register_tool(Arc::new(Echo)).unwrap();

        let capital: Capital = agent.run_typed("The capital of Portugal?").await.unwrap();
        assert_eq!(
            capital,
            Capital {
                city: "Lisbon".into(),
                population: 545_000
            }
        );
        let first = body(&server.requests(), 0);
        let expected_choice = match style {
            ApiStyle::AnthropicMessages => json!({"type": "any"}),
            ApiStyle::OpenAiResponses => {
                unreachable!("written for the styles of STYLES; tests/responses.rs covers the Responses API")
            }
            ApiStyle::OpenAiChat => json!("required"),
        };
        assert_eq!(first["tool_choice"], expected_choice, "{style}");
        let schema = wire_schema(style, &first, "final_result");
        assert_eq!(
            schema["properties"]["population"]["description"],
            "Inhabitants, roughly."
        );
        // The agent's own tools stay on offer.
        wire_schema(style, &first, "echo");
        // One request: the turn ended with the result.
        assert_eq!(server.requests().len(), 1);

        // Afterwards the result tool is gone, and the conversation is valid for a plain turn.
        assert_eq!(
            agent.tools().iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["echo"]
        );
        collect(&mut agent, "thanks").await.unwrap();
        let next = body(&server.requests(), 1);
        assert!(next.get("tool_choice").is_none());
        assert_eq!(results(style, &next), vec![("Result received.".to_owned(), false)]);
    }
}

#[tokio::test]
async fn run_typed_lets_the_model_use_tools_before_the_result() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(tool_calls(
            style,
            &[("call_1", "echo", r#"{"text":"Lisbon"}"#)],
        )));
        server.push(Reply::sse(final_result(
            style,
            "call_2",
            r#"{"city":"Lisbon","population":1}"#,
        )));
        let mut agent = agent(style, &server);
        agent.register_tool(Arc::new(Echo)).unwrap();
        let capital: Capital = agent.run_typed("The capital of Portugal?").await.unwrap();
        assert_eq!(capital.city, "Lisbon");
        let second = body(&server.requests(), 1);
        assert_eq!(results(style, &second), vec![("Lisbon".to_owned(), false)]);
    }
}

#[tokio::test]
async fn run_typed_sends_a_result_that_does_not_fit_back_for_correction() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(final_result(
            style,
            "call_1",
            r#"{"city":"Lisbon","population":"many"}"#,
        )));
        server.push(Reply::sse(final_result(
            style,
            "call_2",
            r#"{"city":"Lisbon","population":545000}"#,
        )));
        let mut agent = agent(style, &server);
        let capital: Capital = agent.run_typed("The capital of Portugal?").await.unwrap();
        assert_eq!(capital.population, 545_000);
        let sent = results(style, &body(&server.requests(), 1));
        assert_eq!(sent.len(), 1);
        assert!(sent[0].1 && sent[0].0.contains("`population`"), "{style}: {sent:?}");
    }
}

#[tokio::test]
async fn run_typed_fails_naming_the_field_once_the_corrections_run_out() {
    for style in STYLES {
        let server = MockServer::start().await;
        for i in 0..3 {
            server.push(Reply::sse(final_result(
                style,
                &format!("call_{i}"),
                r#"{"city":"Lisbon"}"#,
            )));
        }
        let mut agent = agent(style, &server);
        let err = agent
            .run_typed::<Capital>("The capital of Portugal?")
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidOutput { path, message } if path == "." && message.contains("missing field `population`")),
            "{err:?}"
        );
        assert_eq!(server.requests().len(), 3);
        // Every call got its result: the conversation stays valid.
        let last = agent.conversation().messages.last().unwrap();
        assert_eq!(last.role, panto_core::Role::User);
    }
}

#[tokio::test]
async fn run_typed_reads_a_json_text_answer_and_refuses_prose() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(text(
            style,
            "```json\n{\"city\": \"Lisbon\", \"population\": 3}\n```",
        )));
        server.push(Reply::sse(text(style, "I would rather not say.")));
        server.push(Reply::sse(text(style, "{\"city\": 4}")));
        let mut agent = agent(style, &server);
        let capital: Capital = agent.run_typed("The capital?").await.unwrap();
        assert_eq!(capital.population, 3);

        let err = agent.run_typed::<Capital>("The capital?").await.unwrap_err();
        assert!(matches!(err, Error::MissingOutput { .. }), "{err:?}");
        assert!(err.to_string().contains("without giving its result"), "{err}");

        let err = agent.run_typed::<Capital>("The capital?").await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidOutput { path, .. } if path == "city"),
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn run_typed_wraps_a_result_that_is_not_an_object() {
    for style in STYLES {
        let server = MockServer::start().await;
        server.push(Reply::sse(final_result(
            style,
            "call_1",
            r#"{"result":["Porto","Faro"]}"#,
        )));
        let mut agent = agent(style, &server);
        let cities: Vec<String> = agent.run_typed("Two cities?").await.unwrap();
        assert_eq!(cities, ["Porto", "Faro"]);
        let schema = wire_schema(style, &body(&server.requests(), 0), "final_result");
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["result"]));
        assert_eq!(schema["properties"]["result"]["type"], "array");
    }
}

#[tokio::test]
async fn run_typed_with_anthropic_thinking_does_not_force_the_tool() {
    let server = MockServer::start().await;
    let input = r#"{"city":"Lisbon","population":2}"#;
    server.push(Reply::sse(final_result(ApiStyle::AnthropicMessages, "call_1", input)));
    let mut config = config(ApiStyle::AnthropicMessages, &server);
    config.provider.reasoning = ReasoningEffort::Low;
    let mut agent = panto_core::Agent::new(
        config,
        panto_core::Session::create(panto_core::NullStore::shared()),
        None,
    )
    .unwrap();
    let capital: Capital = agent.run_typed("The capital?").await.unwrap();
    assert_eq!(capital.population, 2);
    let first = body(&server.requests(), 0);
    assert!(first.get("tool_choice").is_none(), "{first}");
}

#[tokio::test]
async fn run_typed_refuses_a_registered_tool_of_the_same_name_and_restores_tools_when_dropped() {
    let server = MockServer::start().await;
    let mut agent = agent(ApiStyle::OpenAiChat, &server);
    agent
        .register_tool(tool_fn("final_result", "mine", |_: TripArgs, _call| async {
            Ok(ToolCallResult::text(""))
        }))
        .unwrap();
    let err = agent.run_typed::<Capital>("x").await.unwrap_err();
    assert!(matches!(err, Error::InvalidTool { .. }), "{err:?}");
    assert!(server.requests().is_empty());

    // A typed turn dropped while it waits for the provider leaves the agent's tools as they were.
    agent.unregister_tool("final_result");
    server.push(Reply::hang());
    let pending = agent.run_typed::<Capital>("x").now_or_never();
    assert!(pending.is_none());
    assert!(agent.tools().is_empty());
}
