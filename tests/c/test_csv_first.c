/* hl_csv_put_numbers as the first formatting of a process (csv_int.h): the run builds the
 * formatter's table of 10^k itself (shortest.c builds it on first use; a run checks once, before
 * its first value, not per value). test_csv.c cannot see this: its first test formats numbers one
 * by one, which builds the table. Without the build the digits come from zeros; an alarm turns a
 * hang there into a failure. */
#include <string.h>
#include <unistd.h>

#include "check.h"

#include "csv_int.h"

static void test_first_run_builds_table(void **state)
{
    (void)state;
    alarm(20);
    /* texts known without the formatter: the double nearest 0.1 reads back from "0.1"; the bench
     * row's total_s has 17 significant digits; 1e-5's decimal exponent -5 is %.17g's e-form with two
     * exponent digits; 1024 is an integer */
    const double v[4] = {0.1, 13.270812837924664, 1e-5, 1024};
    char out[4 * HL_CSV_NUMBER_ROOM];
    char *end = hl_csv_put_numbers(out, v, 4);
    *end = '\0';
    assert_string_equal(out, "0.1,13.270812837924664,1e-05,1024,");
    alarm(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_first_run_builds_table)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
