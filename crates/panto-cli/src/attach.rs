//! Images attached to a prompt: `--image FILE` in print mode; `/image FILE` and image paths
//! dragged into the terminal in the REPL.
//!
//! A terminal turns a file dropped onto it into its path, typed into the line: quoted
//! (`'/home/me/my shot.png'`), with escaped spaces (`/Users/me/my\ shot.png`) or plain. So a
//! prompt token that is an absolute (or `~/`) path to an existing file with an image extension is
//! attached as well as kept in the text. Relative paths are not: a prompt mentioning
//! `assets/logo.png` is more likely about the file than showing it, and `/image` attaches one.

use std::path::{Path, PathBuf};

use panto_tools::files::{self, OpenRefusal};

/// The largest image file attached (before panto resizes it, as it does tool images).
pub const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// File name extensions taken for images in dragged paths.
const EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "gif", "webp"];

/// An image read from a file, checked to be one the providers take.
#[derive(Debug, Clone)]
pub struct Attachment {
    /// Where it was read from, as given.
    pub path: PathBuf,
    /// The encoded image.
    pub bytes: Vec<u8>,
    /// Its format, from its first bytes: `PNG`, `JPEG`, `GIF` or `WebP`.
    pub format: &'static str,
}

impl Attachment {
    /// `NAME (FORMAT, N KB)`, to confirm what was attached.
    pub fn describe(&self) -> String {
        let name = self
            .path
            .file_name()
            .map_or_else(|| self.path.display().to_string(), |n| n.to_string_lossy().into_owned());
        format!("{name} ({}, {} KB)", self.format, self.bytes.len().div_ceil(1024))
    }
}

/// The image format of `bytes`, by its signature (one definition, shared with the `read` tool).
pub use panto_tools::files::image_format;

/// Reads the image at `path`. The error names the file and says what is wrong with it. Only a
/// regular file is read, and never more than [`MAX_IMAGE_BYTES`] of it: a FIFO would block the
/// read until a writer came, and a device (`/dev/zero`) never ends, whatever its size says.
pub fn read(path: &Path) -> Result<Attachment, String> {
    let shown = path.display();
    let (file, meta) = files::open_regular(path).map_err(|refusal| match refusal {
        OpenRefusal::NotRegular(file_type) => format!(
            "cannot attach {shown}: it is {}, not a regular file",
            files::kind(file_type)
        ),
        OpenRefusal::Io(e) => format!("cannot attach {shown}: {e}"),
    })?;
    let too_big = |size: u64| {
        format!(
            "cannot attach {shown}: it is {} MB; images up to {} MB are attached",
            size.div_ceil(1024 * 1024),
            MAX_IMAGE_BYTES / (1024 * 1024)
        )
    };
    if meta.len() > MAX_IMAGE_BYTES {
        return Err(too_big(meta.len()));
    }
    let bytes = files::read_bounded(file, meta.len(), MAX_IMAGE_BYTES)
        .map_err(|e| format!("cannot attach {shown}: {e}"))?
        .ok_or_else(|| {
            format!(
                "cannot attach {shown}: it holds more than the {} MB attached (its size says {} bytes)",
                MAX_IMAGE_BYTES / (1024 * 1024),
                meta.len()
            )
        })?;
    let format = image_format(&bytes)
        .ok_or_else(|| format!("cannot attach {shown}: it is not a PNG, JPEG, GIF or WebP image"))?;
    Ok(Attachment {
        path: path.to_owned(),
        bytes,
        format,
    })
}

