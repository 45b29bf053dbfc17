//! The session table: the short ids and rows of `panto sessions`, the `-r` picker and
//! `/sessions`.

use std::fmt::Write as _;

use chrono::format::{Item, Numeric, Pad};
use chrono::{DateTime, Local, Utc};
use panto_core::SessionInfo;

/// How many sessions the picker and `/sessions` show.
pub const RECENT: usize = 20;

/// Every stored session's id, sorted: what an id a listing prints must tell apart, the sessions
/// it leaves out (another directory's, older ones) included, so that `panto -r` and `/resume`
/// take the printed id back unambiguously.
pub struct StoredIds(Vec<String>);

impl StoredIds {
    /// The ids of `infos`, the store's whole listing.
    pub fn of(infos: &[SessionInfo]) -> Self {
        let mut ids: Vec<String> = infos.iter().map(|i| i.id.clone()).collect();
        ids.sort_unstable();
        ids.dedup();
        StoredIds(ids)
    }

    /// How many characters of `id` no other stored id shares, plus one: the prefix length
    /// that tells it apart. The ids sharing the longest start with it sort next to it.
    fn needed(&self, id: &str) -> usize {
        let at = self.0.partition_point(|other| other.as_str() < id);
        let before = at.checked_sub(1).and_then(|i| self.0.get(i));
        let after = self.0[at..].iter().find(|other| other.as_str() != id);
        before
            .into_iter()
            .chain(after)
            .map(|other| other.chars().zip(id.chars()).take_while(|(x, y)| x == y).count() + 1)
            .max()
            .unwrap_or(0)
    }

    fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

/// The shortest id prefix, at least 8 characters and one length for the whole column, that
/// tells each of `shown` apart from every stored session (`stored`) and from each other: UUIDv7
/// ids share their leading (time) digits when created close together.
pub fn short_ids(shown: &[SessionInfo], stored: &StoredIds) -> Vec<String> {
    // The longest prefix any two ids share is shared by two ids that sort next to each other, so
    // comparing neighbours after a sort finds it: comparing every pair took seconds for 10,000.
    let mut sorted: Vec<&str> = shown.iter().map(|i| i.id.as_str()).collect();
    sorted.sort_unstable();
    let len = sorted
        .windows(2)
        .filter(|w| w[0] != w[1])
        .map(|w| w[0].chars().zip(w[1].chars()).take_while(|(x, y)| x == y).count() + 1)
        .chain(shown.iter().map(|i| stored.needed(&i.id)))
        .fold(8, usize::max);
    shown
        .iter()
        .map(|i| i.id.chars().take(len.min(i.id.len())).collect())
        .collect()
}

/// The shortest prefix of `id`, at least 8 characters, that none of `others` shares: what panto
/// prints for a session so that `/resume` and `panto -r` take it back unambiguously.
pub fn unique_prefix<'a>(id: &str, others: impl IntoIterator<Item = &'a str>) -> String {
    let len = others
        .into_iter()
        .filter(|other| *other != id)
        .map(|other| other.chars().zip(id.chars()).take_while(|(a, b)| a == b).count() + 1)
        .fold(8, usize::max)
        .min(id.chars().count());
    id.chars().take(len).collect()
}

/// `%Y-%m-%d %H:%M`, parsed once instead of on every row.
const MINUTE: &[Item<'static>] = &[
    Item::Numeric(Numeric::Year, Pad::Zero),
    Item::Literal("-"),
    Item::Numeric(Numeric::Month, Pad::Zero),
    Item::Literal("-"),
    Item::Numeric(Numeric::Day, Pad::Zero),
    Item::Literal(" "),
    Item::Numeric(Numeric::Hour, Pad::Zero),
    Item::Literal(":"),
    Item::Numeric(Numeric::Minute, Pad::Zero),
];

/// `t` in local time, to the minute.
pub fn local_time(t: DateTime<Utc>) -> String {
    let mut out = String::with_capacity(16);
    push_local_time(&mut out, t);
    out
}

/// [`local_time`], written at the end of `out`.
fn push_local_time(out: &mut String, t: DateTime<Utc>) {
    let _ = write!(out, "{}", t.with_timezone(&Local).format_with_items(MINUTE.iter()));
}

/// `text` on one line (whitespace runs as one space), cut to `max` characters with `…`.
pub fn one_line(text: &str, max: usize) -> String {
    let mut out = String::new();
    push_one_line(&mut out, text, max);
    out
}

/// [`one_line`], written at the end of `out`.
fn push_one_line(out: &mut String, text: &str, max: usize) {
    let mut written = 0;
    for (i, word) in text.split_whitespace().enumerate() {
        for c in (i > 0).then_some(' ').into_iter().chain(word.chars()) {
            if written == max {
                out.push('…');
                return;
            }
            out.push(c);
            written += 1;
        }
    }
}

