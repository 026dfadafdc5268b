/* The JSON front end (core/src/json.c): every JSON text hbdlab reads goes through it
 * (presets and object files, Hugging Face configs, `hbdlab eval`/serve configs and
 * calibration specs via json.decode in Lua, JSONL traces), so the rules are the same
 * everywhere:
 *   - the text is UTF-8 (the byte offset of the first invalid sequence is named); a leading
 *     byte-order mark is skipped; it holds no NUL byte;
 *   - no "\u0000" escape (a C string would end there: a key "batch\u0000x" would read as "batch");
 *   - no object repeats a key (checked in time linear in the number of keys);
 *   - malformed text is named by origin:line:column; nesting is limited to 1,000 levels.
 * Booleans are JSON true/false only (a 0 or "false" given for a boolean field is refused when
 * the value is set, see presets.h). A parsed value is an opaque tree read through the
 * accessors below; the caller owns the root and frees it with hl_json_free.
 * JSON text is written here too: a tree of new values (hl_json_new_*, hl_json_add) printed by
 * hl_json_print, numbers in the shortest form that reads back exactly. */
#ifndef HBDLAB_JSON_H
#define HBDLAB_JSON_H
#include <stdint.h>
#include "hbdlab/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A JSON value (a node of a parsed tree): opaque. */
typedef struct hl_json hl_json;

typedef enum hl_json_kind {
    HL_JSON_NULL = 0,
    HL_JSON_BOOL = 1,
    HL_JSON_NUMBER = 2,
    HL_JSON_STRING = 3,
    HL_JSON_ARRAY = 4,
    HL_JSON_OBJECT = 5
} hl_json_kind;

/* Parses text[0..len) holding one JSON value of any kind under the rules above (nothing at or
 * after text[len] is read; it need not be a NUL); origin (a file name) starts every error. On
 * success *root is the caller's, freed with hl_json_free. */
hl_status hl_json_parse(const char *text, int64_t len, const char *origin, hl_json **root, hl_err *err);
void hl_json_free(hl_json *root);

/* The kind of a value (v not NULL), of a parsed tree or one being written. */
hl_json_kind hl_json_kind_of(const hl_json *v);
/* 1 for true, 0 for false or a value that is no boolean. */
int32_t hl_json_true(const hl_json *v);
/* A number's value; 0 for a value that is no number. */
double hl_json_number(const hl_json *v);
/* A string's text (NUL-terminated, owned by the tree); NULL for a value that is no string. */
const char *hl_json_string(const hl_json *v);
/* Number of elements of an array or members of an object; 0 for other values. */
int32_t hl_json_count(const hl_json *v);
/* First element (array) or member (object), NULL when empty or not a container; hl_json_next
 * steps to the following one (NULL after the last, or given NULL), in the order of the text. */
const hl_json *hl_json_first(const hl_json *v);
const hl_json *hl_json_next(const hl_json *v);
/* The key of an object member (owned by the tree); NULL for an array element, the root or NULL. */
const char *hl_json_key(const hl_json *v);

/* ---- writing ---- */

/* New values, owned by the caller until added to a parent; NULL when out of memory.
 * hl_json_new makes an empty array or object, or null (any other kind). A number that is
 * not finite becomes null; a finite one prints in the shortest of %.15g, %.16g, %.17g that
 * reads back exactly, with ".0" added when it would read back as an integer. */
hl_json *hl_json_new(hl_json_kind kind);
hl_json *hl_json_new_bool(int32_t v);
hl_json *hl_json_new_number(double v);
hl_json *hl_json_new_integer(int64_t v);
hl_json *hl_json_new_string(const char *s);

/* Adds v to parent (an array when key is NULL, else an object under key; keys are not checked
 * for repeats) and hands v to it; 1 on success, 0 when v is NULL or memory ran out (v freed). */
int32_t hl_json_add(hl_json *parent, const char *key, hl_json *v);

/* v as JSON text (indented with tabs when pretty), NUL-terminated; NULL when out of memory.
 * Freed with hl_json_free_text. */
char *hl_json_print(const hl_json *v, int32_t pretty);
void hl_json_free_text(char *text);

#ifdef __cplusplus
}
#endif
#endif
