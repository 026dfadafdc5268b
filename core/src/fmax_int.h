/* Inline fmax and fmin for the per-point paths (roofline, collectives, simulation). */
#ifndef HL_FMAX_INT_H
#define HL_FMAX_INT_H

/* C11 fmax (7.12.12.2): the larger of a and b, the other when one is a NaN. gcc 12 at -O3 on
 * x86-64 calls libm for fmax (its NaN rule; -fno-math-errno does not change that), ~10
 * instructions and a call each, ~30 calls a sweep point. Equal values give b, as glibc's
 * x86-64 fmax (maxsd) does, so fmax(-0., +0.) is +0. either way and no result moves. */
static inline double hl_fmax(double a, double b) { return a > b ? a : b != b ? a : b; }

/* C11 fmin (7.12.12.3), the same way: equal values give b, as glibc's x86-64 fmin (minsd) does. */
static inline double hl_fmin(double a, double b) { return a < b ? a : b != b ? a : b; }

#endif
