//! The agent: owns the conversation, the session and the tools, and persists what it generates.

mod branch;
mod compaction;
mod dispatch;
mod files;
mod hooks;
mod partial;
mod retry;
mod steer;
mod stream;
mod typed;
mod writer;

use std::sync::Arc;

use crate::config::Config;
use crate::conversation::{ContentBlock, Conversation, Message, Role, ToolResultContent};
use crate::error::{Error, Result};
use crate::registry::ToolRegistry;
use crate::store::{seam::PersistentMessage, session::Session};
use crate::tool::{Tool, ToolDecl, ToolSource};

pub use compaction::CompactionResult;
pub use files::FileRestore;
pub use hooks::{AfterTool, BeforeTool, Hook, DEFAULT_HOOK_TIMEOUT};
pub use steer::{QueueMode, RunControl};
pub use stream::{Stream, StreamState};

/// The text of the synthetic result given to a tool call that never got one: the process died or
/// the turn was cancelled before the tool finished.
pub(crate) const INTERRUPTED_RESULT: &str = "interrupted: the tool call did not complete (the turn was cancelled or the process stopped before the tool ran to the end)";

/// What the user sends to start a turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserMessage {
    /// The prompt text.
    pub text: String,
    /// Attached images as encoded bytes (PNG, JPEG, GIF or WebP); resized like tool images.
    pub images: Vec<Vec<u8>>,
    /// Text attached to the prompt rather than typed (a shell command's output, a file's
    /// content): each is a text block of its own after `text`, so that what labels and previews
    /// show of the prompt ([`Message::prompt_text`](crate::Message::prompt_text)) is what was
    /// typed.
    pub attached: Vec<String>,
}

impl UserMessage {
    /// A text-only message.
    pub fn text(text: impl Into<String>) -> Self {
        UserMessage {
            text: text.into(),
            images: Vec::new(),
            attached: Vec::new(),
        }
    }
}

impl From<&str> for UserMessage {
    fn from(text: &str) -> Self {
        UserMessage::text(text)
    }
}

impl From<String> for UserMessage {
    fn from(text: String) -> Self {
        UserMessage::text(text)
    }
}

/// An agent: one conversation with one model, its tools, and the session that persists it.
///
/// The agent persists everything it adds to the conversation: the user message on submit, system
/// prompt changes, each assistant message and each tool-result message as it completes, and
/// compactions. A brand-new session is written only once its first assistant message exists, so a
/// first request that fails leaves nothing behind. Tool results are written while the request
/// that carries them travels, and are stored before anything of its response is seen.
///
/// Dropping the agent ends its hold on the session: the store lets go of what it keeps for
/// writing it (the file store closes the locked file, PostgreSQL releases the advisory lock), so
/// another agent (in this process or another) can resume it. While the agent lives, the session
/// is its own from its first write on: a second writer gets [`Error::SessionInUse`], be it
/// another process, another store instance, or another agent on the same store (agent/writer.rs).
/// Only its write fails; reading the session (a listing, [`Agent::resume`]) never waits.
///
/// Agents made from clones of one [`Config`] share its provider's HTTP client, so their
/// requests reuse each other's connections.
///
/// ```no_run
/// # async fn demo() -> panto_core::Result<()> {
/// use panto_core::{Agent, ApiStyle, Config, NullStore, ProviderConfig, Session};
/// let config = Config::new(
///     ProviderConfig::new(ApiStyle::AnthropicMessages, "claude-sonnet-4-5")
///         .with_base_url("http://127.0.0.1:8080")
///         .with_api_key("key"),
/// );
/// let mut agent = Agent::new(config, Session::create(NullStore::shared()), None)?;
/// let mut stream = agent.run("Say hello".into());
/// while let Some(event) = stream.next().await? {
///     let _ = event; // render it
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Agent {
    config: Config,
    conversation: Conversation,
    session: Session,
    registry: ToolRegistry,
    /// `conversation.messages[..persisted]` have been handed to the session.
    persisted: usize,
    /// Whether the store holds this session yet (a new one is written only from its first
    /// assistant message on).
    stored: bool,
    /// The entry id of each message of the conversation, index for index, once stored (`None`
    /// for one not stored yet, or adopted without its ids).
    message_ids: Vec<Option<String>>,
    /// The embedder's hooks around tool calls, requests and turns (agent/hooks.rs).
    hooks: hooks::Hooks,
    /// The agent's hold on its session, taken by its first write (agent/writer.rs).
    writer: Option<writer::Writer>,
}

