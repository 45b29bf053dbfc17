/* A C program on libpanto: one streamed turn in which the model calls a tool written in C.
 * No JSON parser needed: the event accessors give the text and the tool call.
 *
 * Build against an installed libpanto (docs/ffi.md, "Install and link"):
 *   cc weather.c $(pkg-config --cflags --libs panto) -o weather
 * Run:
 *   ANTHROPIC_API_KEY=sk-... ./weather "What is the weather in Paris?"
 * PANTO_BASE_URL replaces https://api.anthropic.com (CI points it at the mock server). */
#include <stdio.h>
#include <stdlib.h>

#include <panto.h>

/* The tool: libpanto calls it on one of its threads with the model's arguments as JSON. */
static void get_weather(void *context, const char *input_json, panto_tool_result *result) {
    (void)context;
    char text[512];
    snprintf(text, sizeof text, "Sunny and 21C for %s", input_json);
    panto_tool_result_set_text(result, text, 0 /* not an error */, NULL);
}

static int fail(const char *what, panto_error *err) {
    fprintf(stderr, "%s: %s (%s)\n", what, panto_error_message(err), panto_status_name(panto_error_code(err)));
    panto_error_free(err);
    return 1;
}

int main(int argc, char **argv) {
    const char *prompt = argc > 1 ? argv[1] : "What is the weather in Paris?";
    const char *base_url = getenv("PANTO_BASE_URL") ? getenv("PANTO_BASE_URL") : "https://api.anthropic.com";
    if (panto_abi_version() != PANTO_ABI_VERSION) {
        fprintf(stderr, "libpanto has ABI %u, this program was built for %d\n", panto_abi_version(),
                PANTO_ABI_VERSION);
        return 1;
    }
    char config_json[1024];
    snprintf(config_json, sizeof config_json,
             "{\"provider\": {\"api_style\": \"anthropic-messages\", \"base_url\": \"%s\","
             " \"model\": \"claude-sonnet-4-5\", \"api_key_env\": \"ANTHROPIC_API_KEY\"}}",
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
        return fail("panto_runtime_new", err);
    }
    if (panto_config_new_json(config_json, &config, &err) != PANTO_OK ||
        panto_store_new_null(runtime, &store, &err) != PANTO_OK ||
        panto_session_create(store, &session, &err) != PANTO_OK ||
        panto_agent_new(config, session, &agent, &err) != PANTO_OK ||
        panto_tool_new("get_weather", "The current weather in a city.",
                       "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}},"
                       " \"required\": [\"city\"]}",
                       NULL, get_weather, NULL, &tool, &err) != PANTO_OK ||
        panto_agent_add_tool(agent, tool, &err) != PANTO_OK ||
        panto_agent_run(agent, prompt, &run, &err) != PANTO_OK) {
        rc = fail("setting up the turn", err);
        goto done;
    }
    for (;;) {
        panto_event *event = NULL;
        int32_t status = panto_run_next_event(run, 1000, &event, &err);
        if (status == PANTO_TIMEOUT) {
            continue;
        }
        if (status == PANTO_END) {
            rc = 0;
            break;
        }
        if (status != PANTO_OK) {
            /* The prompt stays in the conversation: panto_agent_retry would ask again. */
            rc = fail("the turn", err);
            break;
        }
        switch (panto_event_kind(event)) {
        case PANTO_EVENT_TEXT_DELTA:
            fputs(panto_event_text(event), stdout);
            fflush(stdout);
            break;
        case PANTO_EVENT_TOOL_START:
            printf("[%s %s]\n", panto_event_tool_name(event), panto_event_tool_input_json(event));
            break;
        case PANTO_EVENT_TURN_COMPLETE:
            printf("\n");
            break;
        default:
            break; /* other kinds: panto_event_json(event), docs/events.md */
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
