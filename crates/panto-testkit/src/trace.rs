//! Capturing panto's tracing spans and events in tests: [`Capture`] is a subscriber layer that
//! keeps every span (name, parent, fields as recorded, whether it closed) and every event, so a
//! test asserts the span tree and attributes of a turn (docs/observability.md) as data.
//!
//! ```no_run
//! let capture = panto_testkit::trace::Capture::new();
//! let _guard = capture.set_default(); // this thread (use a current-thread runtime)
//! // ... run a turn ...
//! let turn = capture.span("invoke_agent").unwrap();
//! assert_eq!(turn.field("gen_ai.request.model"), Some("claude-test"));
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// One captured span.
#[derive(Debug, Clone)]
pub struct CapturedSpan {
    /// The span's id in the capture (the order spans were opened in, from 0).
    pub index: usize,
    /// The span's name (`invoke_agent`, `chat`, `execute_tool`, …).
    pub name: String,
    /// The index of the parent span, if it has one.
    pub parent: Option<usize>,
    /// The span's level (`INFO`, `DEBUG`, …).
    pub level: String,
    /// Every field given a value, at creation or recorded later, as text (strings unquoted).
    pub fields: BTreeMap<String, String>,
    /// Whether the span has closed.
    pub closed: bool,
}

impl CapturedSpan {
    /// The value of field `name`, if it was recorded.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

/// One captured event.
#[derive(Debug, Clone)]
pub struct CapturedEvent {
    /// The event's name (`panto.retry`, …; tracing names unnamed events after their file and
    /// line).
    pub name: String,
    /// The event's level.
    pub level: String,
    /// The index of the span the event belongs to, if any.
    pub span: Option<usize>,
    /// The event's fields as text, its message under `message`.
    pub fields: BTreeMap<String, String>,
}

impl CapturedEvent {
    /// The value of field `name`, if the event has it.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

#[derive(Debug, Default)]
struct Captured {
    spans: Vec<CapturedSpan>,
    events: Vec<CapturedEvent>,
}

/// A layer capturing every span and event it sees (at every level), and the handle to read them.
/// Clones share the capture.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    captured: Arc<Mutex<Captured>>,
}

/// Where a span's capture index is kept among the registry's extensions.
struct SpanIndex(usize);

impl Capture {
    /// An empty capture.
    pub fn new() -> Self {
        Capture::default()
    }

    /// Installs a subscriber of this layer alone as the default for the current thread, until
    /// the guard drops. panto carries the caller's subscriber to the work it moves to other
    /// threads (tool calls, the file store's writes); run the test on a current-thread runtime
    /// so that everything else stays on this thread.
    pub fn set_default(&self) -> tracing::subscriber::DefaultGuard {
        tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()))
    }

    fn lock(&self) -> MutexGuard<'_, Captured> {
        self.captured.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every span captured so far, in the order they were opened.
    pub fn spans(&self) -> Vec<CapturedSpan> {
        self.lock().spans.clone()
    }

    /// Every event captured so far, in order.
    pub fn events(&self) -> Vec<CapturedEvent> {
        self.lock().events.clone()
    }

    /// The first span named `name`.
    pub fn span(&self, name: &str) -> Option<CapturedSpan> {
        self.lock().spans.iter().find(|s| s.name == name).cloned()
    }

    /// Every span named `name`, in the order they were opened.
    pub fn spans_named(&self, name: &str) -> Vec<CapturedSpan> {
        self.lock().spans.iter().filter(|s| s.name == name).cloned().collect()
    }

    /// Every event named `name`, in order.
    pub fn events_named(&self, name: &str) -> Vec<CapturedEvent> {
        self.lock().events.iter().filter(|e| e.name == name).cloned().collect()
    }

    /// The span tree as indented lines of span names (children in the order they opened), for
    /// asserting a tree's shape in one comparison.
    pub fn tree(&self) -> Vec<String> {
        let captured = self.lock();
        let mut lines = Vec::new();
        fn walk(spans: &[CapturedSpan], parent: Option<usize>, depth: usize, lines: &mut Vec<String>) {
            for span in spans.iter().filter(|s| s.parent == parent) {
                lines.push(format!("{}{}", "  ".repeat(depth), span.name));
                walk(spans, Some(span.index), depth + 1, lines);
            }
        }
        walk(&captured.spans, None, 0, &mut lines);
        lines
    }

    /// Every recorded field value and event field of the capture, as one text: what a scan for
    /// a secret searches.
    pub fn all_text(&self) -> String {
        let captured = self.lock();
        let mut out = String::new();
        let fields = captured
            .spans
            .iter()
            .map(|s| (&s.name, &s.fields))
            .chain(captured.events.iter().map(|e| (&e.name, &e.fields)));
        for (name, fields) in fields {
            out.push_str(name);
            for (k, v) in fields {
                out.push_str(&format!(" {k}={v}"));
            }
            out.push('\n');
        }
        out
    }
}

/// Collects fields as text.
struct FieldText<'a>(&'a mut BTreeMap<String, String>);

impl Visit for FieldText<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S> Layer<S> for Capture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = if let Some(parent) = attrs.parent() {
            ctx.span(parent)
        } else if attrs.is_contextual() {
            ctx.lookup_current()
        } else {
            None
        }
        .and_then(|p| p.extensions().get::<SpanIndex>().map(|i| i.0));
        let mut fields = BTreeMap::new();
        attrs.record(&mut FieldText(&mut fields));
        let mut captured = self.lock();
        let index = captured.spans.len();
        captured.spans.push(CapturedSpan {
            index,
            name: attrs.metadata().name().to_owned(),
            parent,
            level: attrs.metadata().level().to_string(),
            fields,
            closed: false,
        });
        drop(captured);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanIndex(index));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(index) = ctx
            .span(id)
            .and_then(|s| s.extensions().get::<SpanIndex>().map(|i| i.0))
        else {
            return;
        };
        let mut captured = self.lock();
        values.record(&mut FieldText(&mut captured.spans[index].fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let span = ctx
            .event_span(event)
            .and_then(|s| s.extensions().get::<SpanIndex>().map(|i| i.0));
        let mut fields = BTreeMap::new();
        event.record(&mut FieldText(&mut fields));
        self.lock().events.push(CapturedEvent {
            name: event.metadata().name().to_owned(),
            level: event.metadata().level().to_string(),
            span,
            fields,
        });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(index) = ctx
            .span(&id)
            .and_then(|s| s.extensions().get::<SpanIndex>().map(|i| i.0))
        else {
            return;
        };
        self.lock().spans[index].closed = true;
    }
}
