/* What a new embedder runs into first: a run that ends early keeps the agent busy until its end
 * is read (so no two user messages in a row), a failed turn is retried without its prompt twice,
 * config typos and values that break every request are refused naming the field, and the common
 * event fields are read without a JSON parser. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

static void config_is_strict(void) {
    static const struct {
        const char *extra;
        const char *message;
    } cases[] = {
        {"\"max_step\": 5", "config: max_step: unknown field"},
        {"\"retry\": {\"max_attempt\": 2}", "config: retry.max_attempt: unknown field"},
        {"\"idle_timeout_ms\": 0", "config: idle_timeout_ms: must be at least 1, got 0"},
        {"\"max_steps\": 0", "config: max_steps: must be at least 1, got 0"},
        {"\"retry\": {\"max_attempts\": 0}", "config: retry.max_attempts: must be at least 1, got 0"},
        {"\"compaction\": {\"threshold\": 7}", "config: compaction.threshold: must be a fraction"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"provider\": {\"api_style\": \"openai-chat\", \"base_url\": \"x\", \"model\": \"m\"}, %s}",
                 cases[i].extra);
        panto_config *config = NULL;
        panto_error *err = NULL;
        CHECK_ERROR(panto_config_new_json(json, &config, &err), err, PANTO_ERR_CONFIG, cases[i].message);
        CHECK(config == NULL, "%s: no config", cases[i].extra);
    }
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* A turn that fails at once (connection refused) still holds the agent until its end is read;
 * then panto_agent_retry asks again without a second copy of the prompt. */
static void early_end_then_retry(panto_runtime *rt) {
    panto_error *err = NULL;
    panto_store *store = NULL;
    panto_session *session = NULL;
    panto_agent *agent = NULL;
    panto_config *refused = NULL;
    mock_reset();
    CHECK_OK(panto_config_new_json("{\"provider\": {\"api_style\": \"anthropic-messages\","
                                   " \"base_url\": \"http://127.0.0.1:1\", \"model\": \"claude-sonnet-4-5\"},"
                                   " \"retry\": {\"max_attempts\": 1}}",
                                   &refused, &err),
             err);
    CHECK_OK(panto_store_new_null(rt, &store, &err), err);
    CHECK_OK(panto_session_create(store, &session, &err), err);
    CHECK_OK(panto_agent_new(refused, session, &agent, &err), err);

    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "Only once, please.", &run, &err), err);
    /* The refused connection ends the turn within milliseconds; for the next two seconds the
     * agent must still be busy, because nobody has read that end. */
    for (int i = 0; i < 200; i++) {
        char *json = NULL;
        int32_t status = panto_agent_conversation_json(agent, &json, NULL);
        panto_string_free(json);
        CHECK(status == PANTO_ERR_BUSY, "after %d ms the agent was %s before its run's end was read", i * 10,
              panto_status_name(status));
        sleep_ms(10);
    }
    panto_run *second = NULL;
    CHECK_ERROR(panto_agent_run(agent, "A second message.", &second, &err), err, PANTO_ERR_BUSY,
                "the agent has a live run");
    CHECK(second == NULL, "no second run");
    CHECK_ERROR(panto_agent_retry(agent, &second, &err), err, PANTO_ERR_BUSY, "the agent has a live run");

    run_log log;
    CHECK(drain_run(run, &log) == PANTO_ERR_PROVIDER, "the refused turn ended with %s: %s",
          panto_status_name(log.status), log.error);
    panto_run_free(run);

    char *json = NULL;
    CHECK_OK(panto_agent_conversation_json(agent, &json, &err), err);
    CHECK(count_of(json, "\"role\":\"user\"") == 1 && count_of(json, "Only once, please.") == 1,
          "the failed turn keeps its one user message: %s", json);
    panto_string_free(json);

    /* Retry against the mock: the request carries the prompt once, the conversation too. */
    panto_config *mock = mock_config("");
    CHECK_OK(panto_agent_set_config(agent, mock, &err), err);
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"Once it is.\"}}}");
    CHECK_OK(panto_agent_retry(agent, &run, &err), err);
    CHECK(drain_run(run, &log) == PANTO_END, "the retry: %s", log.error);
    CHECK(strcmp(log.text, "Once it is.") == 0, "the retry's text: %s", log.text);
    panto_run_free(run);
    run = NULL;
    char *request = mock_request(1);
    CHECK(request != NULL && count_of(request, "Only once, please.") == 1, "the retried request: %s", request);
    free(request);
    CHECK_OK(panto_agent_conversation_json(agent, &json, &err), err);
    CHECK(count_of(json, "\"role\":\"user\"") == 1 && count_of(json, "\"role\":\"assistant\"") == 1,
          "one prompt, one answer: %s", json);
    panto_string_free(json);

    /* Nothing waits for an answer now. */
    CHECK_ERROR(panto_agent_retry(agent, &run, &err), err, PANTO_ERR_STATE, "nothing to retry");
    CHECK(run == NULL, "no run");

    panto_agent_free(agent);
    panto_session_free(session);
    panto_store_free(store);
    panto_config_free(mock);
    panto_config_free(refused);
}

