/* libFuzzer target: the JSON front end (hbdlab/json.h, what json.decode in Lua and every
 * loader use) on any bytes, NUL bytes included; the tree is walked whole, and every string and
 * key goes through the CSV writer (hbdlab/csv.h), whose cell must read back as the string
 * (RFC 4180: unquoted cells hold no , " CR LF; quoted ones have their quotes doubled). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"
#include "hbdlab/hbdlab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts unless csv->text is exactly one cell holding s[0..n). */
static void check_cell(const char *s, size_t n)
{
    hl_csv c;
    hl_csv_init(&c);
    hl_csv_bytes(&c, s, (int64_t)n);
    if (c.failed) {
        hl_csv_free(&c);
        return;
    }
    const char *t = c.text ? c.text : "";
    size_t len = (size_t)c.len, k = 0;
    if (hl_csv_formula_start(s, (int64_t)n)) { /* written "'..." : the apostrophe, then the cell */
        if (len < 3 || t[0] != '"' || t[1] != '\'')
            abort();
        t++;
        len--;
        if (t[0] != '\'')
            abort();
        t++;
        len--;
        for (size_t i = 0; i + 1 < len; i++, k++) {
            if (t[i] == '"' && t[++i] != '"')
                abort();
            if (k >= n || t[i] != s[k])
                abort();
        }
        if (t[len - 1] != '"')
            abort();
    } else if (len && t[0] == '"') {
        if (len < 2 || t[len - 1] != '"')
            abort();
        for (size_t i = 1; i + 1 < len; i++, k++) {
            if (t[i] == '"' && t[++i] != '"')
                abort(); /* a lone quote inside */
            if (k >= n || t[i] != s[k])
                abort();
        }
    } else {
        for (; k < len; k++)
            if (t[k] != s[k] || t[k] == ',' || t[k] == '"' || t[k] == '\r' || t[k] == '\n')
                abort();
    }
    if (k != n)
        abort();
    hl_csv_free(&c);
}

static void walk(const hl_json *v, int depth)
{
    if (depth > 2000)
        abort(); /* the parser limits nesting to 1,000 */
    const char *key = hl_json_key(v);
    if (key)
        check_cell(key, strlen(key));
    switch (hl_json_kind_of(v)) {
    case HL_JSON_STRING: check_cell(hl_json_string(v), strlen(hl_json_string(v))); break;
    case HL_JSON_NUMBER: (void)hl_json_number(v); break;
    case HL_JSON_BOOL: (void)hl_json_true(v); break;
    case HL_JSON_ARRAY:
    case HL_JSON_OBJECT: {
        int32_t n = 0;
        for (const hl_json *c = hl_json_first(v); c; c = hl_json_next(c), n++)
            walk(c, depth + 1);
        if (n != hl_json_count(v))
            abort();
        break;
    }
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    hl_err err;
    hl_json *root = NULL;
    if (hl_json_parse(text, (int64_t)size, "fuzz.json", &root, &err) == HL_OK) {
        walk(root, 0);
        hl_json_free(root);
    } else if (!err.msg[0]) {
        abort(); /* a failure always says why */
    }
    check_cell(text, size); /* any bytes as one CSV cell */
    free(text);
    return 0;
}
