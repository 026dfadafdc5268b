/* Fault injection (issue 14), as SQLite and Lua test themselves: for every k, the k-th
 * allocation (C: malloc/calloc/realloc through the linker's --wrap; cJSON through its
 * hooks; Lua: the state's allocator) or the k-th write (write/fwrite/fclose/rename) of a
 * scenario fails once. Each run must end in a clean Lua error (a string message) or
 * success; never a crash. Leaks are caught by LeakSanitizer in the sanitizer build (CI).
 * Usage: fault_inject SCENARIO alloc|write [FOLDER]   (scenarios: simulate sweep rows) */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

int luaopen_hbdlab(lua_State *L);

/* ---- the countdown: 0 = off; the call that brings it to 0 fails ---- */
static long alloc_left, write_left;
static long alloc_calls, write_calls; /* counted while armed */
static int armed;

static int fail_alloc(void)
{
    if (!armed)
        return 0;
    long n = __atomic_add_fetch(&alloc_calls, 1, __ATOMIC_RELAXED);
    return alloc_left > 0 && n == alloc_left;
}

static int fail_write(void)
{
    if (!armed)
        return 0;
    long n = __atomic_add_fetch(&write_calls, 1, __ATOMIC_RELAXED);
    return write_left > 0 && n == write_left;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
ssize_t __real_write(int fd, const void *buf, size_t n);
size_t __real_fwrite(const void *p, size_t size, size_t n, FILE *f);
int __real_fclose(FILE *f);
int __real_rename(const char *a, const char *b);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
size_t __wrap_fwrite(const void *p, size_t size, size_t n, FILE *f);
int __wrap_fclose(FILE *f);
int __wrap_rename(const char *a, const char *b);

void *__wrap_malloc(size_t n) { return fail_alloc() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { return fail_alloc() ? NULL : __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { return fail_alloc() ? NULL : __real_realloc(p, n); }

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    if (fd > 2 && fail_write()) {
        errno = ENOSPC;
        return -1;
    }
    return __real_write(fd, buf, n);
}

size_t __wrap_fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    if (f != stdout && f != stderr && fail_write()) {
        errno = ENOSPC;
        return 0;
    }
    return __real_fwrite(p, size, n, f);
}

int __wrap_fclose(FILE *f)
{
    int rc = __real_fclose(f); /* closed either way: only the result is faked */
    if (f != stdout && f != stderr && fail_write()) {
        errno = ENOSPC;
        return EOF;
    }
    return rc;
}

int __wrap_rename(const char *a, const char *b)
{
    if (fail_write()) {
        errno = EIO;
        return -1;
    }
    return __real_rename(a, b);
}

/* cJSON allocates through hooks (it is a shared library: --wrap does not reach it). */
static void *cjson_malloc(size_t n) { return __wrap_malloc(n); }

/* The Lua state's allocator: shrinking never fails (Lua relies on it). */
static void *lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    if ((!ptr || nsize > osize) && fail_alloc())
        return NULL;
    return __real_realloc(ptr, nsize);
}

static const char *const scenarios[][2] = {
    {"simulate", "local r = hl.simulate { model = 'llama-3.1-8b', cluster = 'hgx-h100', batch = 8, input = 128, output "
                 "= 8,\n"
                 "                        parallel = { tp = 8 } }\n"
                 "local b = r.decode.breakdown\n"
                 "return tostring(r) .. #b .. hl.core.json_encode { ttft = r.ttft_s, bound = r.bound }"},
    {"sweep", "local rows = hl.sweep { base = { model = 'llama-3.1-8b', cluster = 'hgx-h100', input = 128, output = "
              "8,\n"
              "                                 parallel = { tp = 8 } },\n"
              "                        axes = { batch = { 1, 3, 8 }, precision = { 'bf16', 'fp8' } }, threads = 1, "
              "progress = false }\n"
              "return #rows"},
    {"rows", "local dir = ...\n"
             "local rows = { { a = 1, b = 'x,y', c = 2.5 }, { a = 2, b = 'q\"r', c = -1 } }\n"
             "hl.rows.write(rows, dir .. '/r.csv'); hl.rows.write(rows, dir .. '/r.json'); hl.rows.write(rows, dir .. "
             "'/r.jsonl')\n"
             "local back = hl.rows.read_csv(dir .. '/r.csv')\n"
             "hl.sweep_to_csv { base = { model = 'llama-3.1-8b', cluster = 'hgx-h100', input = 64, output = 4,\n"
             "                           parallel = { tp = 8 } }, axes = { batch = { 1, 2 } }, out = dir .. '/s.csv', "
             "threads = 1 }\n"
             "return #back"},
};

