/* The fuzz input as text: a malloc'd copy of data[0..size) with a NUL after it (NUL bytes
 * inside are kept), or NULL when out of memory. The caller frees it. */
#ifndef HL_FUZZ_TEXT_H
#define HL_FUZZ_TEXT_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text) {
        memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

#endif
