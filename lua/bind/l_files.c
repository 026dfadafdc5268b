/* Atomic output files: every file hbdlab writes goes to a temp file made by mkstemp
 * in the destination folder (so two writers never share one), and is renamed over
 * the destination only when complete (a device or FIFO destination, /dev/null, is written to,
 * never replaced). Temp files alive at any moment are listed so
 * that an interrupted or killed process can remove them (hl_files_cleanup is
 * async-signal-safe: it only calls unlink). */
#define _DEFAULT_SOURCE /* realpath */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bind.h"
#include "dist.h"
#include "hbdlab/csv.h"

enum { MAX_TEMPS = 32, TEMP_PATH = 4200 };
static char temps[MAX_TEMPS][TEMP_PATH]; /* "" = free slot */

/* Creates folder dir[0..n) and its missing parents (as `mkdir -p`, without a process): 0, or -1
 * with "<folder>: <reason>" for the first component that could not be made in why[0..wn). */
static int mkdir_p(const char *dir, size_t n, char *why, size_t wn)
{
    if (n == 0 || n >= TEMP_PATH || memchr(dir, '\0', n)) {
        snprintf(why, wn, "%s: %s", n == 0 ? "" : dir, n == 0 ? "empty folder name" : "not a usable folder name");
        return -1;
    }
    char buf[TEMP_PATH];
    memcpy(buf, dir, n);
    buf[n] = '\0';
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        struct stat sb;
        if (buf[i - 1] != '/' && mkdir(buf, 0777) != 0 &&
            (errno != EEXIST || stat(buf, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
            int e = errno == EEXIST ? ENOTDIR : errno;
            snprintf(why, wn, "%s: %s", buf, strerror(e));
            return -1;
        }
        buf[i] = c;
    }
    return 0;
}

/* core.mkdir_p(dir): creates dir and its missing parents (hl.rows.write and every figure called
 * `mkdir -p` once per file). Returns true, or nil and "<folder>: <reason>" for the first component
 * that could not be made. */
static int l_mkdir_p(lua_State *L)
{
    size_t n;
    const char *dir = luaL_checklstring(L, 1, &n);
    char why[TEMP_PATH + 100];
    if (mkdir_p(dir, n, why, sizeof why) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, why);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

void hl_files_cleanup(void)
{
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temps[i][0])
            unlink(temps[i]);
}

/* A FIFO destination opened for writing when its temp file was made (check_target), kept until
 * put_in_place writes to it or the temp file is forgotten: opening a FIFO just to see whether it has
 * a reader and closing it again would hand that reader an end of file. held_for = its temp file. */
static int held_fd = -1;
static char held_for[TEMP_PATH];

static void release_held(void)
{
    if (held_fd >= 0)
        close(held_fd);
    held_fd = -1;
    held_for[0] = '\0';
}

static void forget(const char *tmp)
{
    if (held_fd >= 0 && strcmp(held_for, tmp) == 0)
        release_held();
    for (int i = 0; i < MAX_TEMPS; i++)
        if (temps[i][0] && strcmp(temps[i], tmp) == 0)
            temps[i][0] = '\0';
}

/* Removes the temp files of path that a killed hbdlab left (issue 22: a SIGKILL during a
 * streamed sweep left up to 650 MB that nothing removed): "<name>.tmp-<pid>-XXXXXX" beside path,
 * a regular file of this user, whose process no longer runs on this machine, untouched for a
 * minute (a writer on another machine sharing the folder keeps its file fresh while it writes).
 * Only names of this form: nothing else is ever removed. */
static void remove_stale_temps(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[TEMP_PATH];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (slash == path)
        snprintf(dir, sizeof dir, "/");
    const char *base = slash ? slash + 1 : path;
    size_t blen = strlen(base);
    DIR *d = opendir(dir);
    if (!d)
        return;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        if (strncmp(nm, base, blen) != 0 || strncmp(nm + blen, ".tmp-", 5) != 0)
            continue;
        const char *p = nm + blen + 5;
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p || *end != '-' || strlen(end + 1) != 6 || pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* its writer runs (or is not ours to ask) */
        char full[2 * TEMP_PATH];
        snprintf(full, sizeof full, "%s/%s", dir, nm);
        struct stat st;
        if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() && now - st.st_mtime > 60)
            unlink(full);
    }
    closedir(d);
}

