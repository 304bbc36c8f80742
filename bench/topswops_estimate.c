/*
 * Knuth's random-probe estimate of the size of grind's exact Topswops search trees
 * (shared/src/problems/topswops/search.rs), to project run times of sizes too large to run:
 * each probe walks one random root-to-leaf path, choosing uniformly among the children that
 * survive pruning, and adds up (product of the branching so far) x (children tried here); the
 * mean over probes is an unbiased estimate of the nodes the search enters (its "nodes" count).
 * Same pruning as the searches in proof mode at target f(n) with fixed points skipped.
 * The forward tree is regular enough for 2e5 probes to land within 0.1% (n = 12..15 checked
 * against full runs); the backward tree is heavy-tailed and its estimates come out low.
 *
 * Usage: topswops_estimate N f|b PROBES [SEED]
 * Build: cc -O2 -o topswops_estimate topswops_estimate.c -lm
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNKNOWN 0x80
#define NO_BOUND (1u << 20)

/* f(m), OEIS A000375: the tail bounds and the proof target. */
static const unsigned KNOWN_F[20] = {0,  0,  1,  2,  4,   7,   10,  16,  22,  30,
                                     38, 51, 65, 80, 101, 113, 139, 159, 191, 221};
static int n;
static unsigned need, tail[64];
static uint64_t rng = 88172645463325252ull;

static uint64_t next_random(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void reverse(uint8_t *d, unsigned k) {
    for (unsigned a = 0, b = k - 1; a < b; a++, b--) {
        uint8_t t = d[a];
        d[a] = d[b];
        d[b] = t;
    }
}

static unsigned lower(const uint8_t *b, unsigned m) {
    m = m ? m - 1 : 0;
    while (m > 0 && b[m - 1] == m) m--;
    return m;
}

/* One probe of the forward tree (Knuth's search over unknown cards, labelled by origin). */
static double probe_forward(void) {
    uint8_t deck[32];
    for (int i = 0; i < n; i++) deck[i] = UNKNOWN | i;
    unsigned flips = 0, m = n;
    uint64_t unused = ((1ull << (n + 1)) - 1) & ~1ull;
    double weight = 1, estimate = 0;
    for (;;) {
        unsigned fixed = (deck[0] & 0x7f) + 1;
        uint64_t todo = unused;
        if (fixed >= 2) todo &= ~(1ull << fixed);
        if (flips < need) todo &= ~2ull;
        if (m >= 2 && flips + 1 + tail[m - 1] < need) todo &= ~(1ull << m);
        estimate += weight * __builtin_popcountll(todo);
        uint8_t kids[32][32];
        unsigned kid_flips[32], kid_m[32], kid_v[32];
        int e = 0;
        for (uint64_t x = todo; x; x &= x - 1) {
            unsigned v = __builtin_ctzll(x), c = flips, mm = m, t = v;
            if (v == 1) continue;
            uint8_t d[32];
            memcpy(d, deck, 32);
            d[0] = v;
            int pruned = 0;
            for (;;) {
                reverse(d, t);
                c++;
                if (t == mm) {
                    mm = lower(d, mm);
                    if (c + tail[mm] < need) {
                        pruned = 1;
                        break;
                    }
                }
                if (d[0] & UNKNOWN) break;
                t = d[0];
            }
            if (pruned) continue;
            memcpy(kids[e], d, 32);
            kid_flips[e] = c, kid_m[e] = mm, kid_v[e] = v;
            e++;
        }
        if (!e) return estimate;
        int pick = next_random() % e;
        weight *= e;
        memcpy(deck, kids[pick], 32);
        flips = kid_flips[pick], m = kid_m[pick];
        unused &= ~(1ull << kid_v[pick]);
    }
}

/* One probe of the backward tree (Pepperdine's search from "1 ? ... ?"). */
static double probe_backward(void) {
    uint8_t deck[32] = {1};
    for (int i = 1; i < n; i++) deck[i] = UNKNOWN;
    unsigned flips = 0;
    uint64_t unused = ((1ull << (n + 1)) - 1) & ~3ull;
    double weight = 1, estimate = 0;
    for (;;) {
        uint64_t todo = 0;
        int fixed = 0;
        for (int k = 2; k <= n; k++) {
            uint8_t c = deck[k - 1];
            if (c == k) todo |= 1ull << k, fixed = 1;
            else if (c == UNKNOWN && (unused >> k & 1)) todo |= 1ull << k;
        }
        if (flips >= need && !fixed) todo |= 2;
        estimate += weight * __builtin_popcountll(todo);
        uint8_t kids[32][32];
        uint64_t kid_unused[32];
        int e = 0;
        for (uint64_t x = todo; x; x &= x - 1) {
            unsigned k = __builtin_ctzll(x), s = 0;
            if (k == 1) continue;
            uint8_t d[32];
            memcpy(d, deck, 32);
            d[k - 1] = k;
            reverse(d, k);
            uint64_t u = unused & ~(1ull << k);
            for (int p = n; p >= 2; p--) {
                uint8_t c = d[p - 1];
                if (c == p || (c == UNKNOWN && (u >> p & 1))) {
                    s = p;
                    break;
                }
            }
            unsigned reach = flips + 1 + tail[s];
            if (reach < need) continue;
            if (reach == need && s < k && s >= 2) {
                int inert = 0, unknown = 0;
                for (unsigned p = 1; p < s; p++) {
                    if (d[p] & UNKNOWN) unknown++;
                    else if (d[p] == 1 || d[p] > s) inert = 1;
                }
                if (unknown > __builtin_popcountll(u & ((2ull << s) - 1))) inert = 1;
                if (inert) continue;
            }
            memcpy(kids[e], d, 32);
            kid_unused[e] = u;
            e++;
        }
        if (!e) return estimate;
        int pick = next_random() % e;
        weight *= e;
        memcpy(deck, kids[pick], 32);
        unused = kid_unused[pick];
        flips++;
    }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s N f|b PROBES [SEED]\n", argv[0]);
        return 2;
    }
    n = atoi(argv[1]);
    int backward = argv[2][0] == 'b';
    long probes = atol(argv[3]);
    if (n < 2 || n > 19 || probes < 1) {
        fprintf(stderr, "N must be in 2..19, PROBES >= 1\n");
        return 2;
    }
    if (argc > 4) rng = strtoull(argv[4], 0, 10) | 1;
    need = KNOWN_F[n];
    for (int m = 0; m < 64; m++) tail[m] = m < n ? KNOWN_F[m] : NO_BOUND;
    double sum = 0, squares = 0;
    for (long i = 0; i < probes; i++) {
        double x = backward ? probe_backward() : probe_forward();
        sum += x;
        squares += x * x;
    }
    double mean = sum / probes, error = sqrt(squares / probes - mean * mean) / sqrt(probes);
    printf("n=%d %s probes=%ld nodes=%.4g +- %.2g\n", n, backward ? "backward" : "forward", probes,
           mean, error);
    return 0;
}
