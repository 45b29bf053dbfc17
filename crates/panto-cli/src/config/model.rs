//! Choosing the model: the default, a `-m NAME`, or the one a resumed session used; and turning
//! the choice into a [`panto_core::Config`].

use panto_core::pricing::{Pricing, PricingRegistry};
use panto_core::wire::{strip_userinfo, ProviderIdentity};
use panto_core::{Config, ProviderConfig, ReasoningEffort, SessionInfo};

use super::{default_context_window, default_model_for, Key, ModelAlias, Provider, Settings};
use crate::exit::Failure;

/// A chosen model: a configured alias, or a wire model name on a provider.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// The alias, when the choice is one.
    pub alias: Option<String>,
    /// The provider.
    pub provider: Provider,
    /// The wire model name.
    pub model: String,
    /// Reasoning effort.
    pub reasoning: ReasoningEffort,
    /// Output token limit, when configured.
    pub max_tokens: Option<u32>,
    /// Context window, when configured.
    pub context_window: Option<u64>,
    /// Configured rates (the built-in table is used otherwise).
    pub pricing: Option<Pricing>,
}

impl Selection {
    /// What to call it: the alias, else the wire model name.
    pub fn label(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.model)
    }

    /// The provider identity a session records for it.
    pub fn wire(&self) -> ProviderIdentity {
        ProviderIdentity::new(
            self.provider.api_style,
            &self.provider.base_url,
            self.model.clone(),
            self.reasoning,
        )
    }

    /// One line for banners and `/model`: `sonnet (claude-sonnet-4-5 via anthropic)`.
    pub fn describe(&self) -> String {
        let mut s = match &self.alias {
            Some(alias) => format!("{alias} ({} via {})", self.model, self.provider.name),
            None => format!("{} (via {})", self.model, self.provider.name),
        };
        if self.reasoning != ReasoningEffort::Off {
            s.push_str(&format!(", reasoning {}", self.reasoning));
        }
        s
    }
}

impl Settings {
    /// The selection an alias stands for. The alias's provider exists: loading checked it.
    pub fn alias_selection(&self, alias: &ModelAlias) -> Option<Selection> {
        let provider = self.provider(&alias.provider)?.clone();
        Some(Selection {
            alias: Some(alias.name.clone()),
            provider,
            model: alias.model.clone(),
            reasoning: alias.reasoning,
            max_tokens: alias.max_tokens,
            context_window: alias.context_window,
            pricing: alias.pricing,
        })
    }

    /// A wire model name on `provider`, with default limits.
    fn wire_selection(provider: &Provider, model: &str, reasoning: ReasoningEffort) -> Selection {
        Selection {
            alias: None,
            provider: provider.clone(),
            model: model.to_owned(),
            reasoning,
            max_tokens: None,
            context_window: None,
            pricing: None,
        }
    }

    /// The model used when nothing else decides: `default_model`, else the first alias in the
    /// file, else the default model of the first built-in provider whose key is set.
    pub fn default_selection(&self) -> Result<Selection, Failure> {
        let alias = match &self.default_model {
            Some(name) => self.alias(name),
            None => self.models.first(),
        };
        if let Some(selection) = alias.and_then(|a| self.alias_selection(a)) {
            return Ok(selection);
        }
        for name in ["anthropic", "openai"] {
            if let Some(p) = self.provider(name).filter(|p| matches!(p.key, Key::Value(_))) {
                return Ok(Self::wire_selection(
                    p,
                    default_model_for(p.api_style),
                    ReasoningEffort::Off,
                ));
            }
        }
        Err(self.no_key_error())
    }

    /// The error for "no provider can be used": names both variables and the config file.
    pub fn no_key_error(&self) -> Failure {
        Failure::usage(format!(
            "no API key: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or configure a provider and model in {}",
            self.config_path_display()
        ))
    }

