/* Serving workloads: a seeded RNG, token-length distributions, arrival
 * processes and the trace parser (CSV or JSON lines). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "err_int.h"
#include "hbdlab/fields.h"
#include "json_int.h"
#include "serve_int.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void hl_rng_seed(hl_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

/* One draw of a length (the trace value when kind is trace). */
static double draw(hl_rng *r, const hl_len_dist *d, double trace_value)
{
    switch (d->kind) {
    case HL_LEN_UNIFORM: { /* floor of x in [0, 2^63) is its truncation: (double)(int64_t)x, exactly */
        double x = hl_rng_uniform(r) * (d->hi - d->lo + 1);
        return d->lo + (x >= 0 && x < 0x1p63 ? (double)(int64_t)x : floor(x));
    }
    case HL_LEN_NORMAL: { /* Box-Muller */
        double u1 = hl_rng_uniform(r), u2 = hl_rng_uniform(r);
        double z = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2) /* 2 pi */;
        return fmin(d->hi, fmax(d->lo, round(d->mean + d->std * z)));
    }
    case HL_LEN_TRACE: return trace_value;
    default: return d->mean;
    }
}

/* The largest |z| of one Box-Muller draw above: u1 = hl_rng_uniform >= 2^-54 (its least value,
 * (0 + 0.5) 2^-53), so sqrt(-2 ln u1) <= sqrt(108 ln 2) = 8.65216, and |cos| <= 1; 8.66 leaves
 * 0.0078 for the roundings of log, sqrt and the product (each within an ulp, ~1e-15 relative). */
#define NORMAL_Z_MAX 8.66

void hl_len_draw_range(const hl_len_dist *d, double *lo, double *hi)
{
    switch (d->kind) {
    case HL_LEN_UNIFORM: /* lo + floor(u (hi - lo + 1)): u < 1, but the product may round up to hi + 1 */
        *lo = d->lo, *hi = d->hi + 1;
        return;
    case HL_LEN_NORMAL: {
        /* x = mean + std z within mean -/+ 8.6522 std (and an ulp of mean): round(x) is at least
         * floor(mean - 8.66 std) - 1 and at most ceil(mean + 8.66 std) + 1, the clamp to [lo, hi] after */
        double below = floor(d->mean - NORMAL_Z_MAX * d->std) - 1, above = ceil(d->mean + NORMAL_Z_MAX * d->std) + 1;
        *lo = below > d->lo ? below : d->lo;
        *hi = above < d->hi ? above : d->hi;
        return;
    }
    default: *lo = *hi = d->mean; return;
    }
}

static int by_arrival(const void *a, const void *b)
{
    double x = ((const hl_trace_req *)a)->arrival_s, y = ((const hl_trace_req *)b)->arrival_s;
    return x < y ? -1 : x > y;
}

/* A trace with content columns in arrival order: indices sorted by (arrival, row), a total
 * order, so the requests and their content come out alike. */
static _Thread_local const hl_trace_req *order_of;
static int by_arrival_row(const void *a, const void *b)
{
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    double x = order_of[i].arrival_s, y = order_of[j].arrival_s;
    return x < y ? -1 : x > y ? 1 : (i > j) - (i < j);
}

static int64_t *arrival_order(const hl_serve_cfg *c)
{
    int64_t *idx = malloc(sizeof *idx * (size_t)(c->n_trace > 0 ? c->n_trace : 1));
    if (!idx)
        return NULL;
    for (int64_t i = 0; i < c->n_trace; i++)
        idx[i] = i;
    order_of = c->trace;
    qsort(idx, (size_t)c->n_trace, sizeof *idx, by_arrival_row);
    return idx;
}

hl_status hl_serve_make_content(const hl_serve_cfg *c, int64_t n, hl_trace_content **out, hl_err *err)
{
    *out = NULL;
    if (c->arrival != HL_ARRIVAL_TRACE || !c->trace_content)
        return HL_OK;
    int64_t *idx = arrival_order(c);
    hl_trace_content *k = malloc(sizeof *k * (size_t)(n > 0 ? n : 1));
    if (!idx || !k) {
        free(idx);
        free(k);
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for the trace's content");
    }
    for (int64_t i = 0; i < n; i++)
        k[i] = c->trace_content[idx[i]];
    free(idx);
    *out = k;
    return HL_OK;
}

