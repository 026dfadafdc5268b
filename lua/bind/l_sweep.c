/* core.sweep(base, axes, opts): a sweep evaluated in C on threads.
 *   base: hl.simulate fields; axes: array of {name = "hbd", values = {...}}
 *   opts: {zip = false, threads = 0, strict = false, progress = true}
 * Returns rows (views over the sweep's compact store, l_sweep_rows.c: axes + flattened result
 * fields, or an `error` field), a second
 * value: true when Ctrl-C stopped the sweep (the rows done are kept), and the
 * sweep's number of points (the rows are this shard's block of them). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bind.h"
#include "dist.h"

volatile int32_t hl_bind_interrupt = 0;
volatile int32_t hl_bind_interrupt_signal = 0;

const char *hl_bind_stop_name(void) { return hl_bind_interrupt_signal == SIGHUP ? "SIGHUP" : "SIGTERM"; }

typedef struct run_ctx {
    hl_sweep_in in;
    hl_sweep_store *store; /* the points (the sweep's whole count; this run fills in.first..) */
    hl_sweep_store points; /* l_sweep's store (store points here there) */
    hl_err err;
    hl_status status;
    int finished;       /* under mu: the sweep returned */
    pthread_mutex_t mu; /* with done_cv: only when a watcher waits (progress bar, test hook) */
    pthread_cond_t done_cv;
    int watched;
} run_ctx;

static void *run_thread(void *arg)
{
    run_ctx *c = arg;
    c->status = hl_sweep_run_store(&c->in, c->store, &c->err);
    if (c->watched) {
        pthread_mutex_lock(&c->mu);
        c->finished = 1;
        pthread_cond_signal(&c->done_cv);
        pthread_mutex_unlock(&c->mu);
    }
    return NULL;
}

static void draw_progress(int64_t done, int64_t total, double elapsed)
{
    double frac = total > 0 ? (double)done / (double)total : 1;
    int width = 30, fill = (int)(frac * width);
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    double rate = elapsed > 0 ? (double)done / elapsed : 0;
    double eta = rate > 0 ? (double)(total - done) / rate : 0;
    fprintf(stderr, "\r[%s] %3.0f%% %lld/%lld  %.3g points/s  ETA %.1fs ", bar, frac * 100, (long long)done,
            (long long)total, rate, eta);
    fflush(stderr);
}

/* Runs hl_sweep_run_store(in, store) on a thread while this one polls Ctrl-C (setting
 * *in->cancel) and, when `show`, draws the progress of `total` points of which
 * `before` were done earlier (t0: when the whole sweep started). */
/* Test hook for deterministic interruption tests: HBDLAB_TEST_INTERRUPT="INT:N" (or
 * "TERM:N", "HUP:N") makes a sweep send itself that signal once N points (of a chunk) are done,
 * through the host's real handler; "INT:rows" while the rows are built. Returns the
 * signal (0 when unset) and N in *after (-2 for rows). */
static int test_interrupt(int64_t *after)
{
    const char *v = getenv("HBDLAB_TEST_INTERRUPT");
    long long n = -1;
    char name[8], phase[8] = "";
    if (!v || (sscanf(v, "%7[A-Z]:%lld", name, &n) != 2 && sscanf(v, "%7[A-Z]:%7[a-z]", name, phase) != 2))
        return 0;
    if (strcmp(phase, "rows") == 0)
        n = -2; /* while the Lua rows are built (build_rows) */
    else if (n < 0)
        return 0;
    *after = (int64_t)n;
    return strcmp(name, "TERM") == 0  ? SIGTERM
           : strcmp(name, "HUP") == 0 ? SIGHUP
           : strcmp(name, "INT") == 0 ? SIGINT
                                      : 0;
}

