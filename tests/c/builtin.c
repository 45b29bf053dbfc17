/* panto's built-in coding tools added in one call: the model writes a file with `write`, finds it
 * with `grep`, and bash is refused by a deny rule; every result goes back to the model. Bad options
 * and a second registration are errors that say what was wrong. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int main(void) {
    char options[1024];
    snprintf(options, sizeof options,
             "{\"cwd\": \"%s\", \"tools\": [\"write\", \"grep\", \"bash\"], \"deny\": [\"bash(rm *)\"]}",
             test_tmp());

    mock_push("{\"builder\": {\"name\": \"anthropic_tool_uses\", \"args\": {"
              "\"calls\": [{\"id\": \"toolu_01\", \"name\": \"write\", \"input\": {\"path\": \"notes.txt\", "
              "\"content\": \"first line\\nthe needle is here\\n\"}}]}}}");
    mock_push("{\"builder\": {\"name\": \"anthropic_tool_uses\", \"args\": {"
              "\"calls\": [{\"id\": \"toolu_02\", \"name\": \"grep\", \"input\": {\"pattern\": \"needle\"}},"
              " {\"id\": \"toolu_03\", \"name\": \"bash\", \"input\": {\"command\": \"rm notes.txt\"}}]}}}");
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"Done.\"}}}");

    panto_error *err = NULL;
    mock_agent m = mock_agent_new(0, "");
    panto_agent *agent = m.agent;

    CHECK_ERROR(panto_agent_add_builtin_tools(agent, "{\"tools\": [\"rm\"]}", &err), err, PANTO_ERR_CONFIG,
                "tools[0]");
    CHECK_ERROR(panto_agent_add_builtin_tools(agent, "{\"deny\": [\"bash(rm\"]}", &err), err, PANTO_ERR_CONFIG,
                "bad tool rule `bash(rm`");
    CHECK_OK(panto_agent_add_builtin_tools(agent, options, &err), err);
    CHECK_ERROR(panto_agent_add_builtin_tools(agent, options, &err), err, PANTO_ERR_TOOL, "already registered");

    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "Take a note and find it.", &run, &err), err);
    run_log log;
    int32_t status = drain_run(run, &log);
    CHECK(status == PANTO_END, "the turn ended with %s: %s", panto_status_name(status), log.error);
    panto_run_free(run);

    char path[1024];
    snprintf(path, sizeof path, "%s/notes.txt", test_tmp());
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "write did not create %s (or bash removed it)", path);
    char body[256] = {0};
    size_t n = fread(body, 1, sizeof body - 1, f);
    fclose(f);
    CHECK(n > 0 && strcmp(body, "first line\nthe needle is here\n") == 0, "notes.txt holds %s", body);

    char *second = mock_request(2);
    CHECK(second != NULL && strstr(second, "created notes.txt") != NULL, "write's result: %s", second);
    free(second);
    char *third = mock_request(3);
    CHECK(third != NULL && strstr(third, "notes.txt:2:the needle is here") != NULL, "grep's result: %s", third);
    CHECK(strstr(third, "denied by the rule `bash(rm *)`") != NULL, "bash was not denied: %s", third);
    free(third);

    mock_agent_free(&m);
    return 0;
}
