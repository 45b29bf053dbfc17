//! Connection strings without their passwords, for every message, log line or listing that
//! shows where a store is: a database password is as secret as an API key.

use crate::tls::percent_decode;

/// `s`, a `postgres://` / `postgresql://` URL or a libpq `key=value` connection string, with
/// every password in it replaced by `***`.
///
/// Written to be safe on malformed input rather than exact: in a URL, everything between
/// `://` and the **last** `@` is taken as the user and password, so a password holding `@`,
/// `:` or `/` (which a URL should percent-encode, and which [`PostgresStore::connect`] refuses
/// unencoded) is removed whole; at worst more than the password is hidden. A `password=`
/// parameter in the URL's query, or in a `key=value` string (quoted or not), is replaced too.
///
/// ```
/// use panto_store_postgres::redact_connection_string as redact;
///
/// assert_eq!(redact("postgres://panto:s3cret@db:5432/panto"), "postgres://panto:***@db:5432/panto");
/// assert_eq!(redact("postgres://panto:p@ss:w/rd@db/panto"), "postgres://panto:***@db/panto");
/// assert_eq!(redact("host=db user=panto password='a b'"), "host=db user=panto password=***");
/// ```
///
/// [`PostgresStore::connect`]: crate::PostgresStore::connect
pub fn redact_connection_string(s: &str) -> String {
    match url_rest(s) {
        Some((scheme, rest)) => redact_url(scheme, rest),
        None => redact_key_values(s),
    }
}

/// The scheme (with `://`) and the rest of a PostgreSQL URL; `None` for anything else.
pub(crate) fn url_rest(s: &str) -> Option<(&str, &str)> {
    ["postgres://", "postgresql://"]
        .into_iter()
        .find_map(|scheme| s.strip_prefix(scheme).map(|rest| (scheme, rest)))
}

fn redact_url(scheme: &str, rest: &str) -> String {
    let mut out = scheme.to_owned();
    let after = match rest.rfind('@') {
        Some(at) => {
            let credentials = &rest[..at];
            match credentials.split_once(':') {
                Some((user, _)) => {
                    out.push_str(user);
                    out.push_str(":***@");
                }
                None => {
                    out.push_str(credentials);
                    out.push('@');
                }
            }
            &rest[at + 1..]
        }
        None => rest,
    };
    match after.split_once('?') {
        Some((place, query)) => {
            out.push_str(place);
            out.push('?');
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if is_password_key(key) => format!("{key}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            out.push_str(&pairs.join("&"));
        }
        None => out.push_str(after),
    }
    out
}

/// Whether a URL query key names the password, percent-encoded or not (tokio-postgres decodes
/// keys).
fn is_password_key(key: &str) -> bool {
    percent_decode(key) == "password"
}

/// A libpq `key = value` string (as tokio-postgres parses it: values optionally in single
/// quotes, a backslash escaping the next character) with `password`'s value replaced. Anything
/// it cannot follow after a `password` keyword is hidden to the end.
fn redact_key_values(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        let trimmed = rest.trim_start();
        out.push_str(&rest[..rest.len() - trimmed.len()]);
        rest = trimmed;
        if rest.is_empty() {
            return out;
        }
        let keyword_len = rest.find(|c: char| c.is_whitespace() || c == '=').unwrap_or(rest.len());
        let keyword = &rest[..keyword_len];
        out.push_str(keyword);
        rest = &rest[keyword_len..];
        let before_equals = rest.trim_start();
        let Some(after_equals) = before_equals.strip_prefix('=') else {
            // Not `key = value`: the parser would stop here; show no more of a password.
            if keyword == "password" {
                out.push_str("=***");
                return out;
            }
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..rest.len() - before_equals.len()]);
        out.push('=');
        let value = after_equals.trim_start();
        out.push_str(&after_equals[..after_equals.len() - value.len()]);
        let value_len = value_len(value);
        if keyword == "password" {
            out.push_str("***");
        } else {
            out.push_str(&value[..value_len]);
        }
        rest = &value[value_len..];
    }
}

/// The length of the value at the start of `s`: a quoted value to its closing quote (all of
/// `s` when it has none), else up to the first whitespace; a backslash escapes the next
/// character in both.
fn value_len(s: &str) -> usize {
    let quoted = s.starts_with('\'');
    let mut chars = s.char_indices().skip(usize::from(quoted));
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '\'' if quoted => return i + 1,
            c if !quoted && c.is_whitespace() => return i,
            _ => {}
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A password no redacted text may show any two-character piece of.
    const SECRET_PIECES: [&str; 4] = ["Zq", "Xv", "Kp", "Wm"];

    fn assert_hidden(shown: &str) {
        for piece in SECRET_PIECES {
            assert!(!shown.contains(piece), "{piece:?} shows in {shown:?}");
        }
    }

    #[test]
    fn url_passwords_are_removed_whatever_they_hold() {
        for (url, shown) in [
            (
                "postgres://panto:ZqXv@db:5432/panto",
                "postgres://panto:***@db:5432/panto",
            ),
            ("postgresql://panto:Zq@Xv@db/panto", "postgresql://panto:***@db/panto"),
            ("postgres://panto:Zq:Xv/Kp@db/panto", "postgres://panto:***@db/panto"),
            (
                "postgres://panto:Zq@Xv:Kp/Wm@db/panto?sslmode=require",
                "postgres://panto:***@db/panto?sslmode=require",
            ),
            ("postgres://panto:Zq?Xv@db/panto", "postgres://panto:***@db/panto"),
            ("postgres://:ZqXv@db", "postgres://:***@db"),
            (
                "postgres://db/panto?user=u&password=ZqXv&application_name=a",
                "postgres://db/panto?user=u&password=***&application_name=a",
            ),
            (
                "postgres://u@db/panto?pass%77ord=ZqXv",
                "postgres://u@db/panto?pass%77ord=***",
            ),
        ] {
            assert_eq!(redact_connection_string(url), shown, "{url}");
            assert_hidden(&redact_connection_string(url));
        }
        // No password: nothing changes.
        for url in [
            "postgres://panto@db/panto",
            "postgres://db",
            "postgres://u@db/p?sslmode=disable",
        ] {
            assert_eq!(redact_connection_string(url), url);
        }
    }

    #[test]
    fn key_value_passwords_are_removed_quoted_or_not() {
        for (s, shown) in [
            ("host=db password=ZqXv user=u", "host=db password=*** user=u"),
            (
                "host=db password = 'Zq Xv\\' Kp' user=u",
                "host=db password = *** user=u",
            ),
            ("password=Zq\\ Xv dbname=p", "password=*** dbname=p"),
            ("host=db password='Zq Xv Kp Wm", "host=db password=***"),
            ("host=db password", "host=db password=***"),
            ("host=db user=u", "host=db user=u"),
        ] {
            assert_eq!(redact_connection_string(s), shown, "{s}");
            assert_hidden(&redact_connection_string(s));
        }
    }
}
