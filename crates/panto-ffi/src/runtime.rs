//! `panto_runtime`: the tokio runtime every other handle runs on.
//!
//! The caller creates it explicitly (so the embedder decides how many threads libpanto uses) and
//! every handle made from it keeps a reference, so freeing the runtime handle before the others is
//! safe: the runtime stops when the last handle that uses it is freed.

use std::future::Future;
use std::sync::Arc;

use crate::error::Failure;
use crate::guard::{free, HandOut, Handle};
use crate::status::PANTO_ERR_OTHER;

/// The shared runtime. Dropping the last reference shuts it down.
#[derive(Debug)]
pub(crate) struct Rt {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Rt {
    fn new(worker_threads: u32) -> Result<Arc<Rt>, Failure> {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder
            .enable_all()
            .thread_name("panto-runtime")
            .on_thread_start(block_sigpipe);
        if worker_threads > 0 {
            builder.worker_threads(worker_threads as usize);
        }
        let runtime = builder
            .build()
            .map_err(|e| Failure::new(PANTO_ERR_OTHER, format!("cannot start the runtime: {e}")))?;
        sigchld_on_alternate_stack(&runtime);
        Ok(Arc::new(Rt { runtime: Some(runtime) }))
    }

    pub(crate) fn handle(&self) -> Result<&tokio::runtime::Handle, Failure> {
        self.runtime
            .as_ref()
            .map(tokio::runtime::Runtime::handle)
            .ok_or_else(|| Failure::state("the runtime has shut down"))
    }

    /// Runs `future` to completion on the runtime, blocking the calling thread. `function` names
    /// the export in the error returned when the caller is itself on a runtime thread (inside a
    /// tool callback), where blocking is not possible.
    pub(crate) fn block_on<F: Future>(&self, function: &str, future: F) -> Result<F::Output, Failure> {
        if in_runtime() {
            return Err(Failure::in_callback(function));
        }
        Ok(self.handle()?.block_on(future))
    }
}

impl Drop for Rt {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Dropping a runtime blocks until its tasks stop, which tokio forbids on a runtime
            // thread; if the last handle is freed from inside a tool callback, stop it without
            // waiting instead.
            if in_runtime() {
                runtime.shutdown_background();
            } else {
                drop(runtime);
            }
        }
    }
}

/// Blocks SIGPIPE on the calling thread (every runtime thread calls it as it starts). A write to a
/// pipe whose reader is gone (an MCP server that exited, a bash command that closed its stdin)
/// then fails with `EPIPE`, which panto handles, instead of raising SIGPIPE, whose default action
/// kills the whole process: Rust programs ignore SIGPIPE, but a C or Go program hosting libpanto
/// usually does not. Only libpanto's own threads are changed; the embedder's keep their mask.
fn block_sigpipe() {
    // SAFETY: `set` is a local signal set initialised by sigemptyset before use; pthread_sigmask
    // only changes the calling thread's mask, and a NULL old-set pointer is allowed.
    unsafe {
        let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), std::ptr::null_mut());
    }
}

/// Installs tokio's SIGCHLD handler now and adds `SA_ONSTACK` to it. tokio reaps the children it
/// spawns (bash, MCP servers, hooks) through a SIGCHLD handler that signal-hook-registry installs
/// once, on first use, without `SA_ONSTACK`; the Go runtime aborts the whole process ("non-Go code
/// set up signal handler without SA_ONSTACK flag") when such a signal lands on one of its threads,
/// which a child's exit sometimes does. The handler is installed once per process and never
/// replaced, so the flag added here stays.
fn sigchld_on_alternate_stack(runtime: &tokio::runtime::Runtime) {
    let _inside = runtime.enter();
    // Registering a listener makes tokio install its process-wide handler; the listener itself is
    // not needed.
    drop(tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()));
    // SAFETY: `action` is a zeroed, then kernel-filled `sigaction`; the first call only reads the
    // current disposition, and the second re-installs the same handler and mask with one more flag.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGCHLD, std::ptr::null(), &mut action) != 0 {
            return;
        }
        let installed = action.sa_sigaction != libc::SIG_DFL && action.sa_sigaction != libc::SIG_IGN;
        if installed && action.sa_flags & libc::SA_ONSTACK == 0 {
            action.sa_flags |= libc::SA_ONSTACK;
            libc::sigaction(libc::SIGCHLD, &action, std::ptr::null_mut());
        }
    }
}

/// Whether the current thread is one of a tokio runtime's (a tool callback runs on one).
pub(crate) fn in_runtime() -> bool {
    tokio::runtime::Handle::try_current().is_ok()
}

/// The runtime: the threads libpanto does its work on (HTTP, tool calls, session I/O).
///
/// Ownership: created by `panto_runtime_new`, freed by `panto_runtime_free`. Every store,
/// session, agent and run made from it keeps it alive, so it may be freed before them; it stops
/// when the last of them is freed. Thread safety: may be used from any thread.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct panto_runtime {
    pub(crate) rt: Arc<Rt>,
}

impl Handle for panto_runtime {}

/// Starts a runtime with `worker_threads` threads (0: one per CPU).
///
/// Ownership: `*out` receives an owned runtime (only on success; on failure it is left as it was); free it with
/// `panto_runtime_free`. `*err` (if `err` is not NULL) receives NULL on success, an owned error on
/// failure. Thread safety: callable from any thread.
///
/// # Safety
/// `out` and `err` must each be NULL or valid for writing one pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_runtime_new(
    worker_threads: u32,
    out: *mut *mut panto_runtime,
    err: *mut *mut crate::error::panto_error,
) -> i32 {
    // SAFETY: the contract makes `out` and `err` NULL or writable.
    unsafe { HandOut::required(out, "out", err) }.guard(|| {
        Ok(panto_runtime {
            rt: Rt::new(worker_threads)?,
        })
    })
}

/// Releases the caller's reference to the runtime. The runtime stops once every handle made from
/// it is freed too (stopping waits for its tasks; no libpanto callback runs after that).
/// `panto_runtime_free(NULL)` does nothing.
///
/// Thread safety: callable from any thread, once per runtime.
///
/// # Safety
/// `runtime` must be NULL or a runtime from `panto_runtime_new` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_runtime_free(runtime: *mut panto_runtime) {
    // SAFETY: the caller gives up a live runtime handle (or NULL).
    unsafe { free(runtime) }
}
