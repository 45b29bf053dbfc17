package panto

/*
#include <stdlib.h>
#include "panto.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// Agent is a conversation with one model, its tools and its session.
type Agent struct{ p *C.panto_agent }

// NewAgent creates an agent on session; a session with stored messages is resumed.
func NewAgent(cfg *Config, session *Session) (*Agent, error) {
	var a Agent
	var cerr *C.panto_error
	if err := check(C.panto_agent_new(cfg.p, session.p, &a.p, &cerr), cerr); err != nil {
		return nil, err
	}
	return &a, nil
}

// Close frees the agent, cancelling a live run and waiting for it (and its tool calls) to end.
func (a *Agent) Close() { C.panto_agent_free(a.p); a.p = nil }

// SessionID is the id of the agent's session.
func (a *Agent) SessionID() string { return C.GoString(C.panto_agent_session_id(a.p)) }

// AddTool offers a tool to the model; the agent keeps its own reference to it.
func (a *Agent) AddTool(t *Tool) error {
	var cerr *C.panto_error
	return check(C.panto_agent_add_tool(a.p, t.p, &cerr), cerr)
}

// AddSystemMessage appends to the system prompt, and persists the change.
func (a *Agent) AddSystemMessage(text string) error {
	ctext := cstring(text)
	defer free(ctext)
	var cerr *C.panto_error
	return check(C.panto_agent_add_system_message(a.p, ctext, &cerr), cerr)
}

// ConversationJSON is the conversation as JSON (the shape is in docs/ffi.md).
func (a *Agent) ConversationJSON() (string, error) {
	var out *C.char
	var cerr *C.panto_error
	if err := check(C.panto_agent_conversation_json(a.p, &out, &cerr), cerr); err != nil {
		return "", err
	}
	return takeString(out), nil
}

// MessageIDs are the entry ids of the conversation's messages, index for index ("" for a message
// not stored yet): the ids Rewind and Session.Fork take.
func (a *Agent) MessageIDs() ([]string, error) {
	var out *C.char
	var cerr *C.panto_error
	if err := check(C.panto_agent_message_ids_json(a.p, &out, &cerr), cerr); err != nil {
		return nil, err
	}
	var ids []*string
	if err := json.Unmarshal([]byte(takeString(out)), &ids); err != nil {
		return nil, fmt.Errorf("panto: message ids: %w", err)
	}
	result := make([]string, len(ids))
	for i, id := range ids {
		if id != nil {
			result[i] = *id
		}
	}
	return result, nil
}

// Rewind goes back to before the prompt stored as entryID: the next run starts a new branch
// there, and the abandoned branch stays in the session's log.
func (a *Agent) Rewind(entryID string) error {
	cid := cstring(entryID)
	defer free(cid)
	var cerr *C.panto_error
	return check(C.panto_agent_rewind(a.p, cid, &cerr), cerr)
}

// Usage is the token usage and cost so far.
func (a *Agent) Usage() (Usage, error) {
	var out *C.char
	var cerr *C.panto_error
	var u Usage
	if err := check(C.panto_agent_usage_json(a.p, &out, &cerr), cerr); err != nil {
		return u, err
	}
	if err := json.Unmarshal([]byte(takeString(out)), &u); err != nil {
		return u, fmt.Errorf("panto: usage: %w", err)
	}
	return u, nil
}

// EventKind is one of the PANTO_EVENT_* kinds.
type EventKind int

// The event kinds, one per event JSON type (docs/ffi.md numbers them, docs/events.md defines
// each type's fields). Later versions add kinds: ignore those you do not know.
const (
	BlockStart         = EventKind(C.PANTO_EVENT_BLOCK_START)
	TextDelta          = EventKind(C.PANTO_EVENT_TEXT_DELTA)
	ThinkingDelta      = EventKind(C.PANTO_EVENT_THINKING_DELTA)
	ToolInputDelta     = EventKind(C.PANTO_EVENT_TOOL_INPUT_DELTA)
	BlockComplete      = EventKind(C.PANTO_EVENT_BLOCK_COMPLETE)
	MessageComplete    = EventKind(C.PANTO_EVENT_MESSAGE_COMPLETE)
	ToolStart          = EventKind(C.PANTO_EVENT_TOOL_START)
	ToolComplete       = EventKind(C.PANTO_EVENT_TOOL_COMPLETE)
	Retry              = EventKind(C.PANTO_EVENT_RETRY)
	CompactionStart    = EventKind(C.PANTO_EVENT_COMPACTION_START)
	CompactionComplete = EventKind(C.PANTO_EVENT_COMPACTION_COMPLETE)
	TurnComplete       = EventKind(C.PANTO_EVENT_TURN_COMPLETE)
)

// Event is one step of a turn: its kind, its JSON type and the JSON itself, which is panto's
// one event JSON (docs/events.md), the object stream-json prints for the same event.
type Event struct {
	Kind EventKind
	// Type is the JSON's "type", e.g. "text_delta"; it names the event also when Kind is one
	// this package does not know.
	Type string
	JSON json.RawMessage
}

// newEvent reads the type of an event's JSON.
func newEvent(kind EventKind, raw string) Event {
	var tag struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(raw), &tag) // libpanto's JSON always has a string type
	return Event{Kind: kind, Type: tag.Type, JSON: json.RawMessage(raw)}
}

// Text is the text of a TextDelta or ThinkingDelta event, "" for other kinds.
func (e Event) Text() string {
	if e.Kind != TextDelta && e.Kind != ThinkingDelta {
		return ""
	}
	var payload struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(e.JSON, &payload) != nil {
		return ""
	}
	return payload.Text
}

// Run is a live turn. Read Events until the channel closes, then check Err.
type Run struct {
	mu     sync.Mutex // guards p against Cancel racing with the free at the end
	p      *C.panto_run
	events chan Event
	err    error
}

// Run starts a turn with text as the user's message. Cancelling ctx cancels the turn (the
// channel then closes and Err reports a CodeCancelled error).
func (a *Agent) Run(ctx context.Context, text string) (*Run, error) {
	ctext := cstring(text)
	defer free(ctext)
	r := &Run{events: make(chan Event, 64)}
	var cerr *C.panto_error
	if err := check(C.panto_agent_run(a.p, ctext, &r.p, &cerr), cerr); err != nil {
		return nil, err
	}
	go r.pump(ctx)
	return r, nil
}

// pump moves events from libpanto to the channel until the turn ends, then frees the run.
func (r *Run) pump(ctx context.Context) {
	defer close(r.events)
	defer func() {
		r.mu.Lock()
		C.panto_run_free(r.p)
		r.p = nil
		r.mu.Unlock()
	}()
	for {
		if ctx.Err() != nil {
			r.Cancel()
		}
		var ev *C.panto_event
		var cerr *C.panto_error
		status := C.panto_run_next_event(r.p, 100, &ev, &cerr)
		switch status {
		case C.PANTO_TIMEOUT:
			continue
		case C.PANTO_END:
			return
		case C.PANTO_OK:
			event := newEvent(EventKind(C.panto_event_kind(ev)), C.GoString(C.panto_event_json(ev)))
			C.panto_event_free(ev)
			select {
			case r.events <- event:
			case <-ctx.Done():
				// Nobody may be reading any more; drop events until the cancel lands.
			}
		default:
			r.err = check(status, cerr)
			return
		}
	}
}

// Events yields the turn's events; it closes when the turn is over.
func (r *Run) Events() <-chan Event { return r.events }

// Err is how the turn ended: nil, or a libpanto *Error. Valid once Events is closed.
func (r *Run) Err() error { return r.err }

// Cancel cancels the turn; safe to call from any goroutine, more than once, and after the end.
func (r *Run) Cancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil {
		C.panto_run_cancel(r.p)
	}
}
