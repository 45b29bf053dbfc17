//! When and how often a failed provider request is retried.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::millis;

/// When and how often a failed provider request is retried.
///
/// Start from [`RetryConfig::default`] and change fields (fields may be added in later versions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct RetryConfig {
    /// Attempts in all, the first included; `1` disables retry.
    pub max_attempts: u32,
    /// The first backoff delay; each later one doubles, with jitter.
    #[serde(with = "millis", rename = "base_delay_ms")]
    pub base_delay: Duration,
    /// The longest delay panto waits, whether from backoff or a `retry-after` header.
    #[serde(with = "millis", rename = "max_delay_ms")]
    pub max_delay: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
        }
    }
}