/* Why the last make_temp or put_in_place failed when errno alone would misstate it ("" = errno's
 * text says it); the bindings run on the Lua thread only. */
static char why_buf[200];

const char *hl_files_reason(int e) { return why_buf[0] ? why_buf : strerror(e); }

static int refuse(const char *why)
{
    snprintf(why_buf, sizeof why_buf, "%s", why);
    errno = EINVAL;
    return -1;
}

/* Whether path can be written as a file, checked before anything is made or run: 0, or -1
 * (hl_files_reason says why). A name ending in '/' ("dir/", "dir/.") named the temp file inside
 * the folder and failed at the end as "Not a directory"; a symbolic link loop was replaced by the
 * file (a shell's '>' refuses it); a FIFO without a reader made the open wait for ever. An
 * existing folder, socket or block device is refused; a FIFO with a reader (a pipe, /dev/stdout
 * in a pipeline) and a character device (/dev/null) are written to (put_in_place). */
static int check_target(const char *path)
{
    why_buf[0] = '\0';
    size_t n = strlen(path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (n == 0)
        return refuse("an empty file name");
    if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return refuse("the name is a folder's (it ends in '/', '.' or '..'): give a file name");
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ELOOP ? refuse(strerror(ELOOP))
                              : 0; /* a missing file is made; a missing folder: mkstemp says */
    if (S_ISDIR(st.st_mode))
        return refuse("it is a folder");
    if (S_ISSOCK(st.st_mode) || S_ISBLK(st.st_mode))
        return refuse(S_ISSOCK(st.st_mode) ? "it is a socket, not a file" : "it is a block device, not a file");
    if (S_ISFIFO(st.st_mode)) { /* a reader started beside hbdlab may come a moment later: 5 s, Ctrl-C ends it */
        release_held();
        int fd = -1;
        for (int tries = 0; tries < 250 && !hl_bind_interrupt; tries++) {
            fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd >= 0 || errno != ENXIO)
                break;
            nanosleep(&(struct timespec){0, 20000000}, NULL); /* 20 ms */
        }
        if (fd < 0 && errno == ENXIO)
            return refuse("it is a FIFO with no reader (none opened it within 5 s: start the reader first)");
        held_fd = fd; /* make_temp names its temp file; put_in_place writes through it */
    }
    return 0;
}

/* Where a file written to path goes (attack pass 7): a symbolic link is written through, as a
 * shell's '>' does, not replaced by the file (rows.write to link.csv left its target and put a file
 * in the link's place; as root, out = "/dev/stdout" with standard output in a file made a temp file
 * in /dev and renamed it over the /dev/stdout link). A link into /proc (/dev/stdout, /dev/fd/1, or
 * /proc/self/fd/1 itself) names an open file of this process: *append = 1, it is written to at its
 * end, never renamed over. Else a link to a file is followed (realpath into buf[PATH_MAX]): the
 * temp file goes beside its target and replaces it. Anything else: path itself. */
static const char *destination(const char *path, char *buf, int *append)
{
    *append = 0;
    struct stat lst;
    if (lstat(path, &lst) != 0 || !S_ISLNK(lst.st_mode))
        return path;
    char dir[PATH_MAX], link[PATH_MAX];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".");
    ssize_t n = readlink(path, link, sizeof link - 1);
    link[n > 0 ? n : 0] = '\0';
    char at[2 * PATH_MAX + 2], real_dir[PATH_MAX]; /* the folder the link's target is named in */
    if (link[0] == '/')
        snprintf(at, sizeof at, "%s", link);
    else
        snprintf(at, sizeof at, "%s/%s", dir, link);
    char *last = strrchr(at, '/');
    if (last)
        *last = '\0';
    if ((realpath(dir, real_dir) && strncmp(real_dir, "/proc/", 6) == 0) ||
        (realpath(last ? at : ".", real_dir) && strncmp(real_dir, "/proc/", 6) == 0)) {
        *append = 1;
        return path;
    }
    return realpath(path, buf) ? buf : path; /* a loop or a dangling link: path (check_target names a loop) */
}

