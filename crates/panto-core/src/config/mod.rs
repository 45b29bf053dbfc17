//! Agent configuration: which provider and model, retry, compaction, limits.
//!
//! `Config` deserialises from JSON (the C ABI builds it from a JSON document) with every field but
//! the provider's `api_style`, `base_url` and `model` optional. It is never serialised by panto:
//! the API key must not reach a file.
//!
//! One file per section: `provider.rs` (the provider, its limits and prompt caching), `retry.rs`,
//! `compaction.rs`; this file holds the [`Config`] that gathers them and the agent-wide limits.

mod compaction;
mod provider;
mod retry;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::identity::{ApiStyle, ReasoningEffort};

pub use compaction::{CompactionConfig, DEFAULT_COMPACTION_PROMPT};
pub(crate) use provider::DEFAULT_MAX_EVENT_BYTES;
pub use provider::{CacheMode, CacheTtl, ProviderConfig};
pub use retry::RetryConfig;

/// Serde helpers for durations written as integer milliseconds.
mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis().min(u64::MAX as u128) as u64)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

/// Everything an [`Agent`](crate::Agent) needs besides its tools and session.
///
/// Built with [`Config::new`] and the `with_*` setters; every setting but the provider has a
/// default. Fields may be added in later versions, so it cannot be written as a struct literal
/// outside panto-core; its public fields can still be read and changed.
///
/// ```
/// use std::time::Duration;
/// use panto_core::{ApiStyle, Config, ProviderConfig};
/// let config = Config::new(
///     ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
///         .with_base_url("http://127.0.0.1:8080")
///         .with_api_key("my-api-key"),
/// )
/// .with_max_steps(20)
/// .with_idle_timeout(Duration::from_secs(60));
/// assert_eq!(config.max_steps, 20);
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Config {
    /// The provider and model.
    pub provider: ProviderConfig,
    /// Retry policy.
    #[serde(default)]
    pub retry: RetryConfig,
    /// Compaction policy.
    #[serde(default)]
    pub compaction: CompactionConfig,
    /// The most provider requests one turn may make before it stops.
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    /// How long a response may go without a byte before the request fails.
    #[serde(default = "default_idle_timeout", with = "millis", rename = "idle_timeout_ms")]
    pub idle_timeout: Duration,
    /// The longer side, in pixels, that tool-returned images are resized down to.
    #[serde(default = "default_max_image_dimension")]
    pub max_image_dimension: u32,
    /// Whether the tracing spans and events panto emits (docs/observability.md) may carry
    /// message and tool content: the user's prompt, the model's answer, tool arguments and
    /// results. Off by default, so a log or a trace export holds timings, sizes and token counts
    /// only. The API key and configured header values are scrubbed from recorded text either way.
    #[serde(default)]
    pub log_content: bool,
}

fn default_max_steps() -> u32 {
    50
}

fn default_idle_timeout() -> Duration {
    Duration::from_secs(120)
}

fn default_max_image_dimension() -> u32 {
    1568
}

impl Config {
    /// A config for `provider` with every other setting at its default.
    pub fn new(provider: ProviderConfig) -> Self {
        Config {
            provider,
            retry: RetryConfig::default(),
            compaction: CompactionConfig::default(),
            max_steps: default_max_steps(),
            idle_timeout: default_idle_timeout(),
            max_image_dimension: default_max_image_dimension(),
            log_content: false,
        }
    }

    /// With this retry policy.
    pub fn with_retry(mut self, retry: RetryConfig) -> Self {
        self.retry = retry;
        self
    }

    /// With this compaction policy.
    pub fn with_compaction(mut self, compaction: CompactionConfig) -> Self {
        self.compaction = compaction;
        self
    }

