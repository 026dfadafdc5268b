/* Threaded sweeps over job fields (docs/MODEL.md section 8). */
#include "hbdlab/sweep.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "err_int.h"
#include "fields_int.h"
#include "hbdlab/plan.h"
#include "hbdlab/precision.h"
#include "hbdlab/result.h"
#include "job_int.h"
#include "result_int.h"
#include "sim_int.h"
#include "sweep_int.h"

_Static_assert(sizeof(((hl_point *)0)->error) == sizeof(((hl_err *)0)->msg), "a point keeps the whole message");

const char *hl_point_field_name(int32_t i)
{
    const hl_result_field *f = hl_result_field_at(i);
    return f ? f->name : NULL;
}

/* cols[0, ncols): the result rows to store in out->v (the others are left as they are);
 * NULL: every row. */
static void point_from_job(const hl_job *job, hl_point *out, int trust, const int32_t *cols, int32_t ncols)
{
    hl_result r;
    hl_err err;
    out->status = 0;
    out->error[0] = '\0';
    hl_status st = hl_sim_run_trusted(job, &r, trust, &err);
    out->status = st;
    if (st) {
        snprintf(out->error, sizeof out->error, "%s", err.msg);
        return;
    }
    if (!cols) {
        hl_result_values(&r, out->v);
        return;
    }
    hl_result_values_of(&r, cols, ncols, out->v); /* a CSV stream: cols are its gather codes, v[c] its column c */
}

void hl_point_from_job(const hl_job *job, hl_point *out) { point_from_job(job, out, 0, NULL, 0); }

hl_status hl_sweep_count(const hl_sweep_in *in, int64_t *count, hl_err *err)
{
    if (!in || !count || (in->n_axes > 0 && !in->axes))
        return hl_fail(err, HL_EINVAL, "sweep: %s is NULL", !in ? "the input" : !count ? "the count" : "the axes");
    /* checked before any axis is read (attack12: n_axes = 1e5 read past the array, an axis of an
     * unknown kind or without its values array crashed the run that this count let through) */
    if (in->n_axes < 0 || in->n_axes > HL_SWEEP_MAX_AXES)
        return hl_fail(err, HL_EINVAL, "sweep: n_axes is %d (allowed: 0..%d)", (int)in->n_axes, HL_SWEEP_MAX_AXES);
    int64_t n = 1; /* points so far (product of the axis lengths, or the zipped length) */
    for (int32_t a = 0; a < in->n_axes; a++) {
        const hl_axis *x = &in->axes[a];
        if (!memchr(x->name, 0, sizeof x->name))
            return hl_fail(err, HL_EINVAL, "sweep axis %d: its name '%.*s' has no end within %d bytes", (int)a + 1,
                           (int)sizeof x->name, x->name, (int)sizeof x->name - 1);
        static const char *const kinds[] = {"numbers", "strings", "models", "clusters", "gpus"};
        if (x->kind < HL_AXIS_NUMBER || x->kind > HL_AXIS_GPU)
            return hl_fail(err, HL_EINVAL,
                           "sweep axis '%s': kind %d is not one of 0..4 (numbers, strings, models, "
                           "clusters, gpus)",
                           x->name, (int)x->kind);
        const void *values = x->kind == HL_AXIS_NUMBER    ? (const void *)x->numbers
                             : x->kind == HL_AXIS_STRING  ? (const void *)x->strings
                             : x->kind == HL_AXIS_MODEL   ? (const void *)x->models
                             : x->kind == HL_AXIS_CLUSTER ? (const void *)x->clusters
                                                          : (const void *)x->gpus;
        if (!values && x->n > 0)
            return hl_fail(err, HL_EINVAL, "sweep axis '%s': its %s array is NULL (%d values)", x->name, kinds[x->kind],
                           (int)x->n);
        int64_t len = in->axes[a].n;
        if (len < 1)
            return hl_fail(err, HL_EINVAL, "sweep axis '%s' has no values", in->axes[a].name);
        if (in->zip) {
            if (a > 0 && len != n)
                return hl_fail(err, HL_EINVAL, "sweep: zipped axes need equal lengths ('%s' has %lld, others %lld)",
                               in->axes[a].name, (long long)len, (long long)n);
            n = len;
        } else {
            if (n > (int64_t)1e12 / len)
                return hl_fail(err, HL_EINVAL, "sweep: more than 1e12 points");
            n *= len;
        }
    }
    *count = n;
    return HL_OK;
}

