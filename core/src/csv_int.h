/* The CSV writer's internal number path (core/src/shortest.c, used by core/src/csv.c). */
#ifndef HL_CSV_INT_H
#define HL_CSV_INT_H
#include <stdint.h>

#include "hbdlab/csv.h"

/* hl_csv_format_number's text written straight into out, which must have HL_CSV_NUMBER_ROOM
 * bytes: the text (at most 25 bytes) and its NUL, and past them scratch bytes of fixed-size
 * copies (the furthest at out + 34), so the caller's buffer needs the room, not the text. */
enum { HL_CSV_NUMBER_ROOM = 48 };
int32_t hl_csv_format_number_wide(double v, char *out);
/* The texts of v[0, n), each followed by ',' (no NUL), written at o, which has n HL_CSV_NUMBER_ROOM
 * bytes (the same bytes hl_csv_format_number_wide writes for each); returns the end. */
char *hl_csv_put_numbers(char *o, const double *v, int32_t n);

/* Room for n more bytes and the NUL at the end of c's text: where to write them, or NULL (and
 * c->failed set) when memory ran out. The caller writes whole rows there and ends them with
 * hl_csv_commit_row(c, end), end being one past the row's "\n". */
char *hl_csv_room_grow(hl_csv *c, int64_t n); /* hl_csv_room when the text must grow (csv.c) */
static inline char *hl_csv_room(hl_csv *c, int64_t n)
{
    return !c->failed && c->len + n + 1 <= c->cap ? c->text + c->len : hl_csv_room_grow(c, n);
}
static inline void hl_csv_commit_row(hl_csv *c, char *end)
{
    c->len = end - c->text;
    *end = '\0';
    c->cells = 0;
}
/* The text hl_csv_integer writes for v ("%lld"), at o (24 bytes of room); returns its end. */
char *hl_csv_put_integer(char *o, int64_t v);

#endif
