//! `[providers.NAME]`: the built-in providers (their keys and base URLs from the environment),
//! and the configured ones.

use std::collections::BTreeMap;

use panto_core::{ApiStyle, CacheMode, CacheTtl};
use toml::Spanned;

use super::file::{CacheEntry, ProviderEntry, Source};
use super::secret::{self, shown_var};
use super::Env;
use crate::exit::Failure;

/// The official Anthropic API root (panto appends `/v1/messages`), the default of
/// `ANTHROPIC_BASE_URL`.
pub const ANTHROPIC_API_ROOT: &str = "https://api.anthropic.com";
/// The official OpenAI API root including `/v1` (panto appends `/chat/completions`), the default
/// of `OPENAI_BASE_URL`.
pub const OPENAI_API_ROOT: &str = "https://api.openai.com/v1";
/// The model used with `ANTHROPIC_API_KEY` and no configured alias.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The model used with `OPENAI_API_KEY` and no configured alias.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o";
/// The model a provider with `api_style = "openai-responses"` uses when no alias names one.
pub const DEFAULT_RESPONSES_MODEL: &str = "gpt-5";

/// The built-in providers: name, style, key variable, base-URL variable, official root, default
/// model. A `[providers.NAME]` table of the same name replaces one.
const BUILTIN_PROVIDERS: [(&str, ApiStyle, &str, &str, &str, &str); 2] = [
    (
        "anthropic",
        ApiStyle::AnthropicMessages,
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        ANTHROPIC_API_ROOT,
        DEFAULT_ANTHROPIC_MODEL,
    ),
    (
        "openai",
        ApiStyle::OpenAiChat,
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        OPENAI_API_ROOT,
        DEFAULT_OPENAI_MODEL,
    ),
];

/// The official API root of a style: what a configured provider without `base_url` uses.
pub fn official_root(style: ApiStyle) -> &'static str {
    match style {
        ApiStyle::AnthropicMessages => ANTHROPIC_API_ROOT,
        ApiStyle::OpenAiChat | ApiStyle::OpenAiResponses => OPENAI_API_ROOT,
    }
}

/// The default wire model of a style, for zero-config use.
pub fn default_model_for(style: ApiStyle) -> &'static str {
    match style {
        ApiStyle::AnthropicMessages => DEFAULT_ANTHROPIC_MODEL,
        ApiStyle::OpenAiChat => DEFAULT_OPENAI_MODEL,
        ApiStyle::OpenAiResponses => DEFAULT_RESPONSES_MODEL,
    }
}

/// The context window assumed for a model without a configured `context_window`.
pub fn default_context_window(style: ApiStyle) -> u64 {
    match style {
        ApiStyle::AnthropicMessages => 200_000,
        ApiStyle::OpenAiChat => 128_000,
        // gpt-5's input limit (its 400,000-token window less the 128,000 it keeps for output).
        ApiStyle::OpenAiResponses => 272_000,
    }
}

/// Where a provider's key comes from, resolved against the environment at load time.
#[derive(Clone, PartialEq, Eq)]
pub enum Key {
    /// The key.
    Value(String),
    /// The provider names this variable, and it is not set.
    Missing(String),
    /// The provider needs no key (a local server).
    NotNeeded,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key itself.
        match self {
            Key::Value(_) => f.write_str("Value(<redacted>)"),
            Key::Missing(var) => write!(f, "Missing({})", shown_var(var)),
            Key::NotNeeded => f.write_str("NotNeeded"),
        }
    }
}

/// A provider endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct Provider {
    /// Its name in the config (`anthropic`, `openai` for the built-ins).
    pub name: String,
    /// The protocol.
    pub api_style: ApiStyle,
    /// The base URL, as the official SDKs mean it for the style.
    pub base_url: String,
    /// The key.
    pub key: Key,
    /// The variable the key comes from, for messages.
    pub key_env: Option<String>,
    /// Where the key was read, for a message that refuses it: the variable's name, or the
    /// config file's `api_key`; `None` when no key is sent.
    pub key_origin: Option<String>,
    /// Extra HTTP headers.
    pub headers: Vec<(String, String)>,
    /// Prompt caching on or off.
    pub cache: CacheMode,
    /// The lifetime of cache entries.
    pub cache_ttl: CacheTtl,
    /// Whether OpenAI styles send the session id as `prompt_cache_key`.
    pub prompt_cache_key: bool,
}

impl Provider {
    /// For an error that refuses the key (HTTP 401 or 403): where the key came from, so the
    /// user knows which to fix (`the key was ANTHROPIC_API_KEY's`). `None` for any other error.
    pub fn key_hint(&self, error: &panto_core::Error) -> Option<String> {
        let panto_core::Error::Http { status: 401 | 403, .. } = error else {
            return None;
        };
        Some(match &self.key_origin {
            Some(origin) if self.key_env.as_deref() == Some(origin.as_str()) => {
                format!("the key sent to {} was {}'s", self.name, shown_var(origin))
            }
            Some(origin) => format!("the key sent to {} was {origin}", self.name),
            None => format!("no key was sent to {} (none is configured for it)", self.name),
        })
    }
}

