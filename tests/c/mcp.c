/* A tool of a real MCP server called through libpanto: the everything server (installed by
 * `cargo xtask mcp-servers`; its path comes in PANTO_MCP_EVERYTHING, set by `cargo xtask
 * ffi-test`) is added from JSON, the model calls its `echo` tool, and the server's real answer
 * reaches the model. A server that does not start is a warning naming it and its stderr; bad JSON
 * is an error naming the server and the field. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int main(void) {
    const char *everything = getenv("PANTO_MCP_EVERYTHING");
    CHECK(everything != NULL && everything[0] != '\0',
          "PANTO_MCP_EVERYTHING is not set: run this through `cargo xtask ffi-test`, after `cargo xtask "
          "mcp-servers` installed the real MCP servers");

    mock_push("{\"builder\": {\"name\": \"anthropic_tool_uses\", \"args\": {"
              "\"calls\": [{\"id\": \"toolu_01\", \"name\": \"everything__echo\", "
              "\"input\": {\"message\": \"papaya-from-c\"}}]}}}");
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"Echoed.\"}}}");

    panto_error *err = NULL;
    mock_agent m = mock_agent_new(0, "");
    panto_agent *agent = m.agent;

    char *warnings = NULL;
    CHECK_ERROR(panto_agent_add_mcp_servers(agent, "{\"servers\": {\"git\": {\"command\": \"x\", \"token\": 1}}}",
                                            &warnings, &err),
                err, PANTO_ERR_CONFIG, "token");
    CHECK(warnings == NULL, "a failed call handed back warnings: %s", warnings);
    CHECK_ERROR(panto_agent_add_mcp_servers(agent, NULL, NULL, &err), err, PANTO_ERR_NULL, "servers_json");

    char servers[2048];
    snprintf(servers, sizeof servers,
             "{\"servers\": {\"everything\": {\"command\": \"%s\", \"args\": [\"stdio\"]},"
             " \"broken\": {\"command\": \"/bin/sh\", \"args\": [\"-c\", \"echo c-side-boom >&2; exit 3\"]}},"
             " \"read_only\": true}",
             everything);
    CHECK_OK(panto_agent_add_mcp_servers(agent, servers, &warnings, &err), err);
    CHECK(warnings != NULL && strstr(warnings, "MCP server `broken`") != NULL && strstr(warnings, "c-side-boom") != NULL,
          "the broken server's warning: %s", warnings ? warnings : "(none)");
    panto_string_free(warnings);
    warnings = NULL;

    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "Echo something.", &run, &err), err);
    run_log log;
    int32_t status = drain_run(run, &log);
    CHECK(status == PANTO_END, "the turn ended with %s: %s", panto_status_name(status), log.error);
    panto_run_free(run);

    char *first = mock_request(1);
    CHECK(first != NULL && strstr(first, "\"everything__echo\"") != NULL, "echo was not offered: %s", first);
    /* read_only: a tool the server does not annotate read-only is not offered. */
    CHECK(strstr(first, "everything__gzip-file-as-resource") == NULL, "a writing tool was offered: %s", first);
    free(first);
    char *second = mock_request(2);
    CHECK(second != NULL && strstr(second, "Echo: papaya-from-c") != NULL, "echo's result: %s", second);
    free(second);

    /* Freeing the agent stops the server. */
    mock_agent_free(&m);
    return 0;
}
