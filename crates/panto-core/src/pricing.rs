//! What tokens cost: a rate card per provider identity ([`PricingRegistry`], over a built-in table
//! of current Anthropic and OpenAI models), the cost of a turn's [`Usage`] in micro-cents, and how
//! a front end shows it ([`format_micro_cents`]).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::config::ApiStyle;
use crate::conversation::Usage;
use crate::identity::ProviderIdentity;

/// A rate card: US dollars per million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pricing {
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Input read from the prompt cache.
    pub cache_read: f64,
    /// Input written to the prompt cache with the default (five-minute) lifetime.
    pub cache_write: f64,
    /// Input written to the prompt cache with the one-hour lifetime
    /// ([`Usage::cache_write_1h_tokens`]). `None` is the providers' rule: twice `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<f64>,
}

/// Micro-cents per dollar: 100 cents, each a million micro-cents.
const MICRO_CENTS_PER_DOLLAR: f64 = 100.0 * 1_000_000.0;

impl Pricing {
    /// A rate card whose one-hour cache writes cost twice `input`, the providers' rule.
    pub const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Self {
        Pricing {
            input,
            output,
            cache_read,
            cache_write,
            cache_write_1h: None,
        }
    }

    /// With this rate for one-hour cache writes, in dollars per million tokens.
    pub const fn with_cache_write_1h(mut self, rate: f64) -> Self {
        self.cache_write_1h = Some(rate);
        self
    }

    /// The rate one-hour cache writes are billed at: [`Pricing::cache_write_1h`], else twice
    /// `input`.
    pub fn cache_write_1h_rate(&self) -> f64 {
        self.cache_write_1h.unwrap_or(2.0 * self.input)
    }

    /// What `usage`'s input would have cost with no prompt cache at all: every input token,
    /// read, written or neither, at the input rate. With [`Pricing::cost`] this gives what
    /// caching saved. `None` under the same conditions as `cost`.
    pub fn uncached_input_cost(&self, usage: &Usage) -> Option<u64> {
        let uncached = Usage {
            input_tokens: usage.total_input_tokens(),
            ..Usage::default()
        };
        self.cost(&uncached)
    }

    /// What `usage`'s input cost, reads and writes included, without its output.
    pub fn input_cost(&self, usage: &Usage) -> Option<u64> {
        self.cost(&Usage {
            output_tokens: 0,
            ..*usage
        })
    }

    /// What `usage` costs, in micro-cents (millionths of a US cent), rounded to the nearest.
    /// `None` when a rate is negative or not finite, or the result does not fit a `u64`.
    pub fn cost(&self, usage: &Usage) -> Option<u64> {
        let rates = [
            self.input,
            self.output,
            self.cache_read,
            self.cache_write,
            self.cache_write_1h_rate(),
        ];
        if rates.iter().any(|r| !r.is_finite() || *r < 0.0) {
            return None;
        }
        let per_token = MICRO_CENTS_PER_DOLLAR / 1_000_000.0;
        let writes_1h = usage.cache_write_1h_tokens.min(usage.cache_write_tokens);
        let total = (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_read_tokens as f64 * self.cache_read
            + (usage.cache_write_tokens - writes_1h) as f64 * self.cache_write
            + writes_1h as f64 * self.cache_write_1h_rate())
            * per_token;
        (total <= u64::MAX as f64).then(|| total.round() as u64)
    }
}

/// Formats micro-cents as dollars with four decimals, e.g. `$0.0123`.
pub fn format_micro_cents(micro_cents: u64) -> String {
    format!("${:.4}", micro_cents as f64 / MICRO_CENTS_PER_DOLLAR)
}

/// Rate cards keyed by provider identity, over a built-in table of current Anthropic and OpenAI
/// models.
#[derive(Debug, Clone, Default)]
pub struct PricingRegistry {
    exact: HashMap<ProviderIdentity, Pricing>,
}

