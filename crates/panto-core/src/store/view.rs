//! What a compaction does to the view the model sees.

/// Applies a compaction to `view`, the messages the model sees (in any representation: the
/// messages themselves, indices, entry ids, rows): every system message before index `cut`
/// (clamped to the view) stays, so the effective system prompt survives, then `summary`, then
/// the kept tail from `cut` on. Returns the summary's index in the new view.
///
/// The one definition of what a compaction does to a conversation: the agent compacts its live
/// conversation with it, and every store's `load` replays its log with it, so they agree (the
/// store contract suite holds every store to it).
pub fn compact_view<T>(view: &mut Vec<T>, cut: usize, summary: T, is_system: impl Fn(&T) -> bool) -> usize {
    let cut = cut.min(view.len());
    let tail = view.split_off(cut);
    view.retain(|v| is_system(v));
    let at = view.len();
    view.push(summary);
    view.extend(tail);
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_earlier_system_entries_then_the_summary_then_the_tail() {
        // Upper case stands for a system message.
        let is_system = |c: &char| c.is_ascii_uppercase();
        let mut view: Vec<char> = "AbcDef".chars().collect();
        assert_eq!(compact_view(&mut view, 4, 's', is_system), 2);
        assert_eq!(view.iter().collect::<String>(), "ADsef");

        // A cut past the end keeps nothing after the summary.
        let mut view: Vec<char> = "Abc".chars().collect();
        assert_eq!(compact_view(&mut view, 99, 's', is_system), 1);
        assert_eq!(view.iter().collect::<String>(), "As");
    }
}
