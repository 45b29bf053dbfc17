//! Cases about the listing: its order (recency), its exact info, and `latest`.

use std::sync::Arc;

use panto_core::store::PersistentMessage;
use panto_core::store::LAST_USER_MESSAGE_CHARS;
use panto_core::{ContentBlock, Conversation, Message, Role, Session, SessionStore, StopReason, SystemMode};

use super::driver::{ids, info_of, must_list, tick, Driver};
use super::messages::{anthropic_wire, assistant, local_openai_wire, reply, system, tool_result, tools, user, PNG_1X1};

/// Sessions list newest first by their last human prompt, else by creation; assistant replies
/// do not count as activity.
pub async fn list_orders_by_last_human_prompt(store: Arc<dyn SessionStore>) {
    const CASE: &str = "list_orders_by_last_human_prompt";
    let mut a = Driver::new(&store, None);
    a.append(vec![system("A's prompt", SystemMode::Append)]).await;
    tick().await;
    let mut b = Driver::new(&store, None);
    b.append(vec![system("B's prompt", SystemMode::Append)]).await;
    tick().await;
    assert_eq!(
        ids(&must_list(&store, CASE).await),
        vec![b.id(), a.id()],
        "{CASE}: without prompts, the later-created session comes first"
    );

    a.append(vec![user("a question in A")]).await;
    tick().await;
    assert_eq!(
        ids(&must_list(&store, CASE).await),
        vec![a.id(), b.id()],
        "{CASE}: a prompt in A moves it first"
    );

    b.append(vec![reply("an assistant message in B")]).await;
    tick().await;
    assert_eq!(
        ids(&must_list(&store, CASE).await),
        vec![a.id(), b.id()],
        "{CASE}: an assistant message is not a prompt and must not move B up"
    );

    b.append(vec![user("a question in B")]).await;
    assert_eq!(
        ids(&must_list(&store, CASE).await),
        vec![b.id(), a.id()],
        "{CASE}: a prompt in B moves it first"
    );
}

/// A resumed session that only gets the synthetic closer for an interrupted tool call keeps its
/// place, its last prompt and its prompt time; only its message count moves.
pub async fn synthetic_closer_does_not_move_a_session_up(store: Arc<dyn SessionStore>) {
    const CASE: &str = "synthetic_closer_does_not_move_a_session_up";
    let mut a = Driver::new(&store, None);
    a.append(vec![user("run the tests")]).await;
    a.append(vec![assistant(
        vec![ContentBlock::ToolUse {
            id: "toolu_interrupted".to_owned(),
            name: "bash".to_owned(),
            input: serde_json::json!({"command": "cargo test"}),
        }],
        StopReason::ToolUse,
    )])
    .await;
    tick().await;
    let mut b = Driver::new(&store, None);
    b.append(vec![user("meanwhile, other work")]).await;
    tick().await;
    let before = info_of(&store, &a.id(), CASE).await;
    assert_eq!(ids(&must_list(&store, CASE).await), vec![b.id(), a.id()], "{CASE}");

    let mut resumed = match Session::resolve(store.clone(), &a.id()).await {
        Ok(Some(s)) => s,
        other => panic!("{CASE}: resolve({}) gave {other:?}", a.id()),
    };
    let closer = tool_result("toolu_interrupted", "interrupted before the tool ran", true);
    let conversation = Conversation {
        messages: vec![closer.clone()],
        metadata: None,
    };
    let tools = tools();
    resumed
        .append(&[PersistentMessage {
            message: &closer,
            usage: None,
            wire: Some(&a.wire),
            conversation: &conversation,
            tools_available: &tools,
            compaction: None,
        }])
        .await
        .unwrap_or_else(|e| panic!("{CASE}: appending the closer failed: {e}"));

    let list = must_list(&store, CASE).await;
    assert_eq!(
        ids(&list),
        vec![b.id(), a.id()],
        "{CASE}: the closer moved the resumed session up"
    );
    let after = &list[1];
    assert_eq!(after.message_count, 3, "{CASE}: message_count");
    assert_eq!(
        after.last_prompt_at, before.last_prompt_at,
        "{CASE}: last_prompt_at changed"
    );
    assert_eq!(after.last_user_message.as_deref(), Some("run the tests"), "{CASE}");
    assert_eq!(after.recency(), before.recency(), "{CASE}: recency changed");
    assert_eq!(
        Session::latest(store.clone())
            .await
            .expect("latest")
            .map(|s| s.id().to_owned()),
        Some(b.id()),
        "{CASE}: latest"
    );
}