/// Built-in rates: (api style, model-name prefix, pricing). Longest prefix wins, so dated
/// snapshots (`claude-sonnet-4-20250514`) find their family.
const BUILTIN: &[(ApiStyle, &str, Pricing)] = &[
    (
        ApiStyle::AnthropicMessages,
        "claude-opus-4-5",
        Pricing::new(5.0, 25.0, 0.5, 6.25),
    ),
    (
        ApiStyle::AnthropicMessages,
        "claude-opus-4-1",
        Pricing::new(15.0, 75.0, 1.5, 18.75),
    ),
    (
        ApiStyle::AnthropicMessages,
        "claude-opus-4",
        Pricing::new(15.0, 75.0, 1.5, 18.75),
    ),
    (
        ApiStyle::AnthropicMessages,
        "claude-sonnet-4",
        Pricing::new(3.0, 15.0, 0.3, 3.75),
    ),
    (
        ApiStyle::AnthropicMessages,
        "claude-3-7-sonnet",
        Pricing::new(3.0, 15.0, 0.3, 3.75),
    ),
    (
        ApiStyle::AnthropicMessages,
        "claude-haiku-4-5",
        Pricing::new(1.0, 5.0, 0.1, 1.25),
    ),
    (
        ApiStyle::AnthropicMessages,
        "claude-3-5-haiku",
        Pricing::new(0.8, 4.0, 0.08, 1.0),
    ),
    (ApiStyle::OpenAiChat, "gpt-5", Pricing::new(1.25, 10.0, 0.125, 0.0)),
    (ApiStyle::OpenAiChat, "gpt-5-mini", Pricing::new(0.25, 2.0, 0.025, 0.0)),
    (ApiStyle::OpenAiChat, "gpt-5-nano", Pricing::new(0.05, 0.4, 0.005, 0.0)),
    (ApiStyle::OpenAiChat, "gpt-4.1", Pricing::new(2.0, 8.0, 0.5, 0.0)),
    (ApiStyle::OpenAiChat, "gpt-4.1-mini", Pricing::new(0.4, 1.6, 0.1, 0.0)),
    (ApiStyle::OpenAiChat, "gpt-4.1-nano", Pricing::new(0.1, 0.4, 0.025, 0.0)),
    (ApiStyle::OpenAiChat, "gpt-4o", Pricing::new(2.5, 10.0, 1.25, 0.0)),
    (ApiStyle::OpenAiChat, "gpt-4o-mini", Pricing::new(0.15, 0.6, 0.075, 0.0)),
    (ApiStyle::OpenAiChat, "o3", Pricing::new(2.0, 8.0, 0.5, 0.0)),
    (ApiStyle::OpenAiChat, "o4-mini", Pricing::new(1.1, 4.4, 0.275, 0.0)),
    // Served only through the Responses API (the OpenAI rows apply to both of its APIs).
    (
        ApiStyle::OpenAiChat,
        "gpt-5-codex",
        Pricing::new(1.25, 10.0, 0.125, 0.0),
    ),
    (ApiStyle::OpenAiChat, "gpt-5.1", Pricing::new(1.25, 10.0, 0.125, 0.0)),
    (
        ApiStyle::OpenAiChat,
        "gpt-5.1-codex",
        Pricing::new(1.25, 10.0, 0.125, 0.0),
    ),
];

/// The style whose rows in [`BUILTIN`] price `style`: OpenAI charges the same for a model
/// whichever of its APIs serves it.
fn priced_as(style: ApiStyle) -> ApiStyle {
    match style {
        ApiStyle::OpenAiResponses => ApiStyle::OpenAiChat,
        other => other,
    }
}

impl PricingRegistry {
    /// A registry holding only the built-in table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the rates for one exact provider identity (overrides the built-in table).
    pub fn insert(&mut self, wire: ProviderIdentity, pricing: Pricing) {
        self.exact.insert(wire, pricing);
    }