void hl_serve_gen_init(hl_serve_gen *g, const hl_serve_cfg *c)
{
    hl_rng_seed(&g->rng, c->seed);
    g->t = 0;
    g->i = 0;
    g->c = c;
}

void hl_serve_gen_next(hl_serve_gen *g, hl_trace_req *q)
{
    const hl_serve_cfg *c = g->c;
    if (c->arrival != HL_ARRIVAL_TRACE) {
        if (c->arrival == HL_ARRIVAL_POISSON)
            g->t += -log(hl_rng_uniform(&g->rng)) / c->rate;
        else if (c->arrival == HL_ARRIVAL_CONSTANT)
            g->t = (double)g->i / c->rate;
        q->arrival_s = c->arrival == HL_ARRIVAL_CONCURRENCY ? 0 : g->t;
    }
    q->input = draw(&g->rng, &c->input, q->input);
    q->output = draw(&g->rng, &c->output, q->output);
    g->i++;
}

hl_status hl_serve_make_requests(const hl_serve_cfg *c, hl_trace_req **out, int64_t *n, hl_err *err)
{
    int trace = c->arrival == HL_ARRIVAL_TRACE;
    int64_t cnt = trace ? (c->requests > 0 && c->requests < c->n_trace ? c->requests : c->n_trace) : c->requests;
    hl_trace_req *q = malloc(sizeof *q * (size_t)cnt);
    if (!q)
        return hl_fail(err, HL_ENOMEM, "serve: out of memory for %lld requests", (long long)cnt);
    hl_rng r;
    hl_rng_seed(&r, c->seed);
    if (trace && c->trace_content) { /* in the order of hl_serve_make_content */
        int64_t *idx = arrival_order(c);
        if (!idx) {
            free(q);
            return hl_fail(err, HL_ENOMEM, "serve: out of memory for the trace");
        }
        for (int64_t i = 0; i < cnt; i++)
            q[i] = c->trace[idx[i]];
        free(idx);
    } else if (trace) { /* the first `cnt` requests by arrival */
        hl_trace_req *all = cnt < c->n_trace ? malloc(sizeof *all * (size_t)c->n_trace) : q;
        if (!all) {
            free(q);
            return hl_fail(err, HL_ENOMEM, "serve: out of memory for the trace");
        }
        memcpy(all, c->trace, sizeof *all * (size_t)c->n_trace);
        qsort(all, (size_t)c->n_trace, sizeof *all, by_arrival);
        if (all != q) {
            memcpy(q, all, sizeof *q * (size_t)cnt);
            free(all);
        }
    }
    hl_serve_gen g = {r, 0, 0, c};
    for (int64_t i = 0; i < cnt; i++)
        hl_serve_gen_next(&g, &q[i]);
    *out = q;
    *n = cnt;
    return HL_OK;
}

/* ---- trace parsing ---------------------------------------------------------------- */

/* Parses a number at *p (after blanks); advances *p. 0 on failure. */
static int parse_num(const char **p, const char *end, double *v)
{
    const char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    char buf[64];
    size_t k = 0;
    while (s + k < end && k < sizeof buf - 1 && (isdigit((unsigned char)s[k]) || strchr("+-.eE", s[k])))
        k++;
    if (k == 0 || k == sizeof buf - 1)
        return 0;
    memcpy(buf, s, k);
    buf[k] = '\0';
    char *e;
    *v = strtod(buf, &e);
    if (*e != '\0' || !isfinite(*v))
        return 0;
    *p = s + k;
    return 1;
}

/* The columns of a trace: arrival, input, output (required), then the optional content columns. */
enum { COL_REQUIRED = 3, COL_ALL = 7 };

/* The names a trace column is read under, per column (json_line's keys are among them). */
static const char *const col_names[COL_ALL][3] = {{"arrival_s", "arrival", "timestamp"},
                                                  {"input", "input_tokens", "prompt_tokens"},
                                                  {"output", "output_tokens", "completion_tokens"},
                                                  {"session", "session_id", "conversation"},
                                                  {"turn", "turn", "turn"},
                                                  {"prefix", "prefix_id", "prefix_id"},
                                                  {"prefix_len", "prefix_tokens", "prefix_tokens"}};

