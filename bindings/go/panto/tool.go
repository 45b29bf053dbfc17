package panto

/*
#include <stdint.h>
#include <stdlib.h>
#include "panto.h"

panto_tool_call_fn panto_go_call_fn(void);
panto_tool_drop_fn panto_go_drop_fn(void);
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"runtime/cgo"
	"unsafe"
)

// ToolFunc runs one call of a tool: input is the model's arguments (a JSON object). The string
// is what the model sees; a non-nil error is shown to the model as a failed call instead. Calls
// may run concurrently, on goroutines libpanto's threads enter through cgo.
type ToolFunc func(input json.RawMessage) (string, error)

// Tool is a tool the model may call, implemented by a Go function.
type Tool struct{ p *C.panto_tool }

// NewTool makes a tool. schema is the JSON schema of the input object.
func NewTool(name, description, schema string, fn ToolFunc) (*Tool, error) {
	cname, cdesc, cschema := cstring(name), cstring(description), cstring(schema)
	defer free(cname)
	defer free(cdesc)
	defer free(cschema)
	// libpanto passes the context back to the callbacks and never dereferences it. It must not
	// point into Go memory (no pinning in Go 1.19), so the handle lives in C memory.
	ctx := (*C.uintptr_t)(C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0)))))
	*ctx = C.uintptr_t(cgo.NewHandle(fn))
	var t Tool
	var cerr *C.panto_error
	status := C.panto_tool_new(cname, cdesc, cschema, unsafe.Pointer(ctx), C.panto_go_call_fn(),
		C.panto_go_drop_fn(), &t.p, &cerr)
	if err := check(status, cerr); err != nil {
		// On failure libpanto does not call drop: the context is still ours.
		releaseContext(unsafe.Pointer(ctx))
		return nil, err
	}
	return &t, nil
}

// Close releases the tool handle; agents it was added to keep the tool until they are closed.
func (t *Tool) Close() { C.panto_tool_free(t.p); t.p = nil }

func releaseContext(ctx unsafe.Pointer) {
	cgo.Handle(*(*C.uintptr_t)(ctx)).Delete()
	C.free(ctx)
}

//export pantoGoToolCall
func pantoGoToolCall(ctx unsafe.Pointer, input *C.char, result *C.panto_tool_result) {
	fn := cgo.Handle(*(*C.uintptr_t)(ctx)).Value().(ToolFunc)
	text, isError := invoke(fn, json.RawMessage(C.GoString(input)))
	ctext := cstring(text)
	defer free(ctext)
	C.panto_tool_result_set_text(result, ctext, C.int32_t(isError), nil)
}

// invoke runs fn, turning an error or a panic into an error result for the model.
func invoke(fn ToolFunc, input json.RawMessage) (text string, isError int) {
	defer func() {
		if r := recover(); r != nil {
			text, isError = fmt.Sprintf("the tool panicked: %v", r), 1
		}
	}()
	out, err := fn(input)
	if err != nil {
		return err.Error(), 1
	}
	return out, 0
}

//export pantoGoToolDrop
func pantoGoToolDrop(ctx unsafe.Pointer) {
	releaseContext(ctx)
}
