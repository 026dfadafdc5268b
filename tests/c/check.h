/* Shared helpers for the cmocka tests: numeric checks with a label. */
#ifndef HL_TEST_CHECK_H
#define HL_TEST_CHECK_H
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

/* |got - want| <= rel * |want| (or <= rel when want is 0), else fail with a label. */
#define assert_rel(got, want, rel, label)                                             \
    do {                                                                              \
        double g_ = (got), w_ = (want), r_ = (rel);                                   \
        double tol_ = w_ == 0 ? r_ : r_ * fabs(w_);                                   \
        if (!(fabs(g_ - w_) <= tol_))                                                 \
            fail_msg("%s: got %.15g, want %.15g (rel %.3g, tol %.3g)", label, g_, w_, \
                     w_ != 0 ? fabs(g_ - w_) / fabs(w_) : fabs(g_), r_);              \
    } while (0)

/* The status must be OK; prints the error message otherwise. */
#define assert_ok(expr, errp)                              \
    do {                                                   \
        hl_status s_ = (expr);                             \
        if (s_ != HL_OK)                                   \
            fail_msg("%s failed: %s", #expr, (errp)->msg); \
    } while (0)

/* The status must equal want and the message contain `needle`. */
#define assert_fails_with(expr, want, errp, needle)                                                 \
    do {                                                                                            \
        hl_status s_ = (expr);                                                                      \
        if (s_ != (want))                                                                           \
            fail_msg("%s: status %d, want %d (msg: %s)", #expr, (int)s_, (int)(want), (errp)->msg); \
        if (!strstr((errp)->msg, needle))                                                           \
            fail_msg("%s: message '%s' lacks '%s'", #expr, (errp)->msg, needle);                    \
    } while (0)

#endif
