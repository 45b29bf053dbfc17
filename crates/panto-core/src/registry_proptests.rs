//! Property tests of tool-name encoding: any source and tool name, however odd (empty, `_`
//! runs, `__`, control characters, any Unicode), encodes to a name providers accept, decodes
//! back exactly, and registers through a tool source under a name that resolves to it.

use std::sync::Arc;

use async_trait::async_trait;
use proptest::prelude::*;

use super::{decode_source_name, encode_source_name, is_tool_name, shorten, ToolRegistry, MAX_TOOL_NAME_LEN};
use crate::tool::{ToolCall, ToolCallResult, ToolDecl, ToolError, ToolSource};

/// A name: often plain, often full of the characters the encoding must escape.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z0-9_-]{0,12}",
        3 => "[_a-zA-Z.:/ -]{0,20}",
        2 => any::<String>(),
        1 => "_{1,6}",
        1 => "[a-z]{20,80}",
    ]
}

/// The name the registry would offer for `(source, tool)`.
fn offered(source: &str, tool: &str) -> String {
    let wire = encode_source_name(source, tool);
    if wire.len() > MAX_TOOL_NAME_LEN {
        shorten(&wire)
    } else {
        wire
    }
}

struct Source {
    name: String,
    tools: Vec<String>,
}

#[async_trait]
impl ToolSource for Source {
    fn name(&self) -> &str {
        &self.name
    }
    fn tools(&self) -> Vec<ToolDecl> {
        self.tools
            .iter()
            .map(|t| ToolDecl {
                name: t.clone(),
                description: String::new(),
                input_schema: serde_json::json!({"type": "object"}),
            })
            .collect()
    }
    async fn call(&self, _call: ToolCall) -> Result<ToolCallResult, ToolError> {
        Ok(ToolCallResult::text("unused"))
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn encoding_round_trips_and_always_yields_a_wire_name(source in name(), tool in name()) {
        let wire = encode_source_name(&source, &tool);
        prop_assert!(
            wire.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{:?}", wire
        );
        prop_assert_eq!(decode_source_name(&wire), Some((source.clone(), tool.clone())));
        let name = offered(&source, &tool);
        prop_assert!(is_tool_name(&name), "{:?} -> {:?}", (&source, &tool), name);
        if wire.len() > MAX_TOOL_NAME_LEN {
            // A shortened name keeps a prefix of the encoding, never cut inside an escape.
            let (prefix, hash) = name.rsplit_once('-').unwrap_or_default();
            prop_assert!(wire.starts_with(prefix), "{:?} is not a prefix of {:?}", prefix, wire);
            prop_assert_eq!(hash.len(), 8);
            prop_assert!(!prefix.ends_with('_') || prefix.ends_with("__"), "{:?}", prefix);
        } else {
            prop_assert_eq!(name, wire);
        }
    }

    #[test]
    fn different_names_encode_differently(a in (name(), name()), b in (name(), name())) {
        prop_assume!(a != b);
        prop_assert_ne!(encode_source_name(&a.0, &a.1), encode_source_name(&b.0, &b.1));
    }

    #[test]
    fn a_source_registers_under_names_that_resolve_to_its_tools(
        source in name().prop_filter("sources need a name", |s| !s.is_empty()),
        tools in prop::collection::btree_set(name(), 1..6),
    ) {
        let tools: Vec<String> = tools.into_iter().collect();
        let mut registry = ToolRegistry::default();
        let registered = registry.register_source(Arc::new(Source { name: source.clone(), tools: tools.clone() }));
        // Distinct long names can only clash if their shortened forms collide; that is reported,
        // never silently merged.
        let expected: Vec<String> = tools.iter().map(|t| offered(&source, t)).collect();
        let mut unique = expected.clone();
        unique.sort();
        unique.dedup();
        if unique.len() < expected.len() {
            prop_assert!(registered.is_err());
            return Ok(());
        }
        prop_assert!(registered.is_ok(), "{:?}", registered);
        let decls = registry.decls();
        prop_assert_eq!(decls.iter().map(|d| d.name.clone()).collect::<Vec<_>>(), expected);
        for (decl, tool) in decls.iter().zip(&tools) {
            prop_assert!(is_tool_name(&decl.name));
            let (_, display) = registry.resolve(&decl.name).expect("a registered name resolves");
            prop_assert_eq!(display, format!("{source}/{tool}"));
        }
        prop_assert!(registry.unregister(&source));
        prop_assert!(registry.decls().is_empty());
    }
}