static hl_status run_polled(const hl_sweep_in *in, hl_sweep_store *store, hl_err *err, int show, int64_t before,
                            int64_t total, double t0)
{
    run_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    volatile int64_t done = 0;
    ctx.in = *in;
    ctx.in.progress = &done;
    ctx.store = store;
    pthread_t th;
    double last = 0;
    int64_t test_after = 0;
    int test_sig = test_interrupt(&test_after);
    if (test_sig && test_after < 0)
        test_sig = 0; /* "INT:rows" is raised by build_rows */
    /* Ctrl-C reaches the workers through in->cancel (the host's flag): nothing to watch unless a
     * progress bar is drawn or the test hook waits for its point count; then this thread sleeps
     * on done_cv, woken when the sweep returns (no polling delay at the end) */
    ctx.watched = show || test_sig;
    if (!ctx.watched) {
        run_thread(&ctx);
    } else {
        pthread_mutex_init(&ctx.mu, NULL);
        pthread_cond_init(&ctx.done_cv, NULL);
        if (pthread_create(&th, NULL, run_thread, &ctx) != 0) {
            ctx.watched = 0;
            run_thread(&ctx);
        } else {
            pthread_mutex_lock(&ctx.mu);
            while (!ctx.finished) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                long step_ns = test_sig ? 5000000L : 100000000L; /* the hook: 5 ms; the bar: 100 ms */
                ts.tv_nsec += step_ns;
                if (ts.tv_nsec >= 1000000000L) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&ctx.done_cv, &ctx.mu, &ts);
                if (ctx.finished)
                    break;
                pthread_mutex_unlock(&ctx.mu);
                if (test_sig && done >= test_after) {
                    raise(test_sig);
                    test_sig = 0;
                }
                double t = hl_clock_s();
                if (show && t - last > 0.1) {
                    draw_progress(before + done, total, t - t0);
                    last = t;
                }
                pthread_mutex_lock(&ctx.mu);
            }
            pthread_mutex_unlock(&ctx.mu);
            pthread_join(th, NULL);
        }
        pthread_cond_destroy(&ctx.done_cv);
        pthread_mutex_destroy(&ctx.mu);
    }
    if (in->progress)
        *in->progress = done;
    if (ctx.status)
        *err = ctx.err;
    return ctx.status;
}

/* Keeps the Lua-owned axis value arrays alive in a userdata-free way: they are
 * allocated here and freed before returning or raising. */
typedef struct axes_mem {
    hl_axis *axes;
    int32_t n;
} axes_mem;

static void free_axes(axes_mem *m)
{
    for (int32_t i = 0; i < m->n; i++) {
        free((void *)m->axes[i].numbers);
        free((void *)m->axes[i].strings);
        free((void *)m->axes[i].models);
        free((void *)m->axes[i].clusters);
        free((void *)m->axes[i].gpus);
    }
    free(m->axes);
    m->axes = NULL;
}

/* The model, cluster or GPU object of an axis of that kind at idx, or NULL. */
static const void *axis_object(lua_State *L, int idx, hl_axis_kind kind)
{
    if (kind == HL_AXIS_MODEL)
        return hl_to_model(L, idx);
    return kind == HL_AXIS_CLUSTER ? (const void *)hl_to_cluster(L, idx) : (const void *)hl_to_gpu(L, idx);
}

