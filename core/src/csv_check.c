/* Checking CSV text read in pieces (hbdlab/csv.h, hl_csv_check): every quoted cell closed,
 * every record as wide as the header and ended by a line end; the header's length and the
 * record count. The rules and messages of lua/hbdlab/rows.lua's csv_check (strict), as a state
 * machine fed any number of pieces, so a file of any size is checked in bounded memory. */
#include <stdio.h>
#include <string.h>

#include "hbdlab/csv.h"

enum { PLAIN = 0, QUOTED = 1, QUOTE_SEEN = 2 }; /* QUOTE_SEEN: a '"' in a quoted cell, closing or doubled */

void hl_csv_check_init(hl_csv_check *c)
{
    memset(c, 0, sizeof *c);
    c->line = 1;
    c->cells = 1;
    c->last = -1;
}

static int32_t record_end(hl_csv_check *c)
{
    if (!c->head_end) {
        c->want = c->cells;
        c->head_end = c->pos + 1; /* the header's bytes, its line end included */
    }
    if (c->cells != c->want) {
        snprintf(c->why, sizeof c->why, "line %lld has %lld cells, the header %lld", (long long)c->line,
                 (long long)c->cells, (long long)c->want);
        return -1;
    }
    c->cells = 1;
    c->line++;
    c->ends++;
    return 0;
}

int32_t hl_csv_check_feed(hl_csv_check *c, const char *text, int64_t len)
{
    if (c->why[0])
        return -1;
    const unsigned char *t = (const unsigned char *)text;
    int64_t i = 0, start = c->pos; /* c->pos is kept at start + i, written back below */
    while (i < len) {
        if (c->state == QUOTE_SEEN) {
            if (t[i] == '"') { /* "" inside a quoted cell */
                c->state = QUOTED;
                i++;
                continue;
            }
            c->state = PLAIN; /* the quote closed the cell; this byte is read as plain text */
        }
        if (c->state == QUOTED) { /* to the next quote, counting line ends */
            while (i < len && t[i] != '"')
                c->line += t[i++] == '\n';
            if (i < len) {
                c->state = QUOTE_SEEN;
                i++;
            }
            continue;
        }
        while (i < len && t[i] != '"' && t[i] != ',' && t[i] != '\n') /* plain bytes */
            i++;
        if (i == len)
            break;
        if (t[i] == '"') {
            c->state = QUOTED;
            c->quote_line = c->line;
        } else if (t[i] == ',') {
            c->cells++;
        } else {
            c->pos = start + i;
            if (record_end(c) != 0)
                return -1;
        }
        i++;
    }
    c->pos = start + len;
    if (len > 0)
        c->last = t[len - 1];
    return 0;
}

int32_t hl_csv_check_end(hl_csv_check *c, int64_t *records)
{
    *records = 0;
    if (c->why[0])
        return -1;
    if (c->state == QUOTED) {
        snprintf(c->why, sizeof c->why, "line %lld: a quoted cell is not closed", (long long)c->quote_line);
        return -1;
    }
    if (!c->head_end) {
        snprintf(c->why, sizeof c->why, "no header line");
        return -1;
    }
    if (c->last != '\n') {
        snprintf(c->why, sizeof c->why, "line %lld is cut short (no line end)", (long long)c->line);
        return -1;
    }
    *records = c->ends - 1;
    return 0;
}