/* An axis bound to the field it sets, once per sweep. */
typedef struct bound_axis {
    const hl_axis *ax;
    int target; /* TARGET_*: the struct the field lives in, or HL_TARGET_OBJECT (a whole model/cluster/gpu) */
    const hl_field *field;
    int32_t *enum_values; /* string axes on enum fields: the index of each value (malloc'd) */
    int special;          /* SPECIAL_BATCH: a batch axis (0 = "max"); SPECIAL_PARALLEL: "auto" | "fixed" */
    int only_input;       /* a number axis on the job's input: it writes that double and nothing else */
} bound_axis;

enum { SPECIAL_BATCH = 1, SPECIAL_PARALLEL = 2 };
/* What a point searches before it runs (from the base, changed by batch/parallel axes). */
enum { POINT_BATCH_MAX = 1, POINT_AUTO = 2 };

enum { MAX_AXES = HL_SWEEP_MAX_AXES };

typedef struct hl_sweep_plan plan;

struct hl_sweep_plan {
    bound_axis axes[MAX_AXES];
    int trust;    /* objects no axis touches, validated once */
    int reuse;    /* every axis only writes its own field and no point searches: a worker's job
                             can go from one point to the next by applying the axes again (no copy) */
    int distinct; /* no two axes write the same field: with reuse, only the axes whose value
                     changed need applying */
};

/* Frees the enum value tables; safe to call again (pointers are cleared). */
static void free_plan(plan *p, int32_t n)
{
    for (int32_t a = 0; a < n; a++) {
        free(p->axes[a].enum_values);
        p->axes[a].enum_values = NULL;
    }
}

