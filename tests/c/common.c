/* See common.h. */
#define _POSIX_C_SOURCE 200809L

#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void test_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "FAIL %s:%d: (%s) ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

void test_check_ok(const char *file, int line, const char *what, int32_t status, panto_error *err) {
    if (status != PANTO_OK) {
        test_fail(file, line, what, "returned %s (%d): %s", panto_status_name(status), (int)status,
                  err ? panto_error_message(err) : "(no error)");
    }
    if (err != NULL) {
        test_fail(file, line, what, "succeeded but set an error: %s", panto_error_message(err));
    }
}

void test_check_error(const char *file, int line, int32_t status, panto_error *err, int32_t expected,
                      const char *needle) {
    if (status != expected) {
        test_fail(file, line, "status", "expected %s, got %s (%d): %s", panto_status_name(expected),
                  panto_status_name(status), (int)status, err ? panto_error_message(err) : "(no error)");
    }
    if (err == NULL) {
        test_fail(file, line, "err", "expected an error with %s, got none", panto_status_name(expected));
    }
    if (panto_error_code(err) != expected) {
        test_fail(file, line, "code", "error code %d differs from the status %d", (int)panto_error_code(err),
                  (int)expected);
    }
    if (strstr(panto_error_message(err), needle) == NULL) {
        test_fail(file, line, "message", "expected a message containing \"%s\", got \"%s\"", needle,
                  panto_error_message(err));
    }
    panto_error_free(err);
}

const char *mock_url(void) {
    const char *url = getenv("PANTO_MOCK_URL");
    CHECK(url != NULL && *url != '\0', "PANTO_MOCK_URL is not set (run the tests with `cargo xtask ffi-test`)");
    return url;
}

const char *test_tmp(void) {
    const char *dir = getenv("PANTO_TEST_TMP");
    CHECK(dir != NULL && *dir != '\0', "PANTO_TEST_TMP is not set (run the tests with `cargo xtask ffi-test`)");
    return dir;
}

/* One HTTP/1.1 exchange with the mock's control API; returns the body (malloc'd). */
static char *http(const char *method, const char *path, const char *body) {
    const char *url = mock_url();
    int port = 0;
    CHECK(sscanf(url, "http://127.0.0.1:%d", &port) == 1, "unexpected mock URL %s", url);

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0, "connect to %s: %s", url, strerror(errno));

    size_t body_len = body ? strlen(body) : 0;
    char head[512];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     method, path, body_len);
    CHECK(n > 0 && (size_t)n < sizeof head, "request head too long");
    CHECK(write(fd, head, (size_t)n) == n, "write: %s", strerror(errno));
    size_t sent = 0;
    while (sent < body_len) {
        ssize_t w = write(fd, body + sent, body_len - sent);
        CHECK(w > 0, "write: %s", strerror(errno));
        sent += (size_t)w;
    }

    /* Read the head, then exactly Content-Length bytes (the mock waits for us to close). */
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    CHECK(buf != NULL, "out of memory");
    char *body_start = NULL;
    size_t content_length = 0;
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            CHECK(buf != NULL, "out of memory");
        }
        ssize_t r = read(fd, buf + len, cap - len);
        CHECK(r >= 0, "read: %s", strerror(errno));
        if (r == 0) {
            break;
        }
        len += (size_t)r;
        buf[len] = '\0';
        if (body_start == NULL) {
            char *end = strstr(buf, "\r\n\r\n");
            if (end != NULL) {
                body_start = end + 4;
                const char *cl = strstr(buf, "content-length:");
                if (cl == NULL) {
                    cl = strstr(buf, "Content-Length:");
                }
                CHECK(cl != NULL && cl < end, "the mock's reply has no Content-Length:\n%s", buf);
                content_length = strtoul(cl + strlen("content-length:"), NULL, 10);
            }
        }
        if (body_start != NULL && len - (size_t)(body_start - buf) >= content_length) {
            break;
        }
    }
    close(fd);
    CHECK(body_start != NULL, "incomplete reply from the mock to %s %s", method, path);
    CHECK(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%s %s failed:\n%s", method, path, buf);
    size_t offset = (size_t)(body_start - buf);
    memmove(buf, body_start, len - offset);
    buf[content_length] = '\0';
    return buf;
}

