/* The JSON front end inside the core (cJSON trees); core/src/json.c. The public, cJSON-free
 * face of the same parser is hbdlab/json.h. */
#ifndef HL_JSON_INT_H
#define HL_JSON_INT_H
#include <cjson/cJSON.h>

#include "hbdlab/fields.h"
#include "hbdlab/json.h"
#include "hbdlab/status.h"

/* The text checks made before parsing text[0..len) (a C string: text[len] is its NUL): no NUL
 * byte inside, valid UTF-8, no "\u0000" escape; *start is set past a UTF-8 byte-order mark. */
hl_status hl_json_scan(const char *text, int64_t len, const char *origin, const char **start, hl_err *err);

/* hl_json_scan, then cJSON; errors carry origin:line:col. Repeated keys are NOT checked
 * (hl_json_check_duplicates): a caller naming them its own way (JSONL traces) calls it itself. */
hl_status hl_json_read_tree(const char *text, int64_t len, const char *origin, cJSON **root, hl_err *err);

/* Fails on an object (item or any object below it) with a repeated key, in time linear in
 * the number of keys; path is the JSON path shown for item. */
hl_status hl_json_check_duplicates(const cJSON *item, const char *origin, const char *path, hl_err *err);

/* Every rule of the front end (hbdlab/json.h) on text (a C string) that must hold one JSON
 * object. On success *root is owned by the caller (cJSON_Delete). */
hl_status hl_json_parse_object(const char *text, const char *origin, cJSON **root, hl_err *err);

/* Sets the descriptor field named item->string from a JSON scalar: a boolean field takes JSON
 * true/false only, null sets a field that allows 0 to 0, arrays and objects are refused. */
hl_status hl_json_set_field(const hl_field_set *set, void *obj, const cJSON *item, hl_err *err);

#endif
