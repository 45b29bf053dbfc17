//! The harness: a private home for each test, and a way to run `panto` in it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use panto_testkit::{MockServer, RecordedRequest};
use rexpect::reader::Options;
use rexpect::session::{spawn_with_options, PtySession};
use serde_json::Value;
use tempfile::TempDir;
use tokio::io::AsyncWriteExt;

/// The API key every test uses; tests grep files for it.
pub const KEY: &str = "sk-test-SECRET-4242-do-not-persist";

/// The binary under test.
pub fn panto_bin() -> &'static str {
    env!("CARGO_BIN_EXE_panto")
}

/// A private environment: `home/` (HOME and the XDG directories), `work/` (the working
/// directory), and the variables set for `panto`.
pub struct Home {
    /// Keeps the directory alive.
    pub dir: TempDir,
    /// Extra variables.
    pub vars: Vec<(String, String)>,
}

/// The output of one run.
#[derive(Debug)]
pub struct Run {
    /// The exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Stdout.
    pub stdout: String,
    /// Stderr.
    pub stderr: String,
}

impl Run {
    /// Stdout parsed as JSON lines.
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
            .collect()
    }

    /// Asserts success and returns stdout.
    pub fn ok(&self) -> &str {
        assert_eq!(
            self.code,
            Some(0),
            "panto failed:\nstdout: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
        &self.stdout
    }
}

impl Home {
    /// A fresh home with an empty working directory.
    pub fn new() -> Home {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        Home { dir, vars: Vec::new() }
    }

    /// `home/`.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `work/`, the working directory of every run.
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// Where sessions land by the XDG default.
    pub fn sessions_dir(&self) -> PathBuf {
        self.home().join("data/panto/sessions")
    }

    /// Where the REPL history lands by the XDG default.
    pub fn history_file(&self) -> PathBuf {
        self.home().join("state/panto/history")
    }

    /// The default config file path.
    pub fn config_file(&self) -> PathBuf {
        self.home().join("config/panto/config.toml")
    }

    /// Writes the default config file.
    pub fn write_config(&self, text: &str) {
        let path = self.config_file();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Sets a variable.
    pub fn set(&mut self, name: &str, value: &str) -> &mut Self {
        self.vars.retain(|(n, _)| n != name);
        self.vars.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Zero config against `server` with the Anthropic API.
    pub fn anthropic(&mut self, server: &MockServer) -> &mut Self {
        self.set("ANTHROPIC_API_KEY", KEY)
            .set("ANTHROPIC_BASE_URL", &server.anthropic_base_url())
    }

    /// Zero config against `server` with the OpenAI API.
    pub fn openai(&mut self, server: &MockServer) -> &mut Self {
        self.set("OPENAI_API_KEY", KEY)
            .set("OPENAI_BASE_URL", &server.openai_base_url())
    }

    /// The variables of a run: nothing from the test's own environment but PATH, so a
    /// developer's real keys or config never leak in.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".to_owned(), self.home().display().to_string()),
            (
                "XDG_CONFIG_HOME".to_owned(),
                self.home().join("config").display().to_string(),
            ),
            (
                "XDG_DATA_HOME".to_owned(),
                self.home().join("data").display().to_string(),
            ),
            (
                "XDG_STATE_HOME".to_owned(),
                self.home().join("state").display().to_string(),
            ),
        ];
        env.extend(self.vars.iter().cloned());
        env
    }

    /// `program` in `work/` with this home's variables and nothing else.
    pub fn command_of(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear().envs(self.env()).current_dir(self.work());
        cmd
    }

