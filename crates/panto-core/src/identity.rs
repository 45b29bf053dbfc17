//! What identifies a provider on the wire (its protocol, reasoning effort and identity), and the
//! one rule that keeps credentials out of it.
//!
//! A base URL may carry credentials (`http://user:secret@proxy/v1`). They are sent with the
//! request (reqwest turns them into HTTP basic auth), but they are never part of a provider's
//! identity: a session never records them, a front end never prints them, and two identities
//! that differ only in them are the same identity. Sessions written before this rule may hold a
//! base URL with credentials; they still load, match and price as the stripped URL.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ApiStyle {
    /// The Anthropic Messages API (`POST {base_url}/v1/messages`).
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
    /// The OpenAI Chat Completions API and compatible servers (`POST {base_url}/chat/completions`,
    /// where `base_url` already ends in `/v1`).
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// The OpenAI Responses API (`POST {base_url}/responses`, where `base_url` already ends in
    /// `/v1`), used statelessly: every request carries the whole history and `store: false`.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
}

impl ApiStyle {
    /// The canonical name, as written in configs and session logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiStyle::AnthropicMessages => "anthropic-messages",
            ApiStyle::OpenAiChat => "openai-chat",
            ApiStyle::OpenAiResponses => "openai-responses",
        }
    }

    /// The vendor's own API root, the base URL a [`ProviderConfig::new`](crate::ProviderConfig::new) of this style starts
    /// with: `https://api.anthropic.com` for Anthropic, `https://api.openai.com/v1` for the
    /// OpenAI styles (the defaults the official SDKs use).
    pub fn default_base_url(self) -> &'static str {
        match self {
            ApiStyle::AnthropicMessages => "https://api.anthropic.com",
            ApiStyle::OpenAiChat | ApiStyle::OpenAiResponses => "https://api.openai.com/v1",
        }
    }
}

impl fmt::Display for ApiStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much the model should reason before answering.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// No extended reasoning requested.
    #[default]
    Off,
    /// A small budget.
    Low,
    /// A moderate budget.
    Medium,
    /// A large budget.
    High,
}

impl ReasoningEffort {
    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Off => "off",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }

    /// The Anthropic `thinking.budget_tokens` this effort maps to, `None` when off.
    pub fn anthropic_budget(self) -> Option<u32> {
        match self {
            ReasoningEffort::Off => None,
            ReasoningEffort::Low => Some(2_048),
            ReasoningEffort::Medium => Some(8_192),
            ReasoningEffort::High => Some(24_576),
        }
    }
}

impl fmt::Display for ReasoningEffort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What identifies a provider on the wire: everything but the credentials.
///
/// Sessions record this (never a configuration alias, never key material) so that resume can
/// match the session against whatever the configuration calls it today.
///
/// `base_url` never keeps credentials: serialising and deserialising strip them
/// ([`strip_userinfo`]), and equality and hashing compare base URLs without them, so a
/// session recorded with `http://user:secret@proxy/v1` matches and prices as `http://proxy/v1`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProviderIdentity {
    /// The protocol.
    pub api_style: ApiStyle,
    /// The base URL as configured, without credentials ([`strip_userinfo`]).
    #[serde(serialize_with = "serialize_stripped", deserialize_with = "deserialize_stripped")]
    pub base_url: String,
    /// The wire model name.
    pub model: String,
    /// The reasoning effort requested.
    pub reasoning: ReasoningEffort,
}

impl ProviderIdentity {
    /// The identity of `model` at `base_url`; credentials in `base_url` are dropped.
    pub fn new(api_style: ApiStyle, base_url: &str, model: impl Into<String>, reasoning: ReasoningEffort) -> Self {
        ProviderIdentity {
            api_style,
            base_url: strip_userinfo(base_url).into_owned(),
            model: model.into(),
            reasoning,
        }
    }
}

impl PartialEq for ProviderIdentity {
    fn eq(&self, other: &Self) -> bool {
        self.api_style == other.api_style
            && self.model == other.model
            && self.reasoning == other.reasoning
            && (self.base_url == other.base_url || strip_userinfo(&self.base_url) == strip_userinfo(&other.base_url))
    }
}

