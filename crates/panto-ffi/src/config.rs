//! `panto_config`: an agent configuration built from JSON.
//!
//! The JSON shape is exactly that of `panto_core::Config` (see docs/ffi.md), plus two fields the C
//! ABI adds: `provider.api_key_env`, the name of an environment variable holding the API key, so
//! that keys need not pass through the embedder's own strings; and `policy`, panto-tools' one
//! policy chain (deny rules, command hooks, allow rules, approval mode) in front of every tool of
//! an agent made with the config, built-in and MCP alike.

use std::ffi::c_char;
use std::path::PathBuf;

use panto_core::{secret, Config};
use panto_tools::policy::{CommandHook, HookConfig};
use panto_tools::{Approval, Toolbox};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{panto_error, Failure};
use crate::guard::{free, HandOut, Handle};
use crate::status::PANTO_ERR_CONFIG;

/// An agent configuration: provider, model, base URL, key, retry, compaction, limits.
///
/// Ownership: created by `panto_config_new_json`, freed by `panto_config_free`. Functions that
/// take a config copy it, so it may be freed right after. Thread safety: immutable; may be read
/// from several threads at once, but not freed while another thread uses it.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct panto_config {
    pub(crate) config: Config,
    /// The config's `policy`, checked; `None` when it has none.
    pub(crate) policy: Option<AgentPolicy>,
}

/// The `policy` of a config: what `panto_agent_new` puts in front of every tool of the agent.
#[derive(Debug, Clone)]
pub(crate) struct AgentPolicy {
    /// The rules and the approval mode (a toolbox offering no tool of its own).
    pub(crate) toolbox: Toolbox,
    /// The command hooks, in order.
    pub(crate) hooks: Vec<CommandHook>,
}

impl AgentPolicy {
    /// Adds the chain to `agent` as its hooks: deny rules and command hooks first, allow rules
    /// and the approval mode last, reading tool sources' read-only annotations from `sources`.
    pub(crate) fn install(&self, agent: &mut panto_core::Agent, sources: &panto_tools::policy::SourceRegistry) {
        agent.add_hook(std::sync::Arc::new(self.toolbox.policy_hook(self.hooks.clone())));
        agent.add_hook(std::sync::Arc::new(
            self.toolbox.approval_hook().with_sources(sources.clone()),
        ));
    }
}

/// The JSON of `policy`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyJson {
    /// The directory path rules and hooks work in (default: the process's).
    #[serde(default)]
    cwd: Option<PathBuf>,
    /// How calls no rule decided are approved (default `auto`).
    #[serde(default)]
    approval: Option<Approval>,
    /// Rules whose calls run without approval.
    #[serde(default)]
    allow: Vec<String>,
    /// Rules whose calls are refused.
    #[serde(default)]
    deny: Vec<String>,
    /// Command hooks.
    #[serde(default)]
    hooks: Vec<HookConfig>,
}

