package panto

/*
#include <stdint.h>
#include "panto.h"

panto_log_fn panto_go_log_fn(void);
*/
import "C"

import (
	"encoding/json"
	"sync"
	"unsafe"
)

// LogLevel is how much SetLogger passes on (docs/observability.md lists what each level holds).
type LogLevel int

// The levels, least to most verbose.
const (
	LogOff   = LogLevel(C.PANTO_LOG_OFF)
	LogError = LogLevel(C.PANTO_LOG_ERROR)
	LogWarn  = LogLevel(C.PANTO_LOG_WARN)
	LogInfo  = LogLevel(C.PANTO_LOG_INFO)
	LogDebug = LogLevel(C.PANTO_LOG_DEBUG)
	LogTrace = LogLevel(C.PANTO_LOG_TRACE)
)

// String is the level's name: "off", "error", "warn", "info", "debug", "trace".
func (l LogLevel) String() string {
	switch l {
	case LogOff:
		return "off"
	case LogError:
		return "error"
	case LogWarn:
		return "warn"
	case LogInfo:
		return "info"
	case LogDebug:
		return "debug"
	case LogTrace:
		return "trace"
	}
	return "unknown"
}

// LogFunc receives one log record: an event (message is its text, e.g. "retrying the provider
// request") or a span as it closes (message is the span's name, e.g. "chat"). fields is the
// record's fields (numbers as float64) plus "log.kind" ("event" or "span"), "log.name",
// "log.target" and, for an event inside a span, "log.span". It is called on libpanto's threads,
// possibly concurrently; it must return quickly and must not call SetLogger.
type LogFunc func(level LogLevel, message string, fields map[string]any)

// logMu guards logFn; the C side holds its own lock around each call, so a replaced function is
// never called after SetLogger returns.
var (
	logMu sync.RWMutex
	logFn LogFunc
)

// SetLogger hands panto's tracing spans and events (docs/observability.md) at level or more
// severe to fn, for the whole process; a later call replaces fn and level, and a nil fn or
// LogOff turns logging off. The API key never reaches fn; message and tool content only for
// agents whose config sets "log_content": true. It fails when the process already has another
// tracing subscriber (a Rust host's) or when called from inside fn.
func SetLogger(level LogLevel, fn LogFunc) error {
	var cerr *C.panto_error
	if fn == nil || level == LogOff {
		status := C.panto_log_set_callback(C.PANTO_LOG_OFF, nil, nil, &cerr)
		if err := check(status, cerr); err != nil {
			return err
		}
		// No call is running now: libpanto waited for them.
		logMu.Lock()
		logFn = nil
		logMu.Unlock()
		return nil
	}
	logMu.Lock()
	previous := logFn
	logFn = fn
	logMu.Unlock()
	status := C.panto_log_set_callback(C.int32_t(level), C.panto_go_log_fn(), nil, &cerr)
	if err := check(status, cerr); err != nil {
		logMu.Lock()
		logFn = previous
		logMu.Unlock()
		return err
	}
	return nil
}

//export pantoGoLog
func pantoGoLog(userdata unsafe.Pointer, level C.int32_t, message *C.char, fieldsJSON *C.char) {
	logMu.RLock()
	fn := logFn
	logMu.RUnlock()
	if fn == nil {
		return
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(C.GoString(fieldsJSON)), &fields); err != nil {
		fields = map[string]any{"log.fields_error": err.Error()}
	}
	// A panic must not unwind into libpanto's thread: the record is lost instead.
	defer func() { _ = recover() }()
	fn(LogLevel(level), C.GoString(message), fields)
}
