/* The config's policy in front of an MCP server's tools: a deny rule and a command hook, given in
 * libpanto's config JSON, refuse calls of the everything server's tools (PANTO_MCP_EVERYTHING, set
 * by `cargo xtask ffi-test`), and the model reads each refusal as the call's result; the server
 * never sees the calls. A policy that does not parse is PANTO_ERR_CONFIG naming its field. */
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

    panto_error *err = NULL;
    panto_config *bad = NULL;
    CHECK_ERROR(panto_config_new_json("{\"provider\": {\"api_style\": \"openai-chat\", \"base_url\": \"http://h/v1\","
                                      " \"model\": \"m\"}, \"policy\": {\"deny\": [\"bash(rm\"]}}",
                                      &bad, &err),
                err, PANTO_ERR_CONFIG, "policy.deny[0]");
    CHECK(bad == NULL, "a bad policy made a config");

    mock_push("{\"builder\": {\"name\": \"anthropic_tool_uses\", \"args\": {\"calls\": ["
              "{\"id\": \"toolu_01\", \"name\": \"everything__echo\", \"input\": {\"message\": \"kiwi-from-c\"}},"
              "{\"id\": \"toolu_02\", \"name\": \"everything__get-sum\", \"input\": {\"a\": 2, \"b\": 3}}]}}}");
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"Refused.\"}}}");

    mock_agent m = mock_agent_new(0, "\"policy\": {\"deny\": [\"everything__get-sum\"],"
                                     " \"hooks\": [{\"match\": \"everything__ec*\","
                                     " \"command\": \"echo no-echo-from-c >&2; exit 1\", \"timeout_secs\": 30}]}");
    panto_agent *agent = m.agent;

    char servers[1024];
    snprintf(servers, sizeof servers, "{\"servers\": {\"everything\": {\"command\": \"%s\", \"args\": [\"stdio\"]}}}",
             everything);
    char *warnings = NULL;
    CHECK_OK(panto_agent_add_mcp_servers(agent, servers, &warnings, &err), err);
    CHECK(warnings == NULL, "the server did not start: %s", warnings);

    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "Echo and add.", &run, &err), err);
    run_log log;
    int32_t status = drain_run(run, &log);
    CHECK(status == PANTO_END, "the turn ended with %s: %s", panto_status_name(status), log.error);
    panto_run_free(run);

    char *second = mock_request(2);
    CHECK(second != NULL, "no second request");
    /* The hook's stderr is the echo call's result; the deny rule names itself for get-sum. */
    CHECK(strstr(second, "the call was denied: no-echo-from-c") != NULL, "the hook's refusal: %s", second);
    CHECK(strstr(second, "the everything__get-sum call is denied by the rule `everything__get-sum`") != NULL,
          "the deny rule's refusal: %s", second);
    /* Neither call reached the server. */
    CHECK(strstr(second, "Echo: kiwi-from-c") == NULL, "echo ran: %s", second);
    free(second);

    mock_agent_free(&m);
    return 0;
}