/// Checks the `policy` value: every rule parses, every hook is complete, the directory exists.
/// Errors name the field (`policy.deny[1]`).
fn parse_policy(value: Value) -> Result<AgentPolicy, Failure> {
    let json: PolicyJson = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." {
            "policy".to_owned()
        } else {
            format!("policy.{path}")
        };
        field_error(&path, e.into_inner())
    })?;
    for (list, rules) in [("allow", &json.allow), ("deny", &json.deny)] {
        for (i, rule) in rules.iter().enumerate() {
            panto_tools::policy::Rule::parse(rule).map_err(|e| field_error(&format!("policy.{list}[{i}]"), e))?;
        }
    }
    let hooks = json
        .hooks
        .iter()
        .enumerate()
        .map(|(i, hook)| {
            hook.resolve()
                .map_err(|e| field_error(&format!("policy.hooks[{i}]"), e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut options = panto_tools::Options::default();
    options.cwd = json.cwd;
    options.tools = Some(Vec::new());
    options.approval = json.approval.unwrap_or(Approval::Auto);
    options.allow = json.allow;
    options.deny = json.deny;
    options.read_only_hint = " (the policy's approval is read-only)".to_owned();
    let toolbox = Toolbox::new(&options).map_err(|e| field_error("policy", e))?;
    Ok(AgentPolicy { toolbox, hooks })
}

impl Handle for panto_config {}

fn config_error(message: impl Into<String>) -> Failure {
    Failure::new(PANTO_ERR_CONFIG, message)
}

/// A config error about the field at `path`: the message starts `config: {path}: ` and
/// `panto_error_field` gives `path` back.
fn field_error(path: &str, message: impl std::fmt::Display) -> Failure {
    config_error(format!("config: {path}: {message}")).with_field(path)
}

/// The string at `path` (`provider.api_style`, `provider.extra_headers[0][1]` as
/// serde_path_to_error spells it) in `value`, when there is one.
fn string_at<'v>(value: &'v Value, path: &serde_path_to_error::Path) -> Option<&'v str> {
    use serde_path_to_error::Segment;
    path.iter()
        .try_fold(value, |value, segment| match segment {
            Segment::Map { key } => value.get(key.as_str()),
            Segment::Seq { index } => value.get(*index),
            Segment::Enum { .. } | Segment::Unknown => Some(value),
        })
        .and_then(Value::as_str)
}

/// Parses a config document, resolving `provider.api_key_env` with `env` (a map in tests).
#[cfg(test)]
pub(crate) fn parse(json: &str, env: impl Fn(&str) -> Option<String>) -> Result<Config, Failure> {
    parse_with_policy(json, env).map(|(config, _)| config)
}

/// Parses a config document and its `policy` when it has one, resolving `provider.api_key_env`
/// with `env` (the process environment in production, a map in tests).
pub(crate) fn parse_with_policy(
    json: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(Config, Option<AgentPolicy>), Failure> {
    let mut value: Value = serde_json::from_str(json).map_err(|e| config_error(format!("config is not JSON: {e}")))?;
    let policy = match value.as_object_mut().and_then(|o| o.remove("policy")) {
        None | Some(Value::Null) => None,
        Some(policy) => Some(parse_policy(policy)?),
    };
    let provider = value
        .get_mut("provider")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| config_error("config: `provider` is missing or not an object").with_field("provider"))?;
    let key_env = match provider.remove("api_key_env") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(name),
        // Not shown: a key may have been pasted here as a number or an object.
        Some(_) => {
            return Err(field_error(
                "provider.api_key_env",
                "must be the name of an environment variable (a string)",
            ))
        }
    };
    if let Some(name) = key_env {
        // A key pasted where its variable's name belongs: say so without repeating it.
        if secret::looks_like_secret(&name) || !secret::is_var_name(&name) {
            return Err(field_error(
                "provider.api_key_env",
                "must be the NAME of an environment variable (letters, digits, _), not the key itself \
                 (the value is not shown: it may be a key); put the key in a variable and give its name",
            ));
        }
        if provider.get("api_key").is_some_and(|k| !k.is_null()) {
            return Err(
                config_error("config: give provider.api_key or provider.api_key_env, not both")
                    .with_field("provider.api_key_env"),
            );
        }
        let key = env(&name).ok_or_else(|| {
            field_error(
                "provider.api_key_env",
                format!("names the environment variable {name:?}, which is not set"),
            )
        })?;
        provider.insert("api_key".to_owned(), Value::String(key));
    }
    let config: Config = serde_path_to_error::deserialize(value.clone()).map_err(|e| {
        let path = e.path().to_string();
        // serde quotes a refused string in its message (`unknown variant "sk-..."`): when that
        // string may be a key, the field is named without it.
        if string_at(&value, e.path()).is_some_and(secret::looks_like_secret) {
            return field_error(&path, "invalid value (not shown: it looks like a key)");
        }
        field_error(&path, e.into_inner())
    })?;
    reject_unknown_fields(&value, &config)?;
    check_values(&config)?;
    Ok((config, policy))
}

