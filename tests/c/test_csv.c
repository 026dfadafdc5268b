/* The CSV writer (hbdlab/csv.h): each cell form and the RFC 4180 quoting, compared with text
 * written out by hand. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "csv_int.h"
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
    /* numbers: the shortest decimal that reads back to the same double; the double nearest 0.1
     * (0.1000000000000000055511151231257827) reads back from "0.1" */
    const char *want = "plain,\"a,b\",\"say \"\"hi\"\"\",\" lead\",\"tab\t\",\"two\nlines\",\n"
                       "-9007199254740993,0.1,4096,true,false,nan,-inf\n"
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
    /* issue 22: text a spreadsheet would run as a formula gets a leading apostrophe, quoted
     * (OWASP CSV injection): = + - @ tab CR first; "'=" gets one more so reading back is exact;
     * "'x", "a=b" and numbers stay as they were */
    hl_csv_clear(&c);
    hl_csv_text(&c, "=cmd|' /C calc'!A0");
    hl_csv_text(&c, "+1");
    hl_csv_text(&c, "-2");
    hl_csv_text(&c, "@SUM(A1)");
    hl_csv_text(&c, "\tx");
    hl_csv_text(&c, "'=x");
    hl_csv_text(&c, "''");
    hl_csv_text(&c, "'x");
    hl_csv_text(&c, "a=b");
    hl_csv_text(&c, "=\"q\"");
    hl_csv_number(&c, -2);
    hl_csv_end_row(&c);
    assert_string_equal(c.text, "\"'=cmd|' /C "
                                "calc'!A0\",\"'+1\",\"'-2\",\"'@SUM(A1)\",\"'\tx\",\"''=x\",\"'''\",'x,a=b,"
                                "\"'=\"\"q\"\"\",-2\n");
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

/* Significant digits of a formatted number (leading and trailing zeros of the digits not counted). */
static int significant_digits(const char *s)
{
    char d[40];
    int n = 0, lead = 1;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9' && !(lead && *s == '0')) {
            lead = 0;
            d[n++] = *s;
        }
    while (n > 1 && d[n - 1] == '0')
        n--;
    return n > 0 ? n : 1;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t next_random(void) /* xorshift64 */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* v's text reads back to v exactly, is laid out as %.17g lays it out (an exponent exactly when
 * %.17g writes one), and is shortest: `full` tries every shorter length with printf's nearest
 * decimal (the check for powers of two, whose interval is lopsided), else only one digit fewer. */
static void check_number(double v, int full)
{
    char out[32], ref[40], shorter[40];
    int32_t len = hl_csv_format_number(v, out);
    assert_int_equal(len, (int32_t)strlen(out));
    assert_true(len <= 25);
    double back = strtod(out, NULL);
    if (memcmp(&back, &v, sizeof v) != 0)
        fail_msg("%.17g wrote %s, which reads back as %.17g", v, out, back);
    snprintf(ref, sizeof ref, "%.17g", v);
    if ((strchr(out, 'e') != NULL) != (strchr(ref, 'e') != NULL))
        fail_msg("%.17g wrote %s: not laid out as %%.17g (%s)", v, out, ref);
    int d = significant_digits(out);
    for (int digits = full ? 1 : d - 1; digits >= 1 && digits < d; digits++) {
        snprintf(shorter, sizeof shorter, "%.*e", digits - 1, v);
        if (strtod(shorter, NULL) == v)
            fail_msg("%.17g wrote %s (%d digits), but %s reads back too", v, out, d, shorter);
    }
}

