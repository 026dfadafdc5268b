/* Streaming a sweep to CSV (hl_sweep_csv, core/src/sweep_csv.c): the text equals the points of
 * hl_sweep_run written row by row, in point order, over several blocks and threads; every number
 * reads back to the point's double; error rows; a refusing sink, cancellation, ranks' parts, and
 * the file form. The stream tests run twice: the sink on the calling thread, and on the workers
 * (sink_any_thread), where the calls must still come one at a time and in order. */
#define _DEFAULT_SOURCE /* usleep */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hbdlab/hbdlab.h"
#include "jobs.h"

enum { MAX_CALLS = 8 };

/* What a sink was handed: all the text, and each call's text apart. */
typedef struct text_sink {
    char *all;
    int64_t len;
    char *call_text[MAX_CALLS];
    int64_t call_len[MAX_CALLS];
    int32_t calls;
    int32_t refuse_at; /* refuse the call with this number (1-based); 0 never */
    int64_t last_done;
    int32_t in_call; /* calls running now (atomic): never more than one */
} text_sink;

static int32_t any_thread; /* the opts' sink_any_thread of the stream tests */

static void append(char **buf, int64_t *len, const char *text, int64_t n)
{
    char *t = realloc(*buf, (size_t)(*len + n + 1));
    assert_non_null(t);
    memcpy(t + *len, text, (size_t)n);
    *len += n;
    t[*len] = '\0';
    *buf = t;
}

static int32_t collect(void *user, const char *text, int64_t len, int64_t points_done)
{
    text_sink *s = user;
    if (__atomic_add_fetch(&s->in_call, 1, __ATOMIC_SEQ_CST) != 1)
        fail_msg("two sink calls at once");
    usleep(200); /* a second caller arriving meanwhile would be seen */
    __atomic_sub_fetch(&s->in_call, 1, __ATOMIC_SEQ_CST);
    s->calls++;
    if (s->refuse_at && s->calls == s->refuse_at)
        return -1;
    if (points_done < s->last_done)
        fail_msg("points_done went back: %lld after %lld", (long long)points_done, (long long)s->last_done);
    s->last_done = points_done;
    append(&s->all, &s->len, text, len);
    if (s->calls <= MAX_CALLS) {
        int64_t l = 0;
        append(&s->call_text[s->calls - 1], &l, text, len);
        s->call_len[s->calls - 1] = l;
    }
    return 0;
}

/* Options streaming the columns cols[0..n) to collect into s, from any thread where any_thread
 * says so; no header. */
static hl_sweep_csv_opts collecting(const int32_t *cols, int32_t n, text_sink *s)
{
    hl_sweep_csv_opts o;
    memset(&o, 0, sizeof o);
    o.columns = cols;
    o.n_columns = n;
    o.sink = collect;
    o.sink_any_thread = any_thread;
    o.user = s;
    return o;
}

static void sink_free(text_sink *s)
{
    free(s->all);
    for (int i = 0; i < MAX_CALLS; i++)
        free(s->call_text[i]);
    memset(s, 0, sizeof *s);
}

/* Llama-3.1-8B TP8 on 8 H100, batch 8; axes tp {8, 3} x input 1..5000: 10,000 points, three
 * blocks of 4,096; tp = 3 does not divide the 32 heads, so half the points are error rows. */
static const double TPS[] = {8, 3};
static double inputs[5000];

static hl_sweep_in sweep_in(hl_axis *axes)
{
    for (int i = 0; i < 5000; i++)
        inputs[i] = 1 + i;
    memset(axes, 0, 2 * sizeof *axes);
    snprintf(axes[0].name, sizeof axes[0].name, "tp");
    axes[0].kind = HL_AXIS_NUMBER;
    axes[0].numbers = TPS;
    axes[0].n = 2;
    snprintf(axes[1].name, sizeof axes[1].name, "input");
    axes[1].kind = HL_AXIS_NUMBER;
    axes[1].numbers = inputs;
    axes[1].n = 5000;
    hl_sweep_in in;
    memset(&in, 0, sizeof in);
    in.base = job_for("llama-3.1-8b", "H100-SXM", 8, 8);
    in.base.batch = 8;
    in.base.tp = 8;
    in.base.output = 16;
    in.axes = axes;
    in.n_axes = 2;
    in.threads = 2;
    return in;
}

