/* A streamed text turn: the events arrive in order, the text deltas add up to the answer, the
 * request carries the prompt and the system prompt, and a second turn carries the first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int main(void) {
    /* The mock sends the answer one byte per write, so deltas arrive as the model "types". */
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"Hello from the mock, "
              "streamed byte by byte.\", \"usage\": {\"input_tokens\": 1000, \"output_tokens\": 200}}},"
              " \"chunking\": \"every_byte\"}");
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"Second answer.\"}}}");

    panto_error *err = NULL;
    mock_agent m = mock_agent_new(2, "");
    panto_agent *agent = m.agent;
    /* The agent copied the session (and the config, which mock_agent_new freed); freeing it now
     * must not matter. */
    panto_session_free(m.session);
    m.session = NULL;

    CHECK_OK(panto_agent_add_system_message(agent, "You are a test.", &err), err);

    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "Say hello", &run, &err), err);
    run_log log;
    int32_t status = drain_run(run, &log);
    CHECK(status == PANTO_END, "the turn ended with %s: %s", panto_status_name(status), log.error);
    CHECK(strcmp(log.text, "Hello from the mock, streamed byte by byte.") == 0, "text was \"%s\"", log.text);
    CHECK(log.kinds[0] == PANTO_EVENT_BLOCK_START, "first event kind %d", log.kinds[0]);
    CHECK(log.kinds[1] == PANTO_EVENT_TEXT_DELTA, "second event kind %d", log.kinds[1]);
    CHECK(saw_kind(&log, PANTO_EVENT_BLOCK_COMPLETE), "no BLOCK_COMPLETE");
    CHECK(saw_kind(&log, PANTO_EVENT_MESSAGE_COMPLETE), "no MESSAGE_COMPLETE");
    CHECK(log.kinds[log.n_events - 1] == PANTO_EVENT_TURN_COMPLETE, "last event kind %d",
          log.kinds[log.n_events - 1]);
    CHECK(strstr(log.last_json, "\"stop_reason\":\"end_turn\"") != NULL, "turn complete: %s", log.last_json);
    CHECK(strstr(log.last_json, "\"steps\":1") != NULL, "turn complete: %s", log.last_json);
    CHECK(count_of(log.last_json, "\"output_tokens\":200") == 1, "turn complete: %s", log.last_json);

    /* After the end the run only says so again. */
    panto_event *event = NULL;
    CHECK(panto_run_next_event(run, 0, &event, &err) == PANTO_END && event == NULL && err == NULL,
          "a finished run keeps returning PANTO_END");
    panto_run_free(run);

    char *json = NULL;
    CHECK_OK(panto_agent_usage_json(agent, &json, &err), err);
    CHECK(strstr(json, "\"input_tokens\":1000") != NULL && strstr(json, "\"output_tokens\":200") != NULL,
          "usage: %s", json);
    /* claude-sonnet-4-5 is $3/M input and $15/M output: 0.3 + 0.3 cents = 600000 micro-cents. */
    CHECK(strstr(json, "\"cost_micro_cents\":600000") != NULL, "usage: %s", json);
    CHECK(strstr(json, "\"cache_write_1h_tokens\":0") != NULL, "usage: %s", json);
    panto_string_free(json);

    CHECK_OK(panto_agent_conversation_json(agent, &json, &err), err);
    CHECK(strstr(json, "\"text\":\"Say hello\"") != NULL, "conversation: %s", json);
    CHECK(strstr(json, "Hello from the mock, streamed byte by byte.") != NULL, "conversation: %s", json);
    panto_string_free(json);

    /* The agent is idle again: a second turn works and sends the whole history. */
    CHECK_OK(panto_agent_run(agent, "Again", &run, &err), err);
    status = drain_run(run, &log);
    CHECK(status == PANTO_END, "second turn: %s: %s", panto_status_name(status), log.error);
    CHECK(strcmp(log.text, "Second answer.") == 0, "text was \"%s\"", log.text);
    panto_run_free(run);

    char *requests = mock_requests();
    CHECK(count_of(requests, "\"path\":\"/v1/messages\"") == 2, "requests: %s", requests);
    CHECK(count_of(requests, "\"validation\":null") == 2, "a request broke the API's rules: %s", requests);
    CHECK(count_of(requests, "You are a test.") == 2, "system prompt missing: %s", requests);
    CHECK(count_of(requests, "\"model\":\"claude-sonnet-4-5\"") == 2, "model missing: %s", requests);
    free(requests);
    char *second = mock_request(2);
    CHECK(second != NULL, "no second request");
    CHECK(strstr(second, "Hello from the mock, streamed byte by byte.") != NULL &&
              strstr(second, "Say hello") != NULL && strstr(second, "Again") != NULL,
          "the second request lacks the history: %s", second);
    free(second);

    mock_agent_free(&m);
    printf("turn ok\n");
    return 0;
}
