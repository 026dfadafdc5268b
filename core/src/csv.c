/* The one CSV writer (hbdlab/csv.h): RFC 4180 cells and rows into a growing buffer (numbers
 * by hl_csv_format_number, core/src/shortest.c). */
#include "hbdlab/csv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_int.h"
#include "hbdlab/result.h"

void hl_csv_init(hl_csv *c) { memset(c, 0, sizeof *c); }

void hl_csv_free(hl_csv *c)
{
    free(c->text);
    hl_csv_init(c);
}

void hl_csv_clear(hl_csv *c)
{
    c->len = 0;
    c->cells = 0;
    if (c->text)
        c->text[0] = '\0';
}

/* Room for n more bytes and the NUL; 0 (and failed set) when memory ran out. */
static int reserve(hl_csv *c, int64_t n)
{
    if (c->failed)
        return 0;
    if (c->len + n + 1 <= c->cap)
        return 1;
    int64_t cap = c->cap ? c->cap : 4096;
    while (cap < c->len + n + 1)
        cap *= 2;
    char *t = realloc(c->text, (size_t)cap);
    if (!t) {
        c->failed = 1;
        return 0;
    }
    c->text = t;
    c->cap = cap;
    return 1;
}

char *hl_csv_room_grow(hl_csv *c, int64_t n) { return reserve(c, n) ? c->text + c->len : NULL; }

static void put(hl_csv *c, const char *s, int64_t n)
{
    if (!reserve(c, n))
        return;
    memcpy(c->text + c->len, s, (size_t)n);
    c->len += n;
    c->text[c->len] = '\0';
}

/* The ',' before every cell but a row's first. */
static void next_cell(hl_csv *c)
{
    if (c->cells++ > 0)
        put(c, ",", 1);
}

static int is_space(char ch) { return ch != '\0' && strchr(" \t\n\v\f\r", ch) != NULL; }

/* The body of a quoted cell after its opening quote: s[0..n) in runs up to and including each
 * quote, each followed by the doubling quote, then the closing quote. */
static void put_quoted_rest(hl_csv *c, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        const char *q = memchr(s + i, '"', n - i);
        size_t run = q ? (size_t)(q - (s + i)) + 1 : n - i;
        put(c, s + i, (int64_t)run);
        if (q)
            put(c, "\"", 1);
        i += run;
    }
    put(c, "\"", 1);
}

int32_t hl_csv_formula_start(const char *s, int64_t len)
{
    if (len < 1)
        return 0;
    if (strchr("=+-@\t\r", s[0]) && s[0] != '\0')
        return 1;
    return s[0] == '\'' && len > 1 && s[1] != '\0' && strchr("=+-@\t\r'", s[1]) != NULL;
}

void hl_csv_bytes(hl_csv *c, const char *s, int64_t len)
{
    next_cell(c);
    size_t n = (size_t)len;
    /* a spreadsheet runs a cell starting with = + - @ (or a tab or CR) as a formula: such text gets
     * a leading apostrophe, which spreadsheets show as text and hl.rows.read_csv takes off again
     * (OWASP "CSV Injection"); text already starting with ' and one of those gets one more, so
     * reading back is exact */
    if (hl_csv_formula_start(s, len)) {
        put(c, "\"'", 2);
        put_quoted_rest(c, s, n);
        return;
    }
    int quote = n && (is_space(s[0]) || is_space(s[n - 1]));
    for (size_t i = 0; i < n && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n';
    if (!quote) {
        put(c, s, len);
        return;
    }
    put(c, "\"", 1);
    put_quoted_rest(c, s, n);
}

void hl_csv_text(hl_csv *c, const char *s) { hl_csv_bytes(c, s ? s : "", s ? (int64_t)strlen(s) : 0); }

void hl_csv_empty(hl_csv *c) { next_cell(c); }

char *hl_csv_put_integer(char *o, int64_t v)
{
    char b[24], *e = b + sizeof b, *p = e; /* digits from the end, then the sign */
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    memcpy(o, p, (size_t)(e - p));
    return o + (e - p);
}

void hl_csv_integer(hl_csv *c, int64_t v)
{
    next_cell(c);
    if (!reserve(c, 24))
        return;
    c->len = hl_csv_put_integer(c->text + c->len, v) - c->text;
    c->text[c->len] = '\0';
}

void hl_csv_number(hl_csv *c, double v)
{
    next_cell(c);
    if (!reserve(c, HL_CSV_NUMBER_ROOM)) /* formatted in place: at most 25 bytes, the NUL and scratch */
        return;
    c->len +=
        hl_csv_format_number_wide(v, c->text + c->len); /* a NaN is "nan": printf's "-nan" sign carries no meaning */
}

void hl_csv_bool(hl_csv *c, int32_t v)
{
    next_cell(c);
    put(c, v ? "true" : "false", v ? 4 : 5);
}

void hl_csv_result(hl_csv *c, int32_t field, double v)
{
    const hl_result_field *f = hl_result_field_at(field);
    switch (f ? f->type : HL_VALUE_NUMBER) {
    case HL_VALUE_INTEGER: hl_csv_integer(c, (int64_t)v); break;
    case HL_VALUE_BOOL: hl_csv_bool(c, v != 0); break;
    case HL_VALUE_NAME: hl_csv_text(c, hl_result_value_name(field, v)); break;
    default: hl_csv_number(c, v);
    }
}

void hl_csv_end_row(hl_csv *c)
{
    put(c, "\n", 1);
    c->cells = 0;
}
