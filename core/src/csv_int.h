/* The CSV writer's internal number path (core/src/shortest.c, used by core/src/csv.c). */
#ifndef HL_CSV_INT_H
#define HL_CSV_INT_H
#include <stdint.h>

/* hl_csv_format_number's text written straight into out, which must have HL_CSV_NUMBER_ROOM
 * bytes: the text (at most 25 bytes) and its NUL, and past them scratch bytes of fixed-size
 * copies (the furthest at out + 34), so the caller's buffer needs the room, not the text. */
enum { HL_CSV_NUMBER_ROOM = 48 };
int32_t hl_csv_format_number_wide(double v, char *out);

#endif
