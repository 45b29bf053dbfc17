//! Configuration: the TOML file, the environment, and zero-config defaults, resolved into
//! [`Settings`].
//!
//! Precedence, highest first: command-line flags, environment variables (`PANTO_CONFIG`,
//! `PANTO_SESSION_DIR`, the provider key and base-URL variables), the config file, built-in
//! defaults. With no file at all, the environment alone is enough: `ANTHROPIC_API_KEY` or
//! `OPENAI_API_KEY` selects a provider and its default model.

pub mod file;
mod model;
mod paths;
mod roots;
mod secret;

use std::path::{Path, PathBuf};
use std::time::Duration;

use panto_core::{ApiStyle, CompactionConfig, Pricing, ReasoningEffort, RetryConfig};

pub use model::Selection;
pub use paths::Env;
pub use secret::shown_var;

use crate::exit::Failure;
use crate::tools::{Approval, Roots, ToolName};
use file::{error_at, FileConfig};

/// The official Anthropic API root (panto appends `/v1/messages`), the default of
/// `ANTHROPIC_BASE_URL`.
pub const ANTHROPIC_API_ROOT: &str = "https://api.anthropic.com";
/// The official OpenAI API root including `/v1` (panto appends `/chat/completions`), the default
/// of `OPENAI_BASE_URL`.
pub const OPENAI_API_ROOT: &str = "https://api.openai.com/v1";
/// The model used with `ANTHROPIC_API_KEY` and no configured alias.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The model used with `OPENAI_API_KEY` and no configured alias.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o";

/// The built-in providers: name, style, key variable, base-URL variable, official root, default
/// model. A `[providers.NAME]` table of the same name replaces one.
const BUILTIN_PROVIDERS: [(&str, ApiStyle, &str, &str, &str, &str); 2] = [
    (
        "anthropic",
        ApiStyle::AnthropicMessages,
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        ANTHROPIC_API_ROOT,
        DEFAULT_ANTHROPIC_MODEL,
    ),
    (
        "openai",
        ApiStyle::OpenAiChat,
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        OPENAI_API_ROOT,
        DEFAULT_OPENAI_MODEL,
    ),
];

/// The official API root of a style: what a configured provider without `base_url` uses.
pub fn official_root(style: ApiStyle) -> &'static str {
    match style {
        ApiStyle::AnthropicMessages => ANTHROPIC_API_ROOT,
        ApiStyle::OpenAiChat => OPENAI_API_ROOT,
    }
}

/// The default wire model of a style, for zero-config use.
pub fn default_model_for(style: ApiStyle) -> &'static str {
    match style {
        ApiStyle::AnthropicMessages => DEFAULT_ANTHROPIC_MODEL,
        ApiStyle::OpenAiChat => DEFAULT_OPENAI_MODEL,
    }
}

/// The context window assumed for a model without a configured `context_window`.
pub fn default_context_window(style: ApiStyle) -> u64 {
    match style {
        ApiStyle::AnthropicMessages => 200_000,
        ApiStyle::OpenAiChat => 128_000,
    }
}

/// Where a provider's key comes from, resolved against the environment at load time.
#[derive(Clone, PartialEq, Eq)]
pub enum Key {
    /// The key.
    Value(String),
    /// The provider names this variable, and it is not set.
    Missing(String),
    /// The provider needs no key (a local server).
    NotNeeded,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key itself.
        match self {
            Key::Value(_) => f.write_str("Value(<redacted>)"),
            Key::Missing(var) => write!(f, "Missing({})", shown_var(var)),
            Key::NotNeeded => f.write_str("NotNeeded"),
        }
    }
}

