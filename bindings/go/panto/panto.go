// Package panto is a small idiomatic Go wrapper over libpanto, the C ABI of the panto agent
// runtime: agents that stream a model's answer as events, call tools written in Go, and persist
// sessions that can be resumed later, also by another process.
//
// # Installing
//
// The package links libpanto through cgo and finds it with pkg-config (`#cgo pkg-config:
// panto`). Install libpanto first, from a checkout of the repository:
//
//	cargo xtask install --prefix "$HOME/.local"
//	export PKG_CONFIG_PATH="$HOME/.local/lib/pkgconfig"
//
// panto.pc carries an rpath to its lib directory, so programs find libpanto.so at run time
// without LD_LIBRARY_PATH. Then, in your module:
//
//	go get example.invalid/panto/bindings/go
//
// or, against a local checkout, a replace directive in your go.mod (examples/go does this):
//
//	require example.invalid/panto/bindings/go v0.0.0
//	replace example.invalid/panto/bindings/go => /path/to/panto/bindings/go
//
// # Using
//
//	rt, _ := panto.NewRuntime(0)
//	defer rt.Close()
//	cfg, _ := panto.NewConfig(`{"provider": {"api_style": "anthropic-messages",
//	    "base_url": "https://api.anthropic.com", "model": "claude-sonnet-4-5",
//	    "api_key_env": "ANTHROPIC_API_KEY"}}`)
//	defer cfg.Close()
//	store, _ := panto.NewNullStore(rt)
//	session, _ := store.Create()
//	agent, _ := panto.NewAgent(cfg, session)
//	defer agent.Close()
//	run, _ := agent.Run(ctx, "Hello")
//	for ev := range run.Events() {
//	    fmt.Print(ev.Text()) // ev.Type, ev.JSON: docs/events.md
//	}
//	if err := run.Err(); err != nil { ... }
//
// # Conversations built by hand
//
// NewAgentWithConversation starts an agent on a new session from a conversation given as JSON
// (the shape Agent.ConversationJSON returns), Agent.AddMessageJSON appends a message, and
// Agent.CompactWithSummary compacts with a summary you wrote; all three persist as the agent's
// own messages and compactions do, so a later NewAgent on the session resumes what you built.
//
// # Valgrind
//
// Run a program under valgrind with the suppression file libpanto installs
// (share/panto/valgrind/panto.supp) and, for the Go runtime itself, the repository's
// bindings/valgrind/go-runtime.supp (docs/ffi.md, "Checking a program with valgrind").
//
// Every handle has a Close method that must be called once; handles may be closed in any order.
// libpanto copies every string it is given during the call and never keeps a pointer into Go
// memory, so nothing needs pinning.
package panto

