//! Session ids: how they are minted and what may be one; and how stores mint entry ids.

use crate::error::{Error, Result};

/// The longest a session id can be: a hyphenated UUID. An id this long is no other id's prefix.
pub(crate) const MAX_SESSION_ID_LEN: usize = 36;

/// Mints a new session id: a UUIDv7, so ids sort by creation time.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Where a store draws new entry ids from: 8 lowercase hex digits, unique within a session
/// (every store of panto's uses the same scheme, so that a session moved between stores keeps
/// its ids and looks alike).
///
/// A store holds one per session it writes (or per fork it writes) and asks it for each new
/// entry, passing what the session already holds: an id only has to be unique there, which
/// [`EntryIds::next_unused`] checks, and the generator only makes a repeat rare. It is seeded
/// once, from a UUIDv7's random bits, and stepped per id: minting a UUIDv7 for every id took the
/// uuid crate's process-wide lock and often a `getrandom` call, on every append of every session.
///
/// ```
/// use std::collections::HashSet;
/// use panto_core::store::EntryIds;
///
/// let mut held = HashSet::new();
/// let mut ids = EntryIds::new();
/// let id = ids.next_unused(|id| held.contains(id));
/// assert_eq!(id.len(), 8);
/// held.insert(id);
/// ```
#[derive(Debug, Clone)]
pub struct EntryIds(u64);

impl EntryIds {
    /// A generator with a fresh seed.
    pub fn new() -> EntryIds {
        let bytes = uuid::Uuid::now_v7().into_bytes();
        // Bytes 8..16 of a UUIDv7 the uuid crate mints: the variant bits, the rest of its
        // counter, and random bits.
        let mut seed = [0u8; 8];
        seed.copy_from_slice(&bytes[8..]);
        EntryIds(u64::from_le_bytes(seed))
    }

    /// The next id for which `taken` is false: pass whether the session already holds it.
    pub fn next_unused(&mut self, taken: impl Fn(&str) -> bool) -> String {
        loop {
            let id = hex8(self.step() as u32);
            if !taken(&id) {
                return id;
            }
        }
    }

    /// SplitMix64: every seed gives a full-period sequence whose outputs are well mixed.
    fn step(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl Default for EntryIds {
    fn default() -> EntryIds {
        EntryIds::new()
    }
}

/// Checks that `id` could be a session id or id prefix: 1 to 36 characters of lowercase hex and
/// `-`. Stores call this before touching storage, so `../x` or `a/b` never reach a path.
pub fn validate_session_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= MAX_SESSION_ID_LEN
        && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidSessionId(id.to_owned()))
    }
}

/// `value` as 8 lowercase hex digits, as `format!("{value:08x}")` writes it without its
/// formatting machinery (an id is minted for every entry a store writes).
fn hex8(value: u32) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    (0..8)
        .rev()
        .map(|nibble| char::from(DIGITS[(value >> (nibble * 4)) as usize & 0xf]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_with_path_characters_are_rejected() {
        for bad in ["", "../x", "a/b", "ABC", "0190-..", &"a".repeat(37)] {
            assert!(
                matches!(validate_session_id(bad), Err(Error::InvalidSessionId(_))),
                "{bad}"
            );
        }
        validate_session_id(&new_session_id()).unwrap();
        validate_session_id("0190").unwrap();
    }

    #[test]
    fn hex8_writes_what_format_writes() {
        for value in [0, 1, 0xf, 0x10, 0xdead_beef, 0x0123_4567, u32::MAX, 0x8000_0000] {
            assert_eq!(hex8(value), format!("{value:08x}"));
        }
    }

    #[test]
    fn entry_ids_are_eight_hex_digits_and_never_one_the_session_holds() {
        let mut held = std::collections::HashSet::new();
        let mut ids = EntryIds::new();
        for _ in 0..20_000 {
            let id = ids.next_unused(|id| held.contains(id));
            assert!(
                id.len() == 8 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                "{id:?}"
            );
            assert!(held.insert(id.clone()), "{id} minted twice");
        }
        // The ids the generator would give next, already held, are skipped.
        let mut next = ids.clone();
        let taken: std::collections::HashSet<String> = (0..3).map(|_| next.next_unused(|_| false)).collect();
        let id = ids.next_unused(|id| taken.contains(id));
        assert!(!taken.contains(&id), "{id}");
        assert_eq!(id, next.next_unused(|_| false));
    }

    #[test]
    fn two_generators_draw_different_ids() {
        let (mut a, mut b) = (EntryIds::new(), EntryIds::new());
        let first: Vec<String> = (0..4).map(|_| a.next_unused(|_| false)).collect();
        let second: Vec<String> = (0..4).map(|_| b.next_unused(|_| false)).collect();
        assert_ne!(first, second);
    }
}
