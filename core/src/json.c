/* The JSON front end: the text checks (NUL bytes, UTF-8, "\u0000" escapes), cJSON with
 * origin:line:col errors, repeated keys refused in linear time, setting descriptor fields
 * from JSON values, and the public cJSON-free reader and writer of hbdlab/json.h. Every JSON text
 * the core or the Lua binding reads goes through here. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err_int.h"
#include "fields_int.h"
#include "hbdlab/io.h"
#include "json_int.h"

/* ---- text checks ----------------------------------------------------------- */

/* Byte offset of the first "\u0000" escape in JSON text (a NUL inside a key or string), or -1. */
static int64_t nul_escape_offset(const char *text)
{
    /* a backslash only occurs inside strings in valid JSON; "\\\\" is skipped whole, so the
     * text \\u0000 (an escaped backslash, then u0000) is not mistaken for the escape */
    for (const char *p = text; *p; p++) {
        if (*p != '\\')
            continue;
        if (p[1] == 'u' && strncmp(p + 2, "0000", 4) == 0)
            return (int64_t)(p - text);
        if (p[1])
            p++;
    }
    return -1;
}

hl_status hl_json_scan(const char *text, int64_t len, const char *origin, const char **start, hl_err *err)
{
    if (!text)
        return hl_fail(err, HL_EINVAL, "%s: no JSON text", origin);
    const char *nul = memchr(text, '\0', (size_t)len);
    if (nul)
        return hl_fail(err, HL_EPARSE, "%s: JSON text contains a NUL byte at byte %lld", origin,
                       (long long)(nul - text));
    int64_t bad = hl_utf8_invalid_offset(text, len);
    if (bad >= 0)
        return hl_fail(err, HL_EPARSE, "%s: byte %lld: invalid UTF-8", origin, (long long)bad);
    const char *s = text;
    if (len >= 3 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB && (unsigned char)s[2] == 0xBF)
        s += 3; /* tolerate a UTF-8 byte-order mark */
    int64_t esc = nul_escape_offset(s);
    if (esc >= 0)
        return hl_fail(err, HL_EPARSE, "%s: byte %lld: \\u0000 (a NUL character) is not allowed in JSON text", origin,
                       (long long)(esc + (s - text)));
    *start = s;
    return HL_OK;
}

/* Depth of [ and { open before at (strings skipped): tells text nested too deep for cJSON
 * from malformed text. */
static long depth_at(const char *text, const char *at)
{
    long depth = 0;
    int in_string = 0;
    for (const char *p = text; p < at && *p; p++) {
        if (in_string) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                in_string = 0;
        } else if (*p == '"') {
            in_string = 1;
        } else if (*p == '[' || *p == '{') {
            depth++;
        } else if (*p == ']' || *p == '}') {
            depth--;
        }
    }
    return depth;
}

