/* Helpers shared by the C tests of libpanto: checks that fail loudly, a tiny HTTP client for the
 * mock LLM server's control API, and a driver that reads a run to its end.
 *
 * Every test program gets the mock's base URL in PANTO_MOCK_URL (http://127.0.0.1:PORT) and a
 * fresh scratch directory in PANTO_TEST_TMP, both set by `cargo xtask ffi-test`. */
#ifndef PANTO_TEST_COMMON_H
#define PANTO_TEST_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "panto.h"

/* Prints "FAIL <file>:<line>: <message>" and exits 1 when `cond` is false. */
#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            test_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
        } \
    } while (0)

/* Fails unless `status` is PANTO_OK, printing the error's code and message. Frees `err`. */
#define CHECK_OK(call, err) \
    do { \
        int32_t check_status_ = (call); /* before reading `err`, which the call sets */ \
        test_check_ok(__FILE__, __LINE__, #call, check_status_, (err)); \
    } while (0)

void test_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
void test_check_ok(const char *file, int line, const char *what, int32_t status, panto_error *err);

/* Checks that a failed call returned `expected`, with an error of the same code whose message
 * contains `needle`; frees the error. */
void test_check_error(const char *file, int line, int32_t status, panto_error *err, int32_t expected,
                      const char *needle);
#define CHECK_ERROR(call, err, expected, needle) \
    do { \
        int32_t check_status_ = (call); /* before reading `err`, which the call sets */ \
        test_check_error(__FILE__, __LINE__, check_status_, (err), (expected), (needle)); \
    } while (0)

/* The mock's base URL (from PANTO_MOCK_URL) and the scratch directory (PANTO_TEST_TMP). */
const char *mock_url(void);
const char *test_tmp(void);

/* Queues replies on the mock: `json` is a reply or an array of replies (see panto-mock). */
void mock_push(const char *json);
/* Queues a raw SSE response body; with `stall_after` >= 0 the mock sends only that many body
 * bytes and then nothing more (keeping the connection open). */
void mock_push_sse(const char *sse, long stall_after);
/* Every provider request the mock recorded, as its JSON array; free() it. */
char *mock_requests(void);
/* The `n`th (1-based) recorded request as its JSON object text, or NULL when there are fewer;
 * free() it. */
char *mock_request(size_t n);
/* How many requests the mock recorded. */
size_t mock_request_count(void);
/* Forgets the queue and the recorded requests. */
void mock_reset(void);
/* Has the mock check a JSON array of events against docs/events.schema.json; fails the test with
 * the mock's message (the event and the field at fault) unless every one matches. */
void mock_check_events(const char *json_array);

/* An Anthropic-style config for the mock: no retries, no compaction, the given extra JSON
 * members (may be "") appended at the top level. Free with panto_config_free. */
panto_config *mock_config(const char *extra);

/* The handles of an agent on a null store, as most tests start. */
typedef struct {
    panto_runtime *rt;
    panto_store *store;
    panto_session *session;
    panto_agent *agent;
} mock_agent;

/* A runtime of `worker_threads` threads (0: one per core), a null store, a new session on it and
 * an agent with mock_config(extra) (the config is freed again: the agent copied it). A test may
 * free any handle early and set it to NULL; mock_agent_free frees the rest. */
mock_agent mock_agent_new(uint32_t worker_threads, const char *extra);
/* Frees the agent, session, store and runtime that are not NULL, in that order. */
void mock_agent_free(mock_agent *m);

/* How many times `needle` occurs in `haystack`. */
size_t count_of(const char *haystack, const char *needle);

/* What reading a run to its end saw. */
typedef struct {
    int kinds[256];      /* the event kinds, in order (the first 256) */
    size_t n_events;     /* how many events in all */
    char text[8192];     /* the text deltas, concatenated */
    char last_json[4096];/* the payload of the last event */
    int32_t status;      /* what ended it: PANTO_END, or the error code */
    char error[1024];    /* the error message, if it ended with one */
} run_log;

/* Reads `run` until PANTO_END or an error (with a one-second poll), recording it in `log`, and
 * has the mock check every event's JSON against the schema. Returns the final status. */
int32_t drain_run(panto_run *run, run_log *log);

/* Whether `log` saw an event of `kind`. */
int saw_kind(const run_log *log, int kind);

#endif
