/* bench/exec.sh's solver for the bound feed's latency (objective max, --bound-feed). Every
 * 100-500 ms (random) it prints an improvement whose cost is the time it is printed
 * (CLOCK_REALTIME, microseconds since the Unix epoch), so the costs only ever rise, across
 * machines sharing a clock. It reads the `b <cost>` lines grind writes to its stdin; a cost
 * it did not print itself came from another solver, and now minus that cost is the time
 * from that solver's print to this one's receipt. On SIGTERM it writes to stderr (kept in
 * the result's provenance) one line `d <n> <printed> <delay_us>...` and exits. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_OWN 4096
#define MAX_DELAYS 400

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

static long long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long long own[MAX_OWN];
static int owns;
static long long delays[MAX_DELAYS];
static int ndelays;
static char buf[4096];
static size_t used;

static int is_own(long long v) {
    for (int i = owns - 1; i >= 0; i--)
        if (own[i] == v) return 1;
    return 0;
}

static int input_open = 1;

/* Reads what stdin has; records a delay for each complete `b` line of another solver. */
static void take_input(long long received) {
    ssize_t n = read(0, buf + used, sizeof buf - 1 - used);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) input_open = 0;
    if (n <= 0) return;
    used += (size_t)n;
    char *line = buf, *nl;
    while ((nl = memchr(line, '\n', used - (size_t)(line - buf)))) {
        *nl = 0;
        long long v;
        if (sscanf(line, "b %lld", &v) == 1 && !is_own(v) && ndelays < MAX_DELAYS)
            delays[ndelays++] = received - v;
        line = nl + 1;
    }
    used -= (size_t)(line - buf);
    memmove(buf, line, used);
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    const char *seed = getenv("GRIND_SEED");
    srand((unsigned)(seed ? atoi(seed) : 1) * 7919u + (unsigned)getpid());
    long long next = now_us() + 100000 + rand() % 400000;
    while (!stop) {
        long long t = now_us();
        if (t >= next) {
            if (owns < MAX_OWN) own[owns++] = t;
            printf("o %lld\nv %lld\n", t, t);
            fflush(stdout);
            next = t + 100000 + rand() % 400000;
            continue;
        }
        /* After the end of input, poll only waits (a negative fd is ignored). */
        struct pollfd p = {.fd = input_open ? 0 : -1, .events = POLLIN};
        int wait_ms = (int)((next - t) / 1000) + 1;
        int r = poll(&p, 1, wait_ms);
        if (r > 0) take_input(now_us());
        else if (r < 0 && errno != EINTR) break;
    }
    fprintf(stderr, "d %d %d", ndelays, owns);
    for (int i = 0; i < ndelays; i++) fprintf(stderr, " %lld", delays[i]);
    fprintf(stderr, "\n");
    return 0;
}