/* The descriptor of this process that path names (/proc/self/fd/N, /dev/fd/N, /proc/<our pid>/fd/N,
 * or a link to one such as /dev/stdout), or -1. */
static int own_fd(const char *path)
{
    char link[PATH_MAX], self[40];
    snprintf(self, sizeof self, "/proc/%ld/fd/", (long)getpid());
    const char *p = path;
    for (int hop = 0; hop < 3; hop++) {
        const char *num = strncmp(p, "/proc/self/fd/", 14) == 0 ? p + 14
                          : strncmp(p, "/dev/fd/", 8) == 0      ? p + 8
                          : strncmp(p, self, strlen(self)) == 0 ? p + strlen(self)
                                                                : NULL;
        if (num && *num && strspn(num, "0123456789") == strlen(num) && strlen(num) < 9)
            return atoi(num);
        ssize_t n = readlink(p, link, sizeof link - 1);
        if (n <= 0 || link[0] != '/')
            return -1;
        link[n] = '\0';
        p = link;
    }
    return -1;
}

/* Creates "<path>.tmp-<pid>-XXXXXX" with mkstemp (the pid tells a later run whether its writer
 * still runs: remove_stale_temps); returns its fd and fills tmp (size TEMP_PATH), or -1 with
 * errno set. The name is listed until forget(). */
