//! `panto_log_set_callback`: panto's tracing spans and events (docs/observability.md) handed to a
//! C function, for hosts that have no Rust subscriber of their own.
//!
//! The first call that sets a callback installs a process-wide `tracing` subscriber whose one
//! layer forwards to whatever callback is set now; later calls only swap the callback and its
//! level (the subscriber stays: `tracing` allows one global default per process). The callback is
//! read under a lock held for the duration of each call, so once `panto_log_set_callback`
//! returns, no call of the previous callback is running or will start, and its `userdata` may be
//! freed.
//!
//! What reaches the callback is what the CLI's log file gets: panto-core scrubs the API key and
//! header values out of every text field before recording it and records content only with
//! `log_content`, so this layer forwards fields as they are.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::fmt;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{OnceLock, RwLock};

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{Layer, Registry};

use crate::cstr::to_cstring;
use crate::error::{panto_error, Failure};
use crate::guard::ErrOut;
use crate::status::PANTO_OK;

/// `panto_log_set_callback`: no logging (also what a NULL callback means).
pub const PANTO_LOG_OFF: i32 = 0;
/// Errors only.
pub const PANTO_LOG_ERROR: i32 = 1;
/// Warnings (retries, context overflows) and errors.
pub const PANTO_LOG_WARN: i32 = 2;
/// The spans of turns, provider requests, tool calls, compactions and store appends, as they
/// close, and warnings.
pub const PANTO_LOG_INFO: i32 = 3;
/// Also the content events (prompts, answers, tool calls and results) when the agent's config
/// has `log_content`.
pub const PANTO_LOG_DEBUG: i32 = 4;
/// Everything panto emits.
pub const PANTO_LOG_TRACE: i32 = 5;

/// The C function that receives each log record: `userdata` as given to
/// `panto_log_set_callback`, the record's `level` (`PANTO_LOG_ERROR` … `PANTO_LOG_TRACE`), its
/// `message` and its `fields_json` (a JSON object). Both strings are borrowed for the call only.
#[allow(non_camel_case_types)]
pub type panto_log_fn =
    Option<unsafe extern "C" fn(userdata: *mut c_void, level: i32, message: *const c_char, fields_json: *const c_char)>;

/// A present callback.
type LogFn = unsafe extern "C" fn(*mut c_void, i32, *const c_char, *const c_char);

/// The caller's opaque `userdata` pointer.
#[derive(Debug, Clone, Copy)]
struct Userdata(*mut c_void);

// SAFETY: libpanto never dereferences `userdata`; it only passes it back to the caller's
// callback, which the documented contract of `panto_log_set_callback` requires to accept calls
// from any thread, concurrently.
unsafe impl Send for Userdata {}
// SAFETY: as above.
unsafe impl Sync for Userdata {}

/// The callback set now.
#[derive(Debug, Clone, Copy)]
struct Sink {
    callback: LogFn,
    userdata: Userdata,
}

/// The callback; the read lock is held while it runs (so that replacing it waits for calls in
/// flight).
static SINK: RwLock<Option<Sink>> = RwLock::new(None);
/// The level of the callback set now (`PANTO_LOG_OFF` without one), read by the filter at every
/// callsite without taking the lock.
static LEVEL: AtomicI32 = AtomicI32::new(PANTO_LOG_OFF);
/// Whether the subscriber could be installed (once per process), or why not.
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

thread_local! {
    /// This thread is running the callback: a record emitted meanwhile is dropped (it could only
    /// come from the callback itself), and `panto_log_set_callback` refuses instead of waiting
    /// for itself.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Sets (or replaces, or with a NULL `callback` removes) the process-wide log callback: from now
/// on `callback(userdata, level, message, fields_json)` is called for every tracing event panto
/// emits at `level` or more severe and for every span as it closes (turns, provider requests,
/// tool calls, compactions, store appends; their fields are listed in docs/observability.md),
/// from libpanto's crates; other libraries' records (HTTP, TLS) only at `PANTO_LOG_WARN` or more
/// severe. `level` is `PANTO_LOG_OFF` … `PANTO_LOG_TRACE`; `PANTO_LOG_OFF` or a NULL `callback`
/// turns logging off.
///
/// A record: `level` is its own level; for an event `message` is the event's message (e.g.
/// "retrying the provider request"), for a span the span's name (`chat`, `invoke_agent`, …).
/// `fields_json` is a JSON object of the record's fields (`"gen_ai.request.model": "…"`,
/// `"gen_ai.usage.input_tokens": 120`, counts as numbers) plus `"log.kind"` (`"event"` or
/// `"span"`), `"log.name"` (the event's name such as `panto.retry`, or the span's name),
/// `"log.target"` (the Rust module) and, for an event inside a span, `"log.span"` (that span's
/// name).
///
/// Never in a record: the API key or any configured header value (text fields are scrubbed to
/// `[redacted]` before they are recorded); message and tool content only for agents whose config
/// sets `"log_content": true`, as the `panto` CLI's log file.
///
/// The first call with a callback installs libpanto's subscriber as the process's global
/// `tracing` default; later calls only change the callback and level.
///
/// Errors: `PANTO_ERR_INVALID_ARGUMENT` (`level` out of range), `PANTO_ERR_STATE` (called from
/// inside the log callback; or another `tracing` subscriber is already the process's global
/// default, e.g. one a Rust host installed, so libpanto's cannot be).
///
/// Ownership: `message` and `fields_json` are borrowed for the duration of one call of
/// `callback`; copy what you keep. libpanto never dereferences `userdata`. When this function
/// returns, no call of the previous callback is running or will be made, so the previous
/// `userdata` may be freed then.
///
/// Thread safety: this function is callable from any thread. `callback` is called on libpanto's
/// runtime threads (and on the threads of the calls that emit, such as `panto_agent_compact`),
/// possibly on several at once: it must be thread-safe. It must not call any libpanto function
/// (it runs inside libpanto: a blocking function would deadlock or fail with `PANTO_ERR_STATE`,
/// and this one fails with `PANTO_ERR_STATE`), should return quickly (the turn waits for it),
/// and must not unwind (no C++ exception or longjmp out of it).
///
/// # Safety
/// `callback` must be NULL or a function with the `panto_log_fn` signature, callable as above
/// until it is replaced; `err` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn panto_log_set_callback(
    level: i32,
    callback: panto_log_fn,
    userdata: *mut c_void,
    err: *mut *mut panto_error,
) -> i32 {
    // SAFETY: the contract makes `err` NULL or writable.
    let err = unsafe { ErrOut::new(err) };
    err.guard(|| {
        if !(PANTO_LOG_OFF..=PANTO_LOG_TRACE).contains(&level) {
            return Err(Failure::invalid(format!(
                "level {level} is not a log level (PANTO_LOG_OFF 0 … PANTO_LOG_TRACE 5)"
            )));
        }
        if IN_CALLBACK.with(Cell::get) {
            return Err(Failure::state(
                "panto_log_set_callback cannot be called from inside the log callback",
            ));
        }
        let sink = callback.map(|callback| Sink {
            callback,
            userdata: Userdata(userdata),
        });
        if sink.is_some() && level != PANTO_LOG_OFF {
            install()?;
        }
        let mut current = SINK.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        *current = sink;
        LEVEL.store(if sink.is_some() { level } else { PANTO_LOG_OFF }, Ordering::Release);
        drop(current);
        Ok(PANTO_OK)
    })
}

