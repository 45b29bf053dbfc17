//! The TOML config file as written: its schema, and parse errors that name the key and the line.
//!
//! Every table denies unknown keys, so a typo is an error instead of a silently ignored setting.
//! Values whose meaning is checked after parsing (an alias that must exist, a threshold that must
//! be a fraction) are kept [`Spanned`], so those errors can point at their line too.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use panto_core::{ApiStyle, CacheMode, CacheTtl, ReasoningEffort};
use serde::Deserialize;
use toml::Spanned;

use crate::exit::Failure;
use crate::tools::{Approval, Sandbox};

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// The alias used when `-m` is not given.
    pub default_model: Option<Spanned<String>>,
    /// Named provider endpoints.
    #[serde(default)]
    pub providers: BTreeMap<String, Spanned<ProviderEntry>>,
    /// Named models (aliases).
    #[serde(default)]
    pub models: BTreeMap<String, Spanned<ModelEntry>>,
    /// The system prompt text.
    pub system_prompt: Option<Spanned<String>>,
    /// A file holding the system prompt.
    pub system_prompt_file: Option<Spanned<String>>,
    /// Whether `AGENTS.md` of the working directory is added to the system prompt.
    pub agents_md: Option<bool>,
    /// Where sessions are stored.
    pub session_dir: Option<Spanned<String>>,
    /// The most provider requests one turn may make.
    pub max_steps: Option<Spanned<u32>>,
    /// Seconds a response may go without a byte.
    pub idle_timeout_secs: Option<Spanned<u64>>,
    /// The longer side, in pixels, images are resized to.
    pub max_image_dimension: Option<Spanned<u32>>,
    /// Whether the log (and any trace export) may hold message and tool content.
    pub log_content: Option<bool>,
    /// Retry policy.
    #[serde(default)]
    pub retry: RetryEntry,
    /// Compaction policy.
    #[serde(default)]
    pub compaction: CompactionEntry,
    /// Built-in tools.
    #[serde(default)]
    pub tools: ToolsEntry,
    /// Where sessions are stored, when not in the session directory.
    #[serde(default)]
    pub store: StoreEntry,
    /// Prompt caching defaults for every provider.
    #[serde(default)]
    pub cache: CacheEntry,
    /// Command hooks around tool calls.
    #[serde(default)]
    pub hooks: super::hooks::HooksEntry,
    /// What Enter does in the REPL while a turn runs.
    pub typeahead: Option<super::hooks::Typeahead>,
    /// MCP servers.
    #[serde(default)]
    pub mcp: McpEntry,
}

/// `[mcp]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpEntry {
    /// `[mcp.servers.NAME]`: each one as `panto-mcp` reads it (unknown keys refused), spanned so
    /// the servers keep the file's order and their errors point at their table.
    #[serde(default)]
    pub servers: BTreeMap<String, Spanned<panto_mcp::ServerConfig>>,
}

/// `[cache]`: the prompt caching every provider gets unless its own table says otherwise.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheEntry {
    /// `auto` (the default) or `off`.
    pub mode: Option<CacheMode>,
    /// `5m` (the default) or `1h`.
    pub ttl: Option<CacheTtl>,
    /// Whether OpenAI styles send the session id as `prompt_cache_key`.
    pub prompt_cache_key: Option<bool>,
}

/// `[store]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreEntry {
    /// A `postgres://…` URL: sessions go to that PostgreSQL database instead of files.
    pub url: Option<Spanned<String>>,
}

/// `[providers.NAME]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEntry {
    /// `anthropic-messages` or `openai-chat`.
    pub api_style: ApiStyle,
    /// The base URL (defaults to the official API root of the style).
    pub base_url: Option<Spanned<String>>,
    /// The environment variable holding the key.
    pub api_key_env: Option<Spanned<String>>,
    /// The key itself (discouraged: prefer `api_key_env`).
    pub api_key: Option<String>,
    /// Extra HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Prompt caching: `auto` or `off` (default: `[cache] mode`, else `auto`).
    pub cache: Option<CacheMode>,
    /// Cache entry lifetime: `5m` or `1h` (default: `[cache] ttl`, else `5m`).
    pub cache_ttl: Option<CacheTtl>,
    /// OpenAI styles: send the session id as `prompt_cache_key` (default: `[cache]
    /// prompt_cache_key`, else only for the official OpenAI API).
    pub prompt_cache_key: Option<bool>,
}