/* A CSV header field [*s, *s + *n) without its surrounding spaces, quotes and a trailing CR. */
static void trim_name(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '"')) {
        (*s)++;
        (*n)--;
    }
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '"' || (*s)[*n - 1] == '\r'))
        (*n)--;
}

/* Column of a CSV header name: 0 arrival, 1 input, 2 output, 3 session, 4 turn, 5 prefix,
 * 6 prefix_len, -1 other. */
static int column_of(const char *s, size_t n)
{
    trim_name(&s, &n);
    for (int c = 0; c < COL_ALL; c++)
        for (int k = 0; k < 3; k++)
            if (strlen(col_names[c][k]) == n && strncmp(s, col_names[c][k], n) == 0)
                return c;
    return -1;
}

/* Adds the column or key name[0..n) that the parser does not read to the ", "-separated list
 * unread[0..cap) once ("'user', 'sesion' (did you mean 'session'?)"; cut at 40 bytes, control
 * bytes shown as '?'); a full list ends in "...". No-op when unread is NULL. */
static void note_unread(char *unread, size_t cap, const char *name, size_t n)
{
    if (!unread)
        return;
    char key[48];
    size_t k = 0;
    key[k++] = '\'';
    for (size_t i = 0; i < n && i < 40; i++)
        key[k++] = (unsigned char)name[i] < 32 || name[i] == 127 ? '?' : name[i];
    key[k++] = '\'';
    key[k] = '\0';
    if (strstr(unread, key))
        return;
    char bare[48];
    memcpy(bare, key + 1, k - 2);
    bare[k - 2] = '\0';
    const char *near = NULL;
    int best = (int)strlen(bare) / 3 + 2; /* hl_field_suggest's rule: at most len/3 + 1 edits */
    for (int c = 0; c < COL_ALL; c++)     /* (a repeated name never wins: strictly nearer only) */
        for (int i = 0; i < 3; i++) {
            int d = hl_edit_distance(bare, col_names[c][i]);
            if (d < best) {
                best = d;
                near = col_names[c][i];
            }
        }
    size_t used = strlen(unread);
    if (used >= 3 && strcmp(unread + used - 3, "...") == 0)
        return;
    char item[128];
    snprintf(item, sizeof item, "%s%s%s%s%s", used ? ", " : "", key, near ? " (did you mean '" : "", near ? near : "",
             near ? "'?)" : "");
    if (used + strlen(item) + 5 < cap)
        memcpy(unread + used, item, strlen(item) + 1);
    else if (used + 5 < cap)
        memcpy(unread + used, used ? ", ..." : "...", used ? 6 : 4);
}

/* JSON line [s, e): an object read by the JSON front end (json.c: UTF-8, no NUL, no "\u0000";
 * a string value "input" or a key inside a string is no field; a repeated key is refused) whose
 * arrival_s|arrival, input|input_tokens and output|output_tokens are numbers. 1 and v[0..2]
 * filled, or 0 with *why set (it may point into *detail). */
