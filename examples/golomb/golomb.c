/*
 * golomb.c - an exhaustive search for optimal Golomb rulers, split into units, for grind.
 *
 * A Golomb ruler with n marks is a set of integers 0 = a_0 < a_1 < ... < a_{n-1} whose
 * pairwise differences are all distinct; its length is a_{n-1}. This program finds the
 * shortest one (OEIS A003022; distributed.net's OGR project searched n = 24..28).
 *
 * Usage:
 *   golomb INSTANCE [UNIT]     search the slice UNIT (all slices if none); INSTANCE and UNIT
 *                              default to $GRIND_INSTANCE and $GRIND_UNIT
 *   golomb UNIT                the same, with the instance in $GRIND_INSTANCE (a single
 *                              argument is the instance if such a file exists)
 *   golomb --units INSTANCE    print the units file: one slice per line
 *
 * INSTANCE: a text file with the number of marks n ('#' starts a comment). An optional line
 * `known L1 L2 ...` gives the optimal lengths for 1, 2, ... marks; they are used as lower
 * bounds for pruning and trusted (a wrong table makes the search miss rulers). Missing ones
 * are computed by this program (fast up to about 10 marks).
 *
 * UNIT: the slice of the search, a first difference a_1 ("5") or a range of them ("5-8",
 * inclusive). Every ruler or its mirror image has a_1 < a_{n-1} - a_{n-2} (the differences
 * are distinct), so the search only visits those; the slices 1, 2, ..., of `--units` cover
 * every ruler no longer than a greedy ruler of n marks, which bounds the optimum.
 *
 * Output (grind's exec protocol, a superset of the MaxSAT Evaluation format), stdout:
 *   o <length>            on every improvement within this run, followed by
 *   v <a_0> <a_1> ...     the marks
 *   c nodes <k>           search nodes visited (at the end)
 *   c slice ... done: no ruler in it is shorter than <P>   when the slice was searched to the end
 *   s OPTIMUM FOUND       the slice was searched to the end and the last ruler printed is the
 *                         shortest in the slice (optimal *within this unit's slice*, not overall:
 *                         the overall optimum is the minimum over all units)
 *   s SATISFIABLE         a ruler was printed, but the slice's optimum is not known (stopped
 *                         early, or a better bound from elsewhere cut the slice short)
 *   s UNKNOWN             no ruler printed (nothing in the slice beats the bound, or stopped)
 * stdin: `b <length>` lines, the best length known in the campaign; the search then only looks
 * for shorter rulers. Read between nodes (poll every 4096 nodes), never blocking.
 * Environment: GRIND_TIME_LIMIT (seconds) stops the search when reached. SIGTERM (or SIGINT)
 * stops it at once (within a few thousand nodes); everything found has already been printed.
 * Exit status: 0 after a search (complete or stopped), 2 on bad usage or a bad instance.
 *
 * Build: cc -O2 -o golomb golomb.c
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_MARKS 40
#define MAX_LENGTH 4096
#define POLL_EVERY 4096

/* The signal that asked the search to stop (SIGTERM from grind, SIGINT from Ctrl-C), or 0. */
static volatile sig_atomic_t stop_signal = 0;

static void on_stop_signal(int sig) {
    stop_signal = sig;
}

/* One search: n marks, first differences in [d1_lo, d1_hi], rulers of length <= limit. */
struct search {
    int n;
    const int *table;        /* table[m] = optimal length of an m-mark ruler, m < n */
    int limit;               /* only rulers of length <= limit are still of interest */
    int marks[MAX_MARKS];
    unsigned char used[MAX_LENGTH + 1]; /* differences present among the placed marks */
    long long nodes;
    int best_len;            /* shortest ruler found in this search, or -1 */
    int interactive;         /* print improvements, read bounds, honour time limit and SIGTERM */
    int stdin_open;
    double deadline;         /* monotonic seconds, or 0 for none */
    int bound;               /* lowest `b` value received, or -1 */
    char inbuf[256];
    size_t inlen;
    int stopped;             /* stopped early: the slice was not searched to the end */
};

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Takes a `b <value>` line: tighten the limit to rulers strictly shorter than value. */
static void bound_line(struct search *s, const char *line) {
    char *end;
    if (line[0] != 'b' || line[1] != ' ')
        return;
    errno = 0;
    long v = strtol(line + 2, &end, 10);
    while (*end == ' ' || *end == '\r')
        end++;
    if (errno || *end != '\0' || v < 0)
        return;
    printf("c received bound %ld\n", v);
    fflush(stdout);
    if (s->bound < 0 || v < s->bound)
        s->bound = (int)v;
    if (v - 1 < s->limit)
        s->limit = (int)(v - 1);
}

