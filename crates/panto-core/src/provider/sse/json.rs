//! Helpers for the JSON that SSE events carry, shared by both decoders.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, Visitor};

use crate::error::{Error, Result};

/// A JSON string that borrows from the event's data when it has no escapes, and owns a copy
/// when it has.
///
/// `Cow<str>` with `#[serde(borrow)]` only borrows when it is a field's whole type; inside an
/// `Option` serde always allocates. Most deltas carry no escapes, so borrowing them is the
/// difference between one allocation per event and none.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Str<'a>(pub Cow<'a, str>);

impl Str<'_> {
    /// The string.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The string of an optional field, empty when absent or null.
pub(crate) fn or_empty<'s>(s: &'s Option<Str<'_>>) -> &'s str {
    s.as_ref().map_or("", Str::as_str)
}

/// Parses an event's data as `T`, naming the event and its offset on failure.
pub(crate) fn parse<'a, T: Deserialize<'a>>(what: &str, data: &'a str, offset: u64) -> Result<T> {
    serde_json::from_str(data).map_err(|e| Error::Protocol {
        offset,
        message: format!("invalid {what} payload: {e}"),
    })
}
