//! The provider a request goes to: its protocol, address, key and model, the limits on what it
//! may send back, and prompt caching.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::identity::{strip_userinfo, ApiStyle, ProviderIdentity, ReasoningEffort};

/// The default of [`ProviderConfig::max_event_bytes`]: 16 MiB.
pub(crate) const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The default of [`ProviderConfig::max_response_bytes`]: 256 MiB.
const DEFAULT_MAX_RESPONSE_BYTES: u64 = 256 * 1024 * 1024;

/// Whether panto asks the provider to cache request prefixes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheMode {
    /// Anthropic: panto places `cache_control` breakpoints itself (at most 4: the end of the
    /// tools, the end of the system prompt, the newest message, and the previous request's end
    /// when it is too far back for the API's lookback), so each request reads what the previous
    /// one wrote. OpenAI caches by itself; there this only allows `prompt_cache_key`.
    #[default]
    Auto,
    /// No breakpoints and no `prompt_cache_key`: every request is billed at the full input price.
    Off,
}

impl CacheMode {
    /// The canonical name, as written in configs.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheMode::Auto => "auto",
            CacheMode::Off => "off",
        }
    }
}

/// How long a prompt-cache entry lives after it was last written or read (Anthropic's
/// `cache_control.ttl`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CacheTtl {
    /// Five minutes, the API's default; writes cost 1.25x the input price.
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// One hour; writes cost 2x the input price, worth it when turns are more than five minutes
    /// apart (a person thinking between prompts, a service's slow queue).
    #[serde(rename = "1h")]
    OneHour,
}

impl CacheTtl {
    /// The wire and config spelling: `5m` or `1h`.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheTtl::FiveMinutes => "5m",
            CacheTtl::OneHour => "1h",
        }
    }
}

impl fmt::Display for CacheTtl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for CacheMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One provider endpoint and model.
///
/// Built with [`ProviderConfig::new`] (the style and the model) and the `with_*` setters, each
/// naming what it sets, so a key cannot land where the model or the URL belongs (fields may be
/// added in later versions, so it cannot be written as a struct literal outside panto-core):
///
/// ```
/// use panto_core::{ApiStyle, ProviderConfig, ReasoningEffort};
/// let provider = ProviderConfig::new(ApiStyle::OpenAiChat, "qwen3")
///     .with_base_url("http://127.0.0.1:8080/v1")
///     .with_reasoning(ReasoningEffort::Low)
///     .with_max_tokens(4_096)
///     .with_header("x-team", "search");
/// assert_eq!(provider.model, "qwen3");
/// assert_eq!(provider.max_tokens, 4_096);
///
/// // The vendor's own API: the base URL is the style's default.
/// let claude = ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
///     .with_api_key("sk-ant-...");
/// assert_eq!(claude.base_url, "https://api.anthropic.com");
/// ```
///
/// The URL and the key are never positional arguments; the four-argument form of other
/// libraries does not compile:
///
/// ```compile_fail,E0061
/// # use panto_core::{ApiStyle, ProviderConfig};
/// let provider = ProviderConfig::new(ApiStyle::OpenAiChat, "http://127.0.0.1:8080/v1", "qwen3", "sk-key");
/// ```
#[derive(Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProviderConfig {
    /// The protocol.
    pub api_style: ApiStyle,
    /// Anthropic: the host root (panto appends `/v1/messages`). OpenAI: the API root including
    /// `/v1` (panto appends `/chat/completions`). The same meaning the official SDKs give
    /// `ANTHROPIC_BASE_URL` and `OPENAI_BASE_URL`.
    ///
    /// Credentials in it (`http://user:secret@proxy/v1`) are sent as HTTP basic auth, and are
    /// never recorded or shown: the session's [`ProviderIdentity`], errors and `Debug` output carry
    /// the URL without them ([`strip_userinfo`](crate::wire::strip_userinfo)).
    pub base_url: String,
    /// The API key. Never serialised, never logged, never persisted.
    #[serde(default, skip_serializing)]
    pub api_key: String,
    /// The wire model name.
    pub model: String,
    /// Reasoning effort.
    #[serde(default)]
    pub reasoning: ReasoningEffort,
    /// The output token limit sent with every request.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// Extra HTTP headers sent with every request (name, value).
    #[serde(default)]
    pub extra_headers: Vec<(String, String)>,
    /// The most bytes one server-sent event of a response may take (its lines and their line
    /// ends). A longer event fails the request with [`Error::Protocol`](crate::Error::Protocol),
    /// which is not retried, instead of being buffered without bound. Default 16 MiB, far above
    /// any real event (a large tool call's arguments arrive as many small deltas).
    #[serde(default = "default_max_event_bytes")]
    pub max_event_bytes: usize,
    /// The most bytes one response's body may take. A server that streams past it (deltas
    /// without end) fails the request with [`Error::Protocol`](crate::Error::Protocol), which is
    /// not retried, instead of growing the message in memory without bound. Default 256 MiB:
    /// the longest answers models give today (128,000 tokens, streamed as a few tokens per
    /// event of a few hundred bytes) take tens of megabytes.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: u64,
    /// Whether requests ask for prompt caching. Default [`CacheMode::Auto`].
    #[serde(default)]
    pub cache: CacheMode,
    /// The lifetime of the cache entries panto asks for (Anthropic). Default five minutes.
    #[serde(default)]
    pub cache_ttl: CacheTtl,
    /// OpenAI styles: send the session id as `prompt_cache_key`, which keeps one session's
    /// requests on the same cache. Off by default, since some compatible servers reject unknown
    /// fields; front ends turn it on for OpenAI's own API. Ignored with [`CacheMode::Off`] and
    /// by Anthropic.
    #[serde(default)]
    pub prompt_cache_key: bool,
    /// Speak HTTP/2 from a connection's first byte ("prior knowledge") instead of asking for it.
    /// Over `https://` panto offers HTTP/2 whenever the server does (TLS ALPN), so this is for
    /// plain `http://` servers known to speak cleartext HTTP/2 (h2c): a local gateway, the test
    /// mock. The agents sharing this config's client then multiplex their requests as streams
    /// of one connection instead of holding a connection per request in flight. Off by default,
    /// since an HTTP/1-only server refuses such a connection. Set it with
    /// [`ProviderConfig::with_http2_prior_knowledge`], which gives the config a client of its own.
    #[serde(default)]
    pub http2_prior_knowledge: bool,
    /// The HTTP client of this provider, built on first use and shared by every clone of this
    /// config (so by every agent made from one), whatever `with_*` changes a clone gets after.
    #[serde(skip)]
    pub(crate) client: SharedClient,
}

