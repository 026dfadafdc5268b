/* Measured kernel tables: reading a folder of the shared reference's CSV files
 * once per process (a bounded cache), checking every row, and the log-log
 * interpolation of one kernel's time over a table's grid (docs/MODEL.md 3). */
#define _XOPEN_SOURCE 700 /* realpath (glibc declares it for X/Open, not for _POSIX_C_SOURCE alone) */
#include "hbdlab/kernels.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err_int.h"
#include "hbdlab/io.h"

/* The columns of one file: key columns matched exactly, axes interpolated, the latency in ms. */
typedef struct kspec {
    const char *file;
    const char *keys[HL_KERNELS_MAX_KEYS];
    int nkeys;
    const char *axes[HL_KERNELS_MAX_AXES];
    int naxes;
} kspec;

static const kspec specs[HL_KT_COUNT] = {
    {"gemm.csv", {"dtype"}, 1, {"m", "n", "k"}, 3},
    {"attention_decode.csv", {"heads", "kv_heads", "head_dim", "window", "kv_dtype"}, 5, {"batch", "cached_tokens"}, 2},
    {"attention_prefill.csv",
     {"heads", "kv_heads", "head_dim", "window", "attn_dtype", "kv_dtype"},
     6,
     {"batch", "isl"},
     2},
    {"mla_decode.csv", {"mla_dtype", "kv_dtype", "heads"}, 3, {"batch", "cached_tokens"}, 2},
    {"mla_prefill.csv", {"mla_dtype", "kv_dtype", "heads"}, 3, {"batch", "isl"}, 2},
    {"moe.csv",
     {"dtype", "kernel", "hidden", "inter", "topk", "experts", "moe_tp", "moe_ep", "distribution"},
     9,
     {"tokens"},
     1},
    {"allreduce_custom.csv", {"dtype", "ranks"}, 2, {"bytes"}, 1},
    {"nccl.csv", {"op", "dtype", "ranks"}, 3, {"bytes"}, 1},
};

enum { KEY_MAX = 512 }; /* bytes of one canonical key (cells joined by 0x1f) */

typedef struct krow {
    int64_t key;                   /* offset of the row's canonical key in the load arena; then its group */
    double x[HL_KERNELS_MAX_AXES]; /* axes */
    double t;                      /* s */
    int32_t line;                  /* 1-based line in the file */
} krow;

typedef struct kgroup {
    char *key;                         /* canonical key */
    int64_t first, count;              /* its rows, sorted by axes */
    double *vals[HL_KERNELS_MAX_AXES]; /* the grid: sorted distinct values of each axis */
    int32_t nvals[HL_KERNELS_MAX_AXES];
} kgroup;

typedef struct ktable {
    krow *rows;
    int64_t nrows;
    kgroup *groups;
    int32_t ngroups;
    double *pool; /* the grids' values */
} ktable;

struct hl_kernels {
    char *dir;
    ktable t[HL_KT_COUNT];
};

const char *hl_kernels_dtype(int32_t p)
{
    static const char *const names[] = {"float32", "bfloat16", "float16", "fp8", "nvfp4", "int8"};
    return p >= 0 && p < (int32_t)(sizeof names / sizeof names[0]) ? names[p] : "?";
}

const char *hl_kernels_file(int32_t t) { return t >= 0 && t < HL_KT_COUNT ? specs[t].file : NULL; }

int64_t hl_kernels_rows(const hl_kernels *k, int32_t t) { return k && t >= 0 && t < HL_KT_COUNT ? k->t[t].nrows : 0; }

/* ---- Canonical keys ---- */

/* Appends one key cell to buf (len bytes used of KEY_MAX): a number as "%.17g", text as is.
 * Returns the new length, or -1 when it does not fit. */
static int put_cell(char *buf, int len, const char *text, double number, int is_text)
{
    char num[40];
    if (!is_text) {
        snprintf(num, sizeof num, "%.17g", number);
        text = num;
    }
    size_t n = strlen(text);
    if ((size_t)len + n + 2 > KEY_MAX)
        return -1;
    if (len > 0)
        buf[len++] = '\x1f';
    memcpy(buf + len, text, n + 1);
    return len + (int)n;
}