static int make_temp(const char *given, char *tmp)
{
    if (check_target(given) != 0)
        return -1;
    char buf[PATH_MAX], staged[PATH_MAX + 64];
    int append;
    const char *path = destination(given, buf, &append); /* the temp file beside a link's target */
    struct stat st;
    if (append || (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
        /* written to, never renamed over (a FIFO, a device, an open file): the temp file goes to
         * $TMPDIR, not beside it (in /dev only root could make it, and a rename there replaced /dev/stdout) */
        const char *td = getenv("TMPDIR"), *base = strrchr(path, '/');
        snprintf(staged, sizeof staged, "%s/hbdlab-%s", td && *td ? td : "/tmp", base ? base + 1 : path);
        path = staged;
    }
    remove_stale_temps(path);
    if (snprintf(tmp, TEMP_PATH, "%s.tmp-%ld-XXXXXX", path, (long)getpid()) >= TEMP_PATH) {
        release_held();
        errno = ENAMETOOLONG;
        return -1;
    }
    int slot = -1;
    for (int i = 0; i < MAX_TEMPS && slot < 0; i++)
        if (!temps[i][0])
            slot = i;
    if (slot < 0) {
        release_held();
        errno = EMFILE;
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) { /* /proc/version said "No such file or directory": the temp file's folder is the cause */
        int e = errno;
        release_held();
        snprintf(why_buf, sizeof why_buf, "its temporary file %.80s.tmp-* cannot be made beside it: %s", path,
                 strerror(e));
        errno = e;
        return -1;
    }
    memcpy(temps[slot], tmp, strlen(tmp) + 1);
    if (held_fd >= 0 && !held_for[0])
        memcpy(held_for, tmp, strlen(tmp) + 1);
    return fd;
}

/* 0666 less the umask: what fopen would have made */
static mode_t file_mode(void)
{
    mode_t m = umask(022);
    umask(m);
    return 0666 & ~m;
}

int hl_files_temp(const char *path, char *tmp, size_t n)
{
    why_buf[0] = '\0';
    if (n < TEMP_PATH) {
        errno = ENAMETOOLONG;
        return -1;
    }
    const char *slash = strrchr(path, '/');
    if (slash && slash > path && mkdir_p(path, (size_t)(slash - path), why_buf, sizeof why_buf) != 0) {
        errno = EINVAL; /* a missing folder is made, as hl.rows.write makes it */
        return -1;
    }
    int fd = make_temp(path, tmp);
    if (fd >= 0 && fchmod(fd, file_mode()) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        forget(tmp);
        errno = e;
        return -1;
    }
    return fd;
}

/* Puts the finished temp file tmp at path: renamed over it, except when path is a device or a
 * FIFO (/dev/null, /dev/stdout, a link to one): then tmp's bytes are written to it and tmp is
 * removed, so the node is never replaced by a file. 0, or -1 with errno set (tmp left). */
static int put_in_place(const char *tmp, const char *given)
{
    struct stat st;
    why_buf[0] = '\0';
    char dest[PATH_MAX];
    int append;
    const char *path = destination(given, dest, &append);
    int missing = stat(path, &st) != 0;
    if (missing && errno != ENOENT)
        return -1; /* a symbolic link loop made since check_target: not replaced */
    if (!append && (missing || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
        return rename(tmp, path);
    /* O_NONBLOCK: a FIFO whose reader has gone fails (ENXIO) instead of waiting for another */
    int in = open(tmp, O_RDONLY | O_CLOEXEC), out = -1, own = -1;
    if (in >= 0 && held_fd >= 0 && strcmp(held_for, tmp) == 0) { /* the FIFO opened when tmp was made */
        out = held_fd;
        held_fd = -1;
        held_for[0] = '\0';
    } else if (in >= 0 && append && (own = own_fd(given)) >= 0) { /* this process's own descriptor
                                                                     (/dev/stdout): through it, so its
                                                                     offset moves with what it had */
        fflush(stdout);
        fflush(stderr);
        out = dup(own);
    } else if (in >= 0)
        out =
            open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | (append && !missing && S_ISREG(st.st_mode) ? O_APPEND : 0));
    int e = in < 0 || out < 0 ? errno : 0;
    if (out < 0 && e == ENXIO)
        refuse("it is a FIFO whose reader has gone");
    if (out >= 0 && fcntl(out, F_SETFL, fcntl(out, F_GETFL) & ~O_NONBLOCK) != 0)
        e = errno;
    char buf[65536];
    while (!e) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            e = n < 0 ? errno : 0;
            break;
        }
        for (ssize_t done = 0; done < n && !e;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                e = w < 0 ? errno : EIO;
            else
                done += w;
        }
    }
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0 && !e)
        e = errno;
    if (e) {
        errno = e;
        return -1;
    }
    return unlink(tmp);
}

int hl_files_commit(const char *tmp, const char *path)
{
    int rc = put_in_place(tmp, path);
    int e = errno;
    if (rc == 0)
        forget(tmp);
    errno = e;
    return rc;
}

void hl_files_discard(const char *tmp)
{
    unlink(tmp);
    forget(tmp);
}

/* The name a file written to path gets in this process (issue 22): in a sharded run (--shard I/N)
 * every output carries _shardIofN (hl_dist_shard_path), so shards never overwrite each other's
 * JSON, figures, traces or reports; pushed on the stack. */
static const char *own_path(lua_State *L, int idx)
{
    const char *path = hl_check_c_string(L, idx, "a file name");
    int need = hl_dist_shard_path(path, NULL, 0);
    luaL_Buffer b;
    char *out = luaL_buffinitsize(L, &b, (size_t)need + 1);
    hl_dist_shard_path(path, out, (size_t)need + 1);
    luaL_pushresultsize(&b, (size_t)need);
    return lua_tostring(L, -1);
}

/* write_atomic(path, text) -> the path written (path, or its shard name); raises "cannot write PATH: reason" and leaves no temp
 * file and the old PATH untouched on any failure (full disk, file size limit, no folder). */
