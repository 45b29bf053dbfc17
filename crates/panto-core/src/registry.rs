//! The agent's tool registry: the names tools are offered to the model under, and what each one calls.
//!
//! Providers accept tool names of 1 to 64 characters from `[A-Za-z0-9_-]`. Tools registered
//! directly must already have such a name. Tools from a [`ToolSource`] may be named anything, so
//! their offered name is `<source>__<tool>` with every byte outside `[A-Za-z0-9-]` written as `_xx`
//! (two lowercase hex digits). `_` is never followed by `_` inside an encoded part, so the `__`
//! separator is unambiguous and the encoding is reversible. A name that would exceed 64 characters
//! is cut and given a hash suffix; the registry's map still decodes it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::tool::{Tool, ToolDecl, ToolSource};

/// The longest tool name, in bytes, that providers accept on the wire.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Whether `name` is a valid tool name as providers accept it: 1 to [`MAX_TOOL_NAME_LEN`] characters of `[A-Za-z0-9_-]`.
///
/// A tool registered directly with the agent must have such a name; names from a
/// [`ToolSource`] are encoded into one.
pub fn is_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The rule of [`is_tool_name`] as a sentence, for errors that refuse a name.
pub(crate) fn tool_name_rule() -> String {
    format!("names must be 1 to {MAX_TOOL_NAME_LEN} characters of A-Z, a-z, 0-9, '_' and '-'")
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

/// The offered name for tool `tool` of source `source`, before any length cut.
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

/// Splits an encoded offered name back into (source, tool); `None` if it is not one. The registry
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

/// Cuts an over-long offered name and appends a hash of the whole, keeping it unique in practice.
fn shorten(wire: &str) -> String {
    // FNV-1a: stable across runs and platforms, unlike `DefaultHasher`.
    let mut hash: u32 = 0x811c_9dc5;
    for b in wire.bytes() {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    let mut cut = MAX_TOOL_NAME_LEN - 9;
    // Do not cut inside an escape, which would leave a dangling `_`.
    while wire.as_bytes()[..cut].iter().rev().take(2).any(|&b| b == b'_') {
        cut -= 1;
    }
    format!("{}-{hash:08x}", &wire[..cut])
}

/// The offered name of `decl` from source `source`, the declaration under it, and the source's own
/// name for the tool.
fn wire_decl(source: &str, decl: ToolDecl) -> (String, ToolDecl, String) {
    let mut wire = encode_source_name(source, &decl.name);
    if wire.len() > MAX_TOOL_NAME_LEN {
        wire = shorten(&wire);
    }
    let original = decl.name.clone();
    let wire_decl = ToolDecl {
        name: wire.clone(),
        ..decl
    };
    (wire, wire_decl, original)
}

/// What a offered name calls.
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

/// A registered source and the [`ToolSource::generation`] its entries were read at.
#[derive(Clone)]
struct SourceState {
    source: Arc<dyn ToolSource>,
    generation: u64,
}

/// The tools an agent offers, by offered name.
#[derive(Default, Clone)]
pub(crate) struct ToolRegistry {
    entries: BTreeMap<String, Entry>,
    /// Registration order, so the manifest sent to the model is stable.
    order: Vec<String>,
    /// The registered sources by name, to re-read their tools when their generation moves.
    sources: BTreeMap<String, SourceState>,
    /// [`ToolRegistry::decls`], made once per change of the tools: every request and every
    /// append reads it, and a copy each time deep-copied every tool's schema.
    manifest: std::sync::OnceLock<Arc<[ToolDecl]>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.order.iter()).finish()
    }
}

impl ToolRegistry {
    /// Registers a tool under its declared name, which must be a offered name and not taken.
    pub(crate) fn register_tool(&mut self, tool: Arc<dyn Tool>) -> Result<()> {
        let decl = tool.declaration();
        if !is_tool_name(&decl.name) {
            return Err(Error::InvalidTool {
                name: decl.name,
                reason: tool_name_rule(),
            });
        }
        self.insert(decl, Target::Tool(tool), None)
    }