    /// `-m NAME` or `/model NAME`: a configured alias or, failing that, a wire model name on the
    /// provider `in_use`.
    pub fn named_selection(&self, name: &str, in_use: &Provider) -> Selection {
        match self.alias(name).and_then(|a| self.alias_selection(a)) {
            Some(selection) => selection,
            None => Self::wire_selection(in_use, name, ReasoningEffort::Off),
        }
    }

    /// What a resumed session pre-selects: the alias whose provider identity matches the session's
    /// last one (the first, with a note, when several do); else the session's own model on a
    /// provider with the same style and base URL; else nothing, with a note.
    pub fn session_selection(&self, info: &SessionInfo) -> (Option<Selection>, Option<String>) {
        let Some(wire) = &info.wire else {
            return (None, None);
        };
        // Session identity is provider identity: an alias matches when it would send the same.
        let matched: Vec<Selection> = self
            .models
            .iter()
            .filter_map(|a| self.alias_selection(a))
            .filter(|s| &s.wire() == wire)
            .collect();
        let found = if let Some(first) = matched.first() {
            let note = (matched.len() > 1).then(|| {
                let names: Vec<&str> = matched.iter().map(|s| s.label()).collect();
                format!(
                    "several model aliases match this session's model ({}); using {}",
                    names.join(", "),
                    first.label()
                )
            });
            Some((first.clone(), note))
        } else {
            self.providers
                .iter()
                .find(|p| {
                    p.api_style == wire.api_style && strip_userinfo(&p.base_url) == strip_userinfo(&wire.base_url)
                })
                .map(|p| (Self::wire_selection(p, &wire.model, wire.reasoning), None))
        };
        match found {
            // A provider without its key cannot resume the session: the default model does, and
            // the note says why (rather than refusing to open the session at all).
            Some((selection, _)) if matches!(selection.provider.key, Key::Missing(_)) => {
                let var = match &selection.provider.key {
                    Key::Missing(var) => super::shown_var(var).into_owned(),
                    _ => String::new(),
                };
                (
                    None,
                    Some(format!(
                        "this session used {} via {}, whose key variable {var} is not set; using the default model",
                        wire.model, selection.provider.name
                    )),
                )
            }
            Some((selection, note)) => (Some(selection), note),
            None => (
                None,
                Some(format!(
                    "this session used {} at {}, which no configured provider serves; using the default model",
                    wire.model,
                    strip_userinfo(&wire.base_url)
                )),
            ),
        }
    }

    /// The agent configuration for `selection`. Fails when its provider's key variable is unset.
    pub fn agent_config(&self, selection: &Selection) -> Result<Config, Failure> {
        let provider = &selection.provider;
        let key = match &provider.key {
            Key::Value(k) => k.clone(),
            Key::NotNeeded => String::new(),
            Key::Missing(var) => {
                if self.models.is_empty() && matches!(provider.name.as_str(), "anthropic" | "openai") {
                    return Err(self.no_key_error());
                }
                return Err(Failure::usage(format!(
                    "model {} uses provider {}, but its key variable {} is not set",
                    selection.label(),
                    provider.name,
                    super::shown_var(var)
                )));
            }
        };
        let mut p = ProviderConfig::new(provider.api_style, selection.model.clone())
            .with_base_url(provider.base_url.clone())
            .with_api_key(key);
        p.reasoning = selection.reasoning;
        if let Some(max) = selection.max_tokens {
            p.max_tokens = max;
        }
        p.extra_headers = provider.headers.clone();
        p = p
            .with_cache(provider.cache)
            .with_cache_ttl(provider.cache_ttl)
            .with_prompt_cache_key(provider.prompt_cache_key);
        let mut config = Config::new(p);
        config.retry = self.retry.clone();
        config.compaction = self.compaction.clone();
        config.compaction.context_window = selection
            .context_window
            .unwrap_or_else(|| default_context_window(provider.api_style));
        config.max_steps = self.max_steps;
        config.idle_timeout = self.idle_timeout;
        config.max_image_dimension = self.max_image_dimension;
        config.log_content = self.log_content;
        Ok(config)
    }