static int json_line(const char *s, const char *e, double v[COL_ALL], const char **why, hl_err *detail, char *unread,
                     size_t unread_cap)
{
    static const char *const keys[COL_ALL][2] = {
        {"arrival_s", "arrival"}, {"input", "input_tokens"}, {"output", "output_tokens"},    {"session", "session_id"},
        {"turn", "turn"},         {"prefix", "prefix_id"},   {"prefix_len", "prefix_tokens"}};
    char *buf = malloc((size_t)(e - s) + 1);
    if (!buf) {
        *why = "out of memory";
        return 0;
    }
    memcpy(buf, s, (size_t)(e - s));
    buf[e - s] = '\0';
    cJSON *o = NULL;
    const char *start;
    int ok = 0;
    if (hl_json_scan(buf, (int64_t)(e - s), "the line", &start, detail) != HL_OK)
        *why = detail->msg; /* a NUL byte, invalid UTF-8 or a \u0000 */
    else if (hl_json_read_tree(buf, (int64_t)(e - s), "the line", &o, detail) != HL_OK || !cJSON_IsObject(o))
        *why = "not a JSON object";
    else if (hl_json_check_duplicates(o, "", "", detail) != HL_OK)
        *why = "a key is repeated";
    else
        ok = 1;
    free(buf);
    for (const cJSON *x = ok && unread ? o->child : NULL; x; x = x->next) {
        int known = 0;
        for (int c = 0; c < COL_ALL && !known; c++)
            known = strcmp(x->string, keys[c][0]) == 0 || strcmp(x->string, keys[c][1]) == 0;
        if (!known)
            note_unread(unread, unread_cap, x->string, strlen(x->string));
    }
    for (int c = 0; ok && c < COL_ALL; c++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, keys[c][0]);
        const cJSON *b = strcmp(keys[c][1], keys[c][0]) ? cJSON_GetObjectItemCaseSensitive(o, keys[c][1]) : NULL;
        const cJSON *x = a ? a : b;
        if (!x && c >= COL_REQUIRED)
            continue; /* an optional column left out: 0 */
        if (!x || (a && b) || !cJSON_IsNumber(x) || !isfinite(x->valuedouble)) {
            ok = 0; /* the field named: "session": "a" (a string id) read as "a field is missing or not a number" */
            const char *name = a ? keys[c][0] : b ? keys[c][1] : keys[c][0];
            if (a && b)
                snprintf(detail->msg, sizeof detail->msg, "field '%s' is given under two names ('%s')", keys[c][0],
                         keys[c][1]);
            else if (!x)
                snprintf(detail->msg, sizeof detail->msg, "field '%s' is missing", name);
            else
                snprintf(detail->msg, sizeof detail->msg, "field '%s' is %s, not a finite number%s", name,
                         cJSON_IsString(x)   ? "a string"
                         : cJSON_IsBool(x)   ? "a boolean"
                         : cJSON_IsNull(x)   ? "null"
                         : cJSON_IsArray(x)  ? "an array"
                         : cJSON_IsObject(x) ? "an object"
                                             : "out of range",
                         c >= COL_REQUIRED && c != 6 ? " (ids are whole numbers: map string ids to numbers)" : "");
            *why = detail->msg;
        } else {
            v[c] = x->valuedouble;
        }
    }
    cJSON_Delete(o);
    return ok;
}

hl_status hl_serve_trace_parse(const char *text, size_t len, const char *origin, hl_trace_req **out, int64_t *n,
                               hl_err *err)
{
    return hl_serve_trace_parse_content(text, len, origin, out, NULL, n, err);
}

hl_status hl_serve_trace_parse_content(const char *text, size_t len, const char *origin, hl_trace_req **out,
                                       const hl_trace_content **content, int64_t *n, hl_err *err)
{
    if (!out || !n || (!text && len > 0))
        return hl_fail(err, HL_EINVAL, "hl_serve_trace_parse: the %s is NULL", !out ? "output" : !n ? "count" : "text");
    return hl_serve_trace_parse_unread(text, len, origin, out, content, n, NULL, 0, err);
}

