/* Generic access to structs through their field descriptor tables. */
#include "hbdlab/fields.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err_int.h"
#include "fields_int.h"
#include "hbdlab/csv.h"

const hl_field *hl_field_find(const hl_field_set *set, const char *name)
{
    if (!set || !name)
        return NULL;
    for (int32_t i = 0; i < set->count; i++)
        if (strcmp(set->fields[i].name, name) == 0)
            return &set->fields[i];
    return NULL;
}

/* Levenshtein distance, capped at 32 characters per word. */
int hl_edit_distance(const char *a, const char *b)
{
    if (!a || !b)
        return 99; /* as far apart as two long words */
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 32 || lb > 32)
        return 99;
    int d[33][33];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int cost = a[i - 1] == b[j - 1] ? 0 : 1;
            int best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            d[i][j] = best;
        }
    return d[la][lb];
}

void hl_field_suggest(const hl_field_set *set, const char *name, char *buf, int32_t n)
{
    int best = 99;
    const char *pick = "";
    for (int32_t i = 0; i < set->count; i++) {
        int dist = hl_edit_distance(name, set->fields[i].name);
        if (dist < best) {
            best = dist;
            pick = set->fields[i].name;
        }
    }
    int limit = (int)strlen(name) / 3 + 1;
    snprintf(buf, (size_t)n, "%s", best <= limit ? pick : "");
}

hl_status hl_unknown_field(const hl_field_set *set, const char *name, hl_err *err)
{
    char near[64];
    hl_field_suggest(set, name, near, sizeof near);
    if (near[0])
        return hl_fail(err, HL_EINVAL, "%s: unknown field '%s' (did you mean '%s'?)", set->kind, name, near);
    return hl_fail(err, HL_EINVAL, "%s: unknown field '%s'", set->kind, name);
}

/* An enum's names for messages: "flat, hierarchical" (static thread-local storage). */
static const char *names_list(const char *names)
{
    static _Thread_local char buf[256];
    size_t k = 0;
    for (const char *p = names; *p && k + 3 < sizeof buf; p++) {
        if (*p == '|') {
            buf[k++] = ',';
            buf[k++] = ' ';
        } else {
            buf[k++] = *p;
        }
    }
    buf[k] = '\0';
    return buf;
}

void hl_field_shown(double v, double lo, double hi, char *out)
{
    if (isnan(v)) {
        strcpy(out, "nan");
        return;
    }
    snprintf(out, 32, "%g", v);
    double r = strtod(out, NULL);
    if (r >= lo && r <= hi)
        hl_csv_format_number(v, out);
}

static void *at(void *obj, const hl_field *f) { return (char *)obj + f->offset; }
static const void *cat(const void *obj, const hl_field *f) { return (const char *)obj + f->offset; }

static hl_status check_range(const hl_field_set *set, const hl_field *f, double v, hl_err *err)
{
    if (isnan(v))
        v = fabs(v); /* print "nan", not "-nan" */
    if (isnan(v) || isinf(v))
        return hl_fail(err, HL_EINVAL, "%s field '%s': %g is out of range (not a finite number; allowed: %s%g..%g%s%s)",
                       set->kind, f->name, v, f->zero_ok ? "0 or " : "", f->min, f->max, f->unit[0] ? " " : "",
                       f->unit);
    if (v == 0 && f->zero_ok)
        return HL_OK;
    if (v < f->min || v > f->max) {
        char shown[32];
        hl_field_shown(v, f->min, f->max, shown);
        if (f->zero_ok)
            return hl_fail(err, HL_EINVAL, "%s field '%s': %s is out of range (allowed: 0 or %g..%g%s%s)", set->kind,
                           f->name, shown, f->min, f->max, f->unit[0] ? " " : "", f->unit);
        return hl_fail(err, HL_EINVAL, "%s field '%s': %s is out of range (allowed: %g..%g%s%s)", set->kind, f->name,
                       shown, f->min, f->max, f->unit[0] ? " " : "", f->unit);
    }
    return HL_OK;
}

