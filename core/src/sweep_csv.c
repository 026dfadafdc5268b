#define _DEFAULT_SOURCE /* realpath, readlink, lstat */
/* Streaming a sweep to CSV (hbdlab/sweep.h, hl_sweep_csv): a pool of worker threads, started
 * once per call, claims blocks of points in order, evaluates each point and formats its row
 * into the block's slot; the next block in order is handed to the sink and its slot freed, by
 * the calling thread (it waits on a condition variable, no polling) or, when the sink may run
 * on any thread, by the worker that completes it (the text is still in that worker's cache, and
 * nobody wakes for it). At most SLOTS_PER_THREAD blocks per worker are in flight, so memory is
 * bounded by the slots, not by the sweep. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csv_int.h"
#include "err_int.h"
#include "hbdlab/csv.h"
#include "hbdlab/result.h"
#include "result_int.h"
#include "sweep_int.h"
#include "hbdlab/io.h"

enum { SLOTS_PER_THREAD = 3, MAX_THREADS = 256 };

typedef struct slot {
    hl_csv csv;     /* the rows of the block */
    int64_t rows;   /* rows in csv */
    int64_t points; /* points of this process in the block */
    int ready;      /* 1: formatted, waiting for the writer */
} slot;

typedef struct stream {
    const hl_sweep_in *in;
    const hl_sweep_plan *plan;
    const hl_sweep_csv_opts *o;
    const int32_t *cols;  /* o->columns, or every field */
    const int32_t *code;  /* code[c]: column c's hl_result_gather_code; a point's v[c] is column c */
    const int32_t *plain; /* plain[c]: column c is a number (hl_csv_number, no type lookup per cell) */
    const int32_t *type;  /* type[c]: column c's hl_value_type */
    const int32_t *run;   /* run[c]: number columns from c on (0: column c is not one) */
    int32_t direct;       /* every axis a number and every column a number, integer or boolean:
                           * a good point's row is written in one piece (direct_row) */
    int32_t ncols;
    int64_t first, n, nblocks;
    slot *slots;
    int64_t nslots;
    pthread_mutex_t mu;
    pthread_cond_t ready_cv; /* a slot became ready, or a worker left */
    pthread_cond_t free_cv;  /* the writer freed a slot, or the stream stops */
    int64_t next_claim;      /* the next block a worker takes */
    int64_t next_write;      /* the next block the writer hands over */
    int active;              /* workers still in their loop */
    int stop;                /* the sink refused text or memory ran out: everyone stops */
    int any_thread;          /* o->sink_any_thread: the workers hand the blocks over */
    int writing;             /* a worker is handing blocks over (any_thread) */
    int bad;                 /* -1 out of memory, -2 the sink refused (as deliver returns) */
    int64_t rows, done;      /* rows and points handed over so far */
} stream;

static int cancelled(const stream *s) { return s->in->cancel && *s->in->cancel; }

/* What a thread keeps from one point to its next: its reusable job and point, the cursor, and
 * the text direct_row wrote for each axis's last value (with its ','; index -1: none yet), so an
 * axis that did not move since the thread's last row is copied, not formatted again. */
typedef struct thread_state {
    hl_job job;
    hl_point point;
    hl_sweep_cursor cur;
    int64_t text_index[HL_SWEEP_MAX_AXES];
    int32_t text_len[HL_SWEEP_MAX_AXES];
    char text[HL_SWEEP_MAX_AXES][32]; /* a cell is at most 25 bytes and its ',' */
} thread_state;

static void thread_state_init(thread_state *t)
{
    t->cur.have = 0;
    for (int32_t a = 0; a < HL_SWEEP_MAX_AXES; a++)
        t->text_index[a] = -1;
}

