/* golden_check.c: a tiny lit/FileCheck for tilec's golden tests.
 *
 *   golden_check TILEC_BINARY TEST.tile
 *
 * The test file carries its own instructions in `//` comment lines:
 *   // RUN: tilec %s --emit=ir -D CHUNK=64   command (sh); one or more, run in order
 *   // CHECK: text          text occurs, after the previous match
 *   // CHECK-NEXT: text     text occurs on the line right after the previous match
 *   // CHECK-NOT: text      text does not occur between the neighbouring matches
 *   // ERROR: text          an expected diagnostic: one `error:` line contains it
 *   // EXIT: n              expected exit status (default 0, or 1 with ERROR lines)
 * Patterns are plain substrings; leading and trailing blanks are ignored.
 *
 * The command runs in the test's directory; `%s` becomes the bare file name (so
 * messages read `bad.tile:3:14: error: ...` wherever the tree lives) and the
 * word `tilec` becomes the binary's path.  Standard output and standard error
 * are captured together.  ERROR lines are matched in any order (the compiler's
 * stages report in their own order), each against a different diagnostic line,
 * and the number of `error:` diagnostics must equal the number of ERROR lines:
 * no missing errors and no cascades.  A command killed by a signal always fails.
 * Prefix: gc_. */
#define _XOPEN_SOURCE 700   /* realpath, strdup, strndup */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef enum DirKind { D_RUN, D_CHECK, D_CHECK_NEXT, D_CHECK_NOT, D_ERROR, D_EXIT } DirKind;

static const struct { const char *word; DirKind kind; } gc_words[] = {
    /* matched as whole words: CHECK never matches CHECK-NEXT */
    {"CHECK-NEXT", D_CHECK_NEXT}, {"CHECK-NOT", D_CHECK_NOT}, {"CHECK", D_CHECK},
    {"ERROR", D_ERROR}, {"EXIT", D_EXIT}, {"RUN", D_RUN},
};

typedef struct Directive {
    DirKind kind;
    int line;            /* line in the test file, for messages */
    char *text;          /* pattern / command / number, trimmed */
} Directive;

typedef struct Test {
    const char *path;
    Directive *dirs;
    int ndirs, cap;
} Test;

static const char *gc_test_path = "?";

static void gc_fail_header(void) { fprintf(stderr, "golden: FAIL %s\n", gc_test_path); }

static void gc_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "golden: %s: ", gc_test_path);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *gc_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) gc_die("out of memory");
    return q;
}

static char *gc_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) gc_die("cannot open: %s", strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = gc_xrealloc(NULL, cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) buf = gc_xrealloc(buf, cap *= 2);
    }
    fclose(f);
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

static char *gc_trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
    *e = 0;
    return s;
}

static void gc_add(Test *t, DirKind kind, int line, const char *text) {
    if (t->ndirs == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->dirs = gc_xrealloc(t->dirs, sizeof(Directive) * (size_t)t->cap);
    }
    t->dirs[t->ndirs++] = (Directive){kind, line, strdup(text)};
}

/* Finds the directives in `// WORD: text` lines.  A comment that looks like a
 * directive but names none (// CHECK-NXT:) is an error, so a typo cannot turn
 * a check into a comment that always passes. */
static void gc_parse_test(Test *t, char *src) {
    int lineno = 0;
    for (char *line = src; line; ) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (p[0] == '/' && p[1] == '/') {
            p += 2;
            while (*p == ' ' || *p == '\t') p++;
            char *word = p;
            while ((*p >= 'A' && *p <= 'Z') || *p == '-') p++;
            size_t wlen = (size_t)(p - word);
            if (wlen > 0 && *p == ':') {
                bool known = false;
                for (size_t i = 0; i < sizeof gc_words / sizeof gc_words[0]; i++) {
                    if (strlen(gc_words[i].word) == wlen && !strncmp(word, gc_words[i].word, wlen)) {
                        gc_add(t, gc_words[i].kind, lineno, gc_trim(p + 1));
                        known = true;
                        break;
                    }
                }
                bool looks_like = !strncmp(word, "CHECK", 5) || !strncmp(word, "ERROR", 5) ||
                                  !strncmp(word, "RUN", 3) || !strncmp(word, "EXIT", 4);
                if (!known && looks_like)
                    gc_die("line %d: unknown directive '%.*s:'", lineno, (int)wlen, word);
            }
        }
        line = nl ? nl + 1 : NULL;
    }
}

