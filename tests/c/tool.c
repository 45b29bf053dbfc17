/* Tools written in C: the model calls two in parallel (one succeeds, one reports an error) and a
 * third that writes nothing; every result goes back to the model in the next request; calls run
 * concurrently; `drop` runs once per tool, only when the agent that holds it is freed. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

typedef struct {
    const char *name;
    int calls;
    int drops;
    char input[256];
} tool_state;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int active = 0, max_active = 0;

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Counts the calls running at once, so the test can see that calls overlap. */
static void enter_call(tool_state *state, const char *input_json) {
    pthread_mutex_lock(&lock);
    state->calls++;
    snprintf(state->input, sizeof state->input, "%s", input_json);
    if (++active > max_active) {
        max_active = active;
    }
    pthread_mutex_unlock(&lock);
    sleep_ms(500); /* long enough for the other call of the message to start meanwhile */
    pthread_mutex_lock(&lock);
    active--;
    pthread_mutex_unlock(&lock);
}

static void weather_call(void *context, const char *input_json, panto_tool_result *result) {
    enter_call(context, input_json);
    int32_t status = panto_tool_result_set_text(result, "sunny in Paris, 21C", 0, NULL);
    CHECK(status == PANTO_OK, "set_text returned %d", (int)status);
}

static void broken_call(void *context, const char *input_json, panto_tool_result *result) {
    enter_call(context, input_json);
    /* An invalid flag is refused and leaves the result unwritten... */
    panto_error *err = NULL;
    CHECK_ERROR(panto_tool_result_set_text(result, "x", 7, &err), err, PANTO_ERR_INVALID_ARGUMENT, "is_error");
    /* ...then the real outcome: a failure the model sees. */
    CHECK_OK(panto_tool_result_set_text(result, "the sensor is offline", 1, &err), err);
}

static void silent_call(void *context, const char *input_json, panto_tool_result *result) {
    (void)result;
    enter_call(context, input_json);
}

static void count_drop(void *context) {
    tool_state *state = context;
    pthread_mutex_lock(&lock);
    state->drops++;
    pthread_mutex_unlock(&lock);
}

static panto_tool *make_tool(tool_state *state, panto_tool_call_fn call) {
    panto_tool *tool = NULL;
    panto_error *err = NULL;
    CHECK_OK(panto_tool_new(state->name, "A test tool.",
                            "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}", state, call,
                            count_drop, &tool, &err),
             err);
    return tool;
}

int main(void) {
    mock_push("{\"builder\": {\"name\": \"anthropic_tool_uses\", \"args\": {\"text\": \"Let me check.\", "
              "\"calls\": [{\"id\": \"toolu_01\", \"name\": \"get_weather\", \"input\": {\"city\": \"Paris\"}},"
              " {\"id\": \"toolu_02\", \"name\": \"broken\", \"input\": {\"city\": \"Oslo\"}}]}}}");
    mock_push("{\"builder\": {\"name\": \"anthropic_tool_uses\", \"args\": {"
              "\"calls\": [{\"id\": \"toolu_03\", \"name\": \"silent\", \"input\": {}}]}}}");
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"Sunny in Paris.\"}}}");

    tool_state weather = {"get_weather", 0, 0, ""};
    tool_state broken = {"broken", 0, 0, ""};
    tool_state silent = {"silent", 0, 0, ""};

    panto_error *err = NULL;
    mock_agent m = mock_agent_new(0, "");
    panto_agent *agent = m.agent;

    panto_tool *tools[3] = {make_tool(&weather, weather_call), make_tool(&broken, broken_call),
                            make_tool(&silent, silent_call)};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(panto_agent_add_tool(agent, tools[i], &err), err);
        /* The agent keeps its own reference: freeing the handle must not drop the tool. */
        panto_tool_free(tools[i]);
    }
    CHECK(weather.drops == 0 && broken.drops == 0 && silent.drops == 0, "a tool was dropped while registered");

    /* A second tool with a taken name is refused, and its drop runs when its handle goes. */
    tool_state dup = {"get_weather", 0, 0, ""};
    panto_tool *dup_tool = make_tool(&dup, weather_call);
    CHECK_ERROR(panto_agent_add_tool(agent, dup_tool, &err), err, PANTO_ERR_TOOL, "get_weather");
    panto_tool_free(dup_tool);
    CHECK(dup.drops == 1, "the refused tool was dropped %d times", dup.drops);

    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "What is the weather in Paris?", &run, &err), err);
    run_log log;
    int32_t status = drain_run(run, &log);
    CHECK(status == PANTO_END, "the turn ended with %s: %s", panto_status_name(status), log.error);
    panto_run_free(run);

    CHECK(weather.calls == 1 && broken.calls == 1 && silent.calls == 1, "calls: %d %d %d", weather.calls,
          broken.calls, silent.calls);
    CHECK(strcmp(weather.input, "{\"city\":\"Paris\"}") == 0, "get_weather got %s", weather.input);
    CHECK(strcmp(broken.input, "{\"city\":\"Oslo\"}") == 0, "broken got %s", broken.input);
    CHECK(max_active == 2, "the two calls of one message should overlap; at most %d ran at once", max_active);
    CHECK(saw_kind(&log, PANTO_EVENT_TOOL_START) && saw_kind(&log, PANTO_EVENT_TOOL_COMPLETE),
          "no tool events");
    CHECK(strcmp(log.text, "Let me check.Sunny in Paris.") == 0, "text: %s", log.text);
    CHECK(strstr(log.last_json, "\"steps\":3") != NULL, "turn complete: %s", log.last_json);

    CHECK(mock_request_count() == 3, "expected 3 requests");
    char *second = mock_request(2);
    CHECK(second != NULL, "no second request");
    /* The tool results went back to the model, the failure flagged as one. */
    CHECK(strstr(second, "\"tool_use_id\":\"toolu_01\"") != NULL, "no result for toolu_01: %s", second);
    CHECK(strstr(second, "sunny in Paris, 21C") != NULL, "the tool's text is missing: %s", second);
    CHECK(strstr(second, "the sensor is offline") != NULL, "the error text is missing: %s", second);
    CHECK(count_of(second, "\"is_error\":true") == 1, "exactly one result is an error: %s", second);
    CHECK(strstr(second, "\"validation\":null") != NULL, "the request broke the API's rules: %s", second);
    free(second);
    char *third = mock_request(3);
    CHECK(third != NULL, "no third request");
    CHECK(strstr(third, "returned no result") != NULL && strstr(third, "\"is_error\":true") != NULL,
          "a silent tool becomes an error result: %s", third);
    free(third);

    CHECK(weather.drops == 0, "dropped before the agent was freed");
    panto_agent_free(agent);
    m.agent = NULL;
    CHECK(weather.drops == 1 && broken.drops == 1 && silent.drops == 1, "drops after free: %d %d %d",
          weather.drops, broken.drops, silent.drops);

    mock_agent_free(&m);
    printf("tool ok\n");
    return 0;
}
