//! Where panto keeps its files, by the XDG base-directory rules, computed from an [`Env`] snapshot
//! so tests can point everything at a temporary directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A snapshot of the environment variables panto reads.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: HashMap<String, String>,
}

impl Env {
    /// The process environment (variables that are not valid UTF-8 are skipped).
    pub fn from_process() -> Self {
        Env {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    /// An environment holding exactly `pairs`.
    #[cfg(test)]
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Self {
        Env {
            vars: pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        }
    }

    /// The value of `name`; an empty value counts as unset, as most tools treat it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// `$HOME`, when set.
    pub fn home(&self) -> Option<PathBuf> {
        self.get("HOME").map(PathBuf::from)
    }

    /// An XDG base directory: `$VAR` when it is an absolute path (the spec says to ignore relative
    /// ones), else `$HOME/fallback`.
    fn xdg(&self, var: &str, fallback: &str) -> Option<PathBuf> {
        match self.get(var).map(PathBuf::from) {
            Some(dir) if dir.is_absolute() => Some(dir),
            _ => self.home().map(|h| h.join(fallback)),
        }
    }

    /// `$XDG_CONFIG_HOME/panto/config.toml`, else `~/.config/panto/config.toml`.
    pub fn default_config_path(&self) -> Option<PathBuf> {
        self.xdg("XDG_CONFIG_HOME", ".config")
            .map(|d| d.join("panto").join("config.toml"))
    }

    /// `$XDG_DATA_HOME/panto/sessions`, else `~/.local/share/panto/sessions`.
    pub fn default_session_dir(&self) -> Option<PathBuf> {
        self.xdg("XDG_DATA_HOME", ".local/share")
            .map(|d| d.join("panto").join("sessions"))
    }

    /// `$XDG_STATE_HOME/panto/history`, else `~/.local/state/panto/history`.
    pub fn history_path(&self) -> Option<PathBuf> {
        self.state_dir().map(|d| d.join("history"))
    }

    /// `$XDG_STATE_HOME/panto`, else `~/.local/state/panto`: what panto keeps between runs that
    /// is neither config nor data (history, the log file, MCP server logs).
    pub fn state_dir(&self) -> Option<PathBuf> {
        self.xdg("XDG_STATE_HOME", ".local/state").map(|d| d.join("panto"))
    }

    /// Expands a leading `~` or `~/` with `$HOME`, as a shell would, for paths that reach panto
    /// unexpanded (quoted on a command line, set in the environment, written in the config file).
    /// `~user` forms are an error rather than a directory literally named `~user`, and so is `~`
    /// without `$HOME`. The error says what is wrong; the caller says where the path came from.
    pub fn expand_home(&self, raw: &str) -> Result<PathBuf, String> {
        let Some(after) = raw.strip_prefix('~') else {
            return Ok(PathBuf::from(raw));
        };
        let rest = match after.strip_prefix('/') {
            Some(rest) => rest,
            None if after.is_empty() => "",
            None => {
                return Err(format!(
                    "{raw:?}: ~user paths are not supported; write the full path, or ~/ for your own home"
                ))
            }
        };
        match self.home() {
            Some(home) => Ok(home.join(rest)),
            None => Err(format!("{raw:?}: cannot expand ~ because HOME is not set")),
        }
    }

    /// [`Env::expand_home`] for a path given as an argument (one that is not UTF-8 starts with no
    /// `~` worth expanding and is kept as it is).
    pub fn expand_path(&self, path: &Path) -> Result<PathBuf, String> {
        match path.to_str() {
            Some(raw) => self.expand_home(raw),
            None => Ok(path.to_path_buf()),
        }
    }

    /// [`Env::expand_home`], then a relative path is made relative to `base`.
    pub fn expand(&self, raw: &str, base: &Path) -> Result<PathBuf, String> {
        let path = self.expand_home(raw)?;
        Ok(if path.is_absolute() { path } else { base.join(path) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_variables_win_over_home() {
        let env = Env::from_pairs(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x"), ("XDG_DATA_HOME", "/d")]);
        assert_eq!(env.default_config_path().unwrap(), Path::new("/x/panto/config.toml"));
        assert_eq!(env.default_session_dir().unwrap(), Path::new("/d/panto/sessions"));
        assert_eq!(env.history_path().unwrap(), Path::new("/h/.local/state/panto/history"));
    }

    #[test]
    fn relative_xdg_values_are_ignored() {
        let env = Env::from_pairs(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "rel")]);
        assert_eq!(
            env.default_config_path().unwrap(),
            Path::new("/h/.config/panto/config.toml")
        );
    }

    #[test]
    fn expand_handles_tilde_and_relative_paths() {
        let env = Env::from_pairs(&[("HOME", "/h")]);
        assert_eq!(env.expand("~/p.md", Path::new("/c")).unwrap(), Path::new("/h/p.md"));
        assert_eq!(env.expand("p.md", Path::new("/c")).unwrap(), Path::new("/c/p.md"));
        assert_eq!(env.expand("/a/p.md", Path::new("/c")).unwrap(), Path::new("/a/p.md"));
        assert_eq!(env.expand_home("~").unwrap(), Path::new("/h"));
        assert_eq!(env.expand_home("a/~/b").unwrap(), Path::new("a/~/b"));
    }

    #[test]
    fn tilde_user_and_tilde_without_home_are_errors() {
        let env = Env::from_pairs(&[("HOME", "/h")]);
        let e = env.expand_home("~alice/s").unwrap_err();
        assert!(e.contains("~alice/s") && e.contains("~user"), "{e}");
        let e = Env::from_pairs(&[]).expand_home("~/s").unwrap_err();
        assert!(e.contains("HOME is not set"), "{e}");
    }
}
