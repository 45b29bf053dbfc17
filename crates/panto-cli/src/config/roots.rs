//! `[tools] read_roots`: the directories the file tools are confined to.

use std::path::Path;

use toml::Spanned;

use super::Env;
use crate::tools::Roots;

/// Resolves `read_roots` from the file: absent means unrestricted; each entry is expanded (`~/`,
/// relative to the config file's directory) and resolved to its real path, so a root reached
/// through a symlink still contains what it contains. `at` turns a span and a message into the
/// located error.
pub fn resolve<E>(
    entry: Option<&Spanned<Vec<Spanned<String>>>>,
    env: &Env,
    base_dir: &Path,
    at: impl Fn(std::ops::Range<usize>, String) -> E,
) -> Result<Roots, E> {
    let Some(list) = entry else {
        return Ok(Roots::unrestricted());
    };
    if list.get_ref().is_empty() {
        return Err(at(
            list.span(),
            "tools.read_roots is empty, so no file could be used; remove it to leave the file tools \
             unrestricted, or list the directories they may use"
                .into(),
        ));
    }
    let mut roots = Vec::new();
    for raw in list.get_ref() {
        let path = env
            .expand(raw.get_ref(), base_dir)
            .map_err(|e| at(raw.span(), format!("tools.read_roots {e}")))?;
        let real = path
            .canonicalize()
            .map_err(|e| at(raw.span(), format!("tools.read_roots: {}: {e}", path.display())))?;
        if !real.is_dir() {
            return Err(at(
                raw.span(),
                format!("tools.read_roots: {} is not a directory", real.display()),
            ));
        }
        roots.push(real);
    }
    Ok(Roots::new(roots))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize)]
    struct Table {
        read_roots: Option<Spanned<Vec<Spanned<String>>>>,
    }

    fn roots(toml_text: &str, env: &Env, base: &Path) -> Result<Roots, String> {
        let table: Table = toml::from_str(toml_text).unwrap();
        resolve(table.read_roots.as_ref(), env, base, |span, message| {
            format!("at {}: {message}", span.start)
        })
    }

    #[test]
    fn absent_is_unrestricted_and_entries_resolve_to_real_directories() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("home/notes")).unwrap();
        std::fs::create_dir_all(base.join("cfg/project")).unwrap();
        std::os::unix::fs::symlink(base.join("cfg/project"), base.join("via-link")).unwrap();
        let env = Env::from_pairs(&[("HOME", base.join("home").to_str().unwrap())]);
        assert_eq!(roots("", &env, &base).unwrap(), Roots::unrestricted());
        let text = format!(
            "read_roots = [\"~/notes\", \"project\", {:?}]",
            base.join("via-link").display().to_string()
        );
        let got = roots(&text, &env, &base.join("cfg")).unwrap();
        assert_eq!(
            got.dirs().unwrap(),
            [
                base.join("home/notes"),
                base.join("cfg/project"),
                base.join("cfg/project")
            ]
        );
    }

    #[test]
    fn empty_missing_and_non_directory_roots_are_located_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "").unwrap();
        let env = Env::from_pairs(&[]);
        let e = roots("read_roots = []", &env, dir.path()).unwrap_err();
        assert!(e.starts_with("at 13: tools.read_roots is empty"), "{e}");
        let e = roots("read_roots = [\"missing\"]", &env, dir.path()).unwrap_err();
        assert!(
            e.starts_with("at 14: tools.read_roots: ") && e.contains("missing"),
            "{e}"
        );
        let e = roots("read_roots = [\"file\"]", &env, dir.path()).unwrap_err();
        assert!(e.contains("file is not a directory"), "{e}");
    }
}
