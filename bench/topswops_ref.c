/*
 * C reference for grind's exact Topswops search (shared/src/problems/topswops/search.rs):
 * the same algorithms, written independently, to compare single-core speed.
 *
 *   Knuth's forward search over decks of unknown cards ("unique heads"): cards start unknown,
 *   labelled by origin; known top k >= 2 is flipped; an unknown top is a branch over the unused
 *   values (1 = leaf, the game ends; v >= 2 = assign and flip). Children in increasing value,
 *   explicit DFS stack.
 *   Pruning: frozen tail (positions m+1..n hold m+1..n => at most f(m) more flips; the boundary
 *   only moves after a flip of the card equal to m), bounds used as suffix minima; fixed points
 *   (branch assigning v >= 2 to origin v) skipped in proof mode when asked (-s) and always in
 *   discovery mode; the 1-child (leaf) only tried when the flips reach the goal; the child v = m
 *   (card m surfacing, the boundary drops to <= m-1) not tried when even f(m-1) cannot reach it.
 *   Deck: one 128-bit register, flip = pshufb with the mask computed from the top byte in the
 *   vector unit (n <= 16; SSSE3 enabled per function, like grind's run-time dispatch); a
 *   portable byte-array kernel for n <= 32.
 *
 *   Backward (-b): Pepperdine's search from the last deck "1 ? ... ?" (cards known or unknown,
 *   by position): un-flip position k when it holds card k, or an unknown card and k is unused
 *   (then it becomes k); children in increasing k, the leaf ("this deck is the start") first
 *   when the flips reach the goal (and, with -s, no known card k >= 2 sits at position k).
 *   Pruning: s = the highest position with a legal un-flip (positions above it never move
 *   again), so the leaves below reach at most flips + f(s); one less when the un-flip dropped s
 *   below k and positions 2..s hold another card that can never reach the top (card 1, a known
 *   card above s, or more unknown cards than unused values 2..s).
 *
 * Usage: topswops_ref N [-t TARGET] [-d [-f FROM]] [-s] [-p] [-b]
 *   default: proof mode at target f(N) (known values, OEIS A000375); -d discovery mode
 *   (bound starts at f(N)-1 and rises; with -f F it starts at F instead, e.g. F = f(N-1), what
 *   a search that is not told f(N) knows); -s skip fixed points in proof mode; -p portable kernel;
 *   -b backward search (SSSE3 kernel only, n <= 16).
 *   Tail bounds: the known f(m), m < N. Prints n, mode, seconds (thread CPU time), nodes,
 *   nodes/s, decks, max.
 *
 * Build: cc -O2 -o topswops_ref topswops_ref.c   (no -march flags)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <tmmintrin.h>
#define HAVE_SSE 1
#else
#define HAVE_SSE 0
#endif

#define MAXN 32
#define NO_BOUND (1u << 24)
#define UNKNOWN 0x80

static const unsigned KNOWN_F[20] = {0,  0,  1,  2,  4,   7,   10,  16,  22,  30,
                                     38, 51, 65, 80, 101, 113, 139, 159, 191, 221};

static int n;
static unsigned tail[64];
static unsigned need; /* a leaf counts when flips >= need */
static int discover, skip;
static uint64_t nodes, leaves, decks;
static unsigned best;

static unsigned lower(const uint8_t *b, unsigned m) {
    m = m ? m - 1 : 0;
    while (m > 0 && b[m - 1] == m) m--;
    return m;
}

static uint64_t fillings(uint64_t unused, const uint8_t *assigned) {
    /* Number of ways to give the remaining values to the unassigned origins (skipping fillings
     * with fixed points when asked): brute force over permutations is overkill here, leaves that
     * qualify are rare; count by inclusion-exclusion on the possible fixed points. */
    int vals[MAXN], r = 0;
    for (int v = 1; v <= n; v++)
        if (unused >> v & 1) vals[r++] = v;
    uint64_t fact[MAXN + 1];
    fact[0] = 1;
    for (int i = 1; i <= MAXN; i++) fact[i] = fact[i - 1] * (uint64_t)i;
    if (!skip) return fact[r];
    /* fixed-point candidates: value v >= 2 whose origin v-1 is unassigned */
    int c = 0;
    for (int i = 0; i < r; i++)
        if (vals[i] >= 2 && assigned[vals[i] - 1] == 0) c++;
    int64_t total = 0;
    uint64_t binom = 1;
    for (int k = 0; k <= c; k++) {
        int64_t term = (int64_t)(binom * fact[r - k]);
        total += (k & 1) ? -term : term;
        binom = binom * (uint64_t)(c - k) / (uint64_t)(k + 1);
    }
    return (uint64_t)total;
}