/// Splits `text` into words as a shell would: whitespace separates, `'…'` and `"…"` quote, and a
/// backslash escapes the next character (outside single quotes). `None` when a quote is left
/// open, which an apostrophe in prose does.
pub fn shell_words(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => word.push(c),
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next()?);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// The image files that `text` names by an absolute or `~/` path, in order, each once: what a
/// file dropped onto the terminal types. Files that do not exist are not named.
pub fn dragged_paths(text: &str, home: Option<&Path>) -> Vec<PathBuf> {
    // Words as a shell reads them (quoted and escaped paths), and plain whitespace-separated
    // words as well, for a prompt whose apostrophes leave a quote open.
    let mut words = shell_words(text).unwrap_or_default();
    words.extend(text.split_whitespace().map(str::to_owned));
    let mut paths: Vec<PathBuf> = Vec::new();
    for word in words {
        let path = match (word.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(&word),
        };
        let is_image = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)));
        if path.is_absolute() && is_image && path.is_file() && !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
        0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff,
        0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
    ];

    #[test]
    fn shell_words_read_quotes_and_escapes_as_a_terminal_types_them() {
        assert_eq!(
            shell_words(r#"look at '/tmp/my shot.png' and /a/b\ c.jpg "/x/\"q\".gif" plain"#).unwrap(),
            [
                "look",
                "at",
                "/tmp/my shot.png",
                "and",
                "/a/b c.jpg",
                r#"/x/"q".gif"#,
                "plain"
            ]
        );
        assert_eq!(shell_words("  ").unwrap(), Vec::<String>::new());
        assert_eq!(shell_words("a''b").unwrap(), ["ab"]);
        assert_eq!(shell_words("don't"), None);
        assert_eq!(shell_words("end\\"), None);
    }

    #[test]
    fn dragged_image_paths_are_found_however_the_terminal_quoted_them() {
        let dir = tempfile::tempdir().unwrap();
        let spaced = dir.path().join("my shot.PNG");
        let plain = dir.path().join("plain.webp");
        let tilde = dir.path().join("tilde.gif");
        let text_file = dir.path().join("notes.txt");
        for p in [&spaced, &plain, &tilde, &text_file] {
            std::fs::write(p, PNG_1X1).unwrap();
        }
        let home = dir.path();
        let escaped = spaced.display().to_string().replace(' ', "\\ ");
        let prompt = format!(
            "what's in '{}' and {escaped} and {} and ~/tilde.gif not {} or {}/missing.png or plain.webp",
            spaced.display(),
            plain.display(),
            text_file.display(),
            dir.path().display()
        );
        // The apostrophe leaves a quote open: then only paths without spaces are found.
        assert_eq!(dragged_paths(&prompt, Some(home)), [plain.clone(), tilde.clone()]);
        let prompt = prompt.replace("what's", "what is");
        assert_eq!(dragged_paths(&prompt, Some(home)), [spaced, plain, tilde]);
        assert_eq!(dragged_paths("~/tilde.gif", None), Vec::<PathBuf>::new());
    }

    #[test]
    fn only_real_images_of_a_sane_size_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("a.png");
        std::fs::write(&png, PNG_1X1).unwrap();
        let image = read(&png).unwrap();
        assert_eq!(image.format, "PNG");
        assert_eq!(image.describe(), "a.png (PNG, 1 KB)");

        let fake = dir.path().join("fake.png");
        std::fs::write(&fake, b"not an image").unwrap();
        let e = read(&fake).unwrap_err();
        assert!(
            e.contains("fake.png") && e.contains("not a PNG, JPEG, GIF or WebP"),
            "{e}"
        );

        let e = read(&dir.path().join("none.png")).unwrap_err();
        assert!(e.starts_with("cannot attach") && e.contains("none.png"), "{e}");

        let big = dir.path().join("big.png");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MAX_IMAGE_BYTES + 1).unwrap();
        let e = read(&big).unwrap_err();
        assert!(e.contains("21 MB") && e.contains("up to 20 MB"), "{e}");

        // Neither a FIFO (an open would wait for a writer) nor a device (`/dev/zero` never ends)
        // is read.
        let fifo = dir.path().join("pipe.png");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = read(&fifo).unwrap_err();
        assert!(
            e.contains("cannot attach") && e.contains("pipe.png: it is a FIFO (named pipe), not a regular file"),
            "{e}"
        );
        let e = read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("/dev/zero: it is a character device"), "{e}");
        let e = read(dir.path()).unwrap_err();
        assert!(e.contains("it is a directory"), "{e}");

        for (bytes, format) in [
            (&[0xff, 0xd8, 0xff, 0xe0][..], "JPEG"),
            (b"GIF89a..", "GIF"),
            (b"RIFF\0\0\0\0WEBPVP8 ", "WebP"),
        ] {
            assert_eq!(image_format(bytes), Some(format));
        }
    }
}
