/* Internal helpers for descriptor tables. */
#ifndef HL_FIELDS_INT_H
#define HL_FIELDS_INT_H
#include <stddef.h>

#include "hbdlab/fields.h"
#include "hbdlab/status.h"

/* Descriptor initialisers: struct type T, member, JSON/Lua name, range, unit, help. */
#define HL_FD(T, member, nm, lo, hi, unit, help)                                                                       \
    {                                                                                                                  \
        nm, HL_FIELD_DOUBLE, (int32_t)offsetof(T, member), (int32_t)sizeof(double), lo, hi, unit, help, NULL, 0, NULL, \
            0                                                                                                          \
    }
#define HL_FD0(T, member, nm, lo, hi, unit, help)                                                                      \
    {                                                                                                                  \
        nm, HL_FIELD_DOUBLE, (int32_t)offsetof(T, member), (int32_t)sizeof(double), lo, hi, unit, help, NULL, 1, NULL, \
            0                                                                                                          \
    }
#define HL_FI(T, member, nm, lo, hi, help)                                                                             \
    {                                                                                                                  \
        nm, HL_FIELD_INT64, (int32_t)offsetof(T, member), (int32_t)sizeof(int64_t), lo, hi, "", help, NULL, 0, NULL, 0 \
    }
#define HL_FI0(T, member, nm, lo, hi, help)                                                                            \
    {                                                                                                                  \
        nm, HL_FIELD_INT64, (int32_t)offsetof(T, member), (int32_t)sizeof(int64_t), lo, hi, "", help, NULL, 1, NULL, 0 \
    }
#define HL_FB(T, member, nm, help)                                                                                  \
    {                                                                                                               \
        nm, HL_FIELD_BOOL, (int32_t)offsetof(T, member), (int32_t)sizeof(int32_t), 0, 1, "", help, NULL, 0, NULL, 0 \
    }
#define HL_FS(T, member, nm, help)                                                                                     \
    {                                                                                                                  \
        nm, HL_FIELD_STRING, (int32_t)offsetof(T, member), (int32_t)sizeof(((T *)0)->member), 0, 0, "", help, NULL, 0, \
            NULL, 0                                                                                                    \
    }
#define HL_FE(T, member, nm, names, help)                                                                            \
    {                                                                                                                \
        nm, HL_FIELD_ENUM, (int32_t)offsetof(T, member), (int32_t)sizeof(int32_t), 0, 0, "", help, names, 0, NULL, 0 \
    }

/* The i-th name of an enum's '|'-separated list (an enum field's enum_names) into buf of n
 * bytes (cut to n - 1 characters); returns 0 past the end of the list. */
int hl_enum_name(const char *names, int32_t i, char *buf, size_t n);

/* Error for an unknown field name, with a "did you mean" suggestion. */
hl_status hl_unknown_field(const hl_field_set *set, const char *name, hl_err *err);

/* v, refused for lying outside lo..hi, as a message shows it: "%g", unless that text reads as a
 * value inside lo..hi (1 + 2^-52 showed as "1" beside "allowed: 0.01..1"): then the shortest text
 * that reads back to v exactly. "nan" for any NaN. out holds at least 32 bytes. */
void hl_field_shown(double v, double lo, double hi, char *out);

#endif
