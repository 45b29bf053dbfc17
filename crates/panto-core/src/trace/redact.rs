//! Scrubbing secrets out of text before it becomes a field.

use std::borrow::Cow;

use base64::Engine;

use crate::config::ProviderConfig;

/// Secrets shorter than this are not scrubbed: replacing every occurrence of a two-letter "key"
/// (a test server's) would garble every field without protecting anything.
const MIN_SECRET_LEN: usize = 8;

/// What is put in place of a secret.
pub(crate) const REDACTED: &str = "[redacted]";

/// The secrets of one provider config (the API key, its base64 forms, every configured header
/// value), scrubbed from text before it is recorded.
#[derive(Debug, Default)]
pub(crate) struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// The secrets of `config`: its key as sent (raw, so also inside `Bearer …`), its base64
    /// forms (a gateway may use basic auth or echo an encoded key), and every extra header value
    /// (a header may carry a gateway's token).
    pub fn new(config: &ProviderConfig) -> Self {
        let mut secrets = Vec::new();
        let mut add = |s: String| {
            if s.len() >= MIN_SECRET_LEN && !secrets.contains(&s) {
                secrets.push(s);
            }
        };
        let key = config.api_key.trim();
        add(key.to_owned());
        add(base64::engine::general_purpose::STANDARD.encode(key));
        add(base64::engine::general_purpose::STANDARD_NO_PAD.encode(key));
        add(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key));
        for (_, value) in &config.extra_headers {
            add(value.trim().to_owned());
        }
        // Longest first, so a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Redactor { secrets }
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub fn clean<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiStyle;

    #[test]
    fn the_key_its_encodings_and_header_values_are_scrubbed() {
        let config = ProviderConfig::new(ApiStyle::OpenAiChat, "http://x/v1", "sk-secret-123456", "m")
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
}