/* Binds each axis to its field, checks every value once, validates the base. */
static hl_status bind_axes(const hl_sweep_in *in, plan *p, hl_err *err)
{
    memset(p, 0, sizeof *p);
    if (in->n_axes > MAX_AXES)
        return hl_fail(err, HL_EINVAL, "sweep: %d axes; at most %d", (int)in->n_axes, MAX_AXES);
    int touched = 0, cluster_objects = 0;
    for (int32_t a = 0; a < in->n_axes; a++) {
        const hl_axis *ax = &in->axes[a];
        bound_axis *b = &p->axes[a];
        b->ax = ax;
        if (ax->kind == HL_AXIS_MODEL || ax->kind == HL_AXIS_CLUSTER || ax->kind == HL_AXIS_GPU) {
            /* an object replaces the job's model, cluster or GPU, so its axis is named by that: an axis
             * 'spec_draft_model' of model objects swept the target's model silently */
            const char *kind = ax->kind == HL_AXIS_MODEL ? "model" : ax->kind == HL_AXIS_CLUSTER ? "cluster" : "gpu";
            if (strcmp(ax->name, kind) != 0) {
                free_plan(p, a);
                return hl_fail(err, HL_EINVAL,
                               "sweep axis '%s': its values are %s objects, which only an axis named '%s' takes "
                               "(they replace the job's %s)",
                               ax->name, kind, kind, kind);
            }
            b->target = HL_TARGET_OBJECT;
            touched |= ax->kind == HL_AXIS_MODEL ? HL_TRUST_MODEL : HL_TRUST_CLUSTER;
            cluster_objects |= ax->kind != HL_AXIS_MODEL;
            continue;
        }
        if (strcmp(ax->name, "parallel") == 0) {
            if (ax->kind != HL_AXIS_STRING) {
                free_plan(p, a);
                return hl_fail(err, HL_EINVAL, "sweep axis 'parallel': values must be \"auto\" or \"fixed\"");
            }
            for (int32_t i = 0; i < ax->n; i++)
                if (strcasecmp(ax->strings[i], "auto") != 0 && strcasecmp(ax->strings[i], "fixed") != 0) {
                    free_plan(p, a);
                    return hl_fail(err, HL_EINVAL,
                                   "sweep axis 'parallel': '%s' is not allowed (allowed: \"auto\" to search the "
                                   "mapping per point, \"fixed\" for the base's mapping)",
                                   ax->strings[i]);
                }
            b->target = HL_TARGET_JOB;
            b->special = SPECIAL_PARALLEL;
            continue;
        }
        b->target = hl_job_field_target(ax->name, &b->field);
        if (b->target == HL_TARGET_JOB && strcmp(ax->name, "batch") == 0 && ax->kind == HL_AXIS_NUMBER)
            b->special = SPECIAL_BATCH;
        if (b->target < 0) {
            free_plan(p, a);
            return hl_unknown_field(hl_job_fields(), ax->name, err);
        }
        b->only_input = b->target == HL_TARGET_JOB && ax->kind == HL_AXIS_NUMBER && !b->special &&
                        b->field->type == HL_FIELD_DOUBLE && b->field->offset == (int32_t)offsetof(hl_job, input);
        touched |= b->target == HL_TARGET_MODEL ? HL_TRUST_MODEL : b->target == HL_TARGET_JOB ? 0 : HL_TRUST_CLUSTER;
        if (ax->kind == HL_AXIS_STRING && b->field->type == HL_FIELD_ENUM) {
            b->enum_values = malloc(sizeof *b->enum_values * (size_t)ax->n);
            if (!b->enum_values) {
                free_plan(p, a);
                return hl_fail(err, HL_ENOMEM, "sweep: out of memory");
            }
            hl_job probe = in->base;
            for (int32_t i = 0; i < ax->n; i++) {
                hl_status st = hl_field_set_string(hl_job_target_set(b->target), hl_job_target_ptr(&probe, b->target),
                                                   ax->name, ax->strings[i], err);
                if (st) {
                    free_plan(p, a + 1);
                    return st;
                }
                b->enum_values[i] = (int32_t)hl_field_get_number(b->field, hl_job_target_ptr(&probe, b->target));
            }
        }
    }
    p->reuse = !in->batch_max && !in->auto_plan;
    for (int32_t a = 0; a < in->n_axes; a++)
        if (p->axes[a].target == HL_TARGET_OBJECT || p->axes[a].special)
            p->reuse = 0;
    p->distinct = 1;
    for (int32_t a = 0; a < in->n_axes; a++)
        for (int32_t b = 0; b < a; b++)
            if (p->axes[a].target == p->axes[b].target && p->axes[a].field == p->axes[b].field)
                p->distinct = 0;
    p->trust = hl_job_check_fields(&in->base, err) == HL_OK ? HL_TRUST_JOB_FIELDS : 0;
    if (!(touched & HL_TRUST_MODEL) && hl_model_validate(&in->base.model, err) == HL_OK)
        p->trust |= HL_TRUST_MODEL;
    if (hl_cluster_validate(&in->base.cluster, err) == HL_OK)
        p->trust |= !(touched & HL_TRUST_CLUSTER) ? HL_TRUST_CLUSTER
                    : !cluster_objects            ? HL_TRUST_CLUSTER_FIELDS /* only fields, set with range checks */
                                                  : 0;
    return HL_OK;
}

void hl_sweep_value_indices(const hl_axis *axes, int32_t n_axes, int32_t zip, int64_t index, int64_t *value_index)
{
    int64_t rest = index;
    for (int32_t a = n_axes - 1; a >= 0; a--) {
        value_index[a] = zip ? index : rest % axes[a].n;
        if (!zip)
            rest /= axes[a].n;
    }
}