int hl_enum_name(const char *names, int32_t i, char *buf, size_t n)
{
    const char *p = names;
    for (int32_t k = 0; k < i; k++) {
        p = strchr(p, '|');
        if (!p)
            return 0;
        p++;
    }
    size_t len = strcspn(p, "|");
    if (len + 1 > n)
        len = n - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    return 1;
}

const hl_field_alias *hl_field_alias_find(const hl_field_set *set, const char *name)
{
    for (const hl_field_alias *a = set->aliases; a && a->name; a++)
        if (strcmp(a->name, name) == 0)
            return a;
    return NULL;
}

hl_status hl_field_set_number(const hl_field_set *set, void *obj, const char *name, double v, hl_err *err)
{
    if (!set || !obj || !name)
        return hl_fail(err, HL_EINVAL, "hl_field_set_number: the %s is NULL",
                       !set   ? "field set"
                       : !obj ? "object"
                              : "field name");
    const hl_field *f = hl_field_find(set, name);
    if (!f) {
        const hl_field_alias *a = hl_field_alias_find(set, name);
        if (a && (f = hl_field_find(set, a->field)))
            return hl_field_set_number_at(set, f, obj, v * a->factor, err);
        return hl_unknown_field(set, name, err);
    }
    return hl_field_set_number_at(set, f, obj, v, err);
}

hl_status hl_field_set_number_at(const hl_field_set *set, const hl_field *f, void *obj, double v, hl_err *err)
{
    switch (f->type) {
    case HL_FIELD_DOUBLE: {
        hl_status s = check_range(set, f, v, err);
        if (s)
            return s;
        *(double *)at(obj, f) = v;
        return HL_OK;
    }
    case HL_FIELD_INT64: {
        hl_status s = check_range(set, f, v, err);
        if (s)
            return s;
        if (v != floor(v))
            return hl_fail(err, HL_EINVAL, "%s field '%s': %g is not an integer", set->kind, f->name, v);
        *(int64_t *)at(obj, f) = (int64_t)v;
        return HL_OK;
    }
    case HL_FIELD_BOOL:
        if (v != 0 && v != 1)
            return hl_fail(err, HL_EINVAL, "%s field '%s': %g is not a boolean (allowed: true, false, 0, 1)", set->kind,
                           f->name, v);
        *(int32_t *)at(obj, f) = (int32_t)v;
        return HL_OK;
    case HL_FIELD_ENUM: {
        char buf[32];
        /* range first: converting a huge or NaN double to int32_t is undefined */
        if (!(v >= 0 && v < 64) || v != floor(v) || !hl_enum_name(f->enum_names, (int32_t)v, buf, sizeof buf))
            return hl_fail(err, HL_EINVAL, "%s field '%s': %g is not one of %s", set->kind, f->name,
                           isnan(v) ? fabs(v) : v, names_list(f->enum_names));
        *(int32_t *)at(obj, f) = (int32_t)v;
        return HL_OK;
    }
    default: return hl_fail(err, HL_EINVAL, "%s field '%s': expected a string, got a number", set->kind, f->name);
    }
}

hl_status hl_field_set_string(const hl_field_set *set, void *obj, const char *name, const char *value, hl_err *err)
{
    const hl_field *f = hl_field_find(set, name);
    if (!f)
        return hl_unknown_field(set, name, err);
    if (f->type == HL_FIELD_STRING) {
        size_t len = strlen(value);
        if (len + 1 > (size_t)f->size)
            return hl_fail(err, HL_EINVAL, "%s field '%s': string of %zu bytes is too long (at most %d)", set->kind,
                           f->name, len, f->size - 1);
        memcpy(at(obj, f), value, len + 1);
        return HL_OK;
    }
    if (f->type == HL_FIELD_ENUM) {
        char buf[32];
        for (int32_t i = 0; hl_enum_name(f->enum_names, i, buf, sizeof buf); i++)
            if (strcasecmp(buf, value) == 0) {
                *(int32_t *)at(obj, f) = i;
                return HL_OK;
            }
        return hl_fail(err, HL_EINVAL, "%s field '%s': '%s' is not one of %s", set->kind, f->name, value,
                       names_list(f->enum_names));
    }
    if (f->zero_ok && strcasecmp(value, "unsupported") == 0)
        return hl_field_set_number(set, obj, name, 0, err);
    return hl_fail(err, HL_EINVAL, "%s field '%s': expected a number, got the string '%s'", set->kind, f->name, value);
}

