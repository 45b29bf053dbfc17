/* The session tree over the C ABI: message ids as strings, a rewind two prompts back whose next
 * request carries only the new branch, and a fork (a new session, its origin in its info) whose
 * agent sends only the path to the entry it was forked at. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static void run_ok(panto_agent *agent, const char *text) {
    panto_error *err = NULL;
    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, text, &run, &err), err);
    run_log log;
    int32_t status = drain_run(run, &log);
    CHECK(status == PANTO_END, "turn \"%s\" ended with %s: %s", text, panto_status_name(status), log.error);
    panto_run_free(run);
}

static void answer(const char *text) {
    char json[256];
    snprintf(json, sizeof json, "{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"%s\"}}}", text);
    mock_push(json);
}

/* The `n`th (0-based) string of a JSON array of strings such as ["0a1b2c3d","..."]. */
static void nth_id(const char *json, size_t n, char *out, size_t cap) {
    const char *p = json;
    for (size_t i = 0; i <= n; i++) {
        p = strchr(p, '"');
        CHECK(p != NULL, "no id %zu in %s", n, json);
        const char *end = strchr(p + 1, '"');
        CHECK(end != NULL && (size_t)(end - p) < cap, "bad ids %s", json);
        if (i == n) {
            snprintf(out, cap, "%.*s", (int)(end - p - 1), p + 1);
        }
        p = end + 1;
    }
}

int main(void) {
    panto_error *err = NULL;
    panto_runtime *rt = NULL;
    CHECK_OK(panto_runtime_new(0, &rt, &err), err);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/sessions", test_tmp());
    panto_store *store = NULL;
    CHECK_OK(panto_store_open_fs(rt, dir, &store, &err), err);
    panto_session *session = NULL;
    CHECK_OK(panto_session_create(store, &session, &err), err);
    panto_config *config = mock_config("");
    panto_agent *agent = NULL;
    CHECK_OK(panto_agent_new(config, session, &agent, &err), err);

    answer("ans-one");
    answer("ans-two");
    answer("ans-three");
    run_ok(agent, "ask-one");
    run_ok(agent, "ask-two");
    run_ok(agent, "ask-three");

    char *ids = NULL;
    CHECK_OK(panto_agent_message_ids_json(agent, &ids, &err), err);
    CHECK(count_of(ids, "\"") == 12, "six ids: %s", ids);
    char first_answer[32], second_prompt[32];
    nth_id(ids, 1, first_answer, sizeof first_answer);
    nth_id(ids, 2, second_prompt, sizeof second_prompt);
    panto_string_free(ids);

    /* An answer is not a prompt; an unknown id is not one either. */
    CHECK_ERROR(panto_agent_rewind(agent, first_answer, &err), err, PANTO_ERR_STATE, "not a prompt");
    err = NULL;
    CHECK_ERROR(panto_agent_rewind(agent, "ffffffff", &err), err, PANTO_ERR_STATE, "ffffffff");
    err = NULL;

    /* Two prompts back, and ask again: only the new branch is sent. */
    CHECK_OK(panto_agent_rewind(agent, second_prompt, &err), err);
    answer("ans-two-again");
    run_ok(agent, "ask-two-again");
    char *request = mock_request(4);
    CHECK(request != NULL, "no request after the rewind");
    CHECK(strstr(request, "ask-one") && strstr(request, "ans-one") && strstr(request, "ask-two-again"),
          "the branch: %s", request);
    CHECK(!strstr(request, "ask-three") && !strstr(request, "\"ask-two\""), "the abandoned branch was sent: %s",
          request);
    free(request);

    /* Fork at the first answer: a new session, its origin recorded, sending only that path. */
    panto_session *fork = NULL;
    CHECK_OK(panto_session_fork(session, first_answer, &fork, &err), err);
    CHECK(strcmp(panto_session_id(fork), panto_session_id(session)) != 0, "a fork is a new session");
    char *info = NULL;
    CHECK_OK(panto_session_info_json(fork, &info, &err), err);
    CHECK(strstr(info, panto_session_id(session)) && strstr(info, first_answer) && strstr(info, "\"forked_from\""),
          "the fork's info names its origin: %s", info);
    panto_string_free(info);
    panto_agent *forked = NULL;
    CHECK_OK(panto_agent_new(config, fork, &forked, &err), err);
    answer("ans-fork");
    run_ok(forked, "ask-in-fork");
    request = mock_request(5);
    CHECK(request != NULL, "no request from the fork");
    CHECK(strstr(request, "ask-one") && strstr(request, "ans-one") && strstr(request, "ask-in-fork"),
          "the fork's path: %s", request);
    CHECK(!strstr(request, "ask-two"), "the fork sent more than its path: %s", request);
    free(request);

    panto_agent_free(forked);
    panto_session_free(fork);
    panto_agent_free(agent);
    panto_config_free(config);
    panto_session_free(session);
    panto_store_free(store);
    panto_runtime_free(rt);
    printf("tree ok\n");
    return 0;
}
