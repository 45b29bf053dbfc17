/* The floor of each whole-process row of the `process` bench (issue 50): the least a program
 * must do to give a command's input and output, and nothing else. The bench compiles it with
 * `cc -O2` and runs it alternately with `panto` in the same process of measurement.
 *
 *   panto-floor version LINE
 *       Writes LINE and a newline (what `panto --version` prints).
 *   panto-floor new PORT REQUEST SESSION_DIR ENTRIES ANSWER
 *       `panto -p hi`, a new session: connects to 127.0.0.1:PORT, sends the bytes of file REQUEST
 *       (the request panto sent, as the mock recorded it), reads the reply to its end, creates a
 *       new file in SESSION_DIR, fsyncs SESSION_DIR, appends the bytes of file ENTRIES (the
 *       session panto wrote), fdatasyncs it, and prints ANSWER.
 *   panto-floor resume PORT REQUEST SESSION_DIR PREFIX ENTRIES ANSWER
 *       `panto -r PREFIX -p hi`: reads SESSION_DIR's names, finds the one session starting with
 *       PREFIX, reads the whole file into memory, sends REQUEST and reads the reply as above,
 *       appends ENTRIES (what panto appended to the session), fdatasyncs it, prints ANSWER.
 *   panto-floor sessions SESSION_DIR
 *       `panto sessions`: for each session file, open, fstat, read 4 KiB from each end, close;
 *       then one line per session, newest first: id, time, size and 60 bytes of its start.
 *
 *   panto-floor rss PROGRAM ARG...
 *       Not a floor: the probe of peak memory. Forks, runs PROGRAM (its stdout to /dev/null),
 *       waits for it with wait4 and prints its ru_maxrss in KiB: the kernel's peak for that
 *       process alone. (Forked from this small program, the child's peak before exec is this
 *       program's, well under a MiB; a child started by vfork from a large process would carry
 *       that process's peak instead.)
 *
 * It decodes nothing (no JSON, no SSE), checks nothing and takes no lock: each is work panto does
 * that the floor leaves out. Any failure exits with status 1 and a message on stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, const char *detail) {
    fprintf(stderr, "panto-floor: %s %s: %s\n", what, detail ? detail : "", strerror(errno));
    exit(1);
}

static void write_all(int fd, const char *p, size_t n, const char *what) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            die("writing", what);
        }
        p += w;
        n -= (size_t)w;
    }
}

/* The whole of an open file, in one buffer of its size. */
static char *read_fd(int fd, size_t *len, const char *what) {
    struct stat st;
    if (fstat(fd, &st) != 0) die("fstat", what);
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size + 1);
    if (!buf) die("allocating for", what);
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            die("reading", what);
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    *len = got;
    return buf;
}

static char *read_path(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("opening", path);
    char *buf = read_fd(fd, len, path);
    close(fd);
    return buf;
}

/* Sends the request and reads the reply to its end: Content-Length, chunked, or until EOF. */
static void exchange(const char *port, const char *request_path) {
    size_t req_len;
    char *req = read_path(request_path, &req_len);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) die("socket", NULL);
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(port))};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr *)&addr, sizeof addr) != 0) die("connecting to port", port);
    write_all(s, req, req_len, "the request");
    free(req);

    size_t cap = 64 * 1024, len = 0;
    char *buf = malloc(cap);
    if (!buf) die("allocating", "the reply buffer");
    size_t body = 0;          /* offset of the body, once the headers are in */
    long long content_length = -1;
    int chunked = 0;
    size_t chunk_at = 0;      /* chunked: where the next chunk-size line starts */
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf) die("allocating", "the reply buffer");
        }
        ssize_t r = read(s, buf + len, cap - len);
        if (r < 0) {
            if (errno == EINTR) continue;
            die("reading", "the reply");
        }
        if (r == 0) break;
        len += (size_t)r;
        if (!body) {
            char *end = memmem(buf, len, "\r\n\r\n", 4);
            if (!end) continue;
            body = (size_t)(end - buf) + 4;
            chunk_at = body;
            for (char *line = buf; line < end;) {
                char *next = memmem(line, (size_t)(end - line) + 2, "\r\n", 2);
                if (!next) break;
                if (strncasecmp(line, "content-length:", 15) == 0) content_length = atoll(line + 15);
                if (strncasecmp(line, "transfer-encoding:", 18) == 0 && memmem(line, (size_t)(next - line), "chunked", 7))
                    chunked = 1;
                line = next + 2;
            }
        }
        if (content_length >= 0 && len - body >= (size_t)content_length) break;
        if (chunked) {
            int done = 0;
            for (;;) {
                char *eol = memmem(buf + chunk_at, len - chunk_at, "\r\n", 2);
                if (!eol) break;
                size_t size = strtoul(buf + chunk_at, NULL, 16);
                size_t next = (size_t)(eol - buf) + 2 + size + 2;
                if (size == 0) {
                    done = 1;
                    break;
                }
                if (next > len) break;
                chunk_at = next;
            }
            if (done) break;
        }
    }
    free(buf);
    close(s);
}

static void append_entries(int fd, const char *entries_path, const char *what) {
    size_t n;
    char *entries = read_path(entries_path, &n);
    write_all(fd, entries, n, what);
    if (fdatasync(fd) != 0) die("fdatasync", what);
    free(entries);
}

