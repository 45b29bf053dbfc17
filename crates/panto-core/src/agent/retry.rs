//! Backoff between provider attempts.

use std::time::Duration;

use rand::Rng;

use crate::config::RetryConfig;
use crate::error::Error;

/// The delay before attempt `next_attempt` (2 for the first retry) after `error`: what the
/// provider's `retry-after` asked for if it said, else exponential backoff from `base_delay` with
/// ±25% jitter; never more than `max_delay`.
pub(crate) fn delay(config: &RetryConfig, next_attempt: u32, error: &Error) -> Duration {
    if let Error::Http {
        retry_after: Some(after),
        ..
    } = error
    {
        return (*after).min(config.max_delay);
    }
    let exponent = next_attempt.saturating_sub(2).min(20);
    let base = config.base_delay.saturating_mul(1u32 << exponent);
    let jitter = rand::thread_rng().gen_range(0.75..=1.25);
    base.mul_f64(jitter).min(config.max_delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_wins_but_is_capped() {
        let c = RetryConfig {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(2),
        };
        let http = |after| Error::Http {
            status: 429,
            error_type: None,
            message: String::new(),
            retry_after: Some(after),
        };
        assert_eq!(delay(&c, 2, &http(Duration::from_millis(1))), Duration::from_millis(1));
        assert_eq!(delay(&c, 2, &http(Duration::from_secs(90))), Duration::from_secs(2));
        let d = delay(&c, 4, &Error::IdleTimeout(Duration::ZERO));
        assert!(
            d >= Duration::from_millis(300) && d <= Duration::from_millis(500),
            "{d:?}"
        );
    }
}