/*
#cgo pkg-config: panto
#include <stdlib.h>
#include "panto.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"time"
	"unsafe"
)

// Status codes of libpanto's errors, every PANTO_ERR_* constant (docs/ffi.md says who returns
// each).
const (
	CodeNull             = int(C.PANTO_ERR_NULL)
	CodeUTF8             = int(C.PANTO_ERR_UTF8)
	CodeInvalidArgument  = int(C.PANTO_ERR_INVALID_ARGUMENT)
	CodeConfig           = int(C.PANTO_ERR_CONFIG)
	CodeSessionNotFound  = int(C.PANTO_ERR_SESSION_NOT_FOUND)
	CodeSessionAmbiguous = int(C.PANTO_ERR_SESSION_AMBIGUOUS)
	CodeSessionInUse     = int(C.PANTO_ERR_SESSION_IN_USE)
	CodeStore            = int(C.PANTO_ERR_STORE)
	CodeProvider         = int(C.PANTO_ERR_PROVIDER)
	CodeCancelled        = int(C.PANTO_ERR_CANCELLED)
	CodeBusy             = int(C.PANTO_ERR_BUSY)
	CodeTool             = int(C.PANTO_ERR_TOOL)
	CodeState            = int(C.PANTO_ERR_STATE)
	CodePanic            = int(C.PANTO_ERR_PANIC)
	CodeOther            = int(C.PANTO_ERR_OTHER)
)

// StatusName is the name of a status code, e.g. "PANTO_ERR_BUSY".
func StatusName(code int) string { return C.GoString(C.panto_status_name(C.int32_t(code))) }

// ABIVersion is the ABI version of the loaded library; HeaderABIVersion that of the header this
// package was compiled against. They must be equal.
func ABIVersion() int { return int(C.panto_abi_version()) }

// HeaderABIVersion is PANTO_ABI_VERSION of the header this package was compiled against.
const HeaderABIVersion = int(C.PANTO_ABI_VERSION)

// Error is a libpanto error: a negative status code and a message saying what went wrong, with
// the structured detail HTTPStatus, RetryAfter and Field give.
type Error struct {
	Code    int
	Message string

	httpStatus   int
	retryAfterMs int64
	field        string
}

// HTTPStatus is the HTTP status the provider answered with (429, 500, ...) when the error is a
// provider failure that had one; 0 otherwise.
func (e *Error) HTTPStatus() int { return e.httpStatus }

// RetryAfter is how long the provider asked to wait before trying again (its retry-after
// header), and whether it said: (0, true) means retry now, (0, false) that it did not say.
func (e *Error) RetryAfter() (time.Duration, bool) {
	if e.retryAfterMs < 0 {
		return 0, false
	}
	return time.Duration(e.retryAfterMs) * time.Millisecond, true
}

// Field is the path of the config or options field that was wrong ("provider.api_style",
// "retry.max_attempts"); "" when the error is not about one.
func (e *Error) Field() string { return e.field }

func (e *Error) Error() string {
	return fmt.Sprintf("panto: %s (%s)", e.Message, C.GoString(C.panto_status_name(C.int32_t(e.Code))))
}

// HasCode reports whether err is a libpanto *Error with this code.
func HasCode(err error, code int) bool {
	e, ok := err.(*Error)
	return ok && e.Code == code
}

// check turns a status and its error handle into a Go error, freeing the handle.
func check(status C.int32_t, cerr *C.panto_error) error {
	if cerr != nil {
		defer C.panto_error_free(cerr)
		e := &Error{
			Code:         int(C.panto_error_code(cerr)),
			Message:      C.GoString(C.panto_error_message(cerr)),
			httpStatus:   int(C.panto_error_http_status(cerr)),
			retryAfterMs: int64(C.panto_error_retry_after_ms(cerr)),
		}
		if field := C.panto_error_field(cerr); field != nil {
			e.field = C.GoString(field)
		}
		return e
	}
	if status < 0 {
		return &Error{Code: int(status), Message: "no details", retryAfterMs: -1}
	}
	return nil
}

// cstring is a C copy of s; the caller frees it (libpanto copies it again during the call).
func cstring(s string) *C.char { return C.CString(s) }

func free(p *C.char) { C.free(unsafe.Pointer(p)) }

// takeString copies an owned string from libpanto and frees it.
func takeString(p *C.char) string {
	defer C.panto_string_free(p)
	return C.GoString(p)
}

// Version is the loaded library's version, e.g. "0.1.0".
func Version() string { return C.GoString(C.panto_version()) }

// HeaderVersion is the version of the header this package was compiled against.
const HeaderVersion = C.PANTO_VERSION

// Runtime owns the threads libpanto works on.
type Runtime struct{ p *C.panto_runtime }

// NewRuntime starts a runtime with this many worker threads (0: one per CPU).
func NewRuntime(threads int) (*Runtime, error) {
	var r Runtime
	var cerr *C.panto_error
	if err := check(C.panto_runtime_new(C.uint32_t(threads), &r.p, &cerr), cerr); err != nil {
		return nil, err
	}
	return &r, nil
}

// Close releases the runtime; it stops once every handle made from it is closed too.
func (r *Runtime) Close() { C.panto_runtime_free(r.p); r.p = nil }

// Config is an agent configuration (the JSON shape is in docs/ffi.md).
type Config struct{ p *C.panto_config }

// NewConfig parses a configuration document. Its optional "policy" object (deny and allow
// rules, command hooks, approval mode; docs/ffi.md) is put in front of every tool of the agents
// made with it, built-in and MCP alike.
func NewConfig(doc string) (*Config, error) {
	cdoc := cstring(doc)
	defer free(cdoc)
	var c Config
	var cerr *C.panto_error
	if err := check(C.panto_config_new_json(cdoc, &c.p, &cerr), cerr); err != nil {
		return nil, err
	}
	return &c, nil
}

// Close frees the configuration; agents keep their own copy.
func (c *Config) Close() { C.panto_config_free(c.p); c.p = nil }

// Store is where sessions are kept.
type Store struct{ p *C.panto_store }

// OpenFileStore opens the filesystem store over dir (one JSONL file per session).
func OpenFileStore(rt *Runtime, dir string) (*Store, error) {
	cdir := cstring(dir)
	defer free(cdir)
	var s Store
	var cerr *C.panto_error
	if err := check(C.panto_store_open_fs(rt.p, cdir, &s.p, &cerr), cerr); err != nil {
		return nil, err
	}
	return &s, nil
}

// NewNullStore is a store that persists nothing.
func NewNullStore(rt *Runtime) (*Store, error) {
	var s Store
	var cerr *C.panto_error
	if err := check(C.panto_store_new_null(rt.p, &s.p, &cerr), cerr); err != nil {
		return nil, err
	}
	return &s, nil
}

// Close releases the store handle; sessions and agents made from it keep the store open.
func (s *Store) Close() { C.panto_store_free(s.p); s.p = nil }

// SessionInfo is what a listing shows of a session.
type SessionInfo struct {
	ID              string          `json:"id"`
	Created         string          `json:"created"`
	Modified        string          `json:"modified"`
	LastPromptAt    *string         `json:"last_prompt_at"`
	MessageCount    int             `json:"message_count"`
	LastUserMessage *string         `json:"last_user_message"`
	Wire            json.RawMessage `json:"wire"`
	ForkedFrom      *ForkOrigin     `json:"forked_from"`
	// Cwd is the working directory of the process that created the session, if known.
	Cwd *string `json:"cwd"`
}

// ForkOrigin is where a forked session came from.
type ForkOrigin struct {
	Session string `json:"session"`
	Entry   string `json:"entry"`
}

// List returns the store's sessions, newest first.
func (s *Store) List() ([]SessionInfo, error) {
	var out *C.char
	var cerr *C.panto_error
	if err := check(C.panto_store_list_json(s.p, &out, &cerr), cerr); err != nil {
		return nil, err
	}
	var infos []SessionInfo
	if err := json.Unmarshal([]byte(takeString(out)), &infos); err != nil {
		return nil, fmt.Errorf("panto: session list: %w", err)
	}
	return infos, nil
}

// Session is one session of a store.
type Session struct{ p *C.panto_session }

// Create makes a new session (nothing is written before its first answer).
func (s *Store) Create() (*Session, error) {
	var out Session
	var cerr *C.panto_error
	if err := check(C.panto_session_create(s.p, &out.p, &cerr), cerr); err != nil {
		return nil, err
	}
	return &out, nil
}

// Resolve finds a session by id or unique id prefix.
func (s *Store) Resolve(idOrPrefix string) (*Session, error) {
	cid := cstring(idOrPrefix)
	defer free(cid)
	var out Session
	var cerr *C.panto_error
	if err := check(C.panto_session_resolve(s.p, cid, &out.p, &cerr), cerr); err != nil {
		return nil, err
	}
	return &out, nil
}

// Latest is the most recently prompted session.
func (s *Store) Latest() (*Session, error) {
	var out Session
	var cerr *C.panto_error
	if err := check(C.panto_session_latest(s.p, &out.p, &cerr), cerr); err != nil {
		return nil, err
	}
	return &out, nil
}

// ID is the session id.
func (s *Session) ID() string { return C.GoString(C.panto_session_id(s.p)) }

// Fork starts a new session whose history is this one's path up to and including entryID (an
// id from Agent.MessageIDs); its info records where it came from. Make an agent on it to go on.
func (s *Session) Fork(entryID string) (*Session, error) {
	cid := cstring(entryID)
	defer free(cid)
	var out Session
	var cerr *C.panto_error
	if err := check(C.panto_session_fork(s.p, cid, &out.p, &cerr), cerr); err != nil {
		return nil, err
	}
	return &out, nil
}

// Info is what a listing shows of the session, as of when the handle was made.
func (s *Session) Info() (SessionInfo, error) {
	var out *C.char
	var cerr *C.panto_error
	var info SessionInfo
	if err := check(C.panto_session_info_json(s.p, &out, &cerr), cerr); err != nil {
		return info, err
	}
	if err := json.Unmarshal([]byte(takeString(out)), &info); err != nil {
		return info, fmt.Errorf("panto: session info: %w", err)
	}
	return info, nil
}

// Close frees the session handle; agents made from it keep their own copy.
func (s *Session) Close() { C.panto_session_free(s.p); s.p = nil }

// Usage is the token usage and cost of an agent so far.
type Usage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	CacheReadTokens    int64 `json:"cache_read_tokens"`
	CacheWriteTokens   int64 `json:"cache_write_tokens"`
	CacheWrite1hTokens int64 `json:"cache_write_1h_tokens"`
	// ReasoningTokens is the part of OutputTokens the model spent reasoning.
	ReasoningTokens int64  `json:"reasoning_tokens"`
	CostMicroCents  *int64 `json:"cost_micro_cents"`
}
