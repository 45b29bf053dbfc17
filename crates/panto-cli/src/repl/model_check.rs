//! `/model NAME` with a wire name panto does not know: the provider's model listing decides
//! before the next (paid) request would fail on a misspelt name.

use std::time::Duration;

use panto_core::pricing::PricingRegistry;
use panto_core::ProviderConfig;

use super::commands::distance;
use crate::safe;

/// How long the listing may take: it stands between the user and the prompt.
const LISTING_TIMEOUT: Duration = Duration::from_secs(10);
/// The most close matches suggested.
const MAX_SUGGESTIONS: usize = 3;

/// What the check found.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Known to panto, or listed by the provider.
    Known,
    /// The provider lists models and this is not one: the message names it and close matches.
    Unknown(String),
    /// The provider could not say (no listing, unreachable): accepted with this note.
    Unchecked(String),
}

/// Checks `config.model` (a wire name, not an alias) at provider `provider_name`.
pub async fn check(pricing: &PricingRegistry, config: &ProviderConfig, provider_name: &str) -> Verdict {
    let model = &config.model;
    if pricing.known_models(config.api_style).contains(model) {
        return Verdict::Known;
    }
    let listed = match panto_core::http_client_builder().build() {
        Ok(client) => panto_core::list_models(&client, config, LISTING_TIMEOUT).await,
        Err(e) => return Verdict::Unchecked(format!("({model} was not checked: cannot build the HTTP client: {e})")),
    };
    match listed {
        Ok(ids) if ids.iter().any(|id| id == model) => Verdict::Known,
        Ok(ids) => Verdict::Unknown(unknown_message(model, provider_name, &ids)),
        Err(e) => Verdict::Unchecked(format!(
            "({model} was not checked against {provider_name}'s models: {})",
            crate::render::brief(&e.to_string())
        )),
    }
}

/// The refusal: the name, where it was looked for, and the listed names closest to it.
fn unknown_message(model: &str, provider_name: &str, ids: &[String]) -> String {
    let close = close_matches(model, ids);
    let hint = if close.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", close.join(", "))
    };
    // The ids are the provider's bytes.
    safe::neutralise(&format!(
        "unknown model {model}: {provider_name} lists {} models and not this one{hint}",
        ids.len()
    ))
    .into_owned()
}

/// The listed names closest to `model`: a small edit distance, or one containing the other.
fn close_matches<'a>(model: &str, ids: &'a [String]) -> Vec<&'a str> {
    let lower = model.to_ascii_lowercase();
    let mut scored: Vec<(usize, &str)> = ids
        .iter()
        .map(|id| {
            let id_lower = id.to_ascii_lowercase();
            let d = if id_lower.contains(&lower) || lower.contains(&id_lower) {
                0
            } else {
                distance(&lower, &id_lower)
            };
            (d, id.as_str())
        })
        .filter(|(d, _)| *d <= (model.chars().count() / 4).max(2))
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(MAX_SUGGESTIONS).map(|(_, id)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_matches_are_the_nearest_names() {
        let ids: Vec<String> = [
            "claude-sonnet-4-5",
            "claude-opus-4-5",
            "gpt-5",
            "claude-sonnet-4-5-20250929",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            close_matches("claude-sonet-4-5", &ids),
            ["claude-sonnet-4-5", "claude-opus-4-5"]
        );
        assert!(close_matches("llama", &ids).is_empty());
        let m = unknown_message("clude\x1b[2J", "anthropic", &ids);
        assert!(
            m.starts_with("unknown model clude^[[2J: anthropic lists 4 models"),
            "{m}"
        );
    }
}
