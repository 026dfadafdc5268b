/* Splitting sweeps across shards and MPI ranks (dist.h): the blocks, the gathers and
 * their Lua functions. The MPI calls go through hl_bind_mpi (mpi_ops.h), the plugin the host
 * loads under an MPI launcher; without it the gathers report failure. The host sets
 * hl_bind_dist at launch (lua/host/launch.c). */
#include "dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "bind.h"
#include "mpi_ops.h"

hl_dist hl_bind_dist = {0, 1, 0, 0};
const hl_mpi_ops *hl_bind_mpi = NULL;

void hl_dist_block(int64_t n, int32_t index, int32_t count, int64_t *lo, int64_t *hi)
{
    /* n < 2^53 and count <= 1e5: the products fit in int64 for every sweep we allow (<= 5e7 rows, or
     * streamed chunks of 65,536); long double keeps it exact beyond that */
    *lo = (int64_t)((long double)n * index / count);
    *hi = (int64_t)((long double)n * (index + 1) / count);
}

/* Where the extension of path starts (its length when it has none). */
static size_t stem_length(const char *path)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    return dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
}

int hl_dist_shard_path(const char *path, char *out, size_t n)
{
    hl_dist d = hl_bind_dist;
    if (d.mpi || d.count <= 1)
        return snprintf(out, n, "%s", path);
    size_t stem = stem_length(path);
    char mark[48];
    int m = snprintf(mark, sizeof mark, "_shard%dof%d", (int)d.index, (int)d.count);
    /* already this shard's name (every writer applies the rule; a name passes through it twice) */
    if (stem >= (size_t)m && memcmp(path + stem - (size_t)m, mark, (size_t)m) == 0)
        return snprintf(out, n, "%s", path);
    return snprintf(out, n, "%.*s%s%s", (int)stem, path, mark, path + stem);
}

uint64_t hl_dist_hash(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int hl_dist_shard_line(const char *path, int64_t lo, int64_t hi, int64_t total, int filtered, char *out, size_t n)
{
    hl_dist d = hl_bind_dist;
    if (d.mpi || d.count <= 1)
        return snprintf(out, n, "%s", "");
    char rows[80], name[3 * 256 + 1];
    if (lo < 0)
        snprintf(rows, sizeof rows, "-");
    else
        snprintf(rows, sizeof rows, "%lld-%lld/%lld%s", (long long)lo, (long long)hi, (long long)total,
                 filtered ? "f" : "");
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t k = 0;
    for (const unsigned char *c = (const unsigned char *)base; *c && k + 4 < sizeof name; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("._+-", *c))
            name[k++] = (char)*c;
        else
            k += (size_t)snprintf(name + k, sizeof name - k, "%%%02X", *c);
    }
    name[k] = '\0';
    return snprintf(out, n, "#hbdlab-shard %d/%d run=%016llx rows=%s file=%s\n", (int)d.index, (int)d.count,
                    (unsigned long long)d.run, rows, name);
}

static int out_of_step = 0;

int hl_dist_out_of_step(void) { return out_of_step; }

static const char *step_name(long long step)
{
    switch (step) {
    case HL_DIST_SWEEP: return "start an hl.sweep";
    case HL_DIST_STREAM: return "start an hl.sweep_to_csv";
    case HL_DIST_FN: return "start a function-form hl.sweep";
    case HL_DIST_GATHER: return "gather a sweep's rows";
    case HL_DIST_CHUNK: return "write the next rows of an hl.sweep_to_csv";
    case HL_DIST_END: return "end the script";
    default: return "do something else";
    }
}

/* The sentence every rank reports, from the minima and maxima of (step, count, hash) over the
 * ranks: the same on all of them. */
