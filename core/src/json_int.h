/* Internal JSON helpers shared by the loaders (cJSON-based). */
#ifndef HL_JSON_INT_H
#define HL_JSON_INT_H
#include <cjson/cJSON.h>

#include "hbdlab/fields.h"
#include "hbdlab/status.h"

/* Parses text that must hold one JSON object (a leading UTF-8 BOM is skipped); errors carry
 * origin:line:col. On success *root is owned by the caller (cJSON_Delete). */
hl_status hl_json_parse(const char *text, const char *origin, cJSON **root, hl_err *err);

/* Sets the descriptor field named item->string from a JSON scalar. */
hl_status hl_json_set_field(const hl_field_set *set, void *obj, const cJSON *item, hl_err *err);

/* Fails on an object (item or any object below it) with a repeated key, in time linear in
 * the number of keys; path is the JSON path shown for item. */
hl_status hl_json_check_duplicates(const cJSON *obj, const char *origin, const char *path, hl_err *err);

/* Byte offset of the first "\u0000" escape in JSON text (a NUL inside a key or string), or -1. */
int64_t hl_json_nul_escape_offset(const char *text);

#endif