/* Replays a leaf path to find its assigned origins, then counts its decks. */
static void report(const uint8_t *path, int len, unsigned flips) {
    uint8_t deck[MAXN], assigned[MAXN] = {0};
    uint64_t unused = 0;
    for (int i = 0; i < n; i++) deck[i] = UNKNOWN | i;
    for (int v = 1; v <= n; v++) unused |= 1ull << v;
    for (int i = 0; i < len; i++) {
        int v = path[i], o = deck[0] & 0x7f;
        assigned[o] = v;
        unused &= ~(1ull << v);
        if (v == 1) break;
        deck[0] = v;
        int t = v;
        for (;;) {
            for (int a = 0, b = t - 1; a < b; a++, b--) {
                uint8_t x = deck[a]; deck[a] = deck[b]; deck[b] = x;
            }
            if (deck[0] & UNKNOWN) break;
            t = deck[0];
        }
    }
    leaves++;
    decks += discover ? 1 : fillings(unused, assigned);
    if (flips > best) best = flips;
    if (discover && flips + 1 > need) need = flips + 1;
}

#define SEARCH_BODY(DECK_T, LOAD, STORE, TOP, FLIP, ASSIGN_FLIP)                               \
    {                                                                                          \
        struct level {                                                                         \
            DECK_T deck;                                                                       \
            unsigned flips, m;                                                                 \
            uint64_t unused, todo;                                                             \
        } st[MAXN + 2];                                                                        \
        uint8_t path[MAXN + 2], bytes[32];                                                     \
        memset(bytes, 0, sizeof bytes);                                                        \
        for (int i = 0; i < n; i++) bytes[i] = UNKNOWN | i;                                    \
        int d = 0;                                                                             \
        uint64_t all = 0;                                                                      \
        for (int v = 1; v <= n; v++) all |= 1ull << v;                                         \
        st[0].deck = LOAD(bytes);                                                              \
        st[0].flips = 0;                                                                       \
        st[0].m = n;                                                                           \
        st[0].unused = all;                                                                    \
        st[0].todo = all & ~(need > 0 ? 2ull : 0);                                             \
        if (n >= 2 && 1 + tail[n - 1] < need) st[0].todo &= ~(1ull << n);                      \
        uint64_t cnt = 0;                                                                      \
        for (;;) {                                                                             \
            struct level *L = &st[d];                                                          \
            if (!L->todo) {                                                                    \
                if (d == 0) break;                                                             \
                d--;                                                                           \
                continue;                                                                      \
            }                                                                                  \
            unsigned v = __builtin_ctzll(L->todo);                                             \
            L->todo &= L->todo - 1;                                                            \
            path[d] = v;                                                                       \
            cnt++;                                                                             \
            if (v == 1) {                                                                      \
                if (L->flips >= need) report(path, d + 1, L->flips);                           \
                continue;                                                                      \
            }                                                                                  \
            DECK_T x = ASSIGN_FLIP(L->deck, v);                                                \
            unsigned c = L->flips + 1, m = L->m, t = v;                                        \
            int pruned = 0;                                                                    \
            for (;;) {                                                                         \
                if (t == m) {                                                                  \
                    STORE(bytes, x);                                                           \
                    m = lower(bytes, m);                                                       \
                    if (c + tail[m] < need) { pruned = 1; break; }                             \
                }                                                                              \
                unsigned top = TOP(x);                                                         \
                if (top & UNKNOWN) break;                                                      \
                x = FLIP(x, top);                                                              \
                c++;                                                                           \
                t = top;                                                                       \
            }                                                                                  \
            if (pruned) continue;                                                              \
            uint64_t unused = L->unused & ~(1ull << v);                                        \
            uint64_t todo = unused;                                                            \
            if (skip) {                                                                        \
                unsigned fixed = (TOP(x) & 0x3f) + 1;                                          \
                if (fixed >= 2) todo &= ~(1ull << fixed);                                      \
            }                                                                                  \
            if (c < need) todo &= ~2ull;                                                       \
            if (m >= 2 && c + 1 + tail[m - 1] < need) todo &= ~(1ull << m);                    \
            d++;                                                                               \
            st[d].deck = x;                                                                    \
            st[d].flips = c;                                                                   \
            st[d].m = m;                                                                       \
            st[d].unused = unused;                                                             \
            st[d].todo = todo;                                                                 \
        }                                                                                      \
        nodes = cnt;                                                                           \
    }

