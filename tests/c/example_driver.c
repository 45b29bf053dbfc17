/* Runs the documented example (example.c, built beside this program) against the mock: the model
 * calls the example's C tool, gets its result, and the example prints the streamed answer. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv) {
    (void)argc;
    mock_push("{\"builder\": {\"name\": \"anthropic_tool_uses\", \"args\": {\"text\": \"Let me look.\", "
              "\"calls\": [{\"id\": \"toolu_w1\", \"name\": \"get_weather\", \"input\": {\"city\": \"Paris\"}}]}}}");
    mock_push("{\"builder\": {\"name\": \"anthropic_text\", \"args\": {\"text\": \" It is sunny in Paris.\\nEnjoy!\"}}}");

    /* The example lives beside this program. */
    char example[4096];
    snprintf(example, sizeof example, "%s", argv[0]);
    char *slash = strrchr(example, '/');
    CHECK(slash != NULL, "run me by path, not through $PATH");
    snprintf(slash + 1, sizeof example - (size_t)(slash + 1 - example), "example");

    int out[2];
    CHECK(pipe(out) == 0, "pipe");
    fflush(NULL);
    pid_t child = fork();
    CHECK(child >= 0, "fork");
    if (child == 0) {
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        close(out[1]);
        setenv("PANTO_BASE_URL", mock_url(), 1);
        setenv("ANTHROPIC_API_KEY", "key-from-the-environment", 1);
        char *child_argv[] = {example, "What is the weather in Paris?", NULL};
        execv(example, child_argv);
        _exit(127);
    }
    close(out[1]);
    char printed[4096];
    size_t len = 0;
    ssize_t n;
    while ((n = read(out[0], printed + len, sizeof printed - 1 - len)) > 0) {
        len += (size_t)n;
    }
    printed[len] = '\0';
    close(out[0]);
    int wstatus = 0;
    CHECK(waitpid(child, &wstatus, 0) == child, "waitpid");
    CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, "the example failed (status %d); it printed:\n%s",
          wstatus, printed);

    CHECK(strcmp(printed, "Let me look. It is sunny in Paris.\nEnjoy!\n") == 0, "the example printed:\n%s",
          printed);
    char *first = mock_request(1);
    CHECK(first != NULL && strstr(first, "[\"x-api-key\",\"key-from-the-environment\"]") != NULL,
          "the key named by api_key_env was not sent: %s", first ? first : "(no request)");
    CHECK(strstr(first, "\"name\":\"get_weather\"") != NULL, "the tool was not offered: %s", first);
    free(first);
    char *second = mock_request(2);
    CHECK(second != NULL && strstr(second, "Sunny, 21C (asked with {\\\"city\\\":\\\"Paris\\\"})") != NULL,
          "the tool's result did not reach the model: %s", second ? second : "(no request)");
    free(second);
    printf("example ok\n");
    return 0;
}
