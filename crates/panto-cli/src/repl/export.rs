//! `/export [md|html|json] [FILE]`: the session, as `panto sessions export` writes it, to a file.

use std::path::PathBuf;

use super::Repl;
use crate::sessions::{ExportFormat, ExportOptions};

/// The format and file `/export`'s arguments name: a format first (default Markdown), then the
/// file (default `panto-<8 characters of the id>.<ext>` in `cwd`; `~/` is the home directory,
/// a relative name is under `cwd`).
pub(super) fn export_args(
    args: &str,
    id: &str,
    cwd: &std::path::Path,
    home: Option<&std::path::Path>,
) -> Result<(ExportFormat, PathBuf), String> {
    let args = args.trim();
    let (first, rest) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
    let (format, file) = match ExportFormat::parse(first) {
        Some(format) => (format, rest.trim()),
        None if first.is_empty() => (ExportFormat::Md, ""),
        // A file name alone: its extension says the format when it names one.
        None => {
            let by_extension = std::path::Path::new(args)
                .extension()
                .and_then(|e| e.to_str())
                .and_then(ExportFormat::parse);
            (by_extension.unwrap_or(ExportFormat::Md), args)
        }
    };
    let short: String = id.chars().take(8).collect();
    let path = match file {
        "" => cwd.join(format!("panto-{short}.{}", format.extension())),
        f => match (f.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => home.join(rest),
            (Some(_), None) => return Err("~/ needs HOME to be set".to_owned()),
            _ => cwd.join(f),
        },
    };
    Ok((format, path))
}

impl Repl<'_> {
    pub(super) fn export(&mut self, args: &str) {
        if !self.saving {
            self.error("nothing to export: this session is not saved (--no-session)");
            return;
        }
        if let Err(e) = self.rt.block_on(self.agent.flush()) {
            self.error(&format!("cannot save the session before exporting it: {e}"));
            return;
        }
        let id = self.agent.session_id().to_owned();
        let (format, path) = match export_args(args, &id, &self.cwd, self.home.as_deref()) {
            Ok(found) => found,
            Err(e) => {
                self.error(&format!("/export: {e}"));
                return;
            }
        };
        let options = ExportOptions {
            format,
            output: Some(path.clone()),
            all_branches: false,
            keep_paths: false,
        };
        let text = match self.rt.block_on(crate::sessions::render(
            &self.store,
            &id,
            &options,
            &self.export_context,
        )) {
            Ok(text) => text,
            // A session with no answered prompt is not stored yet.
            Err(e) => {
                self.error(&format!("cannot export the session: {}", e.message));
                return;
            }
        };
        match crate::sessions::write_atomically(&path, text.as_bytes()) {
            Ok(()) => self.note(&format!("exported this session to {}", path.display())),
            Err(e) => self.error(&e.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_format_comes_first_and_the_file_defaults_to_the_id() {
        let cwd = Path::new("/w");
        let home = Some(Path::new("/h"));
        let id = "0190abcd-1111";
        let parse = |a: &str| export_args(a, id, cwd, home).unwrap();
        assert_eq!(parse(""), (ExportFormat::Md, "/w/panto-0190abcd.md".into()));
        assert_eq!(parse("html"), (ExportFormat::Html, "/w/panto-0190abcd.html".into()));
        assert_eq!(parse("json out.json"), (ExportFormat::Json, "/w/out.json".into()));
        assert_eq!(parse("markdown ~/t.md"), (ExportFormat::Md, "/h/t.md".into()));
        assert_eq!(parse("notes/x.html"), (ExportFormat::Html, "/w/notes/x.html".into()));
        assert_eq!(parse("/tmp/x"), (ExportFormat::Md, "/tmp/x".into()));
    }
}
