//! Keeping keys out of messages: a key written where a variable name belongs, a config line that
//! holds a key, and a config file others can read.
//!
//! Messages go to a terminal, to CI logs and into bug reports, so a key must never be part of one.
//! Nothing here proves a string is a key; the rules err on the side of hiding. The rules for a
//! single string are panto-core's ([`panto_core::secret`]), shared with libpanto's config errors.

use std::borrow::Cow;
use std::path::Path;

pub use panto_core::secret::{is_var_name, looks_like_secret, shown_var};

/// Words in a config line's key that say its value may be a credential.
const SECRET_WORDS: [&str; 8] = [
    "key",
    "secret",
    "password",
    "passwd",
    "auth",
    "bearer",
    "cookie",
    "credential",
];

/// Whether a config file line may hold a credential: a secret-sounding key (`api_key`,
/// `api_key_env`, a header such as `authorization` or `x-api-key`), a `token` (but not the
/// `tokens` of `max_tokens`), a URL with user information, or a value that looks like a key.
fn may_hold_secret(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let word = SECRET_WORDS.iter().any(|w| lower.contains(w));
    let token = lower
        .match_indices("token")
        .any(|(i, _)| lower.as_bytes().get(i + "token".len()) != Some(&b's'));
    let url_credentials = lower.contains("://") && lower.contains('@');
    let key_like = line
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .any(looks_like_secret);
    word || token || url_credentials || key_like
}

/// A config line as an error message quotes it: whole, unless it may hold a credential; then only
/// its key, with the value left out (`api_key = …`).
pub fn quoted_line(line: &str) -> Cow<'_, str> {
    if !may_hold_secret(line) {
        return Cow::Borrowed(line);
    }
    Cow::Owned(match line.split_once('=') {
        Some((key, _)) => format!("{} = … (value hidden)", key.trim()),
        None => "… (line hidden: it may hold a key)".to_owned(),
    })
}

/// A warning when the config file at `path` holds a key and other users may read it.
pub fn readable_key_warning(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode();
    (mode & 0o044 != 0).then(|| {
        format!(
            "{} holds an api_key and other users can read it (mode {:o}); make it private with: chmod 600 {}",
            path.display(),
            mode & 0o777,
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_that_may_hold_keys_are_quoted_without_their_value() {
        assert_eq!(quoted_line(r#"api_key = "sk-1""#), "api_key = … (value hidden)");
        assert_eq!(
            quoted_line(r#"api_kye = "Zq81nVmPa0Lr7TzY2bWc93""#),
            "api_kye = … (value hidden)"
        );
        assert_eq!(
            quoted_line(r#"headers = { Authorization = "Bearer x" }"#),
            "headers = … (value hidden)"
        );
        assert_eq!(quoted_line(r#"url = "postgres://u:pw@h/db""#), "url = … (value hidden)");
        assert_eq!(quoted_line("max_tokens = 0"), "max_tokens = 0");
        assert_eq!(quoted_line("threshold = 1.5"), "threshold = 1.5");
        assert_eq!(
            quoted_line(r#"model = "claude-sonnet-4-5""#),
            r#"model = "claude-sonnet-4-5""#
        );
    }
}