/// The listing's message count, last prompt (cut to 200 characters), prompt time and wire
/// identity are exact, and agree with what `Session::append` folded into the session's info.
pub async fn listing_info_is_exact(store: Arc<dyn SessionStore>) {
    const CASE: &str = "listing_info_is_exact";
    let mut d = Driver::new(&store, None);
    d.append(vec![system("sys", SystemMode::Append)]).await;
    let info = info_of(&store, &d.id(), CASE).await;
    assert_eq!(
        (
            info.message_count,
            info.last_prompt_at,
            info.last_user_message.as_deref(),
            info.wire.as_ref()
        ),
        (1, None, None, None),
        "{CASE}: a session holding only a system message"
    );

    // A prompt longer than the limit, in characters that are two bytes each. `Session::append`
    // stamps its info after the store returns, so the store's prompt time lies between the
    // session's stamps of the batch before and of this one.
    let long: String = "é".repeat(LAST_USER_MESSAGE_CHARS + 50);
    let before = d.session.info.modified;
    d.append(vec![user(&long)]).await;
    let after = d.session.info.modified;
    d.append(vec![reply("ok")]).await;
    let info = info_of(&store, &d.id(), CASE).await;
    assert_eq!(info.message_count, 3, "{CASE}: message_count");
    assert_eq!(
        info.last_user_message.as_deref(),
        Some("é".repeat(LAST_USER_MESSAGE_CHARS).as_str()),
        "{CASE}: last_user_message must be the first {LAST_USER_MESSAGE_CHARS} characters"
    );
    let at = info
        .last_prompt_at
        .unwrap_or_else(|| panic!("{CASE}: no last_prompt_at"));
    assert!(
        before <= at && at <= after,
        "{CASE}: last_prompt_at {at} not within the append ({before}..{after})"
    );
    assert!(
        info.created <= at && at <= info.modified,
        "{CASE}: created/modified: {info:?}"
    );
    assert_eq!(info.wire, Some(anthropic_wire()), "{CASE}: wire");

    // A prompt of several text blocks and an image; then another provider; then a system
    // message (which has no provider identity and must not clear it) and a tool result.
    d.wire = local_openai_wire();
    d.append(vec![
        Message::new(
            Role::User,
            vec![
                ContentBlock::text("line one"),
                ContentBlock::Image {
                    media_type: "image/png".to_owned(),
                    data: PNG_1X1.to_owned(),
                },
                ContentBlock::text("line two"),
            ],
        ),
        reply("answer"),
    ])
    .await;
    d.append(vec![
        system("more rules", SystemMode::Append),
        tool_result("t1", "out", false),
    ])
    .await;
    let info = info_of(&store, &d.id(), CASE).await;
    assert_eq!(info.message_count, 7, "{CASE}: message_count");
    // The preview is what was typed: the first text block (text attached to a prompt, such as a
    // file's content, follows in blocks of its own).
    assert_eq!(info.last_user_message.as_deref(), Some("line one"), "{CASE}");
    assert_eq!(
        info.wire,
        Some(local_openai_wire()),
        "{CASE}: wire after switching provider"
    );
    assert_eq!(
        (info.message_count, &info.last_user_message, &info.wire),
        (
            d.session.info.message_count,
            &d.session.info.last_user_message,
            &d.session.info.wire
        ),
        "{CASE}: the listing disagrees with the info Session::append folded"
    );
}

/// `latest` is the first session of the listing: none in an empty store, then the session with
/// the most recent prompt.
pub async fn latest_is_the_most_recent(store: Arc<dyn SessionStore>) {
    const CASE: &str = "latest_is_the_most_recent";
    let latest = |store: Arc<dyn SessionStore>| async move {
        match Session::latest(store).await {
            Ok(s) => s.map(|s| s.id().to_owned()),
            Err(e) => panic!("{CASE}: latest failed: {e}"),
        }
    };
    assert_eq!(latest(store.clone()).await, None, "{CASE}: an empty store");
    let _unsaved = Session::create(store.clone());
    assert_eq!(
        latest(store.clone()).await,
        None,
        "{CASE}: a created, never appended session"
    );

    let mut a = Driver::new(&store, None);
    a.append(vec![user("a")]).await;
    tick().await;
    let mut b = Driver::new(&store, None);
    b.append(vec![user("b")]).await;
    tick().await;
    assert_eq!(latest(store.clone()).await, Some(b.id()), "{CASE}");
    a.append(vec![user("a again")]).await;
    assert_eq!(latest(store.clone()).await, Some(a.id()), "{CASE}: after a prompt in a");
}

/// A session records the working directory of the process that created it, and the listing,
/// the info of the one session and `latest` give it back (front ends continue the latest
/// session of the directory they run in).
pub async fn a_session_lists_its_directory(store: Arc<dyn SessionStore>) {
    const CASE: &str = "a_session_lists_its_directory";
    let here = std::env::current_dir().unwrap_or_else(|e| panic!("{CASE}: no working directory: {e}"));
    let mut d = Driver::new(&store, None);
    d.append(vec![user("where am I?")]).await;
    d.append(vec![reply("here")]).await;
    let listed = info_of(&store, &d.id(), CASE).await;
    assert_eq!(
        listed.cwd.as_deref(),
        Some(here.as_path()),
        "{CASE}: the listing's directory of a session created here"
    );
    let info = match store.info(&d.id()).await {
        Ok(Some(info)) => info,
        other => panic!("{CASE}: info({}) gave {other:?}", d.id()),
    };
    assert_eq!(info.cwd, listed.cwd, "{CASE}: info and the listing disagree");
    let latest = match Session::latest(store.clone()).await {
        Ok(Some(s)) => s,
        other => panic!("{CASE}: latest gave {other:?}"),
    };
    assert_eq!(latest.info.cwd, listed.cwd, "{CASE}: latest and the listing disagree");
    let resolved = match Session::resolve(store.clone(), &d.id()).await {
        Ok(Some(s)) => s,
        other => panic!("{CASE}: resolve({}) gave {other:?}", d.id()),
    };
    assert_eq!(resolved.info.cwd, listed.cwd, "{CASE}: a resolved session's directory");
}
