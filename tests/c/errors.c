/* Every error path returns its own code and a message that says what was wrong and where:
 * NULL arguments, invalid UTF-8, bad config JSON, unknown sessions, a busy agent, provider
 * failures, bad tools. Also: _free(NULL) is harmless, errors are optional, and handles may be
 * freed in any order. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static void config_errors(void) {
    panto_error *err = NULL;

    /* A variable still holding a live handle keeps it through a failing call (outputs are written
       only on success): it is freed once, at the end, and valgrind sees no leak. */
    panto_config *held = NULL;
    CHECK_OK(panto_config_new_json("{\"provider\": {\"api_style\": \"openai-chat\", \"base_url\": \"x\", "
                                   "\"model\": \"m\", \"api_key\": \"k\"}}",
                                   &held, &err),
             err);
    panto_config *config = held;
    CHECK_ERROR(panto_config_new_json(NULL, &config, &err), err, PANTO_ERR_NULL, "argument `json` is NULL");
    CHECK(config == held, "a failed call does not touch its output");
    CHECK_ERROR(panto_config_new_json("{\"provider\": {\"api_style\": \"openai-chat\"}}", &config, &err), err,
                PANTO_ERR_CONFIG, "missing field");
    CHECK(config == held, "a failed call does not touch its output");
    panto_config_free(config);
    config = NULL;

    /* The field that was wrong, without parsing the message. */
    CHECK(panto_config_new_json("{\"provider\": {\"api_style\": \"openai-chat\", \"base_url\": \"x\", "
                                "\"model\": \"m\"}, \"retry\": {\"max_attempts\": 0}}",
                                &config, &err) == PANTO_ERR_CONFIG,
          "max_attempts 0 is refused");
    CHECK(panto_error_field(err) != NULL && strcmp(panto_error_field(err), "retry.max_attempts") == 0,
          "the field is named: %s", panto_error_field(err) ? panto_error_field(err) : "(NULL)");
    CHECK(panto_error_http_status(err) == 0 && panto_error_retry_after_ms(err) == -1,
          "a config error has no HTTP status or retry-after");
    panto_error_free(err);
    err = NULL;
    CHECK(panto_error_field(NULL) == NULL && panto_error_http_status(NULL) == 0 &&
              panto_error_retry_after_ms(NULL) == -1,
          "the accessors accept NULL");

    /* A key pasted where a name belongs is refused naming the field, never repeated. */
    const char *pasted[][2] = {
        {"{\"provider\": {\"api_style\": \"openai-chat\", \"base_url\": \"x\", \"model\": \"m\", "
         "\"api_key_env\": \"sk-ant-api03-AbCdEf0123456789\"}}",
         "provider.api_key_env"},
        {"{\"provider\": {\"api_style\": \"sk-ant-api03-AbCdEf0123456789\", \"base_url\": \"x\", "
         "\"model\": \"m\"}}",
         "provider.api_style"},
    };
    for (size_t i = 0; i < sizeof pasted / sizeof pasted[0]; i++) {
        CHECK(panto_config_new_json(pasted[i][0], &config, &err) == PANTO_ERR_CONFIG, "a pasted key is refused");
        const char *message = panto_error_message(err);
        CHECK(strstr(message, pasted[i][1]) != NULL, "the message names %s: %s", pasted[i][1], message);
        CHECK(strstr(message, "AbCdEf0123456789") == NULL, "the message repeats the key: %s", message);
        CHECK(panto_error_field(err) != NULL && strcmp(panto_error_field(err), pasted[i][1]) == 0,
              "the field is %s", pasted[i][1]);
        panto_error_free(err);
        err = NULL;
    }
    CHECK_ERROR(panto_config_new_json("{\"provider\": {\"model\": \"caf\xc3\x28\"}}", &config, &err), err,
                PANTO_ERR_UTF8, "argument `json` is not valid UTF-8 (invalid byte at offset 27)");
    CHECK_ERROR(panto_config_new_json("{\"provider\": ", &config, &err), err, PANTO_ERR_CONFIG,
                "config is not JSON: EOF while parsing");
    CHECK_ERROR(panto_config_new_json("{\"provider\": {\"api_style\": \"anthropic-messages\", \"base_url\": \"x\"}}",
                                      &config, &err),
                err, PANTO_ERR_CONFIG, "missing field `model`");
    CHECK_ERROR(panto_config_new_json("{\"provider\": {\"api_style\": \"carrier-pigeon\", \"base_url\": \"x\", "
                                      "\"model\": \"m\"}}",
                                      &config, &err),
                err, PANTO_ERR_CONFIG, "config: provider.api_style: unknown variant `carrier-pigeon`");
    CHECK_ERROR(panto_config_new_json("{\"provider\": {\"api_style\": \"openai-chat\", \"base_url\": \"x\", "
                                      "\"model\": \"m\"}, \"retry\": {\"max_attempts\": \"two\"}}",
                                      &config, &err),
                err, PANTO_ERR_CONFIG, "config: retry.max_attempts: invalid type");
    CHECK_ERROR(panto_config_new_json("{\"provider\": {\"api_style\": \"openai-chat\", \"base_url\": \"x\", "
                                      "\"model\": \"m\", \"api_key_env\": \"PANTO_TEST_UNSET_KEY\"}}",
                                      &config, &err),
                err, PANTO_ERR_CONFIG, "\"PANTO_TEST_UNSET_KEY\", which is not set");
    CHECK_ERROR(panto_config_new_json("{\"provider\": {\"api_style\": \"openai-chat\", \"base_url\": \"x\"}}", NULL,
                                      &err),
                err, PANTO_ERR_NULL, "argument `out` is NULL");

    /* The variable named by api_key_env is read at this call. */
    setenv("PANTO_TEST_SET_KEY", "sk-from-env", 1);
    CHECK_OK(panto_config_new_json("{\"provider\": {\"api_style\": \"openai-chat\", \"base_url\": \"x\", "
                                   "\"model\": \"m\", \"api_key_env\": \"PANTO_TEST_SET_KEY\"}}",
                                   &config, &err),
             err);
    panto_config_free(config);

    /* Errors are optional: the status alone still tells. */
    CHECK(panto_config_new_json("nope", &config, NULL) == PANTO_ERR_CONFIG, "status without an error");
}

