//! From a parsed command line to a ready [`Agent`]: the session (new, continued, resumed or
//! picked) in the store [`crate::store`] opened, the model, the tools and the system prompt.

use std::path::PathBuf;
use std::sync::Arc;

use panto_core::store::LoadedBranch;
use panto_core::{Agent, ApiStyle, Conversation, Session};

use crate::config::{Env, Selection, Settings};
use crate::exit::Failure;
use crate::mcp::McpTools;
use crate::store::{OpenStore, StoreLocation};
use crate::tools::{Approval, Gate, Sandbox, ToolName, Toolbox};

/// Which session a run works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    /// A new session.
    New,
    /// The most recent session started in this directory (`-c`), or with `all` of any
    /// directory (`-c --all`).
    Continue {
        /// Of any directory.
        all: bool,
    },
    /// A session by id or unique prefix (`-r ID`), from any directory.
    Resume(String),
    /// A session picked from a numbered list of this directory's sessions (`-r`), or with
    /// `all` of every directory's (`-r --all`).
    Pick {
        /// Among every directory's sessions.
        all: bool,
    },
    /// A new session forked from the end of the active branch of a session by id or unique
    /// prefix (`-r ID --fork`).
    Fork(String),
}

/// Everything the command line decided about a REPL or print-mode run.
#[derive(Debug)]
pub struct Launch {
    /// The configuration.
    pub settings: Settings,
    /// The environment snapshot.
    pub env: Env,
    /// Where the session is kept.
    pub store: StoreLocation,
    /// The session to work in.
    pub choice: SessionChoice,
    /// `-m NAME`.
    pub model: Option<String>,
    /// The built-in tools to offer.
    pub tools: Vec<ToolName>,
    /// `--sandbox`, when given.
    pub sandbox: Option<Sandbox>,
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

/// A session a [`SessionChoice`] named, found and not yet loaded.
pub struct Found {
    session: Session,
    /// Whether the session existed before (resumed, continued, picked or forked).
    existing: bool,
}

impl Found {
    /// The session's id.
    pub fn session_id(&self) -> &str {
        self.session.id()
    }