void mock_push(const char *json) { free(http("POST", "/__mock/push", json)); }

void mock_push_sse(const char *sse, long stall_after) {
    size_t cap = strlen(sse) * 6 + 128, len = 0;
    char *json = malloc(cap);
    CHECK(json != NULL, "out of memory");
    len += (size_t)snprintf(json, cap, "{\"sse\": \"");
    for (const char *p = sse; *p != '\0'; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            json[len++] = '\\';
            json[len++] = (char)c;
        } else if (c < 0x20) {
            len += (size_t)snprintf(json + len, cap - len, "\\u%04x", c);
        } else {
            json[len++] = (char)c;
        }
    }
    if (stall_after >= 0) {
        len += (size_t)snprintf(json + len, cap - len, "\", \"stall_after\": %ld}", stall_after);
    } else {
        len += (size_t)snprintf(json + len, cap - len, "\"}");
    }
    json[len] = '\0';
    mock_push(json);
    free(json);
}

char *mock_requests(void) { return http("GET", "/__mock/requests", NULL); }

/* The `n`th (1-based) top-level object of the JSON array `json`, and its length. Strings are
 * skipped so braces inside them do not count. */
static const char *nth_object(const char *json, size_t n, size_t *len) {
    size_t index = 0;
    int depth = 0;
    const char *start = NULL;
    for (const char *p = json; *p != '\0'; p++) {
        if (*p == '"') {
            for (p++; *p != '\0' && *p != '"'; p++) {
                if (*p == '\\' && p[1] != '\0') {
                    p++;
                }
            }
            if (*p == '\0') {
                break;
            }
            continue;
        }
        if (*p == '{') {
            if (depth++ == 0) {
                start = p;
            }
        } else if (*p == '}') {
            if (--depth == 0 && ++index == n) {
                *len = (size_t)(p - start) + 1;
                return start;
            }
        }
    }
    return NULL;
}

char *mock_request(size_t n) {
    char *all = mock_requests();
    size_t len = 0;
    const char *found = nth_object(all, n, &len);
    char *copy = NULL;
    if (found != NULL) {
        copy = malloc(len + 1);
        CHECK(copy != NULL, "out of memory");
        memcpy(copy, found, len);
        copy[len] = '\0';
    }
    free(all);
    return copy;
}

size_t mock_request_count(void) {
    char *all = mock_requests();
    size_t n = 0, len = 0;
    while (nth_object(all, n + 1, &len) != NULL) {
        n++;
    }
    free(all);
    return n;
}

void mock_reset(void) { free(http("POST", "/__mock/reset", "{}")); }

panto_config *mock_config(const char *extra) {
    char json[2048];
    int n = snprintf(json, sizeof json,
                     "{\"provider\": {\"api_style\": \"anthropic-messages\", \"base_url\": \"%s\","
                     " \"model\": \"claude-sonnet-4-5\", \"api_key\": \"test-key\"},"
                     " \"retry\": {\"max_attempts\": 1}, \"compaction\": {\"enabled\": false}%s%s}",
                     mock_url(), (extra && *extra) ? ", " : "", extra ? extra : "");
    CHECK(n > 0 && (size_t)n < sizeof json, "config too long");
    panto_config *config = NULL;
    panto_error *err = NULL;
    CHECK_OK(panto_config_new_json(json, &config, &err), err);
    return config;
}

mock_agent mock_agent_new(uint32_t worker_threads, const char *extra) {
    mock_agent m = {NULL, NULL, NULL, NULL};
    panto_error *err = NULL;
    CHECK_OK(panto_runtime_new(worker_threads, &m.rt, &err), err);
    CHECK_OK(panto_store_new_null(m.rt, &m.store, &err), err);
    CHECK_OK(panto_session_create(m.store, &m.session, &err), err);
    panto_config *config = mock_config(extra);
    CHECK_OK(panto_agent_new(config, m.session, &m.agent, &err), err);
    panto_config_free(config);
    return m;
}

