/*
 * Reference for the Nim Square solver (Project Euler 310): the straightforward algorithm.
 * g(x) = mex{ g(x - k^2) : k >= 1, k^2 <= x }, one heap at a time, with a stamp array for
 * the mex; then the losing positions 0 <= a <= b <= c <= N are counted over the histogram
 * of Grundy values (XOR convolution, Burnside over the orderings).
 *
 * Usage: nimsquare_ref N      (prints N, seconds, max Grundy value, losing positions)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Prints an unsigned 128-bit integer in decimal. */
static void print_u128(unsigned __int128 v) {
    char digits[40];
    int len = 0;
    do {
        digits[len++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v != 0);
    while (len > 0) putchar(digits[--len]);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s N\n", argv[0]);
        return 2;
    }
    char *end;
    unsigned long long n = strtoull(argv[1], &end, 10);
    if (*end != '\0' || n > 1000000000ULL) {
        fprintf(stderr, "N must be an integer in 0..=1000000000\n");
        return 2;
    }
    double start = now();

    /* g(x) <= floor(sqrt(x)): the number of options. */
    size_t limit = 1;
    while ((unsigned long long)limit * limit <= n) limit++;
    uint16_t *g = calloc(n + 1, sizeof *g);
    uint32_t *stamp = calloc(limit + 1, sizeof *stamp);
    if (g == NULL || stamp == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    unsigned max = 0;
    for (uint32_t x = 1; x <= n; x++) {
        for (uint32_t k = 1; k * k <= x; k++) stamp[g[x - k * k]] = x;
        unsigned v = 0;
        while (stamp[v] == x) v++;
        g[x] = (uint16_t)v;
        if (v > max) max = v;
    }

    size_t width = 1;
    while (width <= max) width *= 2;
    uint64_t *hist = calloc(width, sizeof *hist);
    if (hist == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (uint64_t x = 0; x <= n; x++) hist[g[x]]++;
    unsigned __int128 ordered = 0;
    for (size_t u = 0; u < width; u++)
        for (size_t v = 0; v < width; v++)
            ordered += (unsigned __int128)hist[u] * hist[v] * hist[u ^ v];
    unsigned __int128 heaps = (unsigned __int128)n + 1;
    unsigned __int128 losing = (ordered + 3 * heaps * hist[0] + 2 * hist[0]) / 6;

    double seconds = now() - start;
    printf("%12llu %10.3f %9u ", n, seconds, max);
    print_u128(losing);
    putchar('\n');
    free(hist);
    free(stamp);
    free(g);
    return 0;
}