    /// Whether the session existed before this choice.
    pub fn existing(&self) -> bool {
        self.existing
    }
}

/// Finds the session `choice` names (a new one for [`SessionChoice::New`]; forking happens
/// here) without loading its conversation.
pub async fn find(opened: &OpenStore, choice: &SessionChoice) -> Result<Found, Failure> {
    let (store, place) = (&opened.store, &opened.place);
    let session = match choice {
        SessionChoice::New => {
            return Ok(Found {
                session: Session::create(store.clone()),
                existing: false,
            })
        }
        SessionChoice::Continue { all: true } => Session::latest(store.clone())
            .await?
            .ok_or_else(|| Failure::usage(format!("no session to continue in {place}")))?,
        SessionChoice::Continue { all: false } => {
            let here = working_dir()?;
            let (infos, elsewhere) = crate::sessions::of_dir(store.list().await?, &here);
            match infos.first() {
                // The listing is newest first.
                Some(latest) => opened.resolve(&latest.id).await?,
                None if elsewhere == 0 => return Err(Failure::usage(format!("no session to continue in {place}"))),
                None => return Err(Failure::usage(crate::sessions::nothing_to_continue(&here, elsewhere))),
            }
        }
        SessionChoice::Resume(id) => opened.resolve(id).await?,
        SessionChoice::Pick { all } => {
            let mut infos = store.list().await?;
            let stored = crate::sessions::StoredIds::of(&infos);
            if !*all {
                let (here, elsewhere) = crate::sessions::of_dir(infos, &working_dir()?);
                if let Some(line) = crate::sessions::others_line(elsewhere) {
                    crate::safe::eprint_line(&line);
                }
                infos = here;
            }
            // Filtering as you type also finds sessions by what was said in them: the store's
            // search, run to completion between two keys.
            let searched = store.clone();
            let content = move |filter: &str| -> Vec<String> {
                let query = panto_core::store::SearchQuery::text(filter);
                let hits =
                    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(searched.search(&query)));
                hits.map(|hits| hits.into_iter().map(|hit| hit.session.id).collect())
                    .unwrap_or_default()
            };
            let id = crate::picker::pick(&infos, &stored, Some(&content))?;
            opened.resolve(&id).await?
        }
        SessionChoice::Fork(id) => {
            let source = opened.resolve(id).await?;
            // The end of the active branch is its tip, not the last message the model sees:
            // after a compaction that is the kept tail, and the summary comes after it.
            let Some(at) = source.tree().await?.tip else {
                return Err(Failure::usage(format!(
                    "session {} holds no messages on its active branch: nothing to fork",
                    source.id()
                )));
            };
            source.fork(&at).await?
        }
    };
    Ok(Found {
        session,
        existing: true,
    })
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

/// `-m NAME` where NAME is not a configured alias: checked as `/model NAME` checks it, before a
/// paid request could fail on a misspelt name (a bare 404 from the provider). A name panto's price
/// table knows passes; else the provider's model listing decides, and a provider that cannot say
/// leaves a note.
async fn check_model_name(settings: &Settings, selection: &Selection, notes: &mut Vec<String>) -> Result<(), Failure> {
    let config = settings.agent_config(selection)?;
    match crate::repl::check_model(&settings.pricing(), &config.provider, &selection.provider.name).await {
        crate::repl::ModelVerdict::Known => Ok(()),
        crate::repl::ModelVerdict::Unknown(refusal) => Err(Failure::usage(format!("-m: {refusal}"))),
        crate::repl::ModelVerdict::Unchecked(note) => {
            notes.push(note);
            Ok(())
        }
    }
}

/// Builds the agent: config for `selection`, the tools, and the system prompt (seeded into a new
/// session; replaced in a resumed one only when it changed).
async fn build_agent(
    settings: &Settings,
    session: Session,
    branch: Option<LoadedBranch>,
    selection: &Selection,
    toolbox: &Toolbox,
    mcp: &McpTools,
    notes: &mut Vec<String>,
) -> Result<Agent, Failure> {
    let config = settings.agent_config(selection)?;
    let resumed = branch.is_some();
    let mut agent = match branch {
        Some(branch) => Agent::with_branch(config, session, branch)?,
        None => Agent::new(config, session, None)?,
    };
    // Every call, built-in or MCP, passes the same hooks: deny rules, command hooks, allow
    // rules, approval (the gate asks in `ask` mode).
    crate::tools::install_policy(&mut agent, toolbox, mcp.annotations(), settings.hooks.clone())?;
    mcp.register(&mut agent)?;
    let prompt = crate::prompt::compose(settings, toolbox.cwd())?;
    if !resumed {
        if !prompt.is_empty() {
            agent.add_system_message(prompt).await?;
        }
    } else {
        notes.extend(unsendable_reasoning_note(
            agent.conversation(),
            agent.config().provider.api_style,
        ));
        notes.extend(replace_changed_prompt(&mut agent, prompt).await?);
    }
    Ok(agent)
}

/// Puts `prompt` in effect in a resumed session whose system prompt is another, saying so.
async fn replace_changed_prompt(agent: &mut Agent, prompt: String) -> Result<Option<String>, Failure> {
    let current = agent.conversation().effective_system_blocks().join("\n\n");
    if current == prompt {
        return Ok(None);
    }
    agent.set_system_prompt(prompt).await?;
    Ok(Some(
        "the system prompt changed since this session was last used; the new one is in effect".into(),
    ))
}

/// What resuming the session `agent` already works in does: its system prompt is composed
/// again and put in effect if it changed (a note saying so). The agent stays: a second agent on
/// its session could not write it while this one lives.
pub async fn refresh(settings: &Settings, agent: &mut Agent, toolbox: &Toolbox) -> Result<Vec<String>, Failure> {
    let prompt = crate::prompt::compose(settings, toolbox.cwd())?;
    Ok(replace_changed_prompt(agent, prompt).await?.into_iter().collect())
}

/// What a resumed session loses by going to another API style: the conversation carries over,
/// but reasoning only the API that produced it can read is left out of every request.
fn unsendable_reasoning_note(conversation: &Conversation, style: ApiStyle) -> Option<String> {
    match conversation.reasoning_unsendable_in(style) {
        0 => None,
        n => Some(format!(
            "{n} block{} of another API's encrypted reasoning {} not sent to {style}: the conversation carries over, the model's earlier reasoning does not",
            if n == 1 { "" } else { "s" },
            if n == 1 { "is" } else { "are" },
        )),
    }
}

/// Opens the session of `launch` and builds its agent, with tools working in the current
/// directory and the started MCP servers' tools: what print mode runs.
pub async fn start(launch: &Launch, store: &OpenStore, toolbox: &Toolbox, mcp: &McpTools) -> Result<Ready, Failure> {
    let model = ModelChoice::Choose(launch.model.as_deref());
    open(&launch.settings, store, &launch.choice, model, toolbox, mcp).await
}

/// How `open` picks the model.
pub enum ModelChoice<'a> {
    /// Keep this one (`/new` in the REPL).
    Keep(Box<Selection>),
    /// From the `-m` flag if given, else by the session's last provider identity, else the default.
    Choose(Option<&'a str>),
}

/// Opens the session `choice` names in `store` and builds its agent: the one way a session
/// starts, at launch and on `/new` and `/resume`.
pub async fn open(
    settings: &Settings,
    store: &OpenStore,
    choice: &SessionChoice,
    model: ModelChoice<'_>,
    toolbox: &Toolbox,
    mcp: &McpTools,
) -> Result<Ready, Failure> {
    open_found(settings, find(store, choice).await?, model, toolbox, mcp).await
}

/// Loads the session [`find`] found and builds its agent.
pub async fn open_found(
    settings: &Settings,
    found: Found,
    model: ModelChoice<'_>,
    toolbox: &Toolbox,
    mcp: &McpTools,
) -> Result<Ready, Failure> {
    let Found { session, existing } = found;
    let branch = if existing {
        Some(session.load_branch().await?)
    } else {
        None
    };
    let resumed = existing;
    let mut notes = Vec::new();
    if resumed {
        // Its system prompt is this directory's from now on, and its tools work here.
        notes.extend(crate::sessions::elsewhere_note(&session.info, &working_dir()?));
    }
    let named = matches!(model, ModelChoice::Choose(Some(_)));
    let selection = match model {
        ModelChoice::Keep(selection) => *selection,
        ModelChoice::Choose(flag) => choose_model(settings, &session, resumed, flag, &mut notes)?,
    };
    if named && selection.alias.is_none() {
        check_model_name(settings, &selection, &mut notes).await?;
    }
    let agent = build_agent(settings, session, branch, &selection, toolbox, mcp, &mut notes).await?;
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

/// The sandbox of a run: `--sandbox` if given, else `[tools] sandbox`, else `workspace-write`
/// in print mode with `--approve auto` (nobody watches what runs) and off otherwise.
pub fn sandbox_for(launch: &Launch, print_mode: bool, approval: Approval) -> Sandbox {
    launch
        .sandbox
        .or(launch.settings.tools.sandbox)
        .unwrap_or(if print_mode && approval == Approval::Auto {
            Sandbox::WorkspaceWrite
        } else {
            Sandbox::Off
        })
}

/// The built-in tools of a run, working in the current directory: `[tools]` with the approval
/// mode, the gate that asks in `ask` mode (the approval hook asks it, see
/// `ApprovalHook` in `tools/hook.rs`), and the sandbox. A sandbox this system cannot apply
/// is an error naming the flag that turns it off. `bash_progress` sees bash's output as it runs
/// (the REPL's live tail; print mode has none).
pub fn toolbox(
    launch: &Launch,
    approval: Approval,
    sandbox: Sandbox,
    gate: Arc<Gate>,
    read_only_hint: &str,
    bash_progress: Option<Arc<dyn panto_tools::BashProgress>>,
) -> Result<Toolbox, Failure> {
    let t = &launch.settings.tools;
    let mut options = panto_tools::Options::new(working_dir()?);
    options.tools = Some(launch.tools.clone());
    options.approval = approval;
    options.allow = t.allow.clone();
    options.deny = t.deny.clone();
    options.bash_timeout_secs = t.bash_timeout.as_secs();
    options.max_output_bytes = t.max_output_bytes;
    options.read_roots = t.read_roots.dirs().map(<[_]>::to_vec);
    options.sandbox = sandbox;
    options.sandbox_network = t.sandbox_network;
    options.writable_roots = t.writable_roots.clone();
    options.web_fetch_private = t.web_fetch_private;
    options.scrub_env = launch.settings.key_variables.clone();
    options.prompt = Some(gate);
    options.read_only_hint = read_only_hint.to_owned();
    options.bash_progress = bash_progress;
    Toolbox::new(&options).map_err(|e| match e {
        panto_tools::Error::SandboxUnavailable(_) => Failure::runtime(e.to_string()),
        _ => Failure::usage(e.to_string()),
    })
}
