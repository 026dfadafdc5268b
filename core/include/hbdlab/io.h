/* Reading input files and checking their text: the limits every file hbdlab reads shares
 * (presets, configs, traces, calibration specs, scripts' data). core/src/io.c. And the
 * write-behind of a long output file (core/src/write_behind.c). */
#ifndef HBDLAB_IO_H
#define HBDLAB_IO_H
#include <stdint.h>
#include "hbdlab/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads a whole text file into a malloc'd NUL-terminated buffer (caller frees with
 * hl_free). Fails naming the file: not a regular file (FIFO, folder, device: refused
 * before reading), larger than hl_max_input_bytes(), or holding a NUL byte. */
hl_status hl_read_file(const char *path, char **text, hl_err *err);
void hl_free(void *p);

/* Opens an input file for reading: a regular file only (a FIFO is opened without waiting for a
 * writer, then refused with a folder or a device before any read). Returns a blocking read-only
 * file descriptor (the caller closes it) and *size its size in bytes, or -1 with err naming the
 * file: "PATH: cannot open: why", "PATH: cannot stat: why", "PATH: not a regular file (a FIFO)".
 * hl_read_file and `hbdlab merge`'s shards open through it. */
int hl_open_input(const char *path, int64_t *size, hl_err *err);

/* The input size limit of hl_read_file in bytes: $HBDLAB_MAX_INPUT_BYTES (read by hl_env_bytes),
 * else 64 MiB; fails naming the variable when it is set to something that is not a byte count. */
hl_status hl_max_input_bytes(int64_t *bytes, hl_err *err);

/* Reads environment variable `name` as a byte count: a whole number in 1..max written with
 * decimal digits, an optional fraction and exponent ("65536", "8e9", "1.5e9") into *bytes, or def
 * when it is unset or empty. Anything else ("abc", "-5", "+5", " 5", "0x10", "inf", "1e999",
 * "8GB", "0.5") fails naming the variable, its value and what is allowed
 * (a limit with junk in it was replaced by its default silently). */
hl_status hl_env_bytes(const char *name, double def, double max, double *bytes, hl_err *err);

/* Byte offset of the first invalid UTF-8 sequence in text[0..len) (overlong forms and
 * UTF-16 surrogates included), or -1 when valid. */
int64_t hl_utf8_invalid_offset(const char *text, int64_t len);

/* Write-behind for a long output file (core/src/write_behind.c says why): past 64 MiB the pages
 * already written are handed to the disk and dropped from the page cache as the file grows, so a
 * file of gigabytes reuses a bounded set of pages instead of taking fresh ones. Every writer of a
 * sweep's CSV (hl_sweep_csv_file, hl.sweep_to_csv) reports its bytes to one. */
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

#ifdef __cplusplus
}
#endif
#endif