void mock_agent_free(mock_agent *m) {
    panto_agent_free(m->agent);
    panto_session_free(m->session);
    panto_store_free(m->store);
    panto_runtime_free(m->rt);
    m->agent = NULL;
    m->session = NULL;
    m->store = NULL;
    m->rt = NULL;
}

size_t count_of(const char *haystack, const char *needle) {
    size_t n = 0;
    size_t step = strlen(needle);
    for (const char *p = strstr(haystack, needle); p != NULL; p = strstr(p + step, needle)) {
        n++;
    }
    return n;
}

/* Appends the "text" member of a delta payload to `out` (the JSON is produced by libpanto, so a
 * simple scan is enough; escapes are kept as they are). */
static void append_text(char *out, size_t cap, const char *json) {
    const char *key = strstr(json, "\"text\":\"");
    if (key == NULL) {
        return;
    }
    const char *p = key + strlen("\"text\":\"");
    size_t len = strlen(out);
    while (*p != '\0' && *p != '"' && len + 1 < cap) {
        if (*p == '\\' && p[1] != '\0') {
            out[len++] = *p++;
        }
        out[len++] = *p++;
    }
    out[len] = '\0';
}

void mock_check_events(const char *json_array) { free(http("POST", "/__mock/check-events", json_array)); }

/* A growing JSON array of event objects. */
typedef struct {
    char *text;
    size_t len, cap;
} json_array;

static void array_push(json_array *a, const char *json) {
    size_t need = a->len + strlen(json) + 3; /* a separator, the closing bracket, the NUL */
    if (need > a->cap) {
        a->cap = need * 2;
        a->text = realloc(a->text, a->cap);
        CHECK(a->text != NULL, "out of memory");
    }
    a->len += (size_t)snprintf(a->text + a->len, a->cap - a->len, "%s%s", a->len == 0 ? "[" : ",", json);
}

/* Sends every event of the run to the mock to be checked against the schema, then frees them. */
static void check_and_free_events(json_array *a) {
    if (a->len == 0) {
        mock_check_events("[]");
    } else {
        a->text[a->len++] = ']';
        a->text[a->len] = '\0';
        mock_check_events(a->text);
    }
    free(a->text);
}

int32_t drain_run(panto_run *run, run_log *log) {
    memset(log, 0, sizeof *log);
    json_array events = {NULL, 0, 0};
    for (;;) {
        panto_event *event = NULL;
        panto_error *err = NULL;
        int32_t status = panto_run_next_event(run, 1000, &event, &err);
        if (status == PANTO_TIMEOUT) {
            CHECK(event == NULL && err == NULL, "a timeout hands out nothing");
            continue;
        }
        if (status == PANTO_OK) {
            CHECK(event != NULL && err == NULL, "PANTO_OK comes with an event and no error");
            int kind = panto_event_kind(event);
            if (log->n_events < sizeof log->kinds / sizeof log->kinds[0]) {
                log->kinds[log->n_events] = kind;
            }
            log->n_events++;
            if (kind == PANTO_EVENT_TEXT_DELTA) {
                append_text(log->text, sizeof log->text, panto_event_json(event));
            }
            snprintf(log->last_json, sizeof log->last_json, "%s", panto_event_json(event));
            array_push(&events, panto_event_json(event));
            panto_event_free(event);
            continue;
        }
        CHECK(event == NULL, "no event unless PANTO_OK");
        log->status = status;
        if (status == PANTO_END) {
            CHECK(err == NULL, "PANTO_END is not an error");
        } else {
            CHECK(err != NULL && panto_error_code(err) == status, "an error status comes with its error");
            snprintf(log->error, sizeof log->error, "%s", panto_error_message(err));
            panto_error_free(err);
        }
        check_and_free_events(&events);
        return status;
    }
}

int saw_kind(const run_log *log, int kind) {
    size_t n = log->n_events < 256 ? log->n_events : 256;
    for (size_t i = 0; i < n; i++) {
        if (log->kinds[i] == kind) {
            return 1;
        }
    }
    return 0;
}
