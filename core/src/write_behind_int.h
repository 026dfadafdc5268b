/* Write-behind for a long output file (core/src/write_behind.c): the pages already written are
 * handed to the disk and dropped from the page cache as the file grows, so a file of gigabytes
 * reuses a bounded set of pages (KEEP_BYTES and a chunk) instead of taking fresh ones. */
#ifndef HL_WRITE_BEHIND_INT_H
#define HL_WRITE_BEHIND_INT_H
#include <stdint.h>

typedef struct hl_write_behind {
    int fd;            /* the file, written from offset 0 in order */
    int64_t written;   /* bytes handed to write(2) or fwrite so far */
    int64_t submitted; /* [0, submitted): writeback started */
    int64_t dropped;   /* [0, dropped): written back and dropped from the page cache */
} hl_write_behind;

void hl_write_behind_init(hl_write_behind *w, int fd);
/* n more bytes went to the file (they may still sit in a stdio buffer: the calls below are
 * advice, and a range not yet in the file is skipped by them). Never fails: the data is in
 * the page cache either way, and an I/O error is what it was without the advice. */
void hl_write_behind_wrote(hl_write_behind *w, int64_t n);

#endif