static void test_shortest_numbers(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *text;
    } exact[] = {
        {0.1, "0.1"}, /* the double nearest 0.1 is 0.1000000000000000055511151231257827 */
        {0.3, "0.3"},
        {2.0 / 3.0, "0.6666666666666666"}, /* 0.66666666666666662966; 16 digits read back */
        {1024, "1024"},
        {-7, "-7"},
        {1e17, "1e+17"},                          /* decimal exponent 17: %.17g's switch to e-form */
        {1e16, "10000000000000000"},              /* exponent 16: fixed */
        {9007199254740993.0, "9007199254740992"}, /* 2^53 + 1 rounds to 2^53 */
        {1e23, "1e+23"},                          /* the double is 9.9999999999999991611e22 */
        {1e-5, "1e-05"},                          /* exponent -5: e-form, two exponent digits */
        {1e-4, "0.0001"},                         /* exponent -4: fixed */
        {1.234e-5, "1.234e-05"},
        {1e300, "1e+300"},
        {5e-324, "5e-324"}, /* 2^-1074, the least subnormal */
        {1e-323, "1e-323"}, /* 2^-1073 */
        {2.2250738585072014e-308, "2.2250738585072014e-308"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {0.0, "0"},
        {-0.0, "-0"},
        {INFINITY, "inf"},
        {-INFINITY, "-inf"},
        {NAN, "nan"},
        {-NAN, "nan"},
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        char out[32];
        hl_csv_format_number(exact[i].v, out);
        assert_string_equal(out, exact[i].text);
    }
    for (int e = -1074; e <= 1023; e++) /* every power of two: the lopsided rounding interval */
        check_number(ldexp(1.0, e), 1);
    for (int i = 0; i < 200000; i++) {
        uint64_t bits = next_random();
        double v;
        memcpy(&v, &bits, sizeof v);
        if (i % 4 == 1) /* short decimals (ratios of small integers) */
            v = (double)(next_random() % 100000) / (double)(1 + next_random() % 1000);
        else if (i % 4 == 2) /* integers and their halves, quarters ... */
            v = ldexp((double)(next_random() >> 11), -(int)(next_random() % 60));
        else if (i % 4 == 3) { /* subnormals */
            bits &= 0x800FFFFFFFFFFFFFull;
            memcpy(&v, &bits, sizeof v);
        }
        if (isnan(v) || isinf(v))
            continue;
        check_number(v, i < 3000);
    }
}

/* The text hl_csv_format_number must write for v (finite, nonzero, not a power of two), built
 * from printf alone: the fewest digits p whose nearest decimal ("%.*e", correctly rounded by
 * glibc, an even digit on a tie) reads back to v (a symmetric rounding interval: if a p-digit
 * decimal reads back, the nearest one does, and one more digit never hurts, so p is found by
 * bisection), then laid out as %.17g lays out digits: fixed for a decimal exponent X in [-4, 17),
 * else d.ddde+XX with at least two exponent digits. */
static void oracle_layout(double v, const char *digits, int n, int x, char *out);

static void oracle_text(double v, char *out)
{
    char e[40];
    int lo = 1, hi = 17; /* 17 digits always read back */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        snprintf(e, sizeof e, "%.*e", mid - 1, v);
        if (strtod(e, NULL) == v)
            hi = mid;
        else
            lo = mid + 1;
    }
    snprintf(e, sizeof e, "%.*e", lo - 1, v);
    char digits[24];
    int n = 0;
    const char *s = e + (e[0] == '-');
    for (; *s != 'e'; s++)
        if (*s != '.')
            digits[n++] = *s;
    int x = atoi(s + 1);
    while (n > 1 && digits[n - 1] == '0') /* "%.*e" of a shortest p keeps no trailing zero, but */
        n--;                              /* 1e+02 written for p = 1 has none to drop either */
    oracle_layout(v, digits, n, x, out);
}

/* digits[0, n) x 10^x (d.ddd form) laid out as %.17g lays out digits: fixed for x in [-4, 17),
 * else d.ddde+XX with at least two exponent digits. */
static void oracle_layout(double v, const char *digits, int n, int x, char *out)
{
    char *o = out;
    if (v < 0)
        *o++ = '-';
    if (x >= -4 && x < 17) {
        if (x < 0) {
            o += sprintf(o, "0.");
            for (int i = 0; i < -x - 1; i++)
                *o++ = '0';
            memcpy(o, digits, (size_t)n);
            o += n;
        } else {
            for (int i = 0; i < n || i <= x; i++) {
                if (i == x + 1)
                    *o++ = '.';
                *o++ = i < n ? digits[i] : '0';
            }
        }
        *o = '\0';
    } else {
        *o++ = digits[0];
        if (n > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(n - 1));
            o += n - 1;
        }
        sprintf(o, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
    }
}

/* The formatter's text byte for byte against oracle_text on doubles of every kind: random bit
 * patterns, subnormals, short decimals, integers, values near powers of ten, each digit count
 * (the digits are written eight at a time, so every length and split of them is reached). */
