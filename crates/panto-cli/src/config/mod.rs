//! Configuration: the TOML file, the environment, and zero-config defaults, resolved into
//! [`Settings`].
//!
//! Precedence, highest first: command-line flags, environment variables (`PANTO_CONFIG`,
//! `PANTO_SESSION_DIR`, the provider key and base-URL variables), the config file, built-in
//! defaults. With no file at all, the environment alone is enough: `ANTHROPIC_API_KEY` or
//! `OPENAI_API_KEY` selects a provider and its default model.

mod agent;
mod aliases;
pub mod file;
mod hooks;
mod mcp;
mod model;
mod paths;
mod providers;
mod roots;
mod secret;
mod sessions;
mod tools;

use std::path::{Path, PathBuf};
use std::time::Duration;

use panto_core::{CompactionConfig, RetryConfig};

pub use agent::PromptSource;
pub use aliases::ModelAlias;
pub use hooks::{CommandHooks, Typeahead};
pub use mcp::McpServer;
pub use model::Selection;
pub use paths::Env;
pub use providers::{default_context_window, default_model_for, Key, Provider};
pub use secret::shown_var;
pub use sessions::{session_dir, store_url};
pub use tools::ToolSettings;

use crate::exit::Failure;
use file::{FileConfig, Source};

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
    /// `log_content`: message and tool content in the log (docs/observability.md).
    pub log_content: bool,
    /// Tools.
    pub tools: ToolSettings,
    /// `[[hooks.before_tool]]`, in order.
    pub hooks: CommandHooks,
    /// What Enter does in the REPL while a turn runs.
    pub typeahead: Typeahead,
    /// MCP servers, in file order (disabled ones included: `panto mcp list` shows them). Each
    /// server's `scrub_env` holds [`Settings::key_variables`].
    pub mcp_servers: Vec<McpServer>,
    /// Every environment variable panto reads a key or token from: each provider's key variable
    /// (the built-ins' and every `api_key_env`) and each MCP server's `bearer_token_env`. None
    /// of them reaches `bash` or an MCP stdio server (besides `panto_tools::process::KEY_VARIABLES`,
    /// always kept from them); a server's `env` table can pass one on purpose.
    pub key_variables: Vec<String>,
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

/// Applies the parsed file over the defaults, one section at a time, checking what the schema
/// cannot; every error names its line.
fn resolve(file: FileConfig, path: Option<PathBuf>, text: &str, env: &Env) -> Result<Settings, Failure> {
    let cfg_path = path.clone().unwrap_or_default();
    let source = Source { path: &cfg_path, text };
    let base_dir = cfg_path.parent().map(Path::to_path_buf).unwrap_or_default();

    let providers = providers::resolve(&file.providers, &file.cache, env, &source)?;
    let models = aliases::resolve(&file.models, &providers, &source)?;
    let default_model = aliases::default_model(file.default_model.as_ref(), &models, &source)?;
    let prompt = agent::prompt(&file, env, &base_dir, &source)?;
    let retry = agent::retry(&file.retry, &source)?;
    let compaction = agent::compaction(&file.compaction, &source)?;
    let limits = agent::limits(&file, &source)?;
    let mut mcp_servers = mcp::resolve(&file.mcp, env, &base_dir, &source)?;
    let key_variables = key_variables(&providers, &mcp_servers);
    for server in &mut mcp_servers {
        for name in &key_variables {
            if !server.config.scrub_env.contains(name) {
                server.config.scrub_env.push(name.clone());
            }
        }
    }
    let tools = tools::resolve(&file.tools, &mcp_servers, env, &base_dir, &source)?;
    let (session_dir, store_url) = sessions::resolve(&file, env, &base_dir, &source)?;
    let servers: Vec<&str> = mcp_servers.iter().map(|s| s.name.as_str()).collect();
    let hooks = hooks::resolve(&file.hooks, &servers, &source)?;

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
        max_steps: limits.max_steps,
        idle_timeout: limits.idle_timeout,
        max_image_dimension: limits.max_image_dimension,
        log_content: file.log_content.unwrap_or(false),
        tools,
        hooks,
        typeahead: file.typeahead.unwrap_or_default(),
        mcp_servers,
        key_variables,
        warnings: Vec::new(),
    })
}