/* Portable kernel. */
typedef struct { uint8_t b[32]; } bytes32;
static inline bytes32 p_load(const uint8_t *b) { bytes32 x; memcpy(x.b, b, 32); return x; }
static inline void p_store(uint8_t *b, bytes32 x) { memcpy(b, x.b, 32); }
static inline unsigned p_top(bytes32 x) { return x.b[0]; }
static inline bytes32 p_flip(bytes32 x, unsigned k) {
    for (unsigned a = 0, b = k - 1; a < b; a++, b--) {
        uint8_t t = x.b[a]; x.b[a] = x.b[b]; x.b[b] = t;
    }
    return x;
}
static inline bytes32 p_assign_flip(bytes32 x, unsigned v) { x.b[0] = (uint8_t)v; return p_flip(x, v); }

static void search_portable(void) SEARCH_BODY(bytes32, p_load, p_store, p_top, p_flip, p_assign_flip)

#if HAVE_SSE
#define SSE_FN static inline __attribute__((always_inline, target("ssse3")))
SSE_FN __m128i s_load(const uint8_t *b) { return _mm_loadu_si128((const __m128i *)b); }
SSE_FN void s_store(uint8_t *b, __m128i x) { _mm_storeu_si128((__m128i *)b, x); }
SSE_FN unsigned s_top(__m128i x) { return (unsigned)_mm_cvtsi128_si32(x) & 0xff; }
/* Flip by the top byte t with the mask computed in the vector unit (no table load on the
 * dependency chain): t-1-i is the reversal index for i < t and has its high bit set elsewhere,
 * so its unsigned minimum with 0x70+i (which pshufb reads as i) is the whole mask. */
