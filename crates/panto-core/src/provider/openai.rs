//! (Being written; see the provider helper.)

use std::collections::VecDeque;

use super::{Decoder, ProviderEvent, ProviderRequest};
use crate::config::ProviderConfig;
use crate::error::Result;

pub(crate) fn endpoint(_base_url: &str) -> String {
    todo!()
}

pub(crate) fn headers(_config: &ProviderConfig) -> Vec<(String, String)> {
    todo!()
}

pub(crate) fn request_body(_req: &ProviderRequest<'_>) -> serde_json::Value {
    todo!()
}

#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {}

impl Decoder for OpenAiDecoder {
    fn on_event(&mut self, _event: &str, _data: &str, _offset: u64, _out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        todo!()
    }
    fn on_eof(&mut self, _out: &mut VecDeque<ProviderEvent>) -> Result<()> {
        todo!()
    }
    fn is_done(&self) -> bool {
        todo!()
    }
}