    /// The built-in rates plus every alias's configured ones.
    pub fn pricing(&self) -> PricingRegistry {
        let mut registry = PricingRegistry::new();
        for alias in &self.models {
            if let (Some(pricing), Some(selection)) = (alias.pricing, self.alias_selection(alias)) {
                registry.insert(selection.wire(), pricing);
            }
        }
        registry
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use chrono::Utc;
    use panto_core::ApiStyle;

    use super::super::{file, resolve, Env};
    use super::*;

    fn settings(source: &str, env: &[(&str, &str)]) -> Settings {
        let parsed = file::parse(Path::new("/c.toml"), source).unwrap();
        resolve(parsed, Some(PathBuf::from("/c.toml")), source, &Env::from_pairs(env)).unwrap()
    }

    #[test]
    fn zero_config_prefers_anthropic_then_openai() {
        let s = settings("", &[("OPENAI_API_KEY", "o")]);
        let d = s.default_selection().unwrap();
        assert_eq!((d.provider.name.as_str(), d.model.as_str()), ("openai", "gpt-4o"));
        let s = settings("", &[("OPENAI_API_KEY", "o"), ("ANTHROPIC_API_KEY", "a")]);
        assert_eq!(s.default_selection().unwrap().model, "claude-sonnet-4-5");
    }

    #[test]
    fn no_key_names_both_variables_and_the_file() {
        let e = settings("", &[]).default_selection().unwrap_err();
        assert!(e.message.contains("ANTHROPIC_API_KEY"), "{}", e.message);
        assert!(e.message.contains("OPENAI_API_KEY"), "{}", e.message);
        assert!(e.message.contains("/c.toml"), "{}", e.message);
    }

    #[test]
    fn model_flag_falls_back_to_a_wire_name_on_the_provider_in_use() {
        let s = settings("", &[("OPENAI_API_KEY", "o")]);
        let d = s.default_selection().unwrap();
        let m = s.named_selection("gpt-4o-mini", &d.provider);
        assert_eq!(m.alias, None);
        assert_eq!(m.model, "gpt-4o-mini");
        assert_eq!(m.provider.name, "openai");
        let c = s.agent_config(&m).unwrap();
        assert_eq!(c.provider.model, "gpt-4o-mini");
        assert_eq!(c.compaction.context_window, 128_000);
    }

    #[test]
    fn resume_matches_the_alias_by_wire_identity() {
        let s = settings(
            "[models.fast]\nprovider = \"openai\"\nmodel = \"gpt-4o-mini\"\n[models.big]\nprovider = \"openai\"\nmodel = \"gpt-4o\"\n",
            &[("OPENAI_API_KEY", "o")],
        );
        let mut info = SessionInfo::new("0190", Utc::now());
        info.wire = Some(ProviderIdentity {
            api_style: ApiStyle::OpenAiChat,
            base_url: super::super::providers::OPENAI_API_ROOT.into(),
            model: "gpt-4o".into(),
            reasoning: ReasoningEffort::Off,
        });
        let (sel, note) = s.session_selection(&info);
        assert_eq!(sel.unwrap().alias.as_deref(), Some("big"));
        assert_eq!(note, None);
        // The first alias is the default, so the match is what changes the model.
        assert_eq!(s.default_selection().unwrap().alias.as_deref(), Some("fast"));
    }

    #[test]
    fn resume_with_a_provider_lacking_its_key_falls_back_to_the_default_with_a_note() {
        // Recorded against Anthropic; only the OpenAI key is set now.
        let s = settings("", &[("OPENAI_API_KEY", "o")]);
        let mut info = SessionInfo::new("0190", Utc::now());
        info.wire = Some(ProviderIdentity {
            api_style: ApiStyle::AnthropicMessages,
            base_url: super::super::providers::ANTHROPIC_API_ROOT.into(),
            model: "claude-sonnet-4-5".into(),
            reasoning: ReasoningEffort::Off,
        });
        let (sel, note) = s.session_selection(&info);
        assert!(sel.is_none());
        let note = note.unwrap();
        assert!(
            note.contains("ANTHROPIC_API_KEY") && note.contains("using the default model"),
            "{note}"
        );
    }

    #[test]
    fn missing_key_of_a_configured_provider_names_the_variable() {
        let s = settings(
            "[providers.p]\napi_style = \"openai-chat\"\napi_key_env = \"P_KEY\"\n[models.m]\nprovider = \"p\"\nmodel = \"x\"\n",
            &[],
        );
        let e = s.agent_config(&s.default_selection().unwrap()).unwrap_err();
        assert!(e.message.contains("P_KEY"), "{}", e.message);
    }

    #[test]
    fn a_key_written_as_the_variable_name_is_not_repeated() {
        // A valid variable name, but the shape of a key: the message hides it.
        let s = settings(
            "[providers.p]\napi_style = \"openai-chat\"\napi_key_env = \"gsk_Xq81nVmPa0Lr7TzY2bWc\"\n[models.m]\nprovider = \"p\"\nmodel = \"x\"\n",
            &[],
        );
        let e = s.agent_config(&s.default_selection().unwrap()).unwrap_err();
        assert!(e.message.contains("looks like a key"), "{}", e.message);
        assert!(!e.message.contains("Xq81"), "{}", e.message);
        assert!(!format!("{s:?}").contains("Xq81"));
    }

    #[test]
    fn alias_pricing_overrides_the_builtin_table() {
        let s = settings(
            "[models.m]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\npricing = { input = 1.0, output = 2.0 }\n",
            &[("ANTHROPIC_API_KEY", "a")],
        );
        let sel = s.default_selection().unwrap();
        assert_eq!(s.pricing().get(&sel.wire()).unwrap().output, 2.0);
    }

    #[test]
    fn a_session_recorded_with_credentials_in_its_base_url_still_matches_and_prices() {
        let s = settings(
            "[providers.proxy]\napi_style = \"openai-chat\"\nbase_url = \"http://user:pw-secret@proxy/v1\"\napi_key_env = \"P_KEY\"\n\
             [models.m]\nprovider = \"proxy\"\nmodel = \"gpt-4o\"\npricing = { input = 1.0, output = 2.0 }\n",
            &[("P_KEY", "k")],
        );
        let sel = s.default_selection().unwrap();
        assert_eq!(sel.wire().base_url, "http://proxy/v1", "what a new session records");
        for recorded in ["http://user:pw-secret@proxy/v1", "http://proxy/v1"] {
            let wire = ProviderIdentity {
                api_style: ApiStyle::OpenAiChat,
                base_url: recorded.into(),
                model: "gpt-4o".into(),
                reasoning: ReasoningEffort::Off,
            };
            assert_eq!(s.pricing().get(&wire).map(|p| p.output), Some(2.0), "{recorded}");
            let mut info = SessionInfo::new("0190", Utc::now());
            info.wire = Some(wire.clone());
            assert_eq!(
                s.session_selection(&info).0.unwrap().alias.as_deref(),
                Some("m"),
                "{recorded}"
            );
            // A wire model no alias names still finds its provider, and a note never shows the
            // credentials.
            info.wire = Some(ProviderIdentity {
                model: "gpt-4o-mini".into(),
                ..wire.clone()
            });
            assert_eq!(
                s.session_selection(&info).0.unwrap().provider.name,
                "proxy",
                "{recorded}"
            );
            info.wire = Some(ProviderIdentity {
                base_url: recorded.replace("proxy", "gone"),
                ..wire
            });
            let note = s.session_selection(&info).1.unwrap();
            assert!(note.contains("http://gone/v1") && !note.contains("pw-secret"), "{note}");
        }
    }
}