/* Sets the value `i` of one bound axis on the job (and the point's searches in *flags). */
static hl_status apply_axis(const bound_axis *b, int64_t i, hl_job *job, int *flags, hl_err *err)
{
    const hl_axis *ax = b->ax;
    if (b->special == SPECIAL_PARALLEL) {
        *flags = strcasecmp(ax->strings[i], "auto") == 0 ? *flags | POINT_AUTO : *flags & ~POINT_AUTO;
        return HL_OK;
    }
    if (b->special == SPECIAL_BATCH) {
        if (ax->numbers[i] == 0) {
            *flags |= POINT_BATCH_MAX;
            return HL_OK;
        }
        *flags &= ~POINT_BATCH_MAX;
    }
    if (b->target == HL_TARGET_OBJECT) {
        if (ax->kind == HL_AXIS_MODEL)
            job->model = ax->models[i];
        else if (ax->kind == HL_AXIS_CLUSTER)
            job->cluster = ax->clusters[i];
        else
            return hl_cluster_init(&job->cluster, &ax->gpus[i], job->cluster.gpus, job->cluster.hbd, err);
        return HL_OK;
    }
    if (b->enum_values) {
        *(int32_t *)((char *)hl_job_target_ptr(job, b->target) + b->field->offset) = b->enum_values[i];
        return HL_OK;
    }
    if (ax->kind == HL_AXIS_NUMBER)
        return hl_field_set_number_at(hl_job_target_set(b->target), b->field, hl_job_target_ptr(job, b->target),
                                      ax->numbers[i], err);
    return hl_field_set_string(hl_job_target_set(b->target), hl_job_target_ptr(job, b->target), ax->name,
                               ax->strings[i], err);
}

/* Builds the job of point `index` through bound axes (no name lookups). Whole
 * models, clusters and GPUs go first, then fields: a field axis (eff_gemm,
 * scaleout_bw, ...) refines the object another axis chose, whatever the order.
 * With `fresh` 0 (only when p->reuse), *job is the job of a point this built
 * before: every axis sets its field again and nothing else differs from the
 * base, so the 2.7 KB copy of the base is skipped. */
static hl_status bound_job_at(const hl_sweep_in *in, const plan *p, const int64_t *value_index, const int64_t *held,
                              hl_job *job, int *flags, int fresh, hl_err *err)
{
    if (fresh) {
        *job = in->base;
        job->summary_only = 1;
    }
    *flags = (in->batch_max ? POINT_BATCH_MAX : 0) | (in->auto_plan ? POINT_AUTO : 0);
    for (int pass = 0; pass < 2; pass++)
        for (int32_t a = in->n_axes - 1; a >= 0; a--) {
            hl_status st;
            if (held && held[a] == value_index[a])
                continue; /* the job holds this axis's value already */
            if ((p->axes[a].target == HL_TARGET_OBJECT) == (pass == 0) &&
                (st = apply_axis(&p->axes[a], value_index[a], job, flags, err)))
                return st;
        }
    return HL_OK;
}

static hl_status bound_job(const hl_sweep_in *in, const plan *p, int64_t index, hl_job *job, int *flags, int fresh,
                           hl_err *err)
{
    int64_t value_index[MAX_AXES];
    hl_sweep_value_indices(in->axes, in->n_axes, in->zip, index, value_index);
    return bound_job_at(in, p, value_index, NULL, job, flags, fresh, err);
}

/* batch = "max" and parallel = "auto" of one point, through hl.simulate's
 * resolver (hl_job_resolve): the same batch, mapping and limits. */
static hl_status resolve_searches(const hl_sweep_in *in, int flags, hl_job *job, hl_err *err)
{
    if (!(flags & (POINT_AUTO | POINT_BATCH_MAX)))
        return HL_OK;
    hl_plan_in pin;
    memset(&pin, 0, sizeof pin);
    pin.job = *job;
    pin.objective = in->objective;
    pin.max_tpot = in->max_tpot;
    pin.max_ttft = in->max_ttft;
    pin.max_batch = (flags & POINT_BATCH_MAX) != 0;
    pin.auto_plan = (flags & POINT_AUTO) != 0;
    return hl_job_resolve(&pin, job, NULL, 0, NULL, err);
}

