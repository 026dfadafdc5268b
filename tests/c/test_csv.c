/* The CSV writer (hbdlab/csv.h): each cell form and the RFC 4180 quoting, compared with text
 * written out by hand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "hbdlab/hbdlab.h"

static void test_cells(void **state)
{
    (void)state;
    hl_csv c;
    hl_csv_init(&c);
    hl_csv_text(&c, "plain");
    hl_csv_text(&c, "a,b");
    hl_csv_text(&c, "say \"hi\"");
    hl_csv_text(&c, " lead");
    hl_csv_text(&c, "tab\t");
    hl_csv_text(&c, "two\nlines");
    hl_csv_empty(&c);
    hl_csv_end_row(&c);
    hl_csv_integer(&c, -9007199254740993LL);
    hl_csv_number(&c, 0.1);
    hl_csv_number(&c, 4096);
    hl_csv_bool(&c, 1);
    hl_csv_bool(&c, 0);
    hl_csv_number(&c, -NAN); /* printf writes "-nan" */
    hl_csv_number(&c, -INFINITY);
    hl_csv_end_row(&c);
    hl_csv_end_row(&c); /* an empty row is a bare newline */
    assert_false(c.failed);
    /* 0.1 to 17 significant digits is 0.10000000000000001 */
    const char *want = "plain,\"a,b\",\"say \"\"hi\"\"\",\" lead\",\"tab\t\",\"two\nlines\",\n"
                       "-9007199254740993,0.10000000000000001,4096,true,false,nan,-inf\n"
                       "\n";
    assert_string_equal(c.text, want);
    assert_int_equal(c.len, (int64_t)strlen(want));
    hl_csv_clear(&c);
    assert_int_equal(c.len, 0);
    hl_csv_text(&c, "x");
    hl_csv_end_row(&c);
    assert_string_equal(c.text, "x\n");
    /* a NUL byte inside a cell is kept: "a\0b" is 3 bytes, no quoting needed */
    hl_csv_clear(&c);
    hl_csv_bytes(&c, "a\0b", 3);
    hl_csv_bytes(&c, "q\0\"", 3); /* a quote after the NUL still quotes: "q\0""" */
    assert_int_equal(c.len, 3 + 1 + 6);
    assert_memory_equal(c.text, "a\0b,\"q\0\"\"\"", 10);
    hl_csv_free(&c);
    assert_null(c.text);
}

static void test_long_cell_not_cut(void **state)
{
    (void)state;
    /* 100,000 quotes: quoted, each doubled, 200,002 bytes + "\n"; past the first 4 KiB buffer */
    size_t n = 100000;
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, '"', n);
    s[n] = '\0';
    hl_csv c;
    hl_csv_init(&c);
    hl_csv_text(&c, s);
    hl_csv_end_row(&c);
    assert_false(c.failed);
    assert_int_equal(c.len, (int64_t)(2 * n + 3));
    assert_int_equal(c.text[0], '"');
    assert_int_equal(c.text[2 * n + 1], '"');
    assert_int_equal(c.text[2 * n + 2], '\n');
    free(s);
    hl_csv_free(&c);
}

static void test_result_cells(void **state)
{
    (void)state;
    hl_csv c;
    hl_csv_init(&c);
    int32_t n = hl_result_field_count();
    int seen[4] = {0, 0, 0, 0};
    for (int32_t k = 0; k < n; k++) {
        const hl_result_field *f = hl_result_field_at(k);
        hl_csv_clear(&c);
        char want[64];
        switch (f->type) {
        case HL_VALUE_INTEGER:
            hl_csv_result(&c, k, 12345.0);
            strcpy(want, "12345");
            break;
        case HL_VALUE_BOOL:
            hl_csv_result(&c, k, 1.0);
            strcpy(want, "true");
            break;
        case HL_VALUE_NAME:
            hl_csv_result(&c, k, 0.0);
            snprintf(want, sizeof want, "%.*s", (int)strcspn(f->names, "|"), f->names);
            break;
        default:
            hl_csv_result(&c, k, 0.25);
            strcpy(want, "0.25");
            break;
        }
        seen[f->type] = 1;
        assert_string_equal(c.text, want);
    }
    /* the result schema has every kind of value */
    assert_true(seen[HL_VALUE_NUMBER] && seen[HL_VALUE_INTEGER] && seen[HL_VALUE_BOOL] && seen[HL_VALUE_NAME]);
    hl_csv_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cells), cmocka_unit_test(test_long_cell_not_cut),
                                       cmocka_unit_test(test_result_cells)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
