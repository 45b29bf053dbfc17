//! Timestamps as session lines hold them: RFC 3339 in UTC, byte for byte what chrono's
//! `Serialize` writes (`2026-12-03T19:55:54.123456Z`: the fraction's digits 0, 3, 6 or 9, the
//! fewest that hold it, and `Z`), written without `core::fmt`.
//!
//! Why: every entry line holds two or three timestamps, and chrono formats one through
//! `core::fmt` a digit at a time, about 1,700 instructions each: a tenth of the cost of
//! appending a short message. Here the digits are put in a stack buffer directly. Years outside
//! 0 to 9999 and leap seconds, which no clock panto reads gives, are left to chrono.

use std::fmt;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};
use serde::de::{self, Deserializer};
use serde::{Serialize, Serializer};

/// The longest text: `YYYY-MM-DDTHH:MM:SS.fffffffffZ`.
const MAX_LEN: usize = 30;

/// A timestamp's text, built in place.
struct Text {
    bytes: [u8; MAX_LEN],
    len: usize,
}

impl Text {
    fn push(&mut self, byte: u8) {
        self.bytes[self.len] = byte;
        self.len += 1;
    }

    /// `value` (below 100) as two digits.
    fn two(&mut self, value: u32) {
        self.push(b'0' + (value / 10) as u8);
        self.push(b'0' + (value % 10) as u8);
    }

    /// `value` (below 10^`width`) as `width` digits, zero-padded.
    fn fraction(&mut self, value: u32, width: usize) {
        const PLACES: [u32; 9] = [100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1_000, 100, 10, 1];
        for place in &PLACES[PLACES.len() - width..] {
            self.push(b'0' + (value / place % 10) as u8);
        }
    }
}

/// `at` as chrono writes it, or `None` for a year outside 0 to 9999 or a leap second.
fn format(at: &DateTime<Utc>) -> Option<Text> {
    let year = u32::try_from(at.year()).ok().filter(|&year| year <= 9999)?;
    let nano = at.nanosecond();
    if nano >= 1_000_000_000 {
        return None;
    }
    let mut text = Text {
        bytes: [0; MAX_LEN],
        len: 0,
    };
    let date = at.date_naive();
    let seconds = at.time().num_seconds_from_midnight();
    text.two(year / 100);
    text.two(year % 100);
    text.push(b'-');
    text.two(date.month());
    text.push(b'-');
    text.two(date.day());
    text.push(b'T');
    text.two(seconds / 3600);
    text.push(b':');
    text.two(seconds / 60 % 60);
    text.push(b':');
    text.two(seconds % 60);
    if nano != 0 {
        text.push(b'.');
        if nano.is_multiple_of(1_000_000) {
            text.fraction(nano / 1_000_000, 3);
        } else if nano.is_multiple_of(1_000) {
            text.fraction(nano / 1_000, 6);
        } else {
            text.fraction(nano, 9);
        }
    }
    text.push(b'Z');
    Some(text)
}

/// A timestamp that serialises as chrono's does, faster.
struct Rfc3339<'a>(&'a DateTime<Utc>);

impl Serialize for Rfc3339<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Only ASCII digits and separators are written, so the text is always UTF-8.
        match format(self.0)
            .as_ref()
            .and_then(|text| std::str::from_utf8(&text.bytes[..text.len]).ok())
        {
            Some(text) => serializer.serialize_str(text),
            None => self.0.serialize(serializer),
        }
    }
}

/// For `#[serde(serialize_with)]` on a `DateTime<Utc>` field.
pub(crate) fn write<S: Serializer>(at: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    Rfc3339(at).serialize(serializer)
}

/// For `#[serde(serialize_with)]` on an `Option<DateTime<Utc>>` field.
pub(crate) fn write_option<S: Serializer>(at: &Option<DateTime<Utc>>, serializer: S) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => serializer.serialize_some(&Rfc3339(at)),
        None => serializer.serialize_none(),
    }
}