hl_status hl_json_read_tree(const char *text, int64_t len, const char *origin, cJSON **root, hl_err *err)
{
    const char *start = NULL;
    hl_status s = hl_json_scan(text, len, origin, &start, err);
    if (s)
        return s;
    const char *end = NULL;
    cJSON *r = cJSON_ParseWithOpts(start, &end, 1); /* nesting deeper than CJSON_NESTING_LIMIT (1,000) fails */
    if (!r) {
        const char *at = cJSON_GetErrorPtr();
        long line = 1, col = 1;
        for (const char *p = start; at && at >= start && p < at && *p; p++) {
            if (*p == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        if (at && depth_at(start, at) >= CJSON_NESTING_LIMIT)
            return hl_fail(err, HL_EPARSE, "%s:%ld:%ld: JSON nested deeper than %d levels (arrays and objects)", origin,
                           line, col, CJSON_NESTING_LIMIT);
        if (at && *at == '\\') /* cJSON stops at the backslash of an escape it cannot read */
            return hl_fail(err, HL_EPARSE,
                           "%s:%ld:%ld: malformed JSON: bad escape in a string (allowed: \\\" \\\\ \\/ \\b \\f \\n "
                           "\\r \\t, \\uXXXX with UTF-16 surrogates in pairs)",
                           origin, line, col);
        return hl_fail(err, HL_EPARSE, "%s:%ld:%ld: malformed JSON%s", origin, line, col,
                       at && !*at ? " (unexpected end of input)" : "");
    }
    *root = r;
    return HL_OK;
}

/* ---- repeated keys ----------------------------------------------------------- */

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The first key of obj that repeats an earlier one; NULL when none. *nomem is set when the
 * set could not be allocated. */
static const char *duplicate_in(const cJSON *obj, int *nomem)
{
    size_t n = 0;
    for (const cJSON *c = obj->child; c; c = c->next)
        n++;
    if (n < 2)
        return NULL;
    if (n <= 8) { /* small objects: pairwise is cheaper than a table */
        for (const cJSON *a = obj->child; a; a = a->next)
            for (const cJSON *b = a->next; b; b = b->next)
                if (a->string && b->string && strcmp(a->string, b->string) == 0)
                    return b->string;
        return NULL;
    }
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    const char **slots = calloc(cap, sizeof *slots); /* open addressing, load <= 1/2 */
    if (!slots) {
        *nomem = 1;
        return NULL;
    }
    const char *dup = NULL;
    for (const cJSON *c = obj->child; c && !dup; c = c->next) {
        if (!c->string)
            continue;
        size_t i = (size_t)hash(c->string) & (cap - 1);
        while (slots[i] && strcmp(slots[i], c->string) != 0)
            i = (i + 1) & (cap - 1);
        if (slots[i])
            dup = c->string;
        else
            slots[i] = c->string;
    }
    free(slots);
    return dup;
}

/* Depth-first over item and every object and array below it; cJSON refuses nesting deeper
 * than CJSON_NESTING_LIMIT (1,000), which bounds the recursion. */
hl_status hl_json_check_duplicates(const cJSON *item, const char *origin, const char *path, hl_err *err)
{
    if (cJSON_IsObject(item)) {
        int nomem = 0;
        const char *dup = duplicate_in(item, &nomem);
        if (nomem)
            return hl_fail(err, HL_ENOMEM, "%s: out of memory checking keys", origin);
        if (dup)
            return hl_fail(err, HL_EPARSE, "%s: %s: duplicate key '%s'", origin, path, dup);
    }
    if (cJSON_IsObject(item) || cJSON_IsArray(item))
        for (const cJSON *c = item->child; c; c = c->next) {
            hl_status s = hl_json_check_duplicates(c, origin, c->string && cJSON_IsObject(c) ? c->string : path, err);
            if (s)
                return s;
        }
    return HL_OK;
}

/* ---- whole documents ---------------------------------------------------------- */

/* hl_json_read_tree + hl_json_check_duplicates; the object check when must_be_object. */
static hl_status parse(const char *text, int64_t len, const char *origin, int must_be_object, cJSON **root, hl_err *err)
{
    cJSON *r = NULL;
    hl_status s = hl_json_read_tree(text, len, origin, &r, err);
    if (s)
        return s;
    if (must_be_object && !cJSON_IsObject(r))
        s = hl_fail(err, HL_EPARSE, "%s: expected a JSON object at the top level", origin);
    if (!s)
        s = hl_json_check_duplicates(r, origin, "$", err);
    if (s) {
        cJSON_Delete(r);
        return s;
    }
    *root = r;
    return HL_OK;
}

hl_status hl_json_parse_object(const char *text, const char *origin, cJSON **root, hl_err *err)
{
    if (!text)
        return hl_fail(err, HL_EINVAL, "%s: no JSON text", origin);
    return parse(text, (int64_t)strlen(text), origin, 1, root, err);
}

hl_status hl_json_set_field(const hl_field_set *set, void *obj, const cJSON *item, hl_err *err)
{
    const char *key = item->string;
    const hl_field *f = hl_field_find(set, key);
    if (!f && hl_field_alias_find(set, key)) /* a friendly alias (hbm_gb, ...): a number, set as its field */
        return cJSON_IsNumber(item) ? hl_field_set_number(set, obj, key, item->valuedouble, err)
                                    : hl_fail(err, HL_EINVAL, "%s field '%s': expected a number", set->kind, key);
    if (!f)
        return hl_unknown_field(set, key, err);
    if (f->type == HL_FIELD_BOOL && !cJSON_IsBool(item)) /* 0 or "false" must not be guessed at */
        return hl_fail(err, HL_EINVAL, "%s field '%s': expected true or false, got %s", set->kind, key,
                       cJSON_IsNumber(item)   ? "a number"
                       : cJSON_IsString(item) ? "a string"
                                              : "another JSON value");
    if (cJSON_IsBool(item) && f->type != HL_FIELD_BOOL) /* true must not become 1 sequence */
        return hl_fail(err, HL_EINVAL, "%s field '%s': expected a %s, got %s", set->kind, key,
                       f->type == HL_FIELD_STRING || f->type == HL_FIELD_ENUM ? "string" : "number",
                       cJSON_IsTrue(item) ? "true" : "false");
    if (cJSON_IsNumber(item))
        return hl_field_set_number(set, obj, key, item->valuedouble, err);
    if (cJSON_IsBool(item))
        return hl_field_set_number(set, obj, key, cJSON_IsTrue(item) ? 1 : 0, err);
    if (cJSON_IsString(item))
        return hl_field_set_string(set, obj, key, item->valuestring, err);
    if (cJSON_IsNull(item) && f->zero_ok)
        return hl_field_set_number(set, obj, key, 0, err);
    return hl_fail(err, HL_EINVAL, "%s field '%s': expected a %s, got %s", set->kind, key,
                   f->type == HL_FIELD_STRING || f->type == HL_FIELD_ENUM ? "string" : "number",
                   cJSON_IsObject(item)  ? "an object"
                   : cJSON_IsArray(item) ? "an array"
                                         : "null");
}

/* ---- the public reader (hbdlab/json.h): an hl_json is a cJSON node ------------- */

static const cJSON *node(const hl_json *v) { return (const cJSON *)(const void *)v; }
static const hl_json *value(const cJSON *c) { return (const hl_json *)(const void *)c; }

hl_status hl_json_parse(const char *text, int64_t len, const char *origin, hl_json **root, hl_err *err)
{
    if (!root)
        return hl_fail(err, HL_EINVAL, "hl_json_parse: the output is NULL");
    cJSON *r = NULL;
    origin = origin ? origin : "json";
    if (!text || len < 0)
        return hl_fail(err, HL_EINVAL, "%s: no JSON text", origin);
    /* the checks and cJSON read up to a NUL: text[0..len) need not end in one (an FFI caller's
     * buffer), so a NUL-terminated copy is parsed; the tree owns copies of its strings */
    char *copy = malloc((size_t)len + 1);
    if (!copy)
        return hl_fail(err, HL_ENOMEM, "%s: out of memory for %lld bytes of JSON text", origin, (long long)len);
    memcpy(copy, text, (size_t)len);
    copy[len] = '\0';
    hl_status s = parse(copy, len, origin, 0, &r, err);
    free(copy);
    if (!s)
        *root = (hl_json *)(void *)r;
    return s;
}

void hl_json_free(hl_json *root) { cJSON_Delete((cJSON *)(void *)root); }

hl_json_kind hl_json_kind_of(const hl_json *v)
{
    const cJSON *c = node(v);
    return cJSON_IsBool(c)                       ? HL_JSON_BOOL
           : cJSON_IsNumber(c) || cJSON_IsRaw(c) ? HL_JSON_NUMBER /* raw: a number made by the writer */
           : cJSON_IsString(c)                   ? HL_JSON_STRING
           : cJSON_IsArray(c)                    ? HL_JSON_ARRAY
           : cJSON_IsObject(c)                   ? HL_JSON_OBJECT
                                                 : HL_JSON_NULL;
}

int32_t hl_json_true(const hl_json *v) { return cJSON_IsTrue(node(v)) ? 1 : 0; }
double hl_json_number(const hl_json *v)
{
    const cJSON *c = node(v);
    return cJSON_IsNumber(c) ? c->valuedouble : cJSON_IsRaw(c) ? strtod(c->valuestring, NULL) : 0;
}
const char *hl_json_string(const hl_json *v) { return cJSON_IsString(node(v)) ? node(v)->valuestring : NULL; }

int32_t hl_json_count(const hl_json *v)
{
    const cJSON *c = node(v);
    return cJSON_IsArray(c) || cJSON_IsObject(c) ? (int32_t)cJSON_GetArraySize(c) : 0;
}

const hl_json *hl_json_first(const hl_json *v)
{
    const cJSON *c = node(v);
    return cJSON_IsArray(c) || cJSON_IsObject(c) ? value(c->child) : NULL;
}

const hl_json *hl_json_next(const hl_json *v) { return v ? value(node(v)->next) : NULL; }

/* cJSON sets ->string on object members only */
const char *hl_json_key(const hl_json *v) { return v ? node(v)->string : NULL; }

/* ---- the public writer ------------------------------------------------------------ */

static hl_json *wrap(cJSON *c) { return (hl_json *)(void *)c; }

hl_json *hl_json_new(hl_json_kind kind)
{
    return wrap(kind == HL_JSON_ARRAY    ? cJSON_CreateArray()
                : kind == HL_JSON_OBJECT ? cJSON_CreateObject()
                                         : cJSON_CreateNull());
}

hl_json *hl_json_new_bool(int32_t v) { return wrap(cJSON_CreateBool(v != 0)); }

hl_json *hl_json_new_number(double v)
{
    if (!isfinite(v))
        return wrap(cJSON_CreateNull());
    /* cJSON's own printer accepts a tolerance, which loses the last bits: printed here */
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (!strpbrk(buf, ".eEn"))
        strcat(buf, ".0"); /* keep it a float when read back */
    return wrap(cJSON_CreateRaw(buf));
}

hl_json *hl_json_new_integer(int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    return wrap(cJSON_CreateRaw(buf));
}

hl_json *hl_json_new_string(const char *s) { return wrap(cJSON_CreateString(s)); }

int32_t hl_json_add(hl_json *parent, const char *key, hl_json *v)
{
    cJSON *p = (cJSON *)(void *)parent, *c = (cJSON *)(void *)v;
    if (c && p && (key ? cJSON_AddItemToObject(p, key, c) : cJSON_AddItemToArray(p, c)))
        return 1;
    cJSON_Delete(c);
    return 0;
}

char *hl_json_print(const hl_json *v, int32_t pretty)
{
    return pretty ? cJSON_Print(node(v)) : cJSON_PrintUnformatted(node(v));
}

void hl_json_free_text(char *text) { cJSON_free(text); }
