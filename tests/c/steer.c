/* Run control from C: a steer sent while a tool runs changes what the mock is asked next (after
 * the tool's result, in the same user message, before the next request), and a follow-up queued
 * on the run streams a second turn on the same run handle, each turn ending with its own
 * turn-complete event and the run ending after the last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static panto_run *current_run = NULL;

/* The tool steers the run that called it: the steer arrives while tools run, so it has to wait
 * for this result. */
static void steering_call(void *context, const char *input_json, panto_tool_result *result) {
    (void)context;
    (void)input_json;
    panto_error *err = NULL;
    CHECK_OK(panto_run_steer(current_run, "Use Celsius.", &err), err);
    CHECK_OK(panto_tool_result_set_text(result, "21 degrees", 0, &err), err);
}

static size_t count_kind(const run_log *log, int kind) {
    size_t n = 0;
    for (size_t i = 0; i < log->n_events && i < 256; i++) {
        n += log->kinds[i] == kind;
    }
    return n;
}

static long index_of_kind(const run_log *log, int kind, size_t from) {
    for (size_t i = from; i < log->n_events && i < 256; i++) {
        if (log->kinds[i] == kind) {
            return (long)i;
        }
    }
    return -1;
}

int main(void) {
    mock_push("{\"builder\": {\"name\": \"anthropic_tool_uses\", \"args\": {\"calls\": [{\"id\": \"toolu_w1\", "
              "\"name\": \"weather\", \"input\": {}}]}}}");
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"It is 21C.\"}}}");
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \" About 70F.\"}}}");

    panto_error *err = NULL;
    mock_agent m = mock_agent_new(0, "");
    panto_agent *agent = m.agent;
    panto_tool *tool = NULL;
    CHECK_OK(panto_tool_new("weather", "The weather.", "{\"type\":\"object\"}", NULL, steering_call, NULL, &tool, &err),
             err);
    CHECK_OK(panto_agent_add_tool(agent, tool, &err), err);
    panto_tool_free(tool);

    CHECK_OK(panto_agent_run(agent, "What is the weather?", &current_run, &err), err);
    /* Queued before the run has streamed anything: taken once the first turn completes. */
    CHECK_OK(panto_run_follow_up(current_run, "And in Fahrenheit?", &err), err);
    CHECK_ERROR(panto_run_steer(current_run, NULL, &err), err, PANTO_ERR_NULL, "text");

    run_log log;
    CHECK(drain_run(current_run, &log) == PANTO_END, "the run failed: %s", log.error);
    CHECK(strcmp(log.text, "It is 21C. About 70F.") == 0, "text: %s", log.text);

    /* Events: the steer joined after the tool's result; the first turn completed, the follow-up
     * started, and the run ended after the second turn's completion. */
    long tool_done = index_of_kind(&log, PANTO_EVENT_TOOL_COMPLETE, 0);
    long steer = index_of_kind(&log, PANTO_EVENT_STEER, 0);
    long first_end = index_of_kind(&log, PANTO_EVENT_TURN_COMPLETE, 0);
    long follow_up = index_of_kind(&log, PANTO_EVENT_FOLLOW_UP_START, 0);
    CHECK(tool_done >= 0 && tool_done < steer && steer < first_end && first_end < follow_up,
          "order: tool_complete %ld, steer %ld, turn_complete %ld, follow_up_start %ld", tool_done, steer, first_end,
          follow_up);
    CHECK(count_kind(&log, PANTO_EVENT_TURN_COMPLETE) == 2, "two turns, each with its turn-complete");
    CHECK(log.kinds[log.n_events - 1] == PANTO_EVENT_TURN_COMPLETE, "the run ends with the last turn's completion");
    CHECK(strstr(log.last_json, "\"steps\":1") != NULL, "the follow-up is a turn of its own: %s", log.last_json);

    /* What the mock was asked, in order: the steer is not in the first request; the second
     * carries the tool's result and then the steer, in one user message; the third asks the
     * follow-up last. */
    CHECK(mock_request_count() == 3, "three requests, got %zu", mock_request_count());
    char *first = mock_request(1);
    CHECK(strstr(first, "Use Celsius.") == NULL, "the first request predates the steer: %s", first);
    free(first);
    char *second = mock_request(2);
    const char *result = strstr(second, "\"tool_use_id\":\"toolu_w1\"");
    const char *steered = strstr(second, "\"text\":\"Use Celsius.\"");
    CHECK(result != NULL && steered != NULL && result < steered, "result, then the steer: %s", second);
    const char *next_role = strstr(result, "\"role\"");
    CHECK(next_role == NULL || next_role > steered, "the steer shares the results' user message: %s", second);
    free(second);
    char *third = mock_request(3);
    const char *asked = strstr(third, "And in Fahrenheit?");
    CHECK(asked != NULL && strstr(third, "It is 21C.") < asked, "the follow-up comes after the answer: %s", third);
    free(third);

    /* The run is over: a message sent now would never be taken. */
    CHECK_ERROR(panto_run_follow_up(current_run, "Too late.", &err), err, PANTO_ERR_STATE, "the run is over");
    CHECK_ERROR(panto_run_steer(current_run, "Too late.", &err), err, PANTO_ERR_STATE, "the run is over");
    panto_run_free(current_run);

    /* The steer is in the conversation as text after the result. */
    char *json = NULL;
    CHECK_OK(panto_agent_conversation_json(agent, &json, &err), err);
    const char *stored_result = strstr(json, "\"tool_use_id\":\"toolu_w1\"");
    CHECK(stored_result != NULL && strstr(stored_result, "Use Celsius.") != NULL, "kept: %s", json);
    panto_string_free(json);

    mock_agent_free(&m);
    printf("steer ok\n");
    return 0;
}