/* One axis value cell of point `index`'s row. */
static void axis_cell(hl_csv *csv, const hl_axis *ax, int64_t k)
{
    if (ax->kind == HL_AXIS_NUMBER && ax->numbers[k] == 0 && strcmp(ax->name, "batch") == 0)
        hl_csv_text(csv, "max"); /* a batch axis value "max" travels as 0 */
    else if (ax->kind == HL_AXIS_NUMBER)
        hl_csv_number(csv, ax->numbers[k]);
    else
        hl_csv_text(csv, ax->kind == HL_AXIS_STRING  ? ax->strings[k]
                         : ax->kind == HL_AXIS_MODEL ? ax->models[k].name
                         : ax->kind == HL_AXIS_GPU   ? ax->gpus[k].name
                                                     : ax->clusters[k].name);
}

/* format_row for a good point when s->direct: the same text, the cells written straight into
 * one reservation for the row (each cell at most HL_CSV_NUMBER_ROOM bytes with its ',' and
 * scratch) instead of a reserve and a comma per cell. */
static void direct_row(const stream *s, thread_state *t, hl_csv *csv)
{
    const int64_t *value_index = t->cur.value_index;
    const hl_point *p = &t->point;
    const hl_sweep_in *in = s->in;
    char *o = hl_csv_room(csv, (int64_t)(in->n_axes + s->ncols + 1) * HL_CSV_NUMBER_ROOM);
    if (!o)
        return;
    /* locals: stores through o may alias anything, so fields read in the loops would be reloaded */
    const hl_axis *axes = in->axes;
    const int32_t *type = s->type, *run = s->run;
    const double *scales = s->o->scales;
    int32_t n_axes = in->n_axes, ncols = s->ncols;
    for (int32_t a = 0; a < n_axes; a++) {
        if (t->text_index[a] == value_index[a]) { /* its text, and scratch up to 32 bytes (room: 48) */
            memcpy(o, t->text[a], 32);
            o += t->text_len[a];
            continue;
        }
        char *cell = o;
        double v = axes[a].numbers[value_index[a]];
        if (v == 0 && strcmp(axes[a].name, "batch") == 0) { /* as axis_cell */
            memcpy(o, "max,", 4);
            o += 4;
        } else {
            o += hl_csv_format_number_wide(v, o);
            *o++ = ',';
        }
        t->text_index[a] = value_index[a];
        t->text_len[a] = (int32_t)(o - cell);
        memcpy(t->text[a], cell, 32);
    }
    double vals[HL_POINT_VALUES];
    for (int32_t c = 0; c < ncols; c++) {
        if (run[c] > 0) { /* the run of number columns from c on, in one call (its frame paid once) */
            int32_t m = run[c];
            if (scales) {
                for (int32_t j = 0; j < m; j++)
                    vals[j] = p->v[c + j] * scales[c + j];
                o = hl_csv_put_numbers(o, vals, m);
            } else { /* the point's values are its columns in order: read in place */
                o = hl_csv_put_numbers(o, &p->v[c], m);
            }
            c += m - 1;
            continue;
        }
        double v = p->v[c] * (scales ? scales[c] : 1);
        if (type[c] == HL_VALUE_INTEGER) {
            o = hl_csv_put_integer(o, (int64_t)v);
        } else { /* HL_VALUE_BOOL, as hl_csv_bool(v != 0) */
            memcpy(o, v != 0 ? "true" : "false", 5);
            o += v != 0 ? 4 : 5;
        }
        *o++ = ',';
    }
    *o++ = '\n'; /* the error column, empty */
    hl_csv_commit_row(csv, o);
}

/* The row of the point t holds (its axis values as hl_sweep_eval_point left them in t->cur). */
static void format_row(const stream *s, thread_state *t, hl_csv *csv)
{
    const hl_sweep_in *in = s->in;
    const int64_t *value_index = t->cur.value_index;
    const hl_point *p = &t->point;
    if (s->direct && p->status == HL_OK && csv->cells == 0) {
        direct_row(s, t, csv);
        return;
    }
    for (int32_t a = 0; a < in->n_axes; a++)
        axis_cell(csv, &in->axes[a], value_index[a]);
    for (int32_t c = 0; c < s->ncols; c++) {
        double v = p->v[c] * (s->o->scales ? s->o->scales[c] : 1);
        if (p->status == HL_OK && s->plain[c])
            hl_csv_number(csv, v);
        else if (p->status == HL_OK)
            hl_csv_result(csv, s->cols[c], v);
        else
            hl_csv_empty(csv);
    }
    if (p->status != HL_OK)
        hl_csv_text(csv, p->error);
    else
        hl_csv_empty(csv); /* the error column */
    hl_csv_end_row(csv);
}