/* A cell as a number when the whole of it reads as one in decimal (strtod; sets *v), else 0: strtod
 * alone also read "0x10" (16 ms) and "infinity" (attack pass 7). */
static int read_number(const char *s, double *v)
{
    char *end;
    if (!*s || s[strspn(s, "0123456789+-.eE")] != '\0')
        return 0;
    errno = 0;
    *v = strtod(s, &end);
    return *end == '\0';
}

/* The bytes of s shown in a message: at most max, cut back to a whole UTF-8 sequence (the file
 * was checked to be UTF-8, so a cut inside a character would leave half of one). */
static int shown_len(const char *s, int max)
{
    int n = (int)strnlen(s, (size_t)max + 1);
    if (n <= max)
        return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) /* s[n] continues the character before it */
        n--;
    return n;
}

/* ---- Loading ---- */

static _Thread_local const char *sort_arena; /* the keys qsort compares (one load at a time, under the lock) */

static int cmp_rows(const void *pa, const void *pb)
{
    const krow *a = pa, *b = pb;
    int c = strcmp(sort_arena + a->key, sort_arena + b->key);
    if (c)
        return c;
    for (int i = 0; i < HL_KERNELS_MAX_AXES; i++)
        if (a->x[i] != b->x[i])
            return a->x[i] < b->x[i] ? -1 : 1;
    return a->line < b->line ? -1 : a->line > b->line;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

static void table_free(ktable *t)
{
    for (int32_t g = 0; g < t->ngroups; g++)
        free(t->groups[g].key);
    free(t->groups);
    free(t->rows);
    free(t->pool);
    memset(t, 0, sizeof *t);
}

static void kernels_free(hl_kernels *k)
{
    if (!k)
        return;
    for (int i = 0; i < HL_KT_COUNT; i++)
        table_free(&k->t[i]);
    free(k->dir);
    free(k);
}

/* The next field of a line: [*p, end of field), advancing *p past the comma. */
static char *next_field(char **p)
{
    char *s = *p, *c = strchr(s, ',');
    if (c) {
        *c = '\0';
        *p = c + 1;
    } else {
        *p = s + strlen(s);
    }
    return s;
}

/* Groups the sorted rows by key and builds each group's grid. */
static hl_status build_groups(ktable *t, const char *arena, const char *path, int naxes, hl_err *err)
{
    int32_t ng = 0;
    for (int64_t i = 0; i < t->nrows; i++)
        ng += i == 0 || strcmp(arena + t->rows[i].key, arena + t->rows[i - 1].key) != 0;
    t->groups = calloc((size_t)ng, sizeof *t->groups);
    t->pool = malloc((size_t)(t->nrows * naxes + 1) * sizeof(double));
    if (!t->groups || !t->pool)
        return hl_fail(err, HL_ENOMEM, "%s: out of memory", path);
    int64_t used = 0;
    for (int64_t i = 0; i < t->nrows;) {
        int64_t j = i + 1;
        while (j < t->nrows && strcmp(arena + t->rows[j].key, arena + t->rows[i].key) == 0)
            j++;
        kgroup *g = &t->groups[t->ngroups++];
        g->key = strdup(arena + t->rows[i].key);
        if (!g->key)
            return hl_fail(err, HL_ENOMEM, "%s: out of memory", path);
        g->first = i;
        g->count = j - i;
        for (int a = 0; a < naxes; a++) {
            double *v = t->pool + used;
            for (int64_t r = i; r < j; r++)
                v[r - i] = t->rows[r].x[a];
            qsort(v, (size_t)(j - i), sizeof *v, cmp_double);
            int32_t n = 0;
            for (int64_t r = 0; r < j - i; r++)
                if (n == 0 || v[r] != v[n - 1])
                    v[n++] = v[r];
            g->vals[a] = v;
            g->nvals[a] = n;
            used += n;
        }
        for (int64_t r = i; r < j; r++)
            t->rows[r].key = t->ngroups - 1;
        i = j;
    }
    return HL_OK;
}

/* Parses one CSV file into table t (text is modified). */
static hl_status parse_table(ktable *t, const kspec *sp, const char *path, char *text, hl_err *err)
{
    int64_t bad = hl_utf8_invalid_offset(text, (int64_t)strlen(text));
    if (bad >= 0) {
        int64_t line = 1;
        for (int64_t i = 0; i < bad; i++)
            line += text[i] == '\n';
        return hl_fail(err, HL_EPARSE, "%s:%lld: not UTF-8 text (byte %lld): a CSV file is expected", path,
                       (long long)line, (long long)bad);
    }
    if ((unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF)
        text += 3;     /* a byte-order mark (spreadsheets write one before the header): not part of a name */
    int64_t lines = 1; /* the rows array holds every line but the header, at most the limit and one more */
    for (const char *c = text; *c; c++)
        lines += *c == '\n';
    if (lines > HL_KERNELS_MAX_ROWS + 1)
        lines = HL_KERNELS_MAX_ROWS + 1;
    enum { MAX_COLS = 64 };
    int col_key[HL_KERNELS_MAX_KEYS], col_axis[HL_KERNELS_MAX_AXES], col_lat = -1, ncols = 0;
    for (int i = 0; i < sp->nkeys; i++)
        col_key[i] = -1;
    for (int i = 0; i < sp->naxes; i++)
        col_axis[i] = -1;
    size_t arena_cap = 4096, arena_len = 0;
    char *arena = malloc(arena_cap);
    t->rows = malloc((size_t)lines * sizeof *t->rows);
    hl_status st = HL_OK;
    if (!arena || !t->rows) {
        st = hl_fail(err, HL_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    char *p = text;
    for (int32_t line = 1; *p; line++) {
        char *eol = strchr(p, '\n'), *next = eol ? eol + 1 : p + strlen(p);
        if (eol)
            *eol = '\0';
        size_t len = strlen(p);
        if (len > 0 && p[len - 1] == '\r')
            p[--len] = '\0';
        char *line_start = p;
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)p[i];
            if (c == '"' || (c < 0x20 && c != '\t')) {
                st = hl_fail(err, HL_EPARSE, "%s:%d:%zu: %s: plain comma-separated cells are expected", path, line,
                             i + 1, c == '"' ? "a quoted cell" : "a control character (binary data?)");
                goto done;
            }
        }
        if (len == 0) {
            p = next;
            continue;
        }
        char *cells[MAX_COLS];
        int ncells = 0;
        size_t colpos[MAX_COLS];
        char *q = p;
        while (1) {
            if (ncells == MAX_COLS) {
                st = hl_fail(err, HL_EPARSE, "%s:%d: more than %d cells", path, line, MAX_COLS);
                goto done;
            }
            colpos[ncells] = (size_t)(q - line_start) + 1;
            int last = strchr(q, ',') == NULL;
            cells[ncells++] = next_field(&q);
            if (last)
                break;
        }
        if (ncols == 0) { /* the header */
            ncols = ncells;
            for (int c = 0; c < ncells; c++) {
                for (int d = 0; d < c; d++)
                    if (strcmp(cells[c], cells[d]) == 0) {
                        st = hl_fail(err, HL_EPARSE, "%s:%d:%zu: column '%s' appears twice in the header", path, line,
                                     colpos[c], cells[c]);
                        goto done;
                    }
                for (int i = 0; i < sp->nkeys; i++)
                    if (strcmp(cells[c], sp->keys[i]) == 0)
                        col_key[i] = c;
                for (int i = 0; i < sp->naxes; i++)
                    if (strcmp(cells[c], sp->axes[i]) == 0)
                        col_axis[i] = c;
                if (strcmp(cells[c], "latency_ms") == 0)
                    col_lat = c;
            }
            const char *missing = col_lat < 0 ? "latency_ms" : NULL;
            for (int i = 0; i < sp->nkeys && !missing; i++)
                missing = col_key[i] < 0 ? sp->keys[i] : NULL;
            for (int i = 0; i < sp->naxes && !missing; i++)
                missing = col_axis[i] < 0 ? sp->axes[i] : NULL;
            if (missing) {
                st = hl_fail(
                    err, HL_EPARSE, "%s:%d: the header has no column '%s' (a %s needs %s%s%s ... and latency_ms)", path,
                    line, missing, sp->file, sp->keys[0], sp->nkeys > 1 ? ", " : "", sp->nkeys > 1 ? sp->keys[1] : "");
                goto done;
            }
            p = next;
            continue;
        }
        if (ncells != ncols) {
            st = hl_fail(err, HL_EPARSE, "%s:%d: %d cells, the header has %d columns", path, line, ncells, ncols);
            goto done;
        }
        if (t->nrows == HL_KERNELS_MAX_ROWS) {
            st = hl_fail(err, HL_EINVAL, "%s:%d: more than the %d rows a kernel table may hold", path, line,
                         HL_KERNELS_MAX_ROWS);
            goto done;
        }
        for (int c = 0; c < ncells; c++) { /* "bfloat16 " was a key no job matches, " 4" read as 4, "4 " refused */
            size_t n = strlen(cells[c]);
            if (n > 0 &&
                (cells[c][0] == ' ' || cells[c][0] == '\t' || cells[c][n - 1] == ' ' || cells[c][n - 1] == '\t')) {
                st = hl_fail(err, HL_EPARSE,
                             "%s:%d:%zu: a cell begins or ends with a space ('%.*s'): cells are read "
                             "exactly, remove it",
                             path, line, colpos[c], shown_len(cells[c], 40), cells[c]);
                goto done;
            }
        }
        krow *r = &t->rows[t->nrows];
        memset(r, 0, sizeof *r);
        r->line = line;
        for (int i = 0; i < sp->naxes + 1; i++) { /* the axes, then the latency */
            int c = i < sp->naxes ? col_axis[i] : col_lat;
            double v;
            if (!read_number(cells[c], &v) || !isfinite(v) || !(v > 0)) {
                st = hl_fail(err, HL_EINVAL, "%s:%d:%zu: column '%s' is '%.*s' (allowed: a finite number > 0)", path,
                             line, colpos[c], i < sp->naxes ? sp->axes[i] : "latency_ms", shown_len(cells[c], 40),
                             cells[c]);
                goto done;
            }
            if (i < sp->naxes)
                r->x[i] = v;
            else
                r->t = v * 1e-3; /* ms -> s */
        }
        char key[KEY_MAX];
        int klen = 0;
        for (int i = 0; i < sp->nkeys && klen >= 0; i++) {
            int c = col_key[i];
            double v;
            int num = read_number(cells[c], &v);
            if (!cells[c][0] || (num && !isfinite(v))) {
                st = hl_fail(err, HL_EINVAL, "%s:%d:%zu: column '%s' is '%.*s' (allowed: a name or a finite number)",
                             path, line, colpos[c], sp->keys[i], shown_len(cells[c], 40), cells[c]);
                goto done;
            }
            klen = put_cell(key, klen, cells[c], v, !num);
        }
        if (klen < 0) {
            st = hl_fail(err, HL_EINVAL, "%s:%d: the key cells are longer than %d bytes", path, line, KEY_MAX);
            goto done;
        }
        if (arena_len + (size_t)klen + 1 > arena_cap) {
            while (arena_len + (size_t)klen + 1 > arena_cap)
                arena_cap *= 2;
            char *grown = realloc(arena, arena_cap);
            if (!grown) {
                st = hl_fail(err, HL_ENOMEM, "%s: out of memory", path);
                goto done;
            }
            arena = grown;
        }
        memcpy(arena + arena_len, key, (size_t)klen + 1);
        r->key = (int64_t)arena_len;
        arena_len += (size_t)klen + 1;
        t->nrows++;
        p = next;
    }
    if (ncols == 0) {
        st = hl_fail(err, HL_EPARSE, "%s: empty (a header line and rows are expected)", path);
        goto done;
    }
    sort_arena = arena;
    qsort(t->rows, (size_t)t->nrows, sizeof *t->rows, cmp_rows);
    for (int64_t i = 1; i < t->nrows; i++) {
        const krow *a = &t->rows[i - 1], *b = &t->rows[i];
        if (strcmp(arena + a->key, arena + b->key) == 0 && memcmp(a->x, b->x, sizeof a->x) == 0) {
            st = hl_fail(err, HL_EINVAL, "%s:%d: the same shape as line %d (a table holds one latency per shape)", path,
                         b->line, a->line);
            goto done;
        }
    }
    st = build_groups(t, arena, path, sp->naxes, err);
done:
    free(arena);
    return st;
}

static hl_status load_folder(const char *dir, hl_kernels **out, hl_err *err)
{
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return hl_fail(err, HL_EIO, "field 'kernels': folder '%s': %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return hl_fail(err, HL_EINVAL, "field 'kernels': '%s' is not a folder (a folder of kernel CSV files)", dir);
    hl_kernels *k = calloc(1, sizeof *k);
    if (!k || !(k->dir = strdup(dir))) {
        free(k);
        return hl_fail(err, HL_ENOMEM, "field 'kernels': out of memory");
    }
    int found = 0;
    hl_status st = HL_OK;
    for (int i = 0; i < HL_KT_COUNT && !st; i++) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, specs[i].file) >= (int)sizeof path) {
            st = hl_fail(err, HL_EINVAL, "field 'kernels': folder name of %zu bytes is too long", strlen(dir));
            break;
        }
        if (stat(path, &sb) != 0 && errno == ENOENT) {
            if (lstat(path, &sb) != 0)
                continue; /* no such table */
            st = hl_fail(err, HL_ENOTFOUND, "field 'kernels': %s is a symbolic link to a file that does not exist",
                         path);
            break;
        }
        char *text = NULL;
        st = hl_read_file(path, &text, err);
        if (!st)
            st = parse_table(&k->t[i], &specs[i], path, text, err);
        hl_free(text);
        found++;
    }
    if (!st && !found) {
        char names[512];
        int len = 0;
        for (int i = 0; i < HL_KT_COUNT; i++)
            len += snprintf(names + len, sizeof names - (size_t)len, "%s%s", i ? ", " : "", specs[i].file);
        st = hl_fail(err, HL_ENOTFOUND, "field 'kernels': folder '%s' holds none of %s", dir, names);
    }
    if (st) {
        if (strncmp(err->msg, "field 'kernels'", 15) != 0)
            hl_err_prefix(err, "field 'kernels'");
        kernels_free(k);
        return st;
    }
    *out = k;
    return HL_OK;
}

