//! From a parsed command line to a ready [`Agent`]: the store, the session (new, continued,
//! resumed or picked), the model, the tools and the system prompt.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use panto_core::{Agent, Conversation, Error, NullStore, Session, SessionStore};
use panto_store_fs::FileSystemJSONLStore;

use crate::config::{Env, Selection, Settings};
use crate::exit::Failure;
use crate::tools::{self, Gate, ToolContext, ToolName};

/// Which session a run works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    /// A new session.
    New,
    /// The most recent session (`-c`).
    Continue,
    /// A session by id or unique prefix (`-r ID`).
    Resume(String),
    /// A session picked from a numbered list (`-r`).
    Pick,
}

/// Everything the command line decided about a REPL or print-mode run.
#[derive(Debug)]
pub struct Launch {
    /// The configuration.
    pub settings: Settings,
    /// The environment snapshot.
    pub env: Env,
    /// The session directory; `None` with `--no-session`.
    pub session_dir: Option<PathBuf>,
    /// The session to work in.
    pub choice: SessionChoice,
    /// `-m NAME`.
    pub model: Option<String>,
    /// The built-in tools to offer.
    pub tools: Vec<ToolName>,
}

/// An agent ready for turns, and how it came to be.
#[derive(Debug)]
pub struct Ready {
    /// The agent.
    pub agent: Agent,
    /// The model in use.
    pub selection: Selection,
    /// Whether an existing session was resumed.
    pub resumed: bool,
    /// Things the user should know (a model choice that was ambiguous, a prompt that changed).
    pub notes: Vec<String>,
}

/// The filesystem store over `dir`. Creates nothing until the first append.
pub fn open_fs_store(dir: &Path) -> Arc<FileSystemJSONLStore> {
    FileSystemJSONLStore::new(dir)
}

/// The store a launch writes to: the filesystem one, or [`NullStore`] with `--no-session`.
pub fn store_for(launch: &Launch) -> Arc<dyn SessionStore> {
    match &launch.session_dir {
        Some(dir) => open_fs_store(dir),
        None => NullStore::shared(),
    }
}

/// Where sessions are, for messages.
fn dir_text(launch_dir: Option<&Path>) -> String {
    launch_dir.map_or_else(|| "(no session store)".to_owned(), |d| d.display().to_string())
}

/// Finds the session `choice` names and loads its conversation (`None` for a new session).
pub async fn open_session(
    store: &Arc<dyn SessionStore>,
    choice: &SessionChoice,
    dir: Option<&Path>,
) -> Result<(Session, Option<Conversation>), Failure> {
    let session = match choice {
        SessionChoice::New => return Ok((store.clone().create(), None)),
        SessionChoice::Continue => store
            .clone()
            .latest()
            .await?
            .ok_or_else(|| Failure::usage(format!("no session to continue in {}", dir_text(dir))))?,
        SessionChoice::Resume(id) => resolve(store, id, dir).await?,
        SessionChoice::Pick => {
            let infos = store.list().await?;
            let id = crate::sessions::pick(&infos)?;
            resolve(store, &id, dir).await?
        }
    };
    let conversation = session.load().await?;
    Ok((session, Some(conversation)))
}

/// The session whose id is or starts with `id`.
async fn resolve(store: &Arc<dyn SessionStore>, id: &str, dir: Option<&Path>) -> Result<Session, Failure> {
    let id = id.trim();
    match store.clone().resolve(id).await {
        Ok(Some(session)) => Ok(session),
        Ok(None) => Err(Failure::usage(format!(
            "no session matches {id:?} in {}",
            dir_text(dir)
        ))),
        Err(Error::InvalidSessionId(_)) => Err(Failure::usage(format!(
            "{id:?} is not a session id or prefix (session ids are lowercase hex and `-`)"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// The model for a session: `-m NAME` if given (resolved against the provider the session or the
/// default would use), else the model the resumed session used, else the default.
pub fn choose_model(
    settings: &Settings,
    session: &Session,
    resumed: bool,
    flag: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Selection, Failure> {
    let from_session = if resumed {
        let (selection, note) = settings.session_selection(&session.info);
        notes.extend(note);
        selection
    } else {
        None
    };
    let base = match from_session {
        Some(s) => s,
        None => settings.default_selection()?,
    };
    Ok(match flag {
        Some(name) => settings.named_selection(name.trim(), &base.provider),
        None => base,
    })
}

/// Builds the agent: config for `selection`, the tools, and the system prompt (seeded into a new
/// session; replaced in a resumed one only when it changed).
pub async fn build_agent(
    settings: &Settings,
    session: Session,
    conversation: Option<Conversation>,
    selection: &Selection,
    tool_names: &[ToolName],
    ctx: &ToolContext,
    notes: &mut Vec<String>,
) -> Result<Agent, Failure> {
    let config = settings.agent_config(selection)?;
    let resumed = conversation.is_some();
    let mut agent = Agent::new(config, session, conversation)?;
    for tool in tools::builtin(tool_names, ctx) {
        agent.register_tool(tool)?;
    }
    let prompt = crate::prompt::compose(settings, &ctx.cwd)?;
    if !resumed {
        if !prompt.is_empty() {
            agent.add_system_message(prompt).await?;
        }
    } else {
        let current = agent.conversation().effective_system_blocks().join("\n\n");
        if current != prompt {
            agent.set_system_prompt(prompt).await?;
            notes.push("the system prompt changed since this session was last used; the new one is in effect".into());
        }
    }
    Ok(agent)
}

/// Opens the session of `launch` and builds its agent.
pub async fn start(launch: &Launch, store: &Arc<dyn SessionStore>, gate: Arc<Gate>) -> Result<Ready, Failure> {
    let cwd =
        std::env::current_dir().map_err(|e| Failure::runtime(format!("cannot read the working directory: {e}")))?;
    let (session, conversation) = open_session(store, &launch.choice, launch.session_dir.as_deref()).await?;
    let resumed = conversation.is_some();
    let mut notes = Vec::new();
    let selection = choose_model(&launch.settings, &session, resumed, launch.model.as_deref(), &mut notes)?;
    let ctx = tool_context(&launch.settings, cwd, gate);
    let agent = build_agent(
        &launch.settings,
        session,
        conversation,
        &selection,
        &launch.tools,
        &ctx,
        &mut notes,
    )
    .await?;
    Ok(Ready {
        agent,
        selection,
        resumed,
        notes,
    })
}

/// The tool context for `cwd`.
pub fn tool_context(settings: &Settings, cwd: PathBuf, gate: Arc<Gate>) -> ToolContext {
    ToolContext {
        cwd,
        gate,
        bash_timeout: settings.tools.bash_timeout,
        max_output_bytes: settings.tools.max_output_bytes,
    }
}