/// The variables panto reads keys and tokens from, in the order configured, each once: the
/// providers' key variables, then the MCP servers' `bearer_token_env`.
fn key_variables(providers: &[Provider], servers: &[McpServer]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let from_providers = providers.iter().filter_map(|p| p.key_env.as_ref());
    let from_servers = servers.iter().filter_map(|s| s.config.bearer_token_env.as_ref());
    for name in from_providers.chain(from_servers) {
        // A key pasted where the variable's name belongs names no variable to remove, and this
        // list is shown in the settings' debug output: it is left out.
        if !secret::is_var_name(name) || secret::looks_like_secret(name) {
            continue;
        }
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use panto_core::{ApiStyle, ReasoningEffort};

    use super::providers::OPENAI_API_ROOT;
    use super::*;
    use crate::tools::Approval;

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
    fn cache_settings_come_from_the_provider_then_the_cache_table_then_the_defaults() {
        use panto_core::{CacheMode, CacheTtl};
        let s = load("", &[]).unwrap();
        let (a, o) = (s.provider("anthropic").unwrap(), s.provider("openai").unwrap());
        assert_eq!((a.cache, a.cache_ttl), (CacheMode::Auto, CacheTtl::FiveMinutes));
        // The session id goes to OpenAI's own API only, unless configured.
        assert!(o.prompt_cache_key && !a.prompt_cache_key);
        let s = load("", &[("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")]).unwrap();
        assert!(!s.provider("openai").unwrap().prompt_cache_key);
        let s = load(
            "[cache]\nttl = \"1h\"\nprompt_cache_key = true\n\
             [providers.local]\napi_style = \"openai-chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
             [providers.quiet]\napi_style = \"anthropic-messages\"\ncache = \"off\"\ncache_ttl = \"5m\"\n",
            &[],
        )
        .unwrap();
        let local = s.provider("local").unwrap();
        assert_eq!(
            (local.cache, local.cache_ttl, local.prompt_cache_key),
            (CacheMode::Auto, CacheTtl::OneHour, true)
        );
        let quiet = s.provider("quiet").unwrap();
        assert_eq!((quiet.cache, quiet.cache_ttl), (CacheMode::Off, CacheTtl::FiveMinutes));
        assert_eq!(s.provider("anthropic").unwrap().cache_ttl, CacheTtl::OneHour);
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
        // Every lower bound, in every section, says the key and the bound at the key's line.
        for (text, message) in [
            ("idle_timeout_secs = 0", "idle_timeout_secs must be at least 1"),
            (
                "max_image_dimension = 8",
                "max_image_dimension must be at least 16 pixels",
            ),
            (
                "[retry]\nmax_attempts = 0",
                "retry.max_attempts must be at least 1 (1 disables retry)",
            ),
            (
                "[tools]\nbash_timeout_secs = 0",
                "tools.bash_timeout_secs must be at least 1",
            ),
            (
                "[tools]\nmax_output_bytes = 1023",
                "tools.max_output_bytes must be at least 1024",
            ),
            (
                "[models.m]\nprovider = \"openai\"\nmodel = \"x\"\nmax_tokens = 0",
                "models.m.max_tokens must be at least 1",
            ),
            (
                "[models.m]\nprovider = \"openai\"\nmodel = \"x\"\ncontext_window = 0",
                "models.m.context_window must be at least 1",
            ),
        ] {
            let e = load(text, &[]).unwrap_err();
            let line = text.lines().count();
            assert!(
                e.message.contains(&format!(":{line}:")) && e.message.contains(message),
                "{text:?}: {}",
                e.message
            );
        }
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
    fn every_variable_a_key_is_read_from_is_kept_from_the_tools() {
        let s = load(
            "[providers.work]\napi_style = \"openai-chat\"\napi_key_env = \"WORK_LLM_KEY\"\n\
             [mcp.servers.search]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env = \"SEARCH_TOKEN\"\n\
             [mcp.servers.git]\ncommand = \"mcp-server-git\"\nscrub_env = [\"GITHUB_TOKEN\"]\n",
            &[],
        )
        .unwrap();
        assert_eq!(
            s.key_variables,
            ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "WORK_LLM_KEY", "SEARCH_TOKEN"]
        );
        let git = s.mcp_servers.iter().find(|m| m.name == "git").unwrap();
        assert_eq!(
            git.config.scrub_env,
            [
                "GITHUB_TOKEN",
                "ANTHROPIC_API_KEY",
                "OPENAI_API_KEY",
                "WORK_LLM_KEY",
                "SEARCH_TOKEN"
            ]
        );
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
        assert_eq!(names, ["sonnet", "think", "gpt5", "mini", "qwen"]);
        assert_eq!(s.default_model.as_deref(), Some("sonnet"));
        assert_eq!(s.provider("codex").unwrap().api_style, ApiStyle::OpenAiResponses);
        assert_eq!(s.provider("local").unwrap().key, Key::NotNeeded);
        assert_eq!(s.tools.approval, Some(Approval::Ask));
        assert_eq!(s.alias("mini").unwrap().pricing.unwrap().input, 0.15);
        assert_eq!(s.alias("think").unwrap().reasoning, ReasoningEffort::High);
        assert_eq!(
            s.provider("work-proxy").unwrap().headers,
            [("x-team".to_owned(), "platform".to_owned())]
        );
        assert_eq!(s.store_url.as_deref(), Some("postgres://panto@db.internal/panto"));
        let git = &s.mcp_servers[0];
        assert_eq!(
            (git.name.as_str(), git.config.command.as_deref()),
            ("git", Some("mcp-server-git"))
        );
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
