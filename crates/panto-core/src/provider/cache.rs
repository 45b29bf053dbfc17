//! Prompt caching rules shared by the API styles.
//!
//! Anthropic caches only where a request asks (`cache_control` breakpoints, placed in
//! `anthropic/cache.rs`); OpenAI caches every long prefix by itself and only needs to be told
//! which requests belong together (`prompt_cache_key`). What keeps a cache warm in both is a
//! request whose start never changes: tools in registration order, the system prompt as
//! configured, the history as it was sent, JSON with its keys in one order (serde_json's map is
//! sorted here, so every body panto writes has one byte form).
//!
//! What changes the start of a request, and so is paid for once at the full price: a model or
//! provider switch (`Agent::set_config`), a system prompt added or replaced, a tool registered or
//! unregistered, a compaction (the summary replaces the history). Each happens once and the
//! requests after it read the new prefix again.

use super::ProviderRequest;
use crate::config::CacheMode;

/// The `prompt_cache_key` an OpenAI-style request carries: the session id, when the provider
/// is configured to send it and caching is on. Any OpenAI-style encoder (Chat Completions,
/// Responses) calls this, so the rule is written once.
pub(crate) fn prompt_cache_key<'a>(req: &ProviderRequest<'a>) -> Option<&'a str> {
    let config = req.config;
    (config.cache == CacheMode::Auto && config.prompt_cache_key && !req.session_id.is_empty()).then_some(req.session_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ApiStyle, ProviderConfig};

    #[test]
    fn the_key_is_the_session_id_only_when_asked_for_and_caching() {
        let on = ProviderConfig::new(ApiStyle::OpenAiChat, "m")
            .with_base_url("http://h/v1")
            .with_prompt_cache_key(true);
        let request = |config, session_id| ProviderRequest {
            config,
            system: &[],
            messages: &[],
            tools: &[],
            require_tool: false,
            session_id,
        };
        assert_eq!(prompt_cache_key(&request(&on, "0190abcd")), Some("0190abcd"));
        assert_eq!(prompt_cache_key(&request(&on, "")), None);
        let off = on.clone().with_cache(CacheMode::Off);
        assert_eq!(prompt_cache_key(&request(&off, "0190abcd")), None);
        let not_asked = on.clone().with_prompt_cache_key(false);
        assert_eq!(prompt_cache_key(&request(&not_asked, "0190abcd")), None);
    }
}