/// The caching a provider gets: its own setting, else `[cache]`'s, else the default. Only
/// OpenAI's own API gets `prompt_cache_key` by default, since some compatible servers reject
/// fields they do not know.
fn cache_settings(own: Option<&ProviderEntry>, defaults: &CacheEntry, base_url: &str) -> (CacheMode, CacheTtl, bool) {
    let mode = own.and_then(|e| e.cache).or(defaults.mode).unwrap_or_default();
    let ttl = own.and_then(|e| e.cache_ttl).or(defaults.ttl).unwrap_or_default();
    let key = own
        .and_then(|e| e.prompt_cache_key)
        .or(defaults.prompt_cache_key)
        .unwrap_or_else(|| base_url.trim_end_matches('/') == OPENAI_API_ROOT);
    (mode, ttl, key)
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `key_env` may hold a key written where its variable's name belongs.
        f.debug_struct("Provider")
            .field("name", &self.name)
            .field("api_style", &self.api_style)
            .field("base_url", &self.base_url)
            .field("key", &self.key)
            .field("key_env", &self.key_env.as_deref().map(shown_var))
            .field("key_origin", &self.key_origin.as_deref().map(shown_var))
            .field("headers", &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .finish()
    }
}

/// The providers: the built-ins not replaced by a table of the same name, then the configured
/// ones, each with its key resolved against the environment.
pub fn resolve(
    providers_section: &BTreeMap<String, Spanned<ProviderEntry>>,
    cache_defaults: &CacheEntry,
    env: &Env,
    source: &Source<'_>,
) -> Result<Vec<Provider>, Failure> {
    let mut providers: Vec<Provider> = Vec::new();
    for (name, style, key_var, url_var, root, _) in BUILTIN_PROVIDERS {
        if providers_section.contains_key(name) {
            continue;
        }
        let base_url = env.get(url_var).unwrap_or(root).to_owned();
        let (cache, cache_ttl, prompt_cache_key) = cache_settings(None, cache_defaults, &base_url);
        providers.push(Provider {
            name: name.to_owned(),
            api_style: style,
            base_url,
            cache,
            cache_ttl,
            prompt_cache_key,
            key: env
                .get(key_var)
                .map_or_else(|| Key::Missing(key_var.to_owned()), |k| Key::Value(k.to_owned())),
            key_env: Some(key_var.to_owned()),
            key_origin: env.get(key_var).map(|_| key_var.to_owned()),
            headers: Vec::new(),
        });
    }
    for (name, entry) in providers_section {
        let span = entry.span();
        let entry = entry.get_ref();
        let base_url = match &entry.base_url {
            Some(url) => {
                let value = url.get_ref().trim();
                if !(value.starts_with("http://") || value.starts_with("https://")) {
                    return Err(source.error(
                        url.span(),
                        format!("providers.{name}.base_url must start with http:// or https://, got {value:?}"),
                    ));
                }
                value.to_owned()
            }
            None => official_root(entry.api_style).to_owned(),
        };
        if let Some(var) = &entry.api_key_env {
            // A key pasted where its variable's name belongs: say so without repeating it.
            if !secret::is_var_name(var.get_ref()) {
                return Err(source.error(
                    var.span(),
                    format!(
                        "providers.{name}.api_key_env must be the NAME of an environment variable (letters, \
                         digits, _), not the key itself: put the key in a variable (export MY_KEY=…) and \
                         write api_key_env = \"MY_KEY\""
                    ),
                ));
            }
        }
        let key_env = entry.api_key_env.as_ref().map(|v| v.get_ref().clone());
        let key = match (&entry.api_key, &key_env) {
            (Some(key), _) => Key::Value(key.clone()),
            (None, Some(var)) => env
                .get(var)
                .map_or_else(|| Key::Missing(var.clone()), |k| Key::Value(k.to_owned())),
            (None, None) => Key::NotNeeded,
        };
        let key_origin = match (&entry.api_key, &key_env, &key) {
            (Some(_), _, _) => Some(format!("providers.{name}.api_key in the config file")),
            (None, Some(var), Key::Value(_)) => Some(var.clone()),
            _ => None,
        };
        if name.is_empty() {
            return Err(source.error(span, "a provider name must not be empty"));
        }
        let (cache, cache_ttl, prompt_cache_key) = cache_settings(Some(entry), cache_defaults, &base_url);
        providers.push(Provider {
            name: name.clone(),
            api_style: entry.api_style,
            base_url,
            cache,
            cache_ttl,
            prompt_cache_key,
            key,
            key_env,
            key_origin,
            headers: entry.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        });
    }
    Ok(providers)
}