double hl_field_get_number(const hl_field *f, const void *obj)
{
    switch (f->type) {
    case HL_FIELD_DOUBLE: return *(const double *)cat(obj, f);
    case HL_FIELD_INT64: return (double)*(const int64_t *)cat(obj, f);
    case HL_FIELD_BOOL:
    case HL_FIELD_ENUM: return *(const int32_t *)cat(obj, f);
    default: return NAN;
    }
}

const char *hl_field_get_string(const hl_field *f, const void *obj)
{
    if (f->type == HL_FIELD_STRING)
        return (const char *)cat(obj, f);
    if (f->type == HL_FIELD_ENUM) {
        static _Thread_local char buf[32];
        if (hl_enum_name(f->enum_names, *(const int32_t *)cat(obj, f), buf, sizeof buf))
            return buf;
        return "?";
    }
    return NULL;
}

/* Number of '|'-separated names in an enum's list (at most `limit`: the walk stops there). */
static int32_t enum_count_upto(const char *names, int32_t limit)
{
    int32_t n = 1;
    for (const char *p = names; *p && n <= limit; p++)
        n += *p == '|';
    return n;
}

hl_status hl_field_check_all(const hl_field_set *set, const void *obj, hl_err *err)
{
    if (!set || !obj) /* hl_model_validate(NULL), hl_gpu_validate(NULL) */
        return hl_fail(err, HL_EINVAL, "%s: the %s is NULL", set ? set->kind : "hl_field_check_all",
                       !set ? "field set" : set->kind);
    for (int32_t i = 0; i < set->count; i++) {
        const hl_field *f = &set->fields[i];
        const char *p = (const char *)obj + f->offset;
        hl_status s = HL_OK;
        switch (f->type) {
        case HL_FIELD_DOUBLE:
        case HL_FIELD_INT64: {
            double v = f->type == HL_FIELD_DOUBLE ? *(const double *)p : (double)*(const int64_t *)p;
            if (!((v >= f->min && v <= f->max) || (v == 0 && f->zero_ok))) /* fast path; NaN fails it */
                s = check_range(set, f, v, err);
            break;
        }
        case HL_FIELD_BOOL: {
            int32_t v = *(const int32_t *)p;
            if (v != 0 && v != 1)
                s = hl_fail(err, HL_EINVAL, "%s field '%s': %d is not a boolean (0 or 1)", set->kind, f->name, (int)v);
            break;
        }
        case HL_FIELD_STRING: /* a struct filled by hand (C, an FFI) may leave no NUL: read past the member */
            if (p[f->size - 1] != '\0' && !memchr(p, '\0', (size_t)f->size)) /* last byte first: cheap */
                s = hl_fail(err, HL_EINVAL, "%s field '%s': no NUL byte within its %d bytes (a C string is expected)",
                            set->kind, f->name, (int)f->size);
            break;
        case HL_FIELD_ENUM: {
            int32_t v = *(const int32_t *)p;
            if (v < 0 || v >= enum_count_upto(f->enum_names, v))
                s = hl_fail(err, HL_EINVAL, "%s field '%s': %d is not one of %s", set->kind, f->name, (int)v,
                            names_list(f->enum_names));
            break;
        }
        default: break;
        }
        if (s)
            return s;
    }
    return HL_OK;
}