/* The command with %s -> file name and the word `tilec` -> binary path. */
static char *gc_expand(const char *cmd, const char *tilec, const char *file) {
    size_t cap = strlen(cmd) * 2 + strlen(tilec) * 4 + strlen(file) * 4 + 64, n = 0;
    char *out = gc_xrealloc(NULL, cap);
    for (const char *p = cmd; *p; ) {
        const char *sub = NULL;
        size_t skip = 1;
        bool word_start = p == cmd || strchr(" \t;|&(", p[-1]);
        if (p[0] == '%' && p[1] == 's') { sub = file; skip = 2; }
        else if (p[0] == '%' && p[1] == '%') { sub = "%"; skip = 2; }
        else if (word_start && !strncmp(p, "tilec", 5) && (p[5] == 0 || strchr(" \t;|&)", p[5]))) {
            sub = tilec; skip = 5;
        }
        size_t add = sub ? strlen(sub) : 1;
        if (n + add + 1 > cap) out = gc_xrealloc(out, cap = (cap + add) * 2);
        if (sub) { memcpy(out + n, sub, add); n += add; }
        else out[n++] = *p;
        p += skip;
    }
    out[n] = 0;
    return out;
}

/* Runs `cmd` with sh, stdout and stderr into one buffer.  Returns the wait status. */
static int gc_run(const char *cmd, char **out, size_t *outlen) {
    int fds[2];
    if (pipe(fds) != 0) gc_die("pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) gc_die("fork: %s", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 4096, n = 0;
    char *buf = gc_xrealloc(NULL, cap);
    for (;;) {
        if (cap - n < 2) buf = gc_xrealloc(buf, cap *= 2);
        ssize_t got = read(fds[0], buf + n, cap - n - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
    }
    close(fds[0]);
    buf[n] = 0;
    /* A NUL in the output would hide the rest from strstr: show it as '?'. */
    for (size_t i = 0; i < n; i++) if (!buf[i]) buf[i] = '?';
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    *out = buf;
    *outlen = n;
    return status;
}

static int gc_line_of(const char *text, size_t off) {
    int line = 1;
    for (size_t i = 0; i < off && text[i]; i++) if (text[i] == '\n') line++;
    return line;
}

static size_t gc_next_line(const char *text, size_t off) {
    const char *nl = strchr(text + off, '\n');
    return nl ? (size_t)(nl - text) + 1 : strlen(text);
}

static void gc_show_output(const char *out, int mark_line) {
    fprintf(stderr, mark_line > 0 ? "---- actual output (>> marks where matching stopped) ----\n"
                                  : "---- actual output ----\n");
    int line = 1;
    const char *p = out;
    if (!*p) fprintf(stderr, "   (no output)\n");
    while (*p) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(stderr, "%s%4d| %.*s\n", line == mark_line ? ">>" : "  ", line, len, p);
        line++;
        p = nl ? nl + 1 : p + len;
    }
    if (mark_line >= line) fprintf(stderr, ">>    (end of output)\n");
    fprintf(stderr, "---------------------------------------------------------\n");
}

static const char *gc_kind_name(DirKind k) {
    switch (k) {
    case D_CHECK: return "CHECK";
    case D_CHECK_NEXT: return "CHECK-NEXT";
    case D_CHECK_NOT: return "CHECK-NOT";
    case D_ERROR: return "ERROR";
    case D_EXIT: return "EXIT";
    case D_RUN: return "RUN";
    }
    return "?";
}

/* A diagnostic line: `something: error: ...` (diag_error, diag_plain, the CLI),
 * not an indented source or caret line. */
static bool gc_is_error_line(const char *line) {
    return line[0] != ' ' && line[0] != '\t' && strstr(line, ": error: ") != NULL;
}

/* Each ERROR directive must be found in its own diagnostic line, and no
 * diagnostic may be left over.  Greedy matching in directive order is enough
 * because a test's expected messages are not substrings of one another. */
static bool gc_match_errors(const Test *t, const char *out) {
    char **lines = NULL;
    int nlines = 0;
    for (const char *p = out; *p; ) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char *line = strndup(p, len);
        if (gc_is_error_line(line)) {
            lines = gc_xrealloc(lines, sizeof(char *) * (size_t)(nlines + 1));
            lines[nlines++] = line;
        } else {
            free(line);
        }
        p = nl ? nl + 1 : p + len;
    }
    bool *used = calloc((size_t)nlines + 1, sizeof(bool));
    bool ok = true;
    int nerror = 0;
    for (int i = 0; i < t->ndirs; i++) {
        const Directive *d = &t->dirs[i];
        if (d->kind != D_ERROR) continue;
        nerror++;
        int hit = -1;
        for (int j = 0; j < nlines && hit < 0; j++)
            if (!used[j] && strstr(lines[j], d->text)) hit = j;
        if (hit >= 0) {
            used[hit] = true;
            continue;
        }
        if (ok) gc_fail_header();
        ok = false;
        fprintf(stderr, "%s:%d: ERROR: expected diagnostic not found:\n    %s\n", t->path, d->line, d->text);
    }
    if (ok && nerror && nlines != nerror) {
        gc_fail_header();
        ok = false;
        fprintf(stderr, "%d error diagnostics in the output, the test expects %d (one per // ERROR: line); not expected:\n",
                nlines, nerror);
        for (int j = 0; j < nlines; j++)
            if (!used[j]) fprintf(stderr, "    %s\n", lines[j]);
    }
    if (!ok) gc_show_output(out, 0);
    for (int j = 0; j < nlines; j++) free(lines[j]);
    free(lines);
    free(used);
    return ok;
}

