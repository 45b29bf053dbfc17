//! Typed tools: arguments as a Rust type whose JSON schema is generated from it.
//!
//! The schema comes from `schemars` (doc comments become descriptions), inlined into one plain
//! object schema without `$ref`/`$defs`, which is what both APIs document for tool input. The
//! model's arguments are untrusted: they are deserialised before the tool body runs, and a
//! mismatch becomes an error result naming the field (serde's path), which the model can correct.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Tool, ToolCall, ToolCallResult, ToolDecl, ToolError};

/// The JSON schema of `T` as providers take it: every subschema inlined, no `$schema` or root
/// `title`. (A recursive type still needs `$defs`; schemars keeps them for those.)
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .for_deserialize();
    let mut schema = settings.into_generator().into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        // The Rust type's name tells the model nothing the tool's own name does not.
        map.remove("title");
    }
    schema
}

/// Whether `schema` describes a JSON object at its root, the only tool input both APIs accept.
pub(crate) fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// Why a value does not deserialise into the requested type: where, and serde's message.
#[derive(Debug)]
pub(crate) struct Mismatch {
    /// The path of the offending field, `.` for the value as a whole.
    pub path: String,
    /// serde's message.
    pub message: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path == "." {
            write!(f, "invalid arguments: {}", self.message)
        } else {
            write!(f, "invalid arguments at `{}`: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for Mismatch {}

/// Deserialises `value` into `T`, saying where it does not fit.
pub(crate) fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, Mismatch> {
    serde_path_to_error::deserialize(value).map_err(|e| Mismatch {
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

impl ToolDecl {
    /// The declaration of a tool whose arguments are `A`: the input schema is generated from `A`
    /// (its doc comments become the fields' descriptions). For a hand-written [`Tool`] with typed
    /// arguments; [`tool_fn`] builds the whole tool from a function.
    ///
    /// `A` must deserialise from a JSON object (a struct with named fields, or a map): both APIs
    /// accept nothing else as tool input.
    pub fn for_args<A: JsonSchema>(name: impl Into<String>, description: impl Into<String>) -> Self {
        ToolDecl {
            name: name.into(),
            description: description.into(),
            input_schema: schema_of::<A>(),
        }
    }
}

impl ToolCall {
    /// The call's arguments as `A`. The model's JSON is untrusted: when it does not fit, the error
    /// names the field and what is wrong (for example ``invalid arguments at `stops[1].nights`:
    /// invalid type: string "three", expected u32``), and returned from [`Tool::call`] it becomes
    /// an error result the model can correct.
    pub fn args<A: DeserializeOwned>(&self) -> Result<A, ToolError> {
        Ok(from_value(&self.input)?)
    }
}

/// A tool made from an async function of typed arguments.
///
/// The input schema is generated from `A` (see [`ToolDecl::for_args`]). Each call's arguments are
/// deserialised into `A` first; when they do not fit, `f` is not called and the model gets an
/// error result naming the field, so it can try again. `f` also receives the [`ToolCall`], for
/// its id and its cancellation token.
///
/// `f` returns `Ok` with anything that converts into a [`ToolCallResult`] (a `String`, a `&str`
/// or a `ToolCallResult`), or `Err` with any error (`?` works on any `std::error::Error`); an
/// `Err` becomes an error result whose text is the error's message.
///
/// ```
/// use panto_core::{tool_fn, ToolCallResult};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct WeatherArgs {
///     /// The city, e.g. "Lisbon".
///     city: String,
///     /// Fahrenheit instead of Celsius.
///     #[serde(default)]
///     fahrenheit: bool,
/// }
///
/// let weather = tool_fn(
///     "weather",
///     "The current temperature in a city.",
///     |args: WeatherArgs, _call| async move {
///         let unit = if args.fahrenheit { "°F" } else { "°C" };
///         Ok(format!("21{unit} in {}", args.city))
///     },
/// );
/// let schema = &weather.declaration().input_schema;
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["properties"]["city"]["description"], "The city, e.g. \"Lisbon\".");
/// # let _: &dyn panto_core::Tool = &*weather;
/// # let _ = ToolCallResult::text("");
/// ```
pub fn tool_fn<A, F, Fut, R>(name: impl Into<String>, description: impl Into<String>, f: F) -> Arc<dyn Tool>
where
    A: JsonSchema + DeserializeOwned + Send + 'static,
    F: Fn(A, ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<ToolCallResult> + 'static,
{
    Arc::new(FnTool {
        decl: ToolDecl::for_args::<A>(name, description),
        f,
        args: PhantomData,
    })
}

struct FnTool<A, F> {
    decl: ToolDecl,
    f: F,
    /// `fn(A)`: the tool takes `A` but holds none, so it is `Send + Sync` whatever `A` is.
    args: PhantomData<fn(A)>,
}

#[async_trait]
impl<A, F, Fut, R> Tool for FnTool<A, F>
where
    A: JsonSchema + DeserializeOwned + Send + 'static,
    F: Fn(A, ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<ToolCallResult> + 'static,
{
    fn declaration(&self) -> ToolDecl {
        self.decl.clone()
    }

    async fn call(&self, call: ToolCall) -> Result<ToolCallResult, ToolError> {
        let args = call.args::<A>()?;
        Ok((self.f)(args, call).await?.into())
    }
}

impl From<String> for ToolCallResult {
    /// A successful result holding this text.
    fn from(text: String) -> Self {
        ToolCallResult::text(text)
    }
}

impl From<&str> for ToolCallResult {
    /// A successful result holding this text.
    fn from(text: &str) -> Self {
        ToolCallResult::text(text)
    }
}
