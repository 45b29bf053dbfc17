/* The log callback: a turn's spans and events reach it with their fields as JSON (the request
 * span's model and token counts as numbers, the retry event), the API key never does (not even
 * when the provider quotes it back or the user pastes it into the prompt with log_content on),
 * calling libpanto from inside the callback is refused rather than a deadlock, and a NULL callback
 * turns logging off. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define SECRET "sk-log-test-SECRET-0123456789"

/* Every record the callback got, one line each: "<level> <message> <fields_json>\n". The callback
 * runs on libpanto's threads, maybe several at once, hence the lock. */
typedef struct {
    pthread_mutex_t lock;
    char *text;
    size_t len, cap;
    size_t calls;
    int32_t reentry_status;
} records;

static void on_log(void *userdata, int32_t level, const char *message, const char *fields_json) {
    records *r = userdata;
    pthread_mutex_lock(&r->lock);
    size_t need = strlen(message) + strlen(fields_json) + 16;
    if (r->len + need + 1 > r->cap) {
        r->cap = (r->len + need + 1) * 2;
        r->text = realloc(r->text, r->cap);
        CHECK(r->text != NULL, "out of memory");
    }
    r->len += (size_t)snprintf(r->text + r->len, r->cap - r->len, "%d %s %s\n", (int)level, message, fields_json);
    if (r->calls++ == 0) {
        /* Re-entering libpanto from the callback fails cleanly instead of waiting for itself. */
        panto_error *err = NULL;
        r->reentry_status = panto_log_set_callback(PANTO_LOG_OFF, NULL, NULL, &err);
        panto_error_free(err);
    }
    pthread_mutex_unlock(&r->lock);
}

/* The first record line starting with `prefix` and containing `needle`, copied (free() it), or
 * NULL. */
static char *find_line(const char *text, const char *prefix, const char *needle) {
    size_t n = strlen(prefix);
    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len >= n && strncmp(line, prefix, n) == 0) {
            char *copy = malloc(len + 1);
            CHECK(copy != NULL, "out of memory");
            memcpy(copy, line, len);
            copy[len] = '\0';
            if (strstr(copy, needle) != NULL) {
                return copy;
            }
            free(copy);
        }
        line = end ? end + 1 : NULL;
    }
    return NULL;
}

/* Runs one turn on a fresh runtime, freeing everything after, so every span has closed. */
static void one_turn(const char *prompt) {
    char json[1024];
    int n = snprintf(json, sizeof json,
                     "{\"provider\": {\"api_style\": \"anthropic-messages\", \"base_url\": \"%s\","
                     " \"model\": \"claude-sonnet-4-5\", \"api_key\": \"" SECRET "\"},"
                     " \"retry\": {\"max_attempts\": 2, \"base_delay_ms\": 1, \"max_delay_ms\": 1},"
                     " \"compaction\": {\"enabled\": false}, \"log_content\": true}",
                     mock_url());
    CHECK(n > 0 && (size_t)n < sizeof json, "config too long");
    panto_error *err = NULL;
    panto_config *config = NULL;
    CHECK_OK(panto_config_new_json(json, &config, &err), err);
    panto_runtime *rt = NULL;
    CHECK_OK(panto_runtime_new(2, &rt, &err), err);
    panto_store *store = NULL;
    CHECK_OK(panto_store_new_null(rt, &store, &err), err);
    panto_session *session = NULL;
    CHECK_OK(panto_session_create(store, &session, &err), err);
    panto_agent *agent = NULL;
    CHECK_OK(panto_agent_new(config, session, &agent, &err), err);
    panto_config_free(config);
    panto_session_free(session);

    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, prompt, &run, &err), err);
    run_log log;
    int32_t status = drain_run(run, &log);
    CHECK(status == PANTO_END, "the turn ended with %s: %s", panto_status_name(status), log.error);
    CHECK(strcmp(log.text, "Logged answer.") == 0, "text was \"%s\"", log.text);
    panto_run_free(run);
    panto_agent_free(agent);
    panto_store_free(store);
    /* The last handle: the runtime stops, and with it every task that held a span. */
    panto_runtime_free(rt);
}

static void push_overloaded_then_answer(void) {
    /* A provider quoting the key back in its error body: the retry event's reason has it. */
    mock_push("[{\"status\": 529, \"headers\": [[\"retry-after\", \"0\"]], \"json\": {\"type\": \"error\","
              " \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded (key " SECRET ")\"}}},"
              " {\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"Logged answer.\","
              " \"usage\": {\"input_tokens\": 1000, \"output_tokens\": 200}}}}]");
}