/// `text` as a timestamp in the form this store writes (`YYYY-MM-DDTHH:MM:SS`, an optional
/// fraction of 1 to 9 digits, `Z`), read without chrono's general RFC 3339 parser (about 2,500
/// instructions a timestamp, which a listing pays twice a session). `None` for any other form,
/// a leap second or an invalid date included: the caller leaves those to chrono.
fn parse_written(text: &[u8]) -> Option<DateTime<Utc>> {
    let digits = |bytes: &[u8]| -> Option<u32> {
        bytes
            .iter()
            .try_fold(0u32, |n, &b| b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0')))
    };
    let (body, b'Z') = text.split_last().map(|(last, body)| (body, *last))? else {
        return None;
    };
    if body.len() < 19 || body[4] != b'-' || body[7] != b'-' || body[10] != b'T' || body[13] != b':' || body[16] != b':'
    {
        return None;
    }
    let nano = match &body[19..] {
        [] => 0,
        [b'.', fraction @ ..] if (1..=9).contains(&fraction.len()) => {
            digits(fraction)? * 10u32.pow(9 - fraction.len() as u32)
        }
        _ => return None,
    };
    let date = NaiveDate::from_ymd_opt(digits(&body[0..4])? as i32, digits(&body[5..7])?, digits(&body[8..10])?)?;
    let time = NaiveTime::from_hms_nano_opt(
        digits(&body[11..13])?,
        digits(&body[14..16])?,
        digits(&body[17..19])?,
        nano,
    )?;
    Some(NaiveDateTime::new(date, time).and_utc())
}

/// Reads a timestamp as chrono's `Deserialize` does, the form this store writes first.
struct Rfc3339Visitor;

impl de::Visitor<'_> for Rfc3339Visitor {
    type Value = DateTime<Utc>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        // chrono's words, so that an error reads the same either way.
        formatter.write_str("an RFC 3339 formatted date and time string")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<DateTime<Utc>, E> {
        match parse_written(value.as_bytes()) {
            Some(at) => Ok(at),
            None => value.parse().map_err(E::custom),
        }
    }
}

/// For `#[serde(deserialize_with)]` on a `DateTime<Utc>` field: the value chrono's
/// `Deserialize` gives (or its error), faster for the form this store writes.
pub(crate) fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<DateTime<Utc>, D::Error> {
    deserializer.deserialize_str(Rfc3339Visitor)
}

/// Reads `null` or a timestamp as serde's `Option` of chrono's `Deserialize` does.
struct OptionVisitor;

impl<'de> de::Visitor<'de> for OptionVisitor {
    type Value = Option<DateTime<Utc>>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        // serde's words for an `Option`.
        formatter.write_str("option")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        read(deserializer).map(Some)
    }
}

/// For `#[serde(deserialize_with)]` on an `Option<DateTime<Utc>>` field, as [`read`].
pub(crate) fn read_option<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    deserializer.deserialize_option(OptionVisitor)
}

