//! A provider's identity: what a session records of the provider that produced a message (its
//! protocol, base URL, model and reasoning effort, never credentials), and the one rule that keeps
//! credentials out of a base URL that is shown or stored.

pub use crate::identity::{strip_userinfo, ProviderIdentity};
