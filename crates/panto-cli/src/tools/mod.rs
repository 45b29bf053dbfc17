//! The built-in tools come from `panto-tools`; what stays here is the interactive part of
//! approval: the gate that asks on the terminal in `ask` mode ([`Gate`], the tools' `Prompt`),
//! and the hook that puts it in front of every tool, built-in or MCP (`hook::ApprovalHook`).

mod approval;
mod hook;

pub use approval::{parse_answer as approval_answer, Answer, Asker, Gate, GatedTool};
pub use hook::install as install_policy;
pub use panto_tools::{
    file_kind, open_regular, parse_list, read_bounded, running, Approval, OpenRefusal, Roots, Running, Sandbox,
    ToolName, Toolbox,
};
