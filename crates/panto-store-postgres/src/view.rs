//! The view: which entries of the full history the model sees, compactions applied.
//!
//! The semantics are `MemoryStore`'s (and the file store's): a plain entry joins the view; a
//! compaction summary replaces it with every *system* entry before the cut (so the effective
//! system prompt survives), then the summary, then the view from the cut on. A compaction is
//! recorded with the entry id of the first kept message, so the history explains itself.

/// One entry of the view: its id, and whether it is a system message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ViewEntry {
    /// The entry id.
    pub id: String,
    /// Whether the message is a system message (and so survives compaction).
    pub system: bool,
    /// The entry's position in the history.
    pub seq: i64,
}

/// Applies a compaction whose summary is `summary` and that keeps the view from index `cut` on
/// (clamped to the view). Returns the entry id of the first kept message, `None` when nothing
/// was kept: what the summary entry records.
pub(crate) fn compact_at(view: &mut Vec<ViewEntry>, cut: usize, summary: ViewEntry) -> Option<String> {
    let first_kept = view.get(cut).map(|v| v.id.clone());
    panto_core::store::compact_view(view, cut, summary, |v| v.system);
    first_kept
}

/// Applies a recorded compaction: the cut is where entry `first_kept` stands in the view (the
/// end when `None`). `Err` when that entry is not in the view: the history is inconsistent.
pub(crate) fn compact_recorded(
    view: &mut Vec<ViewEntry>,
    first_kept: Option<&str>,
    summary: ViewEntry,
) -> Result<(), String> {
    let cut = match first_kept {
        None => view.len(),
        Some(kept) => view.iter().position(|v| v.id == kept).ok_or_else(|| {
            format!(
                "the compaction keeps messages from entry \"{kept}\", which is not in the conversation at that point"
            )
        })?,
    };
    compact_at(view, cut, summary);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: i64, system: bool) -> ViewEntry {
        ViewEntry {
            id: format!("e{seq}"),
            system,
            seq,
        }
    }

    fn seqs(view: &[ViewEntry]) -> Vec<i64> {
        view.iter().map(|v| v.seq).collect()
    }

    #[test]
    fn compaction_keeps_system_messages_the_summary_and_the_tail() {
        let mut view: Vec<ViewEntry> = vec![entry(0, true), entry(1, false), entry(2, true), entry(3, false)];
        let kept = compact_at(&mut view, 3, entry(4, false));
        assert_eq!(kept.as_deref(), Some("e3"));
        assert_eq!(seqs(&view), [0, 2, 4, 3]);
        // Keeping nothing: the index is the view's length, or past it.
        let kept = compact_at(&mut view, 99, entry(5, false));
        assert_eq!(kept, None);
        assert_eq!(seqs(&view), [0, 2, 5]);
    }

    #[test]
    fn recorded_compactions_replay_by_entry_id() {
        let mut view: Vec<ViewEntry> = vec![entry(0, true), entry(1, false), entry(2, false)];
        compact_recorded(&mut view, Some("e2"), entry(3, false)).unwrap();
        assert_eq!(seqs(&view), [0, 3, 2]);
        let err = compact_recorded(&mut view, Some("e1"), entry(4, false)).unwrap_err();
        assert!(err.contains("\"e1\""), "{err}");
    }
}
