//! Content addresses of tool declarations.
//!
//! A tool's address is the SHA-256 of a canonical encoding of its name, description and input
//! schema, so the same tool offered on a thousand turns is stored once, and two declarations
//! share an address exactly when they say the same thing. The encoding is the compact JSON text
//! of the array `[name, description, schema]` with every object's keys sorted by their UTF-8
//! bytes and no whitespace: key order and formatting never change an address, any change to the
//! text of the name, the description or the schema does.

use std::fmt::Write as _;

use panto_core::ToolDecl;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The content address of a tool declaration: 32 bytes of SHA-256.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolHash(pub [u8; 32]);

impl ToolHash {
    /// The address of `tool`.
    pub fn of(tool: &ToolDecl) -> Self {
        let encoded = canonical_encoding(tool);
        let digest = Sha256::digest(encoded.as_bytes());
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(&digest);
        ToolHash(bytes)
    }

    /// Lowercase hex, as `encode(hash, 'hex')` shows it in SQL.
    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(64);
        for b in self.0 {
            let _ = write!(s, "{b:02x}");
        }
        s
    }
}

impl std::fmt::Display for ToolHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// The canonical encoding of a tool: see the module documentation.
pub fn canonical_encoding(tool: &ToolDecl) -> String {
    let mut out = String::new();
    out.push('[');
    write_canonical(&mut out, &Value::String(tool.name.clone()));
    out.push(',');
    write_canonical(&mut out, &Value::String(tool.description.clone()));
    out.push(',');
    write_canonical(&mut out, &tool.input_schema);
    out.push(']');
    out
}

/// The schema as canonical JSON text: what the `tools.schema` column is given.
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(&mut out, value);
    out
}

fn write_canonical(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => {
            // Sorted here rather than relying on serde_json's map type, which keeps insertion
            // order when any crate in the build enables its `preserve_order` feature.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(out, value);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        // Scalars: serde_json's compact form (strings escaped as JSON requires).
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str, schema: Value) -> ToolDecl {
        ToolDecl {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: schema,
        }
    }

    #[test]
    fn key_order_and_whitespace_do_not_change_the_address() {
        let a: Value =
            serde_json::from_str(r#"{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}"#)
                .unwrap();
        let b: Value = serde_json::from_str(
            r#"{ "required": ["path"], "properties": { "path": { "type": "string" } }, "type": "object" }"#,
        )
        .unwrap();
        assert_eq!(
            ToolHash::of(&tool("read", "Read.", a)),
            ToolHash::of(&tool("read", "Read.", b))
        );
    }

    #[test]
    fn any_change_of_name_description_or_schema_changes_the_address() {
        let base = tool("read", "Read a file.", json!({"type": "object"}));
        let all = [
            ToolHash::of(&base),
            ToolHash::of(&tool("read2", "Read a file.", json!({"type": "object"}))),
            ToolHash::of(&tool("read", "Read a file!", json!({"type": "object"}))),
            ToolHash::of(&tool("read", "Read a file.", json!({"type": "string"}))),
            // The fields cannot bleed into each other.
            ToolHash::of(&tool("rea", "dRead a file.", json!({"type": "object"}))),
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn the_encoding_is_the_documented_one() {
        let t = tool(
            "bash",
            "Run \"it\".",
            json!({"b": [1, 2.5, null], "a": {"z": true, "y": "é"}}),
        );
        assert_eq!(
            canonical_encoding(&t),
            r#"["bash","Run \"it\".",{"a":{"y":"é","z":true},"b":[1,2.5,null]}]"#
        );
        // A fixed vector, so that another implementation can check itself against this one.
        // (`printf '["t","d",{}]' | sha256sum`)
        assert_eq!(
            ToolHash::of(&tool("t", "d", json!({}))).to_hex(),
            "e98fbeb34e152800f8250687ee64e48e6dfdce66390fc7349182327bf37cb6a3"
        );
    }
}