static void session_errors(panto_runtime *rt) {
    panto_error *err = NULL;
    panto_store *store = NULL;
    CHECK_ERROR(panto_store_open_fs(NULL, test_tmp(), &store, &err), err, PANTO_ERR_NULL,
                "argument `runtime` is NULL");
    CHECK_ERROR(panto_store_open_fs(rt, "", &store, &err), err, PANTO_ERR_INVALID_ARGUMENT, "`dir` is empty");
    CHECK_ERROR(panto_store_open_fs(rt, "bad\xff", &store, &err), err, PANTO_ERR_UTF8,
                "argument `dir` is not valid UTF-8 (invalid byte at offset 3)");

    char dir[1024];
    snprintf(dir, sizeof dir, "%s/errors-sessions", test_tmp());
    CHECK_OK(panto_store_open_fs(rt, dir, &store, &err), err);

    panto_session *session = NULL;
    CHECK_ERROR(panto_session_resolve(store, "0123abcd", &session, &err), err, PANTO_ERR_SESSION_NOT_FOUND,
                "no session matches \"0123abcd\"");
    CHECK_ERROR(panto_session_resolve(store, "../../etc/passwd", &session, &err), err,
                PANTO_ERR_INVALID_ARGUMENT, "invalid session id \"../../etc/passwd\"");
    CHECK_ERROR(panto_session_resolve(store, NULL, &session, &err), err, PANTO_ERR_NULL,
                "argument `id_or_prefix` is NULL");
    CHECK_ERROR(panto_session_resolve(NULL, "0123", &session, &err), err, PANTO_ERR_NULL,
                "argument `store` is NULL");
    CHECK_ERROR(panto_session_latest(store, &session, &err), err, PANTO_ERR_SESSION_NOT_FOUND,
                "the store holds no sessions");
    CHECK(session == NULL, "no session handed out");

    char *json = NULL;
    CHECK_OK(panto_store_list_json(store, &json, &err), err);
    CHECK(strcmp(json, "[]") == 0, "an empty directory lists nothing: %s", json);
    panto_string_free(json);
    CHECK_ERROR(panto_store_list_json(store, NULL, &err), err, PANTO_ERR_NULL, "argument `json_out` is NULL");
    panto_store_free(store);
}