/* Matches the CHECK patterns in order.  Returns true on success. */
static bool gc_match(const Test *t, const char *out) {
    size_t pos = 0;                 /* where the next search starts */
    size_t prev_line_end = 0;       /* start of the line after the previous match */
    bool have_prev = false;
    int nots_from = -1;             /* first pending CHECK-NOT */
    for (int i = 0; i <= t->ndirs; i++) {
        const Directive *d = i < t->ndirs ? &t->dirs[i] : NULL;
        if (d && (d->kind == D_RUN || d->kind == D_EXIT || d->kind == D_ERROR)) continue;
        if (d && d->kind == D_CHECK_NOT) {
            if (nots_from < 0) nots_from = i;
            continue;
        }
        /* A positive pattern (or the end): find it, then test the pending NOTs
         * against the text between the previous match and this one. */
        size_t found = strlen(out), found_end = found;
        if (d) {
            const char *hit = strstr(out + pos, d->text);
            if (d->kind == D_CHECK_NEXT) {
                /* search only the line after the previous match */
                size_t want = have_prev ? prev_line_end : 0;
                size_t want_end = gc_next_line(out, want);
                char *line = strndup(out + want, want_end - want);
                const char *in_line = strstr(line, d->text);
                bool on_line = in_line && want_end > want;
                if (on_line) hit = out + want + (in_line - line);
                free(line);
                if (!on_line) {
                    gc_fail_header();
                    fprintf(stderr, "%s:%d: CHECK-NEXT: not on the next line:\n    %s\n",
                            t->path, d->line, d->text);
                    if (hit && (size_t)(hit - out) >= want)
                        fprintf(stderr, "  (it occurs later, on output line %d)\n",
                                gc_line_of(out, (size_t)(hit - out)));
                    gc_show_output(out, gc_line_of(out, want));
                    return false;
                }
            } else if (!hit) {
                gc_fail_header();
                fprintf(stderr, "%s:%d: %s: expected text not found:\n    %s\n",
                        t->path, d->line, gc_kind_name(d->kind), d->text);
                const char *anywhere = strstr(out, d->text);
                if (anywhere)
                    fprintf(stderr, "  (it occurs earlier, on output line %d: the order differs)\n",
                            gc_line_of(out, (size_t)(anywhere - out)));
                gc_show_output(out, gc_line_of(out, pos));
                return false;
            }
            found = (size_t)(hit - out);
            found_end = found + strlen(d->text);
        }
        if (nots_from >= 0) {
            for (int j = nots_from; j < i; j++) {
                const Directive *n = &t->dirs[j];
                if (n->kind != D_CHECK_NOT) continue;
                char *region = strndup(out + pos, found - pos);
                char *bad = strstr(region, n->text);
                if (bad) {
                    gc_fail_header();
                    fprintf(stderr, "%s:%d: CHECK-NOT: excluded text found:\n    %s\n",
                            t->path, n->line, n->text);
                    gc_show_output(out, gc_line_of(out, pos + (size_t)(bad - region)));
                    free(region);
                    return false;
                }
                free(region);
            }
            nots_from = -1;
        }
        if (!d) break;
        pos = found_end;
        prev_line_end = gc_next_line(out, found);
        have_prev = true;
    }
    return true;
}