// The store keeps the session open for writing while the agent lives (see the type docs).
impl Drop for Agent {
    fn drop(&mut self) {
        // A held writer lets the session go as it drops. An agent that never wrote lets go of
        // what the store may hold for the session all the same (a claim taken before the
        // agent was made), unless another live agent of this process writes it.
        match self.writer.take() {
            Some(writer) => drop(writer),
            None if self.stored && !writer::Writer::is_held(&self.session.store, self.session.id()) => {
                self.session.store.release_writer(self.session.id());
            }
            None => {}
        }
    }
}

impl Agent {
    /// An agent for `session`, adopting `conversation` (usually what [`Session::load`] returned)
    /// or, with `None`, starting an empty one.
    ///
    /// A session that already holds messages needs its conversation: without it the agent would
    /// append a new chain to a log whose history the model never saw. That case is
    /// [`Error::SessionNotLoaded`]; [`Agent::resume`] loads and adopts in one call.
    ///
    /// A conversation given for a session that holds no messages (one built by hand for
    /// [`Session::create`]) is new to the store: it is written into the session with the
    /// agent's first write ([`Agent::flush`], or the first turn), as the agent's own messages are.
    ///
    /// An adopted conversation whose last assistant message has tool calls without results gets a
    /// synthetic error result for each ("interrupted"), so the next request is valid for both
    /// APIs; it is persisted with the next write (or [`Agent::flush`]).
    ///
    /// The check reads `session`'s snapshot here, and the store itself at the first write (a
    /// stale clone of a session another agent has written since is refused then, before anything
    /// is written).
    ///
    /// Errors: [`Error::SessionNotLoaded`], [`Error::HttpClient`].
    pub fn new(config: Config, session: Session, conversation: Option<Conversation>) -> Result<Self> {
        if conversation.is_none() && session.info.message_count > 0 {
            return Err(Error::SessionNotLoaded {
                id: session.info.id.clone(),
                message_count: session.info.message_count,
            });
        }
        // Built now (once per provider config, shared by its clones) so that a client that
        // cannot be built fails here rather than at the first request.
        config.provider.http_client()?;
        let adopted = conversation.is_some();
        // Messages given for a session that holds none are not in the store yet: all of them
        // are written by the first write.
        let fresh = session.info.message_count == 0 && conversation.as_ref().is_some_and(|c| !c.messages.is_empty());
        let (conversation, persisted) = repair(conversation.unwrap_or_default());
        let persisted = if fresh { 0 } else { persisted };
        Ok(Agent {
            stored: (adopted && !fresh) || session.info.message_count > 0,
            config,
            conversation,
            session,
            registry: ToolRegistry::default(),
            persisted,
            message_ids: Vec::new(),
            hooks: hooks::Hooks::default(),
            writer: None,
        })
    }

    /// An agent that continues `session`: its stored conversation is loaded and adopted (see
    /// [`Agent::new`] for the repair of an interrupted turn). `session` is usually what
    /// [`Session::resolve`] or [`Session::latest`] returned.
    ///
    /// Errors: [`Error::SessionNotFound`] when the store has no such session, the store's own
    /// errors ([`Error::CorruptSession`], [`Error::Store`]), [`Error::HttpClient`].
    pub async fn resume(config: Config, session: Session) -> Result<Self> {
        let branch = session.load_branch().await?;
        Agent::with_branch(config, session, branch)
    }