hl_status hl_sweep_job(const hl_sweep_in *in, int64_t index, hl_job *job, hl_err *err)
{
    plan *pl = malloc(sizeof *pl);
    if (!pl)
        return hl_fail(err, HL_ENOMEM, "sweep: out of memory");
    hl_status st = bind_axes(in, pl, err);
    int flags;
    if (!st)
        st = bound_job(in, pl, index, job, &flags, 1, err);
    if (!st)
        st = resolve_searches(in, flags, job, err);
    if (!st)
        job->summary_only = in->base.summary_only; /* as the caller set it */
    free_plan(pl, in->n_axes);
    free(pl);
    return st;
}

hl_status hl_sweep_plan_new(const hl_sweep_in *in, plan **out, hl_err *err)
{
    *out = NULL;
    plan *pl = malloc(sizeof *pl);
    if (!pl)
        return hl_fail(err, HL_ENOMEM, "sweep: out of memory");
    hl_status st = bind_axes(in, pl, err);
    if (st) {
        free(pl);
        return st;
    }
    *out = pl;
    return HL_OK;
}

void hl_sweep_plan_free(plan *pl, int32_t n_axes)
{
    if (!pl)
        return;
    free_plan(pl, n_axes);
    free(pl);
}

/* ---- The compact store of an in-memory sweep -------------------------------------------- */

/* The lock and an open-addressing index of the distinct messages (slots hold code k + 1 of
 * message k, 0 when empty; at most half full). */
typedef struct store_internal {
    pthread_mutex_t lock;
    int32_t *slots;
    int32_t n_slots, cap_messages;
} store_internal;

double hl_sweep_store_point_bytes(void) { return (double)(sizeof(double) * HL_POINT_VALUES + sizeof(int32_t)); }

hl_status hl_sweep_store_init(hl_sweep_store *s, int64_t n, hl_err *err)
{
    if (!s)
        return hl_fail(err, HL_EINVAL, "hl_sweep_store_init: the store is NULL");
    memset(s, 0, sizeof *s);
    size_t count = (size_t)(n > 0 ? n : 1);
    store_internal *in = calloc(1, sizeof *in);
    s->values = malloc(sizeof(double) * HL_POINT_VALUES * count);
    s->fault = malloc(sizeof(int32_t) * count);
    s->internal = in;
    if (!in || !s->values || !s->fault) {
        hl_sweep_store_free(s);
        return hl_fail(err, HL_ENOMEM, "sweep: out of memory for %lld points", (long long)n);
    }
    pthread_mutex_init(&in->lock, NULL);
    s->n = n;
    for (int64_t i = 0; i < n; i++)
        s->fault[i] = HL_STORE_NOT_RUN;
    return HL_OK;
}

void hl_sweep_store_free(hl_sweep_store *s)
{
    if (!s)
        return;
    store_internal *in = s->internal;
    if (in) {
        pthread_mutex_destroy(&in->lock);
        free(in->slots);
        free(in);
    }
    for (int32_t k = 0; k < s->n_messages; k++)
        free(s->messages[k]);
    free(s->messages);
    free(s->statuses);
    free(s->values);
    free(s->fault);
    memset(s, 0, sizeof *s);
}

static uint32_t text_hash(const char *t, int32_t st)
{
    uint32_t h = 2166136261u ^ (uint32_t)st; /* FNV-1a */
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 16777619u;
    return h;
}

/* Doubles the index (under the lock); 0 when out of memory. */
static int grow_index(hl_sweep_store *s, store_internal *in)
{
    int32_t n = in->n_slots ? in->n_slots * 2 : 64;
    int32_t *slots = calloc((size_t)n, sizeof *slots);
    if (!slots)
        return 0;
    for (int32_t k = 0; k < s->n_messages; k++) {
        uint32_t h = text_hash(s->messages[k], s->statuses[k]) & (uint32_t)(n - 1);
        while (slots[h])
            h = (h + 1) & (uint32_t)(n - 1);
        slots[h] = k + 1;
    }
    free(in->slots);
    in->slots = slots;
    in->n_slots = n;
    return 1;
}