hl_status hl_serve_trace_parse_unread(const char *text, size_t len, const char *origin, hl_trace_req **out,
                                      const hl_trace_content **content, int64_t *n, char *unread, size_t unread_cap,
                                      hl_err *err)
{
    if (unread && unread_cap)
        unread[0] = '\0';
    *out = NULL;
    *n = 0;
    if (content)
        *content = NULL;
    const char *o = origin ? origin : "trace";
    size_t cap = 1024;
    int64_t cnt = 0;
    hl_trace_req *q = malloc(sizeof *q * cap);
    hl_trace_content *qc = NULL; /* made at the first row that gives a content column (when asked for) */
    if (!q)
        return hl_fail(err, HL_ENOMEM, "%s: out of memory", o);
    int cols[64], ncols = 0, header = 0, jsonl = -1;
    const char *p = text, *end = text + len;
    if (len >= 3 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF)
        p += 3; /* a UTF-8 byte-order mark (spreadsheets write one) */
    long line = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        line++;
        const char *s = p;
        p = eol ? eol + 1 : end;
        while (s < le && (*s == ' ' || *s == '\t' || *s == '\r'))
            s++;
        const char *e = le;
        while (e > s && (e[-1] == ' ' || e[-1] == '\r' || e[-1] == '\t'))
            e--;
        if (s == e || *s == '#')
            continue;
        if (jsonl < 0 && *s == '[') { /* read as a CSV header: "must name arrival_s, input and output columns" */
            free(q);
            return hl_fail(err, HL_EPARSE,
                           "%s line %ld: a JSON array; a trace is JSON lines (one {\"arrival_s\": s, \"input\": "
                           "tokens, \"output\": tokens} object per line) or CSV",
                           o, line);
        }
        if (jsonl < 0)
            jsonl = *s == '{';
        double v[COL_ALL] = {0, 0, 0, 0, 0, 0, 0};
        const char *why = NULL;
        hl_err detail;
        if (jsonl) {
            if (!json_line(s, e, v, &why, &detail, unread, unread_cap))
                goto bad;
        } else if (!header) {
            int seen[COL_ALL] = {0, 0, 0, 0, 0, 0, 0};
            for (const char *f = s; f <= e;) {
                if (ncols == 64) {
                    free(q);
                    free(qc);
                    return hl_fail(err, HL_EPARSE, "%s line %ld: the CSV header has more than 64 columns", o, line);
                }
                const char *comma = memchr(f, ',', (size_t)(e - f));
                const char *fe = comma ? comma : e;
                int c = column_of(f, (size_t)(fe - f));
                cols[ncols++] = c;
                if (c >= 0 && seen[c]) { /* "input,input_tokens": which one is the prompt? */
                    free(q);
                    free(qc);
                    return hl_fail(err, HL_EPARSE,
                                   "%s line %ld: the CSV header's column %d (%.*s) repeats column %d (the same "
                                   "name, or another name of it); give each column once",
                                   o, line, ncols, (int)(fe - f < 40 ? fe - f : 40), f, seen[c]);
                }
                if (c >= 0)
                    seen[c] = ncols;
                else { /* read past (other tools' metadata), named once to the caller */
                    const char *x = f;
                    size_t xn = (size_t)(fe - f);
                    trim_name(&x, &xn);
                    note_unread(unread, unread_cap, x, xn);
                }
                if (!comma)
                    break;
                f = comma + 1;
            }
            if (!seen[0] || !seen[1] || !seen[2]) {
                free(q);
                free(qc);
                return hl_fail(err, HL_EPARSE,
                               "%s line %ld: the CSV header must name arrival_s, input and output columns%s", o, line,
                               memchr(s, '\r', (size_t)(e - s)) ? " (its lines end in a lone CR: save the file with LF "
                                                                  "or CRLF line ends)"
                                                                : "");
            }
            header = 1;
            continue;
        } else {
            int got = 0;
            const char *f = s;
            for (int k = 0; k < ncols; k++) {
                const char *comma = memchr(f, ',', (size_t)(e - f));
                const char *fe = comma ? comma : e;
                if (cols[k] >= 0) {
                    const char *x = f;
                    while (x < fe && (*x == ' ' || *x == '"'))
                        x++;
                    int blank = x == fe || (fe - x == 1 && *x == '\r');
                    x = f;
                    if (blank && cols[k] >= COL_REQUIRED) { /* an optional cell left empty: 0 */
                        got++;
                        goto next_cell;
                    }
                    if (!parse_num(&x, fe, &v[cols[k]]))
                        goto bad;
                    while (x < fe && *x == ' ')
                        x++;
                    if (x != fe)
                        goto bad;
                    got++;
                }
            next_cell:
                if (!comma) {
                    if (k != ncols - 1)
                        goto bad;
                    break;
                }
                if (k == ncols - 1) { /* a cell past the header's columns: no column to read it under */
                    why = "more cells than the header has columns";
                    goto bad;
                }
                f = comma + 1;
            }
            if (got < COL_REQUIRED)
                goto bad;
        }
        if (!(v[0] >= 0) || !(v[1] >= 1) || !(v[2] >= 1) || v[1] != floor(v[1]) || v[2] != floor(v[2]) || v[1] > 1e8 ||
            v[2] > 1e8) {
            free(q);
            free(qc);
            return hl_fail(err, HL_EPARSE,
                           "%s line %ld: arrival_s %g, input %g, output %g (need arrival >= 0 and whole lengths "
                           "1..1e8)",
                           o, line, v[0], v[1], v[2]);
        }
        static const char *const opt[] = {"session", "turn", "prefix", "prefix_len"};
        for (int k = COL_REQUIRED; k < COL_ALL; k++)
            /* ids up to 2^53 - 1: 9007199254740993 reads as the double 2^53, so two sessions (or
             * prefixes) whose ids differ past 2^53 were merged into one silently */
            if (!(v[k] >= 0 && v[k] <= 9007199254740991.0) || v[k] != floor(v[k])) {
                free(q);
                free(qc);
                return hl_fail(err, HL_EPARSE,
                               "%s line %ld: %s %.17g (need a whole number in 0..9007199254740991 = 2^53 - 1, the "
                               "ids a double holds exactly; 0 = none)",
                               o, line, opt[k - COL_REQUIRED], v[k]);
            }
        if (v[6] > v[1]) {
            free(q);
            free(qc);
            return hl_fail(err, HL_EPARSE, "%s line %ld: prefix_len %g is longer than the prompt (input %g)", o, line,
                           v[6], v[1]);
        }
        if (content && !qc && (v[3] != 0 || v[4] != 0 || v[5] != 0 || v[6] != 0) && !(qc = calloc(cap, sizeof *qc))) {
            free(q);
            free(qc);
            return hl_fail(err, HL_ENOMEM, "%s: out of memory at line %ld", o, line);
        }
        if ((size_t)cnt == cap) {
            hl_trace_req *g = realloc(q, sizeof *q * cap * 2);
            hl_trace_content *gc = g && qc ? realloc(qc, sizeof *qc * cap * 2) : NULL;
            if (!g || (qc && !gc)) {
                free(g ? g : q);
                free(qc);
                return hl_fail(err, HL_ENOMEM, "%s: out of memory at line %ld", o, line);
            }
            q = g;
            qc = qc ? gc : NULL;
            cap *= 2;
        }
        q[cnt] = (hl_trace_req){v[0], v[1], v[2]};
        if (qc)
            qc[cnt] = (hl_trace_content){v[3], v[4], v[5], v[6]};
        cnt++;
        continue;
    bad:
        free(q);
        free(qc);
        return hl_fail(err, HL_EPARSE, "%s line %ld: malformed line (%s%sexpected %s): %.*s", o, line, why ? why : "",
                       why ? "; " : "",
                       jsonl ? "{\"arrival_s\": s, \"input\": tokens, \"output\": tokens}"
                             : "numbers under the header's arrival_s, input, output columns",
                       (int)(e - s < 60 ? e - s : 60), s);
    }
    if (cnt == 0) {
        free(q);
        free(qc);
        return hl_fail(err, HL_EPARSE, "%s: the trace is empty (no requests)", o);
    }
    if (qc) { /* the content after the requests, in their block: freed with it */
        hl_trace_req *g = realloc(q, (sizeof *q + sizeof *qc) * (size_t)cnt);
        if (!g) {
            free(q);
            free(qc);
            return hl_fail(err, HL_ENOMEM, "%s: out of memory", o);
        }
        q = g;
        memcpy(q + cnt, qc, sizeof *qc * (size_t)cnt);
        free(qc);
        *content = (const hl_trace_content *)(void *)(q + cnt);
    }
    *out = q;
    *n = cnt;
    return HL_OK;
}

void hl_serve_trace_free(hl_trace_req *t) { free(t); }

double hl_serve_mean_length(const hl_serve_cfg *c, int which)
{
    const hl_len_dist *d = which ? &c->output : &c->input;
    switch (d->kind) {
    case HL_LEN_UNIFORM: return (d->lo + d->hi) / 2;
    case HL_LEN_NORMAL: return fmin(d->hi, fmax(d->lo, d->mean)); /* the clamp's shift of the mean is neglected */
    case HL_LEN_TRACE: {
        double sum = 0;
        for (int64_t i = 0; i < c->n_trace; i++)
            sum += which ? c->trace[i].output : c->trace[i].input;
        return c->n_trace > 0 ? sum / (double)c->n_trace : 0;
    }
    default: return d->mean;
    }
}
