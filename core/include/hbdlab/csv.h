/* The CSV writer (core/src/csv.c): every CSV file hbdlab writes is built here, by
 * hl.sweep_to_csv (chunk by chunk) and by hl.rows.to_csv / write_csv / write (and so by every
 * script writing rows), so a value has one form in every file:
 *   - text cells per RFC 4180: quoted when they hold a comma, a quote, CR or LF, or start or
 *     end with white space; quotes doubled; never cut;
 *   - integers in full ("%lld"), booleans true/false, other numbers as the shortest decimal
 *     that reads back to the same double (hl_csv_format_number), an absent value as an empty cell;
 *   - cells joined by ',', each row ended by "\n".
 * The text is built in memory; the caller writes it (result files: a temp file renamed into
 * place, so no half-written file is ever left). */
#ifndef HBDLAB_CSV_H
#define HBDLAB_CSV_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CSV text being built; caller-owned (hl_csv_init, then hl_csv_free). */
typedef struct hl_csv {
    char *text;     /* malloc'd, NUL-terminated; NULL before the first byte */
    int64_t len;    /* bytes in text, without the NUL */
    int64_t cap;    /* bytes allocated for text */
    int32_t cells;  /* cells so far in the row being written */
    int32_t failed; /* 1 once an allocation failed: the text is incomplete (out of memory) */
} hl_csv;

void hl_csv_init(hl_csv *c);
void hl_csv_free(hl_csv *c);
/* Empties the text (keeping its memory) for the next chunk of rows; failed stays set. */
void hl_csv_clear(hl_csv *c);

/* One cell each, appended to the row being written. hl_csv_text takes a C string,
 * hl_csv_bytes len bytes (a NUL among them is kept, never cuts the cell). Text that a
 * spreadsheet would run as a formula (hl_csv_formula_start) is written quoted after an
 * apostrophe: "'=cmd|..." (OWASP CSV injection); readers take the apostrophe off. */
void hl_csv_text(hl_csv *c, const char *s);
void hl_csv_bytes(hl_csv *c, const char *s, int64_t len);
void hl_csv_empty(hl_csv *c);
/* Whether text s[0..len) gets the apostrophe: it starts with = + - @ tab or CR, or with an
 * apostrophe followed by one of those or by another apostrophe (so that reading back is exact). */
int32_t hl_csv_formula_start(const char *s, int64_t len);
void hl_csv_integer(hl_csv *c, int64_t v);
void hl_csv_number(hl_csv *c, double v);
void hl_csv_bool(hl_csv *c, int32_t v);
/* Value v of result field `field` (hbdlab/result.h) by its type: integer, boolean, the name
 * a name index stands for, or a number. */
void hl_csv_result(hl_csv *c, int32_t field, double v);

/* The shortest decimal text of v that strtod reads back to v exactly (Dragonbox; among the
 * shortest, the closest to v), laid out as "%.17g" lays out its digits (fixed notation for a
 * decimal exponent in [-4, 17), else d.ddde+XX); "nan", "inf", "-inf", "0", "-0" for the
 * special values. Writes at most 25 bytes and a NUL into out; returns the length. Thread-safe. */
int32_t hl_csv_format_number(double v, char *out);

/* Ends the row being written ("\n"). */
void hl_csv_end_row(hl_csv *c);

/* ---- Checking CSV text read in pieces (core/src/csv_check.c; hbdlab merge) ----
 * Feed the text in any pieces, then end: every quoted cell must be closed ("" is a quote inside),
 * every record as wide as the header (the first record) and ended by a line end ("\n"; a "\r"
 * before it is part of the last cell). */
typedef struct hl_csv_check {
    int64_t line;       /* the physical line being read, 1-based (line ends in quoted cells count) */
    int64_t cells;      /* cells so far in the record being read */
    int64_t want;       /* the header's cells; 0 until the header ended */
    int64_t head_end;   /* bytes of the header, its line end included; 0 until it ended */
    int64_t ends;       /* record ends so far (the header's too) */
    int64_t pos;        /* bytes fed so far */
    int64_t quote_line; /* the line where the quoted cell being read started */
    int32_t state;      /* plain, in a quoted cell, or a quote seen in one */
    int32_t last;       /* the last byte fed (0..255), -1 before any */
    char why[160];      /* what is wrong, once something is: "line 3 has 1 cells, the header 2" */
} hl_csv_check;

void hl_csv_check_init(hl_csv_check *c);
/* 0, or -1 once the text is known to be bad (c->why says why; later calls return -1). */
int32_t hl_csv_check_feed(hl_csv_check *c, const char *text, int64_t len);
/* After the last piece: 0 and the records after the header in *records, or -1 (c->why). */
int32_t hl_csv_check_end(hl_csv_check *c, int64_t *records);

#ifdef __cplusplus
}
#endif
#endif