/// Fails on the first field of `given` that `Config` does not have (a typo such as `max_step`
/// would otherwise be ignored and its default used). The fields `Config` has are those it writes
/// back: every field serializes, except the API key.
fn reject_unknown_fields(given: &Value, config: &Config) -> Result<(), Failure> {
    let known = serde_json::to_value(config)
        .map_err(|e| config_error(format!("config: cannot be written back as JSON: {e}")))?;
    unknown_field(given, &known, "").map_or(Ok(()), |path| {
        // A key pasted as a field's name is not shown either.
        let path = if path.split('.').any(secret::looks_like_secret) {
            let parent = path.rsplit_once('.').map_or("", |(parent, _)| parent);
            format!(
                "{parent}{}(a name that looks like a key, not shown)",
                if parent.is_empty() { "" } else { "." }
            )
        } else {
            path
        };
        Err(field_error(&path, "unknown field (docs/ffi.md lists the fields)"))
    })
}

/// The path of the first member of `given` missing from `known`, descending into objects.
fn unknown_field(given: &Value, known: &Value, prefix: &str) -> Option<String> {
    let (Value::Object(given), Value::Object(known)) = (given, known) else {
        return None;
    };
    given.iter().find_map(|(name, value)| {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match known.get(name) {
            Some(known) => unknown_field(value, known, &path),
            // Read, never written back (keys stay out of anything serialized).
            None if path == "provider.api_key" => None,
            None => Some(path),
        }
    })
}

/// Values that would make every request (or every turn) fail are refused here, naming the field,
/// rather than at the first turn with a less clear error.
fn check_values(config: &Config) -> Result<(), Failure> {
    let positive: [(&str, u64); 8] = [
        ("max_steps", config.max_steps.into()),
        (
            "idle_timeout_ms",
            u64::try_from(config.idle_timeout.as_millis()).unwrap_or(u64::MAX),
        ),
        ("retry.max_attempts", config.retry.max_attempts.into()),
        ("provider.max_tokens", config.provider.max_tokens.into()),
        (
            "provider.max_event_bytes",
            u64::try_from(config.provider.max_event_bytes).unwrap_or(u64::MAX),
        ),
        ("provider.max_response_bytes", config.provider.max_response_bytes),
        ("compaction.context_window", config.compaction.context_window),
        ("max_image_dimension", config.max_image_dimension.into()),
    ];
    if let Some((field, _)) = positive.iter().find(|(_, value)| *value == 0) {
        return Err(field_error(field, "must be at least 1, got 0"));
    }
    let threshold = config.compaction.threshold;
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(field_error(
            "compaction.threshold",
            format!("must be a fraction of the context window above 0 and at most 1, got {threshold}"),
        ));
    }
    Ok(())
}

/// Builds a config from a JSON document (the shape is in docs/ffi.md), for example
/// `{"provider": {"api_style": "anthropic-messages", "base_url": "https://api.anthropic.com",
/// "model": "claude-sonnet-4-5", "api_key_env": "ANTHROPIC_API_KEY"}}`.
///
/// Errors: `PANTO_ERR_NULL`, `PANTO_ERR_UTF8`, and `PANTO_ERR_CONFIG` whose message names the
/// offending field (`config: provider.api_style: unknown variant ...`), or says which variable
/// `api_key_env` named that is not set; `panto_error_field` gives the field's path. A value that
/// looks like a key (pasted into `api_key_env` or `api_style`, say) is never repeated in the
/// message: the field is named without it.
///
/// Ownership: `json` is borrowed for the call only. `*out` receives an owned config on success
/// (on failure it is left as it was), freed with `panto_config_free`. Thread safety: callable from any thread (it reads
/// the environment).
///
/// # Safety
/// `json` must be NULL or a NUL-terminated string; `out` and `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_config_new_json(
    json: *const c_char,
    out: *mut *mut panto_config,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `out` and `err` NULL or writable.
    unsafe { HandOut::required(out, "out", err) }.guard(|| {
        // SAFETY: the contract makes `json` NULL or NUL-terminated.
        let json = unsafe { crate::cstr::arg(json, "json") }?;
        let (config, policy) = parse_with_policy(&json, |name| std::env::var(name).ok())?;
        Ok(panto_config { config, policy })
    })
}