/// `[models.ALIAS]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// The provider name.
    pub provider: Spanned<String>,
    /// The wire model name.
    pub model: Spanned<String>,
    /// Reasoning effort.
    #[serde(default)]
    pub reasoning: ReasoningEffort,
    /// Output token limit.
    pub max_tokens: Option<Spanned<u32>>,
    /// Context window in tokens.
    pub context_window: Option<Spanned<u64>>,
    /// Rates in dollars per million tokens.
    pub pricing: Option<Spanned<PricingEntry>>,
}

/// `pricing = { … }` of a model.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PricingEntry {
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Cache reads.
    #[serde(default)]
    pub cache_read: f64,
    /// Cache writes with the five-minute lifetime.
    #[serde(default)]
    pub cache_write: f64,
    /// Cache writes with the one-hour lifetime (default: twice `input`).
    pub cache_write_1h: Option<f64>,
}

/// `[retry]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryEntry {
    /// Attempts in all.
    pub max_attempts: Option<Spanned<u32>>,
    /// First backoff delay.
    pub base_delay_ms: Option<u64>,
    /// Longest delay.
    pub max_delay_ms: Option<u64>,
}

/// `[compaction]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionEntry {
    /// Automatic compaction on or off.
    pub enabled: Option<bool>,
    /// Fraction of the context window that triggers compaction.
    pub threshold: Option<Spanned<f64>>,
    /// Tokens of recent messages kept verbatim.
    pub keep_recent_tokens: Option<u64>,
    /// The summary instruction.
    pub prompt: Option<String>,
}

/// `[tools]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsEntry {
    /// Approval mode of the REPL.
    pub approval: Option<Approval>,
    /// Which built-in tools are offered.
    pub enabled: Option<Vec<Spanned<String>>>,
    /// Default timeout of a bash command, in seconds.
    pub bash_timeout_secs: Option<Spanned<u64>>,
    /// Cap on the output a bash command returns, in bytes.
    pub max_output_bytes: Option<Spanned<usize>>,
    /// The directories the file tools are confined to.
    pub read_roots: Option<Spanned<Vec<Spanned<String>>>>,
    /// `TOOL` / `TOOL(GLOB)` rules whose calls run without approval.
    pub allow: Option<Vec<Spanned<String>>>,
    /// `TOOL` / `TOOL(GLOB)` rules whose calls are refused.
    pub deny: Option<Vec<Spanned<String>>>,
    /// The sandbox of bash and the write tools.
    pub sandbox: Option<Sandbox>,
    /// Whether sandboxed commands may use the network.
    pub sandbox_network: Option<bool>,
    /// More directories the `workspace-write` sandbox lets tools write.
    pub writable_roots: Option<Vec<Spanned<String>>>,
    /// Whether `web_fetch` may connect to loopback and private addresses.
    pub web_fetch_private: Option<bool>,
}

/// The 1-based line and column of byte `offset` in `source`.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = source.get(..offset).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.chars().count(), |nl| before[nl + 1..].chars().count())
        + 1;
    (line, col)
}

/// The text of the line holding byte `offset`, trimmed.
fn line_text(source: &str, offset: usize) -> &str {
    let offset = offset.min(source.len());
    let start = source.get(..offset).and_then(|b| b.rfind('\n')).map_or(0, |i| i + 1);
    let end = source
        .get(offset..)
        .and_then(|a| a.find('\n'))
        .map_or(source.len(), |i| offset + i);
    source.get(start..end).unwrap_or("").trim()
}

/// A config error at `span` of `source`: `PATH:LINE:COL: MESSAGE (at `LINE TEXT`)`, exit code 2.
/// A line that may hold a key is quoted without its value ([`super::secret::quoted_line`]).
pub fn error_at(path: &Path, source: &str, span: Option<Range<usize>>, message: &str) -> Failure {
    match span {
        Some(span) => {
            let (line, col) = line_col(source, span.start);
            let text = super::secret::quoted_line(line_text(source, span.start));
            let quoted = if text.chars().count() > 80 {
                format!("{}…", text.chars().take(80).collect::<String>())
            } else {
                text.into_owned()
            };
            Failure::usage(format!(
                "config {}:{line}:{col}: {message} (at `{quoted}`)",
                path.display()
            ))
        }
        None => Failure::usage(format!("config {}: {message}", path.display())),
    }
}

