/* The public JSON front end (hbdlab/json.h): the tree it hands out, and each rule refused with
 * a message naming where. Expected values are read off the literal inputs. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "hbdlab/hbdlab.h"

static hl_status parse(const char *text, hl_json **root, hl_err *e)
{
    return hl_json_parse(text, (int64_t)strlen(text), "t.json", root, e);
}

static void test_tree(void **state)
{
    (void)state;
    hl_err e;
    hl_json *root = NULL;
    const char *text = "{\"b\": [1, 2.5, \"x\", true, false, null], \"a\": {}, \"s\": \"h\\u00e9\"}";
    assert_ok(parse(text, &root, &e), &e);
    assert_int_equal(hl_json_kind_of(root), HL_JSON_OBJECT);
    assert_int_equal(hl_json_count(root), 3);
    assert_null(hl_json_key(root));
    /* members in the order of the text: b, a, s */
    const hl_json *b = hl_json_first(root);
    assert_string_equal(hl_json_key(b), "b");
    assert_int_equal(hl_json_kind_of(b), HL_JSON_ARRAY);
    assert_int_equal(hl_json_count(b), 6);
    const hl_json *v = hl_json_first(b);
    assert_int_equal(hl_json_kind_of(v), HL_JSON_NUMBER);
    assert_true(hl_json_number(v) == 1.0);
    assert_null(hl_json_key(v)); /* array elements have no key */
    v = hl_json_next(v);
    assert_true(hl_json_number(v) == 2.5);
    v = hl_json_next(v);
    assert_string_equal(hl_json_string(v), "x");
    assert_true(hl_json_number(v) == 0); /* not a number */
    v = hl_json_next(v);
    assert_int_equal(hl_json_kind_of(v), HL_JSON_BOOL);
    assert_int_equal(hl_json_true(v), 1);
    v = hl_json_next(v);
    assert_int_equal(hl_json_kind_of(v), HL_JSON_BOOL);
    assert_int_equal(hl_json_true(v), 0);
    v = hl_json_next(v);
    assert_int_equal(hl_json_kind_of(v), HL_JSON_NULL);
    assert_null(hl_json_next(v));
    const hl_json *a = hl_json_next(b);
    assert_string_equal(hl_json_key(a), "a");
    assert_int_equal(hl_json_kind_of(a), HL_JSON_OBJECT);
    assert_null(hl_json_first(a));
    const hl_json *s = hl_json_next(a);
    assert_string_equal(hl_json_string(s), "h\xc3\xa9"); /* U+00E9 is C3 A9 in UTF-8 */
    assert_null(hl_json_string(a));
    hl_json_free(root);

    /* any value at the top level, and a UTF-8 byte-order mark skipped */
    assert_ok(parse("\xEF\xBB\xBF 42", &root, &e), &e);
    assert_true(hl_json_number(root) == 42);
    assert_null(hl_json_first(root));
    hl_json_free(root);
}

static void test_refused(void **state)
{
    (void)state;
    hl_err e;
    hl_json *root = NULL;
    /* "\u0000" at byte 2 of the text ({ at 0, " at 1, \ at 2) */
    assert_fails_with(parse("{\"\\u0000k\": 1}", &root, &e), HL_EPARSE, &e,
                      "t.json: byte 2: \\u0000 (a NUL character) is not allowed");
    /* an escaped backslash followed by u0000 is text, not the escape */
    assert_ok(parse("{\"k\": \"\\\\u0000\"}", &root, &e), &e);
    hl_json_free(root);
    /* byte 7 is 0xFF: {"k": " is 7 bytes */
    assert_fails_with(parse("{\"k\": \"\xff\"}", &root, &e), HL_EPARSE, &e, "t.json: byte 7: invalid UTF-8");
    /* a NUL byte inside len: {"k" is 4 bytes */
    assert_fails_with(hl_json_parse("{\"k\"\0: 1}", 9, "t.json", &root, &e), HL_EPARSE, &e,
                      "contains a NUL byte at byte 4");
    /* line 2, column 8: the second ',' of `  "b": ,` */
    assert_fails_with(parse("{\"a\": 1,\n  \"b\": ,}", &root, &e), HL_EPARSE, &e, "t.json:2:8: malformed JSON");
    assert_fails_with(parse("{\"a\": ", &root, &e), HL_EPARSE, &e, "(unexpected end of input)");
    assert_fails_with(parse("{\"a\": {\"x\": 1, \"x\": 2}}", &root, &e), HL_EPARSE, &e, "a: duplicate key 'x'");
    /* 40 distinct keys then a repeat of k17: the hashed (linear-time) path */
    char big[1024] = "{";
    for (int i = 0; i < 40; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "\"k%d\": %d, ", i, i);
    strcat(big, "\"k17\": 0}");
    assert_fails_with(parse(big, &root, &e), HL_EPARSE, &e, "$: duplicate key 'k17'");
    assert_fails_with(hl_json_parse(NULL, 0, "t.json", &root, &e), HL_EINVAL, &e, "t.json: no JSON text");
}

static void test_write(void **state)
{
    (void)state;
    hl_json *o = hl_json_new(HL_JSON_OBJECT);
    hl_json *a = hl_json_new(HL_JSON_ARRAY);
    assert_int_equal(hl_json_add(a, NULL, hl_json_new_number(0.1)), 1);
    assert_int_equal(hl_json_add(a, NULL, hl_json_new_number(2.0)), 1);
    assert_int_equal(hl_json_add(a, NULL, hl_json_new_number(1.0 / 0.0)), 1);
    assert_int_equal(hl_json_add(a, NULL, hl_json_new_integer(-9007199254740993LL)), 1);
    assert_int_equal(hl_json_add(o, "a", a), 1);
    assert_int_equal(hl_json_add(o, "s", hl_json_new_string("q\"")), 1);
    assert_int_equal(hl_json_add(o, "t", hl_json_new_bool(1)), 1);
    assert_int_equal(hl_json_add(o, "x", NULL), 0); /* nothing to add */
    /* 0.1 reads back from 15 digits; 2.0 gets ".0" to stay a float; infinity is null */
    char *text = hl_json_print(o, 0);
    assert_string_equal(text, "{\"a\":[0.1,2.0,null,-9007199254740993],\"s\":\"q\\\"\",\"t\":true}");
    hl_json_free_text(text);
    /* a written tree reads like a parsed one: numbers are numbers */
    const hl_json *first = hl_json_first(hl_json_first(o));
    assert_int_equal(hl_json_kind_of(first), HL_JSON_NUMBER);
    assert_true(hl_json_number(first) == 0.1);
    hl_json_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tree), cmocka_unit_test(test_refused),
                                       cmocka_unit_test(test_write)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
