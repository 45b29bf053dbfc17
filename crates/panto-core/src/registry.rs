//! The agent's tool registry: names on the wire, and what each one calls.
//!
//! Providers accept tool names of 1 to 64 characters from `[A-Za-z0-9_-]`. Tools registered
//! directly must already have such a name. Tools from a [`ToolSource`] may be named anything, so
//! their wire name is `<source>__<tool>` with every byte outside `[A-Za-z0-9-]` written as `_xx`
//! (two lowercase hex digits). `_` is never followed by `_` inside an encoded part, so the `__`
//! separator is unambiguous and the encoding is reversible. A name that would exceed 64 characters
//! is cut and given a hash suffix; the registry's map still decodes it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::tool::{Tool, ToolDecl, ToolSource};

/// The longest tool name, in bytes, that providers accept on the wire.
pub const MAX_WIRE_NAME: usize = 64;

/// Whether `name` is a valid wire name: 1 to [`MAX_WIRE_NAME`] characters of `[A-Za-z0-9_-]`.
///
/// A tool registered directly with the agent must have such a name; names from a
/// [`ToolSource`] are encoded into one.
pub fn is_wire_name(name: &str) -> bool {
    (1..=MAX_WIRE_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The rule of [`is_wire_name`] as a sentence, for errors that refuse a name.
pub(crate) fn wire_name_rule() -> String {
    format!("names must be 1 to {MAX_WIRE_NAME} characters of A-Z, a-z, 0-9, '_' and '-'")
}

fn encode_part(part: &str, out: &mut String) {
    for b in part.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            out.push(b as char);
        } else {
            out.push('_');
            out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
            out.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
        }
    }
}

/// The wire name for tool `tool` of source `source`, before any length cut.
pub(crate) fn encode_source_name(source: &str, tool: &str) -> String {
    let mut out = String::with_capacity(source.len() + tool.len() + 2);
    encode_part(source, &mut out);
    out.push_str("__");
    encode_part(tool, &mut out);
    out
}