/* This process's points of block b: [*lo, *hi). */
static void block_range(const stream *s, int64_t b, int64_t *lo, int64_t *hi)
{
    int64_t start = s->first + b * HL_SWEEP_CSV_BLOCK;
    int64_t len = s->first + s->n - start < HL_SWEEP_CSV_BLOCK ? s->first + s->n - start : HL_SWEEP_CSV_BLOCK;
    if (s->o->parts > 1) {
        *lo = start + len * s->o->part / s->o->parts;
        *hi = start + len * (s->o->part + 1) / s->o->parts;
    } else {
        *lo = start;
        *hi = start + len;
    }
}

/* Evaluates and formats block b into sl (t: the calling thread's state). */
static void produce(const stream *s, int64_t b, slot *sl, thread_state *t)
{
    int64_t lo, hi;
    block_range(s, b, &lo, &hi);
    hl_csv_clear(&sl->csv);
    sl->rows = 0;
    sl->points = hi - lo;
    for (int64_t i = lo; i < hi; i++) {
        if (cancelled(s))
            break; /* the points not reached are left out */
        hl_sweep_eval_point(s->in, s->plan, i, &t->job, &t->cur, s->code, s->ncols, &t->point);
        format_row(s, t, &sl->csv);
        sl->rows++;
        if (s->in->progress)
            __atomic_add_fetch(s->in->progress, 1, __ATOMIC_RELAXED);
    }
}

static int deliver(stream *s, const slot *sl, int64_t *rows, int64_t *done);

/* With s->mu held and no other worker handing over (any_thread): hands the ready blocks from
 * next_write on to the sink, in order, the lock released around each call. */
static void hand_over_ready(stream *s)
{
    s->writing = 1;
    while (!s->bad && s->next_write < s->nblocks) {
        slot *sl = &s->slots[s->next_write % s->nslots];
        if (!sl->ready)
            break;
        pthread_mutex_unlock(&s->mu);
        int bad = deliver(s, sl, &s->rows, &s->done);
        pthread_mutex_lock(&s->mu);
        sl->ready = 0;
        s->next_write++;
        if (bad) {
            s->bad = bad;
            s->stop = 1;
        }
        pthread_cond_broadcast(&s->free_cv);
    }
    s->writing = 0;
}

static void *worker(void *arg)
{
    stream *s = arg;
    thread_state t;
    thread_state_init(&t);
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->stop && !cancelled(s) && s->next_claim < s->nblocks && s->next_claim >= s->next_write + s->nslots)
            pthread_cond_wait(&s->free_cv, &s->mu);
        if (s->stop || cancelled(s) || s->next_claim >= s->nblocks) {
            s->active--;
            pthread_cond_broadcast(&s->ready_cv);
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        int64_t b = s->next_claim++;
        slot *sl = &s->slots[b % s->nslots];
        pthread_mutex_unlock(&s->mu);
        produce(s, b, sl, &t);
        pthread_mutex_lock(&s->mu);
        sl->ready = 1;
        if (!s->any_thread)
            pthread_cond_broadcast(&s->ready_cv);
        else if (!s->writing) /* else the worker handing over takes this block when its turn comes */
            hand_over_ready(s);
        pthread_mutex_unlock(&s->mu);
    }
}

/* Hands slot text to the sink; 0 on success (else the stream stops). */
static int deliver(stream *s, const slot *sl, int64_t *rows, int64_t *done)
{
    *rows += sl->rows;
    *done += sl->points;
    if (sl->csv.failed)
        return -1;
    return s->o->sink(s->o->user, sl->csv.text ? sl->csv.text : "", sl->csv.len, *done) != 0 ? -2 : 0;
}