    /// Registers every tool of `source`, each under its encoded offered name.
    pub(crate) fn register_source(&mut self, source: Arc<dyn ToolSource>) -> Result<()> {
        let source_name = source.name().to_owned();
        if source_name.is_empty() {
            return Err(Error::InvalidTool {
                name: source_name,
                reason: "a tool source needs a non-empty name".into(),
            });
        }
        if self.sources.contains_key(&source_name) {
            return Err(Error::InvalidTool {
                name: source_name,
                reason: "a tool source with this name is already registered".into(),
            });
        }
        let generation = source.generation();
        let mut staged = Vec::new();
        for decl in source.tools() {
            let (wire, wire_decl, original) = wire_decl(&source_name, decl);
            if self.entries.contains_key(&wire) || staged.iter().any(|(w, _, _): &(String, _, _)| *w == wire) {
                return Err(Error::InvalidTool {
                    name: original,
                    reason: format!("offered name {wire:?} is already registered"),
                });
            }
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
        self.sources.insert(source_name, SourceState { source, generation });
        Ok(())
    }

    /// Re-reads the tools of every source whose [`ToolSource::generation`] moved since they were
    /// last read. The source's tools take the place its first tool held in the order (at the end
    /// when it had none), in the source's own order, so the manifest before and after them is
    /// unchanged and a provider's prompt cache still holds for that prefix. A new tool whose wire
    /// name clashes with a tool of another owner is left out, since the source was accepted
    /// whole at registration and one clash must not take its other tools away.
    pub(crate) fn refresh_sources(&mut self) {
        let moved: Vec<String> = self
            .sources
            .iter()
            .filter(|(_, state)| state.source.generation() != state.generation)
            .map(|(name, _)| name.clone())
            .collect();
        for name in moved {
            self.refresh_source(&name);
        }
    }

    fn refresh_source(&mut self, name: &str) {
        let Some(state) = self.sources.get_mut(name) else {
            return;
        };
        self.manifest.take();
        // Read the generation first: a change during `tools()` then shows at the next refresh.
        state.generation = state.source.generation();
        let source = state.source.clone();
        let at = self
            .order
            .iter()
            .position(|w| self.entries.get(w).and_then(|e| e.source.as_deref()) == Some(name))
            .unwrap_or(self.order.len());
        self.entries.retain(|_, e| e.source.as_deref() != Some(name));
        let before: Vec<String> = self.order[..at]
            .iter()
            .filter(|w| self.entries.contains_key(*w))
            .cloned()
            .collect();
        let after: Vec<String> = self.order[at..]
            .iter()
            .filter(|w| self.entries.contains_key(*w))
            .cloned()
            .collect();
        let mut fresh = Vec::new();
        for decl in source.tools() {
            let (wire, wire_decl, original) = wire_decl(name, decl);
            if self.entries.contains_key(&wire) {
                continue;
            }
            fresh.push(wire.clone());
            self.entries.insert(
                wire,
                Entry {
                    decl: wire_decl,
                    target: Target::Source(source.clone(), original),
                    source: Some(name.to_owned()),
                },
            );
        }
        self.order = before.into_iter().chain(fresh).chain(after).collect();
    }

    fn insert(&mut self, decl: ToolDecl, target: Target, source: Option<String>) -> Result<()> {
        if self.entries.contains_key(&decl.name) {
            return Err(Error::InvalidTool {
                name: decl.name,
                reason: "a tool with this name is already registered".into(),
            });
        }
        self.manifest.take();
        self.order.push(decl.name.clone());
        self.entries.insert(decl.name.clone(), Entry { decl, target, source });
        Ok(())
    }

    /// Removes the tool with offered name `name`, or every tool of the source named `name`. Returns
    /// whether anything was removed.
    pub(crate) fn unregister(&mut self, name: &str) -> bool {
        self.manifest.take();
        let before = self.entries.len();
        let had_source = self.sources.remove(name).is_some();
        self.entries
            .retain(|wire, e| wire != name && e.source.as_deref() != Some(name));
        self.order.retain(|w| self.entries.contains_key(w));
        self.entries.len() != before || had_source
    }

    /// What `wire` calls, and the name to report for it.
    pub(crate) fn resolve(&self, wire: &str) -> Option<(Target, String)> {
        let entry = self.entries.get(wire)?;
        let display = match &entry.target {
            Target::Tool(_) => wire.to_owned(),
            Target::Source(_, original) => format!("{}/{original}", entry.source.as_deref().unwrap_or("")),
        };
        Some((entry.target.clone(), display))
    }

    /// The declarations offered to the model, under offered names, in registration order.
    pub(crate) fn decls(&self) -> Arc<[ToolDecl]> {
        self.manifest
            .get_or_init(|| {
                self.order
                    .iter()
                    .filter_map(|w| self.entries.get(w).map(|e| e.decl.clone()))
                    .collect()
            })
            .clone()
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
        assert!(is_tool_name(&a) && is_tool_name(&b));
        assert_ne!(a, b);
        let escaped = shorten(&encode_source_name("s", &".".repeat(40)));
        assert!(is_tool_name(&escaped), "{escaped}");
    }

    #[test]
    fn wire_name_validation() {
        assert!(is_tool_name("read_file-2"));
        assert!(!is_tool_name(""));
        assert!(!is_tool_name("read file"));
        assert!(!is_tool_name(&"a".repeat(65)));
    }
}
