// C trampolines between libpanto's callback types and the Go functions exported in tool.go and
// log.go.
// They exist because cgo exports take `char *` where libpanto passes `const char *`, and a file
// with //export directives may only declare C functions, not define them.
#include "panto.h"
#include "_cgo_export.h"

static void panto_go_call(void *context, const char *input_json, panto_tool_result *result) {
    pantoGoToolCall(context, (char *)input_json, result);
}

static void panto_go_drop(void *context) { pantoGoToolDrop(context); }

panto_tool_call_fn panto_go_call_fn(void) { return panto_go_call; }

panto_tool_drop_fn panto_go_drop_fn(void) { return panto_go_drop; }

static void panto_go_log(void *userdata, int32_t level, const char *message, const char *fields_json) {
    pantoGoLog(userdata, level, (char *)message, (char *)fields_json);
}

panto_log_fn panto_go_log_fn(void) { return panto_go_log; }
