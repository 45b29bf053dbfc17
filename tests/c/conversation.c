/* Conversations built by hand: an agent started from a conversation given as JSON (written into
 * its new session at once), messages appended (a user message, a tool call and its result, an
 * answer), a compaction with the program's own summary, and a new agent that resumes the session
 * from the store: the model sees the system prompt, the summary and the kept messages, nothing
 * older. Malformed JSON and impossible cuts are refused, naming what is wrong and where. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char *CONVERSATION =
    "{\"messages\": ["
    "{\"role\": \"system\", \"content\": [{\"type\": \"system\", \"text\": \"You are terse.\", \"mode\": \"append\"}]},"
    "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"My name is Ada.\"}]},"
    "{\"role\": \"assistant\", \"content\": [{\"type\": \"text\", \"text\": \"Hello, Ada.\"}], \"stop_reason\": \"end_turn\"}"
    "], \"metadata\": \"{\\\"app\\\": \\\"c-test\\\"}\"}";

static const char *SUMMARY = "The user is Ada. She likes tea; a note of it was taken.";

static void add(panto_agent *agent, const char *message_json) {
    panto_error *err = NULL;
    CHECK_OK(panto_agent_add_message_json(agent, message_json, &err), err);
}

static size_t listed_messages(panto_store *store) {
    panto_error *err = NULL;
    char *json = NULL;
    CHECK_OK(panto_store_list_json(store, &json, &err), err);
    const char *count = strstr(json, "\"message_count\":");
    size_t n = count ? strtoul(count + strlen("\"message_count\":"), NULL, 10) : 0;
    panto_string_free(json);
    return n;
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
    char id[64];
    snprintf(id, sizeof id, "%s", panto_session_id(session));
    panto_config *config = mock_config("");

    /* Malformed conversations are refused with the argument and the path, and hand out nothing. */
    panto_agent *agent = NULL;
    CHECK_ERROR(panto_agent_new_with_conversation(
                    config, session,
                    "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"hi\"}]},"
                    " {\"role\": \"assistant\", \"content\": [{\"type\": \"txt\", \"text\": \"x\"}]}]}",
                    &agent, &err),
                err, PANTO_ERR_INVALID_ARGUMENT, "conversation_json: messages[1].content[0]");
    CHECK_ERROR(panto_agent_new_with_conversation(config, session, "{\"mesages\": []}", &agent, &err), err,
                PANTO_ERR_INVALID_ARGUMENT, "unknown field `mesages`");
    CHECK_ERROR(panto_agent_new_with_conversation(config, session, "{\"messages\": [", &agent, &err), err,
                PANTO_ERR_INVALID_ARGUMENT, "conversation_json: invalid JSON");
    CHECK(agent == NULL, "a failed call hands out no agent");
    CHECK(listed_messages(store) == 0, "a refused conversation writes nothing");

    /* The conversation is written into the new session as soon as the agent is made. */
    CHECK_OK(panto_agent_new_with_conversation(config, session, CONVERSATION, &agent, &err), err);
    CHECK(strcmp(panto_agent_session_id(agent), id) == 0, "the agent runs on the session it was given");
    CHECK(listed_messages(store) == 3, "the given conversation is in the store");

    /* Messages appended by hand: a prompt, a tool call with its result, answers. */
    add(agent, "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"I like tea.\"}]}");
    add(agent, "{\"role\": \"assistant\", \"content\": [{\"type\": \"tool_use\", \"id\": \"toolu_c1\", \"name\": \"note\","
               " \"input\": {\"drink\": \"tea\"}}], \"stop_reason\": \"tool_use\"}");
    add(agent, "{\"role\": \"user\", \"content\": [{\"type\": \"tool_result\", \"tool_use_id\": \"toolu_c1\","
               " \"content\": [{\"type\": \"text\", \"text\": \"noted\"}], \"is_error\": false}]}");
    add(agent, "{\"role\": \"assistant\", \"content\": [{\"type\": \"text\", \"text\": \"Noted: tea.\"}]}");
    add(agent, "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"What do I drink?\"}]}");
    add(agent, "{\"role\": \"assistant\", \"content\": [{\"type\": \"text\", \"text\": \"Tea.\"}]}");
    CHECK_ERROR(panto_agent_add_message_json(agent, "{\"role\": \"bot\", \"content\": []}", &err), err,
                PANTO_ERR_INVALID_ARGUMENT, "message_json: role");
    CHECK(listed_messages(store) == 9, "each appended message is persisted");

    /* Compaction with our own summary: messages 1 to 6 go, 7 and 8 stay. Cutting between a tool
     * call and its result, or past the end, or with an empty summary is refused. */
    char *result = NULL;
    CHECK_ERROR(panto_agent_compact_with_summary(agent, SUMMARY, 5, &result, &err), err, PANTO_ERR_INVALID_ARGUMENT,
                "tool results");
    CHECK_ERROR(panto_agent_compact_with_summary(agent, SUMMARY, 99, &result, &err), err,
                PANTO_ERR_INVALID_ARGUMENT, "cannot compact before message 99");
    CHECK_ERROR(panto_agent_compact_with_summary(agent, " ", 7, &result, &err), err, PANTO_ERR_INVALID_ARGUMENT,
                "the summary is empty");
    CHECK_ERROR(panto_agent_compact_with_summary(agent, SUMMARY, 1, &result, &err), err, PANTO_ERR_STATE,
                "nothing to compact");
    CHECK(result == NULL, "failed compactions hand out nothing");
    CHECK_OK(panto_agent_compact_with_summary(agent, SUMMARY, 7, &result, &err), err);
    CHECK(strstr(result, "\"messages_summarized\":6") != NULL && strstr(result, "\"messages_kept\":2") != NULL &&
              strstr(result, "\"usage\":null") != NULL,
          "compaction result: %s", result);
    panto_string_free(result);
    char *json = NULL;
    CHECK_OK(panto_agent_conversation_json(agent, &json, &err), err);
    CHECK(strstr(json, "\"type\":\"compaction_summary\"") != NULL && strstr(json, "My name is Ada.") == NULL,
          "the compacted conversation: %s", json);
    panto_string_free(json);
    CHECK(mock_request_count() == 0, "building and compacting asked the model nothing");
    panto_agent_free(agent);
    panto_session_free(session);
    panto_store_free(store);

    /* A new agent resumes the session from the store, and the model sees the compacted view. */
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \"Still tea.\"}}}");
    CHECK_OK(panto_store_open_fs(rt, dir, &store, &err), err);
    CHECK_OK(panto_session_resolve(store, id, &session, &err), err);
    CHECK_OK(panto_agent_new(config, session, &agent, &err), err);
    CHECK_OK(panto_agent_conversation_json(agent, &json, &err), err);
    CHECK(strstr(json, SUMMARY) != NULL && strstr(json, "What do I drink?") != NULL &&
              strstr(json, "I like tea.") == NULL && strstr(json, "c-test") != NULL,
          "the resumed conversation: %s", json);
    panto_string_free(json);
    panto_run *run = NULL;
    CHECK_OK(panto_agent_run(agent, "And now?", &run, &err), err);
    run_log log;
    CHECK(drain_run(run, &log) == PANTO_END, "the resumed turn ended with %s: %s", panto_status_name(log.status),
          log.error);
    panto_run_free(run);
    char *request = mock_request(1);
    CHECK(request != NULL, "no request from the resumed agent");
    CHECK(strstr(request, SUMMARY) != NULL, "no summary: %s", request);
    CHECK(strstr(request, "What do I drink?") != NULL && strstr(request, "Tea.") != NULL, "no kept messages: %s",
          request);
    CHECK(strstr(request, "You are terse.") != NULL, "no system prompt: %s", request);
    CHECK(strstr(request, "And now?") != NULL, "no new prompt: %s", request);
    CHECK(strstr(request, "My name is Ada.") == NULL && strstr(request, "I like tea.") == NULL &&
              strstr(request, "toolu_c1") == NULL,
          "summarised messages were sent: %s", request);
    CHECK(strstr(request, "\"validation\":null") != NULL, "the request broke the API's rules: %s", request);
    free(request);

    /* A session that holds messages is resumed, not started from a conversation. */
    panto_agent *second = NULL;
    CHECK_ERROR(panto_agent_new_with_conversation(config, session, CONVERSATION, &second, &err), err, PANTO_ERR_STATE,
                "already holds");

    panto_agent_free(agent);
    panto_session_free(session);
    panto_store_free(store);
    panto_config_free(config);
    panto_runtime_free(rt);
    printf("conversation ok\n");
    return 0;
}
