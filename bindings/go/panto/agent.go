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

// NewAgentWithConversation creates an agent on session, a session that holds no messages (one
// from Store.Create), starting from conversationJSON: a conversation in the shape
// ConversationJSON returns ({"messages": [...], "metadata": "..."}, docs/ffi.md). Each message is
// read as a session store reads a stored one; a malformed one is a CodeInvalidArgument error
// naming the path (`conversation_json: messages[1].content[0]: ...`). The conversation is
// written into the session at once when it holds an assistant message, otherwise with the first
// turn. A session that holds messages is a CodeState error: resume it with NewAgent.
func NewAgentWithConversation(cfg *Config, session *Session, conversationJSON string) (*Agent, error) {
	cjson := cstring(conversationJSON)
	defer free(cjson)
	var a Agent
	var cerr *C.panto_error
	if err := check(C.panto_agent_new_with_conversation(cfg.p, session.p, cjson, &a.p, &cerr), cerr); err != nil {
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

// BuiltinToolOptions configures panto's built-in coding tools (read, write, edit, bash, grep,
// find, ls, web_fetch); every field is optional (docs/tools.md).
type BuiltinToolOptions struct {
	Cwd             string   `json:"cwd,omitempty"`
	Tools           []string `json:"tools,omitempty"`
	Approval        string   `json:"approval,omitempty"` // "auto" (default) or "read-only"
	Allow           []string `json:"allow,omitempty"`    // TOOL or TOOL(GLOB) rules run without approval
	Deny            []string `json:"deny,omitempty"`     // TOOL or TOOL(GLOB) rules always refused
	BashTimeoutSecs uint64   `json:"bash_timeout_secs,omitempty"`
	MaxOutputBytes  int      `json:"max_output_bytes,omitempty"`
	ReadRoots       []string `json:"read_roots,omitempty"`
	Sandbox         string   `json:"sandbox,omitempty"` // "off" (default), "read-only", "workspace-write"
	SandboxNetwork  bool     `json:"sandbox_network,omitempty"`
	WritableRoots   []string `json:"writable_roots,omitempty"`
	ScrubEnv        []string `json:"scrub_env,omitempty"`         // variables kept from bash, besides the well-known key variables
	WebFetchPrivate bool     `json:"web_fetch_private,omitempty"` // let web_fetch reach loopback and private addresses
}

// AddBuiltinTools offers panto's built-in coding tools to the model, configured by opts.
func (a *Agent) AddBuiltinTools(opts BuiltinToolOptions) error {
	body, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	copts := cstring(string(body))
	defer free(copts)
	var cerr *C.panto_error
	return check(C.panto_agent_add_builtin_tools(a.p, copts, &cerr), cerr)
}

// AddSystemMessage appends to the system prompt, and persists the change.
func (a *Agent) AddSystemMessage(text string) error {
	ctext := cstring(text)
	defer free(ctext)
	var cerr *C.panto_error
	return check(C.panto_agent_add_system_message(a.p, ctext, &cerr), cerr)
}

// SetSystemPrompt replaces the whole system prompt, and persists the change.
func (a *Agent) SetSystemPrompt(text string) error {
	ctext := cstring(text)
	defer free(ctext)
	var cerr *C.panto_error
	return check(C.panto_agent_set_system_prompt(a.p, ctext, &cerr), cerr)
}

// SetConfig replaces the provider, model and policies from the next turn on; tools and the
// conversation are kept.
func (a *Agent) SetConfig(cfg *Config) error {
	var cerr *C.panto_error
	return check(C.panto_agent_set_config(a.p, cfg.p, &cerr), cerr)
}

// CompactResult is what a compaction did.
type CompactResult struct {
	Summary            string          `json:"summary"`
	TokensBefore       int64           `json:"tokens_before"`
	TokensAfter        int64           `json:"tokens_after"`
	MessagesSummarized int             `json:"messages_summarized"`
	MessagesKept       int             `json:"messages_kept"`
	Usage              json.RawMessage `json:"usage"` // the summary request's usage, or null
}

// Compact summarises the older part of the conversation now and persists the result. prompt
// ("" for the configured one) replaces the summary instruction; extra ("" for none) is appended
// to the request. A CodeState error means there is nothing to compact.
func (a *Agent) Compact(prompt, extra string) (CompactResult, error) {
	var cprompt, cextra *C.char
	if prompt != "" {
		cprompt = cstring(prompt)
		defer free(cprompt)
	}
	if extra != "" {
		cextra = cstring(extra)
		defer free(cextra)
	}
	var out *C.char
	var cerr *C.panto_error
	var result CompactResult
	if err := check(C.panto_agent_compact(a.p, cprompt, cextra, &out, &cerr), cerr); err != nil {
		return result, err
	}
	if err := json.Unmarshal([]byte(takeString(out)), &result); err != nil {
		return result, fmt.Errorf("panto: compaction result: %w", err)
	}
	return result, nil
}

// CompactWithSummary compacts the conversation with a summary you wrote: the messages before
// index firstKept (an index into ConversationJSON's messages; system messages stay) are replaced
// by one compaction summary, and the session records the compaction as Compact's, so a resumed
// session starts from the summary and the kept messages. No request is made (Usage in the
// result is null). An empty summary, or a firstKept past the end or on tool results, is a
// CodeInvalidArgument error; nothing but system messages before firstKept is CodeState.
func (a *Agent) CompactWithSummary(summary string, firstKept int) (CompactResult, error) {
	var result CompactResult
	if firstKept < 0 {
		return result, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("firstKept is %d, not an index", firstKept)}
	}
	csummary := cstring(summary)
	defer free(csummary)
	var out *C.char
	var cerr *C.panto_error
	if err := check(C.panto_agent_compact_with_summary(a.p, csummary, C.size_t(firstKept), &out, &cerr), cerr); err != nil {
		return result, err
	}
	if err := json.Unmarshal([]byte(takeString(out)), &result); err != nil {
		return result, fmt.Errorf("panto: compaction result: %w", err)
	}
	return result, nil
}

// AddMessageJSON appends a message to the conversation: one element of ConversationJSON's
// messages (a user message, an assistant message with text or tool calls, tool results), read
// as a session store reads a stored message and persisted as the agent persists its own. A
// malformed one is a CodeInvalidArgument error naming the path; on error nothing changes.
func (a *Agent) AddMessageJSON(messageJSON string) error {
	cjson := cstring(messageJSON)
	defer free(cjson)
	var cerr *C.panto_error
	return check(C.panto_agent_add_message_json(a.p, cjson, &cerr), cerr)
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

// RestoredFile is what RewindFiles did to one file: Outcome is "restored", "removed",
// "unchanged", "changed_outside" (left alone: it changed outside panto since panto last wrote
// it) or "failed" (then with Error).
type RestoredFile struct {
	Path    string `json:"path"`
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// RewindFiles goes back to before the prompt stored as entryID, like Rewind, and puts back the
// files the built-in write and edit tools changed since (byte for byte; files created since
// are removed). opts bound where a restore may write, as for AddBuiltinTools.
func (a *Agent) RewindFiles(entryID string, opts BuiltinToolOptions) ([]RestoredFile, error) {
	body, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	cid := cstring(entryID)
	defer free(cid)
	copts := cstring(string(body))
	defer free(copts)
	var out *C.char
	var cerr *C.panto_error
	if err := check(C.panto_agent_rewind_files(a.p, cid, copts, &out, &cerr), cerr); err != nil {
		return nil, err
	}
	var files []RestoredFile
	if err := json.Unmarshal([]byte(takeString(out)), &files); err != nil {
		return nil, fmt.Errorf("panto: rewind files: %w", err)
	}
	return files, nil
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
	Steer              = EventKind(C.PANTO_EVENT_STEER)
	FollowUpStart      = EventKind(C.PANTO_EVENT_FOLLOW_UP_START)
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

// ToolCall is the tool call a ToolStart, ToolComplete or tool BlockStart event is about.
type ToolCall struct {
	ID   string
	Name string
	// Input is the call's arguments, a JSON object, on a ToolStart; nil on the others.
	Input json.RawMessage
}

// ToolCall is the tool call the event is about, and whether it is about one.
func (e Event) ToolCall() (ToolCall, bool) {
	var payload struct {
		ID    string
		Name  string
		Input json.RawMessage
		Tool  *struct{ ID, Name string }
	}
	switch e.Kind {
	case ToolStart, ToolComplete, BlockStart:
	default:
		return ToolCall{}, false
	}
	if json.Unmarshal(e.JSON, &payload) != nil {
		return ToolCall{}, false
	}
	if e.Kind == BlockStart {
		if payload.Tool == nil {
			return ToolCall{}, false
		}
		return ToolCall{ID: payload.Tool.ID, Name: payload.Tool.Name}, true
	}
	call := ToolCall{ID: payload.ID, Name: payload.Name}
	if e.Kind == ToolStart {
		call.Input = payload.Input
	}
	return call, true
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
// channel then closes and Err reports a CodeCancelled error). The agent is busy (CodeBusy)
// until the run's Events channel has closed. If the turn fails, retry it with Retry.
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

// Retry asks the model again after a turn that failed, without sending its user message a
// second time (a failed turn keeps it in the conversation and the session, so Run with the same
// text would hold it twice). A CodeState error means nothing waits for an answer: the last turn
// ended with the model's reply; send a new message with Run instead.
func (a *Agent) Retry(ctx context.Context) (*Run, error) {
	r := &Run{events: make(chan Event, 64)}
	var cerr *C.panto_error
	if err := check(C.panto_agent_retry(a.p, &r.p, &cerr), cerr); err != nil {
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

// Steer sends text to the running turn: it joins the conversation at the next step boundary,
// after the step's tool results (a Steer event reports when), so the model sees it with the next
// request. Sent while tools run it waits for their results; if the model answers without tools
// first, it becomes a follow-up turn. Safe from any goroutine, also from a tool's function. A
// CodeState error means the run is over and nothing would take the text.
func (r *Run) Steer(text string) error {
	return r.send(text, false)
}

// FollowUp queues text as a new turn that starts on this run when the current turn completes:
// its events follow on Events (opened by a FollowUpStart event, ended by its own TurnComplete),
// and the channel closes only after the last turn. A CodeState error means the run is over.
func (r *Run) FollowUp(text string) error {
	return r.send(text, true)
}

func (r *Run) send(text string, followUp bool) error {
	ctext := cstring(text)
	defer free(ctext)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p == nil {
		return &Error{Code: CodeState, Message: "the run is over: its last turn has ended"}
	}
	var cerr *C.panto_error
	if followUp {
		return check(C.panto_run_follow_up(r.p, ctext, &cerr), cerr)
	}
	return check(C.panto_run_steer(r.p, ctext, &cerr), cerr)
}

// Cancel cancels the turn; safe to call from any goroutine, more than once, and after the end.
func (r *Run) Cancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil {
		C.panto_run_cancel(r.p)
	}
}