/// One HTTP client (one connection pool) shared by the clones of a [`ProviderConfig`]: agents
/// of one provider reuse each other's connections instead of each opening its own, and an idle
/// agent holds no connection of its own. Built by `ProviderConfig::http_client`
/// (provider/http.rs).
#[derive(Clone, Default)]
pub(crate) struct SharedClient(pub(crate) Arc<OnceLock<reqwest::Client>>);

fn default_max_event_bytes() -> usize {
    DEFAULT_MAX_EVENT_BYTES
}

fn default_max_response_bytes() -> u64 {
    DEFAULT_MAX_RESPONSE_BYTES
}

fn default_max_tokens() -> u32 {
    8_192
}

impl ProviderConfig {
    /// A provider speaking `api_style` to `model`, at the style's
    /// [default base URL](ApiStyle::default_base_url), with no API key, the default reasoning and
    /// token limit and no extra headers. Set the rest with the `with_*` setters
    /// ([`with_base_url`](ProviderConfig::with_base_url),
    /// [`with_api_key`](ProviderConfig::with_api_key), …).
    pub fn new(api_style: ApiStyle, model: impl Into<String>) -> Self {
        ProviderConfig {
            api_style,
            base_url: api_style.default_base_url().to_owned(),
            api_key: String::new(),
            model: model.into(),
            reasoning: ReasoningEffort::Off,
            max_tokens: default_max_tokens(),
            extra_headers: Vec::new(),
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            cache: CacheMode::Auto,
            cache_ttl: CacheTtl::FiveMinutes,
            prompt_cache_key: false,
            http2_prior_knowledge: false,
            client: SharedClient::default(),
        }
    }

