/* The streaming half of `hbdlab merge` (lua/hbdlab/cli.lua): a CSV shard checked in pieces
 * and copied in pieces, so memory stays bounded whatever the shards' size (the checks and the
 * shard rules stay in cli.lua).
 *   core.csv_shard_head(path) -> first line (up to 64 KiB) | nil, "PATH: cannot open: why"
 *   core.csv_shard_check(path, skip) -> head, records | nil, why: the CSV after the first skip
 *       bytes checked as rows.csv_check(text, true) does; head is its header line
 *   core.csv_shard_copy(tmp, head, {path, offset}...) appends head and each file from its offset */
#define _GNU_SOURCE /* copy_file_range */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bind.h"

enum { PIECE = 1 << 20, HEAD_MAX = 1 << 16 };

/* A shard opened for reading through hl_open_input, as every input of hbdlab (core/src/io.c):
 * a regular file only, so /dev/zero, a FIFO or a folder are refused before any read (merge read
 * /dev/zero without end, and said "read error" for a folder). NULL with the reason in err. */
static FILE *open_shard(const char *path, hl_err *err)
{
    int64_t size;
    int fd = hl_open_input(path, &size, err);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        snprintf(err->msg, sizeof err->msg, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

static int shard_failed(lua_State *L, const hl_err *err)
{
    lua_pushnil(L);
    lua_pushstring(L, err->msg);
    return 2;
}

static int l_csv_shard_head(lua_State *L)
{
    const char *path = hl_check_c_string(L, 1, "merge: a file name");
    hl_err err;
    FILE *f = open_shard(path, &err);
    if (!f)
        return shard_failed(L, &err);
    char *buf = malloc(HEAD_MAX);
    size_t n = buf ? fread(buf, 1, HEAD_MAX, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        lua_pushnil(L);
        lua_pushfstring(L, "%s: %s", path, buf ? "read error" : "out of memory");
        return 2;
    }
    const char *nl = memchr(buf, '\n', n);
    lua_pushlstring(L, buf, nl ? (size_t)(nl - buf) + 1 : n);
    free(buf);
    return 1;
}

static int l_csv_shard_check(lua_State *L)
{
    const char *path = hl_check_c_string(L, 1, "merge: a file name");
    lua_Integer skip = luaL_checkinteger(L, 2);
    hl_err err;
    FILE *f = open_shard(path, &err);
    if (!f)
        return shard_failed(L, &err);
    char *buf = malloc(PIECE);
    hl_csv_check c;
    hl_csv_check_init(&c);
    int bad = !buf || fseek(f, (long)skip, SEEK_SET) != 0;
    int stopped = 0;
    while (!bad) {
        if (hl_bind_interrupt) { /* Ctrl-C / SIGTERM: a shard of any size must not hold the run */
            stopped = 1;
            break;
        }
        size_t n = fread(buf, 1, PIECE, f);
        if (n == 0)
            break;
        if (hl_csv_check_feed(&c, buf, (int64_t)n) != 0)
            break;
    }
    bad |= ferror(f);
    if (stopped) {
        fclose(f);
        free(buf);
        return hl_error(L, "interrupted! (merge stopped while reading %s)", path);
    }
    int64_t records = 0;
    int ok = !bad && hl_csv_check_end(&c, &records) == 0;
    if (ok) { /* the header line, read again (it ended in the first piece or soon after) */
        char *head = malloc((size_t)c.head_end);
        ok = head && fseek(f, (long)skip, SEEK_SET) == 0 && fread(head, 1, (size_t)c.head_end, f) == (size_t)c.head_end;
        if (ok)
            lua_pushlstring(L, head, (size_t)c.head_end);
        free(head);
        bad = !ok;
    }
    fclose(f);
    free(buf);
    if (bad) {
        lua_pushnil(L);
        lua_pushfstring(L, "cannot read: %s", strerror(errno ? errno : EIO));
        return 2;
    }
    if (!ok) {
        lua_pushnil(L);
        lua_pushstring(L, c.why);
        return 2;
    }
    lua_pushinteger(L, (lua_Integer)records);
    return 2;
}

static int l_csv_shard_copy(lua_State *L)
{
    const char *tmp = hl_check_c_string(L, 1, "merge: a file name");
    size_t head_len;
    const char *head = luaL_checklstring(L, 2, &head_len);
    luaL_checktype(L, 3, LUA_TTABLE);
    FILE *out = fopen(tmp, "r+b"); /* not "a": copy_file_range refuses an O_APPEND file */
    if (out && fseek(out, 0, SEEK_END) != 0) {
        fclose(out);
        out = NULL;
    }
    if (!out)
        return hl_error(L, "cannot write %s: %s", tmp, strerror(errno));
    char *buf = malloc(PIECE);
    int bad = !buf || fwrite(head, 1, head_len, out) != head_len;
    const char *failed = tmp;
    lua_Integer n = (lua_Integer)luaL_len(L, 3);
    for (lua_Integer i = 1; i <= n && !bad; i++) {
        lua_rawgeti(L, 3, i);
        lua_rawgeti(L, -1, 1);
        lua_rawgeti(L, -2, 2);
        const char *path = lua_tostring(L, -2);
        lua_Integer offset = lua_tointeger(L, -1);
        FILE *in = path ? fopen(path, "rb") : NULL;
        bad = !in || fseek(in, (long)offset, SEEK_SET) != 0 || fflush(out) != 0;
        /* the kernel copies page to page (copy_file_range); read/write where it cannot */
        loff_t from = (loff_t)offset;
        ssize_t moved = 0;
        while (!bad && (moved = copy_file_range(fileno(in), &from, fileno(out), NULL, PIECE * 16, 0)) > 0)
            ;
        bad |= fseek(out, 0, SEEK_END) != 0; /* stdio's position after the kernel's writes */
        if (!bad && moved < 0) {
            bad = fseek(in, (long)from, SEEK_SET) != 0;
            size_t got;
            while (!bad && (got = fread(buf, 1, PIECE, in)) > 0)
                bad = fwrite(buf, 1, got, out) != got;
        }
        if (in) {
            bad |= ferror(in);
            fclose(in);
        }
        if (bad)
            failed = path ? path : "?";
        lua_pop(L, 3);
    }
    int e = errno;
    bad |= fclose(out) != 0;
    free(buf);
    if (bad)
        return hl_error(L, "cannot copy %s: %s", failed, strerror(e ? e : EIO));
    return 0;
}

void hl_bind_merge(lua_State *L)
{
    static const luaL_Reg fns[] = {{"csv_shard_head", l_csv_shard_head},
                                   {"csv_shard_check", l_csv_shard_check},
                                   {"csv_shard_copy", l_csv_shard_copy},
                                   {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
}