impl Eq for ProviderIdentity {}

impl Hash for ProviderIdentity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Consistent with `eq`: the base URL is hashed without its credentials.
        self.api_style.hash(state);
        strip_userinfo(&self.base_url).hash(state);
        self.model.hash(state);
        self.reasoning.hash(state);
    }
}

fn serialize_stripped<S: Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&strip_userinfo(url))
}

fn deserialize_stripped<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let url = String::deserialize(d)?;
    Ok(match strip_userinfo(&url) {
        Cow::Borrowed(_) => url,
        Cow::Owned(stripped) => stripped,
    })
}

/// `url` without the credentials of its authority: `http://user:secret@host/v1` becomes
/// `http://host/v1`. Everything else is kept byte for byte, so a URL without credentials comes
/// back unchanged (and borrowed).
///
/// The authority is what follows `scheme://` (or the whole start of the text when there is no
/// scheme) up to the first `/`, `\`, `?` or `#`; the credentials are everything in it up to its
/// last `@`. This is the one definition of the base URL panto records in a session and a front
/// end prints.
pub fn strip_userinfo(url: &str) -> Cow<'_, str> {
    // Nearly every URL has no `@` at all; one scan of its bytes says so. Every message a store
    // writes records its identity, so this runs several times a turn.
    if memchr::memchr(b'@', url.as_bytes()).is_none() {
        return Cow::Borrowed(url);
    }
    let authority_start = match url.find("://") {
        Some(at) if is_scheme(&url[..at]) => at + 3,
        _ => 0,
    };
    let rest = &url[authority_start..];
    let authority_end = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => Cow::Owned(format!("{}{}", &url[..authority_start], &rest[at + 1..])),
        None => Cow::Borrowed(url),
    }
}

/// Whether `s` is a URL scheme: a letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_stripped_and_everything_else_kept() {
        let cases = [
            ("http://user:secret@proxy:8080/v1", "http://proxy:8080/v1"),
            ("https://token@host/v1?x=1", "https://host/v1?x=1"),
            ("http://a@b:c@host/", "http://host/"),
            ("user:secret@host/v1", "host/v1"),
            ("http://host/v1", "http://host/v1"),
            ("http://host/path@not-userinfo", "http://host/path@not-userinfo"),
            ("http://host?q=a@b", "http://host?q=a@b"),
            ("http://host#a@b", "http://host#a@b"),
            ("http://user:pw@host\\@evil/v1", "http://host\\@evil/v1"),
            (
                "http://host/?next=http://u:p@evil/",
                "http://host/?next=http://u:p@evil/",
            ),
            ("", ""),
        ];
        for (url, expected) in cases {
            assert_eq!(strip_userinfo(url), expected, "{url}");
        }
        assert!(matches!(strip_userinfo("http://host/v1"), Cow::Borrowed(_)));
    }

    #[test]
    fn identities_differing_only_in_credentials_are_equal_and_never_serialise_them() {
        use std::collections::HashSet;
        let old = ProviderIdentity {
            api_style: ApiStyle::OpenAiChat,
            base_url: "http://user:s3cret@proxy/v1".into(),
            model: "m".into(),
            reasoning: ReasoningEffort::Off,
        };
        let new = ProviderIdentity::new(ApiStyle::OpenAiChat, "http://proxy/v1", "m", ReasoningEffort::Off);
        assert_eq!(old, new);
        assert!(HashSet::from([new.clone()]).contains(&old));
        let json = serde_json::to_string(&old).unwrap();
        assert!(
            !json.contains("s3cret") && json.contains("\"http://proxy/v1\""),
            "{json}"
        );
        let stored =
            r#"{"api_style":"openai-chat","base_url":"http://user:s3cret@proxy/v1","model":"m","reasoning":"off"}"#;
        let loaded: ProviderIdentity = serde_json::from_str(stored).unwrap();
        assert_eq!(loaded.base_url, "http://proxy/v1");
    }
}