static void answer(const char *text) {
    size_t n = strlen(text);
    char *line = malloc(n + 1);
    memcpy(line, text, n);
    line[n] = '\n';
    write_all(1, line, n + 1, "stdout");
    free(line);
}

static int new_session(char **argv) {
    const char *port = argv[0], *request = argv[1], *dir = argv[2], *entries = argv[3], *text = argv[4];
    exchange(port, request);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char path[4096];
    snprintf(path, sizeof path, "%s/%016llx-%08x.jsonl", dir,
             (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec, (unsigned)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) die("creating", path);
    /* A new file's name is durable once its directory is synced, as panto's store does. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0) die("syncing", dir);
    close(dfd);
    append_entries(fd, entries, path);
    close(fd);
    answer(text);
    return 0;
}

static int has_suffix(const char *name, const char *suffix) {
    size_t n = strlen(name), m = strlen(suffix);
    return n >= m && strcmp(name + n - m, suffix) == 0;
}

static int resume(char **argv) {
    const char *port = argv[0], *request = argv[1], *dir = argv[2], *prefix = argv[3], *entries = argv[4],
               *text = argv[5];
    DIR *d = opendir(dir);
    if (!d) die("opening", dir);
    char found[512] = "";
    int matches = 0;
    size_t plen = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, plen) == 0 && has_suffix(e->d_name, ".jsonl")) {
            matches++;
            snprintf(found, sizeof found, "%s", e->d_name);
        }
    }
    if (matches != 1) {
        errno = ENOENT;
        die("no single session starting with", prefix);
    }
    int fd = openat(dirfd(d), found, O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0) die("opening", found);
    closedir(d);
    size_t len;
    char *session = read_fd(fd, &len, found);
    exchange(port, request);
    append_entries(fd, entries, found);
    close(fd);
    free(session);
    answer(text);
    return 0;
}

struct listed {
    char id[64];
    time_t mtime;
    long long size;
    char head[61];
};

static int newest_first(const void *a, const void *b) {
    const struct listed *x = a, *y = b;
    return (y->mtime > x->mtime) - (y->mtime < x->mtime);
}

static int sessions(char **argv) {
    const char *dir = argv[0];
    DIR *d = opendir(dir);
    if (!d) die("opening", dir);
    size_t cap = 1024, n = 0;
    struct listed *all = malloc(cap * sizeof *all);
    char head[4096], tail[4096];
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!has_suffix(e->d_name, ".jsonl")) continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
        if (fd < 0) die("opening", e->d_name);
        struct stat st;
        if (fstat(fd, &st) != 0) die("fstat", e->d_name);
        ssize_t h = pread(fd, head, sizeof head, 0);
        off_t from = st.st_size > (off_t)sizeof tail ? st.st_size - (off_t)sizeof tail : 0;
        ssize_t t = pread(fd, tail, sizeof tail, from);
        if (h < 0 || t < 0) die("reading", e->d_name);
        close(fd);
        if (n == cap) {
            cap *= 2;
            all = realloc(all, cap * sizeof *all);
            if (!all) die("allocating", "the listing");
        }
        struct listed *l = &all[n++];
        snprintf(l->id, sizeof l->id, "%.*s", (int)(strlen(e->d_name) - 6), e->d_name);
        l->mtime = st.st_mtime;
        l->size = (long long)st.st_size;
        size_t keep = h < 60 ? (size_t)h : 60;
        for (size_t i = 0; i < keep; i++) l->head[i] = (head[i] == '\n' || head[i] == '\t') ? ' ' : head[i];
        l->head[keep] = 0;
    }
    closedir(d);
    qsort(all, n, sizeof *all, newest_first);
    size_t out_cap = n * 160 + 64, out_len = 0;
    char *out = malloc(out_cap);
    for (size_t i = 0; i < n; i++) {
        struct tm tm;
        localtime_r(&all[i].mtime, &tm);
        char when[32];
        strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
        out_len += (size_t)snprintf(out + out_len, out_cap - out_len, "%.8s  %s  %8lld  %s\n", all[i].id, when,
                                    all[i].size, all[i].head);
    }
    write_all(1, out, out_len, "stdout");
    free(out);
    free(all);
    return 0;
}

static int rss(char **argv) {
    pid_t pid = fork();
    if (pid < 0) die("fork", NULL);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null < 0 || dup2(null, 1) < 0) _exit(126);
        execv(argv[0], argv);
        fprintf(stderr, "panto-floor: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) die("wait4", argv[0]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "panto-floor: %s failed (status %d)\n", argv[0], status);
        return 1;
    }
    printf("%ld\n", ru.ru_maxrss);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "rss") == 0) return rss(argv + 2);
    if (argc >= 3 && strcmp(argv[1], "version") == 0) {
        answer(argv[2]);
        return 0;
    }
    if (argc == 7 && strcmp(argv[1], "new") == 0) return new_session(argv + 2);
    if (argc == 8 && strcmp(argv[1], "resume") == 0) return resume(argv + 2);
    if (argc == 3 && strcmp(argv[1], "sessions") == 0) return sessions(argv + 2);
    fprintf(stderr, "usage: panto-floor version LINE | new PORT REQUEST DIR ENTRIES ANSWER | "
                    "resume PORT REQUEST DIR PREFIX ENTRIES ANSWER | sessions DIR | rss PROGRAM ARG...\n");
    return 2;
}
