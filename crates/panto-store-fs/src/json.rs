//! The JSON writer for session lines: serde's data model written as compact JSON, byte for byte
//! what `serde_json::to_writer` writes, with a faster string escaper.
//!
//! Why not serde_json itself: an append is mostly string bytes (tool output, thinking, answers),
//! and serde_json escapes a string one byte at a time, which made up half the cost of appending
//! a tool turn. Here a string is searched eight bytes at a time for the bytes JSON escapes, and
//! the runs between them are copied whole. Everything but strings and integers (floats, the
//! errors) is still done by serde_json, and a property test holds the output to serde_json's.

use serde::ser::{self, Serialize};

/// The error type: serde_json's, so a failure reads the same as before.
type Error = serde_json::Error;

/// Appends `value` as compact JSON to `out`: exactly the bytes `serde_json::to_writer` writes.
pub(crate) fn to_writer<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), Error> {
    value.serialize(&mut Json { out })
}

/// A compact JSON serializer over a byte buffer.
struct Json<'o> {
    out: &'o mut Vec<u8>,
}

/// Eight copies of byte `b`.
const fn splat(b: u8) -> u64 {
    (b as u64) * 0x0101_0101_0101_0101
}

/// A mask with the high bit set in every byte of `word` that JSON must escape: control
/// characters (below 0x20), `"` and `\`. Bytes of 0x80 and above (UTF-8 sequences) never match.
///
/// The usual "has a zero byte" trick: `(x - 0x01..) & !x & 0x80..` flags the bytes where `x` is
/// zero, and `(w - 0x20..) & !w & 0x80..` those below 0x20. A borrow can only flag a byte above a
/// byte that was already flagged, so the lowest flag is always exact, which is all the caller
/// uses.
fn escape_mask(word: u64) -> u64 {
    const LOW: u64 = splat(0x01);
    const HIGH: u64 = splat(0x80);
    let control = word.wrapping_sub(splat(0x20)) & !word;
    let quote = word ^ splat(b'"');
    let backslash = word ^ splat(b'\\');
    (control | (quote.wrapping_sub(LOW) & !quote) | (backslash.wrapping_sub(LOW) & !backslash)) & HIGH
}

fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// The index of the first byte of `bytes` that JSON must escape.
fn find_escape(bytes: &[u8]) -> Option<usize> {
    let mut chunks = bytes.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let mask = escape_mask(u64::from_le_bytes(word));
        if mask != 0 {
            // Little-endian: the lowest set bit is in the first matching byte.
            return Some(base + (mask.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| needs_escape(b))
        .map(|i| base + i)
}

/// Appends `s` as a JSON string, escaped as serde_json escapes it: the two-character forms for
/// `"`, `\`, backspace, form feed, newline, carriage return and tab, `\u00XX` (lowercase hex)
/// for the other control characters, everything else as it is.
fn write_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    write_escaped(out, s);
    out.push(b'"');
}

/// Appends `s` escaped, without the quotes.
fn write_escaped(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    while let Some(offset) = find_escape(&bytes[start..]) {
        let at = start + offset;
        out.extend_from_slice(&bytes[start..at]);
        let b = bytes[at];
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
        }
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

fn write_int(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

impl<'o> Json<'o> {
    /// Opens `{"variant":` and then the variant's array or object (`open`); the compound it
    /// returns writes `close`, which ends both.
    fn variant<'a>(&'a mut self, variant: &str, open: u8, close: &'static [u8]) -> Compound<'a, 'o> {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.push(b':');
        self.out.push(open);
        Compound::new(self, close)
    }
}

/// The name serde_json gives `RawValue` in serde's data model; such a value is written as it is.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

impl<'a, 'o> ser::Serializer for &'a mut Json<'o> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a, 'o>;
    type SerializeTuple = Compound<'a, 'o>;
    type SerializeTupleStruct = Compound<'a, 'o>;
    type SerializeTupleVariant = Compound<'a, 'o>;
    type SerializeMap = Compound<'a, 'o>;
    type SerializeStruct = Compound<'a, 'o>;
    type SerializeStructVariant = Compound<'a, 'o>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.out.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    // Floats are rare here (tool arguments); serde_json writes them, so they match it exactly,
    // non-finite ones as `null` included.
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        serde_json::to_writer(&mut *self.out, &v)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        serde_json::to_writer(&mut *self.out, &v)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        write_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_str(self.out, v);
        Ok(())
    }
    /// A value's `Display` text (uuids; timestamps only where `timestamp.rs` leaves them to
    /// chrono) written as a JSON string as it is formatted: serde's default makes a `String` of it
    /// first, two or three allocations a timestamp.
    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<(), Error> {
        struct Escaped<'v>(&'v mut Vec<u8>);
        impl std::fmt::Write for Escaped<'_> {
            fn write_str(&mut self, s: &str) -> std::fmt::Result {
                write_escaped(self.0, s);
                Ok(())
            }
            // chrono writes a timestamp a digit at a time.
            fn write_char(&mut self, c: char) -> std::fmt::Result {
                match u8::try_from(c) {
                    Ok(b) if b.is_ascii() && !needs_escape(b) => self.0.push(b),
                    _ => write_escaped(self.0, c.encode_utf8(&mut [0; 4])),
                }
                Ok(())
            }
        }
        self.out.push(b'"');
        std::fmt::write(&mut Escaped(self.out), format_args!("{value}"))
            .map_err(|_| ser::Error::custom("a Display implementation returned an error"))?;
        self.out.push(b'"');
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        // As serde_json: an array of numbers.
        self.out.push(b'[');
        for (i, b) in v.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            write_int(self.out, *b);
        }
        self.out.push(b']');
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _name: &'static str, _index: u32, variant: &'static str) -> Result<(), Error> {
        write_str(self.out, variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.push(b':');
        value.serialize(&mut *self)?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a, 'o>, Error> {
        self.out.push(b'[');
        Ok(Compound::new(self, b"]"))
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a, 'o>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a, 'o>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a, 'o>, Error> {
        Ok(self.variant(variant, b'[', b"]}"))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a, 'o>, Error> {
        self.out.push(b'{');
        Ok(Compound::new(self, b"}"))
    }
    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Compound<'a, 'o>, Error> {
        if name == RAW_VALUE_TOKEN {
            return Ok(Compound::raw(self));
        }
        self.out.push(b'{');
        Ok(Compound::new(self, b"}"))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a, 'o>, Error> {
        Ok(self.variant(variant, b'{', b"}}"))
    }
}

