/* Streams one turn of a conversation with a model that may call a tool written in C.
 *
 * Build (from the repository root, after `cargo build -p panto-ffi`):
 *   cc -Iinclude tests/c/example.c -Ltarget/debug -Wl,-rpath,$PWD/target/debug -lpanto -o example
 * Run:
 *   ANTHROPIC_API_KEY=sk-... ./example "What is the weather in Paris?"
 * PANTO_BASE_URL replaces https://api.anthropic.com (the tests point it at a mock server). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "panto.h"

/* The tool: libpanto calls it on one of its threads with the model's arguments as JSON. */
static void get_weather(void *context, const char *input_json, panto_tool_result *result) {
    (void)context;
    char text[512];
    /* A real tool would parse input_json ({"city": "..."}) and look the weather up. */
    snprintf(text, sizeof text, "Sunny, 21C (asked with %s)", input_json);
    panto_tool_result_set_text(result, text, 0 /* not an error */, NULL);
}

/* Prints the string member `key` of a JSON object produced by libpanto, unescaped. libpanto's
 * JSON writes non-ASCII as UTF-8 and escapes only quotes, backslashes and control characters. */
static void print_member(const char *json, const char *key) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *p = strstr(json, pattern);
    if (p == NULL) {
        return;
    }
    for (p += strlen(pattern); *p != '\0' && *p != '"'; p++) {
        if (*p != '\\') {
            putchar(*p);
            continue;
        }
        switch (*++p) {
        case 'n': putchar('\n'); break;
        case 't': putchar('\t'); break;
        case 'r': putchar('\r'); break;
        case 'b': putchar('\b'); break;
        case 'f': putchar('\f'); break;
        case 'u': {
            char hex[5] = {p[1], p[2], p[3], p[4], '\0'}; /* only control characters come as \u00XX */
            putchar((int)strtol(hex, NULL, 16));
            p += 4;
            break;
        }
        default: putchar(*p); break; /* \" \\ \/ */
        }
    }
    fflush(stdout);
}

static int report(const char *what, panto_error *err) {
    fprintf(stderr, "%s failed: %s (%s)\n", what, panto_error_message(err),
            panto_status_name(panto_error_code(err)));
    panto_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    const char *prompt = argc > 1 ? argv[1] : "What is the weather in Paris?";
    const char *base_url = getenv("PANTO_BASE_URL") ? getenv("PANTO_BASE_URL") : "https://api.anthropic.com";
    char config_json[1024];
    snprintf(config_json, sizeof config_json,
             "{\"provider\": {\"api_style\": \"anthropic-messages\", \"base_url\": \"%s\","
             " \"model\": \"claude-sonnet-4-5\", \"api_key_env\": \"ANTHROPIC_API_KEY\"},"
             " \"retry\": {\"max_attempts\": 3}}",
             base_url);

    int rc = 1;
    panto_error *err = NULL;
    panto_runtime *runtime = NULL;
    panto_config *config = NULL;
    panto_store *store = NULL;
    panto_session *session = NULL;
    panto_agent *agent = NULL;
    panto_tool *tool = NULL;
    panto_run *run = NULL;

    if (panto_runtime_new(0, &runtime, &err) != PANTO_OK) {
        return report("panto_runtime_new", err);
    }
    if (panto_config_new_json(config_json, &config, &err) != PANTO_OK) {
        rc = report("panto_config_new_json", err);
        goto done;
    }
    /* An ephemeral session; panto_store_open_fs(runtime, dir, ...) would persist it. */
    if (panto_store_new_null(runtime, &store, &err) != PANTO_OK ||
        panto_session_create(store, &session, &err) != PANTO_OK ||
        panto_agent_new(config, session, &agent, &err) != PANTO_OK) {
        rc = report("creating the agent", err);
        goto done;
    }
    if (panto_tool_new("get_weather", "The current weather in a city.",
                       "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}},"
                       " \"required\": [\"city\"]}",
                       NULL, get_weather, NULL, &tool, &err) != PANTO_OK ||
        panto_agent_add_tool(agent, tool, &err) != PANTO_OK) {
        rc = report("adding the tool", err);
        goto done;
    }
    if (panto_agent_run(agent, prompt, &run, &err) != PANTO_OK) {
        rc = report("panto_agent_run", err);
        goto done;
    }
    for (;;) {
        panto_event *event = NULL;
        int32_t status = panto_run_next_event(run, 1000, &event, &err);
        if (status == PANTO_TIMEOUT) {
            continue; /* a good moment to check for a user's Ctrl-C and call panto_run_cancel */
        }
        if (status == PANTO_END) {
            rc = 0;
            break;
        }
        if (status != PANTO_OK) {
            rc = report("the turn", err);
            break;
        }
        const char *json = panto_event_json(event);
        switch (panto_event_kind(event)) {
        case PANTO_EVENT_TEXT_DELTA:
            print_member(json, "text");
            break;
        case PANTO_EVENT_TOOL_START:
            fprintf(stderr, "[calling a tool: %s]\n", json);
            break;
        case PANTO_EVENT_TURN_COMPLETE:
            printf("\n");
            fprintf(stderr, "[done: %s]\n", json);
            break;
        default:
            break; /* other kinds: see docs/ffi.md */
        }
        panto_event_free(event);
    }

done:
    panto_run_free(run);
    panto_tool_free(tool);
    panto_agent_free(agent);
    panto_session_free(session);
    panto_store_free(store);
    panto_config_free(config);
    panto_runtime_free(runtime);
    return rc;
}