/// Frees a config. `panto_config_free(NULL)` does nothing. Agents made with it keep their own
/// copy.
///
/// Thread safety: callable from any thread, once per config.
///
/// # Safety
/// `config` must be NULL or a config from `panto_config_new_json` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_config_free(config: *mut panto_config) {
    // SAFETY: the caller gives up a live config handle (or NULL).
    unsafe { free(config) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_policy_is_checked_and_its_errors_name_the_field() {
        let base = r#"{"provider":{"api_style":"openai-chat","base_url":"http://h/v1","model":"m"}"#;
        let with = |policy: &str| format!("{base}, \"policy\": {policy}}}");
        let (_, policy) = parse_with_policy(
            &with(
                r#"{"deny": ["bash(rm *)", "git__push*"], "allow": ["git__log"], "approval": "read-only",
                      "hooks": [{"match": "git__comm*", "command": "true"}]}"#,
            ),
            no_env,
        )
        .unwrap();
        let policy = policy.unwrap();
        assert_eq!(policy.hooks.len(), 1);
        assert_eq!(policy.hooks[0].timeout, panto_core::DEFAULT_HOOK_TIMEOUT);
        assert_eq!(policy.toolbox.policy().approval(), Approval::ReadOnly);
        assert!(parse_with_policy(&format!("{base}}}"), no_env).unwrap().1.is_none());
        for (policy, field) in [
            (r#"{"deny": ["read", "bash(rm"]}"#, "policy.deny[1]"),
            (r#"{"allow": ["rm"]}"#, "policy.allow[0]"),
            (r#"{"hooks": [{"match": "bash", "command": " "}]}"#, "policy.hooks[0]"),
            (
                r#"{"hooks": [{"match": "bash", "command": "x", "timeout_secs": 0}]}"#,
                "policy.hooks[0]",
            ),
            (r#"{"hooks": [{"match": "bash", "comand": "x"}]}"#, "policy.hooks[0]"),
            (r#"{"aprove": "auto"}"#, "policy"),
        ] {
            let e = parse_with_policy(&with(policy), no_env).unwrap_err();
            assert_eq!(e.code, PANTO_ERR_CONFIG);
            assert!(
                e.message.starts_with(&format!("config: {field}")),
                "{policy}: {}",
                e.message
            );
        }
    }

    #[test]
    fn api_key_env_is_resolved() {
        let json = r#"{"provider":{"api_style":"anthropic-messages","base_url":"http://h","model":"m",
                      "api_key_env":"MY_KEY"}, "retry": {"max_attempts": 1}}"#;
        let config = parse(json, |name| (name == "MY_KEY").then(|| "sk-123".to_owned())).unwrap();
        assert_eq!(config.provider.api_key, "sk-123");
        assert_eq!(config.retry.max_attempts, 1);

        let e = parse(json, no_env).unwrap_err();
        assert_eq!(e.code, PANTO_ERR_CONFIG);
        assert!(e.message.contains("\"MY_KEY\", which is not set"), "{}", e.message);
    }

    #[test]
    fn cache_settings_are_read_and_a_bad_one_is_named() {
        let json = r#"{"provider":{"api_style":"openai-chat","base_url":"http://h/v1","model":"m",
                      "cache":"off","cache_ttl":"1h","prompt_cache_key":true}}"#;
        let config = parse(json, no_env).unwrap();
        assert_eq!(config.provider.cache, panto_core::CacheMode::Off);
        assert_eq!(config.provider.cache_ttl, panto_core::CacheTtl::OneHour);
        assert!(config.provider.prompt_cache_key);
        let bad = r#"{"provider":{"api_style":"openai-chat","base_url":"h","model":"m","cache":"always"}}"#;
        let e = parse(bad, no_env).unwrap_err();
        assert!(
            e.message
                .starts_with("config: provider.cache: unknown variant `always`"),
            "{}",
            e.message
        );
    }

    #[test]
    fn errors_name_the_field() {
        let bad_style = r#"{"provider":{"api_style":"smoke-signals","base_url":"h","model":"m"}}"#;
        let e = parse(bad_style, no_env).unwrap_err();
        assert!(
            e.message.starts_with("config: provider.api_style: unknown variant"),
            "{}",
            e.message
        );

        let missing = r#"{"provider":{"api_style":"openai-chat","base_url":"h"}}"#;
        let e = parse(missing, no_env).unwrap_err();
        assert!(e.message.contains("missing field `model`"), "{}", e.message);

        let e = parse("{\"provider\": ", no_env).unwrap_err();
        assert!(e.message.starts_with("config is not JSON: EOF"), "{}", e.message);

        let both =
            r#"{"provider":{"api_style":"openai-chat","base_url":"h","model":"m","api_key":"k","api_key_env":"K"}}"#;
        let e = parse(both, |_| Some("x".into())).unwrap_err();
        assert!(e.message.contains("not both"), "{}", e.message);

        let e = parse(r#"{"retry":{}}"#, no_env).unwrap_err();
        assert!(e.message.contains("`provider` is missing"), "{}", e.message);
    }

    fn with(extra: &str) -> String {
        format!(r#"{{"provider":{{"api_style":"openai-chat","base_url":"h","model":"m","api_key":"k"}}{extra}}}"#)
    }

    #[test]
    fn unknown_fields_are_named() {
        for (extra, field) in [
            (r#","max_step":5"#, "config: max_step: unknown field"),
            (
                r#","retry":{"max_attempt":2}"#,
                "config: retry.max_attempt: unknown field",
            ),
            (
                r#","compaction":{"treshold":0.5}"#,
                "config: compaction.treshold: unknown field",
            ),
        ] {
            let e = parse(&with(extra), no_env).unwrap_err();
            assert_eq!(e.code, PANTO_ERR_CONFIG);
            assert!(e.message.starts_with(field), "{extra}: {}", e.message);
        }
        let e = parse(
            r#"{"provider":{"api_style":"openai-chat","base_url":"h","model":"m","modle":"x"}}"#,
            no_env,
        )
        .unwrap_err();
        assert!(
            e.message.starts_with("config: provider.modle: unknown field"),
            "{}",
            e.message
        );
        // Every documented field, the key and the C ABI's key variable are known.
        let full = r#"{"provider":{"api_style":"anthropic-messages","base_url":"h","model":"m",
            "api_key_env":"K","reasoning":"off","max_tokens":10,"extra_headers":[["x-a","b"]],
            "max_event_bytes":100,"max_response_bytes":1000},
            "retry":{"max_attempts":5,"base_delay_ms":500,"max_delay_ms":60000},
            "compaction":{"enabled":true,"context_window":200000,"threshold":0.8,
                          "keep_recent_tokens":20000,"compaction_prompt":"p"},
            "max_steps":50,"idle_timeout_ms":120000,"max_image_dimension":1568}"#;
        parse(full, |_| Some("k".into())).unwrap();
        parse(&with(""), no_env).unwrap();
    }

    #[test]
    fn values_that_break_every_request_are_named() {
        for (extra, message) in [
            (
                r#","idle_timeout_ms":0"#,
                "config: idle_timeout_ms: must be at least 1, got 0",
            ),
            (r#","max_steps":0"#, "config: max_steps: must be at least 1, got 0"),
            (
                r#","retry":{"max_attempts":0}"#,
                "config: retry.max_attempts: must be at least 1",
            ),
            (
                r#","compaction":{"context_window":0}"#,
                "config: compaction.context_window: must be",
            ),
            (
                r#","compaction":{"threshold":7}"#,
                "config: compaction.threshold: must be a fraction",
            ),
            (
                r#","compaction":{"threshold":0}"#,
                "config: compaction.threshold: must be a fraction",
            ),
            (
                r#","max_image_dimension":0"#,
                "config: max_image_dimension: must be at least 1",
            ),
        ] {
            let e = parse(&with(extra), no_env).unwrap_err();
            assert_eq!(e.code, PANTO_ERR_CONFIG);
            assert!(e.message.starts_with(message), "{extra}: {}", e.message);
        }
        let e = parse(
            r#"{"provider":{"api_style":"openai-chat","base_url":"h","model":"m","max_tokens":0}}"#,
            no_env,
        )
        .unwrap_err();
        assert!(
            e.message.starts_with("config: provider.max_tokens: must be at least 1"),
            "{}",
            e.message
        );
        parse(&with(r#","compaction":{"threshold":1}"#), no_env).unwrap();
    }

    #[test]
    fn a_key_pasted_into_a_name_is_refused_naming_the_field_without_the_key() {
        let key = "sk-ant-api03-AbCdEf0123456789";
        for (json, field) in [
            (
                format!(
                    r#"{{"provider":{{"api_style":"openai-chat","base_url":"h","model":"m","api_key_env":"{key}"}}}}"#
                ),
                "provider.api_key_env",
            ),
            (
                format!(r#"{{"provider":{{"api_style":"{key}","base_url":"h","model":"m"}}}}"#),
                "provider.api_style",
            ),
            (
                format!(r#"{{"provider":{{"api_style":"openai-chat","base_url":"h","model":"m","cache":"{key}"}}}}"#),
                "provider.cache",
            ),
            (
                format!(r#"{{"provider":{{"api_style":"openai-chat","base_url":"h","model":"m","{key}":1}}}}"#),
                "provider.",
            ),
        ] {
            // Even when the environment holds a variable of that name.
            let e = parse(&json, |_| Some("x".into())).unwrap_err();
            assert_eq!(e.code, PANTO_ERR_CONFIG);
            assert!(e.message.starts_with(&format!("config: {field}")), "{}", e.message);
            assert!(!e.message.contains("0123456789"), "the key is repeated: {}", e.message);
            assert!(e.detail.field.as_deref().is_some_and(|f| f.starts_with(field)));
            assert!(!e.detail.field.unwrap().contains("0123456789"));
        }
        // A name that is no key is still shown, to find the typo by.
        let e = parse(&with_env("MY_KEY"), no_env).unwrap_err();
        assert!(e.message.contains("\"MY_KEY\", which is not set"), "{}", e.message);
        assert_eq!(e.detail.field.as_deref(), Some("provider.api_key_env"));
    }

    fn with_env(name: &str) -> String {
        format!(r#"{{"provider":{{"api_style":"openai-chat","base_url":"h","model":"m","api_key_env":"{name}"}}}}"#)
    }

    #[test]
    fn errors_carry_the_field_path() {
        let e = parse(&with(r#","retry":{"max_attempts":0}"#), no_env).unwrap_err();
        assert_eq!(e.detail.field.as_deref(), Some("retry.max_attempts"));
        let e = parse(&with(r#","retry":{"max_attempt":2}"#), no_env).unwrap_err();
        assert_eq!(e.detail.field.as_deref(), Some("retry.max_attempt"));
        let e = parse(
            r#"{"provider":{"api_style":"smoke","base_url":"h","model":"m"}}"#,
            no_env,
        )
        .unwrap_err();
        assert_eq!(e.detail.field.as_deref(), Some("provider.api_style"));
        assert!(
            e.message.contains("`smoke`"),
            "a value that is no key is shown: {}",
            e.message
        );
        let e = parse("[", no_env).unwrap_err();
        assert_eq!(e.detail.field, None);
    }
}
