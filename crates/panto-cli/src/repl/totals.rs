//! What this process's turns in the current session used and cost, for `/cost` and the status
//! line.

use panto_core::Usage;

use super::turn;

/// Tokens and cost of this process's turns in the current session.
#[derive(Debug, Default)]
pub(super) struct Totals {
    pub(super) usage: Usage,
    /// Summed cost; `None` once any turn's cost was unknown.
    pub(super) cost: Option<u64>,
    /// What the same requests would have cost with no prompt cache; `None` as `cost`.
    pub(super) uncached_cost: Option<u64>,
    pub(super) turns: u32,
}

impl Totals {
    pub(super) fn new() -> Self {
        Totals {
            usage: Usage::default(),
            cost: Some(0),
            uncached_cost: Some(0),
            turns: 0,
        }
    }

    pub(super) fn add(&mut self, outcome: &turn::TurnOutcome) {
        self.add_request(&outcome.usage, outcome.cost, outcome.uncached_cost);
        self.turns += 1;
    }

    /// Counts a request made outside a turn (a `/compact` summary).
    pub(super) fn add_request(&mut self, usage: &Usage, cost: Option<u64>, uncached_cost: Option<u64>) {
        self.usage.accumulate(usage);
        let sum = |total: Option<u64>, more: Option<u64>| match (total, more) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
        self.cost = sum(self.cost, cost);
        self.uncached_cost = sum(self.uncached_cost, uncached_cost);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_lose_the_cost_once_unknown() {
        let mut t = Totals::new();
        t.add(&turn::TurnOutcome {
            usage: Usage::default(),
            cost: Some(5),
            uncached_cost: Some(5),
            ..Default::default()
        });
        assert_eq!(t.cost, Some(5));
        t.add(&turn::TurnOutcome {
            usage: Usage::default(),
            cost: None,
            uncached_cost: None,
            ..Default::default()
        });
        assert_eq!(t.cost, None);
        assert_eq!(t.turns, 2);
    }

    #[test]
    fn a_compaction_request_counts_in_the_totals_but_is_no_turn() {
        let mut t = Totals::new();
        let used = Usage {
            input_tokens: 900,
            output_tokens: 30,
            ..Usage::default()
        };
        t.add_request(&used, Some(12), Some(12));
        assert_eq!((t.usage, t.cost, t.turns), (used, Some(12), 0));
    }
}