/* Reads whatever bound lines are waiting on stdin, without blocking. */
static void read_bounds(struct search *s) {
    while (s->stdin_open) {
        struct pollfd p = {.fd = 0, .events = POLLIN};
        if (poll(&p, 1, 0) <= 0 || !(p.revents & (POLLIN | POLLHUP)))
            return;
        ssize_t got = read(0, s->inbuf + s->inlen, sizeof s->inbuf - 1 - s->inlen);
        if (got <= 0) { /* end of file or error: no more bounds (not a reason to stop) */
            s->stdin_open = 0;
            return;
        }
        s->inlen += (size_t)got;
        char *start = s->inbuf, *nl;
        while ((nl = memchr(start, '\n', s->inlen - (size_t)(start - s->inbuf)))) {
            *nl = '\0';
            bound_line(s, start);
            start = nl + 1;
        }
        s->inlen -= (size_t)(start - s->inbuf);
        memmove(s->inbuf, start, s->inlen);
        if (s->inlen == sizeof s->inbuf - 1) /* an overlong line: drop it */
            s->inlen = 0;
    }
}

/* Every POLL_EVERY nodes: bounds, SIGTERM, time limit. Returns 1 to stop. */
static int checkpoint_poll(struct search *s) {
    if (stop_signal) {
        s->stopped = 1;
        return 1;
    }
    if (!s->interactive)
        return 0;
    read_bounds(s);
    if (s->deadline > 0 && now_seconds() >= s->deadline) {
        s->stopped = 1;
        return 1;
    }
    return 0;
}

static void found(struct search *s) {
    int len = s->marks[s->n - 1];
    s->best_len = len;
    s->limit = len - 1;
    if (!s->interactive)
        return;
    printf("o %d\nv", len);
    for (int i = 0; i < s->n; i++)
        printf(" %d", s->marks[i]);
    printf("\n");
    fflush(stdout);
}

/* Places mark k (2 <= k < n) after marks 0..k-1. Returns 1 if the search must stop. */
static int place(struct search *s, int k) {
    const int n = s->n;
    const int prev = s->marks[k - 1];
    /* Marks 0..k form a (k+1)-mark ruler; marks k..n-1 an (n-k)-mark ruler. */
    int p = prev + 1;
    if (p < s->table[k + 1])
        p = s->table[k + 1];
    for (; p + s->table[n - k] <= s->limit; p++) {
        if (++s->nodes % POLL_EVERY == 0 && checkpoint_poll(s))
            return 1;
        int ok = 1, i;
        for (i = 0; i < k; i++)
            if (s->used[p - s->marks[i]]) {
                ok = 0;
                break;
            }
        if (!ok)
            continue;
        if (k == n - 1) {
            /* Mirror symmetry: the first difference is below the last one. */
            if (p - prev <= s->marks[1])
                continue;
            s->marks[k] = p;
            found(s);
            return 0; /* any later p is longer */
        }
        s->marks[k] = p;
        for (i = 0; i < k; i++)
            s->used[p - s->marks[i]] = 1;
        int stop = place(s, k + 1);
        for (i = 0; i < k; i++)
            s->used[p - s->marks[i]] = 0;
        if (stop)
            return 1;
    }
    return 0;
}