/* Runs the scenario once with the given countdowns; returns 0 on success, 1 on a clean
 * error, and aborts on anything else. *allocs / *writes: calls made while armed. */
static int run_once(const char *code, const char *dir, long fail_alloc_at, long fail_write_at, long *allocs,
                    long *writes, char *msg, size_t msg_n)
{
    lua_State *L = lua_newstate(lua_alloc, NULL);
    if (!L)
        abort();
    luaL_openlibs(L);
    lua_pushcfunction(L, luaopen_hbdlab);
    if (lua_pcall(L, 0, 1, 0) != LUA_OK)
        abort();
    lua_setglobal(L, "hl");
    if (luaL_loadstring(L, code) != LUA_OK)
        abort();
    lua_pushstring(L, dir);
    alloc_calls = write_calls = 0;
    alloc_left = fail_alloc_at;
    write_left = fail_write_at;
    armed = 1;
    int status = lua_pcall(L, 1, 1, 0);
    armed = 0;
    *allocs = alloc_calls;
    *writes = write_calls;
    int rc = 0;
    if (status != LUA_OK) {
        if (status != LUA_ERRRUN && status != LUA_ERRMEM) {
            fprintf(stderr, "fault: unexpected Lua status %d\n", status);
            abort();
        }
        if (lua_type(L, -1) != LUA_TSTRING) { /* a clean error is a message */
            fprintf(stderr, "fault: error object is a %s\n", luaL_typename(L, -1));
            abort();
        }
        snprintf(msg, msg_n, "%s", lua_tostring(L, -1));
        rc = 1;
    }
    lua_close(L);
    return rc;
}

/* A failed write must leave no temp file behind (the old file stays under its name). */
static void check_no_temp(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp-")) {
            fprintf(stderr, "fault: temp file %s/%s left behind\n", dir, e->d_name);
            abort();
        }
    closedir(d);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fault_inject simulate|sweep|rows alloc|write [FOLDER]\n");
        return 2;
    }
    const char *code = NULL;
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (strcmp(argv[1], scenarios[i][0]) == 0)
            code = scenarios[i][1];
    int writes_mode = strcmp(argv[2], "write") == 0;
    if (!code || (!writes_mode && strcmp(argv[2], "alloc") != 0)) {
        fprintf(stderr, "fault_inject: unknown scenario or mode\n");
        return 2;
    }
    const char *dir = argc > 3 ? argv[3] : "/tmp";
    cJSON_Hooks hooks = {cjson_malloc, free};
    cJSON_InitHooks(&hooks);
    setenv("HBDLAB_TEST_NO_PROGRESS", "1", 1);
    char msg[512];
    long allocs, writes;
    if (run_once(code, dir, 0, 0, &allocs, &writes, msg, sizeof msg) != 0) {
        fprintf(stderr, "fault_inject %s: fails without faults: %s\n", argv[1], msg);
        return 1;
    }
    long total = writes_mode ? writes : allocs, ok = 0, failed = 0;
    for (long k = 1; k <= total; k++) {
        long a, w;
        int rc = run_once(code, dir, writes_mode ? 0 : k, writes_mode ? k : 0, &a, &w, msg, sizeof msg);
        if (rc)
            failed++;
        else
            ok++;
        check_no_temp(dir);
    }
    printf("fault_inject %s %s: %ld injection points; %ld clean errors, %ld runs unaffected (the failure was "
           "absorbed or retried); no crash\n",
           argv[1], argv[2], total, failed, ok);
    return 0;
}