/// Installs the forwarding subscriber as the global default, once.
fn install() -> Result<(), Failure> {
    let installed = INSTALLED.get_or_init(|| {
        let subscriber = Registry::default().with(CallbackLayer.with_filter(filter_fn(wanted)));
        tracing::subscriber::set_global_default(subscriber).map_err(|_| {
            "another tracing subscriber is already the process's global default, so libpanto's log \
             callback cannot be installed"
                .to_owned()
        })
    });
    installed.clone().map_err(Failure::state)
}

/// A level as `PANTO_LOG_*`.
fn rank(level: &Level) -> i32 {
    match *level {
        Level::ERROR => PANTO_LOG_ERROR,
        Level::WARN => PANTO_LOG_WARN,
        Level::INFO => PANTO_LOG_INFO,
        Level::DEBUG => PANTO_LOG_DEBUG,
        Level::TRACE => PANTO_LOG_TRACE,
    }
}

/// Whether a span or event goes to the callback: panto's at the set level, other libraries' at
/// warnings and errors only.
fn wanted(metadata: &Metadata<'_>) -> bool {
    let level = LEVEL.load(Ordering::Acquire);
    if level == PANTO_LOG_OFF {
        return false;
    }
    let max = if metadata.target().starts_with("panto") {
        level
    } else {
        level.min(PANTO_LOG_WARN)
    };
    rank(metadata.level()) <= max
}

/// The fields a span recorded so far, kept in its extensions until it closes.
#[derive(Debug, Default)]
struct SpanFields(Map<String, Value>);

/// Collects tracing field values as JSON values.
struct JsonFields<'a>(&'a mut Map<String, Value>);

impl Visit for JsonFields<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        let value = serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number);
        self.0.insert(field.name().to_owned(), value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}").into());
    }
}

/// The layer that hands records to the callback.
struct CallbackLayer;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for CallbackLayer {
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = SpanFields::default();
        attributes.record(&mut JsonFields(&mut fields.0));
        span.extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        if let Some(fields) = extensions.get_mut::<SpanFields>() {
            values.record(&mut JsonFields(&mut fields.0));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let metadata = event.metadata();
        let mut fields = Map::new();
        event.record(&mut JsonFields(&mut fields));
        let message = match fields.remove("message") {
            Some(Value::String(text)) => text,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        fields.insert("log.kind".to_owned(), "event".into());
        fields.insert("log.name".to_owned(), metadata.name().into());
        fields.insert("log.target".to_owned(), metadata.target().into());
        if let Some(span) = ctx.event_span(event) {
            fields.insert("log.span".to_owned(), span.name().into());
        }
        emit(metadata.level(), &message, fields);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let metadata = span.metadata();
        let mut fields = span
            .extensions_mut()
            .remove::<SpanFields>()
            .map(|f| f.0)
            .unwrap_or_default();
        fields.insert("log.kind".to_owned(), "span".into());
        fields.insert("log.name".to_owned(), metadata.name().into());
        fields.insert("log.target".to_owned(), metadata.target().into());
        emit(metadata.level(), metadata.name(), fields);
    }
}

/// Calls the callback set now, if any, with one record.
fn emit(level: &Level, message: &str, fields: Map<String, Value>) {
    // A span opened before the level was lowered still closes: it is not wanted now.
    if IN_CALLBACK.with(Cell::get) || rank(level) > LEVEL.load(Ordering::Acquire) {
        return;
    }
    let current = SINK.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    let Some(sink) = *current else { return };
    let message = to_cstring(message);
    let fields = to_cstring(Value::Object(fields).to_string());
    IN_CALLBACK.with(|flag| flag.set(true));
    // SAFETY: `callback` is a live function of the `panto_log_fn` signature and callable from
    // any thread (the contract of `panto_log_set_callback`, under whose lock this runs); both
    // strings are NUL-terminated and outlive the call.
    unsafe { (sink.callback)(sink.userdata.0, rank(level), message.as_ptr(), fields.as_ptr()) };
    IN_CALLBACK.with(|flag| flag.set(false));
    drop(current);
}
