/* Between turns: replacing the system prompt, switching the model, compacting the conversation
 * on demand, and what usage reports for a model without known rates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static void turn(panto_agent *agent, const char *prompt, const char *answer) {
    char json[512];
    snprintf(json, sizeof json, "{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"%s\"}}}", answer);
    mock_push(json);
    panto_error *err = NULL;
    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, prompt, &run, &err), err);
    run_log log;
    CHECK(drain_run(run, &log) == PANTO_END, "turn \"%s\": %s", prompt, log.error);
    CHECK(strcmp(log.text, answer) == 0, "text: %s", log.text);
    panto_run_free(run);
}

static panto_config *config_for(const char *model) {
    char json[1024];
    /* keep_recent_tokens 1: a manual compaction keeps only the last message verbatim. */
    snprintf(json, sizeof json,
             "{\"provider\": {\"api_style\": \"anthropic-messages\", \"base_url\": \"%s\", \"model\": \"%s\","
             " \"api_key\": \"k\"}, \"retry\": {\"max_attempts\": 1},"
             " \"compaction\": {\"enabled\": false, \"keep_recent_tokens\": 1}}",
             mock_url(), model);
    panto_config *config = NULL;
    panto_error *err = NULL;
    CHECK_OK(panto_config_new_json(json, &config, &err), err);
    return config;
}

int main(void) {
    panto_error *err = NULL;
    panto_runtime *rt = NULL;
    CHECK_OK(panto_runtime_new(1, &rt, &err), err);
    panto_store *store = NULL;
    CHECK_OK(panto_store_new_null(rt, &store, &err), err);
    panto_session *session = NULL;
    CHECK_OK(panto_session_create(store, &session, &err), err);
    panto_config *config = config_for("claude-sonnet-4-5");
    panto_agent *agent = NULL;
    CHECK_OK(panto_agent_new(config, session, &agent, &err), err);

    CHECK_OK(panto_agent_add_system_message(agent, "Old rules.", &err), err);
    CHECK_OK(panto_agent_set_system_prompt(agent, "New rules.", &err), err);
    turn(agent, "First question about apples.", "Apples are red.");

    /* Another model from the next turn on; it has no built-in rates, so the cost is unknown. */
    panto_config *other = config_for("local-llama");
    CHECK_OK(panto_agent_set_config(agent, other, &err), err);
    panto_config_free(other);
    turn(agent, "Second question.", "Second answer.");

    char *first = mock_request(1);
    char *second = mock_request(2);
    CHECK(first != NULL && second != NULL, "two requests");
    CHECK(strstr(first, "New rules.") != NULL && strstr(first, "Old rules.") == NULL,
          "the replaced prompt is gone: %s", first);
    CHECK(strstr(first, "\"model\":\"claude-sonnet-4-5\"") != NULL, "first model: %s", first);
    CHECK(strstr(second, "\"model\":\"local-llama\"") != NULL, "switched model: %s", second);
    free(first);
    free(second);

    char *json = NULL;
    CHECK_OK(panto_agent_usage_json(agent, &json, &err), err);
    CHECK(strstr(json, "\"cost_micro_cents\":null") != NULL, "usage: %s", json);
    /* The mock reports 12 input tokens per request. */
    CHECK(strstr(json, "\"input_tokens\":24") != NULL, "usage counts both turns: %s", json);
    panto_string_free(json);

    /* Compaction on demand: the model is asked for a summary, which replaces the older messages. */
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"SUMMARY: apples are red.\"}}}");
    char *result = NULL;
    CHECK_OK(panto_agent_compact(agent, NULL, "Mention the fruit.", &result, &err), err);
    CHECK(strstr(result, "\"summary\":\"SUMMARY: apples are red.\"") != NULL, "result: %s", result);
    CHECK(strstr(result, "\"messages_summarized\":3") != NULL && strstr(result, "\"messages_kept\":1") != NULL,
          "result: %s", result);
    panto_string_free(result);
    char *summary_request = mock_request(3);
    CHECK(summary_request != NULL && strstr(summary_request, "Mention the fruit.") != NULL &&
              strstr(summary_request, "First question about apples.") != NULL,
          "the summary request: %s", summary_request ? summary_request : "(none)");
    free(summary_request);

    CHECK_OK(panto_agent_conversation_json(agent, &json, &err), err);
    CHECK(strstr(json, "\"type\":\"compaction_summary\"") != NULL &&
              strstr(json, "First question about apples.") == NULL,
          "the conversation after compaction: %s", json);
    panto_string_free(json);

    turn(agent, "Third question.", "Third answer.");
    char *third = mock_request(4);
    CHECK(third != NULL && strstr(third, "SUMMARY: apples are red.") != NULL &&
              strstr(third, "First question about apples.") == NULL && strstr(third, "Second answer.") != NULL,
          "the request after compaction: %s", third ? third : "(none)");
    CHECK(strstr(third, "\"validation\":null") != NULL, "the request broke the API's rules: %s", third);
    free(third);

    panto_agent_free(agent);
    panto_config_free(config);
    panto_session_free(session);
    panto_store_free(store);
    panto_runtime_free(rt);
    printf("agent ok\n");
    return 0;
}