    /// `panto args` as every test runs it: in `work/` with this home's variables.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.command_of(panto_bin());
        cmd.args(args);
        cmd
    }

    /// Starts `panto args` with stdin empty and stdout and stderr piped, for a test that reads
    /// its output as it comes or signals it. Killed when dropped.
    pub fn spawn(&self, args: &[&str]) -> tokio::process::Child {
        tokio::process::Command::from(self.command(args))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("panto starts")
    }

    /// Runs `panto args` (stdin empty or `stdin`) to completion. Async, so the in-process mock
    /// server keeps serving while the child runs.
    pub async fn run(&self, args: &[&str], stdin: Option<&str>) -> Run {
        self.run_command(self.command(args), stdin).await
    }

    /// [`Home::run`] in directory `dir` instead of `work/`, stdin empty.
    pub async fn run_in(&self, dir: &Path, args: &[&str]) -> Run {
        let mut cmd = self.command(args);
        cmd.current_dir(dir);
        self.run_command(cmd, None).await
    }

    async fn run_command(&self, cmd: Command, stdin: Option<&str>) -> Run {
        let mut child = tokio::process::Command::from(cmd)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("panto starts");
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().unwrap();
            // panto may exit before it reads its input (a usage or setup error does): the pipe is
            // then closed, which is not the test's failure.
            match pipe.write_all(text.as_bytes()).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(e) => panic!("cannot write panto's stdin: {e}"),
            }
            drop(pipe);
        }
        let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("panto finishes within a minute")
            .expect("panto runs");
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Talks to the REPL (`panto args`) on a pseudo-terminal, without colour so that output can
    /// be matched: `talk` types and expects, and ends the session (`/quit`, Ctrl-D); then the
    /// REPL must exit. rexpect blocks, so the talk runs on a blocking thread while the mock
    /// server keeps serving on the test's runtime.
    pub async fn in_repl<T: Send + 'static>(
        &self,
        args: &[&str],
        talk: impl FnOnce(&mut PtySession) -> T + Send + 'static,
    ) -> T {
        let mut cmd = self.command(args);
        cmd.env("TERM", "xterm").env("NO_COLOR", "1");
        blocking(move || {
            let options = Options::new().timeout_ms(Some(20_000)).strip_ansi_escape_codes(true);
            let mut repl = spawn_with_options(cmd, options).expect("panto starts on a pty");
            let result = talk(&mut repl);
            repl.exp_eof().expect("the REPL exits");
            result
        })
        .await
    }

    /// Every file under the session directory.
    pub fn session_files(&self) -> Vec<PathBuf> {
        files_under(&self.sessions_dir())
    }
}

/// The steps of a conversation with the REPL on a pseudo-terminal ([`Home::in_repl`]).
pub trait Talk {
    /// Waits for `text` on the screen.
    fn expect(&mut self, text: &str);
    /// Waits for the prompt, clears the input, and types `line` and Enter.
    fn type_line(&mut self, line: &str);
    /// Types `keys` as they are (no Enter): arrows, Tab, a partial line.
    fn keys(&mut self, keys: &str);
    /// Waits for the prompt and types `/quit`.
    fn quit(&mut self) {
        self.type_line("/quit");
    }
}

impl Talk for PtySession {
    fn expect(&mut self, text: &str) {
        if let Err(e) = self.exp_string(text) {
            panic!("waiting for {text:?}: {e}");
        }
    }

    fn type_line(&mut self, line: &str) {
        self.expect("> ");
        // The input may hold text already (after `/rewind`, the rewound prompt): Ctrl-U clears it,
        // so the line sent is `line` alone.
        self.send_control('u').expect("the pty takes input");
        self.send_line(line).expect("the pty takes input");
    }

    fn keys(&mut self, keys: &str) {
        self.send(keys).expect("the pty takes input");
        self.flush().expect("the pty takes input");
    }
}

/// Runs `f` on a blocking thread and waits for it: a conversation on a pseudo-terminal blocks.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("the pty conversation")
}

/// Every regular file under `dir`, recursively (empty when it does not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The JSON body of a recorded request.
pub fn body(request: &RecordedRequest) -> Value {
    assert_eq!(request.validation, None, "the mock rejected request {}", request.index);
    request.json().expect("a JSON body")
}

/// Every text found anywhere in a request's messages (text blocks, strings, tool results), for
/// "the history holds X" checks.
pub fn all_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(all_text).collect::<Vec<_>>().join("\n"),
        // `cache_control` is how the request asks for caching, not text anybody wrote.
        Value::Object(map) => map
            .iter()
            .filter(|(key, _)| key.as_str() != "cache_control")
            .map(|(_, v)| all_text(v))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The `messages` of a request body as (role, all text) pairs.
pub fn messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_owned(),
                all_text(&m["content"]) + &all_text(&m["tool_calls"]),
            )
        })
        .collect()
}

/// The texts of the user and assistant messages of the mock's request `n` (the system prompt
/// left out), one string per message.
pub fn sent(server: &panto_testkit::MockServer, n: usize) -> Vec<String> {
    let request = body(&server.requests()[n]);
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            blocks => blocks
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        })
        .collect()
}

/// The bytes a file a rewind test restores starts with: no final newline, a CR, a tab and a
/// non-ASCII character, so a restore that is not byte for byte shows.
pub const ORIGINAL: &str = "one\r\n\tcafé, no final newline";