static void disagreement(const long long *lo, const long long *hi, char *msg, size_t n)
{
    const char *rule = "every MPI rank must run the same sweeps, with the same axes, in the same order";
    if (lo[0] != hi[0])
        snprintf(msg, n, "MPI ranks out of step: some ranks %s while others %s (%s)", step_name(lo[0]),
                 step_name(hi[0]), rule);
    else if (lo[0] == HL_DIST_END)
        snprintf(msg, n, "an MPI rank failed (its error is above) while the others ended the script");
    else if (lo[0] == HL_DIST_GATHER || lo[0] == HL_DIST_CHUNK)
        snprintf(msg, n, "a sweep failed or was interrupted on some MPI ranks only, so its rows cannot be gathered");
    else if (lo[1] != hi[1])
        snprintf(msg, n, "MPI ranks disagree on a sweep's size: %lld to %lld points (%s)", lo[1], hi[1], rule);
    else
        snprintf(msg, n, "MPI ranks disagree on a sweep's axes: %lld points each, other values (%s)", lo[1], rule);
}

/* HBDLAB_HAVE_MPI: the build made the plugin (hbdlab_mpi.so) */
int hl_dist_have_mpi(void)
{
#ifdef HBDLAB_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

int hl_dist_agreeing(void) { return hl_bind_mpi && hl_bind_dist.mpi && hl_bind_dist.count > 1; }

int hl_dist_agree(hl_dist_step step, int64_t count, uint64_t hash, char *msg, size_t n)
{
    if (!hl_dist_agreeing())
        return 0;
    if (out_of_step) {
        snprintf(msg, n, "the MPI ranks are out of step since an earlier disagreement; no more sweeps run");
        return -1;
    }
    /* minima of (step, count, hash halves) and of their negations (the maxima), in one allreduce */
    long long mine[8] = {step, count, (long long)(hash >> 32), (long long)(hash & 0xffffffffu)}, all[8];
    for (int i = 0; i < 4; i++)
        mine[4 + i] = -mine[i];
    if (hl_bind_mpi->start_min_reduce(mine, all, 8) != 0) {
        out_of_step = 1;
        snprintf(msg, n, "MPI: the agreement between ranks failed");
        return -1;
    }
    for (int done = 0;;) {
        if (hl_bind_mpi->test_reduce(&done) != 0) {
            out_of_step = 1;
            snprintf(msg, n, "MPI: the agreement between ranks failed");
            return -1;
        }
        if (done)
            break;
        if (hl_bind_interrupt) { /* a collective cannot be cancelled: the whole job ends */
            fprintf(stderr, "hbdlab: interrupted while MPI rank %d waited for the others; ending every rank\n",
                    (int)hl_bind_dist.index);
            hl_bind_mpi->abort_all(130);
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    long long lo[4], hi[4];
    int same = 1;
    for (int i = 0; i < 4; i++) {
        lo[i] = all[i];
        hi[i] = -all[4 + i];
        same &= lo[i] == hi[i];
    }
    if (same)
        return 0;
    out_of_step = 1;
    disagreement(lo, hi, msg, n);
    return -1;
}

/* Every rank holds its block (hl_dist_block of n) of the n records of elem bytes at all;
 * afterwards every rank holds all of them. 0 on success. */
static int allgather_blocks(void *all, int64_t n, size_t elem)
{
    int size = hl_bind_dist.count;
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    int rc = -1;
    if (!hl_bind_mpi || !counts || !displs || n > INT_MAX || elem > INT_MAX)
        goto out;
    for (int r = 0; r < size; r++) {
        int64_t lo, hi;
        hl_dist_block(n, r, size, &lo, &hi);
        counts[r] = (int)(hi - lo);
        displs[r] = (int)lo;
    }
    rc = hl_bind_mpi->allgather_records(all, elem, counts, displs);
out:
    free(counts);
    free(displs);
    return rc;
}

int hl_dist_allgather_store(hl_sweep_store *s)
{
    /* the values and fault codes of each block, then each rank's messages ("count\0" then
     * "status\0message\0" each, in code order), added to this rank's store (kept once each) and
     * the gathered codes of the other ranks' blocks renumbered to them */
    int size = hl_bind_dist.count, me = hl_bind_dist.index, rc = -1;
    char *mine = NULL, *all = NULL;
    size_t len = 0, all_len = 0;
    int32_t *map = NULL;
    if (allgather_blocks(s->values, s->n, sizeof(double) * HL_POINT_VALUES) != 0 ||
        allgather_blocks(s->fault, s->n, sizeof(int32_t)) != 0)
        return -1;
    len = 12; /* the count and its NUL */
    for (int32_t k = 0; k < s->n_messages; k++)
        len += 12 + strlen(s->messages[k]) + 1;
    if (!(mine = malloc(len)))
        return -1;
    size_t used = (size_t)snprintf(mine, 12, "%d", (int)s->n_messages) + 1;
    for (int32_t k = 0; k < s->n_messages; k++) {
        used += (size_t)snprintf(mine + used, 12, "%d", (int)s->statuses[k]) + 1;
        size_t m = strlen(s->messages[k]) + 1;
        memcpy(mine + used, s->messages[k], m);
        used += m;
    }
    len = used;
    if (hl_dist_allgather_text(mine, len, &all, &all_len) != 0)
        goto out;
    size_t at = 0;
    for (int r = 0; r < size; r++) {
        if (at >= all_len)
            goto out;
        long count = strtol(all + at, NULL, 10);
        at += strlen(all + at) + 1;
        free(map);
        map = malloc(sizeof *map * (size_t)(count > 0 ? count : 1));
        if (!map || count < 0)
            goto out;
        for (long k = 0; k < count; k++) {
            if (at >= all_len)
                goto out;
            int st = (int)strtol(all + at, NULL, 10);
            at += strlen(all + at) + 1;
            if (at >= all_len)
                goto out;
            map[k] = r == me ? (int32_t)k + 1 : hl_sweep_store_fault(s, (hl_status)st, all + at);
            at += strlen(all + at) + 1;
            if (!map[k])
                map[k] = HL_STORE_LOST;
        }
        int64_t lo, hi;
        hl_dist_block(s->n, r, size, &lo, &hi);
        for (int64_t i = lo; r != me && i < hi; i++)
            if (s->fault[i] > 0)
                s->fault[i] = s->fault[i] <= count ? map[s->fault[i] - 1] : HL_STORE_LOST;
    }
    rc = 0;
out:
    free(map);
    free(mine);
    free(all);
    return rc;
}

int hl_dist_allgather_text(const char *mine, size_t len, char **out, size_t *out_len)
{
    int size = hl_bind_dist.count;
    *out = NULL;
    *out_len = 0;
    if (len > INT_MAX)
        return -1;
    int n = (int)len;
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    int rc = -1;
    if (!hl_bind_mpi || !counts || !displs || hl_bind_mpi->allgather_int(n, counts) != 0)
        goto out;
    long long total = 0;
    for (int r = 0; r < size; r++) {
        displs[r] = (int)total;
        total += counts[r];
    }
    if (total > INT_MAX)
        goto out;
    *out = malloc((size_t)total + 1);
    if (!*out)
        goto out;
    if (hl_bind_mpi->allgather_bytes(mine, n, *out, counts, displs) != 0) {
        free(*out);
        *out = NULL;
        goto out;
    }
    (*out)[total] = '\0';
    *out_len = (size_t)total;
    rc = 0;
out:
    free(counts);
    free(displs);
    return rc;
}

/* core.dist() -> {index = i, count = n, mpi = bool, have_mpi = bool} */
static int l_dist(lua_State *L)
{
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, hl_bind_dist.index);
    lua_setfield(L, -2, "index");
    lua_pushinteger(L, hl_bind_dist.count);
    lua_setfield(L, -2, "count");
    lua_pushboolean(L, hl_bind_dist.mpi);
    lua_setfield(L, -2, "mpi");
    lua_pushboolean(L, hl_dist_have_mpi());
    lua_setfield(L, -2, "have_mpi");
    char run[17];
    snprintf(run, sizeof run, "%016llx", (unsigned long long)hl_bind_dist.run);
    lua_pushstring(L, run);
    lua_setfield(L, -2, "run");
    return 1;
}

/* core.dist_block(n) -> lo, hi: this process's 0-based block [lo, hi) of n points. */
static int l_dist_block(lua_State *L)
{
    lua_Integer n = luaL_checkinteger(L, 1);
    int64_t lo, hi;
    hl_dist_block(n, hl_bind_dist.index, hl_bind_dist.count, &lo, &hi);
    lua_pushinteger(L, lo);
    lua_pushinteger(L, hi);
    return 2;
}

/* core.shard_path(path) -> the file this process writes for path (hl_dist_shard_path). */
static int l_shard_path(lua_State *L)
{
    const char *path = hl_check_c_string(L, 1, "a file name");
    size_t need = (size_t)hl_dist_shard_path(path, NULL, 0) + 1;
    luaL_Buffer b;
    char *out = luaL_buffinitsize(L, &b, need);
    hl_dist_shard_path(path, out, need);
    luaL_pushresultsize(&b, need - 1);
    return 1;
}

/* core.shard_line(path, lo, hi, total, filtered) -> the fingerprint line of a shard's CSV file
 * (hl_dist_shard_line; lo = nil: rows that are not a sweep's block), "" when not a shard. */
static int l_shard_line(lua_State *L)
{
    const char *path = hl_check_c_string(L, 1, "a file name");
    int64_t lo = lua_isnoneornil(L, 2) ? -1 : (int64_t)luaL_checkinteger(L, 2);
    int64_t hi = lo < 0 ? 0 : (int64_t)luaL_checkinteger(L, 3), total = lo < 0 ? 0 : (int64_t)luaL_checkinteger(L, 4);
    char line[1024];
    hl_dist_shard_line(path, lo, hi, total, lua_toboolean(L, 5), line, sizeof line);
    lua_pushstring(L, line);
    return 1;
}

/* core.dist_agree(step, count[, text]) -> nothing, or raises the disagreement (hl_dist_agree);
 * step: "fn" (a function-form sweep starts: count points, text its axes) or "gather" (count 0:
 * this rank's block ran, 1: it failed). */
static int l_dist_agree(lua_State *L)
{
    static const char *const steps[] = {"fn", "gather", NULL};
    static const hl_dist_step codes[] = {HL_DIST_FN, HL_DIST_GATHER};
    int which = luaL_checkoption(L, 1, NULL, steps);
    lua_Integer count = luaL_checkinteger(L, 2);
    size_t len = 0;
    const char *text = luaL_optlstring(L, 3, "", &len);
    char msg[400];
    if (hl_dist_agree(codes[which], (int64_t)count, hl_dist_hash(HL_DIST_HASH_START, text, len), msg, sizeof msg))
        return hl_error(L, "%s", msg);
    return 0;
}

/* core.dist_allgather(text) -> array of every rank's text, in rank order (MPI only). */
static int l_dist_allgather(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    if (!hl_bind_dist.mpi)
        return hl_error(L, "dist_allgather: not running under MPI");
    char *all;
    size_t total;
    /* each rank's length first, so the pieces can be split again */
    char head[32];
    int hn = snprintf(head, sizeof head, "%zu:", len);
    char *msg = malloc((size_t)hn + len);
    if (!msg)
        return hl_error(L, "dist_allgather: out of memory");
    memcpy(msg, head, (size_t)hn);
    memcpy(msg + hn, s, len);
    int rc = hl_dist_allgather_text(msg, (size_t)hn + len, &all, &total);
    free(msg);
    if (rc)
        return hl_error(L, "dist_allgather: MPI gather failed");
    lua_createtable(L, hl_bind_dist.count, 0);
    size_t at = 0;
    for (int r = 0; r < hl_bind_dist.count && at < total; r++) {
        char *end;
        size_t n = (size_t)strtoull(all + at, &end, 10);
        at = (size_t)(end - all) + 1;
        lua_pushlstring(L, all + at, n);
        lua_rawseti(L, -2, r + 1);
        at += n;
    }
    free(all);
    return 1;
}

void hl_bind_dist_fns(lua_State *L)
{
    static const luaL_Reg fns[] = {{"dist", l_dist},
                                   {"dist_block", l_dist_block},
                                   {"shard_path", l_shard_path},
                                   {"shard_line", l_shard_line},
                                   {"dist_allgather", l_dist_allgather},
                                   {"dist_agree", l_dist_agree},
                                   {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
