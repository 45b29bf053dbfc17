//! Ctrl-C (SIGINT) while panto is working: it cancels the turn instead of killing the process;
//! and the end of the process, which must come within a deadline even when a tool cannot be
//! stopped.
//!
//! The handler is installed before these functions return (tokio's `ctrl_c()` future would
//! install it only when first polled), so a Ctrl-C right after a turn starts is never lost to
//! the default action. Once installed it stays for the life of the process, so Ctrl-C can no
//! longer kill panto: hence [`shutdown`]'s deadline.

use std::time::{Duration, Instant};

use panto_core::CancellationToken;
use tokio::runtime::Runtime;
use tokio::signal::unix::{signal, SignalKind};
use tokio::task::JoinHandle;

use crate::tools::Running;

/// Cancels `token` at the next SIGINT. Abort the returned task when the work is over.
pub fn cancel_on_interrupt(token: CancellationToken) -> JoinHandle<()> {
    match signal(SignalKind::interrupt()) {
        Ok(mut interrupts) => tokio::spawn(async move {
            if interrupts.recv().await.is_some() {
                token.cancel();
            }
        }),
        // Without a handler, Ctrl-C keeps its default action; there is nothing to cancel with.
        Err(_) => tokio::spawn(async {}),
    }
}

/// Swallows every SIGINT for the life of the process, so Ctrl-C between turns never kills the
/// REPL (a running turn has its own listener, which every SIGINT also reaches).
pub fn ignore_interrupts() {
    if let Ok(mut interrupts) = signal(SignalKind::interrupt()) {
        tokio::spawn(async move { while interrupts.recv().await.is_some() {} });
    }
}

/// A token cancelled at the next SIGINT, with the task that watches for it.
pub fn interrupt_token() -> (CancellationToken, JoinHandle<()>) {
    let token = CancellationToken::new();
    let watcher = cancel_on_interrupt(token.clone());
    (token, watcher)
}

/// Runs `f` on a blocking thread while this thread drives `runtime`, so that the tasks `f` waits
/// for go on whatever the runtime's flavour (a current-thread runtime runs its tasks only inside
/// `block_on`). `None` if `f` panicked.
pub fn while_driving<T: Send + 'static>(runtime: &Runtime, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let work = runtime.spawn_blocking(f);
    runtime.block_on(work).ok()
}

/// How long panto waits, once it is done, for tool work still running (a cancelled call that has
/// not noticed, a read stuck in the kernel) before it exits without it.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Ends the process's async work within `grace`: waits for the tools' registered work to finish,
/// says on stderr what is abandoned if some does not, then stops the runtime without waiting for
/// threads that cannot be stopped (a blocking system call is not interruptible). Returns what was
/// abandoned.
pub fn shutdown(runtime: Runtime, running: &'static Running, grace: Duration) -> Vec<String> {
    let deadline = Instant::now() + grace;
    // The runtime is driven while the tools' work is waited for: an aborted tool task lets go of
    // its registration when the runtime drops it, and a current-thread runtime runs tasks only
    // inside `block_on`.
    let abandoned = while_driving(&runtime, move || running.wait_idle(grace)).unwrap_or_default();
    if abandoned.is_empty() {
        // Other blocking work (a store write) gets what is left of the grace.
        runtime.shutdown_timeout(deadline.saturating_duration_since(Instant::now()));
    } else {
        eprintln!(
            "panto: exiting without waiting for {}, still running {}s after the end: {} (abandoned)",
            if abandoned.len() == 1 { "a tool" } else { "tools" },
            grace.as_secs(),
            abandoned.join("; ")
        );
        runtime.shutdown_background();
    }
    abandoned
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    #[test]
    fn shutdown_abandons_tool_work_stuck_past_the_grace_and_names_it() {
        static STUCK: Running = Running::new();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        let (release, blocked) = mpsc::channel::<()>();
        let (started_tx, started) = mpsc::channel();
        // A tool's blocking call that never returns, as a read on a hung mount.
        runtime.spawn_blocking(move || {
            let _running = STUCK.start("read /net/hung/file".into());
            started_tx.send(()).unwrap();
            let _ = blocked.recv();
        });
        started.recv().unwrap();
        let (done_tx, done) = mpsc::channel();
        std::thread::spawn(move || done_tx.send(shutdown(runtime, &STUCK, Duration::from_millis(100))));
        // Dropping the runtime instead would wait for the stuck thread forever.
        let abandoned = done
            .recv_timeout(Duration::from_secs(60))
            .expect("shutdown returns although the tool never does");
        assert_eq!(abandoned, ["read /net/hung/file"]);
        drop(release);
    }

    #[test]
    fn shutdown_on_a_current_thread_runtime_lets_an_aborted_tool_go() {
        static ABORTED: Running = Running::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // A tool call's task, registered and waiting, aborted as a cancelled turn aborts it:
        // the registration ends when the runtime drops the task, which a current-thread runtime
        // does only while it is driven.
        let task = runtime.spawn(async {
            let _running = ABORTED.start("bash sleep 600".into());
            std::future::pending::<()>().await;
        });
        runtime.block_on(tokio::task::yield_now());
        task.abort();
        let started = Instant::now();
        let abandoned = shutdown(runtime, &ABORTED, Duration::from_secs(5));
        assert!(abandoned.is_empty(), "abandoned {abandoned:?}");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "waited {:?}",
            started.elapsed()
        );
    }
}