/// A provider endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct Provider {
    /// Its name in the config (`anthropic`, `openai` for the built-ins).
    pub name: String,
    /// The protocol.
    pub api_style: ApiStyle,
    /// The base URL, as the official SDKs mean it for the style.
    pub base_url: String,
    /// The key.
    pub key: Key,
    /// The variable the key comes from, for messages.
    pub key_env: Option<String>,
    /// Extra HTTP headers.
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `key_env` may hold a key written where its variable's name belongs.
        f.debug_struct("Provider")
            .field("name", &self.name)
            .field("api_style", &self.api_style)
            .field("base_url", &self.base_url)
            .field("key", &self.key)
            .field("key_env", &self.key_env.as_deref().map(shown_var))
            .field("headers", &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .finish()
    }
}

/// A configured model alias.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelAlias {
    /// The alias.
    pub name: String,
    /// The provider's name.
    pub provider: String,
    /// The wire model name.
    pub model: String,
    /// Reasoning effort.
    pub reasoning: ReasoningEffort,
    /// Output token limit.
    pub max_tokens: Option<u32>,
    /// Context window.
    pub context_window: Option<u64>,
    /// Rates.
    pub pricing: Option<Pricing>,
}

/// Where the configured system prompt comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptSource {
    /// panto's built-in prompt.
    Default,
    /// `system_prompt = "…"`.
    Text(String),
    /// `system_prompt_file = "…"`, resolved against the config file's directory.
    File(PathBuf),
}

/// Built-in tool settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSettings {
    /// The REPL's approval mode, when configured.
    pub approval: Option<Approval>,
    /// The tools offered.
    pub enabled: Vec<ToolName>,
    /// Default bash timeout.
    pub bash_timeout: Duration,
    /// Cap on tool output returned to the model, in bytes.
    pub max_output_bytes: usize,
    /// The directories the file tools may use (`read_roots`); unrestricted by default.
    pub read_roots: Roots,
}

/// Default timeout of one bash command.
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_secs(120);
/// Default cap on a tool's text output, in bytes.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 30_000;

/// Everything the configuration decides.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The config file in effect, or where it would be.
    pub config_path: Option<PathBuf>,
    /// Providers: the built-ins (unless replaced), then the configured ones.
    pub providers: Vec<Provider>,
    /// Model aliases, in file order.
    pub models: Vec<ModelAlias>,
    /// The `default_model` alias.
    pub default_model: Option<String>,
    /// The system prompt's source.
    pub prompt: PromptSource,
    /// Whether `AGENTS.md` is added to the system prompt.
    pub agents_md: bool,
    /// `session_dir` from the file, expanded.
    pub session_dir: Option<PathBuf>,
    /// `[store] url` from the file.
    pub store_url: Option<String>,
    /// Retry policy.
    pub retry: RetryConfig,
    /// Compaction policy (its `context_window` is set per model).
    pub compaction: CompactionConfig,
    /// Provider requests per turn.
    pub max_steps: u32,
    /// Idle timeout of a response.
    pub idle_timeout: Duration,
    /// Image resize limit.
    pub max_image_dimension: u32,
    /// Tools.
    pub tools: ToolSettings,
    /// What the user should know about the configuration (printed once at start-up).
    pub warnings: Vec<String>,
}

impl Settings {
    /// Reads the config file named by `flag`, else `PANTO_CONFIG`, else the XDG default. An
    /// explicitly named file must exist; the default one may be absent (zero config).
    pub fn load(flag: Option<&Path>, env: &Env) -> Result<Settings, Failure> {
        let (path, explicit) = match flag {
            Some(p) => (
                Some(
                    env.expand_path(p)
                        .map_err(|e| Failure::usage(format!("--config {e}")))?,
                ),
                true,
            ),
            None => match env.get("PANTO_CONFIG") {
                Some(p) => (
                    Some(
                        env.expand_home(p)
                            .map_err(|e| Failure::usage(format!("PANTO_CONFIG {e}")))?,
                    ),
                    true,
                ),
                None => (env.default_config_path(), false),
            },
        };
        let source = match &path {
            Some(p) => match std::fs::read_to_string(p) {
                Ok(s) => Some(s),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => None,
                Err(e) => return Err(Failure::usage(format!("cannot read config {}: {e}", p.display()))),
            },
            None => None,
        };
        let parsed = match (&path, &source) {
            (Some(p), Some(s)) => file::parse(p, s)?,
            _ => FileConfig::default(),
        };
        let holds_key = parsed.providers.values().any(|p| p.get_ref().api_key.is_some());
        let mut settings = resolve(parsed, path, source.as_deref().unwrap_or(""), env)?;
        if let (true, Some(p)) = (holds_key, &settings.config_path) {
            settings.warnings.extend(secret::readable_key_warning(p));
        }
        Ok(settings)
    }