    /// Registers a tool. Its declared name must be 1 to 64 characters of `[A-Za-z0-9_-]` and not
    /// already taken.
    pub fn register_tool(&mut self, tool: Arc<dyn Tool>) -> Result<()> {
        self.registry.register_tool(tool)
    }

    /// Registers every tool of a source, each offered as `<source>__<tool>` encoded into the wire
    /// alphabet. All or nothing.
    pub fn register_tool_source(&mut self, source: Arc<dyn ToolSource>) -> Result<()> {
        self.registry.register_source(source)
    }

    /// Removes the tool with this offered name, or every tool of the source with this name. Returns
    /// whether anything was removed.
    pub fn unregister_tool(&mut self, name: &str) -> bool {
        self.registry.unregister(name)
    }

    /// Adds a hook after those already added: it sees every later tool call, request and turn
    /// end (see [`Hook`] for what it may decide and what happens when it fails).
    pub fn add_hook(&mut self, hook: Arc<dyn Hook>) {
        self.hooks.push(hook);
    }

    /// The tools offered to the model, under their offered names.
    pub fn tools(&self) -> Vec<ToolDecl> {
        self.registry.decls().to_vec()
    }

    /// Swaps provider, model and policies between turns. Tools and conversation are untouched.
    pub fn set_config(&mut self, config: Config) {
        self.config = config;
    }

    /// The current configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Starts a turn: the message is added to the conversation now, and persisted by the stream's
    /// first [`Stream::next`].
    pub fn run(&mut self, message: UserMessage) -> Stream<'_> {
        Stream::new(self, message)
    }

    /// Retries a turn that failed (a provider error after the agent's own retries, a step limit,
    /// a cancel) without sending the user's message again: a failed turn keeps its user message
    /// (and any tool results) in the conversation, persisted, so [`Agent::run`] with the same
    /// text would hold the prompt twice. The turn goes on from where the conversation stands, as
    /// a new turn (a fresh step count) that streams like [`Agent::run`]'s.
    ///
    /// Fails with [`Error::NothingToRetry`] unless [`Conversation::awaits_answer`], so also when
    /// the last turn ended with the model's answer, even a partial one salvaged from a cut
    /// stream: send a new message then.
    pub fn retry(&mut self) -> Result<Stream<'_>> {
        if !self.conversation.awaits_answer() {
            return Err(Error::NothingToRetry);
        }
        Ok(Stream::resumed(self))
    }

    /// The conversation.
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    /// The conversation, for surgery. Changes made here are in memory only; messages appended at
    /// the end are persisted with the agent's next write. To change the system prompt durably use
    /// [`Agent::add_system_message`] or [`Agent::set_system_prompt`].
    pub fn conversation_mut(&mut self) -> &mut Conversation {
        &mut self.conversation
    }

    /// Appends to the system prompt, and persists the change.
    pub async fn add_system_message(&mut self, text: impl Into<String>) -> Result<()> {
        self.conversation.add_system_message(text);
        self.flush().await
    }

    /// Replaces the whole system prompt, and persists the change.
    pub async fn set_system_prompt(&mut self, text: impl Into<String>) -> Result<()> {
        self.conversation.replace_system_message(text);
        self.flush().await
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        self.session.id()
    }

    /// The session (its info is kept current as the agent appends).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Writes to the session every message the agent holds that is not stored yet (for example the
    /// closers of an interrupted turn, or what a dropped stream left). A brand-new session is not
    /// written before its first assistant message.
    pub async fn flush(&mut self) -> Result<()> {
        self.persist(false).await
    }

    /// Makes sure the agent holds its session before writing it: the first write takes it, and
    /// [`Error::SessionInUse`] means another live agent of this process writes it.
    ///
    /// An agent that believes its session empty asks the store once, on taking it: a [`Session`]
    /// value is a snapshot, so a clone taken before another agent wrote the session still says
    /// it holds nothing, and appending would start a chain whose history the model never saw.
    /// That is [`Error::SessionNotLoaded`], and nothing is written.
    async fn hold_session(&mut self) -> Result<()> {
        if self.writer.is_some() {
            return Ok(());
        }
        let writer = writer::Writer::take(&self.session.store, self.session.id())?;
        if !self.stored {
            if let Some(info) = self.session.store.info(self.session.id()).await? {
                if info.message_count > 0 {
                    return Err(Error::SessionNotLoaded {
                        id: info.id,
                        message_count: info.message_count,
                    });
                }
            }
        }
        self.writer = Some(writer);
        Ok(())
    }

    /// Persists `messages[self.persisted..]`. With `force`, a new session is written even without
    /// an assistant message (compaction needs its history stored to point into it).
    pub(crate) async fn persist(&mut self, force: bool) -> Result<()> {
        // Surgery may have shortened the conversation below what was persisted.
        self.persisted = self.persisted.min(self.conversation.messages.len());
        let fresh = &self.conversation.messages[self.persisted..];
        if fresh.is_empty() {
            return Ok(());
        }
        if !self.stored && !force && !fresh.iter().any(|m| m.role == Role::Assistant) {
            return Ok(());
        }
        self.hold_session().await?;
        let fresh = &self.conversation.messages[self.persisted..];
        let tools = self.registry.decls();
        let wire = self.config.provider.wire_identity();
        let batch: Vec<PersistentMessage<'_>> = fresh
            .iter()
            .map(|message| PersistentMessage {
                message,
                usage: message.usage,
                wire: (message.role != Role::System).then_some(&wire),
                conversation: &self.conversation,
                tools_available: &tools,
                compaction: None,
            })
            .collect();
        let ids = self.session.append(&batch).await?;
        self.message_ids.resize(self.persisted, None);
        self.message_ids.extend(ids.into_iter().map(Some));
        self.persisted = self.conversation.messages.len();
        self.stored = true;
        Ok(())
    }

    /// Image `index` of a user message, checked, resized and encoded.
    fn process_image(&self, index: usize, bytes: &[u8]) -> Result<ContentBlock> {
        let processed =
            crate::image::process(bytes, self.config.max_image_dimension).map_err(|e| Error::InvalidImage {
                index,
                message: e.to_string(),
            })?;
        Ok(ContentBlock::Image {
            media_type: processed.media_type.to_owned(),
            data: processed.data,
        })
    }
}

