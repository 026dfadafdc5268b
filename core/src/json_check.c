/* Structural checks cJSON does not make: repeated keys (linear time, a hash set per
 * object) and "\u0000" escapes (a C string would end there: "batch\u0000x" would
 * read as "batch"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err_int.h"
#include "json_int.h"

int64_t hl_json_nul_escape_offset(const char *text)
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
static hl_status check_tree(const cJSON *item, const char *origin, const char *path, hl_err *err)
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
            hl_status s = check_tree(c, origin, c->string && cJSON_IsObject(c) ? c->string : path, err);
            if (s)
                return s;
        }
    return HL_OK;
}

hl_status hl_json_check_duplicates(const cJSON *item, const char *origin, const char *path, hl_err *err)
{
    return check_tree(item, origin, path, err);
}