/// The table rows of a listing of `infos`: short id (unique among `stored`), last prompt time,
/// messages, model, last prompt.
pub fn table(infos: &[SessionInfo], stored: &StoredIds) -> Vec<String> {
    let ids = short_ids(infos, stored);
    infos
        .iter()
        .zip(ids)
        .map(|(info, id)| {
            // One buffer a row, written in place: a listing of thousands formats each field
            // straight into it.
            let mut row = String::with_capacity(160);
            row.push_str(&id);
            row.push_str("  ");
            push_local_time(&mut row, info.recency());
            let model = info.wire.as_ref().map_or("-", |w| w.model.as_str());
            let _ = write!(row, "  {:>4} msgs  {model:<20}  ", info.message_count);
            push_one_line(&mut row, info.last_user_message.as_deref().unwrap_or(""), 60);
            if let Some(f) = &info.forked_from {
                // The id comes from a file: cut by characters, never by bytes.
                let _ = write!(
                    row,
                    "  (fork of {})",
                    unique_prefix(&f.session, stored.iter().chain(infos.iter().map(|i| i.id.as_str())))
                );
            }
            row
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::test_info as info;

    #[test]
    fn a_unique_prefix_is_eight_characters_or_as_long_as_a_shared_start_needs() {
        let id = "01a24b44-1111-7000-8000-000000000000";
        assert_eq!(unique_prefix(id, []), "01a24b44");
        assert_eq!(unique_prefix(id, [id]), "01a24b44", "the id itself is not another");
        let sibling = "01a24b44-1122-7000-8000-000000000000";
        assert_eq!(unique_prefix(id, [sibling]), "01a24b44-111");
        assert_eq!(unique_prefix("short", ["shorter"]), "short");
    }

    #[test]
    fn one_line_joins_whitespace_runs_and_cuts_at_the_maximum() {
        assert_eq!(one_line("  a\n\tb  c ", 10), "a b c");
        assert_eq!(one_line("abc def", 7), "abc def", "exactly the maximum is not cut");
        assert_eq!(one_line("abc def", 6), "abc de…");
        assert_eq!(one_line("abc def", 3), "abc…", "a cut at a space drops it");
        assert_eq!(one_line("ééé", 2), "éé…", "counted in characters");
        assert_eq!(one_line("", 5), "");
    }

    #[test]
    fn local_time_is_the_minute() {
        let t = "2026-01-02T03:04:05Z".parse::<DateTime<Utc>>().unwrap();
        assert_eq!(
            local_time(t),
            t.with_timezone(&Local).format("%Y-%m-%d %H:%M").to_string()
        );
    }

    #[test]
    fn short_ids_grow_until_unique() {
        let infos = [
            info("0190aaaa-1111-7000-8000-000000000000"),
            info("0190aaaa-1122-7000-8000-000000000000"),
        ];
        let none = StoredIds::of(&[]);
        assert_eq!(short_ids(&infos, &none), ["0190aaaa-111", "0190aaaa-112"]);
        assert_eq!(short_ids(&infos[..1], &none), ["0190aaaa"]);
    }

    #[test]
    fn a_short_id_tells_apart_the_stored_sessions_a_listing_leaves_out() {
        // Another directory's session, started in the same minute, is not listed here, but
        // `panto -r` must still take the printed id back to this one.
        let stored = [
            info("0190aaaa-1111-7000-8000-000000000000"),
            info("0190aaaa-1122-7000-8000-000000000000"),
            info("0190bbbb-0000-7000-8000-000000000000"),
        ];
        let stored_ids = StoredIds::of(&stored);
        assert_eq!(short_ids(&stored[..1], &stored_ids), ["0190aaaa-111"]);
        assert_eq!(short_ids(&stored[2..], &stored_ids), ["0190bbbb"]);
    }

    #[test]
    fn short_ids_find_the_closest_pair_in_any_order() {
        // The two ids that need the longest prefix are neither first nor adjacent in the input.
        let infos = [
            info("0190aaaa-1122-7000-8000-000000000000"),
            info("0190bbbb-0000-7000-8000-000000000000"),
            info("0190aaaa-1000-7000-8000-000000000000"),
            info("0190aaaa-1122-7000-8000-000000000001"),
            info("0190aaaa-1122-7000-8000-000000000000"),
        ];
        let none = StoredIds::of(&[]);
        let ids = short_ids(&infos, &none);
        assert!(ids.iter().all(|id| id.len() == 36), "{ids:?}");
        assert_eq!(
            short_ids(&infos[..3], &none),
            ["0190aaaa-11", "0190bbbb-00", "0190aaaa-10"]
        );
    }
}