static int l_write_atomic(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 2, &len);
    lua_settop(L, 2);
    const char *path = own_path(L, 1); /* at 3 */
    char tmp[TEMP_PATH];
    int fd = make_temp(path, tmp);
    if (fd < 0)
        return hl_error(L, "cannot write %s: %s", path, hl_files_reason(errno));
    size_t done = 0;
    int e = 0;
    while (done < len && !e) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            e = n < 0 ? errno : EIO;
        else
            done += (size_t)n;
    }
    if (fchmod(fd, file_mode()) != 0 && !e) /* mkstemp makes 0600; results are ordinary files */
        e = errno;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && put_in_place(tmp, path) != 0)
        e = errno;
    if (e)
        unlink(tmp);
    forget(tmp);
    if (e)
        return hl_error(L, "cannot write %s: %s", path, hl_files_reason(e));
    return 1;
}

/* temp_beside(path) -> tmp: an empty listed temp file beside path, for a child program to
 * fill (gnuplot); then commit_temp(tmp, path) renames it or discard_temp(tmp) removes it. */
static int l_temp_beside(lua_State *L)
{
    const char *path = own_path(L, 1);
    char tmp[TEMP_PATH];
    int fd = make_temp(path, tmp);
    if (fd < 0)
        return hl_error(L, "cannot write %s: %s", path, hl_files_reason(errno));
    int ok = fchmod(fd, file_mode()) == 0;
    close(fd);
    if (!ok) {
        unlink(tmp);
        forget(tmp);
        return hl_error(L, "cannot write %s: %s", path, strerror(errno));
    }
    lua_pushstring(L, tmp);
    return 1;
}

static int l_commit_temp(lua_State *L)
{
    const char *tmp = hl_check_c_string(L, 1, "a file name"), *path = own_path(L, 2);
    int e = put_in_place(tmp, path) != 0 ? errno : 0;
    if (e)
        unlink(tmp);
    forget(tmp);
    if (e)
        return hl_error(L, "cannot write %s: %s", path, hl_files_reason(e));
    return 0;
}

static int l_discard_temp(lua_State *L)
{
    const char *tmp = hl_check_c_string(L, 1, "a file name");
    unlink(tmp);
    forget(tmp);
    return 0;
}

/* file_tail(path, n) -> the last n bytes of a file (or nil): figures are checked for their
 * format's end marker, since gnuplot exits 0 on a truncated write. */
static int l_file_tail(lua_State *L)
{
    const char *path = hl_check_c_string(L, 1, "a file name");
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_argcheck(L, n > 0 && n <= 4096, 2, "1..4096 bytes");
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char buf[4096];
    size_t got = 0;
    if (fseek(f, -(long)n, SEEK_END) != 0)
        rewind(f);
    got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    lua_pushlstring(L, buf, got);
    return 1;
}

/* same_file(a, b) -> true when both paths exist and name one file (device and inode) */
static int l_same_file(lua_State *L)
{
    struct stat sa, sb;
    int same = stat(hl_check_c_string(L, 1, "a file name"), &sa) == 0 &&
               stat(hl_check_c_string(L, 2, "a file name"), &sb) == 0 && sa.st_dev == sb.st_dev &&
               sa.st_ino == sb.st_ino;
    lua_pushboolean(L, same);
    return 1;
}

/* ---- CSV text: the core's writer (hbdlab/csv.h) over Lua rows ---- */

static const char *const CSV_BUFFER = "hbdlab.csv_buffer";

static int csv_buffer_gc(lua_State *L)
{
    hl_csv_free(luaL_checkudata(L, 1, CSV_BUFFER));
    return 0;
}

/* The cell of the value at idx: nil empty, integers in full, other numbers the shortest decimal
 * that reads back exactly (hl_csv_format_number), booleans true/false, strings as they are (NUL bytes kept), anything else as tostring gives it (a
 * table without __tostring is refused by l_to_csv). */