/* The cache: folders loaded once, keyed by their canonical path (realpath), so "dir", "dir/" and
 * "./dir" are one folder and one slot (they took three of the 16); never evicted (a job may hold a
 * pointer). Names as given are remembered too (up to ALIASES), so a repeated name costs no
 * realpath call. */
enum { ALIASES = 64 };
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static hl_kernels *cache[HL_KERNELS_MAX_FOLDERS];
static char *cache_real[HL_KERNELS_MAX_FOLDERS]; /* realpath of each (malloc'd; NULL if it failed) */
static int cache_n;
static struct {
    char *given;
    hl_kernels *k;
} alias[ALIASES];
static int alias_n;

static void remember(const char *dir, hl_kernels *k)
{
    if (alias_n < ALIASES && (alias[alias_n].given = strdup(dir)))
        alias[alias_n++].k = k;
}

hl_status hl_kernels_load(const char *dir, const hl_kernels **out, hl_err *err)
{
    if (!dir || !out)
        return hl_fail(err, HL_EINVAL, "field 'kernels': the %s is NULL", !dir ? "folder name" : "output");
    *out = NULL;
    if (!dir || !dir[0])
        return hl_fail(err, HL_EINVAL, "field 'kernels': an empty folder name");
    pthread_mutex_lock(&cache_lock);
    hl_status st = HL_OK;
    for (int i = 0; i < cache_n; i++)
        if (strcmp(cache[i]->dir, dir) == 0) {
            *out = cache[i];
            pthread_mutex_unlock(&cache_lock);
            return HL_OK;
        }
    for (int i = 0; i < alias_n; i++)
        if (strcmp(alias[i].given, dir) == 0) {
            *out = alias[i].k;
            pthread_mutex_unlock(&cache_lock);
            return HL_OK;
        }
    char *real = realpath(dir, NULL); /* NULL: missing or unreadable, which load_folder names */
    for (int i = 0; real && i < cache_n; i++)
        if (cache_real[i] && strcmp(cache_real[i], real) == 0) {
            remember(dir, cache[i]);
            *out = cache[i];
            pthread_mutex_unlock(&cache_lock);
            free(real);
            return HL_OK;
        }
    if (cache_n == HL_KERNELS_MAX_FOLDERS) {
        st = hl_fail(err, HL_EINVAL,
                     "field 'kernels': folder '%s' would be the %dth kernel folder of this process (at most %d are "
                     "cached)",
                     dir, HL_KERNELS_MAX_FOLDERS + 1, HL_KERNELS_MAX_FOLDERS);
    } else {
        hl_kernels *k = NULL;
        st = load_folder(dir, &k, err);
        if (!st) {
            cache_real[cache_n] = real;
            real = NULL;
            cache[cache_n++] = k;
            *out = k;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    free(real);
    return st;
}

/* ---- Interpolation ---- */

/* The row of group g at axes x exactly, or NULL. */
static const krow *find_row(const ktable *t, const kgroup *g, const double *x, int naxes)
{
    int64_t lo = g->first, hi = g->first + g->count - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const krow *r = &t->rows[mid];
        int c = 0;
        for (int a = 0; a < naxes && !c; a++)
            c = r->x[a] < x[a] ? -1 : r->x[a] > x[a];
        if (c == 0)
            return r;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

int hl_kernels_time(const hl_kernels *k, int32_t ti, const hl_kcell *key, const double *x, double *time_s)
{
    if (!k || ti < 0 || ti >= HL_KT_COUNT || k->t[ti].nrows == 0)
        return 0;
    const ktable *t = &k->t[ti];
    const kspec *sp = &specs[ti];
    char buf[KEY_MAX];
    int len = 0;
    for (int i = 0; i < sp->nkeys && len >= 0; i++) {
        double v = key[i].number;
        int num = key[i].text ? read_number(key[i].text, &v) : 1;
        len = put_cell(buf, len, key[i].text, v, !num);
    }
    if (len < 0)
        return 0;
    int32_t lo = 0, hi = t->ngroups - 1;
    const kgroup *g = NULL;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t->groups[mid].key, buf);
        if (c == 0) {
            g = &t->groups[mid];
            break;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    if (!g)
        return 0;
    /* the cell of each axis: values v0 <= x <= v1 of the grid; w the weight of v1 in log space */
    double v0[HL_KERNELS_MAX_AXES], v1[HL_KERNELS_MAX_AXES], w[HL_KERNELS_MAX_AXES];
    int two[HL_KERNELS_MAX_AXES];
    for (int a = 0; a < sp->naxes; a++) {
        const double *v = g->vals[a];
        int32_t n = g->nvals[a];
        if (!(x[a] >= v[0] && x[a] <= v[n - 1]))
            return 0; /* outside the grid, or NaN */
        int32_t l = 0, h = n - 1;
        while (h - l > 1) { /* v[l] <= x <= v[h] */
            int32_t mid = l + (h - l) / 2;
            if (v[mid] <= x[a])
                l = mid;
            else
                h = mid;
        }
        if (v[l] == x[a] || v[h] == x[a]) {
            v0[a] = v1[a] = x[a];
            w[a] = 0;
            two[a] = 0;
        } else {
            v0[a] = v[l];
            v1[a] = v[h];
            /* log(x / v0) / log(v1 / v0) from the differences (exact for near values), so grid values
             * a few ulps apart do not give log(v1) == log(v0) and 0 / 0; in [0, 1] by monotonicity */
            w[a] = log1p((x[a] - v0[a]) / v0[a]) / log1p((v1[a] - v0[a]) / v0[a]);
            two[a] = 1;
        }
    }
    double acc = 1;
    for (int c = 0; c < 1 << sp->naxes; c++) {
        double at[HL_KERNELS_MAX_AXES], weight = 1;
        int skip = 0;
        for (int a = 0; a < sp->naxes; a++) {
            int up = (c >> a) & 1;
            if (up && !two[a])
                skip = 1;
            at[a] = up ? v1[a] : v0[a];
            weight *= two[a] ? (up ? w[a] : 1 - w[a]) : 1;
        }
        if (skip)
            continue;
        const krow *r = find_row(t, g, at, sp->naxes);
        if (!r)
            return 0; /* a corner of the cell was not measured */
        acc *= weight == 1 ? r->t : pow(r->t, weight);
    }
    *time_s = acc;
    return 1;
}