static void noop_call(void *context, const char *input_json, panto_tool_result *result) {
    (void)context;
    (void)input_json;
    panto_tool_result_set_text(result, "ok", 0, NULL);
}

static void tool_errors(void) {
    panto_error *err = NULL;
    panto_tool *tool = NULL;
    const char *schema = "{\"type\":\"object\"}";
    CHECK_ERROR(panto_tool_new("has space", "d", schema, NULL, noop_call, NULL, &tool, &err), err,
                PANTO_ERR_INVALID_ARGUMENT, "tool name \"has space\" must be 1 to 64 characters");
    CHECK_ERROR(panto_tool_new("t", "d", "{\"type\":", NULL, noop_call, NULL, &tool, &err), err,
                PANTO_ERR_INVALID_ARGUMENT, "schema_json of tool \"t\" is not JSON");
    CHECK_ERROR(panto_tool_new("t", "d", "[1]", NULL, noop_call, NULL, &tool, &err), err,
                PANTO_ERR_INVALID_ARGUMENT, "must be a JSON object");
    /* Tool input is always an object: a schema of another type would fail every request. */
    CHECK_ERROR(panto_tool_new("t", "d", "{\"type\":\"string\"}", NULL, noop_call, NULL, &tool, &err), err,
                PANTO_ERR_INVALID_ARGUMENT, "field `type` must be \"object\"");
    CHECK_ERROR(panto_tool_new("t", "d", "{\"properties\":{}}", NULL, noop_call, NULL, &tool, &err), err,
                PANTO_ERR_INVALID_ARGUMENT, "field `type` is missing");
    CHECK_ERROR(panto_tool_new("t", "d", schema, NULL, NULL, NULL, &tool, &err), err, PANTO_ERR_NULL,
                "argument `call` is NULL");
    CHECK_ERROR(panto_tool_new("t", NULL, schema, NULL, noop_call, NULL, &tool, &err), err, PANTO_ERR_NULL,
                "argument `description` is NULL");
    CHECK_ERROR(panto_tool_new("t", "caf\xe9", schema, NULL, noop_call, NULL, &tool, &err), err, PANTO_ERR_UTF8,
                "argument `description` is not valid UTF-8 (invalid byte at offset 3)");
    CHECK(tool == NULL, "no tool handed out");
    CHECK_ERROR(panto_tool_result_set_text(NULL, "x", 0, &err), err, PANTO_ERR_NULL, "argument `result` is NULL");
}