/// An adopted conversation, repaired by [`close_dangling_tool_calls`], and how many of its
/// messages are already stored.
fn repair(mut conversation: Conversation) -> (Conversation, usize) {
    let original_len = conversation.messages.len();
    let persisted = match close_dangling_tool_calls(&mut conversation) {
        // Closers at the end are new messages: persist them with the next write.
        Some(at) if at == original_len => original_len,
        // A log cannot take a message in the middle; the closer lives in memory only and is
        // added again on every resume, which keeps each request valid.
        Some(_) => conversation.messages.len(),
        None => original_len,
    };
    (conversation, persisted)
}

/// Gives every tool call of the last assistant message that has no result a synthetic error
/// result, so the conversation is valid for both APIs. Returns where the closing message was
/// inserted, if anything was missing.
pub(crate) fn close_dangling_tool_calls(conversation: &mut Conversation) -> Option<usize> {
    let last_assistant = conversation.messages.iter().rposition(|m| m.role == Role::Assistant)?;
    let answered: Vec<&str> = conversation.messages[last_assistant + 1..]
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    let closers: Vec<ContentBlock> = conversation.messages[last_assistant]
        .tool_uses()
        .filter(|(id, _, _)| !answered.contains(id))
        .map(|(id, _, _)| ContentBlock::ToolResult {
            tool_use_id: id.to_owned(),
            content: vec![ToolResultContent::Text {
                text: INTERRUPTED_RESULT.to_owned(),
            }],
            is_error: true,
        })
        .collect();
    if closers.is_empty() {
        return None;
    }
    // Results must directly follow the assistant message (both APIs require it), so they go in a
    // message right after it; anything after (a user prompt typed before the crash) follows.
    conversation
        .messages
        .insert(last_assistant + 1, Message::new(Role::User, closers));
    Some(last_assistant + 1)
}
