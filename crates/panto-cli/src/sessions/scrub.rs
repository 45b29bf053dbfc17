//! What an export leaves out: the values of the keys panto is configured with, wherever they
//! appear, and (unless `--keep-paths`) the user's home directory, written `~`.
//!
//! Applied to every string of the history before any format is written (message text, tool
//! inputs and results, the working directory, the metadata, base URLs), so no format can let
//! one through. Opaque provider data (image bytes, thinking signatures, encrypted reasoning) is
//! left as it is: rewriting it would break it, and no key or path is written there.

use serde_json::Value;

use super::history::History;

/// What is replaced by a key's value.
pub const REDACTED: &str = "[redacted]";

/// Keys shorter than this are not looked for: no provider issues one, and replacing every
/// occurrence of a short word would mangle the transcript.
const MIN_SECRET_LEN: usize = 8;

/// Fields whose strings are opaque bytes.
const OPAQUE: [&str; 3] = ["data", "signature", "encrypted_content"];

/// The rewrites of one export.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    secrets: Vec<String>,
    home: Option<String>,
}

impl Scrubber {
    /// Replaces each of `secrets` (at least 8 characters long) and, when `home` is given (an
    /// absolute path other than `/`), the home directory at the start of a path.
    pub fn new(secrets: impl IntoIterator<Item = String>, home: Option<String>) -> Scrubber {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|s| s.chars().count() >= MIN_SECRET_LEN)
            .collect();
        // The longest first, so a key that holds another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        let home = home
            .map(|h| h.trim_end_matches('/').to_owned())
            .filter(|h| h.starts_with('/') && h.len() > 1);
        Scrubber { secrets, home }
    }

    /// `text` with every key replaced and home paths rewritten.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        if let Some(home) = &self.home {
            out = rewrite_home(&out, home);
        }
        out
    }

    /// Every string of `history`, rewritten.
    pub fn history(&self, history: &mut History) {
        if self.secrets.is_empty() && self.home.is_none() {
            return;
        }
        history.cwd = history.cwd.as_deref().map(|c| self.text(c));
        history.metadata = history.metadata.as_deref().map(|m| self.text(m));
        for entry in &mut history.entries {
            if let Some(wire) = &mut entry.wire {
                wire.base_url = self.text(&wire.base_url);
            }
            let Ok(mut value) = serde_json::to_value(&entry.message) else {
                continue;
            };
            // Decoded again only when something was rewritten: an untouched message stays the
            // very value the store returned.
            if self.value(&mut value) {
                if let Ok(message) = serde_json::from_value(value) {
                    entry.message = message;
                }
            }
        }
    }

    /// Rewrites every string of `value`; whether anything changed.
    fn value(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => {
                let new = self.text(s);
                let changed = new != *s;
                if changed {
                    *s = new;
                }
                changed
            }
            Value::Array(items) => items.iter_mut().fold(false, |changed, v| self.value(v) | changed),
            Value::Object(map) => {
                let mut changed = false;
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    let Some(mut v) = map.remove(&key) else { continue };
                    if !(OPAQUE.contains(&key.as_str()) && v.is_string()) {
                        changed |= self.value(&mut v);
                    }
                    let new_key = self.text(&key);
                    changed |= new_key != key;
                    map.insert(new_key, v);
                }
                changed
            }
            _ => false,
        }
    }
}

/// Whether `c` can continue a file name (so `/home/ada` in `/home/adam` is no match).
fn continues_name(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '~' | '+' | '@')
}

/// `text` with `home` (no trailing `/`) written `~` where it starts a path: not preceded by a
/// name character or `/`, and followed by `/` or by no name character.
fn rewrite_home(text: &str, home: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(home) {
        let before = rest[..at].chars().last().or_else(|| out.chars().last());
        let after = rest[at + home.len()..].chars().next();
        let starts = before.is_none_or(|c| !(continues_name(c) || c == '/'));
        let ends = match after {
            None | Some('/') => true,
            Some('.') => rest[at + home.len() + 1..]
                .chars()
                .next()
                .is_none_or(|c| !continues_name(c) && c != '/'),
            Some(c) => !continues_name(c),
        };
        out.push_str(&rest[..at]);
        if starts && ends {
            out.push('~');
        } else {
            out.push_str(home);
        }
        rest = &rest[at + home.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_paths_become_tilde_only_where_a_path_starts() {
        let s = Scrubber::new(Vec::new(), Some("/home/ada/".into()));
        assert_eq!(s.text("cd /home/ada/src && ls"), "cd ~/src && ls");
        assert_eq!(s.text("/home/ada"), "~");
        assert_eq!(s.text("in /home/ada."), "in ~.");
        assert_eq!(s.text("\"/home/ada\""), "\"~\"");
        assert_eq!(
            s.text("/home/adam/x /srv/home/ada/y /home/ada.bak"),
            "/home/adam/x /srv/home/ada/y /home/ada.bak"
        );
        assert_eq!(s.text("a /home/ada/x b /home/ada/y"), "a ~/x b ~/y");
        // A home of `/` is no home to hide.
        assert_eq!(Scrubber::new(Vec::new(), Some("/".into())).text("/etc"), "/etc");
    }

    #[test]
    fn keys_are_replaced_and_short_ones_ignored() {
        let s = Scrubber::new(vec!["sk-ant-secret-123".into(), "ak".into()], None);
        assert_eq!(s.text("key sk-ant-secret-123, ak"), "key [redacted], ak");
    }
}
