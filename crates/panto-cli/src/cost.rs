//! Token counts and cost, as shown after a turn, by `/cost`, and in JSON results.

use panto_core::pricing::{format_micro_cents, PricingRegistry};
use panto_core::wire::ProviderIdentity;
use panto_core::Usage;

/// Micro-cents per dollar.
const MICRO_CENTS_PER_DOLLAR: f64 = 100.0 * 1_000_000.0;

/// What `usage` cost on `wire`, in micro-cents; `None` when no rate is known for the model.
pub fn cost(pricing: &PricingRegistry, wire: &ProviderIdentity, usage: &Usage) -> Option<u64> {
    pricing.get(wire)?.cost(usage)
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What `usage` would have cost on `wire` with no prompt cache: every input token at the input
/// price. `None` when no rate is known for the model.
pub fn uncached_cost(pricing: &PricingRegistry, wire: &ProviderIdentity, usage: &Usage) -> Option<u64> {
    let uncached = Usage {
        input_tokens: usage.total_input_tokens(),
        output_tokens: usage.output_tokens,
        ..Usage::default()
    };
    pricing.get(wire)?.cost(&uncached)
}

/// The one-line summary of `/cost`: `1,234 in · 84% cached · 56 out (40 reasoning) · $0.0012`.
/// The cached share ([`Usage::cached_percent`]) is shown whenever the provider read or wrote its
/// cache, the reasoning part of the output whenever the provider reported one.
pub fn summary_line(usage: &Usage, cost: Option<u64>) -> String {
    let mut parts = vec![format!("{} in", thousands(usage.total_input_tokens()))];
    if usage.cache_read_tokens > 0 || usage.cache_write_tokens > 0 {
        parts.push(format!("{}% cached", usage.cached_percent()));
    }
    parts.push(match usage.reasoning_tokens {
        0 => format!("{} out", thousands(usage.output_tokens)),
        r => format!("{} out ({} reasoning)", thousands(usage.output_tokens), thousands(r)),
    });
    parts.push(match cost {
        Some(c) => format_micro_cents(c),
        None => "cost unknown (no pricing for this model)".to_owned(),
    });
    parts.join(" · ")
}

/// `/cost`'s cache line: `cache: 9,000 read, 1,000 written (1,000 for 1h) · saved $0.0243 vs no
/// cache`. `None` when nothing was read from or written to the cache. Without pricing the saving
/// is left out; when writes cost more than reads saved (a first turn), it says how much more.
pub fn cache_line(usage: &Usage, cost: Option<u64>, uncached: Option<u64>) -> Option<String> {
    if usage.cache_read_tokens == 0 && usage.cache_write_tokens == 0 {
        return None;
    }
    let mut line = format!(
        "cache: {} read, {} written",
        thousands(usage.cache_read_tokens),
        thousands(usage.cache_write_tokens)
    );
    if usage.cache_write_1h_tokens > 0 {
        line.push_str(&format!(" ({} for 1h)", thousands(usage.cache_write_1h_tokens)));
    }
    line.push_str(&format!(" · {}% of input cached", usage.cached_percent()));
    if let (Some(cost), Some(uncached)) = (cost, uncached) {
        if uncached >= cost {
            line.push_str(&format!(" · saved {} vs no cache", format_micro_cents(uncached - cost)));
        } else {
            line.push_str(&format!(
                " · {} more than no cache (writes not yet read back)",
                format_micro_cents(cost - uncached)
            ));
        }
    }
    Some(line)
}

/// Micro-cents as dollars, for JSON.
pub fn dollars(micro_cents: u64) -> f64 {
    micro_cents as f64 / MICRO_CENTS_PER_DOLLAR
}

#[cfg(test)]
mod tests {
    use panto_core::{ApiStyle, ReasoningEffort};

    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn summary_prices_known_models() {
        let wire = ProviderIdentity {
            api_style: ApiStyle::AnthropicMessages,
            base_url: "http://x".into(),
            model: "claude-sonnet-4-5".into(),
            reasoning: ReasoningEffort::Off,
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 0,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
        };
        let c = cost(&PricingRegistry::new(), &wire, &usage);
        assert_eq!(c, Some(300_000_000));
        assert_eq!(summary_line(&usage, c), "1,000,000 in · 0 out · $3.0000");
        assert_eq!(dollars(300_000_000), 3.0);
        let unknown = ProviderIdentity {
            model: "llama".into(),
            ..wire
        };
        assert_eq!(cost(&PricingRegistry::new(), &unknown, &usage), None);
        let reasoned = Usage {
            output_tokens: 1_500,
            reasoning_tokens: 1_200,
            ..usage
        };
        assert_eq!(
            summary_line(&reasoned, None),
            "1,000,000 in · 1,500 out (1,200 reasoning) · cost unknown (no pricing for this model)"
        );
    }

    #[test]
    fn the_cached_share_and_the_saving_are_shown() {
        let wire = ProviderIdentity {
            api_style: ApiStyle::AnthropicMessages,
            base_url: "http://x".into(),
            model: "claude-sonnet-4-5".into(),
            reasoning: ReasoningEffort::Off,
        };
        let usage = Usage {
            input_tokens: 100_000,
            output_tokens: 1_000,
            cache_read_tokens: 840_000,
            cache_write_tokens: 60_000,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
        };
        let pricing = PricingRegistry::new();
        let (c, uncached) = (cost(&pricing, &wire, &usage), uncached_cost(&pricing, &wire, &usage));
        assert_eq!(
            summary_line(&usage, c),
            "1,000,000 in · 84% cached · 1,000 out · $0.7920"
        );
        // No cache: 1M input at $3 + 1k output at $15 = $3.015; with it $0.7920.
        assert_eq!(
            cache_line(&usage, c, uncached).unwrap(),
            "cache: 840,000 read, 60,000 written · 84% of input cached · saved $2.2230 vs no cache"
        );
        let first = Usage {
            cache_read_tokens: 0,
            cache_write_tokens: 10_000,
            cache_write_1h_tokens: 10_000,
            reasoning_tokens: 0,
            ..usage
        };
        let line = cache_line(
            &first,
            cost(&pricing, &wire, &first),
            uncached_cost(&pricing, &wire, &first),
        )
        .unwrap();
        assert!(
            line.contains("(10,000 for 1h)") && line.contains("more than no cache"),
            "{line}"
        );
        assert_eq!(cache_line(&Usage::default(), None, None), None);
    }
}
