/* Field descriptors: one table per configurable struct (GPU, cluster, model)
 * naming each field, its type, unit, allowed range and help text. JSON
 * loading, validation, the Lua bindings and the help text all read these
 * tables, so a field is declared once. */
#ifndef HBDLAB_FIELDS_H
#define HBDLAB_FIELDS_H
#include "hbdlab/status.h"
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hl_field_type {
    HL_FIELD_DOUBLE = 0,
    HL_FIELD_INT64 = 1,
    HL_FIELD_BOOL = 2,   /* stored as int32_t 0/1 */
    HL_FIELD_STRING = 3, /* char buffer of `size` bytes */
    HL_FIELD_ENUM = 4,   /* stored as int32_t; names in enum_names, '|'-separated */
    HL_FIELD_TABLE = 5   /* a nested table of other fields (serve's disagg pools); no generic setter */
} hl_field_type;

typedef struct hl_field {
    const char *name;       /* JSON key and Lua field name */
    int32_t type;           /* hl_field_type */
    int32_t offset;         /* bytes from the start of the struct */
    int32_t size;           /* bytes of storage */
    double min;             /* inclusive lower bound for numbers */
    double max;             /* inclusive upper bound for numbers */
    const char *unit;       /* SI unit ("FLOP/s", "B/s", "s", "B") or "" */
    const char *help;       /* one line */
    const char *enum_names; /* "gqa|mla" for enums, NULL otherwise */
    int32_t zero_ok;        /* 1 when 0 is allowed below min ("unset"/"unsupported") */
    const char *path;       /* nested name in hl.simulate tables and JSON ("parallel.tp"); NULL = name */
    double def;             /* default value (job fields; enums: the index), applied by hl_job_init */
} hl_field;

/* A friendly name of a field whose name carries its unit (hbm_gb = hbm_bytes / 1e9):
 * accepted wherever the field is (Lua tables, JSON files, :with), set as value * factor. */
typedef struct hl_field_alias {
    const char *name;  /* "hbm_gb" */
    const char *field; /* the SI field it sets: "hbm_bytes" */
    double factor;     /* SI value = alias value * factor */
} hl_field_alias;

typedef struct hl_field_set {
    const char *kind; /* "gpu", "cluster", "model" */
    const hl_field *fields;
    int32_t count;
    const hl_field_alias *aliases; /* NULL-name terminated; NULL = none */
} hl_field_set;

/* The alias `name` of the set; NULL when it is not one. */
const hl_field_alias *hl_field_alias_find(const hl_field_set *set, const char *name);

/* Looks a field up by name; NULL when absent. */
const hl_field *hl_field_find(const hl_field_set *set, const char *name);

/* Sets a numeric (double, int64, bool, enum-by-index) field after checking its
 * type, integrality and range; an alias (hl_field_alias) sets its field. */
hl_status hl_field_set_number(const hl_field_set *set, void *obj, const char *name, double value, hl_err *err);

/* hl_field_set_number for a descriptor already looked up in `set` (same checks). */
hl_status hl_field_set_number_at(const hl_field_set *set, const hl_field *f, void *obj, double value, hl_err *err);

/* Sets a string field, or an enum field by name. */
hl_status hl_field_set_string(const hl_field_set *set, void *obj, const char *name, const char *value, hl_err *err);

/* Reads a numeric field (bools and enums as their integer value). */
double hl_field_get_number(const hl_field *f, const void *obj);

/* Reads a string field, or an enum field's name. Points into obj or static storage. */
const char *hl_field_get_string(const hl_field *f, const void *obj);

/* Checks every field of obj: numbers against their range, enums against their
 * names, booleans for 0/1. */
hl_status hl_field_check_all(const hl_field_set *set, const void *obj, hl_err *err);

/* Levenshtein distance between two short words (99 when either exceeds 32
 * characters): the measure behind every "did you mean" suggestion. */
int hl_edit_distance(const char *a, const char *b);

/* Writes into buf (size n) the closest field name to `name`, or "" if none is close. */
void hl_field_suggest(const hl_field_set *set, const char *name, char *buf, int32_t n);

#ifdef __cplusplus
}
#endif
#endif
