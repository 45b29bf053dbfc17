//! Small bridges between panto's values and PostgreSQL's: errors that say what the server said,
//! timestamps at PostgreSQL's precision, text PostgreSQL can hold, integers that fit `bigint`.

use std::fmt;

use chrono::{DateTime, Duration, Utc};
use panto_core::wire::ProviderIdentity;
use panto_core::{ApiStyle, Error, ReasoningEffort, Result};

/// A tokio-postgres error, displayed with what the server said.
///
/// tokio-postgres displays a server error as just "db error"; the server's message, detail and
/// hint are what an operator needs, so they are spelled out here.
#[derive(Debug)]
pub(crate) struct PgError {
    message: String,
    source: tokio_postgres::Error,
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PgError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl PgError {
    pub(crate) fn new(source: tokio_postgres::Error) -> Self {
        let message = match source.as_db_error() {
            Some(db) => {
                let mut m = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
                if let Some(detail) = db.detail() {
                    m.push_str(&format!(" (detail: {detail})"));
                }
                if let Some(hint) = db.hint() {
                    m.push_str(&format!(" (hint: {hint})"));
                }
                m
            }
            None => {
                // Walk the causes: "error connecting to server: Connection refused (os error 111)".
                let mut m = source.to_string();
                let mut cause = std::error::Error::source(&source);
                while let Some(c) = cause {
                    m.push_str(&format!(": {c}"));
                    cause = c.source();
                }
                m
            }
        };
        PgError { message, source }
    }
}

/// Wraps a PostgreSQL error with what the store was doing.
pub(crate) fn pg(context: impl Into<String>, e: tokio_postgres::Error) -> Error {
    Error::store(context, PgError::new(e))
}

/// A store error that is not the server's: bad input, or a value PostgreSQL cannot hold.
pub(crate) fn invalid(context: impl Into<String>, message: impl Into<String>) -> Error {
    Error::store(context, message.into())
}

/// `t` rounded *up* to a whole microsecond, PostgreSQL's `timestamptz` precision.
///
/// Rounding up (not down, as the server would) keeps a stored time at or after the moment it
/// stands for: `Session::append` stamps its info just after the store returns, and a prompt
/// stored a few hundred nanoseconds "earlier" than the previous batch's stamp would break the
/// order the contract checks. The sub-microsecond error is far below anything a listing shows.
pub(crate) fn ceil_micros(t: DateTime<Utc>) -> DateTime<Utc> {
    let rest = t.timestamp_subsec_nanos() % 1_000;
    if rest == 0 {
        t
    } else {
        t + Duration::nanoseconds(i64::from(1_000 - rest))
    }
}

/// The current time at PostgreSQL's precision, rounded up.
pub(crate) fn now() -> DateTime<Utc> {
    ceil_micros(Utc::now())
}

/// Checks that `value` (named `what` in the error) holds no U+0000, which PostgreSQL `text`
/// cannot store.
pub(crate) fn pg_text<'a>(context: &str, what: &str, value: &'a str) -> Result<&'a str> {
    if value.contains('\0') {
        Err(invalid(
            context,
            format!("{what} contains a NUL character (U+0000), which PostgreSQL text cannot store"),
        ))
    } else {
        Ok(value)
    }
}

/// The listing's copy of the last prompt: PostgreSQL `text` cannot hold U+0000, so any is shown
/// as U+FFFD. The message itself is stored exactly; only this preview differs.
pub(crate) fn preview_text(s: &str) -> String {
    s.replace('\0', "\u{FFFD}")
}

/// `n` as a `bigint`, or an error naming `what` when it does not fit.
pub(crate) fn bigint(context: &str, what: &str, n: u64) -> Result<i64> {
    i64::try_from(n).map_err(|_| invalid(context, format!("{what} {n} does not fit a PostgreSQL bigint")))
}

/// A `bigint` column read back as a count; a negative value is corrupt data at `location()`
/// (a function, so that reading a hundred thousand good rows formats no locations).
pub(crate) fn unsigned(location: &dyn Fn() -> String, what: &str, n: i64) -> Result<u64> {
    u64::try_from(n).map_err(|_| Error::CorruptSession {
        location: location(),
        message: format!("{what} is negative ({n})"),
    })
}

/// The four columns of a provider identity.
pub(crate) type WireColumns<'a> = (
    Option<&'static str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'static str>,
);