/* Takes ownership of `rt`. */
static void agent_errors(panto_runtime *rt) {
    panto_error *err = NULL;
    panto_store *store = NULL;
    CHECK_OK(panto_store_new_null(rt, &store, &err), err);
    panto_session *session = NULL;
    CHECK_OK(panto_session_create(store, &session, &err), err);
    panto_config *config = mock_config("");
    panto_agent *agent = NULL;
    CHECK_ERROR(panto_agent_new(NULL, session, &agent, &err), err, PANTO_ERR_NULL, "argument `config` is NULL");
    CHECK_ERROR(panto_agent_new(config, NULL, &agent, &err), err, PANTO_ERR_NULL, "argument `session` is NULL");
    CHECK_OK(panto_agent_new(config, session, &agent, &err), err);

    panto_run *run = NULL;
    CHECK_ERROR(panto_agent_run(agent, NULL, &run, &err), err, PANTO_ERR_NULL, "argument `text` is NULL");
    CHECK_ERROR(panto_agent_run(agent, "ok then \xc0\xaf", &run, &err), err, PANTO_ERR_UTF8,
                "argument `text` is not valid UTF-8 (invalid byte at offset 8)");
    CHECK_ERROR(panto_agent_run(NULL, "hi", &run, &err), err, PANTO_ERR_NULL, "argument `agent` is NULL");
    CHECK_ERROR(panto_agent_run(agent, "hi", NULL, &err), err, PANTO_ERR_NULL, "argument `run` is NULL");
    CHECK_ERROR(panto_agent_compact(agent, NULL, NULL, NULL, &err), err, PANTO_ERR_STATE, "nothing to compact");
    CHECK_ERROR(panto_agent_add_system_message(agent, NULL, &err), err, PANTO_ERR_NULL, "argument `text` is NULL");

    /* The provider fails (the mock has no reply queued: HTTP 500, and retries are off). */
    CHECK_OK(panto_agent_run(agent, "hi", &run, &err), err);
    run_log log;
    CHECK(drain_run(run, &log) == PANTO_ERR_PROVIDER, "expected a provider error, got %s",
          panto_status_name(log.status));
    CHECK(strstr(log.error, "HTTP 500") != NULL && strstr(log.error, "no scripted reply") != NULL, "message: %s",
          log.error);
    panto_event *event = NULL;
    CHECK(panto_run_next_event(run, 0, &event, &err) == PANTO_END && err == NULL,
          "after its error a run reports PANTO_END");
    CHECK_ERROR(panto_run_next_event(run, 0, NULL, &err), err, PANTO_ERR_NULL, "argument `event` is NULL");
    panto_run_free(run);

    /* While a run is live the agent is busy. */
    mock_push("{\"hang\": true}");
    CHECK_OK(panto_agent_run(agent, "hang on", &run, &err), err);
    panto_run *second = NULL;
    CHECK_ERROR(panto_agent_run(agent, "again", &second, &err), err, PANTO_ERR_BUSY, "live run");
    char *json = NULL;
    CHECK_ERROR(panto_agent_conversation_json(agent, &json, &err), err, PANTO_ERR_BUSY, "live run");
    CHECK_ERROR(panto_agent_add_system_message(agent, "x", &err), err, PANTO_ERR_BUSY, "live run");
    CHECK_ERROR(panto_agent_set_config(agent, config, &err), err, PANTO_ERR_BUSY, "live run");
    /* Usage and the session id are always available. */
    CHECK_OK(panto_agent_usage_json(agent, &json, &err), err);
    panto_string_free(json);
    CHECK(panto_agent_session_id(agent) != NULL && strlen(panto_agent_session_id(agent)) == 36,
          "session id: %s", panto_agent_session_id(agent));
    CHECK(panto_run_next_event(run, 50, &event, &err) == PANTO_TIMEOUT && event == NULL && err == NULL,
          "a hanging provider times out the wait");
    /* Freeing the live run cancels it and waits, so the agent is idle right after. */
    panto_run_free(run);
    CHECK_OK(panto_agent_conversation_json(agent, &json, &err), err);
    panto_string_free(json);

    CHECK(panto_run_cancel(NULL) == PANTO_ERR_NULL, "cancel(NULL)");
    CHECK_ERROR(panto_run_next_event(NULL, 0, &event, &err), err, PANTO_ERR_NULL, "argument `run` is NULL");

    /* Handles freed in the "wrong" order, the runtime first: everything keeps what it needs
     * alive. */
    panto_runtime_free(rt);
    panto_store_free(store);
    panto_session_free(session);
    panto_config_free(config);
    CHECK_OK(panto_agent_add_system_message(agent, "Still works.", &err), err);
    panto_agent_free(agent);
}

int main(void) {
    /* NULL everywhere a handle may be freed or read. */
    panto_runtime_free(NULL);
    panto_store_free(NULL);
    panto_session_free(NULL);
    panto_config_free(NULL);
    panto_agent_free(NULL);
    panto_run_free(NULL);
    panto_event_free(NULL);
    panto_tool_free(NULL);
    panto_error_free(NULL);
    panto_string_free(NULL);
    CHECK(panto_error_code(NULL) == PANTO_ERR_NULL, "error_code(NULL)");
    CHECK(strcmp(panto_error_message(NULL), "") == 0, "error_message(NULL)");
    CHECK(panto_event_kind(NULL) == 0 && strcmp(panto_event_json(NULL), "") == 0, "event getters on NULL");
    CHECK(panto_session_id(NULL) == NULL && panto_agent_session_id(NULL) == NULL, "id getters on NULL");

    panto_error *err = NULL;
    CHECK_ERROR(panto_runtime_new(1, NULL, &err), err, PANTO_ERR_NULL, "argument `out` is NULL");
    panto_runtime *rt = NULL;
    CHECK_OK(panto_runtime_new(2, &rt, &err), err);

    config_errors();
    session_errors(rt);
    tool_errors();

    /* The runtime handle may go first: the agent below keeps the runtime alive. */
    panto_runtime *rt2 = NULL;
    CHECK_OK(panto_runtime_new(1, &rt2, &err), err);
    agent_errors(rt2); /* frees rt2 */

    panto_runtime_free(rt);
    printf("errors ok\n");
    return 0;
}
