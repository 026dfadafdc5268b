/* x^p for the roofline's power means: a table-driven exp(p log x), ~45 instructions
 * instead of glibc pow's ~125 (callgrind). */
#ifndef HL_POWPOS_INT_H
#define HL_POWPOS_INT_H

/* x^p for x > 0. Relative error at most (2 |p ln x| + 4) 2^-52 (powpos.c; tests/c/test_roofline.c
 * checks it against libm pow): within 1e-14 of pow wherever x^p is neither tiny nor huge.
 * Exact: x = 1 gives 1. Outside the tables' range (x not a positive normal number, or
 * |p ln x| >= 707) it is libm pow itself. */
double hl_pow_pos(double x, double p);

/* The tables powpos.c uses (exposed for the test that recomputes them). */
extern const double hl_powpos_invc[128], hl_powpos_logc[128], hl_powpos_t2[64];

#endif