/// An array or object being written: a comma before every element but the first, and the
/// closing bytes at the end.
struct Compound<'a, 'o> {
    ser: &'a mut Json<'o>,
    first: bool,
    close: &'static [u8],
    /// A `RawValue`: its one field is JSON text, written as it is.
    raw: bool,
}

impl<'a, 'o> Compound<'a, 'o> {
    fn new(ser: &'a mut Json<'o>, close: &'static [u8]) -> Self {
        Compound {
            ser,
            first: true,
            close,
            raw: false,
        }
    }

    fn raw(ser: &'a mut Json<'o>) -> Self {
        Compound {
            ser,
            first: true,
            close: b"",
            raw: true,
        }
    }

    fn comma(&mut self) {
        if !self.first {
            self.ser.out.push(b',');
        }
        self.first = false;
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.comma();
        value.serialize(&mut *self.ser)
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        if self.raw {
            // `RawValue` serializes its JSON text as its only field; take the text back out of
            // the string it was written as.
            let text = serde_json::to_value(value)?;
            return match text {
                serde_json::Value::String(text) => {
                    self.ser.out.extend_from_slice(text.as_bytes());
                    Ok(())
                }
                _ => Err(ser::Error::custom("expected RawValue")),
            };
        }
        self.comma();
        write_str(self.ser.out, key);
        self.ser.out.push(b':');
        value.serialize(&mut *self.ser)
    }

    fn finish(self) -> Result<(), Error> {
        self.ser.out.extend_from_slice(self.close);
        Ok(())
    }
}

/// The compound traits whose items are values: each writes its items as array elements.
macro_rules! elements {
    ($($kind:ident :: $method:ident),*) => {$(
        impl ser::$kind for Compound<'_, '_> {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.element(value)
            }
            fn end(self) -> Result<(), Error> {
                self.finish()
            }
        }
    )*};
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.comma();
        // As serde_json: a key is a string, or a number or bool written as one; anything else
        // is an error.
        let start = self.ser.out.len();
        key.serialize(&mut *self.ser)?;
        match self.ser.out.get(start) {
            Some(b'"') => {}
            Some(b'-' | b'0'..=b'9' | b't' | b'f') => {
                self.ser.out.insert(start, b'"');
                self.ser.out.push(b'"');
            }
            _ => {
                self.ser.out.truncate(start);
                return Err(ser::Error::custom("key must be a string"));
            }
        }
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.ser.out.push(b':');
        value.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

