/* Splitting sweeps across shards and MPI ranks (dist.h): the blocks, the gathers and
 * their Lua functions. MPI is optional at build time (HBDLAB_HAVE_MPI); without it
 * the gathers report failure. The host sets hl_bind_dist at launch (lua/host/launch.c). */
#include "dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"

#ifdef HBDLAB_HAVE_MPI
#include <mpi.h>
#endif

hl_dist hl_bind_dist = {0, 1, 0, 0};

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

#ifdef HBDLAB_HAVE_MPI
int hl_dist_have_mpi(void) { return 1; }

int hl_dist_allgather_points(hl_point *all, int64_t n)
{
    int size = hl_bind_dist.count;
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    MPI_Datatype point;
    int rc = -1;
    if (!counts || !displs || n > INT_MAX)
        goto out;
    for (int r = 0; r < size; r++) {
        int64_t lo, hi;
        hl_dist_block(n, r, size, &lo, &hi);
        counts[r] = (int)(hi - lo);
        displs[r] = (int)lo;
    }
    MPI_Type_contiguous((int)sizeof(hl_point), MPI_BYTE, &point);
    MPI_Type_commit(&point);
    rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, point, MPI_COMM_WORLD) == MPI_SUCCESS
             ? 0
             : -1;
    MPI_Type_free(&point);
out:
    free(counts);
    free(displs);
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
    if (!counts || !displs || MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD) != MPI_SUCCESS)
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
    if (MPI_Allgatherv(mine, n, MPI_CHAR, *out, counts, displs, MPI_CHAR, MPI_COMM_WORLD) != MPI_SUCCESS) {
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
#else
int hl_dist_have_mpi(void) { return 0; }
int hl_dist_allgather_points(hl_point *all, int64_t n)
{
    (void)all;
    (void)n;
    return -1;
}
int hl_dist_allgather_text(const char *mine, size_t len, char **out, size_t *out_len)
{
    (void)mine;
    (void)len;
    *out = NULL;
    *out_len = 0;
    return -1;
}
#endif

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
    const char *path = luaL_checkstring(L, 1);
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
    const char *path = luaL_checkstring(L, 1);
    int64_t lo = lua_isnoneornil(L, 2) ? -1 : (int64_t)luaL_checkinteger(L, 2);
    int64_t hi = lo < 0 ? 0 : (int64_t)luaL_checkinteger(L, 3), total = lo < 0 ? 0 : (int64_t)luaL_checkinteger(L, 4);
    char line[1024];
    hl_dist_shard_line(path, lo, hi, total, lua_toboolean(L, 5), line, sizeof line);
    lua_pushstring(L, line);
    return 1;
}

/* core.dist_allgather(text) -> array of every rank's text, in rank order (MPI only). */
static int l_dist_allgather(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    if (!hl_bind_dist.mpi)
        return luaL_error(L, "dist_allgather: not running under MPI");
    char *all;
    size_t total;
    /* each rank's length first, so the pieces can be split again */
    char head[32];
    int hn = snprintf(head, sizeof head, "%zu:", len);
    char *msg = malloc((size_t)hn + len);
    if (!msg)
        return luaL_error(L, "dist_allgather: out of memory");
    memcpy(msg, head, (size_t)hn);
    memcpy(msg + hn, s, len);
    int rc = hl_dist_allgather_text(msg, (size_t)hn + len, &all, &total);
    free(msg);
    if (rc)
        return luaL_error(L, "dist_allgather: MPI gather failed");
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
                                   {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