#[cfg(test)]
fn decode_part(part: &str) -> Option<String> {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'_' {
            let hex = part.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Splits an encoded wire name back into (source, tool); `None` if it is not one. The registry
/// decodes through its map (which also covers shortened names); this proves the encoding reversible.
#[cfg(test)]
pub(crate) fn decode_source_name(wire: &str) -> Option<(String, String)> {
    // The separator is the first `__` that does not belong to an escape: escapes are `_xx` with
    // hex digits, and hex digits are never `_`, so scanning escape by escape finds it.
    let bytes = wire.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'_' {
            if bytes.get(i + 1) == Some(&b'_') {
                return Some((decode_part(&wire[..i])?, decode_part(&wire[i + 2..])?));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    None
}

/// Cuts an over-long wire name and appends a hash of the whole, keeping it unique in practice.
fn shorten(wire: &str) -> String {
    // FNV-1a: stable across runs and platforms, unlike `DefaultHasher`.
    let mut hash: u32 = 0x811c_9dc5;
    for b in wire.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    let mut cut = MAX_WIRE_NAME - 9;
    // Do not cut inside an escape, which would leave a dangling `_`.
    while wire.as_bytes()[..cut].iter().rev().take(2).any(|&b| b == b'_') {
        cut -= 1;
    }
    format!("{}-{hash:08x}", &wire[..cut])
}

/// What a wire name calls.
#[derive(Clone)]
pub(crate) enum Target {
    /// A directly registered tool.
    Tool(Arc<dyn Tool>),
    /// A tool of a source, under the source's own name for it.
    Source(Arc<dyn ToolSource>, String),
}

#[derive(Clone)]
struct Entry {
    decl: ToolDecl,
    target: Target,
    /// The source this entry came from, for unregistering a whole source.
    source: Option<String>,
}

/// The tools an agent offers, by wire name.
#[derive(Default, Clone)]
pub(crate) struct ToolRegistry {
    entries: BTreeMap<String, Entry>,
    /// Registration order, so the manifest sent to the model is stable.
    order: Vec<String>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.order.iter()).finish()
    }
}

impl ToolRegistry {
    /// Registers a tool under its declared name, which must be a wire name and not taken.
    pub fn register_tool(&mut self, tool: Arc<dyn Tool>) -> Result<()> {
        let decl = tool.declaration();
        if !is_wire_name(&decl.name) {
            return Err(Error::InvalidTool {
                name: decl.name,
                reason: wire_name_rule(),
            });
        }
        self.insert(decl, Target::Tool(tool), None)
    }

    /// Registers every tool of `source`, each under its encoded wire name.
    pub fn register_source(&mut self, source: Arc<dyn ToolSource>) -> Result<()> {
        let source_name = source.name().to_owned();
        if source_name.is_empty() {
            return Err(Error::InvalidTool {
                name: source_name,
                reason: "a tool source needs a non-empty name".into(),
            });
        }
        let mut staged = Vec::new();
        for decl in source.tools() {
            let mut wire = encode_source_name(&source_name, &decl.name);
            if wire.len() > MAX_WIRE_NAME {
                wire = shorten(&wire);
            }
            if self.entries.contains_key(&wire) || staged.iter().any(|(w, _, _): &(String, _, _)| *w == wire) {
                return Err(Error::InvalidTool {
                    name: decl.name,
                    reason: format!("wire name {wire:?} is already registered"),
                });
            }
            let original = decl.name.clone();
            let wire_decl = ToolDecl {
                name: wire.clone(),
                ..decl
            };
            staged.push((wire, wire_decl, original));
        }
        // All or nothing: a clash in the middle of a source registers none of it.
        for (_, decl, original) in staged {
            self.insert(
                decl,
                Target::Source(source.clone(), original),
                Some(source_name.clone()),
            )?;
        }
        Ok(())
    }

    fn insert(&mut self, decl: ToolDecl, target: Target, source: Option<String>) -> Result<()> {
        if self.entries.contains_key(&decl.name) {
            return Err(Error::InvalidTool {
                name: decl.name,
                reason: "a tool with this name is already registered".into(),
            });
        }
        self.order.push(decl.name.clone());
        self.entries.insert(decl.name.clone(), Entry { decl, target, source });
        Ok(())
    }

    /// Removes the tool with wire name `name`, or every tool of the source named `name`. Returns
    /// whether anything was removed.
    pub fn unregister(&mut self, name: &str) -> bool {
        let before = self.entries.len();
        self.entries
            .retain(|wire, e| wire != name && e.source.as_deref() != Some(name));
        self.order.retain(|w| self.entries.contains_key(w));
        self.entries.len() != before
    }

    /// What `wire` calls, and the name to report for it.
    pub fn resolve(&self, wire: &str) -> Option<(Target, String)> {
        let entry = self.entries.get(wire)?;
        let display = match &entry.target {
            Target::Tool(_) => wire.to_owned(),
            Target::Source(_, original) => format!("{}/{original}", entry.source.as_deref().unwrap_or("")),
        };
        Some((entry.target.clone(), display))
    }

    /// The declarations offered to the model, under wire names, in registration order.
    pub fn decls(&self) -> Vec<ToolDecl> {
        self.order
            .iter()
            .filter_map(|w| self.entries.get(w).map(|e| e.decl.clone()))
            .collect()
    }
}

#[cfg(test)]
#[path = "registry_proptests.rs"]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_names_round_trip_and_are_wire_names() {
        for (s, t) in [
            ("fs", "read"),
            ("my.server", "read file"),
            ("a_b", "c__d"),
            ("ünï", "ツール"),
            ("x", "_"),
            ("-", "-_-"),
        ] {
            let wire = encode_source_name(s, t);
            assert!(
                wire.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                "{wire}"
            );
            assert_eq!(decode_source_name(&wire), Some((s.to_owned(), t.to_owned())), "{wire}");
        }
    }

    #[test]
    fn long_names_are_shortened_to_valid_unique_names() {
        let a = shorten(&encode_source_name("server", &"x".repeat(80)));
        let b = shorten(&encode_source_name("server", &"x".repeat(81)));
        assert!(is_wire_name(&a) && is_wire_name(&b));
        assert_ne!(a, b);
        let escaped = shorten(&encode_source_name("s", &".".repeat(40)));
        assert!(is_wire_name(&escaped), "{escaped}");
    }

    #[test]
    fn wire_name_validation() {
        assert!(is_wire_name("read_file-2"));
        assert!(!is_wire_name(""));
        assert!(!is_wire_name("read file"));
        assert!(!is_wire_name(&"a".repeat(65)));
    }
}