/// The compound traits whose items are named: each writes its items as object fields.
macro_rules! fields {
    ($($kind:ident),*) => {$(
        impl ser::$kind for Compound<'_, '_> {
            type Ok = ();
            type Error = Error;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
                self.field(key, value)
            }
            fn end(self) -> Result<(), Error> {
                self.finish()
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn ours<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
        let mut out = Vec::new();
        to_writer(&mut out, value).unwrap();
        out
    }

    fn same_as_serde_json<T: Serialize + ?Sized>(value: &T) {
        assert_eq!(
            String::from_utf8(ours(value)).unwrap(),
            serde_json::to_string(value).unwrap()
        );
    }

    #[test]
    fn display_values_are_written_as_serde_json_writes_them() {
        /// A `Display` that writes its text in pieces, escapes across their edges.
        struct Pieces(&'static [&'static str]);
        impl std::fmt::Display for Pieces {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.iter().try_for_each(|piece| f.write_str(piece))
            }
        }
        impl Serialize for Pieces {
            fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }
        let at: chrono::DateTime<chrono::Utc> = "2026-12-03T06:18:44.123456789Z".parse().unwrap();
        same_as_serde_json(&at);
        same_as_serde_json(&json!({"at": at, "again": [at]}));
        same_as_serde_json(&Pieces(&["a \"quoted", "\\ ", "line\n", "", "\u{1}end"]));
        same_as_serde_json(&Pieces(&[]));
    }

    #[test]
    fn every_byte_that_json_escapes_is_escaped_as_serde_json_does() {
        for b in 0u8..=0x7f {
            let c = char::from(b);
            // At every position within and across an eight-byte word.
            for before in 0..17 {
                let s = format!("{}{c}{}", "a".repeat(before), "é".repeat(3));
                same_as_serde_json(&s);
            }
        }
        same_as_serde_json("");
        same_as_serde_json("\u{7f}\u{80}\u{ffff}\u{10ffff} \"\\\n\r\t\u{8}\u{c}\u{0}\u{1f}");
    }

    #[test]
    fn the_data_model_is_written_as_serde_json_writes_it() {
        #[derive(serde::Serialize)]
        enum E {
            Unit,
            Newtype(u8),
            Tuple(i32, String),
            Struct { a: Option<f64>, b: char },
        }
        #[derive(serde::Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged {
            Text { text: String },
            Map(std::collections::BTreeMap<String, Value>),
        }
        #[derive(serde::Serialize)]
        struct Unit;
        #[derive(serde::Serialize)]
        struct Newtype(Vec<u16>);
        same_as_serde_json(&(E::Unit, E::Newtype(7), E::Tuple(-3, "t".into())));
        same_as_serde_json(&E::Struct {
            a: Some(1.5e300),
            b: '"',
        });
        same_as_serde_json(&E::Struct {
            a: Some(f64::NAN),
            b: 'x',
        });
        same_as_serde_json(&(Unit, Newtype(vec![1, 2]), (), Option::<u8>::None, [0u8; 0]));
        same_as_serde_json(&(i128::MIN, u128::MAX, i64::MIN, u64::MAX, -0.0f64, 0.1f32, true, false));
        same_as_serde_json(&Tagged::Text { text: "a\nb".into() });
        let mut map = std::collections::BTreeMap::new();
        map.insert("k\"ey".to_owned(), json!({"n": [1, -2.5, null, "s"], "o": {}}));
        same_as_serde_json(&Tagged::Map(map));
        let bytes = serde_bytes_like(&[0, 255, 7]);
        same_as_serde_json(&bytes);
        // Keys that are not strings: numbers and bools are quoted, anything else is an error.
        let keys: std::collections::BTreeMap<i32, u8> = [(-1, 1), (20, 2)].into_iter().collect();
        same_as_serde_json(&keys);
        let keys: std::collections::BTreeMap<bool, u8> = [(true, 1)].into_iter().collect();
        same_as_serde_json(&keys);
        let bad: std::collections::BTreeMap<Option<u8>, u8> = [(None, 1)].into_iter().collect();
        assert!(to_writer(&mut Vec::new(), &bad).is_err());
        assert!(serde_json::to_vec(&bad).is_err());
        // A RawValue is written as it is.
        let raw = serde_json::value::RawValue::from_string(r#"{"a" : [1, 2]}"#.to_owned()).unwrap();
        same_as_serde_json(&(&raw, 1));
    }

    /// `serialize_bytes`, as a byte-buffer type would call it.
    fn serde_bytes_like(b: &[u8]) -> impl Serialize + '_ {
        struct Bytes<'a>(&'a [u8]);
        impl Serialize for Bytes<'_> {
            fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        Bytes(b)
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
            "[\\x00-\\x7f]{0,40}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::from),
                prop::collection::btree_map(any::<String>(), inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(s in any::<String>()) {
            prop_assert_eq!(String::from_utf8(ours(&s)).unwrap(), serde_json::to_string(&s).unwrap());
        }

        #[test]
        fn any_ascii_string_is_written_as_serde_json_writes_it(s in "[\\x00-\\x7f]{0,64}") {
            prop_assert_eq!(String::from_utf8(ours(&s)).unwrap(), serde_json::to_string(&s).unwrap());
        }

        #[test]
        fn any_json_value_is_written_as_serde_json_writes_it(v in any_json()) {
            prop_assert_eq!(String::from_utf8(ours(&v)).unwrap(), serde_json::to_string(&v).unwrap());
        }
    }
}