static void echo(void *context, const char *input_json, panto_tool_result *result) {
    (void)context;
    panto_tool_result_set_text(result, input_json, 0, NULL);
}

/* Text deltas and tool calls are read through accessors; other kinds have no such fields. */
static void event_accessors(panto_runtime *rt) {
    panto_error *err = NULL;
    panto_store *store = NULL;
    panto_session *session = NULL;
    panto_agent *agent = NULL;
    panto_tool *tool = NULL;
    mock_reset();
    panto_config *config = mock_config("");
    CHECK_OK(panto_store_new_null(rt, &store, &err), err);
    CHECK_OK(panto_session_create(store, &session, &err), err);
    CHECK_OK(panto_agent_new(config, session, &agent, &err), err);
    CHECK_OK(panto_tool_new("get_weather", "Weather.", "{\"type\": \"object\"}", NULL, echo, NULL, &tool, &err),
             err);
    CHECK_OK(panto_agent_add_tool(agent, tool, &err), err);
    mock_push("[{\"builder\": {\"name\": \"anthropic_tool_uses\", \"args\": {\"calls\": ["
              "{\"id\": \"toolu_a1\", \"name\": \"get_weather\", \"input\": {\"city\": \"Par\\u00eds\"}}]}}},"
              " {\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"Line one\\nand \\\"two\\\".\"}}}]");
    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "Weather?", &run, &err), err);
    char text[256] = "";
    int block_starts = 0, tool_starts = 0, tool_completes = 0;
    for (;;) {
        panto_event *event = NULL;
        int32_t status = panto_run_next_event(run, -1, &event, &err);
        if (status == PANTO_END) {
            break;
        }
        CHECK_OK(status, err);
        int kind = panto_event_kind(event);
        const char *id = panto_event_tool_id(event);
        const char *name = panto_event_tool_name(event);
        const char *input = panto_event_tool_input_json(event);
        const char *delta = panto_event_text(event);
        switch (kind) {
        case PANTO_EVENT_TEXT_DELTA:
            CHECK(delta != NULL && id == NULL && input == NULL, "text delta %s", panto_event_json(event));
            strncat(text, delta, sizeof text - strlen(text) - 1);
            break;
        case PANTO_EVENT_TOOL_START:
            tool_starts++;
            CHECK(id && strcmp(id, "toolu_a1") == 0 && name && strcmp(name, "get_weather") == 0, "tool start %s",
                  panto_event_json(event));
            CHECK(input && strcmp(input, "{\"city\":\"Par\xc3\xads\"}") == 0, "tool input %s", input);
            CHECK(delta == NULL, "no text on a tool start");
            break;
        case PANTO_EVENT_TOOL_COMPLETE:
            tool_completes++;
            CHECK(id && strcmp(id, "toolu_a1") == 0 && name && strcmp(name, "get_weather") == 0 && input == NULL,
                  "tool complete %s", panto_event_json(event));
            break;
        case PANTO_EVENT_BLOCK_START:
            if (id != NULL) {
                block_starts++;
                CHECK(strcmp(id, "toolu_a1") == 0 && strcmp(name, "get_weather") == 0, "block start %s",
                      panto_event_json(event));
            }
            break;
        default:
            CHECK(id == NULL && name == NULL && input == NULL && delta == NULL, "kind %d has no accessor fields: %s",
                  kind, panto_event_json(event));
        }
        panto_event_free(event);
    }
    CHECK(strcmp(text, "Line one\nand \"two\".") == 0, "the text, unescaped: %s", text);
    CHECK(block_starts == 1 && tool_starts == 1 && tool_completes == 1, "tool events: %d %d %d", block_starts,
          tool_starts, tool_completes);
    CHECK(panto_event_text(NULL) == NULL && panto_event_tool_id(NULL) == NULL &&
              panto_event_tool_name(NULL) == NULL && panto_event_tool_input_json(NULL) == NULL,
          "NULL events have no fields");
    panto_run_free(run);
    panto_tool_free(tool);
    panto_agent_free(agent);
    panto_session_free(session);
    panto_store_free(store);
    panto_config_free(config);
}

int main(void) {
    panto_runtime *rt = NULL;
    panto_error *err = NULL;
    CHECK_OK(panto_runtime_new(2, &rt, &err), err);
    config_is_strict();
    early_end_then_retry(rt);
    event_accessors(rt);
    panto_runtime_free(rt);
    printf("embedder: ok\n");
    return 0;
}
