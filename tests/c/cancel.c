/* Cancelling from another thread: while the main thread waits for events, (1) mid-stream, the
 * partial answer is kept; (2) while a C tool runs, the run does not end before the callback
 * returns; (3) freeing the agent under a live run cancels it and waits. After each, the agent
 * takes the next turn. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *cancel_soon(void *run) {
    sleep_ms(200);
    CHECK(panto_run_cancel(run) == PANTO_OK, "cancel failed");
    return NULL;
}

/* Waits for the next event with no timeout, failing unless it is the cancellation, then checks
 * that the run only ends after it. */
static void expect_cancelled(panto_run *run) {
    panto_event *event = NULL;
    panto_error *err = NULL;
    int32_t status;
    while ((status = panto_run_next_event(run, -1, &event, &err)) == PANTO_OK) {
        panto_event_free(event); /* events already queued before the cancel */
    }
    CHECK_ERROR(status, err, PANTO_ERR_CANCELLED, "turn cancelled");
    CHECK(panto_run_next_event(run, 0, &event, &err) == PANTO_END, "a cancelled run then ends");
}

static void expect_next_turn_works(panto_agent *agent, const char *answer) {
    char json[256];
    snprintf(json, sizeof json, "{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"%s\"}}}",
             answer);
    mock_push(json);
    panto_error *err = NULL;
    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "Go on.", &run, &err), err);
    run_log log;
    CHECK(drain_run(run, &log) == PANTO_END, "the next turn failed: %s", log.error);
    CHECK(strcmp(log.text, answer) == 0, "text: %s", log.text);
    /* Cancelling a finished run changes nothing. */
    CHECK(panto_run_cancel(run) == PANTO_OK, "cancel after the end");
    panto_event *event = NULL;
    CHECK(panto_run_next_event(run, 0, &event, &err) == PANTO_END && err == NULL, "still just the end");
    panto_run_free(run);
}

/* (1) The provider streams part of an answer and stalls; another thread cancels. */
static void cancel_mid_stream(panto_agent *agent) {
    const char *sse =
        "event: message_start\n"
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_c1\",\"type\":\"message\",\"role\":\"assistant\","
        "\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,"
        "\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n"
        "event: content_block_start\n"
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
        "event: content_block_delta\n"
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
        "\"text\":\"Partial answer\"}}\n\n";
    char body[2048];
    snprintf(body, sizeof body,
             "%sevent: content_block_delta\n"
             "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
             "\"text\":\" never sent\"}}\n\n",
             sse);
    mock_push_sse(body, (long)strlen(sse));

    panto_error *err = NULL;
    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "Tell me everything.", &run, &err), err);
    /* Read up to the partial text, then block while another thread cancels. */
    for (;;) {
        panto_event *event = NULL;
        CHECK_OK(panto_run_next_event(run, 10000, &event, &err), err);
        int kind = panto_event_kind(event);
        panto_event_free(event);
        if (kind == PANTO_EVENT_TEXT_DELTA) {
            break;
        }
    }
    pthread_t canceller;
    CHECK(pthread_create(&canceller, NULL, cancel_soon, run) == 0, "pthread_create");
    expect_cancelled(run);
    pthread_join(canceller, NULL);
    panto_run_free(run);

    char *json = NULL;
    CHECK_OK(panto_agent_conversation_json(agent, &json, &err), err);
    CHECK(strstr(json, "Partial answer") != NULL && strstr(json, "never sent") == NULL,
          "the streamed part is kept, nothing more: %s", json);
    CHECK(strstr(json, "\"stop_reason\":\"cancelled\"") != NULL, "marked as cancelled: %s", json);
    panto_string_free(json);
}

/* (2) A tool blocks until released; the cancel arrives while it runs. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int tool_started = 0, tool_released = 0, tool_returned = 0;

static void slow_call(void *context, const char *input_json, panto_tool_result *result) {
    (void)context;
    (void)input_json;
    pthread_mutex_lock(&lock);
    tool_started = 1;
    pthread_cond_broadcast(&changed);
    while (!tool_released) {
        pthread_cond_wait(&changed, &lock);
    }
    pthread_mutex_unlock(&lock);
    panto_tool_result_set_text(result, "finally done", 0, NULL);
    pthread_mutex_lock(&lock);
    tool_returned = 1;
    pthread_mutex_unlock(&lock);
}

static void *cancel_then_release(void *run) {
    pthread_mutex_lock(&lock);
    while (!tool_started) {
        pthread_cond_wait(&changed, &lock);
    }
    pthread_mutex_unlock(&lock);
    CHECK(panto_run_cancel(run) == PANTO_OK, "cancel failed");
    sleep_ms(300); /* the run must still be waiting for the callback */
    pthread_mutex_lock(&lock);
    tool_released = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void cancel_during_tool(panto_agent *agent) {
    panto_error *err = NULL;
    panto_tool *tool = NULL;
    CHECK_OK(panto_tool_new("slow", "Takes its time.", "{\"type\":\"object\"}", NULL, slow_call, NULL, &tool, &err),
             err);
    CHECK_OK(panto_agent_add_tool(agent, tool, &err), err);
    panto_tool_free(tool);
    mock_push("{\"builder\": {\"name\": \"anthropic_tool_uses\", \"args\": {\"calls\": [{\"id\": \"toolu_s1\", "
              "\"name\": \"slow\", \"input\": {}}]}}}");

    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "Do the slow thing.", &run, &err), err);
    pthread_t canceller;
    CHECK(pthread_create(&canceller, NULL, cancel_then_release, run) == 0, "pthread_create");
    expect_cancelled(run);
    pthread_mutex_lock(&lock);
    int returned = tool_returned;
    pthread_mutex_unlock(&lock);
    CHECK(returned, "the run ended while its tool callback was still running");
    pthread_join(canceller, NULL);
    panto_run_free(run);

    char *json = NULL;
    CHECK_OK(panto_agent_conversation_json(agent, &json, &err), err);
    CHECK(strstr(json, "\"tool_use_id\":\"toolu_s1\"") != NULL, "the call got a result: %s", json);
    panto_string_free(json);
}

/* (3) The agent is freed while its run waits on a provider that never answers. */
static void free_agent_under_run(panto_session *session) {
    panto_error *err = NULL;
    panto_config *config = mock_config("");
    panto_agent *agent = NULL;
    CHECK_OK(panto_agent_new(config, session, &agent, &err), err);
    panto_config_free(config);
    mock_push("{\"hang\": true}");
    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "Hello?", &run, &err), err);
    panto_event *event = NULL;
    CHECK(panto_run_next_event(run, 100, &event, &err) == PANTO_TIMEOUT, "the provider hangs");
    panto_agent_free(agent);
    /* The run handle stays valid and reports how the turn ended. */
    expect_cancelled(run);
    panto_run_free(run);
}

int main(void) {
    mock_agent m = mock_agent_new(2, "");
    panto_agent *agent = m.agent;

    cancel_mid_stream(agent);
    expect_next_turn_works(agent, "Resumed after the cancel.");
    cancel_during_tool(agent);
    expect_next_turn_works(agent, "Resumed after the tool.");
    panto_agent_free(agent);
    m.agent = NULL;

    free_agent_under_run(m.session);

    mock_agent_free(&m);
    printf("cancel ok\n");
    return 0;
}
