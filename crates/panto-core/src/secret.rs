//! Keeping keys out of messages: whether a string a user wrote where a name belongs looks like a
//! key instead, and how a message may show it.
//!
//! Messages go to terminals, CI logs, embedders' error handlers and bug reports, so a key must
//! never be part of one. Nothing here proves a string is a key; the rules err on the side of
//! hiding. The CLI's config errors and libpanto's config errors both use these.

use std::borrow::Cow;

/// Whether `s` looks like a credential rather than a name: long and random-looking (letters of
/// both cases and digits, or very long with letters and digits), or with a known key prefix.
///
/// ```
/// use panto_core::secret::looks_like_secret;
/// assert!(looks_like_secret("sk-ant-api03-AbCdEf0123456789"));
/// assert!(!looks_like_secret("ANTHROPIC_API_KEY"));
/// ```
pub fn looks_like_secret(s: &str) -> bool {
    let has = |f: fn(&char) -> bool| s.chars().any(|c| f(&c));
    let digits = has(char::is_ascii_digit);
    let lower = has(char::is_ascii_lowercase);
    let upper = has(char::is_ascii_uppercase);
    let len = s.chars().count();
    s.starts_with("sk-") || (len >= 20 && digits && lower && upper) || (len >= 32 && digits && (lower || upper))
}

/// Whether `s` can be the name of an environment variable as a shell sets one (a letter or `_`,
/// then letters, digits and `_`).
pub fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A string written where an environment variable's name belongs (`api_key_env`), as a message
/// may show it: itself, unless it looks like a key or is no variable name; then only its first
/// four characters and why the rest is hidden.
///
/// ```
/// use panto_core::secret::shown_var;
/// assert_eq!(shown_var("OPENAI_API_KEY"), "OPENAI_API_KEY");
/// assert!(!shown_var("sk-ant-api03-AbCdEf0123456789").contains("0123"));
/// ```
pub fn shown_var(name: &str) -> Cow<'_, str> {
    if looks_like_secret(name) || !is_var_name(name) {
        let head: String = name.chars().take(4).collect();
        Cow::Owned(format!("{head}… (hidden: it looks like a key, not a variable name)"))
    } else {
        Cow::Borrowed(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_shown_and_keys_are_not() {
        assert_eq!(shown_var("OPENAI_API_KEY"), "OPENAI_API_KEY");
        assert_eq!(shown_var("my_key"), "my_key");
        let shown = shown_var("sk-ant-api03-AbCdEf0123456789");
        assert!(shown.starts_with("sk-a…") && !shown.contains("0123"), "{shown}");
        assert!(!shown_var("gsk_Xq81nVmPa0Lr7TzY2bWc").contains("Xq81"));
        assert!(!shown_var("3f9a1c0e8b7d6a5f4e3d2c1b0a9f8e7d").contains("3f9a1c"));
    }
}