/// A JSON string value (`"…"`, quotes included) read as [`read`] reads it.
pub(crate) fn read_json(value: &[u8]) -> serde_json::Result<DateTime<Utc>> {
    let mut deserializer = serde_json::Deserializer::from_slice(value);
    let at = read(&mut deserializer)?;
    deserializer.end()?;
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn ours(at: &DateTime<Utc>) -> String {
        let mut out = Vec::new();
        crate::json::to_writer(&mut out, &Rfc3339(at)).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn chronos(at: &DateTime<Utc>) -> String {
        serde_json::to_string(at).unwrap()
    }

    #[test]
    fn every_fraction_width_is_written_as_chrono_writes_it() {
        let base = Utc.with_ymd_and_hms(2026, 12, 3, 19, 55, 4).unwrap();
        for nanos in [
            0,
            1,
            7,
            1_000,
            120_000,
            123_456_000,
            5_000_000,
            100_000_000,
            999_999_999,
        ] {
            let at = base + chrono::Duration::nanoseconds(nanos);
            assert_eq!(ours(&at), chronos(&at), "{nanos} ns");
        }
        assert_eq!(ours(&base), "\"2026-12-03T19:55:04Z\"");
        let at = base + chrono::Duration::microseconds(123_456);
        assert_eq!(ours(&at), "\"2026-12-03T19:55:04.123456Z\"");
    }

    #[test]
    fn what_chrono_writes_differently_is_left_to_chrono() {
        let leap = chrono::NaiveDate::from_ymd_opt(2016, 12, 31)
            .unwrap()
            .and_hms_nano_opt(23, 59, 59, 1_500_000_000)
            .unwrap()
            .and_utc();
        let far = Utc.with_ymd_and_hms(12_345, 1, 2, 3, 4, 5).unwrap();
        let before = Utc.with_ymd_and_hms(-44, 3, 15, 12, 0, 0).unwrap();
        let first = Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).unwrap();
        for at in [leap, far, before, first] {
            assert_eq!(ours(&at), chronos(&at));
        }
    }

    #[test]
    fn an_optional_timestamp_is_null_or_the_timestamp() {
        #[derive(Serialize)]
        struct Holder {
            #[serde(serialize_with = "write_option")]
            at: Option<DateTime<Utc>>,
        }
        let at = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
        assert_eq!(serde_json::to_string(&Holder { at: None }).unwrap(), r#"{"at":null}"#);
        assert_eq!(
            serde_json::to_string(&Holder { at: Some(at) }).unwrap(),
            r#"{"at":"2026-01-02T03:04:05Z"}"#
        );
    }

    proptest! {
        #[test]
        fn any_timestamp_is_written_as_chrono_writes_it(
            seconds in -62_000_000_000i64..260_000_000_000,
            nanos in prop_oneof![Just(0u32), (0u32..1_000).prop_map(|n| n * 1_000_000), (0u32..1_000_000).prop_map(|n| n * 1_000), 0u32..1_000_000_000],
        ) {
            let at = DateTime::from_timestamp(seconds, nanos).unwrap();
            prop_assert_eq!(ours(&at), chronos(&at));
        }
    }

    #[test]
    fn a_timestamp_is_read_as_chrono_reads_it() {
        let texts = [
            "2026-12-03T19:55:54Z",
            "2026-12-03T19:55:54.1Z",
            "2026-12-03T19:55:54.123Z",
            "2026-12-03T19:55:54.123456Z",
            "2026-12-03T19:55:54.123456789Z",
            "0000-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999999Z",
            "2024-02-29T12:00:00Z",
            // Left to chrono, with chrono's value or error.
            "2023-02-29T12:00:00Z",
            "2026-12-03T19:55:60Z",
            "2026-12-03T19:55:54.1234567891Z",
            "2026-12-03T19:55:54+02:00",
            "2026-12-03 19:55:54Z",
            "2026-12-03t19:55:54z",
            "2026-12-03T19:55:54.Z",
            "2026-13-03T19:55:54Z",
            "2026-12-03T24:00:00Z",
            "+2026-12-03T19:55:54Z",
            "2026-12-03T19:55Z",
            "",
            "Z",
        ];
        for text in texts {
            let json = serde_json::to_vec(text).unwrap();
            let ours = read_json(&json).map_err(|e| e.to_string());
            let chronos = serde_json::from_slice::<DateTime<Utc>>(&json).map_err(|e| e.to_string());
            assert_eq!(ours, chronos, "{text}");
        }
        for json in ["12", "null", "[]"] {
            let ours = read_json(json.as_bytes()).map_err(|e| e.to_string());
            let chronos = serde_json::from_slice::<DateTime<Utc>>(json.as_bytes()).map_err(|e| e.to_string());
            assert_eq!(ours, chronos, "{json}");
        }
        // And as an `Option`, `null` included.
        let texts = texts.iter().map(|t| serde_json::to_string(t).unwrap());
        for json in texts.chain(["12", "null", "[]", "{}"].map(str::to_owned)) {
            let mut deserializer = serde_json::Deserializer::from_str(&json);
            let ours = read_option(&mut deserializer).map_err(|e| e.to_string());
            let chronos = serde_json::from_str::<Option<DateTime<Utc>>>(&json).map_err(|e| e.to_string());
            assert_eq!(ours, chronos, "{json}");
        }
    }

    proptest! {
        #[test]
        fn what_this_store_writes_is_read_back_without_chrono(secs in 0i64..253_402_300_799, nanos in 0u32..1_000_000_000) {
            let at = Utc.timestamp_opt(secs, nanos).unwrap();
            let written = ours(&at);
            prop_assert_eq!(parse_written(written.trim_matches('"').as_bytes()), Some(at));
            prop_assert_eq!(read_json(written.as_bytes()).unwrap(), at);
        }
    }
}
