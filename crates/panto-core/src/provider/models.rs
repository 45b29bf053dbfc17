//! The provider's model listing (`GET /v1/models` for Anthropic, `GET /models` for the OpenAI
//! styles): which model names a provider serves, so a front end can refuse a misspelt one before
//! a paid request fails on it.

use std::time::Duration;

use serde::Deserialize;

use super::http::{describe, exchange, header_map, quote, read_body_start, BodyEnd, BodyStart, QUOTED_BODY_BYTES};
use super::{anthropic, openai, responses};
use crate::config::{ApiStyle, ProviderConfig};
use crate::error::{Error, Result};
use crate::identity::strip_userinfo;

/// Pages of an Anthropic listing followed at most (1,000 models each).
const MAX_PAGES: usize = 5;
/// The longest page read: a thousand models' entries take tens of KB, so a body past this is not
/// a listing, and a hostile server cannot make panto buffer without end.
const MAX_PAGE_BYTES: usize = 4 << 20;

/// One page of a listing: both APIs answer `{"data": [{"id": ...}, ...]}`; Anthropic pages
/// with `has_more` and `last_id`.
#[derive(Debug, Deserialize)]
struct Page {
    data: Vec<Entry>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    last_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Entry {
    id: String,
}

/// The listing endpoint under `base_url`, as the style's requests resolve it.
fn endpoint(style: ApiStyle, base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    match style {
        ApiStyle::AnthropicMessages => format!("{base}/v1/models?limit=1000"),
        _ => format!("{base}/models"),
    }
}

/// The model ids the provider of `config` lists, with the same authentication headers as its
/// requests (`config.model` is not used). Each request waits at most `timeout`.
///
/// Errors: [`Error::Connect`] and [`Error::IdleTimeout`] when the provider cannot be reached,
/// [`Error::Http`] for a non-success status (a provider without a listing answers 404),
/// [`Error::Redirect`], [`Error::InvalidHeader`], [`Error::Protocol`] when the body is not a
/// listing. A caller should treat any of them as "unknown", not as "the model does not exist".
pub async fn list_models(client: &reqwest::Client, config: &ProviderConfig, timeout: Duration) -> Result<Vec<String>> {
    let headers = match config.api_style {
        ApiStyle::AnthropicMessages => anthropic::headers(config),
        ApiStyle::OpenAiChat => openai::headers(config),
        ApiStyle::OpenAiResponses => responses::headers(config),
    };
    let headers = header_map(&headers)?;
    let first = endpoint(config.api_style, &config.base_url);
    let mut url = first.clone();
    let mut ids = Vec::new();
    for _ in 0..MAX_PAGES {
        let page = fetch(client, &url, &headers, timeout)
            .await
            .map_err(|e| super::redact::Redactor::new(config).scrub(e))?;
        ids.extend(page.data.into_iter().map(|e| e.id));
        match page.last_id {
            Some(last) if page.has_more => url = format!("{first}&after_id={}", urlencode(&last)),
            _ => break,
        }
    }
    Ok(ids)
}

/// `text` percent-encoded for a query value.
fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn fetch(
    client: &reqwest::Client,
    url: &str,
    headers: &reqwest::header::HeaderMap,
    timeout: Duration,
) -> Result<Page> {
    // The request goes through the provider's one exchange: an error answer is read as any
    // provider's is (its start, with the reason it ended), a redirect is named, not followed.
    let response = exchange(client.get(url).headers(headers.clone()), url, timeout).await?;
    let BodyStart { bytes: body, end } = read_body_start(response, MAX_PAGE_BYTES, timeout).await;
    match end {
        BodyEnd::Whole => {}
        BodyEnd::Cut => {
            return Err(Error::Protocol {
                offset: MAX_PAGE_BYTES as u64,
                message: format!("the model listing is longer than {MAX_PAGE_BYTES} bytes"),
            })
        }
        BodyEnd::Failed(e) => {
            return Err(Error::Connect {
                url: strip_userinfo(url).into_owned(),
                message: describe(&e),
            })
        }
        BodyEnd::TimedOut => return Err(Error::IdleTimeout(timeout)),
    }
    serde_json::from_slice(&body).map_err(|e| Error::Protocol {
        offset: 0,
        message: format!(
            "the model listing is not {{\"data\": [{{\"id\": ...}}]}} ({e}); it starts with {}",
            quote(&body, QUOTED_BODY_BYTES)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_follow_each_styles_base_url() {
        assert_eq!(
            endpoint(ApiStyle::AnthropicMessages, "http://h:1/"),
            "http://h:1/v1/models?limit=1000"
        );
        assert_eq!(endpoint(ApiStyle::OpenAiChat, "http://h:1/v1"), "http://h:1/v1/models");
        assert_eq!(
            endpoint(ApiStyle::OpenAiResponses, "http://h:1/v1/"),
            "http://h:1/v1/models"
        );
        assert_eq!(urlencode("claude-x_1.2"), "claude-x_1.2");
        assert_eq!(urlencode("a b&"), "a%20b%26");
    }
}