/* Searches first differences d1_lo..d1_hi. Returns 1 if it was stopped early. */
static int run_slice(struct search *s, int d1_lo, int d1_hi) {
    memset(s->used, 0, sizeof s->used);
    s->marks[0] = 0;
    for (int d1 = d1_lo; d1 <= d1_hi; d1++) {
        if (s->n == 2) {
            if (d1 <= s->limit) {
                s->marks[1] = d1;
                found(s);
            }
            break;
        }
        /* The marks 1..n-2 span at least table[n-2]; the last difference exceeds d1. */
        if (d1 + s->table[s->n - 2] + d1 + 1 > s->limit)
            continue;
        s->marks[1] = d1;
        s->used[d1] = 1;
        int stop = place(s, 2);
        s->used[d1] = 0;
        if (stop)
            return 1;
    }
    return 0;
}

/* The greedy ruler: each mark at the smallest position keeping differences distinct. */
static int greedy_length(int n) {
    int marks[MAX_MARKS];
    unsigned char used[MAX_LENGTH + 1] = {0};
    marks[0] = 0;
    for (int k = 1; k < n; k++) {
        int p = marks[k - 1] + 1;
        for (;; p++) {
            int ok = 1;
            if (p > MAX_LENGTH)
                return MAX_LENGTH; /* longer rulers are out of this program's range anyway */
            for (int i = 0; i < k; i++)
                if (used[p - marks[i]]) {
                    ok = 0;
                    break;
                }
            if (ok)
                break;
        }
        for (int i = 0; i < k; i++)
            used[p - marks[i]] = 1;
        marks[k] = p;
    }
    return marks[n - 1];
}

/* The largest first difference that can start a ruler of length <= limit. */
static int max_first_difference(int n, const int *table, int limit) {
    if (n <= 2)
        return 1;
    return (limit - 1 - table[n - 2]) / 2;
}

/* Fills table[m] for m = 1..n-1 that are still unknown (-1), smallest first. */
static void complete_table(int n, int *table) {
    for (int m = 1; m < n; m++) {
        if (table[m] >= 0)
            continue;
        if (m == 1) {
            table[m] = 0;
            continue;
        }
        struct search *s = calloc(1, sizeof *s);
        if (!s) {
            fprintf(stderr, "golomb: out of memory\n");
            exit(2);
        }
        s->n = m;
        s->table = table;
        s->limit = greedy_length(m);
        s->best_len = -1;
        s->bound = -1;
        run_slice(s, 1, max_first_difference(m, table, s->limit));
        if (stop_signal) {
            printf("c stopped by a signal while computing the table for %d marks\ns UNKNOWN\n", m);
            exit(0);
        }
        table[m] = s->best_len;
        free(s);
    }
}

static void usage(void) {
    fprintf(stderr, "usage: golomb INSTANCE [UNIT]   or   golomb --units INSTANCE\n"
                    "  UNIT: a first difference (5) or a range of them (5-8)\n");
    exit(2);
}

/* Reads n and the optional `known` table from the instance file. */
static int read_instance(const char *path, int *table) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "golomb: cannot open instance %s: %s\n", path, strerror(errno));
        exit(2);
    }
    char line[4096];
    int n = -1;
    for (int m = 0; m <= MAX_MARKS; m++)
        table[m] = -1;
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *p = line, *end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '\n' || *p == '\r')
            continue;
        if (strncmp(p, "known", 5) == 0) {
            p += 5;
            for (int m = 1;; m++) {
                long v = strtol(p, &end, 10);
                if (end == p)
                    break;
                if (m > MAX_MARKS || v < 0 || v > MAX_LENGTH) {
                    fprintf(stderr, "golomb: %s: bad `known` table\n", path);
                    exit(2);
                }
                table[m] = (int)v;
                p = end;
            }
            continue;
        }
        long v = strtol(p, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
            end++;
        if (end == p || *end != '\0' || n >= 0) {
            fprintf(stderr, "golomb: %s: unexpected line: %s", path, line);
            exit(2);
        }
        if (v < 2 || v > MAX_MARKS) {
            fprintf(stderr, "golomb: %s: marks must be 2..%d, got %ld\n", path, MAX_MARKS, v);
            exit(2);
        }
        n = (int)v;
    }
    fclose(f);
    if (n < 0) {
        fprintf(stderr, "golomb: %s gives no number of marks\n", path);
        exit(2);
    }
    return n;
}

