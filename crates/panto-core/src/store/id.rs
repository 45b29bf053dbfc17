//! Session ids: how they are minted and what may be one.

use crate::error::{Error, Result};

/// The longest a session id can be: a hyphenated UUID. An id this long is no other id's prefix.
pub(crate) const MAX_SESSION_ID_LEN: usize = 36;

/// Mints a new session id: a UUIDv7, so ids sort by creation time.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
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
}
