/* x^p by tables for a fixed exponent p (powfix_int.h), the GEMM blend's powers (roofline.c).
 *
 * Method (derived): x = 2^e m, m in [1, 2), e in [-1022, 1]; c = 1 + (i + 0.5)/128 is the centre
 * of m's 1/128 interval (i: m's top 7 mantissa bits), r = (m - c)/c, |r| <= 2^-8. Then
 *   x^p = 2^(e p) c^p (1 + r)^p,   (1 + r)^p = sum_n binom(p, n) r^n   (binomial series, |r| < 1).
 * 2^(e p) and c^p are libm pow of exact arguments (2^e and c are exact doubles), computed the
 * first time an entry is needed and kept: an entry is a function of (p, e) or (p, i) only, so the
 * result never depends on which entries were filled before. The series stops at r^6: for
 * 1/4 <= p <= 4, max |binom(p, n)| is 6, 4, 1, 0.031, 0.024, 0.019, 0.016 for n = 2..8 (computed
 * on a grid of 100,001 p; decreasing from n = 4 on), so the rest is under
 * 0.019 |r|^7 / (1 - |r|) <= 2^-61.6.
 * Error (relative, u = 2^-52): r = (m - c) invc is within 2^-61 of (m - c)/c (as in hl_pow_pos,
 * powpos.c), which moves (1 + r)^p by at most p 2^-61 <= 2^-59; the coefficients
 * binom(p, n) = binom(p, n-1) (p - n + 1)/n carry under 2n roundings each, on terms under
 * 6 |r|^n <= 2^-13.4 for n >= 2 (b1 = p is exact); Horner's rounding with |r (b1 + ...)| <= 2^-6 adds
 * under 0.55 u; glibc's pow is within 0.52 ulp (sysdeps/ieee754/dbl-64/e_pow.c: "ULP error:
 * 0.52"), so 2^(e p) and c^p within 0.52 u each; the two products 0.5 u each. In all under 2.7 u;
 * the header states 3 u, which tests/c/test_powfix.c checks against powl (64-bit long double).
 * hl_pow_pos's bound is (2 |p ln x| + 4) u, so this is the tighter of the two. */
#include "powfix_int.h"

#include <math.h>

#include "powpos_int.h"

#define SLOTS 4

/* Zero-initialised: p = 0 matches no exponent the domain lets through. */
static _Thread_local hl_powfix_pair slots[SLOTS];
static _Thread_local unsigned slot_next;

static void tab_init(hl_powfix_tab *f, double p)
{
    memset(f, 0, sizeof *f);
    f->p = p;
    f->b[1] = p;
    for (int n = 2; n < 7; n++)
        f->b[n] = f->b[n - 1] * (p - (n - 1)) / n;
}

_Thread_local hl_powfix_pair *hl_powfix_last;

hl_powfix_pair *hl_powfix_find(double p)
{
    if (!(p >= 1 && p <= 4))
        return NULL;
    for (unsigned s = 0; s < SLOTS; s++)
        if (slots[s].pow.p == p)
            return hl_powfix_last = &slots[s];
    hl_powfix_pair *f = &slots[slot_next];
    slot_next = (slot_next + 1) % SLOTS;
    tab_init(&f->pow, p);
    tab_init(&f->root, 1 / p);
    return hl_powfix_last = f;
}

double hl_powfix_slow(hl_powfix_tab *f, double x)
{
    uint64_t ix;
    memcpy(&ix, &x, sizeof ix);
    uint64_t top = ix >> 52;
    if (top - 1 >= HL_POWFIX_E) /* 0, subnormal, negative, x >= 4, inf or NaN */
        return hl_pow_pos(x, f->p);
    if (x == 1)
        return 1;
    double *e2 = &f->te[top - 1];
    if (*e2 == 0) {
        double v = pow(ldexp(1, (int)top - 1023), f->p);
        /* c^p (1 + r)^p lies in [0.98, 16.2] (c in [1, 2), |r| <= 2^-8, p in [1/4, 4]): the
         * product stays a normal number when this entry is at least 2^-1017 */
        *e2 = v >= 0x1p-1017 ? v : -1;
    }
    if (*e2 < 0)
        return hl_pow_pos(x, f->p);
    unsigned i = (unsigned)(ix >> 45) & 127;
    if (f->tc[i] == 0) {
        uint64_t ic = (ix & 0x000fe00000000000ULL) | 0x3ff0100000000000ULL; /* c_i */
        double c;
        memcpy(&c, &ic, sizeof c);
        f->tc[i] = pow(c, f->p);
    }
    return hl_powfix(f, x); /* both entries now there */
}