int32_t hl_sweep_store_fault(hl_sweep_store *s, hl_status st, const char *msg)
{
    store_internal *in = s->internal;
    int32_t code = 0;
    pthread_mutex_lock(&in->lock);
    if (2 * (s->n_messages + 1) > in->n_slots && !grow_index(s, in))
        goto out;
    uint32_t mask = (uint32_t)(in->n_slots - 1), h = text_hash(msg, st) & mask;
    for (; in->slots[h]; h = (h + 1) & mask) {
        int32_t k = in->slots[h] - 1;
        if (s->statuses[k] == (int32_t)st && strcmp(s->messages[k], msg) == 0) {
            code = k + 1;
            goto out;
        }
    }
    if (s->n_messages == in->cap_messages) {
        int32_t cap = in->cap_messages ? in->cap_messages * 2 : 16;
        char **m = realloc(s->messages, sizeof *m * (size_t)cap);
        if (m)
            s->messages = m;
        int32_t *sts = m ? realloc(s->statuses, sizeof *sts * (size_t)cap) : NULL;
        if (!sts)
            goto out;
        s->statuses = sts;
        in->cap_messages = cap;
    }
    char *copy = malloc(strlen(msg) + 1);
    if (!copy)
        goto out;
    strcpy(copy, msg);
    s->messages[s->n_messages] = copy;
    s->statuses[s->n_messages] = (int32_t)st;
    code = ++s->n_messages;
    in->slots[h] = code;
out:
    pthread_mutex_unlock(&in->lock);
    return code;
}

/* Packs point i of a store: its values, or the code of its message. */
static void store_put(hl_sweep_store *s, int64_t i, const hl_point *p)
{
    if (p->status == HL_OK) {
        memcpy(s->values + i * HL_POINT_VALUES, p->v, sizeof p->v);
        s->fault[i] = 0;
        return;
    }
    if (p->status == HL_EINTR) { /* stopped inside (a plan search polls Ctrl-C): as not reached */
        s->fault[i] = HL_STORE_NOT_RUN;
        return;
    }
    int32_t code = hl_sweep_store_fault(s, p->status, p->error);
    s->fault[i] = code ? code : HL_STORE_LOST; /* out of memory for the message: the point still fails */
}

typedef struct worker {
    const hl_sweep_in *in;
    const plan *plan;
    hl_point *out;         /* out[i - base] receives point i (NULL when store is set) */
    hl_sweep_store *store; /* or point i goes to store index i */
    int64_t begin, end, stride, base;
} worker;

enum { BLOCK = 256 }; /* points per block: threads take blocks round-robin, so no two write one cache line */

/* Whether the axis values a and b differ only in input axes (only_input): with the plan's
 * reuse, the job of b is then the job of a but for its input. */
static int only_input_differs(const hl_sweep_in *in, const plan *pl, const int64_t *a, const int64_t *b)
{
    for (int32_t k = 0; k < in->n_axes; k++)
        if (a[k] != b[k] && !pl->axes[k].only_input)
            return 0;
    return 1;
}

void hl_sweep_eval_point(const hl_sweep_in *in, const plan *pl, int64_t i, hl_job *job, hl_sweep_cursor *cur,
                         const int32_t *cols, int32_t ncols, hl_point *p)
{
    hl_err err;
    int flags;
    int fresh = !(pl->reuse && cur->have);
    int64_t vi[MAX_AXES];
    hl_sweep_value_indices(in->axes, in->n_axes, in->zip, i, vi);
    /* when the thread ran nothing since its last point and only input moved, this job is
     * that run's job but for input: its class (sim.c's job_class_of) is taken as that one's */
    int same = !fresh && cur->run == hl_sim_thread_runs() && only_input_differs(in, pl, cur->value_index, vi)
                   ? HL_TRUST_SAME_BUT_INPUT
                   : 0;
    const int64_t *held = !fresh && pl->distinct ? cur->value_index : NULL;
    cur->have = 0;
    hl_status st = bound_job_at(in, pl, vi, held, job, &flags, fresh, &err);
    memcpy(cur->value_index, vi, sizeof vi[0] * (size_t)in->n_axes); /* after: `held` may point there */
    if (st || resolve_searches(in, flags, job, &err)) {
        memset(p, 0, sizeof *p);
        p->status = HL_EINVAL;
        snprintf(p->error, sizeof p->error, "%s", err.msg);
    } else {
        cur->have = 1;
        point_from_job(job, p, pl->trust | same, cols, ncols);
        cur->run = hl_sim_thread_runs();
    }
}

