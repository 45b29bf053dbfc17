/* Sessions across processes: this program writes a conversation (with a tool call) to a
 * filesystem store, then runs itself again as a second process that finds the session by an id
 * prefix, resumes it, and sends a turn whose request carries the whole history. A second writer
 * on a session in use gets PANTO_ERR_SESSION_IN_USE. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static void note_call(void *context, const char *input_json, panto_tool_result *result) {
    (void)context;
    CHECK(strstr(input_json, "42") != NULL, "note got %s", input_json);
    panto_error *err = NULL;
    CHECK_OK(panto_tool_result_set_text(result, "noted 42", 0, &err), err);
}

static void sessions_dir(char *out, size_t cap) { snprintf(out, cap, "%s/sessions", test_tmp()); }

static panto_agent *agent_on(panto_session *session) {
    panto_error *err = NULL;
    panto_config *config = mock_config("");
    panto_agent *agent = NULL;
    CHECK_OK(panto_agent_new(config, session, &agent, &err), err);
    panto_config_free(config);
    panto_tool *tool = NULL;
    CHECK_OK(panto_tool_new("note", "Writes a note.", "{\"type\":\"object\"}", NULL, note_call, NULL, &tool, &err),
             err);
    CHECK_OK(panto_agent_add_tool(agent, tool, &err), err);
    panto_tool_free(tool);
    return agent;
}

static void run_ok(panto_agent *agent, const char *text) {
    panto_error *err = NULL;
    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, text, &run, &err), err);
    run_log log;
    int32_t status = drain_run(run, &log);
    CHECK(status == PANTO_END, "turn \"%s\" ended with %s: %s", text, panto_status_name(status), log.error);
    panto_run_free(run);
}

/* The first process: writes the session, checks a second writer is refused, and returns the id. */
static void write_session(panto_runtime *rt, char *id, size_t cap) {
    mock_push("{\"builder\": {\"name\": \"anthropic_tool_uses\", \"args\": {\"calls\": [{\"id\": \"toolu_n1\", "
              "\"name\": \"note\", \"input\": {\"number\": 42}}]}}}");
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"I will remember 42.\"}}}");

    char dir[1024];
    sessions_dir(dir, sizeof dir);
    panto_error *err = NULL;
    panto_store *store = NULL;
    CHECK_OK(panto_store_open_fs(rt, dir, &store, &err), err);
    panto_session *session = NULL;
    CHECK_OK(panto_session_create(store, &session, &err), err);
    snprintf(id, cap, "%s", panto_session_id(session));
    panto_agent *agent = agent_on(session);
    CHECK(strcmp(panto_agent_session_id(agent), id) == 0, "the agent runs on the session it was given");
    CHECK_OK(panto_agent_add_system_message(agent, "You are terse.", &err), err);
    run_ok(agent, "Remember the number 42.");

    char *json = NULL;
    CHECK_OK(panto_store_list_json(store, &json, &err), err);
    CHECK(strstr(json, id) != NULL && strstr(json, "\"last_user_message\":\"Remember the number 42.\"") != NULL,
          "listing: %s", json);
    panto_string_free(json);

    /* A second store handle on the same directory is a second writer: refused while the first
     * agent holds the session. */
    panto_store *other = NULL;
    CHECK_OK(panto_store_open_fs(rt, dir, &other, &err), err);
    panto_session *same = NULL;
    CHECK_OK(panto_session_resolve(other, id, &same, &err), err);
    panto_agent *intruder = agent_on(same);
    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(intruder, "Me too.", &run, &err), err);
    run_log log;
    CHECK(drain_run(run, &log) == PANTO_ERR_SESSION_IN_USE, "a second writer got %s: %s",
          panto_status_name(log.status), log.error);
    CHECK(strstr(log.error, id) != NULL, "the message names the session: %s", log.error);
    panto_run_free(run);
    panto_agent_free(intruder);
    panto_session_free(same);
    panto_store_free(other);

    panto_agent_free(agent);
    panto_session_free(session);
    panto_store_free(store);
}

/* The second process: finds the session by prefix, resumes it, runs a turn. */
static int resume_session(const char *id) {
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"The number is 42.\"}}}");
    panto_error *err = NULL;
    panto_runtime *rt = NULL;
    CHECK_OK(panto_runtime_new(0, &rt, &err), err);
    char dir[1024];
    sessions_dir(dir, sizeof dir);
    panto_store *store = NULL;
    CHECK_OK(panto_store_open_fs(rt, dir, &store, &err), err);

    panto_session *latest = NULL;
    CHECK_OK(panto_session_latest(store, &latest, &err), err);
    CHECK(strcmp(panto_session_id(latest), id) == 0, "latest is %s, not %s", panto_session_id(latest), id);
    panto_session_free(latest);

    char prefix[16];
    snprintf(prefix, sizeof prefix, "%.13s", id);
    panto_session *session = NULL;
    CHECK_OK(panto_session_resolve(store, prefix, &session, &err), err);
    CHECK(strcmp(panto_session_id(session), id) == 0, "prefix %s found %s", prefix, panto_session_id(session));
    char *json = NULL;
    CHECK_OK(panto_session_info_json(session, &json, &err), err);
    CHECK(strstr(json, "\"message_count\":5") != NULL, "info: %s", json);
    CHECK(strstr(json, "\"model\":\"claude-sonnet-4-5\"") != NULL, "info records the wire identity: %s", json);
    panto_string_free(json);

    panto_agent *agent = agent_on(session);
    CHECK_OK(panto_agent_conversation_json(agent, &json, &err), err);
    CHECK(strstr(json, "Remember the number 42.") != NULL && strstr(json, "noted 42") != NULL &&
              strstr(json, "I will remember 42.") != NULL && strstr(json, "You are terse.") != NULL,
          "the resumed conversation lacks history: %s", json);
    panto_string_free(json);

    size_t before = mock_request_count();
    run_ok(agent, "Which number?");
    char *request = mock_request(before + 1);
    CHECK(request != NULL, "no request from the resumed agent");
    CHECK(strstr(request, "Remember the number 42.") != NULL, "no first prompt: %s", request);
    CHECK(strstr(request, "\"tool_use_id\":\"toolu_n1\"") != NULL && strstr(request, "noted 42") != NULL,
          "no tool result: %s", request);
    CHECK(strstr(request, "I will remember 42.") != NULL, "no first answer: %s", request);
    CHECK(strstr(request, "You are terse.") != NULL, "no system prompt: %s", request);
    CHECK(strstr(request, "Which number?") != NULL, "no new prompt: %s", request);
    CHECK(strstr(request, "\"validation\":null") != NULL, "the request broke the API's rules: %s", request);
    free(request);

    panto_agent_free(agent);
    panto_session_free(session);
    panto_store_free(store);
    panto_runtime_free(rt);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "resume") == 0) {
        return resume_session(argv[2]);
    }
    panto_error *err = NULL;
    panto_runtime *rt = NULL;
    CHECK_OK(panto_runtime_new(0, &rt, &err), err);
    char id[64];
    write_session(rt, id, sizeof id);
    panto_runtime_free(rt);

    /* The second process, with the mock and scratch directory inherited through the environment. */
    fflush(NULL);
    pid_t child = fork();
    CHECK(child >= 0, "fork failed");
    if (child == 0) {
        char *child_argv[] = {argv[0], "resume", id, NULL};
        execv(argv[0], child_argv);
        _exit(127);
    }
    int wstatus = 0;
    CHECK(waitpid(child, &wstatus, 0) == child, "waitpid failed");
    CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, "the resuming process failed (status %d)", wstatus);
    printf("resume ok\n");
    return 0;
}