/* Runs the RUN commands and checks status, CHECK and ERROR lines: 0 = pass, 1 = fail.
 * All commands' output is one text; the first non-zero status stops the run. */
static int gc_run_and_check(const Test *t, const char *tilec, const char *base, int expect_exit) {
    char *all = strdup("");
    size_t alllen = 0;
    int exit_code = 0, signal_no = 0;
    char *last_cmd = NULL;
    for (int i = 0; i < t->ndirs; i++) {
        if (t->dirs[i].kind != D_RUN) continue;
        free(last_cmd);
        last_cmd = gc_expand(t->dirs[i].text, tilec, base);
        char *out;
        size_t len;
        int status = gc_run(last_cmd, &out, &len);
        all = gc_xrealloc(all, alllen + len + 1);
        memcpy(all + alllen, out, len + 1);
        alllen += len;
        free(out);
        if (WIFSIGNALED(status)) signal_no = WTERMSIG(status);
        else if (WIFEXITED(status)) {
            int code = WEXITSTATUS(status);
            /* sh reports a child killed by signal N as 128+N */
            if (code > 128 && code < 128 + 65) signal_no = code - 128;
            else exit_code = code;
        }
        if (signal_no || exit_code != 0) break;
    }

    int rc = 0;
    /* A sanitizer report exits with status 1, the status of an expected compile
     * error, so under ASan/UBSan the report itself must fail the test. */
    const char *sanitizer = strstr(all, "ERROR: AddressSanitizer");
    if (!sanitizer) sanitizer = strstr(all, "ERROR: LeakSanitizer");
    if (!sanitizer) sanitizer = strstr(all, ": runtime error: ");
    if (signal_no) {
        gc_fail_header();
        fprintf(stderr, "command crashed (signal %d): %s\n", signal_no, last_cmd);
        gc_show_output(all, 0);
        rc = 1;
    } else if (sanitizer) {
        gc_fail_header();
        fprintf(stderr, "sanitizer report from: %s\n", last_cmd);
        gc_show_output(all, 0);
        rc = 1;
    } else if (exit_code != expect_exit) {
        gc_fail_header();
        fprintf(stderr, "exit status %d, expected %d, from: %s\n", exit_code, expect_exit, last_cmd);
        gc_show_output(all, 0);
        rc = 1;
    } else if (!gc_match(t, all) || !gc_match_errors(t, all)) {
        rc = 1;
    }
    free(last_cmd);
    free(all);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: golden_check TILEC_BINARY TEST.tile\n");
        return 2;
    }
    char tilec[PATH_MAX];
    if (!realpath(argv[1], tilec)) {
        fprintf(stderr, "golden: cannot find tilec binary %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    gc_test_path = argv[2];
    Test t = {.path = argv[2]};
    char *src = gc_read_file(argv[2], NULL);
    gc_parse_test(&t, src);

    int nrun = 0, nerror = 0, expect_exit = -1;
    for (int i = 0; i < t.ndirs; i++) {
        Directive *d = &t.dirs[i];
        if (d->kind == D_RUN) nrun++;
        if (d->kind == D_ERROR) nerror++;
        if ((d->kind != D_RUN && d->kind != D_EXIT) && !d->text[0])
            gc_die("line %d: empty %s pattern", d->line, gc_kind_name(d->kind));
        if (d->kind == D_EXIT) {
            char *end;
            long v = strtol(d->text, &end, 10);
            if (end == d->text || *end || v < 0 || v > 255)
                gc_die("line %d: EXIT wants a number 0..255, got '%s'", d->line, d->text);
            expect_exit = (int)v;
        }
    }
    if (nrun == 0) gc_die("no // RUN: line");
    if (expect_exit < 0) expect_exit = nerror ? 1 : 0;

    /* Run from the test's directory so %s is a bare, location-free name. */
    char *dir = strdup(argv[2]), *slash = strrchr(dir, '/');
    const char *base = argv[2];
    if (slash) {
        *slash = 0;
        base = slash + 1;
        if (chdir(*dir ? dir : "/") != 0) gc_die("cannot enter %s: %s", dir, strerror(errno));
    }

    int rc = gc_run_and_check(&t, tilec, base, expect_exit);
    for (int i = 0; i < t.ndirs; i++) free(t.dirs[i].text);
    free(t.dirs);
    free(dir);
    free(src);
    return rc;
}
