//! The status line after each turn: the model, tokens, how full the context window is, what the
//! turn and the session cost, how much of the input was read from the prompt cache, and how long
//! the turn took. Then a blank line and a dim rule, so turns are told apart at a glance.

use std::time::Duration;

use panto_core::pricing::format_micro_cents;
use panto_core::Usage;

use super::Style;
use crate::cost::thousands;

/// What the status line reports about one turn.
#[derive(Debug, Clone)]
pub struct TurnStatus {
    /// The model's wire name.
    pub model: String,
    /// Tokens over every request of the turn.
    pub usage: Usage,
    /// The turn's cost; `None` when no pricing is known.
    pub turn_cost: Option<u64>,
    /// The session's cost in this process so far, this turn included.
    pub session_cost: Option<u64>,
    /// Tokens of the context as of the last request (its input and output), when known.
    pub context_used: Option<u64>,
    /// The model's context window, in tokens.
    pub window: u64,
    /// How long the turn took.
    pub elapsed: Duration,
}

/// The share of `usage`'s input tokens read from the prompt cache, in percent (core's
/// [`Usage::cached_percent`], the one definition); `None` when there was no input.
pub fn cached_percent(usage: &Usage) -> Option<u64> {
    (usage.total_input_tokens() > 0).then(|| usage.cached_percent())
}

/// `1234` as `1.2k`, `200000` as `200k`.
fn short(tokens: u64) -> String {
    if tokens >= 10_000 {
        format!("{}k", tokens / 1000)
    } else if tokens >= 1000 {
        format!("{:.1}k", tokens as f64 / 1000.0)
    } else {
        tokens.to_string()
    }
}

fn money(cost: Option<u64>) -> String {
    cost.map_or_else(|| "cost unknown".to_owned(), format_micro_cents)
}

impl TurnStatus {
    /// The status line's text (not styled).
    pub fn line(&self) -> String {
        self.parts().join(" · ")
    }

    /// The line in at most `columns` columns: wrapped between its parts when wider.
    fn fitted(&self, columns: usize) -> String {
        super::wrap::join_fitted(&self.parts(), " · ", columns)
    }

    fn parts(&self) -> Vec<String> {
        let mut parts = vec![
            self.model.clone(),
            format!(
                "{} in · {} out",
                thousands(self.usage.total_input_tokens()),
                thousands(self.usage.output_tokens)
            ),
        ];
        if let Some(used) = self.context_used {
            let percent = used as f64 * 100.0 / self.window.max(1) as f64;
            parts.push(format!("context {percent:.0}% of {}", short(self.window)));
        }
        parts.push(format!("turn {}", money(self.turn_cost)));
        parts.push(format!("session {}", money(self.session_cost)));
        if let Some(cached) = cached_percent(&self.usage) {
            parts.push(format!("{cached}% cached"));
        }
        parts.push(format!("{:.1} s", self.elapsed.as_secs_f64()));
        parts
    }

    /// The status line, a blank line and a dim rule `columns` wide, as written after a turn.
    pub fn render(&self, style: Style, columns: usize) -> String {
        let rule = "─".repeat(columns.clamp(1, 200));
        let line = self.fitted(columns);
        format!("{}\n\n{}\n", style.dim(&style.safe(&line)), style.dim(&rule))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_says_everything_once() {
        let status = TurnStatus {
            model: "claude-sonnet-4-5".into(),
            usage: Usage {
                input_tokens: 200,
                cache_read_tokens: 800,
                output_tokens: 56,
                ..Usage::default()
            },
            turn_cost: Some(1_200_000),
            session_cost: Some(3_400_000),
            context_used: Some(20_000),
            window: 200_000,
            elapsed: Duration::from_millis(2_340),
        };
        assert_eq!(
            status.line(),
            "claude-sonnet-4-5 · 1,000 in · 56 out · context 10% of 200k · turn $0.0120 · session $0.0340 · 80% cached · 2.3 s"
        );
        assert_eq!(cached_percent(&Usage::default()), None);
        // Narrow: wrapped between parts.
        let narrow = status.fitted(60);
        assert_eq!(
            narrow,
            "claude-sonnet-4-5 · 1,000 in · 56 out · context 10% of 200k\nturn $0.0120 · session $0.0340 · 80% cached · 2.3 s"
        );
    }
}