    /// With this base URL (see [`ProviderConfig::base_url`] for what it includes).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// With this API key (sent as `x-api-key` to Anthropic, as a bearer token to the OpenAI
    /// styles). Empty by default; the OpenAI styles then send no `authorization` header, as
    /// local servers need none.
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = api_key.into();
        self
    }

    /// With HTTP/2 prior knowledge on or off ([`ProviderConfig::http2_prior_knowledge`]). The
    /// config gets a new HTTP client, shared from then on by its own clones, since a client's
    /// connections speak one protocol.
    pub fn with_http2_prior_knowledge(mut self, on: bool) -> Self {
        self.http2_prior_knowledge = on;
        self.client = SharedClient::default();
        self
    }

    /// With prompt caching on ([`CacheMode::Auto`]) or off.
    pub fn with_cache(mut self, cache: CacheMode) -> Self {
        self.cache = cache;
        self
    }

    /// With cache entries of this lifetime.
    pub fn with_cache_ttl(mut self, ttl: CacheTtl) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// With the session id sent as `prompt_cache_key` (OpenAI styles) or not.
    pub fn with_prompt_cache_key(mut self, send: bool) -> Self {
        self.prompt_cache_key = send;
        self
    }

    /// With this reasoning effort.
    pub fn with_reasoning(mut self, reasoning: ReasoningEffort) -> Self {
        self.reasoning = reasoning;
        self
    }

    /// With this output token limit.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// With one more HTTP header sent with every request. A header of the same name as one panto
    /// sends (`x-api-key`, `authorization`, …) replaces panto's. Checked when a request is built:
    /// an invalid name or value is [`Error::InvalidHeader`](crate::Error::InvalidHeader).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_headers.push((name.into(), value.into()));
        self
    }

    /// The identity sessions record: style, base URL without credentials, model, reasoning. No
    /// key.
    pub fn wire_identity(&self) -> ProviderIdentity {
        ProviderIdentity::new(self.api_style, &self.base_url, self.model.clone(), self.reasoning)
    }
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key is redacted so that a `{:?}` in a log line cannot leak it.
        f.debug_struct("ProviderConfig")
            .field("api_style", &self.api_style)
            .field("base_url", &strip_userinfo(&self.base_url))
            .field("api_key", &"<redacted>")
            .field("model", &self.model)
            .field("reasoning", &self.reasoning)
            .field("max_tokens", &self.max_tokens)
            .field("extra_headers", &self.extra_headers.len())
            .field("max_event_bytes", &self.max_event_bytes)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("cache", &self.cache)
            .field("cache_ttl", &self.cache_ttl)
            .field("prompt_cache_key", &self.prompt_cache_key)
            .field("http2_prior_knowledge", &self.http2_prior_knowledge)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn new_starts_at_the_styles_vendor_root_and_setters_name_each_field() {
        let openai = ProviderConfig::new(ApiStyle::OpenAiResponses, "gpt-5");
        assert_eq!(
            (openai.base_url.as_str(), openai.api_key.as_str(), openai.model.as_str()),
            ("https://api.openai.com/v1", "", "gpt-5")
        );
        let local = ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
            .with_api_key("sk-ant-key")
            .with_base_url("http://127.0.0.1:8080");
        assert_eq!(local.base_url, "http://127.0.0.1:8080");
        assert_eq!(local.api_key, "sk-ant-key");
        assert_eq!(local.model, "claude-sonnet-4-5");
        assert_eq!(
            ProviderConfig::new(ApiStyle::AnthropicMessages, "m").base_url,
            "https://api.anthropic.com"
        );
    }

    #[test]
    fn debug_never_shows_the_key() {
        let p = ProviderConfig::new(ApiStyle::OpenAiChat, "m")
            .with_base_url("http://x/v1")
            .with_api_key("sk-secret-123");
        assert!(!format!("{p:?}").contains("sk-secret-123"));
    }

    #[test]
    fn credentials_in_the_base_url_reach_neither_the_provider_identity_nor_debug() {
        let p = ProviderConfig::new(ApiStyle::OpenAiChat, "m")
            .with_base_url("http://user:pw-secret@proxy/v1")
            .with_api_key("k");
        assert_eq!(p.wire_identity().base_url, "http://proxy/v1");
        let debug = format!("{:?}", Config::new(p));
        assert!(
            !debug.contains("pw-secret") && debug.contains("http://proxy/v1"),
            "{debug}"
        );
    }
}
