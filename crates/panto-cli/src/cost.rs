//! Token counts and cost, as shown after a turn, by `/cost`, and in JSON results.

use panto_core::{format_micro_cents, PricingRegistry, Usage, WireIdentity};

/// Micro-cents per dollar.
const MICRO_CENTS_PER_DOLLAR: f64 = 100.0 * 1_000_000.0;

/// What `usage` cost on `wire`, in micro-cents; `None` when no rate is known for the model.
pub fn cost(pricing: &PricingRegistry, wire: &WireIdentity, usage: &Usage) -> Option<u64> {
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

/// The one-line summary after a turn: `1,234 in · 56 out · cache 100 read, 0 written · $0.0012`.
pub fn summary_line(usage: &Usage, cost: Option<u64>) -> String {
    let mut parts = vec![
        format!("{} in", thousands(usage.total_input_tokens())),
        format!("{} out", thousands(usage.output_tokens)),
    ];
    if usage.cache_read_tokens > 0 || usage.cache_write_tokens > 0 {
        parts.push(format!(
            "cache {} read, {} written",
            thousands(usage.cache_read_tokens),
            thousands(usage.cache_write_tokens)
        ));
    }
    parts.push(match cost {
        Some(c) => format_micro_cents(c),
        None => "cost unknown (no pricing for this model)".to_owned(),
    });
    parts.join(" · ")
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
        let wire = WireIdentity {
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
        };
        let c = cost(&PricingRegistry::new(), &wire, &usage);
        assert_eq!(c, Some(300_000_000));
        assert_eq!(summary_line(&usage, c), "1,000,000 in · 0 out · $3.0000");
        assert_eq!(dollars(300_000_000), 3.0);
        let unknown = WireIdentity {
            model: "llama".into(),
            ..wire
        };
        assert_eq!(cost(&PricingRegistry::new(), &unknown, &usage), None);
    }
}
