/* bench/exec.sh's solver for the cost grind adds per exec unit: its first instruction reads
 * CLOCK_REALTIME and writes it (microseconds since the Unix epoch) to stderr, which grind
 * keeps in the result's provenance (stderr_tail). It prints no solution. */
#include <stdio.h>
#include <time.h>

int main(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fprintf(stderr, "t %lld\n", (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
    return 0;
}