    /// With at most this many provider requests per turn.
    pub fn with_max_steps(mut self, max_steps: u32) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// With this idle timeout: how long a response may go without a byte.
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }

    /// With tool-returned and attached images resized so their longer side is at most this many
    /// pixels.
    pub fn with_max_image_dimension(mut self, pixels: u32) -> Self {
        self.max_image_dimension = pixels;
        self
    }

    /// With message and tool content in the tracing spans and events ([`Config::log_content`]).
    pub fn with_log_content(mut self, log_content: bool) -> Self {
        self.log_content = log_content;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_change_only_their_field() {
        let p = ProviderConfig::new(ApiStyle::AnthropicMessages, "m")
            .with_base_url("http://x")
            .with_api_key("k")
            .with_reasoning(ReasoningEffort::High)
            .with_max_tokens(100)
            .with_header("x-a", "1")
            .with_header("x-b", "2");
        assert_eq!(p.reasoning, ReasoningEffort::High);
        assert_eq!(p.max_tokens, 100);
        assert_eq!(
            p.extra_headers,
            [("x-a".into(), "1".into()), ("x-b".into(), "2".into())]
        );
        assert_eq!((p.base_url.as_str(), p.model.as_str()), ("http://x", "m"));

        let retry = RetryConfig {
            max_attempts: 1,
            ..RetryConfig::default()
        };
        let compaction = CompactionConfig {
            enabled: false,
            ..CompactionConfig::default()
        };
        let c = Config::new(p)
            .with_retry(retry.clone())
            .with_compaction(compaction.clone())
            .with_max_steps(3)
            .with_idle_timeout(Duration::from_secs(1))
            .with_max_image_dimension(64);
        assert_eq!(c.retry, retry);
        assert_eq!(c.compaction, compaction);
        assert_eq!(
            (c.max_steps, c.idle_timeout, c.max_image_dimension),
            (3, Duration::from_secs(1), 64)
        );
    }

    #[test]
    fn cache_settings_from_json_and_setters() {
        let c: Config = serde_json::from_str(
            r#"{"provider":{"api_style":"openai-chat","base_url":"http://h/v1","model":"m",
                "cache":"off","cache_ttl":"1h","prompt_cache_key":true}}"#,
        )
        .unwrap();
        assert_eq!(
            (c.provider.cache, c.provider.cache_ttl, c.provider.prompt_cache_key),
            (CacheMode::Off, CacheTtl::OneHour, true)
        );
        let bad = serde_json::from_str::<Config>(
            r#"{"provider":{"api_style":"openai-chat","base_url":"h","model":"m","cache_ttl":"2h"}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(bad.contains("2h") && bad.contains("5m"), "{bad}");
        let p = ProviderConfig::new(ApiStyle::AnthropicMessages, "m")
            .with_base_url("http://x")
            .with_api_key("k")
            .with_cache(CacheMode::Off)
            .with_cache_ttl(CacheTtl::OneHour)
            .with_prompt_cache_key(true);
        assert_eq!(
            (p.cache, p.cache_ttl, p.prompt_cache_key),
            (CacheMode::Off, CacheTtl::OneHour, true)
        );
    }

    #[test]
    fn config_from_minimal_json() {
        let c: Config = serde_json::from_str(
            r#"{"provider":{"api_style":"openai-chat","base_url":"http://h/v1","model":"m","api_key":"k"},
                "retry":{"max_attempts":2},"idle_timeout_ms":1500}"#,
        )
        .unwrap();
        assert_eq!(c.provider.api_key, "k");
        assert_eq!(c.retry.max_attempts, 2);
        assert_eq!(c.retry.base_delay, Duration::from_millis(500));
        assert_eq!(c.idle_timeout, Duration::from_millis(1500));
        assert_eq!(c.max_image_dimension, 1568);
        assert_eq!(c.provider.max_event_bytes, 16 * 1024 * 1024);
        assert_eq!(c.provider.max_response_bytes, 256 * 1024 * 1024);
        assert_eq!(
            (c.provider.cache, c.provider.cache_ttl, c.provider.prompt_cache_key),
            (CacheMode::Auto, CacheTtl::FiveMinutes, false)
        );
        let back = serde_json::to_string(&c).unwrap();
        assert!(!back.contains("\"k\""), "the key must not serialise: {back}");
    }
}