static void test_number_text_matches_printf(void **state)
{
    (void)state;
    uint64_t seed = rng_state;
    rng_state = 0xD1B54A32D192ED03ull;
    int checked = 0;
    for (int i = 0; i < 240000; i++) {
        uint64_t bits = next_random();
        double v;
        memcpy(&v, &bits, sizeof v);
        switch (i % 8) {
        case 1:
            bits &= 0x800FFFFFFFFFFFFFull;
            memcpy(&v, &bits, sizeof v);
            break; /* subnormal */
        case 2: v = (double)(next_random() % 100000) / (double)(1 + next_random() % 1000); break;
        case 3: v = (double)(next_random() >> (next_random() % 64)); break; /* integers of every length */
        case 4: /* p significant digits times a power of ten: every digit count and exponent */
            v = (double)(next_random() % 100000000000000000ull >> (next_random() % 57)) *
                pow(10, (int)(next_random() % 60) - 40);
            break;
        case 5: v = nextafter(pow(10, (int)(next_random() % 600) - 300), (i & 8) ? INFINITY : 0); break;
        case 6: /* exponents near 0, where fixed notation holds every digit */
            bits = (bits & 0x800FFFFFFFFFFFFFull) | (uint64_t)(1023 - 20 + next_random() % 80) << 52;
            memcpy(&v, &bits, sizeof v);
            break;
        default: break;
        }
        int exp2;
        if (isnan(v) || isinf(v) || v == 0 || fabs(frexp(v, &exp2)) == 0.5)
            continue; /* specials have their own cases above; powers of two a lopsided interval */
        char out[32], want[40];
        hl_csv_format_number(v, out);
        oracle_text(v, want);
        if (strcmp(out, want) != 0)
            fail_msg("%a: wrote %s, printf's shortest is %s", v, out, want);
        checked++;
    }
    assert_true(checked > 230000);
    rng_state = seed;
}

/* The text for a power of two v, whose rounding interval is lopsided (half as wide below v), from
 * printf and strtod alone: for p = 1, 2, ... digits, the nearest p-digit decimal n0 ("%.*e"); if it
 * reads back to v it is the closest such; else the only other candidate is its neighbour one unit
 * in the last digit on v's other side (the p-digit decimals that read back are the consecutive
 * ones inside the interval, and n0 is outside it), taken when that reads back. The first p with
 * a candidate is the shortest. */
static void oracle_pow2_text(double v, char *out)
{
    for (int p = 1; p <= 17; p++) {
        char e[40];
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        double back = strtod(e, NULL);
        char digits[24];
        int n = 0;
        const char *s = e;
        for (; *s != 'e'; s++)
            if (*s != '.')
                digits[n++] = *s;
        digits[n] = '\0';
        int x = atoi(s + 1);
        if (back != v) { /* step the p digits (an integer D) one unit towards v, then re-read */
            unsigned long long d = strtoull(digits, NULL, 10);
            d = back < v ? d + 1 : d - 1;
            char cand[48];
            snprintf(cand, sizeof cand, "%llue%d", d, x - (p - 1));
            if (strtod(cand, NULL) != v)
                continue;
            /* the stepped digits themselves, renormalised: 10^p after 99..9 or 10^(p-1) - 1 after 10..0 */
            n = snprintf(digits, sizeof digits, "%llu", d);
            x += n - p;
        }
        while (n > 1 && digits[n - 1] == '0')
            n--;
        oracle_layout(v, digits, n, x, out);
        return;
    }
    fail_msg("%a: no decimal of 17 digits reads back", v);
}

/* Every power of two, 2^-1074 .. 2^1023 (the formatter's own path for the lopsided interval, and
 * the integers among them), against oracle_pow2_text. */
static void test_power_of_two_text(void **state)
{
    (void)state;
    for (int e = -1074; e <= 1023; e++) {
        double v = ldexp(1.0, e);
        char out[32], want[40];
        hl_csv_format_number(v, out);
        oracle_pow2_text(v, want);
        if (strcmp(out, want) != 0)
            fail_msg("2^%d: wrote %s, printf and strtod's shortest closest is %s", e, out, want);
    }
}

/* hl_csv_put_numbers (csv_int.h: the sweep stream's run of number cells in one call): each value's
 * text followed by ',', the same bytes hl_csv_format_number writes for it alone, and the end one
 * past the last ','. Runs of 1..9 values mixing every kind a row holds (17-digit fractions, short
 * decimals, integers, powers of two, zero and -0, subnormals, huge and tiny exponents, inf, NaN),
 * written into a buffer of exactly n HL_CSV_NUMBER_ROOM bytes (its contract; ASan builds see an
 * overrun). */
