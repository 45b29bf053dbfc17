//! Ctrl-C (SIGINT) while panto is working: it cancels the turn instead of killing the process.
//!
//! The handler is installed before these functions return (tokio's `ctrl_c()` future would
//! install it only when first polled), so a Ctrl-C right after a turn starts is never lost to
//! the default action.

use panto_core::CancellationToken;
use tokio::signal::unix::{signal, SignalKind};
use tokio::task::JoinHandle;

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