/* Parses "a" or "a-b" (first differences, 1 <= a <= b). */
static void parse_unit(const char *unit, int *lo, int *hi) {
    char *end;
    long a = strtol(unit, &end, 10), b = a;
    if (end != unit && *end == '-') {
        const char *rest = end + 1;
        b = strtol(rest, &end, 10);
        if (end == rest)
            a = 0;
    }
    while (*end == ' ' || *end == '\n' || *end == '\r')
        end++;
    if (end == unit || *end != '\0' || a < 1 || b < a || b > MAX_LENGTH) {
        fprintf(stderr, "golomb: bad unit \"%s\": expected a first difference (5) or a range (5-8)\n",
                unit);
        exit(2);
    }
    *lo = (int)a;
    *hi = (int)b;
}

int main(int argc, char **argv) {
    int table[MAX_MARKS + 1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    if (argc == 3 && strcmp(argv[1], "--units") == 0) {
        int n = read_instance(argv[2], table);
        complete_table(n, table);
        int limit = greedy_length(n);
        int hi = max_first_difference(n, table, limit);
        for (int d1 = 1; d1 <= hi; d1++)
            printf("%d\n", d1);
        return 0;
    }
    if (argc > 3 || (argc > 1 && argv[1][0] == '-'))
        usage();
    /* golomb INSTANCE UNIT | golomb INSTANCE | golomb UNIT (with $GRIND_INSTANCE) | golomb */
    const char *instance = getenv("GRIND_INSTANCE");
    const char *unit = getenv("GRIND_UNIT");
    if (argc == 3) {
        instance = argv[1];
        unit = argv[2];
    } else if (argc == 2) {
        if (access(argv[1], F_OK) == 0 || !instance)
            instance = argv[1];
        else
            unit = argv[1];
    }
    if (!instance)
        usage();
    int n = read_instance(instance, table);

    struct search *s = calloc(1, sizeof *s);
    if (!s)
        return 2;
    s->n = n;
    s->table = table;
    s->best_len = -1;
    s->bound = -1;
    s->interactive = 1;
    s->stdin_open = 1;
    const char *tl = getenv("GRIND_TIME_LIMIT");
    if (tl && atof(tl) > 0)
        s->deadline = now_seconds() + atof(tl);

    complete_table(n, table);
    s->limit = greedy_length(n);
    int lo = 1, hi = max_first_difference(n, table, s->limit);
    if (unit && *unit)
        parse_unit(unit, &lo, &hi);
    printf("c golomb n=%d slice d1=%d..%d, rulers of length <= %d (greedy)\n", n, lo, hi, s->limit);
    fflush(stdout);
    read_bounds(s); /* a bound sent at start prunes from the first node */

    run_slice(s, lo, hi);
    printf("c nodes %lld\n", s->nodes);
    if (s->stopped) {
        printf("c stopped by %s\n", stop_signal == SIGINT    ? "SIGINT"
                                     : stop_signal ? "SIGTERM"
                                                    : "the time limit");
        printf("s %s\n", s->best_len >= 0 ? "SATISFIABLE" : "UNKNOWN");
    } else {
        int proven = s->limit + 1; /* no ruler in the slice is shorter than this */
        printf("c slice d1=%d..%d done: no ruler in it is shorter than %d\n", lo, hi, proven);
        if (s->best_len == proven)
            printf("s OPTIMUM FOUND\n");
        else
            printf("s %s\n", s->best_len >= 0 ? "SATISFIABLE" : "UNKNOWN");
    }
    fflush(stdout);
    free(s);
    return 0;
}
