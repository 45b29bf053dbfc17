//! Scrubbing secrets out of text before it becomes a field.

use std::borrow::Cow;

use base64::Engine;

use crate::config::ProviderConfig;
use crate::error::Error;

/// Secrets shorter than this are not scrubbed: replacing every occurrence of a two-letter "key"
/// (a test server's) would garble every field without protecting anything.
const MIN_SECRET_LEN: usize = 8;

/// The shortest start of a secret removed from the end of a text that was cut there.
const MIN_PARTIAL_LEN: usize = 4;

/// What is put in place of a secret.
pub(crate) const REDACTED: &str = "[redacted]";

/// The secrets of one provider config (the API key, its base64 forms, every configured header
/// value), scrubbed from text before it is recorded.
#[derive(Debug, Default, Clone)]
pub(crate) struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// The secrets of `config`: its key as sent (raw, so also inside `Bearer …`), its base64
    /// forms (a gateway may use basic auth or echo an encoded key), and every extra header value
    /// (a header may carry a gateway's token).
    pub(crate) fn new(config: &ProviderConfig) -> Self {
        Redactor::of(&config.api_key, config.extra_headers.iter().map(|(_, value)| value))
    }

    /// The secrets of `config` a tool result must not carry: its key as sent and its base64
    /// forms, and the values of the extra headers whose names say they hold a credential
    /// (`authorization`, or a name with `key`, `token`, `secret`, `auth`, `cookie` or
    /// `password` in it). Other header values (`anthropic-beta: …`) are not secrets and may
    /// well be in the files a tool reads, so they stay.
    pub(crate) fn for_tool_results(config: &ProviderConfig) -> Self {
        let credential = |name: &str| {
            let name = name.to_ascii_lowercase();
            ["key", "token", "secret", "auth", "cookie", "password"]
                .iter()
                .any(|word| name.contains(word))
        };
        let headers = config.extra_headers.iter().filter(|(name, _)| credential(name));
        Redactor::of(&config.api_key, headers.map(|(_, value)| value))
    }

    /// `key` (raw and base64-encoded) and `header_values`.
    fn of<'a>(key: &str, header_values: impl Iterator<Item = &'a String>) -> Self {
        let mut secrets = Vec::new();
        let mut add = |s: String| {
            if s.len() >= MIN_SECRET_LEN && !secrets.contains(&s) {
                secrets.push(s);
            }
        };
        let key = key.trim();
        add(key.to_owned());
        add(base64::engine::general_purpose::STANDARD.encode(key));
        add(base64::engine::general_purpose::STANDARD_NO_PAD.encode(key));
        add(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key));
        for value in header_values {
            add(value.trim().to_owned());
        }
        // Longest first, so a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Redactor { secrets }
    }

    /// Whether there is nothing to scrub.
    pub(crate) fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub(crate) fn clean<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }

    /// `text` cleaned, and, when it was cut (it ends with `…`), without the start of a secret
    /// the cut left at its end: a key cut in half is still half a key.
    fn clean_cut(&self, text: &str) -> String {
        let Some(kept) = text.strip_suffix('…') else {
            return self.clean(text).into_owned();
        };
        let mut out = self.clean(kept).into_owned();
        let partial = self
            .secrets
            .iter()
            .filter_map(|secret| {
                (MIN_PARTIAL_LEN..secret.len())
                    .rev()
                    .find(|&n| secret.is_char_boundary(n) && out.ends_with(&secret[..n]))
            })
            .max();
        if let Some(n) = partial {
            out.truncate(out.len() - n);
            out.push_str(REDACTED);
        }
        out.push('…');
        out
    }

    /// `error` with every secret scrubbed from the text it carries from the provider (a body, a
    /// message, a header, a transport error's description). A provider that echoes the key it
    /// refused ("invalid x-api-key sk-…") must not hand it to every host that logs errors.
    pub(crate) fn scrub(&self, error: Error) -> Error {
        if self.secrets.is_empty() {
            return error;
        }
        let clean = |text: String| self.clean_cut(&text);
        match error {
            Error::Http {
                status,
                error_type,
                message,
                retry_after,
            } => Error::Http {
                status,
                error_type: error_type.map(clean),
                message: clean(message),
                retry_after,
            },
            Error::ContextOverflow { status, message } => Error::ContextOverflow {
                status,
                message: clean(message),
            },
            Error::StreamError { error_type, message } => Error::StreamError {
                error_type: error_type.map(clean),
                message: clean(message),
            },
            Error::NotEventStream {
                content_type,
                body_start,
            } => Error::NotEventStream {
                content_type: clean(content_type),
                body_start: clean(body_start),
            },
            Error::Protocol { offset, message } => Error::Protocol {
                offset,
                message: clean(message),
            },
            Error::Redirect { status, location } => Error::Redirect {
                status,
                location: location.map(clean),
            },
            Error::Connect { url, message } => Error::Connect {
                url: clean(url),
                message: clean(message),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiStyle;

    #[test]
    fn the_key_its_encodings_and_header_values_are_scrubbed() {
        let config = ProviderConfig::new(ApiStyle::OpenAiChat, "m")
            .with_base_url("http://x/v1")
            .with_api_key("sk-secret-123456")
            .with_header("x-gateway-token", "gw-token-abcdef");
        let r = Redactor::new(&config);
        let b64 = base64::engine::general_purpose::STANDARD.encode("sk-secret-123456");
        let text = format!("Incorrect key: Bearer sk-secret-123456 ({b64}), gateway gw-token-abcdef");
        let clean = r.clean(&text);
        assert_eq!(
            clean,
            "Incorrect key: Bearer [redacted] ([redacted]), gateway [redacted]"
        );
        assert!(matches!(r.clean("nothing secret"), Cow::Borrowed(_)));
    }

    #[test]
    fn errors_quoting_the_key_are_scrubbed_even_where_the_quote_cut_it() {
        let config = ProviderConfig::new(ApiStyle::AnthropicMessages, "m")
            .with_base_url("http://x")
            .with_api_key("sk-ant-api03-0123456789");
        let r = Redactor::new(&config);
        let http = r.scrub(Error::Http {
            status: 401,
            error_type: Some("authentication_error".into()),
            message: "invalid x-api-key sk-ant-api03-0123456789".into(),
            retry_after: None,
        });
        assert_eq!(
            http.to_string(),
            "provider returned HTTP 401 (authentication_error): invalid x-api-key [redacted]"
        );
        let cut = r.scrub(Error::NotEventStream {
            content_type: "text/html".into(),
            body_start: "<p>bad key sk-ant-api03-01…".into(),
        });
        let Error::NotEventStream { body_start, .. } = cut else {
            panic!("the variant changed");
        };
        assert_eq!(body_start, "<p>bad key [redacted]…");
        let stream = r.scrub(Error::StreamError {
            error_type: None,
            message: "key sk-ant-api03-0123456789 over quota".into(),
        });
        assert!(!stream.to_string().contains("0123456789"), "{stream}");
    }
}
