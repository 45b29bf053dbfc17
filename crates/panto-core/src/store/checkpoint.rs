//! File checkpoints: the one definition of a checkpoint's content address, and the record a
//! store keeps of each file change.

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The largest content a checkpoint keeps (50 MiB): the file tools write a larger file without a
/// checkpoint, and a store refuses to read a kept blob larger than this (a planted sparse file of
/// gigabytes is refused before it is read, not read and then found to mismatch its address).
pub const MAX_CHECKPOINT_BYTES: u64 = 50 * 1024 * 1024;

/// The content address of a checkpoint: the SHA-256 of the bytes, 64 lowercase hex digits. Every
/// store names checkpoints by it, so the same bytes have the same address everywhere and an
/// address is safe in a file name.
pub fn checkpoint_address(content: &[u8]) -> String {
    Sha256::digest(content).iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks that `address` could be a checkpoint address (64 lowercase hex digits): stores call
/// this before touching storage, so an address never reaches a path or a query unchecked.
pub fn validate_checkpoint_address(address: &str) -> Result<()> {
    if address.len() == 64 && address.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(())
    } else {
        Err(Error::Store {
            context: "reading a file checkpoint".to_owned(),
            source: format!("{address:?} is not a checkpoint address (64 lowercase hex digits)").into(),
        })
    }
}

/// One change of a file, as a session records it: the file's content before and after, by
/// [`checkpoint_address`]. The content before is kept with
/// [`SessionStore::put_checkpoint`](crate::SessionStore::put_checkpoint); of the content after
/// only its address is kept, to tell whether the file changed again outside panto.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// The file, as an absolute path.
    pub path: String,
    /// The address of the content before the change; `None`: the file did not exist.
    pub before: Option<String>,
    /// The address of the content after the change; `None`: the change removed the file.
    pub after: Option<String>,
    /// Whether the change was a restore by a rewind (`Agent::file_changes_since` reads a restore
    /// as the state it put back, not as a change on the branch).
    pub restore: bool,
}

/// A [`CheckpointRecord`] as a store returns it, with the entry it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCheckpoint {
    /// The tip of the active branch when the change was recorded: for a tool's change, the
    /// assistant message that called the tool. `None`: the empty start.
    pub entry: Option<String>,
    /// The change.
    pub record: CheckpointRecord,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_sha256_hex_and_checked() {
        assert_eq!(
            checkpoint_address(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        validate_checkpoint_address(&checkpoint_address(b"x")).unwrap();
        for bad in ["", "../etc/passwd", &"A".repeat(64), &"a".repeat(63)] {
            assert!(validate_checkpoint_address(bad).is_err(), "{bad}");
        }
    }
}