static void csv_value(lua_State *L, hl_csv *c, int idx)
{
    size_t n;
    const char *s;
    switch (lua_type(L, idx)) {
    case LUA_TNIL: hl_csv_empty(c); return;
    case LUA_TBOOLEAN: hl_csv_bool(c, lua_toboolean(L, idx)); return;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            hl_csv_integer(c, (int64_t)lua_tointeger(L, idx));
        else
            hl_csv_number(c, lua_tonumber(L, idx));
        return;
    case LUA_TSTRING:
        s = lua_tolstring(L, idx, &n);
        hl_csv_bytes(c, s, (int64_t)n);
        return;
    default:
        s = luaL_tolstring(L, idx, &n); /* may raise (a __tostring that fails): the buffer is collected */
        hl_csv_bytes(c, s, (int64_t)n);
        lua_pop(L, 1);
    }
}

/* to_csv(rows, cols) -> text: a header row of the names in cols, then for each of rows[1],
 * rows[2], ... (up to the first nil, as ipairs) the cells row[cols[1]], row[cols[2]], ... */
static int l_to_csv(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    hl_csv *c = lua_newuserdatauv(L, sizeof *c, 0); /* 3: freed by __gc if anything below raises */
    hl_csv_init(c);
    luaL_setmetatable(L, CSV_BUFFER);
    lua_Integer ncols = 0;
    while (lua_geti(L, 2, ncols + 1) != LUA_TNIL) { /* header */
        csv_value(L, c, -1);
        lua_pop(L, 1);
        ncols++;
    }
    lua_pop(L, 1);
    hl_csv_end_row(c);
    hl_rows_reader rd; /* sweep row views: their cells read from the store (l_sweep_rows.c) */
    hl_rows_reader_open(L, &rd);
    int row = lua_gettop(L) + 1;
    for (lua_Integer i = 1; lua_geti(L, 1, i) != LUA_TNIL; i++) { /* the row at `row` */
        int cells = hl_rows_reader_cells(L, &rd, row, 2, ncols);
        for (lua_Integer j = 1; j <= ncols; j++) {
            if (cells) {
                lua_pushvalue(L, row + (int)j);
            } else {
                lua_geti(L, 2, j);
                lua_gettable(L, row);
            }
            if (lua_type(L, -1) == LUA_TTABLE) { /* a nested table wrote "table: 0x55..." into the file */
                if (luaL_getmetafield(L, -1, "__tostring") == LUA_TNIL) {
                    lua_geti(L, 2, j);
                    return hl_error(L,
                                    "to_csv: row %d, column '%s' holds a table (a CSV cell holds a number, a string "
                                    "or a boolean: choose the columns to write)",
                                    (int)i, luaL_tolstring(L, -1, NULL));
                }
                lua_pop(L, 1); /* the __tostring found */
            }
            csv_value(L, c, -1);
            lua_pop(L, 1);
        }
        lua_settop(L, row - 1);
        hl_csv_end_row(c);
    }
    if (c->failed)
        return hl_error(L, "to_csv: out of memory");
    lua_pushlstring(L, c->text, (size_t)c->len);
    hl_csv_free(c);
    return 1;
}

void hl_bind_files(lua_State *L)
{
    static const luaL_Reg fns[] = {{"write_atomic", l_write_atomic},
                                   {"mkdir_p", l_mkdir_p},
                                   {"temp_beside", l_temp_beside},
                                   {"commit_temp", l_commit_temp},
                                   {"discard_temp", l_discard_temp},
                                   {"file_tail", l_file_tail},
                                   {"same_file", l_same_file},
                                   {"to_csv", l_to_csv},
                                   {NULL, NULL}};
    luaL_setfuncs(L, fns, 0);
    if (luaL_newmetatable(L, CSV_BUFFER)) {
        lua_pushcfunction(L, csv_buffer_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_pop(L, 1);
    static int once;
    if (!once) { /* temp files left by an error that escapes everything are removed at exit */
        once = 1;
        atexit(hl_files_cleanup);
    }
}