static void test_put_numbers_matches_format(void **state)
{
    (void)state;
    uint64_t seed = rng_state;
    rng_state = 0x2545F4914F6CDD1Dull;
    for (int i = 0; i < 40000; i++) {
        double v[9];
        int n = 1 + (int)(next_random() % 9);
        for (int j = 0; j < n; j++) {
            uint64_t bits = next_random();
            memcpy(&v[j], &bits, sizeof bits);
            switch (next_random() % 8) {
            case 0: v[j] = (double)(next_random() % 100000) / (double)(1 + next_random() % 1000); break;
            case 1: v[j] = (double)(next_random() >> (next_random() % 64)); break;
            case 2: v[j] = ldexp(1.0, (int)(next_random() % 2098) - 1074); break;
            case 3: v[j] = (next_random() & 1) ? 0.0 : -0.0; break;
            case 4:
                bits &= 0x800FFFFFFFFFFFFFull;
                memcpy(&v[j], &bits, sizeof bits);
                break;
            case 5: v[j] = (next_random() & 1) ? INFINITY : NAN; break;
            case 6: /* fractions near 1, whose fixed notation holds all 16-17 digits */
                bits = (bits & 0x800FFFFFFFFFFFFFull) | (uint64_t)(1023 - 20 + next_random() % 60) << 52;
                memcpy(&v[j], &bits, sizeof bits);
                break;
            default: break; /* random bits */
            }
        }
        char *buf = malloc((size_t)n * HL_CSV_NUMBER_ROOM), want[9 * 32];
        assert_non_null(buf);
        size_t len = 0;
        for (int j = 0; j < n; j++) {
            len += (size_t)hl_csv_format_number(v[j], want + len);
            want[len++] = ',';
        }
        char *end = hl_csv_put_numbers(buf, v, n);
        if ((size_t)(end - buf) != len || memcmp(buf, want, len) != 0)
            fail_msg("run of %d: wrote %.*s, one by one %.*s", n, (int)(end - buf), buf, (int)len, want);
        free(buf);
    }
    rng_state = seed;
}

/* The piecewise CSV check (hl_csv_check): the verdict of hand-worked texts, whatever the pieces
 * they are fed in (every split point, and byte by byte). */
static void check_text(const char *text, int64_t want_records, int64_t want_head, const char *want_why)
{
    size_t n = strlen(text);
    for (size_t split = 0; split <= n + 1; split++) {
        hl_csv_check c;
        hl_csv_check_init(&c);
        int32_t rc = 0;
        if (split <= n) { /* two pieces split at `split` */
            rc |= hl_csv_check_feed(&c, text, (int64_t)split);
            rc |= hl_csv_check_feed(&c, text + split, (int64_t)(n - split));
        } else { /* byte by byte */
            for (size_t i = 0; i < n; i++)
                rc |= hl_csv_check_feed(&c, text + i, 1);
        }
        int64_t records = -1;
        rc |= hl_csv_check_end(&c, &records);
        if (want_why) {
            assert_int_equal(rc, -1);
            assert_string_equal(c.why, want_why);
        } else {
            if (rc != 0)
                fail_msg("split %zu of %s: %s", split, text, c.why);
            assert_int_equal(records, want_records);
            assert_int_equal(c.head_end, want_head);
        }
    }
}

static void test_piecewise_check(void **state)
{
    (void)state;
    check_text("a,b\n1,2\n3,4\n", 2, 4, NULL);
    check_text("a,b\n", 0, 4, NULL); /* a header alone: no records */
    /* a quoted cell holding a comma, a doubled quote and a line end is one cell */
    check_text("a,b\n\"x,\"\"y\"\"\nz\",2\n", 1, 4, NULL);
    check_text("a,b\r\n1,2\r\n", 1, 5, NULL); /* CR is part of the last cell */
    check_text("a,b\n\"3,4\n", 0, 0, "line 2: a quoted cell is not closed");
    check_text("a,b\n1,2", 0, 0, "line 2 is cut short (no line end)");
    check_text("a,b\n1,2\n3\n", 0, 0, "line 3 has 1 cells, the header 2");
    check_text("a,b\n1,2,3\n", 0, 0, "line 2 has 3 cells, the header 2");
    /* line numbers count the line ends inside quoted cells */
    check_text("a,b\n\"1\n1\",2\n3\n", 0, 0, "line 4 has 1 cells, the header 2");
    check_text("", 0, 0, "no header line");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cells),
                                       cmocka_unit_test(test_long_cell_not_cut),
                                       cmocka_unit_test(test_result_cells),
                                       cmocka_unit_test(test_shortest_numbers),
                                       cmocka_unit_test(test_number_text_matches_printf),
                                       cmocka_unit_test(test_power_of_two_text),
                                       cmocka_unit_test(test_put_numbers_matches_format),
                                       cmocka_unit_test(test_piecewise_check)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