/// Splits a provider identity into its columns, checking its text can be stored.
pub(crate) fn wire_columns<'a>(context: &str, wire: Option<&'a ProviderIdentity>) -> Result<WireColumns<'a>> {
    Ok(match wire {
        None => (None, None, None, None),
        Some(w) => (
            Some(w.api_style.as_str()),
            Some(pg_text(context, "the provider identity's base_url", &w.base_url)?),
            Some(pg_text(context, "the provider identity's model", &w.model)?),
            Some(w.reasoning.as_str()),
        ),
    })
}

/// Rebuilds a provider identity from its columns; `location()` names the row for errors.
pub(crate) fn wire_from_columns(
    location: &dyn Fn() -> String,
    api_style: Option<String>,
    base_url: Option<String>,
    model: Option<String>,
    reasoning: Option<String>,
) -> Result<Option<ProviderIdentity>> {
    match (api_style, base_url, model, reasoning) {
        (None, None, None, None) => Ok(None),
        (Some(api_style), Some(base_url), Some(model), Some(reasoning)) => Ok(Some(ProviderIdentity {
            api_style: parse_enum::<ApiStyle>(location, "wire_api_style", &api_style)?,
            base_url,
            model,
            reasoning: parse_enum::<ReasoningEffort>(location, "wire_reasoning", &reasoning)?,
        })),
        _ => Err(Error::CorruptSession {
            location: location(),
            message: "the provider identity columns are partly NULL".to_owned(),
        }),
    }
}

/// Parses one of panto's string enums (`anthropic-messages`, `medium`, …) by its serde name, so
/// that a variant added to panto-core is read without a change here.
fn parse_enum<T: serde::de::DeserializeOwned>(location: &dyn Fn() -> String, column: &str, value: &str) -> Result<T> {
    use serde::de::IntoDeserializer;
    let deserializer: serde::de::value::StrDeserializer<'_, serde::de::value::Error> = value.into_deserializer();
    T::deserialize(deserializer).map_err(|_| Error::CorruptSession {
        location: location(),
        message: format!("{column} {value:?} is not a value this panto knows"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn timestamps_round_up_to_the_microsecond() {
        let t = Utc.timestamp_opt(1_700_000_000, 123_456_001).single().unwrap();
        assert_eq!(ceil_micros(t).timestamp_subsec_nanos(), 123_457_000);
        let exact = Utc.timestamp_opt(1_700_000_000, 123_456_000).single().unwrap();
        assert_eq!(ceil_micros(exact), exact);
        let carry = Utc.timestamp_opt(1_700_000_000, 999_999_999).single().unwrap();
        assert_eq!(
            ceil_micros(carry),
            Utc.timestamp_opt(1_700_000_001, 0).single().unwrap()
        );
    }

    #[test]
    fn text_with_nul_is_refused_by_name() {
        let e = pg_text("appending to session x", "the provider identity's model", "a\0b").unwrap_err();
        assert_eq!(
            e.to_string(),
            "session store: appending to session x: the provider identity's model contains a NUL character \
             (U+0000), which PostgreSQL text cannot store"
        );
        assert_eq!(preview_text("a\0b"), "a\u{FFFD}b");
    }

    #[test]
    fn wire_columns_round_trip_and_partial_rows_are_corrupt() {
        let wire = ProviderIdentity {
            api_style: ApiStyle::OpenAiChat,
            base_url: "http://127.0.0.1:8080/v1".to_owned(),
            model: "m".to_owned(),
            reasoning: ReasoningEffort::High,
        };
        let (a, b, m, r) = wire_columns("ctx", Some(&wire)).unwrap();
        let back = wire_from_columns(
            &|| "row".to_owned(),
            a.map(str::to_owned),
            b.map(str::to_owned),
            m.map(str::to_owned),
            r.map(str::to_owned),
        )
        .unwrap();
        assert_eq!(back, Some(wire));
        let partial = wire_from_columns(
            &|| "sessions row x".to_owned(),
            Some("openai-chat".into()),
            None,
            None,
            None,
        );
        assert!(
            matches!(&partial, Err(Error::CorruptSession { location, .. }) if location == "sessions row x"),
            "{partial:?}"
        );
        let unknown = wire_from_columns(
            &|| "row".to_owned(),
            Some("grpc".into()),
            Some("u".into()),
            Some("m".into()),
            Some("off".into()),
        );
        assert!(unknown.unwrap_err().to_string().contains("wire_api_style \"grpc\""));
    }

    #[test]
    fn counts_that_do_not_fit_are_named() {
        let e = bigint("ctx", "tokens_before", u64::MAX).unwrap_err();
        assert!(
            e.to_string()
                .contains("tokens_before 18446744073709551615 does not fit"),
            "{e}"
        );
        assert!(unsigned(&|| "entries row".to_owned(), "tokens_after", -1).is_err());
    }
}
