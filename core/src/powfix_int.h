/* x^p for an exponent that repeats, the GEMM blend's p and its root's 1/p (roofline.c): tables per
 * exponent, kept per thread and filled on first use (powfix.c derives the method and its error). */
#ifndef HL_POWFIX_INT_H
#define HL_POWFIX_INT_H

#include <stdint.h>
#include <string.h>

#define HL_POWFIX_E 1024 /* 2^(e p) entries, index top - 1 (top = e + 1023), e in [-1022, 1] */

/* The tables of one exponent p. An entry is a function of (p, its index) only. */
typedef struct hl_powfix_tab {
    double p;
    double b[7];            /* b[n] = binom(p, n), n = 1..6 (b[0] unused) */
    double tc[128];         /* c_i^p, c_i = 1 + (i + 0.5)/128; 0: not yet computed */
    double te[HL_POWFIX_E]; /* 2^(e p); 0: not yet computed; -1: too small, hl_pow_pos decides */
} hl_powfix_tab;

/* A blend exponent p and its root 1/p. */
typedef struct hl_powfix_pair {
    hl_powfix_tab pow, root;
} hl_powfix_pair;

/* hl_powfix_of's search of the thread's slots, and the pair it found last (NULL: none yet). */
hl_powfix_pair *hl_powfix_find(double p);
extern _Thread_local hl_powfix_pair *hl_powfix_last;

/* The calling thread's tables for p and 1/p, or NULL where p is outside [1, 4] (the caller then
 * uses hl_pow_pos). Valid until the thread's next call, which may reuse the slot for another p.
 * The last pair found is compared first (a sweep's blends share one p). */
static inline hl_powfix_pair *hl_powfix_of(double p)
{
    hl_powfix_pair *f = hl_powfix_last;
    return f && f->pow.p == p ? f : hl_powfix_find(p);
}

/* hl_powfix's other cases: an entry to compute, x outside the tables, x = 1. */
double hl_powfix_slow(hl_powfix_tab *f, double x);

extern const double hl_powpos_invc[128];

/* x^p for x > 0, p = f->p. Relative error at most 3 2^-52 where the tables apply (x a normal
 * number under 4 whose power is above 2^-1017: powfix.c; tests/c/test_powfix.c checks it against
 * powl); elsewhere it is hl_pow_pos(x, p). Exact: x = 1 gives 1. The result depends on x and p
 * only, never on what the thread computed before. */
static inline double hl_powfix(hl_powfix_tab *f, double x)
{
    uint64_t ix;
    memcpy(&ix, &x, sizeof ix);
    uint64_t top = ix >> 52; /* sign and biased exponent */
    unsigned i = (unsigned)(ix >> 45) & 127;
    if (top - 1 >= HL_POWFIX_E)
        return hl_powfix_slow(f, x);
    double e2 = f->te[top - 1], cp = f->tc[i];
    if (!(e2 > 0 && cp > 0) || x == 1)
        return hl_powfix_slow(f, x);
    uint64_t im = (ix & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
    uint64_t ic = (im & ~((1ULL << 45) - 1)) | (1ULL << 44); /* c = 1 + (i + 0.5)/128, exactly */
    double m, c;
    memcpy(&m, &im, sizeof m);
    memcpy(&c, &ic, sizeof c);
    double r = (m - c) * hl_powpos_invc[i]; /* m - c exact */
    const double *b = f->b;
    double s = r * (b[1] + r * (b[2] + r * (b[3] + r * (b[4] + r * (b[5] + r * b[6])))));
    return e2 * (cp * (1 + s));
}

#endif
