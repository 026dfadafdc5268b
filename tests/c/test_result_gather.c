/* hl_result_gather_code and hl_result_values_of (result_int.h): the per-sweep list a CSV stream's
 * points copy their values through. A code built wrong (a column's type swapped, an offset one
 * field off) reads the wrong bytes or converts them wrongly; these tests see both. */
#include <string.h>

#include "check.h"

#include "hbdlab/sim.h"
#include "hbdlab/sweep.h"
#include "result_int.h"

static int32_t field(const char *name)
{
    int32_t i = hl_result_field_index(name);
    assert_true(i >= 0);
    return i;
}

/* Values set member by member, read back in a column order that is not the table's: each v[c]
 * is the member assigned here (by hand, not through the table), dense in column order. */
static void test_columns_read_their_members(void **state)
{
    (void)state;
    hl_result r;
    memset(&r, 0, sizeof r);
    r.ttft_s = 0.25;           /* double */
    r.gpus = 128;              /* int64_t: 128.0, not its bits read as a double */
    r.fits = 1;                /* int32_t bool */
    r.bound = 3;               /* int32_t name index: scale-out */
    r.cost.usd_per_mtok = 2.5; /* a double inside a nested struct */
    r.tp = 8;                  /* the int64 next to gpus: an offset 8 bytes off reads it */
    r.tpot_s = 0.0078125;      /* the double after ttft_s */
    const char *names[] = {"usd_per_mtok", "parallel.gpus", "memory.fits", "bound", "ttft_s", "parallel.tp", "tpot_s"};
    const double want[] = {2.5, 128, 1, 3, 0.25, 8, 0.0078125};
    enum { N = 7 };
    int32_t code[N];
    for (int c = 0; c < N; c++)
        code[c] = hl_result_gather_code(field(names[c]));
    double v[N + 1];
    v[N] = -7; /* past the columns: left as it is */
    hl_result_values_of(&r, code, N, v);
    for (int c = 0; c < N; c++)
        assert_rel(v[c], want[c], 0, names[c]);
    assert_rel(v[N], -7, 0, "past the last column");
}

/* Every field, each holding a value no other holds (field i: 1000 + i, as its own type): the
 * gather gives exactly hl_result_value(), the field-table path the Lua tables and whole sweeps read. */
static void test_every_field_as_the_table_reads_it(void **state)
{
    (void)state;
    hl_result r;
    memset(&r, 0, sizeof r);
    int32_t n = hl_result_field_count();
    for (int32_t i = 0; i < n; i++) {
        const hl_result_field *f = hl_result_field_at(i);
        char *at = (char *)&r + f->offset;
        if (f->type == HL_VALUE_INTEGER) {
            int64_t x = 1000 + i;
            memcpy(at, &x, sizeof x);
        } else if (f->type == HL_VALUE_BOOL || f->type == HL_VALUE_NAME) {
            int32_t x = 1000 + i;
            memcpy(at, &x, sizeof x);
        } else {
            double x = 1000.5 + i;
            memcpy(at, &x, sizeof x);
        }
    }
    int32_t code[HL_POINT_VALUES];
    double v[HL_POINT_VALUES];
    for (int32_t i = 0; i < n; i++)
        code[n - 1 - i] = hl_result_gather_code(i); /* reversed: v[c] is column c, not field c */
    hl_result_values_of(&r, code, n, v);
    for (int32_t c = 0; c < n; c++) {
        int32_t i = n - 1 - c;
        double want = hl_result_value(&r, i);
        /* fields that alias one member (cost.power_w and power_w) hold the later value */
        if (!(v[c] == want))
            fail_msg("column %d (field %s): got %.17g, want %.17g", (int)c, hl_result_field_at(i)->name, v[c], want);
        assert_true(v[c] >= 1000 && v[c] < 1000.5 + n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_columns_read_their_members),
                                       cmocka_unit_test(test_every_field_as_the_table_reads_it)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
