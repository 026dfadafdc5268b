/* hl_fmax / hl_fmin (core/src/fmax_int.h) against the C library's fmax / fmin, bit for bit:
 * the inline forms replace libm calls on the per-point paths, so every value the model can
 * produce (finite, signed zeros, subnormals, infinities, NaN of either sign, two NaNs) must give
 * the same double. libm is called through volatile pointers so that gcc can neither fold nor
 * inline it. Equal values (-0 against +0) give the second argument, as glibc's x86-64
 * minsd/maxsd do; C11 leaves that choice open, so this is a check of the platform the project
 * builds on (Debian 12, glibc). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fmax_int.h"

static double (*volatile libm_fmin)(double, double) = fmin;
static double (*volatile libm_fmax)(double, double) = fmax;

static uint64_t bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* every ordered pair of these, and of a seeded stream of ordinary values */
static const double special[] = {0.0,     -0.0,     1.0,      -1.0,      0.5, 1e308, -1e308, 5e-324,
                                 -5e-324, 2.2e-308, INFINITY, -INFINITY, NAN, -NAN,  3.0,    3.0 + 4.4e-16};
enum { N_SPECIAL = (int)(sizeof special / sizeof special[0]) };

static void check_pair(double a, double b)
{
    if (bits(hl_fmin(a, b)) != bits(libm_fmin(a, b)) || bits(hl_fmax(a, b)) != bits(libm_fmax(a, b))) {
        fprintf(stderr, "a = %a, b = %a: fmin %a / %a, fmax %a / %a (hl / libm)\n", a, b, hl_fmin(a, b),
                libm_fmin(a, b), hl_fmax(a, b), libm_fmax(a, b));
        fail();
    }
}

static void test_special_values_match_libm(void **state)
{
    (void)state;
    for (int i = 0; i < N_SPECIAL; i++)
        for (int j = 0; j < N_SPECIAL; j++)
            check_pair(special[i], special[j]);
    /* the NaN cases by their meaning too: the number wins over a NaN, either side */
    assert_true(hl_fmin(NAN, 2.0) == 2.0 && hl_fmin(2.0, NAN) == 2.0);
    assert_true(hl_fmax(NAN, -2.0) == -2.0 && hl_fmax(-2.0, NAN) == -2.0);
    assert_true(isnan(hl_fmin(NAN, NAN)) && isnan(hl_fmax(NAN, NAN)));
    /* and the zeros: the second argument */
    assert_true(signbit(hl_fmin(-0.0, 0.0)) == 0 && signbit(hl_fmin(0.0, -0.0)) != 0);
}

static void test_random_values_match_libm(void **state)
{
    (void)state;
    /* xorshift64: any bit pattern, so also NaN payloads and subnormals; a signalling NaN is made
     * quiet, since libm answers NaN for one (IEEE 754 minNum) and hl_fmin the other argument, and
     * the project cannot produce one: arithmetic gives quiet NaNs, and so do strtod and Lua's
     * tonumber ("nan"), and every input field is range-checked before it reaches these */
    uint64_t x = 0x9e3779b97f4a7c15u;
    const uint64_t exp_mask = 0x7ff0000000000000u, quiet = 0x0008000000000000u;
    for (int i = 0; i < 200000; i++) {
        double v[2];
        for (int k = 0; k < 2; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint64_t u = x;
            if ((u & exp_mask) == exp_mask && (u & ~(exp_mask | 0x8000000000000000u)))
                u |= quiet; /* a NaN: quiet */
            memcpy(&v[k], &u, sizeof v[k]);
        }
        check_pair(v[0], v[1]);
        check_pair(v[0], v[0]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_special_values_match_libm),
        cmocka_unit_test(test_random_values_match_libm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