static void *work(void *arg)
{
    worker *w = arg;
    int cancelled = 0;
    hl_job job;                        /* the last point's job: reused when w->plan->reuse */
    hl_sweep_cursor cur = {.have = 0}; /* which point job holds */
    hl_point one;                      /* a store's point before it is packed */
    /* w->begin is this thread's first block start; blocks are w->stride points apart */
    for (int64_t b = w->begin; b < w->end; b += w->stride) {
        int64_t stop = b + BLOCK < w->end ? b + BLOCK : w->end;
        for (int64_t i = b; i < stop; i++) {
            if (cancelled || (w->in->cancel && *w->in->cancel)) {
                cancelled = 1; /* mark what this thread will not reach */
                if (w->store)
                    w->store->fault[i] = HL_STORE_NOT_RUN;
                else
                    w->out[i - w->base].status = HL_EINTR;
                continue;
            }
            if (w->store) {
                hl_sweep_eval_point(w->in, w->plan, i, &job, &cur, NULL, 0, &one);
                store_put(w->store, i, &one);
            } else {
                hl_sweep_eval_point(w->in, w->plan, i, &job, &cur, NULL, 0, &w->out[i - w->base]);
            }
            if (w->in->progress)
                __atomic_add_fetch(w->in->progress, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

/* Runs the points of in into out (hl_sweep_run) or store (hl_sweep_run_store). */
static hl_status run_points(const hl_sweep_in *in, hl_point *out, hl_sweep_store *store, hl_err *err)
{
    int64_t total;
    hl_status st = hl_sweep_count(in, &total, err);
    if (st)
        return st;
    int64_t first = in->first, n = in->count > 0 ? in->count : total - first;
    if (first < 0 || first > total || n < 0 || first + n > total)
        return hl_fail(err, HL_EINVAL, "sweep: range [%lld, %lld) is outside the %lld points", (long long)first,
                       (long long)(first + n), (long long)total);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int32_t threads = in->threads > 0 ? in->threads : (int32_t)(cpus > 0 ? cpus : 1);
    if (threads > 256)
        threads = 256;
    if (threads > n)
        threads = (int32_t)(n > 0 ? n : 1);
    plan *pl = malloc(sizeof *pl);
    if (!pl)
        return hl_fail(err, HL_ENOMEM, "sweep: out of memory");
    if ((st = bind_axes(in, pl, err))) {
        free(pl);
        return st;
    }
    pthread_t tids[256];
    worker ws[256];
    int started[256] = {0};
    for (int32_t t = 0; t < threads; t++) {
        /* blocks round-robin: neighbouring points (similar cost) spread over threads */
        ws[t] = (worker){in, pl, out, store, first + (int64_t)t * BLOCK, first + n, (int64_t)threads * BLOCK, first};
        if (t > 0)
            started[t] = pthread_create(&tids[t], NULL, work, &ws[t]) == 0;
    }
    work(&ws[0]);
    for (int32_t t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(tids[t], NULL);
        else
            work(&ws[t]); /* could not start a thread: do its share here */
    }
    free_plan(pl, in->n_axes);
    free(pl);
    if (in->cancel && *in->cancel)
        return hl_fail(err, HL_EINTR, "sweep interrupted");
    return HL_OK;
}

hl_status hl_sweep_run(const hl_sweep_in *in, hl_point *out, hl_err *err) { return run_points(in, out, NULL, err); }

hl_status hl_sweep_run_store(const hl_sweep_in *in, hl_sweep_store *s, hl_err *err)
{
    int64_t total;
    hl_status st = hl_sweep_count(in, &total, err);
    if (st)
        return st;
    if (s->n != total)
        return hl_fail(err, HL_EINVAL, "sweep: a store of %lld points for a sweep of %lld", (long long)s->n,
                       (long long)total);
    return run_points(in, NULL, s, err);
}