SSE_FN __m128i s_flip_top(__m128i x, unsigned k) {
    (void)k;
    const __m128i iota1 = _mm_setr_epi8(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    const __m128i keep = _mm_setr_epi8(0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79,
                                       0x7a, 0x7b, 0x7c, 0x7d, 0x7e, 0x7f);
    __m128i t = _mm_shuffle_epi8(x, _mm_setzero_si128());
    return _mm_shuffle_epi8(x, _mm_min_epu8(_mm_sub_epi8(t, iota1), keep));
}
SSE_FN __m128i s_assign_flip(__m128i x, unsigned v) {
    x = _mm_or_si128(_mm_andnot_si128(_mm_cvtsi32_si128(0xff), x), _mm_cvtsi32_si128((int)v));
    return s_flip_top(x, v);
}
__attribute__((target("ssse3"))) static void search_sse(void)
    SEARCH_BODY(__m128i, s_load, s_store, s_top, s_flip_top, s_assign_flip)
#endif

#if HAVE_SSE
/* Backward search (see the header). Deck byte i = card at position i+1, 0x80 = unknown. */
static void report_back(const uint8_t *deck, uint64_t unused, unsigned flips) {
    uint8_t known[MAXN];
    for (int i = 0; i < n; i++) known[i] = (deck[i] & UNKNOWN) ? 0 : deck[i];
    leaves++;
    decks += discover ? 1 : fillings(unused, known);
    if (flips > best) best = flips;
    if (discover && flips + 1 > need) need = flips + 1;
}

__attribute__((target("ssse3"))) static void search_back(void) {
    struct level {
        __m128i deck;
        unsigned flips;
        uint64_t unused, todo;
    } st[512];
    const __m128i iota1 = _mm_setr_epi8(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    const __m128i keep = _mm_setr_epi8(0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79,
                                       0x7a, 0x7b, 0x7c, 0x7d, 0x7e, 0x7f);
    uint8_t bytes[16] = {0};
    bytes[0] = 1;
    for (int i = 1; i < n; i++) bytes[i] = UNKNOWN;
    uint64_t pos = ((1ull << (n + 1)) - 1) & ~3ull; /* positions 2..n */
#define B_LEGAL(x, u)                                                                           \
    ((((uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, iota1)) |                        \
       ((uint64_t)(unsigned)_mm_movemask_epi8(x) & ((u) >> 1)))                                 \
      << 1) &                                                                                   \
     pos)
#define B_LEAF(x, c)                                                                            \
    ((c) >= need &&                                                                             \
             !(skip && ((((uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, iota1))) << 1) & \
                        pos))                                                                   \
         ? 2ull                                                                                 \
         : 0ull)
    int d = 0;
    st[0].deck = _mm_loadu_si128((const __m128i *)bytes);
    st[0].flips = 0;
    st[0].unused = pos; /* values 2..n */
    st[0].todo = B_LEGAL(st[0].deck, st[0].unused) | B_LEAF(st[0].deck, 0u);
    uint64_t cnt = 0;
    for (;;) {
        struct level *L = &st[d];
        if (!L->todo) {
            if (d == 0) break;
            d--;
            continue;
        }
        unsigned k = __builtin_ctzll(L->todo);
        L->todo &= L->todo - 1;
        cnt++;
        if (k == 1) {
            uint8_t out[16];
            _mm_storeu_si128((__m128i *)out, L->deck);
            report_back(out, L->unused, L->flips);
            continue;
        }
        /* reverse the top k, then card k on top */
        __m128i t = _mm_set1_epi8((char)k);
        __m128i x = _mm_shuffle_epi8(L->deck, _mm_min_epu8(_mm_sub_epi8(t, iota1), keep));
        x = _mm_or_si128(_mm_andnot_si128(_mm_cvtsi32_si128(0xff), x), _mm_cvtsi32_si128((int)k));
        uint64_t unused = L->unused & ~(1ull << k);
        uint64_t moves = B_LEGAL(x, unused);
        unsigned s = moves ? 63 - __builtin_clzll(moves) : 0;
        unsigned c = L->flips + 1;
        unsigned reach = c + tail[s];
        if (reach < need) continue;
        if (reach == need && s < k && s >= 2) {
            uint64_t lanes = ((1ull << s) - 1) & ~1ull;
            __m128i inert = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(1)),
                                         _mm_cmpgt_epi8(x, _mm_set1_epi8((char)s)));
            uint64_t im = (uint64_t)(unsigned)_mm_movemask_epi8(inert) & lanes;
            uint64_t unk = (uint64_t)(unsigned)_mm_movemask_epi8(x) & lanes;
            uint64_t freev = unused & ((2ull << s) - 1);
            if (im || __builtin_popcountll(unk) > __builtin_popcountll(freev)) continue;
        }
        d++;
        st[d].deck = x;
        st[d].flips = c;
        st[d].unused = unused;
        st[d].todo = moves | B_LEAF(x, c);
    }
    nodes = cnt;
}
#endif

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s N [-t TARGET] [-d [-f FROM]] [-s] [-p] [-b]\n", argv[0]);
        return 2;
    }
    n = atoi(argv[1]);
    if (n < 1 || n >= 20) {
        fprintf(stderr, "N must be in 1..19 (known tail bounds)\n");
        return 2;
    }
    long target = KNOWN_F[n];
    long from = -1;
    int portable = 0, backward = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) target = atol(argv[++i]);
        else if (!strcmp(argv[i], "-d")) discover = 1;
        else if (!strcmp(argv[i], "-f") && i + 1 < argc) from = atol(argv[++i]);
        else if (!strcmp(argv[i], "-s")) skip = 1;
        else if (!strcmp(argv[i], "-p")) portable = 1;
        else if (!strcmp(argv[i], "-b")) backward = 1;
    }
    for (int m = 0; m < 64; m++) tail[m] = m < n ? KNOWN_F[m] : NO_BOUND;
    if (discover) {
        skip = 1;
        need = from >= 0 ? (unsigned)from + 1 : KNOWN_F[n]; /* beat the bound */
    } else {
        need = (unsigned)target;
    }
#if HAVE_SSE
    __builtin_cpu_init();
    int sse = !portable && n <= 16 && __builtin_cpu_supports("ssse3");
#else
    int sse = 0;
#endif
    if (backward && !sse) {
        fprintf(stderr, "-b needs SSSE3 and n <= 16\n");
        return 2;
    }
    double t0 = cpu_now();
#if HAVE_SSE
    if (backward) search_back(); else
    if (sse) search_sse(); else
#endif
    search_portable();
    double s = cpu_now() - t0;
    const char *mode = discover ? "discover" : (skip ? "prove" : "prove-all");
    printf("%3d %10s %16s %9.3f %14llu %10.1f %6llu %5u\n", n, mode,
           backward ? "c-ssse3-bwd" : (sse ? "c-ssse3" : "c-portable"), s,
           (unsigned long long)nodes, nodes / s / 1e6, (unsigned long long)decks, best);
    return 0;
}