/* The expected text: a header, then per point its axis values, the columns, the error cell. */
static void expected_text(const hl_sweep_in *in, const hl_point *pts, int64_t n, const int32_t *cols, int ncols,
                          hl_csv *want)
{
    hl_csv_text(want, "tp");
    hl_csv_text(want, "input");
    for (int c = 0; c < ncols; c++)
        hl_csv_text(want, hl_result_field_at(cols[c])->name);
    hl_csv_text(want, "error");
    hl_csv_end_row(want);
    for (int64_t i = 0; i < n; i++) {
        hl_csv_number(want, TPS[i / 5000]);
        hl_csv_number(want, inputs[i % 5000]);
        for (int c = 0; c < ncols; c++) {
            if (pts[i].status == HL_OK)
                hl_csv_result(want, cols[c], pts[i].v[cols[c]]);
            else
                hl_csv_empty(want);
        }
        if (pts[i].status == HL_OK)
            hl_csv_empty(want);
        else
            hl_csv_text(want, pts[i].error);
        hl_csv_end_row(want);
    }
    (void)in;
}

static void test_stream_equals_points(void **state)
{
    (void)state;
    hl_axis axes[2];
    hl_sweep_in in = sweep_in(axes);
    int64_t n = 10000;
    hl_point *pts = malloc(sizeof *pts * (size_t)n);
    hl_err e;
    assert_non_null(pts);
    assert_ok(hl_sweep_run(&in, pts, &e), &e);
    const int32_t cols[] = {hl_result_field_index("ttft_s"), hl_result_field_index("tps_per_gpu"),
                            hl_result_field_index("memory.fits")};
    text_sink s;
    memset(&s, 0, sizeof s);
    hl_sweep_csv_opts o = collecting(cols, 3, &s);
    o.header = 1;
    int64_t rows = 0;
    assert_ok(hl_sweep_csv(&in, &o, &rows, &e), &e);
    assert_int_equal(rows, n);
    assert_int_equal(s.calls, 1 + 3); /* the header, then 10,000 points in blocks of 4,096 */
    assert_int_equal(s.last_done, n);
    hl_csv want;
    hl_csv_init(&want);
    expected_text(&in, pts, n, cols, 3, &want);
    assert_int_equal(s.len, want.len);
    assert_string_equal(s.all, want.text);
    /* every ttft_s cell reads back to the point's double, bit for bit */
    const char *line = strchr(s.all, '\n') + 1;
    for (int64_t i = 0; i < n; i++, line = strchr(line, '\n') + 1) {
        const char *cell = strchr(strchr(line, ',') + 1, ',') + 1;
        if (pts[i].status == HL_OK && strtod(cell, NULL) != pts[i].v[cols[0]])
            fail_msg("point %lld: %.40s reads back as %.17g, not %.17g", (long long)i, cell, strtod(cell, NULL),
                     pts[i].v[cols[0]]);
        if (i == 5000) /* tp = 3: the error row */
            assert_non_null(strstr(line, ",,,"));
    }
    hl_csv_free(&want);
    sink_free(&s);
    free(pts);
}