static hl_status write_header(const stream *s, hl_err *err)
{
    hl_csv h;
    hl_csv_init(&h);
    for (int32_t a = 0; a < s->in->n_axes; a++)
        hl_csv_text(&h, s->in->axes[a].name);
    for (int32_t c = 0; c < s->ncols; c++)
        hl_csv_text(&h, s->o->names ? s->o->names[c] : hl_result_field_at(s->cols[c])->name);
    hl_csv_text(&h, "error");
    hl_csv_end_row(&h);
    int bad = h.failed ? 1 : s->o->sink(s->o->user, h.text, h.len, 0) != 0 ? 2 : 0;
    hl_csv_free(&h);
    if (bad)
        return bad == 1 ? hl_fail(err, HL_ENOMEM, "sweep csv: out of memory")
                        : hl_fail(err, HL_EIO, "sweep csv: the output refused the header");
    return HL_OK;
}

hl_status hl_sweep_csv(const hl_sweep_in *in, const hl_sweep_csv_opts *o, int64_t *rows, hl_err *err)
{
    *rows = 0;
    int64_t total;
    hl_status st = hl_sweep_count(in, &total, err);
    if (st)
        return st;
    if (!o->sink)
        return hl_fail(err, HL_EINVAL, "sweep csv: no sink");
    int32_t all[HL_POINT_VALUES], code[HL_POINT_VALUES], plain[HL_POINT_VALUES], type[HL_POINT_VALUES],
        run[HL_POINT_VALUES + 1], direct = 1;
    int32_t ncols = o->columns ? o->n_columns : HL_POINT_VALUES;
    if (ncols < 1 || ncols > HL_POINT_VALUES)
        return hl_fail(err, HL_EINVAL, "sweep csv: %d columns; allowed 1..%d", (int)ncols, HL_POINT_VALUES);
    for (int32_t c = 0; c < ncols; c++) {
        all[c] = o->columns ? o->columns[c] : c;
        const hl_result_field *f = hl_result_field_at(all[c]);
        if (!f)
            return hl_fail(err, HL_EINVAL, "sweep csv: column %d is field %d; allowed 0..%d", (int)c, (int)all[c],
                           HL_POINT_VALUES - 1);
        code[c] = hl_result_gather_code(all[c]);
        plain[c] = f->type == HL_VALUE_NUMBER;
        type[c] = f->type;
        direct = direct && (f->type == HL_VALUE_NUMBER || f->type == HL_VALUE_INTEGER || f->type == HL_VALUE_BOOL);
    }
    run[ncols] = 0;
    for (int32_t c = ncols - 1; c >= 0; c--)
        run[c] = plain[c] ? run[c + 1] + 1 : 0;
    if (o->parts < 0 || (o->parts > 0 && (o->part < 0 || o->part >= o->parts)))
        return hl_fail(err, HL_EINVAL, "sweep csv: part %d of %d is not allowed", (int)o->part, (int)o->parts);
    int64_t first = in->first, n = in->count > 0 ? in->count : total - first;
    if (first < 0 || first > total || n < 0 || first + n > total)
        return hl_fail(err, HL_EINVAL, "sweep csv: range [%lld, %lld) is outside the %lld points", (long long)first,
                       (long long)(first + n), (long long)total);
    stream s;
    memset(&s, 0, sizeof s);
    s.in = in;
    s.o = o;
    s.cols = all;
    s.code = code;
    s.plain = plain;
    s.type = type;
    s.run = run;
    for (int32_t a = 0; a < in->n_axes; a++)
        direct = direct && in->axes[a].kind == HL_AXIS_NUMBER;
    s.direct = direct;
    s.ncols = ncols;
    s.any_thread = o->sink_any_thread != 0;
    s.first = first;
    s.n = n;
    s.nblocks = (n + HL_SWEEP_CSV_BLOCK - 1) / HL_SWEEP_CSV_BLOCK;
    if (o->header && (st = write_header(&s, err)))
        return st;
    if (s.nblocks == 0)
        return HL_OK;
    hl_sweep_plan *pl;
    if ((st = hl_sweep_plan_new(in, &pl, err)))
        return st;
    s.plan = pl;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t threads = in->threads > 0 ? in->threads : (cpus > 0 ? cpus : 1);
    threads = threads > MAX_THREADS ? MAX_THREADS : threads > s.nblocks ? s.nblocks : threads;
    s.nslots = SLOTS_PER_THREAD * threads;
    s.slots = calloc((size_t)s.nslots, sizeof *s.slots);
    if (!s.slots) {
        hl_sweep_plan_free(pl, in->n_axes);
        return hl_fail(err, HL_ENOMEM, "sweep csv: out of memory");
    }
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.ready_cv, NULL);
    pthread_cond_init(&s.free_cv, NULL);
    pthread_t tids[MAX_THREADS];
    int started = 0;
    for (int64_t t = 0; t < threads; t++) {
        pthread_mutex_lock(&s.mu);
        s.active++;
        pthread_mutex_unlock(&s.mu);
        if (pthread_create(&tids[started], NULL, worker, &s) == 0) {
            started++;
        } else {
            pthread_mutex_lock(&s.mu);
            s.active--;
            pthread_mutex_unlock(&s.mu);
        }
    }
    int64_t done = 0;
    int bad = 0;        /* -1 out of memory, -2 the sink refused */
    if (started == 0) { /* no thread could start: everything on this one, block by block */
        thread_state t;
        thread_state_init(&t);
        for (int64_t b = 0; b < s.nblocks && !bad && !cancelled(&s); b++) {
            produce(&s, b, &s.slots[0], &t);
            bad = deliver(&s, &s.slots[0], rows, &done);
        }
    } else if (s.any_thread) { /* the workers hand every block over; wait for them to leave */
        pthread_mutex_lock(&s.mu);
        while (s.active > 0)
            pthread_cond_wait(&s.ready_cv, &s.mu);
        pthread_mutex_unlock(&s.mu);
        for (int t = 0; t < started; t++)
            pthread_join(tids[t], NULL);
        bad = s.bad;
        *rows = s.rows;
    } else {
        for (int64_t b = 0; b < s.nblocks && !bad; b++) {
            slot *sl = &s.slots[b % s.nslots];
            pthread_mutex_lock(&s.mu);
            /* block b is coming when it was claimed, or may still be while workers are left */
            while (!sl->ready && (b < s.next_claim || s.active > 0))
                pthread_cond_wait(&s.ready_cv, &s.mu);
            int ready = sl->ready;
            pthread_mutex_unlock(&s.mu);
            if (!ready)
                break; /* cancelled before anyone took it */
            bad = deliver(&s, sl, rows, &done);
            pthread_mutex_lock(&s.mu);
            sl->ready = 0;
            s.next_write = b + 1;
            if (bad)
                s.stop = 1;
            pthread_cond_broadcast(&s.free_cv);
            pthread_mutex_unlock(&s.mu);
        }
        pthread_mutex_lock(&s.mu);
        s.stop = 1;
        pthread_cond_broadcast(&s.free_cv);
        pthread_mutex_unlock(&s.mu);
        for (int t = 0; t < started; t++)
            pthread_join(tids[t], NULL);
    }
    for (int64_t i = 0; i < s.nslots; i++)
        hl_csv_free(&s.slots[i].csv);
    free(s.slots);
    pthread_cond_destroy(&s.free_cv);
    pthread_cond_destroy(&s.ready_cv);
    pthread_mutex_destroy(&s.mu);
    hl_sweep_plan_free(pl, in->n_axes);
    if (bad == -1)
        return hl_fail(err, HL_ENOMEM, "sweep csv: out of memory");
    if (bad)
        return hl_fail(err, HL_EIO, "sweep csv: the output refused the rows");
    if (cancelled(&s))
        return hl_fail(err, HL_EINTR, "sweep interrupted");
    return HL_OK;
}