/// The file's path and text, for errors that point at a line of it: what every section's
/// resolution is given.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The file (empty without one).
    pub path: &'a Path,
    /// Its text (empty without one).
    pub text: &'a str,
}

impl Source<'_> {
    /// The usage error `message`, located at `span`.
    pub fn error(&self, span: Range<usize>, message: impl AsRef<str>) -> Failure {
        error_at(self.path, self.text, Some(span), message.as_ref())
    }

    /// The value of `entry` (absent: `None`), refused below `min` with "`key` must be at least
    /// `min``unit`" at its line. `unit` follows the number as written: `""`, `" pixels"`.
    pub fn at_least<T: Copy + PartialOrd + std::fmt::Display>(
        &self,
        entry: Option<&Spanned<T>>,
        min: T,
        key: &str,
        unit: &str,
    ) -> Result<Option<T>, Failure> {
        match entry {
            Some(value) if *value.get_ref() < min => {
                Err(self.error(value.span(), format!("{key} must be at least {min}{unit}")))
            }
            Some(value) => Ok(Some(*value.get_ref())),
            None => Ok(None),
        }
    }
}

/// Parses the file, turning a syntax or schema error into a located [`Failure`].
pub fn parse(path: &Path, source: &str) -> Result<FileConfig, Failure> {
    toml::from_str(source).map_err(|e| {
        // toml's message may span lines; the first one carries the reason.
        let message = e.message().lines().next().unwrap_or("invalid TOML").trim().to_owned();
        error_at(path, source, e.span(), &message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(source: &str) -> String {
        parse(Path::new("/c.toml"), source).unwrap_err().message
    }

    #[test]
    fn unknown_key_names_the_key_and_its_line() {
        let e = err("default_model = \"a\"\n\n[models.a]\nprovider = \"anthropic\"\nmodle = \"x\"\n");
        assert!(e.contains("/c.toml:5:"), "{e}");
        assert!(e.contains("modle"), "{e}");
    }

    #[test]
    fn bad_value_names_the_line() {
        let e = err("[retry]\nmax_attempts = \"lots\"\n");
        assert!(e.contains("/c.toml:2:"), "{e}");
        assert!(e.contains("max_attempts"), "{e}");
    }

    #[test]
    fn bad_api_style_is_reported_with_the_choices() {
        let e = err("[providers.x]\napi_style = \"grpc\"\n");
        assert!(e.contains(":2:"), "{e}");
        assert!(e.contains("anthropic-messages"), "{e}");
    }

    #[test]
    fn syntax_error_has_a_location() {
        let e = err("default_model = \n");
        assert!(e.contains("/c.toml:1:"), "{e}");
    }

    #[test]
    fn full_file_parses() {
        let f = parse(
            Path::new("/c.toml"),
            r#"
default_model = "fast"
system_prompt = "be brief"
agents_md = false
max_steps = 10
[providers.local]
api_style = "openai-chat"
base_url = "http://127.0.0.1:8080/v1"
[models.fast]
provider = "local"
model = "qwen"
reasoning = "low"
pricing = { input = 0.1, output = 0.2 }
[retry]
max_attempts = 2
[compaction]
threshold = 0.5
[tools]
approval = "read-only"
enabled = ["read", "bash"]
[cache]
ttl = "1h"
"#,
        )
        .unwrap();
        assert_eq!(f.models["fast"].get_ref().reasoning, ReasoningEffort::Low);
        assert_eq!(f.tools.approval, Some(Approval::ReadOnly));
        assert_eq!(f.providers["local"].get_ref().api_style, ApiStyle::OpenAiChat);
        assert_eq!(f.cache.ttl, Some(CacheTtl::OneHour));
    }

    #[test]
    fn a_bad_cache_setting_names_its_line_and_the_choices() {
        let e = err("[providers.x]\napi_style = \"openai-chat\"\ncache_ttl = \"2h\"\n");
        assert!(e.contains(":3:") && e.contains("5m") && e.contains("1h"), "{e}");
        let e = err("[cache]\nmode = \"always\"\n");
        assert!(e.contains(":2:") && e.contains("auto"), "{e}");
    }

    #[test]
    fn a_syntax_error_on_a_key_line_does_not_quote_the_key() {
        let e = err("[providers.p]\napi_style = \"openai-chat\"\napi_key = \"sk-live-1234567890abcdef\" x\n");
        assert!(e.contains(":3:") && e.contains("api_key = …"), "{e}");
        assert!(!e.contains("1234567890abcdef"), "{e}");
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
}
