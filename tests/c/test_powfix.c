/* hl_powfix (core/src/powfix.c), the GEMM blend's power by per-exponent tables: against powl
 * (x87 long double, 64-bit mantissa: its own error is far below the 3 2^-52 checked) on seeded x
 * over every binade the tables cover and exponents over their whole range [1, 4] and the roots
 * [1/4, 1]; its result independent of the tables' history; libm's or hl_pow_pos's result where the
 * tables do not apply. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "powfix_int.h"
#include "powpos_int.h"

static uint64_t rng = 20261202;
static double uniform(void) /* [0, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) * 0x1p-53;
}

static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* x from 2^-1000 to 4 (log-uniform), in [0, 1] and in [1, 3] (the blend's terms and sums) */
static double draw_x(int n)
{
    double u = uniform();
    return n % 3 == 0 ? exp2(-1000 + 1001.99 * u) : n % 3 == 1 ? u : 1 + 2 * u;
}

/* powl is a valid reference only where long double really carries 64 mantissa bits: valgrind runs
 * x87 arithmetic at double precision (its manual, "Limitations": no 80-bit floating point), where
 * powl's own error reaches the bound checked. 1 + 2^-60 rounds to 1 there. */
static int long_double_is_extended(void)
{
    volatile long double one = 1, tiny = 0x1p-60L;
    return one + tiny != one;
}

static void test_within_bound_of_powl(void **state)
{
    (void)state;
    if (!long_double_is_extended()) {
        print_message("long double is not extended here (valgrind?): no powl reference, skipped\n");
        skip();
    }
    const double fixed_p[] = {1.702, 1.711, 2.435, 1, 4};
    double worst = 0; /* the largest error seen, in units of the bound */
    for (int k = 0; k < 40; k++) {
        double p = k < 5 ? fixed_p[k] : 1 + 3 * uniform();
        hl_powfix_pair *f = hl_powfix_of(p);
        assert_non_null(f);
        assert_true(f->pow.p == p && f->root.p == 1 / p);
        for (int side = 0; side < 2; side++) {
            hl_powfix_tab *t = side ? &f->root : &f->pow;
            for (int n = 0; n < 20000; n++) {
                double x = draw_x(n);
                if (!(x > 0))
                    continue;
                double got = hl_powfix(t, x);
                long double want = powl((long double)x, (long double)t->p);
                if (pow(ldexp(1, ilogb(x)), t->p) < 0x1p-1017) { /* below the tables: hl_pow_pos's bits */
                    assert_true(same(got, hl_pow_pos(x, t->p)));
                    continue;
                }
                double err = (double)(fabsl((long double)got - want) / want) / (3 * 0x1p-52);
                if (!(err <= 1))
                    fail_msg("hl_powfix(%a) with p = %a: %a, powl %La", x, t->p, got, want);
                worst = fmax(worst, err);
            }
        }
    }
    assert_true(worst > 0.1); /* the bound is not loose by an order of magnitude */
    hl_powfix_pair *f = hl_powfix_of(1.702);
    assert_true(hl_powfix(&f->pow, 1) == 1 && hl_powfix(&f->root, 1) == 1);
}

/* The same x gives the same bits with fresh tables and after many other entries and exponents
 * (slots reused): entries are functions of (p, index) only. */
static void test_independent_of_history(void **state)
{
    (void)state;
    double xs[64], first[64];
    for (int n = 0; n < 64; n++) {
        xs[n] = draw_x(n);
        hl_powfix_pair *f = hl_powfix_of(1.5 + n * 0x1p-20); /* a new exponent: fresh tables */
        first[n] = hl_powfix(&f->pow, xs[n]);
    }
    for (int round = 0; round < 3; round++)
        for (int n = 63; n >= 0; n--) {
            hl_powfix_pair *f = hl_powfix_of(1.5 + n * 0x1p-20);
            for (int k = 0; k < 50; k++) /* fill other entries of the same tables */
                (void)hl_powfix(&f->pow, draw_x(k));
            assert_true(same(hl_powfix(&f->pow, xs[n]), first[n]));
        }
}

/* Outside the tables: hl_pow_pos's result (libm's rules at 0, subnormals, inf, NaN); exponents
 * outside [1, 4] have no tables. */
static void test_outside_the_tables(void **state)
{
    (void)state;
    assert_null(hl_powfix_of(0.999));
    assert_null(hl_powfix_of(4.001));
    assert_null(hl_powfix_of(16));
    assert_null(hl_powfix_of(NAN));
    hl_powfix_pair *f = hl_powfix_of(2.435);
    const double edge[] = {0, 0x1p-1070, 0x1p-1022, 4, 7.5, 1e300, INFINITY, 0x1p-800};
    for (int i = 0; i < 8; i++) {
        double x = edge[i];
        double got = hl_powfix(&f->pow, x), want = hl_pow_pos(x, 2.435);
        if (x == 0x1p-1022 || x == 0x1p-800) /* tiny powers: hl_pow_pos decides */
            assert_true(same(got, want) || fabs(got - want) <= 3 * 0x1p-52 * want);
        else
            assert_true(same(got, want));
    }
    /* 2^-800 to the 2.435 is 2^-1948: the entry is marked, hl_pow_pos (libm there) decides */
    assert_true(same(hl_powfix(&f->pow, 0x1p-800), hl_pow_pos(0x1p-800, 2.435)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_within_bound_of_powl),
        cmocka_unit_test(test_independent_of_history),
        cmocka_unit_test(test_outside_the_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