/* ---- into a file ---- */

/* the file, the errno of its first failed write (EFBIG, ENOSPC), read at the write: the calls
 * after it (fclose's, the caller's) overwrite errno; and its write-behind (a long file's written
 * pages handed to the disk and dropped from the page cache as it grows: write_behind.c says why) */
typedef struct file_out {
    FILE *f;
    int write_errno;
    hl_write_behind wb;
} file_out;

static int32_t file_sink(void *user, const char *text, int64_t len, int64_t points_done)
{
    (void)points_done;
    file_out *fo = user;
    if (len > 0 && fwrite(text, 1, (size_t)len, fo->f) != (size_t)len) {
        if (!fo->write_errno)
            fo->write_errno = errno ? errno : EIO;
        return -1;
    }
    hl_write_behind_wrote(&fo->wb, len);
    return 0;
}

hl_status hl_sweep_csv_file(const hl_sweep_in *in, const hl_sweep_csv_opts *o, const char *path, int64_t *rows,
                            hl_err *err)
{
    if (!in || !o || !path)
        return hl_fail(err, HL_EINVAL, "hl_sweep_csv_file: the %s is NULL", !in ? "input" : !o ? "options" : "path");
    *rows = 0;
    if (!path || !*path)
        return hl_fail(err, HL_EINVAL, "sweep csv: no file name");
    /* the file replaces only a regular file (or nothing): a folder's name ("dir/") failed at the end
     * as "Not a directory", a FIFO or a symbolic link loop was replaced by the file */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    struct stat sb;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return hl_fail(err, HL_EINVAL, "sweep csv: cannot write %s: the name is a folder's: give a file name", path);
    int missing = stat(path, &sb) != 0, loop = missing && errno == ELOOP;
    if (loop || (!missing && !S_ISREG(sb.st_mode)))
        return hl_fail(err, HL_EIO, "sweep csv: cannot write %s: %s", path,
                       loop                   ? strerror(ELOOP)
                       : S_ISDIR(sb.st_mode)  ? "it is a folder"
                       : S_ISFIFO(sb.st_mode) ? "it is a FIFO, not a regular file"
                                              : "it is a device or socket, not a regular file");
    /* a symbolic link is written through (its target replaced, the link kept), as a shell's '>' does;
     * one to an open descriptor (/dev/stdout, /dev/fd/N, /proc/self/fd/N) is refused: renamed over,
     * as root, /dev/stdout itself was replaced by the file */
    struct stat lsb;
    char real[PATH_MAX], link[PATH_MAX];
    if (lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
        ssize_t ln = readlink(path, link, sizeof link - 1);
        link[ln > 0 ? ln : 0] = '\0';
        if (strncmp(path, "/proc/", 6) == 0 || strncmp(path, "/dev/fd/", 8) == 0 || strncmp(link, "/proc/", 6) == 0)
            return hl_fail(err, HL_EINVAL,
                           "sweep csv: cannot write %s: it is a link to an open descriptor (stream to it with "
                           "hl_sweep_csv and a sink)",
                           path);
        if (!realpath(path, real))
            return hl_fail(err, HL_EIO, "sweep csv: cannot write %s: its link's target: %s", path, strerror(errno));
        path = real;
    }
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (!tmp)
        return hl_fail(err, HL_ENOMEM, "sweep csv: out of memory");
    snprintf(tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        return hl_fail(err, HL_EIO, "sweep csv: cannot write %s: %s", path, strerror(e));
    }
    file_out out = {.f = f};
    hl_write_behind_init(&out.wb, fd);
    hl_sweep_csv_opts fo = *o;
    fo.header = 1;
    fo.sink = file_sink;
    fo.user = &out;
    fo.sink_any_thread = 1; /* fwrite, one call at a time */
    hl_status st = hl_sweep_csv(in, &fo, rows, err);
    int e = out.write_errno;
    if (ferror(f) && !e)
        e = errno ? errno : EIO;
    if (fclose(f) != 0 && !e)
        e = errno ? errno : EIO;
    if ((st == HL_OK || st == HL_EINTR) && !e && rename(tmp, path) != 0)
        e = errno;
    if ((st != HL_OK && st != HL_EINTR) || e) {
        unlink(tmp);
        free(tmp);
        /* a failed write stops the sweep (HL_EIO, "the output refused the rows"): name its cause */
        return st != HL_OK && st != HL_EINTR && !out.write_errno
                   ? st
                   : hl_fail(err, HL_EIO, "sweep csv: cannot write %s: %s", path, strerror(e));
    }
    free(tmp);
    return st;
}