    /// The provider called `name`.
    pub fn provider(&self, name: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// The alias called `name`.
    pub fn alias(&self, name: &str) -> Option<&ModelAlias> {
        self.models.iter().find(|m| m.name == name)
    }

    /// The config path for messages.
    pub fn config_path_display(&self) -> String {
        self.config_path
            .as_ref()
            .map_or_else(|| "~/.config/panto/config.toml".to_owned(), |p| p.display().to_string())
    }
}

/// Applies the parsed file over the defaults, checking what the schema cannot.
fn resolve(file: FileConfig, path: Option<PathBuf>, source: &str, env: &Env) -> Result<Settings, Failure> {
    let cfg_path = path.clone().unwrap_or_default();
    let at = |span: std::ops::Range<usize>, message: String| error_at(&cfg_path, source, Some(span), &message);
    let base_dir = cfg_path.parent().map(Path::to_path_buf).unwrap_or_default();

    let mut providers: Vec<Provider> = Vec::new();
    for (name, style, key_var, url_var, root, _) in BUILTIN_PROVIDERS {
        if file.providers.contains_key(name) {
            continue;
        }
        providers.push(Provider {
            name: name.to_owned(),
            api_style: style,
            base_url: env.get(url_var).unwrap_or(root).to_owned(),
            key: env
                .get(key_var)
                .map_or_else(|| Key::Missing(key_var.to_owned()), |k| Key::Value(k.to_owned())),
            key_env: Some(key_var.to_owned()),
            headers: Vec::new(),
        });
    }
    for (name, entry) in &file.providers {
        let span = entry.span();
        let entry = entry.get_ref();
        let base_url = match &entry.base_url {
            Some(url) => {
                let value = url.get_ref().trim();
                if !(value.starts_with("http://") || value.starts_with("https://")) {
                    return Err(at(
                        url.span(),
                        format!("providers.{name}.base_url must start with http:// or https://, got {value:?}"),
                    ));
                }
                value.to_owned()
            }
            None => official_root(entry.api_style).to_owned(),
        };
        if let Some(var) = &entry.api_key_env {
            // A key pasted where its variable's name belongs: say so without repeating it.
            if !secret::is_var_name(var.get_ref()) {
                return Err(at(
                    var.span(),
                    format!(
                        "providers.{name}.api_key_env must be the NAME of an environment variable (letters, \
                         digits, _), not the key itself: put the key in a variable (export MY_KEY=…) and \
                         write api_key_env = \"MY_KEY\""
                    ),
                ));
            }
        }
        let key_env = entry.api_key_env.as_ref().map(|v| v.get_ref().clone());
        let key = match (&entry.api_key, &key_env) {
            (Some(key), _) => Key::Value(key.clone()),
            (None, Some(var)) => env
                .get(var)
                .map_or_else(|| Key::Missing(var.clone()), |k| Key::Value(k.to_owned())),
            (None, None) => Key::NotNeeded,
        };
        if name.is_empty() {
            return Err(at(span, "a provider name must not be empty".into()));
        }
        providers.push(Provider {
            name: name.clone(),
            api_style: entry.api_style,
            base_url,
            key,
            key_env,
            headers: entry.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        });
    }

    let mut entries: Vec<_> = file.models.iter().collect();
    entries.sort_by_key(|(_, e)| e.span().start);
    let mut models = Vec::new();
    for (name, entry) in entries {
        let e = entry.get_ref();
        let provider = e.provider.get_ref();
        if !providers.iter().any(|p| &p.name == provider) {
            let known: Vec<&str> = providers.iter().map(|p| p.name.as_str()).collect();
            return Err(at(
                e.provider.span(),
                format!(
                    "models.{name}.provider names unknown provider {provider:?} (known: {})",
                    known.join(", ")
                ),
            ));
        }
        if e.model.get_ref().trim().is_empty() {
            return Err(at(e.model.span(), format!("models.{name}.model must not be empty")));
        }
        if let Some(m) = &e.max_tokens {
            if *m.get_ref() == 0 {
                return Err(at(m.span(), format!("models.{name}.max_tokens must be at least 1")));
            }
        }
        if let Some(w) = &e.context_window {
            if *w.get_ref() == 0 {
                return Err(at(w.span(), format!("models.{name}.context_window must be at least 1")));
            }
        }
        let pricing = match &e.pricing {
            Some(p) => {
                let r = p.get_ref();
                let rates = [r.input, r.output, r.cache_read, r.cache_write];
                if rates.iter().any(|x| !x.is_finite() || *x < 0.0) {
                    return Err(at(
                        p.span(),
                        format!(
                            "models.{name}.pricing rates must be non-negative numbers (dollars per million tokens)"
                        ),
                    ));
                }
                Some(Pricing::new(r.input, r.output, r.cache_read, r.cache_write))
            }
            None => None,
        };
        models.push(ModelAlias {
            name: name.clone(),
            provider: provider.clone(),
            model: e.model.get_ref().trim().to_owned(),
            reasoning: e.reasoning,
            max_tokens: e.max_tokens.as_ref().map(|m| *m.get_ref()),
            context_window: e.context_window.as_ref().map(|w| *w.get_ref()),
            pricing,
        });
    }

    let default_model = match &file.default_model {
        Some(d) => {
            let name = d.get_ref();
            if !models.iter().any(|m| &m.name == name) {
                let known: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
                let known = if known.is_empty() {
                    "none are configured; add a [models.NAME] table".to_owned()
                } else {
                    format!("aliases: {}", known.join(", "))
                };
                return Err(at(
                    d.span(),
                    format!("default_model {name:?} is not a configured model alias ({known})"),
                ));
            }
            Some(name.clone())
        }
        None => None,
    };

    let prompt = match (&file.system_prompt, &file.system_prompt_file) {
        (Some(_), Some(f)) => return Err(at(f.span(), "set system_prompt or system_prompt_file, not both".into())),
        (Some(t), None) => PromptSource::Text(t.get_ref().clone()),
        (None, Some(f)) => PromptSource::File(
            env.expand(f.get_ref(), &base_dir)
                .map_err(|e| at(f.span(), format!("system_prompt_file {e}")))?,
        ),
        (None, None) => PromptSource::Default,
    };

    let mut retry = RetryConfig::default();
    if let Some(n) = &file.retry.max_attempts {
        if *n.get_ref() == 0 {
            return Err(at(
                n.span(),
                "retry.max_attempts must be at least 1 (1 disables retry)".into(),
            ));
        }
        retry.max_attempts = *n.get_ref();
    }
    if let Some(ms) = file.retry.base_delay_ms {
        retry.base_delay = Duration::from_millis(ms);
    }
    if let Some(ms) = file.retry.max_delay_ms {
        retry.max_delay = Duration::from_millis(ms);
    }

    let mut compaction = CompactionConfig::default();
    if let Some(enabled) = file.compaction.enabled {
        compaction.enabled = enabled;
    }
    if let Some(t) = &file.compaction.threshold {
        let value = *t.get_ref();
        if !(value > 0.0 && value <= 1.0) {
            return Err(at(
                t.span(),
                format!("compaction.threshold must be a fraction in (0, 1], got {value}"),
            ));
        }
        compaction.threshold = value;
    }
    if let Some(k) = file.compaction.keep_recent_tokens {
        compaction.keep_recent_tokens = k;
    }
    if let Some(p) = &file.compaction.prompt {
        compaction.compaction_prompt = p.clone();
    }

    let defaults = panto_core::Config::new(panto_core::ProviderConfig::new(ApiStyle::OpenAiChat, "", "", ""));
    let max_steps = match &file.max_steps {
        Some(n) if *n.get_ref() == 0 => return Err(at(n.span(), "max_steps must be at least 1".into())),
        Some(n) => *n.get_ref(),
        None => defaults.max_steps,
    };
    let idle_timeout = match &file.idle_timeout_secs {
        Some(n) if *n.get_ref() == 0 => return Err(at(n.span(), "idle_timeout_secs must be at least 1".into())),
        Some(n) => Duration::from_secs(*n.get_ref()),
        None => defaults.idle_timeout,
    };
    let max_image_dimension = match &file.max_image_dimension {
        Some(n) if *n.get_ref() < 16 => {
            return Err(at(n.span(), "max_image_dimension must be at least 16 pixels".into()))
        }
        Some(n) => *n.get_ref(),
        None => defaults.max_image_dimension,
    };

    let enabled = match &file.tools.enabled {
        Some(list) => {
            let mut out = Vec::new();
            for name in list {
                let tool =
                    ToolName::parse(name.get_ref()).map_err(|e| at(name.span(), format!("tools.enabled: {e}")))?;
                if !out.contains(&tool) {
                    out.push(tool);
                }
            }
            out
        }
        None => ToolName::ALL.to_vec(),
    };
    let bash_timeout = match &file.tools.bash_timeout_secs {
        Some(n) if *n.get_ref() == 0 => return Err(at(n.span(), "tools.bash_timeout_secs must be at least 1".into())),
        Some(n) => Duration::from_secs(*n.get_ref()),
        None => DEFAULT_BASH_TIMEOUT,
    };
    let max_output_bytes = match &file.tools.max_output_bytes {
        Some(n) if *n.get_ref() < 1024 => {
            return Err(at(n.span(), "tools.max_output_bytes must be at least 1024".into()))
        }
        Some(n) => *n.get_ref(),
        None => DEFAULT_MAX_OUTPUT_BYTES,
    };
    let read_roots = roots::resolve(file.tools.read_roots.as_ref(), env, &base_dir, at)?;

    let session_dir = match &file.session_dir {
        Some(d) => Some(
            env.expand(d.get_ref(), &base_dir)
                .map_err(|e| at(d.span(), format!("session_dir {e}")))?,
        ),
        None => None,
    };

    let store_url = match &file.store.url {
        Some(url) if !is_postgres_url(url.get_ref()) => {
            return Err(at(
                url.span(),
                "store.url must be a postgres:// or postgresql:// URL".into(),
            ))
        }
        Some(url) => Some(url.get_ref().clone()),
        None => None,
    };

    Ok(Settings {
        config_path: path,
        store_url,
        providers,
        models,
        default_model,
        prompt,
        agents_md: file.agents_md.unwrap_or(true),
        session_dir,
        retry,
        compaction,
        max_steps,
        idle_timeout,
        max_image_dimension,
        tools: ToolSettings {
            approval: file.tools.approval,
            enabled,
            bash_timeout,
            max_output_bytes,
            read_roots,
        },
        warnings: Vec::new(),
    })
}

/// Whether `url` names a PostgreSQL database.
fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// The PostgreSQL store URL: `--store`, else `PANTO_STORE`, else `[store] url` from the file;
/// `None` keeps sessions in the session directory.
pub fn store_url(flag: Option<&str>, settings: &Settings, env: &Env) -> Result<Option<String>, Failure> {
    let (url, source) = match (flag, env.get("PANTO_STORE")) {
        (Some(url), _) => (url.to_owned(), "--store"),
        (None, Some(url)) if !url.is_empty() => (url.to_owned(), "PANTO_STORE"),
        _ => return Ok(settings.store_url.clone()),
    };
    if !is_postgres_url(&url) {
        return Err(Failure::usage(format!(
            "{source} must be a postgres:// or postgresql:// URL (sessions in files need no store URL)"
        )));
    }
    Ok(Some(url))
}

/// The session directory: `--session-dir`, else `PANTO_SESSION_DIR`, else `session_dir` from the
/// file, else the XDG data directory. A leading `~/` is expanded wherever it comes from (a quoted
/// `'~/s'` reaches panto unexpanded).
pub fn session_dir(flag: Option<&Path>, settings: &Settings, env: &Env) -> Result<PathBuf, Failure> {
    if let Some(dir) = flag {
        return env
            .expand_path(dir)
            .map_err(|e| Failure::usage(format!("--session-dir {e}")));
    }
    if let Some(dir) = env.get("PANTO_SESSION_DIR") {
        return env
            .expand_home(dir)
            .map_err(|e| Failure::usage(format!("PANTO_SESSION_DIR {e}")));
    }
    if let Some(dir) = &settings.session_dir {
        return Ok(dir.clone());
    }
    env.default_session_dir().ok_or_else(|| {
        Failure::usage("cannot place sessions: neither HOME nor XDG_DATA_HOME is set (use --session-dir)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(source: &str, env: &[(&str, &str)]) -> Result<Settings, Failure> {
        let env = Env::from_pairs(env);
        let parsed = file::parse(Path::new("/etc/c.toml"), source)?;
        resolve(parsed, Some(PathBuf::from("/etc/c.toml")), source, &env)
    }

    #[test]
    fn zero_config_reads_keys_and_base_urls_from_the_environment() {
        let s = load(
            "",
            &[
                ("ANTHROPIC_API_KEY", "ak"),
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
            ],
        )
        .unwrap();
        let a = s.provider("anthropic").unwrap();
        assert_eq!(a.base_url, "http://127.0.0.1:9/");
        assert_eq!(a.key, Key::Value("ak".into()));
        let o = s.provider("openai").unwrap();
        assert_eq!(o.base_url, OPENAI_API_ROOT);
        assert_eq!(o.key, Key::Missing("OPENAI_API_KEY".into()));
    }

    #[test]
    fn unknown_provider_in_a_model_is_located() {
        let e = load("[models.m]\nprovider = \"nope\"\nmodel = \"x\"\n", &[]).unwrap_err();
        assert_eq!(e.code, crate::exit::EXIT_USAGE);
        assert!(e.message.contains("c.toml:2:"), "{}", e.message);
        assert!(e.message.contains("nope"), "{}", e.message);
    }

    #[test]
    fn default_model_must_be_an_alias() {
        let e = load("default_model = \"ghost\"\n", &[]).unwrap_err();
        assert!(e.message.contains(":1:"), "{}", e.message);
        assert!(e.message.contains("ghost"), "{}", e.message);
    }

    #[test]
    fn out_of_range_values_are_located() {
        let e = load("[compaction]\nthreshold = 1.5\n", &[]).unwrap_err();
        assert!(
            e.message.contains(":2:") && e.message.contains("threshold"),
            "{}",
            e.message
        );
        let e = load("\n\nmax_steps = 0\n", &[]).unwrap_err();
        assert!(
            e.message.contains(":3:") && e.message.contains("max_steps"),
            "{}",
            e.message
        );
        let e = load("[tools]\nenabled = [\"read\", \"rm\"]\n", &[]).unwrap_err();
        assert!(e.message.contains(":2:") && e.message.contains("rm"), "{}", e.message);
    }

    #[test]
    fn configured_provider_replaces_the_builtin_and_keeps_file_order_of_models() {
        let s = load(
            r#"
[providers.openai]
api_style = "openai-chat"
base_url = "http://proxy/v1"
api_key_env = "PROXY_KEY"
[models.zeta]
provider = "openai"
model = "z"
[models.alpha]
provider = "anthropic"
model = "a"
"#,
            &[("PROXY_KEY", "pk"), ("OPENAI_BASE_URL", "http://ignored/v1")],
        )
        .unwrap();
        let o = s.provider("openai").unwrap();
        assert_eq!(o.base_url, "http://proxy/v1");
        assert_eq!(o.key, Key::Value("pk".into()));
        let names: Vec<&str> = s.models.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha"]);
    }

    #[test]
    fn prompt_file_is_relative_to_the_config() {
        let s = load("system_prompt_file = \"prompt.md\"\n", &[]).unwrap();
        assert_eq!(s.prompt, PromptSource::File(PathBuf::from("/etc/prompt.md")));
        let e = load("system_prompt = \"a\"\nsystem_prompt_file = \"b\"\n", &[]).unwrap_err();
        assert!(e.message.contains(":2:"), "{}", e.message);
    }

    #[test]
    fn a_key_in_api_key_env_is_an_error_that_does_not_repeat_it() {
        let secret = "sk-proj-Zq81nVmPa0Lr7TzY2bWc93";
        let e = load(
            &format!("[providers.p]\napi_style = \"openai-chat\"\napi_key_env = \"{secret}\"\n"),
            &[],
        )
        .unwrap_err();
        assert!(
            e.message.contains(":3:") && e.message.contains("api_key_env"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("Zq81"), "{}", e.message);
    }

    #[test]
    fn key_is_never_in_debug_output() {
        let s = load("", &[("ANTHROPIC_API_KEY", "sk-very-secret")]).unwrap();
        assert!(!format!("{s:?}").contains("sk-very-secret"));
    }

    #[test]
    fn the_full_example_in_the_docs_is_valid() {
        let doc = include_str!("../../../../docs/config.md");
        let start = doc.find("```toml\n").expect("a toml block") + "```toml\n".len();
        let end = start + doc[start..].find("```").expect("the block ends");
        let env = [("ANTHROPIC_API_KEY", "a"), ("WORK_LLM_KEY", "w"), ("HOME", "/home/u")];
        let s = load(&doc[start..end], &env).unwrap();
        assert_eq!(s.session_dir.as_deref(), Some(Path::new("/home/u/panto-sessions")));
        let names: Vec<&str> = s.models.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["sonnet", "think", "mini", "qwen"]);
        assert_eq!(s.default_model.as_deref(), Some("sonnet"));
        assert_eq!(s.provider("local").unwrap().key, Key::NotNeeded);
        assert_eq!(s.tools.approval, Some(Approval::Ask));
        assert_eq!(s.alias("mini").unwrap().pricing.unwrap().input, 0.15);
        assert_eq!(s.alias("think").unwrap().reasoning, ReasoningEffort::High);
        assert_eq!(
            s.provider("work-proxy").unwrap().headers,
            [("x-team".to_owned(), "platform".to_owned())]
        );
        assert_eq!(s.store_url.as_deref(), Some("postgres://panto@db.internal/panto"));
    }

    #[test]
    fn a_store_url_must_be_postgres_and_names_its_line() {
        let err = load("[store]\nurl = \"mysql://x\"\n", &[("ANTHROPIC_API_KEY", "a")]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(":2:") && text.contains("store.url must be a postgres://"),
            "{text}"
        );
        let s = load("", &[("ANTHROPIC_API_KEY", "a")]).unwrap();
        let env = Env::from_pairs(&[("PANTO_STORE", "postgresql://h/db")]);
        assert_eq!(store_url(None, &s, &env).unwrap().as_deref(), Some("postgresql://h/db"));
        assert_eq!(
            store_url(Some("postgres://flag/db"), &s, &env).unwrap().as_deref(),
            Some("postgres://flag/db")
        );
        assert!(store_url(None, &s, &Env::from_pairs(&[("PANTO_STORE", "sqlite://x")])).is_err());
    }
}
