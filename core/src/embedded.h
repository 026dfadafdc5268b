/* Files embedded at build time by cmake/embed.cmake (presets, Lua library). */
#ifndef HL_EMBEDDED_H
#define HL_EMBEDDED_H
#include <stddef.h>
#include <stdint.h>

typedef struct hl_embedded_file {
    const char *name; /* path relative to the embedded root, e.g. "gpus/b200.json" */
    const char *data; /* NUL-terminated contents, static storage */
    size_t size;      /* bytes, without the terminating NUL */
} hl_embedded_file;

#endif
