//! `[models.ALIAS]` and `default_model`: the configured model aliases.

use std::collections::BTreeMap;

use panto_core::pricing::Pricing;
use panto_core::ReasoningEffort;
use toml::Spanned;

use super::file::{ModelEntry, Source};
use super::Provider;
use crate::exit::Failure;

/// A configured model alias.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelAlias {
    /// The alias.
    pub name: String,
    /// The provider's name.
    pub provider: String,
    /// The wire model name.
    pub model: String,
    /// Reasoning effort.
    pub reasoning: ReasoningEffort,
    /// Output token limit.
    pub max_tokens: Option<u32>,
    /// Context window.
    pub context_window: Option<u64>,
    /// Rates.
    pub pricing: Option<Pricing>,
}

/// The aliases in file order, each checked against the `providers` it may name.
pub fn resolve(
    models_section: &BTreeMap<String, Spanned<ModelEntry>>,
    providers: &[Provider],
    source: &Source<'_>,
) -> Result<Vec<ModelAlias>, Failure> {
    let mut entries: Vec<_> = models_section.iter().collect();
    entries.sort_by_key(|(_, e)| e.span().start);
    let mut models = Vec::new();
    for (name, entry) in entries {
        let e = entry.get_ref();
        let provider = e.provider.get_ref();
        if !providers.iter().any(|p| &p.name == provider) {
            let known: Vec<&str> = providers.iter().map(|p| p.name.as_str()).collect();
            return Err(source.error(
                e.provider.span(),
                format!(
                    "models.{name}.provider names unknown provider {provider:?} (known: {})",
                    known.join(", ")
                ),
            ));
        }
        if e.model.get_ref().trim().is_empty() {
            return Err(source.error(e.model.span(), format!("models.{name}.model must not be empty")));
        }
        let max_tokens = source.at_least(e.max_tokens.as_ref(), 1, &format!("models.{name}.max_tokens"), "")?;
        let context_window = source.at_least(
            e.context_window.as_ref(),
            1,
            &format!("models.{name}.context_window"),
            "",
        )?;
        let pricing = match &e.pricing {
            Some(p) => {
                let r = p.get_ref();
                let rates = [r.input, r.output, r.cache_read, r.cache_write];
                if rates.iter().any(|x| !x.is_finite() || *x < 0.0) {
                    return Err(source.error(
                        p.span(),
                        format!(
                            "models.{name}.pricing rates must be non-negative numbers (dollars per million tokens)"
                        ),
                    ));
                }
                Some(Pricing {
                    cache_write_1h: r.cache_write_1h,
                    ..Pricing::new(r.input, r.output, r.cache_read, r.cache_write)
                })
            }
            None => None,
        };
        models.push(ModelAlias {
            name: name.clone(),
            provider: provider.clone(),
            model: e.model.get_ref().trim().to_owned(),
            reasoning: e.reasoning,
            max_tokens,
            context_window,
            pricing,
        });
    }
    Ok(models)
}

/// `default_model`, which must name one of `models`.
pub fn default_model(
    default_model: Option<&Spanned<String>>,
    models: &[ModelAlias],
    source: &Source<'_>,
) -> Result<Option<String>, Failure> {
    Ok(match default_model {
        Some(d) => {
            let name = d.get_ref();
            if !models.iter().any(|m| &m.name == name) {
                let known: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
                let known = if known.is_empty() {
                    "none are configured; add a [models.NAME] table".to_owned()
                } else {
                    format!("aliases: {}", known.join(", "))
                };
                return Err(source.error(
                    d.span(),
                    format!("default_model {name:?} is not a configured model alias ({known})"),
                ));
            }
            Some(name.clone())
        }
        None => None,
    })
}