/* Reads axis i (table at top) into ax; strings stay owned by the Lua table. */
static const char *read_axis(lua_State *L, hl_axis *ax)
{
    if (lua_getfield(L, -1, "name") != LUA_TSTRING)
        return "sweep axis: 'name' must be a string";
    if (hl_holds_nul(L, -1)) /* returned, not raised: the caller frees the axes read so far */
        return "sweep: an axis name holds a NUL byte (text given to hbdlab cannot hold NUL bytes)";
    snprintf(ax->name, sizeof ax->name, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    if (lua_getfield(L, -1, "values") != LUA_TTABLE)
        return "sweep axis: 'values' must be a non-empty array";
    int n = (int)luaL_len(L, -1);
    if (n < 1)
        return "sweep axis: 'values' must be a non-empty array";
    ax->n = n;
    lua_rawgeti(L, -1, 1);
    int t = lua_type(L, -1);
    lua_pop(L, 1);
    if (t == LUA_TNUMBER) {
        double *v = calloc((size_t)n, sizeof *v);
        ax->numbers = v;
        ax->kind = HL_AXIS_NUMBER;
        for (int i = 0; v && i < n; i++) {
            /* a number as it is; else what lua_isnumber takes (a numeric string) */
            if (lua_rawgeti(L, -1, i + 1) != LUA_TNUMBER && !lua_isnumber(L, -1))
                return "sweep axis: values must all be numbers";
            v[i] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
    } else if (t == LUA_TSTRING) {
        const char **v = calloc((size_t)n, sizeof *v);
        ax->strings = v;
        ax->kind = HL_AXIS_STRING;
        for (int i = 0; v && i < n; i++) {
            lua_rawgeti(L, -1, i + 1);
            if (lua_type(L, -1) != LUA_TSTRING)
                return "sweep axis: values must all be strings";
            if (hl_holds_nul(L, -1))
                return "sweep: an axis value holds a NUL byte (text given to hbdlab cannot hold NUL bytes)";
            v[i] = lua_tostring(L, -1); /* alive: referenced by the values table */
            lua_pop(L, 1);
        }
    } else if (t == LUA_TUSERDATA) {
        lua_rawgeti(L, -1, 1);
        hl_axis_kind kind = hl_to_model(L, -1) ? HL_AXIS_MODEL : hl_to_cluster(L, -1) ? HL_AXIS_CLUSTER : HL_AXIS_GPU;
        lua_pop(L, 1);
        size_t size = kind == HL_AXIS_MODEL     ? sizeof(hl_model)
                      : kind == HL_AXIS_CLUSTER ? sizeof(hl_cluster)
                                                : sizeof(hl_gpu);
        char *v = calloc((size_t)n, size);
        ax->kind = kind;
        if (kind == HL_AXIS_MODEL)
            ax->models = (hl_model *)v;
        else if (kind == HL_AXIS_CLUSTER)
            ax->clusters = (hl_cluster *)v;
        else
            ax->gpus = (hl_gpu *)v;
        for (int i = 0; v && i < n; i++) {
            lua_rawgeti(L, -1, i + 1);
            const void *obj = axis_object(L, -1, kind);
            if (!obj)
                return kind == HL_AXIS_MODEL     ? "sweep axis: values must all be models"
                       : kind == HL_AXIS_CLUSTER ? "sweep axis: values must all be clusters"
                                                 : "sweep axis: values must all be gpus, models or clusters";
            memcpy(v + (size_t)i * size, obj, size);
            lua_pop(L, 1);
        }
    } else {
        return "sweep axis: values must be numbers, strings, or gpu/model/cluster objects";
    }
    lua_pop(L, 1);
    if (!ax->numbers && !ax->strings && !ax->models && !ax->clusters && !ax->gpus)
        return "sweep: out of memory";
    return NULL;
}

/* Reads the base job (simulate fields at index 1) and the axes (index 2) of a
 * C sweep. On success *mem owns the axis arrays (free_axes); raises otherwise. */
static void read_sweep_args(lua_State *L, const char *who, hl_sweep_in *in, axes_mem *mem)
{
    int batch_max, auto_plan;
    hl_plan_in pin;
    hl_check_job(L, 1, &pin, &batch_max, &auto_plan);
    memset(in, 0, sizeof *in);
    in->base = pin.job;
    /* batch = "max" and parallel = "auto" in the base: every point searches, as hl.simulate does */
    in->batch_max = batch_max;
    in->auto_plan = auto_plan;
    in->objective = pin.objective;
    in->max_tpot = pin.max_tpot;
    in->max_ttft = pin.max_ttft;
    int32_t na = (int32_t)luaL_len(L, 2);
    if (na > HL_SWEEP_MAX_AXES)
        hl_error(L, "sweep: %d axes; at most %d", (int)na, HL_SWEEP_MAX_AXES);
    mem->n = 0;
    mem->axes = calloc((size_t)(na > 0 ? na : 1), sizeof(hl_axis));
    if (!mem->axes)
        hl_error(L, "%s: out of memory", who);
    for (int32_t i = 0; i < na; i++) {
        lua_rawgeti(L, 2, i + 1);
        mem->n = i + 1;
        const char *msg = lua_istable(L, -1) ? read_axis(L, &mem->axes[i]) : "sweep: each axis must be a table";
        if (msg) {
            free_axes(mem);
            hl_error(L, "%s (axis %d)", msg, (int)i + 1);
        }
        lua_pop(L, 1);
    }
}

/* Bytes one in-memory row takes: its point in the store (hl_sweep_store_point_bytes: 67 values
 * and a fault code, 540 bytes) and its view (l_sweep_rows.c): a Lua 5.4 userdata of 8 bytes
 * (a 32-byte header, 40 bytes, a 48-byte malloc chunk) and its 16-byte slot in the rows array
 * (the array part grows by doubling while the rows are pushed: up to 2 x 16 bytes a row at its
 * peak). Messages of failed points come on top, once per distinct text. Measured: bench's
 * sweep_rows_bytes_per_point (docs/PERFORMANCE.md). */
static double row_bytes(void) { return hl_sweep_store_point_bytes() + 48 + 32; }

/* The in-memory sweep budget in bytes: $HBDLAB_SWEEP_MEMORY_BYTES, else 8 GB; a value that is
 * not a number of bytes in 1..1e18 raises naming the variable (it was replaced by 8 GB silently). */
static double memory_budget(lua_State *L)
{
    double b;
    hl_err err;
    if (hl_env_bytes("HBDLAB_SWEEP_MEMORY_BYTES", 8e9, 1e18, &b, &err))
        hl_raise(L, &err);
    return b;
}

/* core.sweep_memory_budget() -> bytes (function-form sweeps check their points against it) */
static int l_sweep_memory_budget(lua_State *L)
{
    lua_pushnumber(L, memory_budget(L));
    return 1;
}

/* core.sweep_memory_estimate(points) -> bytes the budget check counts for an in-memory sweep */
static int l_sweep_memory_estimate(lua_State *L)
{
    lua_pushnumber(L, row_bytes() * luaL_checknumber(L, 1));
    return 1;
}

/* What build_rows turns into Lua rows (owned by l_sweep, freed there unless the rows took it). */
typedef struct rows_job {
    hl_sweep_store *store;
    const axes_mem *mem;
    int64_t lo, hi;
    int zip, strict;
} rows_job;

/* build_rows(job, core axes) -> rows: a view per point done (protected call from l_sweep). */
static int build_rows(lua_State *L)
{
    const rows_job *rj = lua_touserdata(L, 1);
    int64_t test_after = 0;
    int test_sig = test_interrupt(&test_after);
    if (test_sig && test_after == -2)
        raise(test_sig);
    return hl_sweep_rows_push(L, rj->store, rj->mem->axes, rj->mem->n, rj->zip, 2, rj->lo, rj->hi, rj->strict);
}

/* A hash of a sweep's axes (names, kinds, values; objects by name) and zip: MPI ranks check
 * they run the same sweep before gathering its points (hl_dist_agree). */
static uint64_t axes_hash(const axes_mem *mem, int zip)
{
    uint64_t h = hl_dist_hash(HL_DIST_HASH_START, &zip, sizeof zip);
    for (int32_t a = 0; a < mem->n; a++) {
        const hl_axis *ax = &mem->axes[a];
        h = hl_dist_hash(h, ax->name, strlen(ax->name) + 1);
        h = hl_dist_hash(h, &ax->kind, sizeof ax->kind);
        h = hl_dist_hash(h, &ax->n, sizeof ax->n);
        for (int32_t i = 0; i < ax->n; i++) {
            const char *name = ax->kind == HL_AXIS_STRING    ? ax->strings[i]
                               : ax->kind == HL_AXIS_MODEL   ? ax->models[i].name
                               : ax->kind == HL_AXIS_GPU     ? ax->gpus[i].name
                               : ax->kind == HL_AXIS_CLUSTER ? ax->clusters[i].name
                                                             : NULL;
            h = name ? hl_dist_hash(h, name, strlen(name) + 1) : hl_dist_hash(h, &ax->numbers[i], sizeof(double));
        }
    }
    return h;
}

static int l_sweep(lua_State *L)
{
    luaL_checktype(L, 2, LUA_TTABLE);
    int opts = lua_istable(L, 3) ? 3 : 0;
    int zip = 0, strict = 0, progress = 1;
    int64_t threads = 0;
    double budget = memory_budget(L); /* before anything is allocated: a junk value raises */
    if (opts) {                       /* booleans only: "yes" or 0 are refused, not read as true */
        zip = hl_opt_bool_field(L, opts, "zip", 0);
        strict = hl_opt_bool_field(L, opts, "strict", 0);
        progress = hl_opt_bool_field(L, opts, "progress", 1);
        threads = hl_opt_int_field(L, opts, "threads", 0, 0, 4096); /* 0 = one per CPU */
    }
    hl_sweep_in sin;
    axes_mem mem;
    read_sweep_args(L, "sweep", &sin, &mem);
    int32_t na = mem.n;
    run_ctx *ctx = calloc(1, sizeof *ctx);
    volatile int64_t done = 0;
    hl_err err;
    int64_t n = 0;
    if (!ctx) {
        free_axes(&mem);
        return hl_error(L, "sweep: out of memory");
    }
    ctx->in = sin;
    ctx->in.axes = mem.axes;
    ctx->in.n_axes = na;
    ctx->in.zip = zip;
    ctx->in.threads = (int32_t)threads;
    ctx->in.progress = &done;
    ctx->in.cancel = &hl_bind_interrupt; /* Ctrl-C / SIGTERM stop the workers themselves */
    int64_t lo = 0, hi = 0;
    if (hl_sweep_count(&ctx->in, &n, &err)) {
        free_axes(&mem);
        free(ctx);
        return hl_raise(L, &err);
    }
    /* refused before anything is allocated when the rows would exceed the memory budget */
    double per_row = row_bytes(), need = per_row * (double)n;
    if (need > budget) {
        free_axes(&mem);
        free(ctx);
        char msg[400];
        snprintf(msg, sizeof msg,
                 "sweep: %lld points would take about %.3g GB as rows (%.3g kB each), more than "
                 "the in-memory budget of %.3g GB (HBDLAB_SWEEP_MEMORY_BYTES); stream them to a file with "
                 "hl.sweep_to_csv",
                 (long long)n, need / 1e9, per_row / 1e3, budget / 1e9);
        return hl_error(L, "%s", msg);
    }
    /* MPI: every rank runs this same sweep, else they all stop here with one message */
    char agree_msg[400];
    if (hl_dist_agree(HL_DIST_SWEEP, n, hl_dist_agreeing() ? axes_hash(&mem, zip) : 0, agree_msg, sizeof agree_msg)) {
        free_axes(&mem);
        free(ctx);
        return hl_error(L, "sweep: %s", agree_msg);
    }
    /* this process's block of the points (all of them when alone); under MPI the
     * array holds every point so the blocks can be gathered in place */
    hl_dist_block(n, hl_bind_dist.index, hl_bind_dist.count, &lo, &hi);
    ctx->in.first = lo;
    ctx->in.count = hi - lo;
    if (hl_sweep_store_init(&ctx->points, n, &err)) {
        free_axes(&mem);
        free(ctx);
        return hl_raise(L, &err);
    }
    int show = progress && isatty(STDERR_FILENO) && hi - lo >= 2000;
    double t0 = hl_clock_s();
    /* an empty block runs nothing (count 0 would mean "all") */
    ctx->status = hi == lo ? HL_OK : run_polled(&ctx->in, &ctx->points, &ctx->err, show, 0, hi - lo, t0);
    if (show) {
        draw_progress(done, hi - lo, hl_clock_s() - t0);
        fputc('\n', stderr);
    }
    if (hl_bind_dist.mpi && hl_bind_dist.count > 1) {
        /* gathered only when every rank's block ran (an error or Ctrl-C on one rank alone must not
         * leave the others in the gather) */
        int agreed = hl_dist_agree(HL_DIST_GATHER, ctx->status == HL_OK ? 0 : 1, 0, agree_msg, sizeof agree_msg) == 0;
        if (!agreed || (ctx->status == HL_OK && hl_dist_allgather_store(&ctx->points) != 0)) {
            hl_status st = ctx->status;
            hl_err own = ctx->err;
            hl_sweep_store_free(&ctx->points);
            free_axes(&mem);
            free(ctx);
            if (!agreed && st != HL_OK && st != HL_EINTR) /* this rank's own error says more */
                return hl_raise(L, &own);
            return hl_error(L, "sweep: %s", agreed ? "gathering the points of the MPI ranks failed" : agree_msg);
        }
        if (ctx->status == HL_OK) { /* gathered: every rank holds every point; else (interrupted) its own block */
            lo = 0;
            hi = n;
        }
    }
    int interrupted = hl_bind_interrupt != 0;
    if (ctx->status != HL_OK && ctx->status != HL_EINTR) { /* the sweep itself failed (an unknown axis, ...) */
        hl_err e = ctx->err;
        hl_sweep_store_free(&ctx->points);
        free_axes(&mem);
        free(ctx);
        return hl_raise(L, &e);
    }
    if (interrupted && hl_bind_interrupt == 2) { /* SIGTERM / SIGHUP: the script ends, the rows are dropped */
        hl_sweep_store_free(&ctx->points);
        free_axes(&mem);
        free(ctx);
        lua_sethook(L, NULL, 0, 0); /* this error replaces the hook's "interrupted!" (exit status 130 either way) */
        hl_bind_interrupt = 0;
        return hl_error(L, "sweep terminated (%s) after %I of %I points", hl_bind_stop_name(), (lua_Integer)done,
                        (lua_Integer)n);
    }
    if (interrupted) {
        lua_sethook(L, NULL, 0, 0); /* Ctrl-C: keep the rows, no "interrupted!" error on return */
        hl_bind_interrupt = 0;
        fprintf(stderr, "sweep interrupted: %lld of %lld points done\n", (long long)done, (long long)n);
    }
    /* the rows are built in a protected call: running out of Lua memory (or a strict
     * sweep's error) there frees the points and axes here, then is raised again */
    rows_job rj = {&ctx->points, &mem, lo, hi, zip, strict};
    lua_pushcfunction(L, build_rows);
    lua_pushlightuserdata(L, &rj);
    lua_pushvalue(L, 2); /* the core axes (their labels and given values) */
    int status = lua_pcall(L, 2, 1, 0);
    hl_sweep_store_free(&ctx->points); /* cleared when the rows took it */
    free_axes(&mem);
    free(ctx);
    if (status != LUA_OK)
        return lua_error(L);
    lua_pushboolean(L, interrupted);
    lua_pushinteger(L, (lua_Integer)n); /* every point of the sweep, of which the rows are this process's block */
    return 3;
}

/* Where the core's CSV stream goes: the file (rank 0 under MPI, after gathering every rank's
 * text of the block), the progress bar, the test hook. */
typedef struct csv_out {
    FILE *f;
    hl_write_behind wb; /* f's pages handed to the disk and dropped as it grows (hbdlab/io.h) */
    int gather;
    int failed;
    int write_errno; /* errno of the first write that failed (EFBIG, ENOSPC, ...), 0 if none */
    int show, test_sig;
    int64_t test_after, done, shown_total;
    double t0, last;
    char agree_msg[400]; /* MPI: why the ranks stopped (hl_dist_agree), "" otherwise */
} csv_out;

static int32_t csv_sink(void *user, const char *text, int64_t len, int64_t points_done)
{
    csv_out *o = user;
    char *all = NULL;
    size_t n = (size_t)len;
    if (o->gather) {
        size_t all_len = 0;
        /* every rank hands this block over, or none gathers: a rank stopped (Ctrl-C, an error) is
         * met at its next agreement, not waited for in the gather (issue 22) */
        if (hl_dist_agree(HL_DIST_CHUNK, hl_bind_interrupt != 0, 0, o->agree_msg, sizeof o->agree_msg) != 0) {
            o->failed = 1;
            return -1;
        }
        if (hl_dist_allgather_text(text, n, &all, &all_len) != 0) {
            o->failed = 1;
            return -1;
        }
        text = all;
        n = all_len;
    }
    int bad = o->f && n && fwrite(text, 1, n, o->f) != n;
    if (bad && !o->write_errno)
        o->write_errno = errno ? errno : EIO; /* read now: later calls (isatty's ioctl, ...) overwrite it */
    if (o->f && !bad)
        hl_write_behind_wrote(&o->wb, (int64_t)n);
    free(all);
    o->done = points_done;
    if (o->test_sig && o->done >= o->test_after) {
        raise(o->test_sig);
        o->test_sig = 0;
    }
    double t = hl_clock_s();
    if (o->show && t - o->last > 0.1) {
        draw_progress(o->done, o->shown_total, t - o->t0);
        o->last = t;
    }
    if (bad)
        o->failed = 1;
    return bad ? -1 : 0;
}

/* sweep_to_csv(base, axes, opts, path, columns): streams a sweep of any size to
 * CSV in chunks of 65,536 points (memory stays bounded), written to a temp file
 * renamed into place at the end; on Ctrl-C the rows done are kept (the file is
 * still renamed). Returns rows written and whether it was interrupted. */
static int l_sweep_to_csv(lua_State *L)
{
    luaL_checktype(L, 2, LUA_TTABLE);
    const char *path = hl_check_c_string(L, 4, "sweep_to_csv field 'out'");
    luaL_checktype(L, 5, LUA_TTABLE);
    int threads = (int)(lua_istable(L, 3) ? hl_opt_int_field(L, 3, "threads", 0, 0, 4096) : 0);
    int zip = 0, progress = 1;
    if (lua_istable(L, 3)) { /* booleans only: "yes" or 0 are refused, not read as true */
        zip = hl_opt_bool_field(L, 3, "zip", 0);
        progress = hl_opt_bool_field(L, 3, "progress", 1);
    }
    /* columns: indices into the point fields */
    int ncols = (int)luaL_len(L, 5);
    int32_t cols[HL_POINT_VALUES];
    double scales[HL_POINT_VALUES];
    const char *col_names[HL_POINT_VALUES]; /* as asked (a friendly alias stays itself); alive in the table */
    if (ncols < 1 || ncols > HL_POINT_VALUES)
        return hl_error(L, "sweep_to_csv: columns must list 1..%d result fields", HL_POINT_VALUES);
    for (int c = 0; c < ncols; c++) {
        lua_rawgeti(L, 5, c + 1);
        const char *name = lua_type(L, -1) == LUA_TSTRING ? hl_c_string(L, -1, "sweep_to_csv: a column") : NULL;
        cols[c] = name ? hl_result_column(name, &scales[c]) : -1;
        if (cols[c] < 0)
            return hl_error(L, "sweep_to_csv: '%s' is not a result field", name ? name : "?");
        col_names[c] = name;
        lua_pop(L, 1);
    }
    hl_sweep_in in;
    axes_mem mem;
    read_sweep_args(L, "sweep_to_csv", &in, &mem); /* last: on success it owns memory */
    int32_t na = mem.n;
    in.axes = mem.axes;
    in.n_axes = na;
    in.zip = zip;
    in.threads = threads;
    hl_err err;
    int64_t total;
    if (hl_sweep_count(&in, &total, &err)) {
        free_axes(&mem);
        return hl_raise(L, &err);
    }
    /* a CSV row: ~20 characters per number and per axis value */
    double expect = (double)total * (20.0 * (ncols + na) + 2);
    if (expect > 10e9)
        fprintf(stderr, "sweep_to_csv: %lld rows, about %.3g GB expected in %s\n", (long long)total, expect / 1e9,
                path);
    /* Shards write their own file (path with _shard<i>of<n> before the extension)
     * holding their block of the points; MPI ranks each run a part of every block
     * and rank 0 writes the gathered text, so the file is the single run's. */
    hl_dist d = hl_bind_dist;
    int gather = d.mpi && d.count > 1, writer = !d.mpi || d.index == 0;
    char agree_msg[400];
    if (hl_dist_agree(HL_DIST_STREAM, total, hl_dist_agreeing() ? axes_hash(&mem, zip) : 0, agree_msg,
                      sizeof agree_msg)) {
        free_axes(&mem);
        return hl_error(L, "sweep_to_csv: %s", agree_msg);
    }
    int64_t begin = 0, end = total;
    char shard_path[4200];
    const char *given = path;
    if (!d.mpi && d.count > 1) {
        hl_dist_block(total, d.index, d.count, &begin, &end);
        if (hl_dist_shard_path(path, shard_path, sizeof shard_path) >= (int)sizeof shard_path) {
            free_axes(&mem);
            return hl_error(L, "sweep_to_csv: the file name %s is too long", path);
        }
        path = shard_path;
    }
    char tmp[4300];
    int fd = writer ? hl_files_temp(path, tmp, sizeof tmp) : -1; /* mkstemp, listed for cleanup */
    int open_errno = errno;
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (writer && !f) {
        if (fd >= 0) {
            close(fd);
            hl_files_discard(tmp);
        }
        free_axes(&mem);
        return hl_error(L, "sweep_to_csv: cannot write %s: %s", path, hl_files_reason(open_errno));
    }
    int failed = 0, header_errno = 0;
    if (writer) {
        hl_csv csv; /* the header */
        hl_csv_init(&csv);
        errno = 0;
        char line[1024]; /* a shard's fingerprint for hbdlab merge ("" when not a shard) */
        hl_dist_shard_line(given, begin, end, total, 0, line, sizeof line);
        if (line[0] && fputs(line, f) == EOF) {
            failed = 1;
            header_errno = errno;
        }
        for (int32_t a = 0; a < na; a++)
            hl_csv_text(&csv, mem.axes[a].name);
        for (int c = 0; c < ncols; c++)
            hl_csv_text(&csv, col_names[c]);
        hl_csv_text(&csv, "error");
        hl_csv_end_row(&csv);
        if (csv.failed || fwrite(csv.text, 1, (size_t)csv.len, f) != (size_t)csv.len) {
            failed = 1;
            if (!header_errno)
                header_errno = csv.failed ? ENOMEM : errno;
        }
        hl_csv_free(&csv);
    }
    /* the core streams the rows (formatted on its worker threads) to csv_sink, in order; the
     * workers stop on Ctrl-C / SIGTERM themselves: they read the host's interrupt flag */
    csv_out out;
    memset(&out, 0, sizeof out);
    out.f = f;
    if (f) { /* counted from the file's offset after the header: its ranges are the file's */
        hl_write_behind_init(&out.wb, fd);
        long header_bytes = ftell(f);
        hl_write_behind_wrote(&out.wb, header_bytes > 0 ? header_bytes : 0);
    }
    out.gather = gather;
    out.shown_total = end - begin;
    out.show = progress && isatty(STDERR_FILENO) && out.shown_total >= 2000;
    out.t0 = hl_clock_s();
    out.test_sig = test_interrupt(&out.test_after);
    in.first = begin;
    in.count = end - begin;
    in.cancel = &hl_bind_interrupt;
    hl_sweep_csv_opts o;
    memset(&o, 0, sizeof o);
    o.columns = cols;
    o.scales = scales;
    o.n_columns = ncols;
    o.part = gather ? d.index : 0;
    o.parts = gather ? d.count : 0;
    o.sink = csv_sink;
    o.user = &out;
    o.sink_any_thread = !gather; /* MPI's gather stays on this thread; fwrite, the progress bar and
                                  * the test hook's raise (a signal any thread may take) do not */
    int64_t written = 0;
    hl_status rs = failed || end == begin ? HL_OK : hl_sweep_csv(&in, &o, &written, &err);
    failed |= out.failed;
    if (out.show) {
        draw_progress(out.done, out.shown_total, hl_clock_s() - out.t0);
        fputc('\n', stderr);
    }
    int interrupted = hl_bind_interrupt != 0, terminated = hl_bind_interrupt == 2;
    if (rs != HL_OK && rs != HL_EINTR && !failed) { /* the sweep itself failed (an unknown axis, ...) */
        if (f) {
            fclose(f);
            hl_files_discard(tmp);
        }
        free_axes(&mem);
        return hl_raise(L, &err);
    }
    free_axes(&mem);
    if (interrupted && !terminated) { /* Ctrl-C: the rows done are the result; SIGTERM: kept too, then raised */
        lua_sethook(L, NULL, 0, 0);
        hl_bind_interrupt = 0;
    }
    int bad = failed || (rs != HL_OK && rs != HL_EINTR);
    /* the cause is the first write's errno, read when it failed (by the header or csv_sink) */
    int write_errno = header_errno ? header_errno : out.write_errno;
    if (f) {
        int err_flag = ferror(f);
        if (err_flag && !write_errno)
            write_errno = errno;
        bad |= err_flag;
        int closed = fclose(f);
        if (closed != 0 && !write_errno)
            write_errno = errno;
        bad |= closed != 0;
    }
    if (f && out.agree_msg[0]) { /* the ranks stopped together: no file, the one message */
        hl_files_discard(tmp);
        return hl_error(L, "sweep_to_csv: %s", out.agree_msg);
    }
    if (f && (bad || hl_files_commit(tmp, path) != 0)) {
        int e = bad ? write_errno : errno;
        hl_files_discard(tmp);
        return hl_error(L, "sweep_to_csv: cannot write %s: %s", path, bad ? strerror(e ? e : EIO) : hl_files_reason(e));
    }
    if (bad)
        return hl_error(L, "sweep_to_csv: %s",
                        out.agree_msg[0] ? out.agree_msg : "gathering the rows of the MPI ranks failed");
    if (gather) /* rows written by all ranks together */
        written = end - begin;
    if (terminated) {
        lua_sethook(L, NULL, 0, 0); /* this error replaces the hook's "interrupted!" (exit status 130 either way) */
        hl_bind_interrupt = 0;
        return hl_error(L, "sweep_to_csv terminated (%s): %I of %I rows written to %s", hl_bind_stop_name(),
                        (lua_Integer)written, (lua_Integer)total, path);
    }
    if (interrupted)
        fprintf(stderr, "sweep interrupted: %lld of %lld points written to %s\n", (long long)written, (long long)total,
                path);
    lua_pushinteger(L, written);
    lua_pushboolean(L, interrupted);
    return 2;
}

volatile int32_t hl_bind_sweep_interrupted = 0;

/* core.note_interrupted_sweep(): a sweep returned early on Ctrl-C / SIGTERM. */
static int l_note_interrupted_sweep(lua_State *L)
{
    (void)L;
    hl_bind_sweep_interrupted = 1;
    return 0;
}

/* core.take_interrupted() -> whether a sweep was stopped since the last call (clears it). */
static int l_take_interrupted(lua_State *L)
{
    lua_pushboolean(L, hl_bind_sweep_interrupted != 0);
    hl_bind_sweep_interrupted = 0;
    return 1;
}

static int l_interrupted(lua_State *L)
{
    lua_pushboolean(L, hl_bind_interrupt != 0);
    return 1;
}

void hl_bind_sweep(lua_State *L)
{
    hl_set_interrupt_flag(&hl_bind_interrupt); /* exact steps and the plan search poll it too */
    static const luaL_Reg fns[] = {{"sweep", l_sweep},
                                   {"sweep_to_csv", l_sweep_to_csv},
                                   {"sweep_memory_budget", l_sweep_memory_budget},
                                   {"sweep_memory_estimate", l_sweep_memory_estimate},
                                   {"interrupted", l_interrupted},
                                   {"note_interrupted_sweep", l_note_interrupted_sweep},
                                   {"take_interrupted", l_take_interrupted},
                                   {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
