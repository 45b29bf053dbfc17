//! How the agent runs: the system prompt, `[retry]`, `[compaction]`, and the limits of a turn
//! (`max_steps`, `idle_timeout_secs`, `max_image_dimension`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use panto_core::{ApiStyle, CompactionConfig, RetryConfig};

use super::file::{CompactionEntry, FileConfig, RetryEntry, Source};
use super::Env;
use crate::exit::Failure;

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

/// The limits of a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Provider requests per turn.
    pub max_steps: u32,
    /// Idle timeout of a response.
    pub idle_timeout: Duration,
    /// Image resize limit.
    pub max_image_dimension: u32,
}

/// `system_prompt` or `system_prompt_file` (relative to the config file's directory), not both.
pub fn prompt(file: &FileConfig, env: &Env, base_dir: &Path, source: &Source<'_>) -> Result<PromptSource, Failure> {
    Ok(match (&file.system_prompt, &file.system_prompt_file) {
        (Some(_), Some(f)) => return Err(source.error(f.span(), "set system_prompt or system_prompt_file, not both")),
        (Some(t), None) => PromptSource::Text(t.get_ref().clone()),
        (None, Some(f)) => PromptSource::File(
            env.expand(f.get_ref(), base_dir)
                .map_err(|e| source.error(f.span(), format!("system_prompt_file {e}")))?,
        ),
        (None, None) => PromptSource::Default,
    })
}

/// `[retry]` over panto-core's defaults.
pub fn retry(section: &RetryEntry, source: &Source<'_>) -> Result<RetryConfig, Failure> {
    let mut retry = RetryConfig::default();
    if let Some(n) = source.at_least(
        section.max_attempts.as_ref(),
        1,
        "retry.max_attempts",
        " (1 disables retry)",
    )? {
        retry.max_attempts = n;
    }
    if let Some(ms) = section.base_delay_ms {
        retry.base_delay = Duration::from_millis(ms);
    }
    if let Some(ms) = section.max_delay_ms {
        retry.max_delay = Duration::from_millis(ms);
    }
    Ok(retry)
}

/// `[compaction]` over panto-core's defaults (its `context_window` is set per model).
pub fn compaction(section: &CompactionEntry, source: &Source<'_>) -> Result<CompactionConfig, Failure> {
    let mut compaction = CompactionConfig::default();
    if let Some(enabled) = section.enabled {
        compaction.enabled = enabled;
    }
    if let Some(t) = &section.threshold {
        let value = *t.get_ref();
        if !(value > 0.0 && value <= 1.0) {
            return Err(source.error(
                t.span(),
                format!("compaction.threshold must be a fraction in (0, 1], got {value}"),
            ));
        }
        compaction.threshold = value;
    }
    if let Some(k) = section.keep_recent_tokens {
        compaction.keep_recent_tokens = k;
    }
    if let Some(p) = &section.prompt {
        compaction.compaction_prompt = p.clone();
    }
    Ok(compaction)
}

/// `max_steps`, `idle_timeout_secs` and `max_image_dimension` over panto-core's defaults.
pub fn limits(file: &FileConfig, source: &Source<'_>) -> Result<Limits, Failure> {
    let defaults = panto_core::Config::new(panto_core::ProviderConfig::new(ApiStyle::OpenAiChat, "").with_base_url(""));
    Ok(Limits {
        max_steps: source
            .at_least(file.max_steps.as_ref(), 1, "max_steps", "")?
            .unwrap_or(defaults.max_steps),
        idle_timeout: source
            .at_least(file.idle_timeout_secs.as_ref(), 1, "idle_timeout_secs", "")?
            .map_or(defaults.idle_timeout, Duration::from_secs),
        max_image_dimension: source
            .at_least(file.max_image_dimension.as_ref(), 16, "max_image_dimension", " pixels")?
            .unwrap_or(defaults.max_image_dimension),
    })
}