int main(void) {
    records r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.lock, NULL);
    panto_error *err = NULL;

    CHECK_ERROR(panto_log_set_callback(9, on_log, &r, &err), err, PANTO_ERR_INVALID_ARGUMENT, "level 9");
    CHECK_OK(panto_log_set_callback(PANTO_LOG_DEBUG, on_log, &r, &err), err);
    /* Setting it again replaces it (here with itself). */
    CHECK_OK(panto_log_set_callback(PANTO_LOG_DEBUG, on_log, &r, &err), err);

    push_overloaded_then_answer();
    one_turn("Please remember my key " SECRET " and answer.");

    /* Off: when this returns, no call is running or will be made, so `r` may be read freely. */
    CHECK_OK(panto_log_set_callback(PANTO_LOG_OFF, NULL, NULL, &err), err);
    CHECK(r.text != NULL && r.calls > 0, "the callback was never called");
    const char *all = r.text;
    CHECK(strstr(all, SECRET) == NULL, "the API key reached the log callback:\n%s", all);
    CHECK(r.reentry_status == PANTO_ERR_STATE, "set_callback from the callback returned %d",
          (int)r.reentry_status);

    /* The first attempt's request span: its failure, scrubbed. */
    char *failed = find_line(all, "3 chat {", "\"panto.request.attempt\":1");
    CHECK(failed != NULL, "no span of the first attempt:\n%s", all);
    CHECK(strstr(failed, "\"http.response.status_code\":529") != NULL, "first attempt: %s", failed);
    CHECK(strstr(failed, "\"error.type\":\"http_5xx\"") != NULL, "first attempt: %s", failed);
    free(failed);
    /* The second attempt's: model, tokens as numbers, the finish reason, timings. */
    char *chat = find_line(all, "3 chat {", "\"panto.request.attempt\":2");
    CHECK(chat != NULL, "no span of the second attempt:\n%s", all);
    CHECK(strstr(chat, "\"log.kind\":\"span\"") != NULL, "chat: %s", chat);
    CHECK(strstr(chat, "\"gen_ai.request.model\":\"claude-sonnet-4-5\"") != NULL, "chat: %s", chat);
    CHECK(strstr(chat, "\"gen_ai.usage.input_tokens\":1000") != NULL, "chat: %s", chat);
    CHECK(strstr(chat, "\"gen_ai.usage.output_tokens\":200") != NULL, "chat: %s", chat);
    CHECK(strstr(chat, "\"gen_ai.response.finish_reasons\":\"end_turn\"") != NULL, "chat: %s", chat);
    CHECK(strstr(chat, "\"panto.duration_ms\":") != NULL, "chat: %s", chat);
    CHECK(strstr(chat, "\"panto.time_to_first_token_ms\":") != NULL, "chat: %s", chat);
    free(chat);
    char *turn = find_line(all, "3 invoke_agent {", "");
    CHECK(turn != NULL, "no invoke_agent span:\n%s", all);
    CHECK(strstr(turn, "\"panto.turn.outcome\":\"complete\"") != NULL, "turn: %s", turn);
    CHECK(strstr(turn, "\"log.target\":\"panto_core") != NULL, "turn: %s", turn);
    free(turn);

    /* The retry is a warning event inside the turn; its reason is scrubbed. */
    char *retry = find_line(all, "2 retrying the provider request {", "");
    CHECK(retry != NULL, "no retry event:\n%s", all);
    CHECK(strstr(retry, "\"log.name\":\"panto.retry\"") != NULL, "retry: %s", retry);
    CHECK(strstr(retry, "\"log.span\":\"invoke_agent\"") != NULL, "retry: %s", retry);
    CHECK(strstr(retry, "\"panto.retry.attempt\":2") != NULL, "retry: %s", retry);
    CHECK(strstr(retry, "[redacted]") != NULL, "retry: %s", retry);
    free(retry);

    /* With log_content the prompt is a debug event, with the key scrubbed out of it. */
    char *prompt = find_line(all, "4 user prompt {", "");
    CHECK(prompt != NULL, "no prompt event:\n%s", all);
    CHECK(strstr(prompt, "Please remember my key [redacted] and answer.") != NULL, "prompt: %s", prompt);
    free(prompt);

    /* A NULL callback turned logging off: another turn reaches nothing. */
    size_t calls = r.calls;
    push_overloaded_then_answer();
    one_turn("Again");
    CHECK(r.calls == calls, "%zu records after logging was turned off", r.calls - calls);

    free(r.text);
    pthread_mutex_destroy(&r.lock);
    mock_reset();
    return 0;
}
