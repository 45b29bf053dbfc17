//! The built-in tools come from `panto-tools`; what stays here is the interactive part of
//! approval: the gate that asks on the terminal in `ask` mode ([`Gate`], the tools' `Prompt`).

mod approval;

pub use approval::{parse_answer as approval_answer, Answer, Asker, Gate, GatedTool};
pub use panto_tools::{
    file_kind, open_regular, parse_list, read_bounded, running, Approval, OpenRefusal, Roots, Running, Sandbox,
    ToolName, Toolbox,
};
