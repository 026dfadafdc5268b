#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "err_int.h"
#include "hbdlab/hbdlab.h"

static void test_strerror_names_every_status(void **state)
{
    (void)state;
    for (int s = HL_OK; s <= HL_EINTR; s++)
        assert_string_not_equal(hl_strerror((hl_status)s), "unknown status");
    assert_string_equal(hl_strerror((hl_status)999), "unknown status");
}

static void test_fail_formats_and_prefixes(void **state)
{
    (void)state;
    hl_err e;
    assert_int_equal(hl_fail(&e, HL_EINVAL, "field '%s': %d is not allowed", "tp", 6), HL_EINVAL);
    assert_string_equal(e.msg, "field 'tp': 6 is not allowed");
    hl_err_prefix(&e, "model 'x'");
    assert_string_equal(e.msg, "model 'x': field 'tp': 6 is not allowed");
    assert_int_equal(hl_fail(NULL, HL_EIO, "ignored"), HL_EIO); /* NULL err is allowed */
}

static void test_version_is_semver(void **state)
{
    (void)state;
    const char *v = hl_version();
    int a, b, c;
    assert_int_equal(sscanf(v, "%d.%d.%d", &a, &b, &c), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror_names_every_status),
        cmocka_unit_test(test_fail_formats_and_prefixes),
        cmocka_unit_test(test_version_is_semver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
