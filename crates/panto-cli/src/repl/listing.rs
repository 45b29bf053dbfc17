//! `/tools`, `/mcp` and `/system`: what the agent has, and its system prompt.

use super::Repl;
use crate::tools::{Approval, ToolName};

impl Repl<'_> {
    pub(super) fn system(&mut self, args: &str) {
        if args.is_empty() {
            let prompt = self.agent.conversation().effective_system_blocks().join("\n\n");
            if prompt.is_empty() {
                self.note("(no system prompt)");
            } else {
                self.note(&prompt);
            }
            return;
        }
        match self.rt.block_on(self.agent.set_system_prompt(args)) {
            Ok(()) => self.note("system prompt replaced"),
            Err(e) => self.error(&format!("cannot set the system prompt: {e}")),
        }
    }

    /// `/status`: what this REPL works with, one fact a line.
    pub(super) fn show_status(&self) {
        let provider = &self.agent.config().provider;
        let session = if self.saving {
            format!(
                "{} ({} messages)",
                self.short_id(self.agent.session_id()),
                self.agent.conversation().messages.len()
            )
        } else {
            format!(
                "not saved (--no-session), {} messages",
                self.agent.conversation().messages.len()
            )
        };
        let rows = [
            ("model", self.selection.describe()),
            (
                "provider",
                format!(
                    "{} at {}",
                    self.selection.provider.name,
                    panto_core::wire::strip_userinfo(&provider.base_url)
                ),
            ),
            ("directory", self.cwd.display().to_string()),
            ("session", session),
            ("approval", self.approval().to_string()),
            ("sandbox", self.toolbox.sandbox().mode().to_string()),
            ("MCP servers", self.mcp.summary()),
        ];
        for (label, value) in rows {
            let line = format!("{label:<12} {}", self.screen.deco.safe(&value));
            self.note(&crate::render::wrap::cut(&line, self.screen.columns()));
        }
    }

    /// `/mcp`: the configured MCP servers, their status and tools.
    pub(super) fn list_mcp(&self) {
        let lines = self.rt.block_on(crate::mcp::render(&self.mcp, Some(self.approval())));
        if lines.is_empty() {
            self.note(&format!(
                "no MCP servers configured (add [mcp.servers.NAME] tables to {})",
                self.settings.config_path_display()
            ));
        }
        // A row a line, cut to the terminal: a wrapped row would break the columns.
        for line in lines {
            self.note(&crate::render::wrap::cut(&line, self.screen.columns()));
        }
    }

    pub(super) fn list_tools(&self) {
        let decls = self.agent.tools();
        if decls.is_empty() {
            self.note("no tools (started with --tools none)");
        }
        for decl in decls {
            let approval = match ToolName::parse(&decl.name) {
                Ok(t) if !t.needs_approval() => "runs freely".to_owned(),
                Ok(t) => match self.approval() {
                    Approval::Auto => "runs without asking (--approve auto)".to_owned(),
                    Approval::ReadOnly => "refused (read-only)".to_owned(),
                    Approval::Ask if self.gate.always_allowed(t.as_str()) => "always allowed".to_owned(),
                    Approval::Ask => "asks first".to_owned(),
                },
                Err(_) => match self.mcp.tool(&decl.name) {
                    Some((_, tool)) if tool.annotations.is_read_only() => "runs freely (read-only)".to_owned(),
                    Some(_) => match self.approval() {
                        Approval::Auto => "runs without asking (--approve auto)".to_owned(),
                        Approval::ReadOnly => "refused (read-only)".to_owned(),
                        Approval::Ask if self.mcp.asks(&decl.name) == Some(false) => "always allowed".to_owned(),
                        Approval::Ask => "asks first".to_owned(),
                    },
                    None => String::new(),
                },
            };
            let summary = decl.description.split(". ").next().unwrap_or("").trim_end_matches('.');
            let label = format!("  {:<6}", decl.name);
            for line in
                crate::render::wrap::labelled(&label, &format!("{summary} — {approval}"), 9, self.screen.columns())
            {
                self.note(&line);
            }
        }
    }
}