static void test_refusal_cancel_and_parts(void **state)
{
    (void)state;
    hl_axis axes[2];
    hl_sweep_in in = sweep_in(axes);
    const int32_t cols[] = {hl_result_field_index("ttft_s")};
    text_sink s;
    memset(&s, 0, sizeof s);
    hl_sweep_csv_opts o = collecting(cols, 1, &s);
    int64_t rows = 0;
    hl_err e;
    /* the sink refuses the second block: the stream stops there, HL_EIO */
    s.refuse_at = 2;
    assert_fails_with(hl_sweep_csv(&in, &o, &rows, &e), HL_EIO, &e, "refused");
    assert_int_equal(s.calls, 2);
    sink_free(&s);
    /* cancelled before it starts: nothing handed over, HL_EINTR */
    volatile int32_t cancel = 1;
    in.cancel = &cancel;
    assert_fails_with(hl_sweep_csv(&in, &o, &rows, &e), HL_EINTR, &e, "interrupted");
    assert_int_equal(rows, 0);
    assert_int_equal(s.len, 0);
    in.cancel = NULL;
    /* two ranks' parts: each sink is called once per block (3), and part 0 then part 1 of each
     * block, block after block, is the whole text */
    text_sink whole, part[2];
    memset(&whole, 0, sizeof whole);
    o.user = &whole;
    assert_ok(hl_sweep_csv(&in, &o, &rows, &e), &e);
    int64_t part_rows = 0;
    for (int p = 0; p < 2; p++) {
        memset(&part[p], 0, sizeof part[p]);
        o.part = p;
        o.parts = 2;
        o.user = &part[p];
        assert_ok(hl_sweep_csv(&in, &o, &rows, &e), &e);
        assert_int_equal(part[p].calls, 3);
        part_rows += rows;
    }
    assert_int_equal(part_rows, 10000);
    char *joined = NULL;
    int64_t jl = 0;
    for (int b = 0; b < 3; b++)
        for (int p = 0; p < 2; p++)
            append(&joined, &jl, part[p].call_text[b], part[p].call_len[b]);
    assert_int_equal(jl, whole.len);
    assert_string_equal(joined, whole.all);
    free(joined);
    sink_free(&part[0]);
    sink_free(&part[1]);
    sink_free(&whole);
    o.part = 2; /* not a part of 2 */
    assert_fails_with(hl_sweep_csv(&in, &o, &rows, &e), HL_EINVAL, &e, "part 2 of 2");
}

static void test_file(void **state)
{
    (void)state;
    hl_axis axes[2];
    hl_sweep_in in = sweep_in(axes);
    in.count = 100; /* the first 100 points */
    char dir[] = "/tmp/hl_sweep_csv_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/out.csv", dir);
    hl_sweep_csv_opts o;
    memset(&o, 0, sizeof o); /* every result field */
    int64_t rows = 0;
    hl_err e;
    assert_ok(hl_sweep_csv_file(&in, &o, path, &rows, &e), &e);
    assert_int_equal(rows, 100);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int lines = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        lines += ch == '\n';
    fclose(f);
    assert_int_equal(lines, 101); /* the header and 100 rows */
    unlink(path);
    /* attack pass 7: only a regular file is replaced. A FIFO and a symbolic link loop were replaced
     * by the file; a folder's name ("dir/") failed after the whole sweep with "Not a directory" */
    snprintf(path, sizeof path, "%s/fifo.csv", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_fails_with(hl_sweep_csv_file(&in, &o, path, &rows, &e), HL_EIO, &e, "fifo.csv: it is a FIFO");
    struct stat sb;
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode)); /* still the FIFO */
    unlink(path);
    snprintf(path, sizeof path, "%s/loop.csv", dir);
    assert_int_equal(symlink("loop.csv", path), 0);
    assert_fails_with(hl_sweep_csv_file(&in, &o, path, &rows, &e), HL_EIO, &e, "Too many levels of symbolic links");
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode)); /* the link is not replaced */
    unlink(path);
    /* a link to a file is written through (the target replaced, the link kept); one to an open
     * descriptor is refused: as root, out = /dev/stdout had the file renamed over the /dev/stdout link */
    char target[160], proc_link[160];
    snprintf(target, sizeof target, "%s/target.csv", dir);
    snprintf(path, sizeof path, "%s/through.csv", dir);
    FILE *t = fopen(target, "w");
    assert_non_null(t);
    fclose(t);
    assert_int_equal(symlink("target.csv", path), 0);
    assert_ok(hl_sweep_csv_file(&in, &o, path, &rows, &e), &e);
    assert_int_equal(lstat(path, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_int_equal(stat(target, &sb), 0);
    assert_true(sb.st_size > 1000); /* the rows are in the target */
    unlink(path);
    unlink(target);
    snprintf(proc_link, sizeof proc_link, "%s/stdout.csv", dir);
    t = fopen(target, "w"); /* a descriptor open on a regular file, as standard output redirected to one */
    assert_non_null(t);
    char fd_path[64];
    snprintf(fd_path, sizeof fd_path, "/proc/self/fd/%d", fileno(t));
    assert_int_equal(symlink(fd_path, proc_link), 0);
    assert_fails_with(hl_sweep_csv_file(&in, &o, proc_link, &rows, &e), HL_EINVAL, &e, "a link to an open descriptor");
    assert_int_equal(lstat(proc_link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    fclose(t);
    unlink(proc_link);
    unlink(target);
    snprintf(path, sizeof path, "%s/", dir);
    assert_fails_with(hl_sweep_csv_file(&in, &o, path, &rows, &e), HL_EINVAL, &e, "the name is a folder's");
    assert_fails_with(hl_sweep_csv_file(&in, &o, dir, &rows, &e), HL_EIO, &e, "it is a folder");
    assert_int_equal(rmdir(dir), 0); /* no temp file left beside it */
    snprintf(path, sizeof path, "%s/no/such/dir.csv", dir);
    assert_fails_with(hl_sweep_csv_file(&in, &o, path, &rows, &e), HL_EIO, &e, "cannot write");
}

/* The block counts above also hold with more threads than blocks and with one thread. */
/* attack pass 10: a write refused by the file size limit (EFBIG) was reported as the errno left by
 * the calls after it ("Inappropriate ioctl for device" from the Lua host, "the output refused the
 * rows" here): the message names the write's own cause, and no temp file is left */
static void test_file_size_limit(void **state)
{
    (void)state;
    hl_axis axes[2];
    hl_sweep_in in = sweep_in(axes);
    in.count = 100; /* over 1000 bytes (test_file), over the 512-byte limit */
    char dir[] = "/tmp/hl_sweep_csv_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/big.csv", dir);
    hl_sweep_csv_opts o;
    memset(&o, 0, sizeof o);
    struct rlimit old, small;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    small = old;
    small.rlim_cur = 512;                             /* bytes */
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN); /* the write fails with EFBIG, as in the host */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    int64_t rows = 0;
    hl_err e;
    hl_status st = hl_sweep_csv_file(&in, &o, path, &rows, &e);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_xfsz);
    assert_fails_with(st, HL_EIO, &e, "big.csv: File too large");
    assert_int_equal(rmdir(dir), 0); /* no file and no temp file left */
}

