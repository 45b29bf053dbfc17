//! From a parsed command line to a ready [`Agent`]: the store, the session (new, continued,
//! resumed or picked), the model, the tools and the system prompt.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use panto_core::{Agent, Conversation, Error, NullStore, Session, SessionStore};
use panto_store_fs::FileSystemJSONLStore;
use panto_store_postgres::PostgresStore;

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
    /// A PostgreSQL URL: sessions go there instead of the session directory (ignored with
    /// `--no-session`).
    pub store_url: Option<String>,
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

impl Launch {
    /// Where sessions are, for messages (a database URL without its password).
    pub fn store_place(&self) -> String {
        store_place(self.store_url.as_deref(), self.session_dir.as_deref())
    }
}

/// The store a launch writes to: PostgreSQL with a store URL, else the session directory, or
/// [`NullStore`] with `--no-session`.
pub async fn store_for(launch: &Launch) -> Result<Arc<dyn SessionStore>, Failure> {
    open_store(launch.store_url.as_deref(), launch.session_dir.as_deref()).await
}

/// The store at `url` (PostgreSQL) or else in `dir`; with neither, [`NullStore`].
pub async fn open_store(url: Option<&str>, dir: Option<&Path>) -> Result<Arc<dyn SessionStore>, Failure> {
    Ok(match (dir, url) {
        (None, _) => NullStore::shared(),
        (Some(_), Some(url)) => PostgresStore::connect(url).await?,
        (Some(dir), None) => open_fs_store(dir),
    })
}

/// Where sessions are, for messages: the database (without its password), the directory, or
/// none.
pub fn store_place(url: Option<&str>, dir: Option<&Path>) -> String {
    match (dir, url) {
        (None, _) => "(no session store)".to_owned(),
        (Some(_), Some(url)) => redact_password(url),
        (Some(dir), None) => dir.display().to_string(),
    }
}

/// `postgres://user:secret@host/db` as `postgres://user:***@host/db`: a database password is as
/// secret as an API key and must not reach a terminal or a log.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((credentials, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

/// Finds the session `choice` names and loads its conversation (`None` for a new session).
async fn open_session(
    store: &Arc<dyn SessionStore>,
    choice: &SessionChoice,
    place: &str,
) -> Result<(Session, Option<Conversation>), Failure> {
    let session = match choice {
        SessionChoice::New => return Ok((Session::create(store.clone()), None)),
        SessionChoice::Continue => Session::latest(store.clone())
            .await?
            .ok_or_else(|| Failure::usage(format!("no session to continue in {place}")))?,
        SessionChoice::Resume(id) => resolve(store, id, place).await?,
        SessionChoice::Pick => {
            let infos = store.list().await?;
            let id = crate::sessions::pick(&infos)?;
            resolve(store, &id, place).await?
        }
    };
    let conversation = session.load().await?;
    Ok((session, Some(conversation)))
}

/// The session whose id is or starts with `id`.
pub async fn resolve(store: &Arc<dyn SessionStore>, id: &str, place: &str) -> Result<Session, Failure> {
    let id = id.trim();
    match Session::resolve(store.clone(), id).await {
        Ok(Some(session)) => Ok(session),
        Ok(None) => Err(Failure::usage(format!("no session matches {id:?} in {place}"))),
        Err(Error::InvalidSessionId(_)) => Err(Failure::usage(format!(
            "{id:?} is not a session id or prefix (session ids are lowercase hex and `-`)"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// The model for a session: `-m NAME` if given (resolved against the provider the session or the
/// default would use), else the model the resumed session used, else the default.
fn choose_model(
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
async fn build_agent(
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

/// Opens the session of `launch` and builds its agent, with tools working in the current
/// directory: what print mode runs.
pub async fn start(launch: &Launch, store: &Arc<dyn SessionStore>, gate: Arc<Gate>) -> Result<Ready, Failure> {
    let ctx = tool_context(&launch.settings, working_dir()?, gate);
    let model = ModelChoice::Choose(launch.model.as_deref());
    open(
        &launch.settings,
        store,
        &launch.store_place(),
        &launch.choice,
        model,
        &launch.tools,
        &ctx,
    )
    .await
}

/// How `open` picks the model.
pub enum ModelChoice<'a> {
    /// Keep this one (`/new` in the REPL).
    Keep(Box<Selection>),
    /// From the `-m` flag if given, else by the session's last wire identity, else the default.
    Choose(Option<&'a str>),
}

/// Opens the session `choice` names in `store` and builds its agent: the one way a session
/// starts, at launch and on `/new` and `/resume`.
pub async fn open(
    settings: &Settings,
    store: &Arc<dyn SessionStore>,
    place: &str,
    choice: &SessionChoice,
    model: ModelChoice<'_>,
    tools: &[ToolName],
    ctx: &ToolContext,
) -> Result<Ready, Failure> {
    let (session, conversation) = open_session(store, choice, place).await?;
    let resumed = conversation.is_some();
    let mut notes = Vec::new();
    let selection = match model {
        ModelChoice::Keep(selection) => *selection,
        ModelChoice::Choose(flag) => choose_model(settings, &session, resumed, flag, &mut notes)?,
    };
    let agent = build_agent(settings, session, conversation, &selection, tools, ctx, &mut notes).await?;
    Ok(Ready {
        agent,
        selection,
        resumed,
        notes,
    })
}

/// The process's working directory, where the tools work.
pub fn working_dir() -> Result<PathBuf, Failure> {
    std::env::current_dir().map_err(|e| Failure::runtime(format!("cannot read the working directory: {e}")))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_passwords_never_reach_messages() {
        assert_eq!(
            redact_password("postgres://panto:s3cret@db:5432/panto"),
            "postgres://panto:***@db:5432/panto"
        );
        assert_eq!(
            redact_password("postgres://panto@db/panto"),
            "postgres://panto@db/panto"
        );
        assert!(!store_place(Some("postgres://u:pw@h/d"), Some(Path::new("/x"))).contains("pw"));
        assert_eq!(store_place(None, None), "(no session store)");
    }
}