    /// The model names this registry knows for `style`, sorted: the built-in table's families
    /// (OpenAI's two styles share theirs) and the models of exact entries. For completing a
    /// model name; a name not listed may still be served (a dated snapshot, a new model).
    pub fn known_models(&self, style: ApiStyle) -> Vec<String> {
        let mut names: Vec<String> = BUILTIN
            .iter()
            .filter(|(s, _, _)| *s == priced_as(style))
            .map(|(_, name, _)| (*name).to_owned())
            .chain(
                self.exact
                    .keys()
                    .filter(|wire| wire.api_style == style)
                    .map(|wire| wire.model.clone()),
            )
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The rates for `wire`: an exact entry, else the built-in family of its model name.
    pub fn get(&self, wire: &ProviderIdentity) -> Option<Pricing> {
        if let Some(p) = self.exact.get(wire) {
            return Some(*p);
        }
        BUILTIN
            .iter()
            .filter(|(style, prefix, _)| *style == priced_as(wire.api_style) && family_matches(&wire.model, prefix))
            .max_by_key(|(_, prefix, _)| prefix.len())
            .map(|(_, _, p)| *p)
    }
}

/// `model` is `prefix` or `prefix` followed by a `-` suffix (a date or variant).
fn family_matches(model: &str, prefix: &str) -> bool {
    model == prefix || model.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ReasoningEffort;

    #[test]
    fn known_models_are_the_styles_families_and_exact_entries() {
        let mut registry = PricingRegistry::new();
        let custom = ProviderIdentity::new(
            ApiStyle::AnthropicMessages,
            "http://127.0.0.1:1",
            "claude-custom",
            ReasoningEffort::Off,
        );
        registry.insert(custom, Pricing::new(1.0, 1.0, 0.0, 0.0));
        let anthropic = registry.known_models(ApiStyle::AnthropicMessages);
        assert!(anthropic.contains(&"claude-opus-4-5".to_owned()), "{anthropic:?}");
        assert!(anthropic.contains(&"claude-custom".to_owned()), "{anthropic:?}");
        assert!(!anthropic.iter().any(|m| m.starts_with("gpt")), "{anthropic:?}");
        assert!(anthropic.windows(2).all(|w| w[0] < w[1]), "{anthropic:?}");
        let responses = registry.known_models(ApiStyle::OpenAiResponses);
        assert!(responses.contains(&"gpt-5.1".to_owned()), "{responses:?}");
        assert!(!responses.contains(&"claude-custom".to_owned()), "{responses:?}");
    }

    fn wire(style: ApiStyle, model: &str) -> ProviderIdentity {
        ProviderIdentity {
            api_style: style,
            base_url: "http://x".into(),
            model: model.into(),
            reasoning: ReasoningEffort::Off,
        }
    }

    #[test]
    fn cost_in_micro_cents() {
        let p = Pricing::new(3.0, 15.0, 0.3, 3.75);
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
        };
        // $3 + $0.015 = 301.5 cents.
        assert_eq!(p.cost(&u), Some(301_500_000));
        assert_eq!(format_micro_cents(301_500_000), "$3.0150");
    }

    #[test]
    fn one_hour_writes_cost_twice_the_input_unless_priced() {
        let p = Pricing::new(3.0, 15.0, 0.3, 3.75);
        let u = Usage {
            cache_write_tokens: 3_000_000,
            cache_write_1h_tokens: 1_000_000,
            reasoning_tokens: 0,
            ..Usage::default()
        };
        // 2M five-minute writes at $3.75 and 1M one-hour writes at 2 x $3 = $13.50.
        assert_eq!(p.cost(&u), Some(1_350_000_000));
        assert_eq!(p.with_cache_write_1h(10.0).cost(&u), Some(1_750_000_000));
        // Uncached, the same 3M tokens would have been $9 of input.
        assert_eq!(p.uncached_input_cost(&u), Some(900_000_000));
        let read = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_read_tokens: 1_000_000,
            ..Usage::default()
        };
        assert_eq!(p.input_cost(&read), Some(330_000_000));
    }

    #[test]
    fn longest_family_wins() {
        let r = PricingRegistry::new();
        assert_eq!(
            r.get(&wire(ApiStyle::OpenAiChat, "gpt-4o-mini-2024-07-18"))
                .unwrap()
                .input,
            0.15
        );
        assert_eq!(
            r.get(&wire(ApiStyle::OpenAiChat, "gpt-4o-2024-08-06")).unwrap().input,
            2.5
        );
        assert_eq!(
            r.get(&wire(ApiStyle::AnthropicMessages, "claude-sonnet-4-20250514"))
                .unwrap()
                .output,
            15.0
        );
        assert!(r.get(&wire(ApiStyle::OpenAiChat, "llama-3")).is_none());
        // The Responses API prices OpenAI's models as Chat Completions does, and has its own.
        assert_eq!(
            r.get(&wire(ApiStyle::OpenAiResponses, "gpt-5-2025-08-07"))
                .unwrap()
                .input,
            1.25
        );
        assert_eq!(
            r.get(&wire(ApiStyle::OpenAiResponses, "gpt-5-codex")).unwrap().output,
            10.0
        );
        assert!(r.get(&wire(ApiStyle::OpenAiChat, "gpt-4oo")).is_none());
    }
}