static void test_thread_counts(void **state)
{
    (void)state;
    hl_axis axes[2];
    hl_sweep_in in = sweep_in(axes);
    const int32_t cols[] = {hl_result_field_index("tpot_s")};
    text_sink one, many;
    memset(&one, 0, sizeof one);
    memset(&many, 0, sizeof many);
    hl_sweep_csv_opts o = collecting(cols, 1, &one);
    int64_t rows = 0;
    hl_err e;
    in.threads = 1;
    o.user = &one;
    assert_ok(hl_sweep_csv(&in, &o, &rows, &e), &e);
    assert_int_equal(rows, 10000);
    in.threads = 7; /* more than the 3 blocks: 3 threads */
    o.user = &many;
    assert_ok(hl_sweep_csv(&in, &o, &rows, &e), &e);
    assert_int_equal(rows, 10000);
    assert_int_equal(one.calls, 3);
    assert_int_equal(many.calls, 3);
    assert_int_equal(one.len, many.len);
    assert_string_equal(one.all, many.all);
    sink_free(&one);
    sink_free(&many);
}

static int on_caller(void **state)
{
    (void)state;
    any_thread = 0;
    return 0;
}

static int on_workers(void **state)
{
    (void)state;
    any_thread = 1;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test_setup(test_stream_equals_points, on_caller),
                                       cmocka_unit_test_setup(test_refusal_cancel_and_parts, on_caller),
                                       cmocka_unit_test_setup(test_thread_counts, on_caller),
                                       cmocka_unit_test_setup(test_stream_equals_points, on_workers),
                                       cmocka_unit_test_setup(test_refusal_cancel_and_parts, on_workers),
                                       cmocka_unit_test_setup(test_thread_counts, on_workers),
                                       cmocka_unit_test(test_file),
                                       cmocka_unit_test(test_file_size_limit)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
