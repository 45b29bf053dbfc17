//! The built-in tools and the one policy chain in front of every tool come from `panto-tools`;
//! what stays here is the interactive part of approval: the gate that asks on the terminal in
//! `ask` mode ([`Gate`], the chain's `Prompt`), and installing the chain on an agent (`hook.rs`).

mod approval;
mod hook;

pub use approval::{answer_key as approval_key, Answer, Asker, Gate};
pub use hook::install as install_policy;
pub use panto_tools::process::{running, Running};
pub use panto_tools::{parse_list, Approval, Roots, Sandbox, ToolName, Toolbox};
