//! The model listing: `panto models` and `/models`.

use std::io::Write;

use crate::config::{default_context_window, shown_var, Key, Settings};
use crate::cost::thousands;

/// The rows of `panto models` and `/models`: every alias, the default marked with `*`.
pub fn models_rows(settings: &Settings, current: Option<&str>) -> Vec<String> {
    let default = settings.default_selection().ok();
    let default_label = default.as_ref().map(|d| d.label().to_owned());
    let mut rows = Vec::new();
    for alias in &settings.models {
        let mark = if Some(alias.name.as_str()) == default_label.as_deref() {
            "*"
        } else {
            " "
        };
        let now = if Some(alias.name.as_str()) == current {
            " (in use)"
        } else {
            ""
        };
        let style = settings.provider(&alias.provider).map(|p| p.api_style);
        let window = alias
            .context_window
            .or_else(|| style.map(default_context_window))
            .unwrap_or_default();
        let price = alias
            .pricing
            .map(|p| format!("  ${}/${} per Mtok", p.input, p.output))
            .unwrap_or_default();
        let key = match settings.provider(&alias.provider).map(|p| &p.key) {
            Some(Key::Missing(var)) => format!("  (key {} not set)", shown_var(var)),
            _ => String::new(),
        };
        rows.push(format!(
            "{mark} {:<14} {} via {}, reasoning {}, {} tokens context{price}{key}{now}",
            alias.name,
            alias.model,
            alias.provider,
            alias.reasoning,
            thousands(window)
        ));
    }
    if settings.models.is_empty() {
        match default {
            Some(d) => rows.push(format!(
                "* {} via {} (no aliases configured; the default for {})",
                d.model,
                d.provider.name,
                d.provider.key_env.as_deref().map_or("this provider".into(), shown_var)
            )),
            None => rows.push(format!(
                "no models: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or configure [models.NAME] in {}",
                settings.config_path_display()
            )),
        }
    }
    rows
}

/// `panto models`.
pub fn print_models(settings: &Settings) {
    let mut out = std::io::stdout().lock();
    for row in models_rows(settings, None) {
        let _ = writeln!(out, "{row}");
    }
    let _ = out.flush();
}
