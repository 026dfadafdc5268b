/* hbdlab: the host executable. Runs scripts, -e chunks, stdin, the REPL and
 * the subcommands (notebook, eval, bench, serve, calibrate, merge, walkthrough), all through protected calls. */
#include "host.h"

#include <errno.h>
#include <lauxlib.h>
#include <lualib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bind.h"
#include "dist.h"
#include "hbdlab/status.h"

static const char *progname = "hbdlab";
static lua_State *active_state = NULL;
static volatile sig_atomic_t interrupted = 0;

/* Hook installed by the SIGINT handler: raises the error at the next Lua event. */
static void stop_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_sethook(L, NULL, 0, 0);
    hl_bind_interrupt = 0; /* delivered as this error: a later sweep must not see it */
    luaL_error(L, "interrupted!");
}

static void on_sigint(int sig)
{
    if (interrupted) { /* a second Ctrl-C kills the process, as in lua.c, but removes temp files first */
        hl_files_cleanup();
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    interrupted = 1;
    hl_bind_interrupt_signal = sig;
    /* long C loops poll this; a sweep keeps its rows on 1 (Ctrl-C) only: SIGTERM and SIGHUP (the
     * terminal or SSH session closed) end the script, and its temp files go with it */
    hl_bind_interrupt = sig == SIGTERM || sig == SIGHUP ? 2 : 1;
    lua_sethook(active_state, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/* --traceback (or HBDLAB_TRACEBACK=1): errors carry the Lua stack. */
static int show_traceback = 0;

/* A chunk of hbdlab's own Lua library ("@hbdlab/sweep.lua"). */
static int internal_source(const char *source) { return strncmp(source, "@hbdlab/", 8) == 0; }

/* Message handler. With --traceback: the message and the stack. Without: the
 * message without hbdlab's own "hbdlab/x.lua:12: " prefixes, placed at the
 * user's line (the innermost frame outside hbdlab's library) when it names none. */
static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    if (show_traceback) {
        luaL_traceback(L, L, msg, 1);
        return 1;
    }
    while (strncmp(msg, "hbdlab/", 7) == 0) { /* "hbdlab/objects.lua:62: " */
        const char *p = strstr(msg, ".lua:");
        if (!p)
            break;
        p += 5;
        while (*p >= '0' && *p <= '9')
            p++;
        if (p[0] != ':' || p[1] != ' ')
            break;
        msg = p + 2;
    }
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0 || internal_source(ar.source))
            continue;
        size_t n = strlen(ar.short_src);
        if (!(strncmp(msg, ar.short_src, n) == 0 && msg[n] == ':')) /* not already "file:line: msg" */
            msg = lua_pushfstring(L, "%s:%d: %s", ar.short_src, ar.currentline, msg);
        break;
    }
    lua_pushstring(L, msg);
    return 1;
}

int hl_docall(lua_State *L, int narg, int nres)
{
    int base = lua_gettop(L) - narg;
    lua_pushcfunction(L, msghandler);
    lua_insert(L, base);
    active_state = L;
    interrupted = 0;
    hl_bind_interrupt = 0;
    void (*old)(int) = signal(SIGINT, on_sigint);
    void (*old_term)(int) = signal(SIGTERM, on_sigint); /* SIGTERM stops Lua code the same way */
    /* SIGHUP too (its default ended the process at once, leaving a sweep's multi-GB temp file beside
     * its output); not under nohup, which ignores it */
    void (*old_hup)(int) = signal(SIGHUP, on_sigint);
    if (old_hup == SIG_IGN)
        signal(SIGHUP, SIG_IGN);
    int status = lua_pcall(L, narg, nres, base);
    signal(SIGINT, old == SIG_ERR ? SIG_DFL : old);
    signal(SIGTERM, old_term == SIG_ERR ? SIG_DFL : old_term);
    signal(SIGHUP, old_hup == SIG_ERR ? SIG_DFL : old_hup);
    lua_sethook(L, NULL, 0, 0);
    lua_remove(L, base);
    return status;
}

int hl_was_interrupted(void) { return interrupted != 0; }

/* A malloc'd copy of msg (the caller frees it; NULL when out of memory) with every byte a terminal
 * acts on as \ddd: C0 control bytes but tab and line feed, DEL, and C1 controls (U+0080..U+009F
 * in UTF-8). Messages quote user text ("unknown gpu preset '...'"): an escape sequence in it must
 * be shown, not run. */
static char *terminal_safe(const char *msg)
{
    size_t n = strlen(msg);
    char *out = malloc(4 * n + 1), *o = out; /* at most 4 bytes a byte: "\127", "\194\155" */
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        if ((*p < 32 && *p != '\n' && *p != '\t') || *p == 127)
            o += sprintf(o, "\\%u", *p);
        else if (*p == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
            o += sprintf(o, "\\194\\%u", p[1]);
            p++;
        } else
            *o++ = (char)*p;
    }
    *o = '\0';
    return out;
}

void hl_report(lua_State *L, const char *name)
{
    const char *msg = lua_tostring(L, -1);
    char *safe = terminal_safe(msg ? msg : "(error without message)");
    /* one write of the whole line: under mpirun the ranks' lines are tagged by line, and a line
     * written in pieces was interleaved with the other rank's */
    fprintf(stderr, "%s: %s\n", name, safe ? safe : "(error message not shown: out of memory)");
    free(safe);
    fflush(stderr);
    lua_pop(L, 1);
}

static int exit_status_for(int lua_status)
{
    if (lua_status == LUA_OK && hl_bind_sweep_interrupted) {
        /* the script ran to its end on the rows done but never asked hl.interrupted() */
        hl_bind_sweep_interrupted = 0;
        fprintf(stderr,
                "%s: a sweep was interrupted (the rows done were kept); exit status %d "
                "(a script that calls hl.interrupted() handles it)\n",
                progname, HL_EXIT_INTERRUPTED);
        return HL_EXIT_INTERRUPTED;
    }
    if (lua_status == LUA_OK)
        return EXIT_SUCCESS;
    return hl_was_interrupted() ? HL_EXIT_INTERRUPTED : EXIT_FAILURE;
}

/* Loads and runs a chunk already on the stack (or the load error). */
static int run_loaded(lua_State *L, int load_status, int narg)
{
    if (load_status != LUA_OK) {
        lua_insert(L, -(narg + 1)); /* the message below the script's arguments, which go */
        lua_pop(L, narg);
        hl_report(L, progname);
        return EXIT_FAILURE;
    }
    if (narg > 0)
        lua_rotate(L, -(narg + 1), 1); /* function below its arguments */
    int status = hl_docall(L, narg, 0);
    if (status != LUA_OK)
        hl_report(L, progname);
    return exit_status_for(status);
}

/* Builds the global `arg` table as lua.c does: arg[0] = script, arg[1..] = its
 * arguments, negative indices = the interpreter and its options. */
static void create_arg_table(lua_State *L, char **argv, int argc, int script)
{
    lua_createtable(L, argc - script - 1, script + 1);
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - script);
    }
    lua_setglobal(L, "arg");
}

/* Pushes the script's arguments (after the script name) and returns their count. */
static int push_script_args(lua_State *L, char **argv, int argc, int script)
{
    int n = argc - script - 1;
    luaL_checkstack(L, n + 3, "too many arguments to script");
    for (int i = script + 1; i < argc; i++)
        lua_pushstring(L, argv[i]);
    return n;
}

static void print_usage(FILE *out)
{
    fprintf(out, "usage: hbdlab [options] [script [args]]\n"
                 "       hbdlab notebook FILE.md [-o REPORT.html|.md] [--keep-going]\n"
                 "       hbdlab eval CONFIG.json|-\n"
                 "       hbdlab calibrate CASES.json\n"
                 "       hbdlab bench [--json] [--quick]\n"
                 "       hbdlab serve CONFIG.json|- [--json]\n"
                 "       hbdlab frontier CONFIG.json|- [-o STEM] [--json] [--shard I/N]\n"
                 "       hbdlab merge OUT_shard*.csv -o ALL.csv\n"
                 "       hbdlab walkthrough CONFIG.json|- -o WALK.html\n"
                 "Options:\n"
                 "  -e CODE      run the Lua chunk CODE (may be repeated)\n"
                 "  -i           enter the REPL after running the script or -e chunks\n"
                 "  -            run standard input as a script\n"
                 "  --shard I/N  run only block I (0..N-1) of every sweep; every file gets _shardIofN\n"
                 "               (also accepted after the script name; merge with `hbdlab merge`)\n"
                 "  --traceback  errors show the Lua stack (also HBDLAB_TRACEBACK=1)\n"
                 "  -v, --version  print the version\n"
                 "  -h, --help     print this help\n"
                 "With no script and a terminal on stdin: the interactive REPL.\n"
                 "With no script and stdin not a terminal: stdin is run as a script.\n"
                 "A script's own options follow its name: `hbdlab x.lua --set gpus=64 --help`.\n"
                 "`hbdlab SUBCOMMAND --help` lists the fields its JSON takes (those of hl.simulate, hl.serve, ...).\n"
                 "The module is preloaded as the global `hl` (also `require \"hbdlab\"`).\n");
}

/* The errno of the first failed write of standard output by print (0: none). Lua's print flushes
 * each line; when that flush failed (a full disk, /dev/full) the exit's fflush had nothing left to
 * write and the reason was lost: "cannot write standard output: write error". */
static int stdout_errno;

/* print, as Lua 5.4's (luaB_print: luaL_tolstring of each argument, tabs, a newline, a flush),
 * keeping the errno of a failed write for the exit's message. */
static int l_print(lua_State *L)
{
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s = luaL_tolstring(L, i, &len);
        if ((i > 1 && fputc('\t', stdout) == EOF) || fwrite(s, 1, len, stdout) != len) {
            if (!stdout_errno)
                stdout_errno = errno;
        }
        lua_pop(L, 1);
    }
    if ((fputc('\n', stdout) == EOF || fflush(stdout) != 0) && !stdout_errno)
        stdout_errno = errno;
    return 0;
}

/* Opens the standard libraries and hbdlab; sets the global `hl`. */
static int open_state(lua_State *L)
{
    luaL_openlibs(L);
    lua_pushcfunction(L, l_print);
    lua_setglobal(L, "print");
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_hbdlab);
    lua_setfield(L, -2, "hbdlab");
    lua_pop(L, 1);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "hbdlab");
    int status = hl_docall(L, 1, 1);
    if (status != LUA_OK) {
        hl_report(L, progname);
        return EXIT_FAILURE;
    }
    lua_setglobal(L, "hl");
    return EXIT_SUCCESS;
}

/* hbdlab SUBCOMMAND args...: calls require("hbdlab.cli")[SUBCOMMAND](args). */
static int run_subcommand(lua_State *L, const char *sub, char **argv, int argc, int first)
{
    create_arg_table(L, argv, argc, first - 1);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "hbdlab.cli");
    if (hl_docall(L, 1, 1) != LUA_OK) {
        hl_report(L, progname);
        return EXIT_FAILURE;
    }
    lua_getfield(L, -1, sub);
    lua_remove(L, -2);
    int n = argc - first;
    luaL_checkstack(L, n + 3, "too many arguments");
    for (int i = first; i < argc; i++)
        lua_pushstring(L, argv[i]);
    int status = hl_docall(L, n, 1);
    if (status != LUA_OK) {
        hl_report(L, progname);
        return exit_status_for(status);
    }
    int code = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : EXIT_SUCCESS;
    lua_pop(L, 1);
    /* a subcommand that failed because of Ctrl-C / SIGTERM (its JSON error "interrupted!") ends as a
     * script does: `hbdlab serve cfg.json` exited 1 where hl.serve in a script exits 130 */
    if (code != EXIT_SUCCESS && hl_was_interrupted())
        code = HL_EXIT_INTERRUPTED;
    return code;
}

static int run_main(int argc, char **argv);

static int is_subcommand(const char *s)
{
    return strcmp(s, "notebook") == 0 || strcmp(s, "eval") == 0 || strcmp(s, "bench") == 0 || strcmp(s, "serve") == 0 ||
           strcmp(s, "merge") == 0 || strcmp(s, "calibrate") == 0 || strcmp(s, "frontier") == 0 ||
           strcmp(s, "walkthrough") == 0;
}

/* Takes `--shard I/N` (or --shard=I/N) and `--traceback` out of argv wherever
 * they are, before or after the script name, into hl_bind_dist and
 * show_traceback. Returns 0, or -1 after printing why. */
static int take_shard_option(int *argc, char **argv)
{
    int out = 1, seen = 0;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (strcmp(a, "--shard") == 0) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "%s: '--shard' needs I/N (for example --shard 0/4)\n", progname);
                return -1;
            }
            val = argv[++i];
        } else if (strncmp(a, "--shard=", 8) == 0) {
            val = a + 8;
        } else if (strcmp(a, "--traceback") == 0) {
            show_traceback = 1; /* a host option wherever it is, as --shard */
            continue;
        } else {
            argv[out++] = argv[i];
            continue;
        }
        if (seen++ || hl_dist_parse_shard(val, &hl_bind_dist) != 0) {
            fprintf(stderr, "%s: --shard %s: expected I/N with 0 <= I < N (shards are numbered from 0)%s\n", progname,
                    val, seen > 1 ? "; given twice" : "");
            return -1;
        }
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

/* Test hook: HBDLAB_TEST_LUA_MEMORY=BYTES caps what the Lua state may hold, so tests can
 * make Lua run out of memory at a chosen point (sweep rows, JSON) and check nothing leaks. */
static size_t lua_cap, lua_used;

static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        lua_used -= old;
        return NULL;
    }
    if (nsize > old && lua_used + (nsize - old) > lua_cap)
        return NULL;
    void *p = realloc(ptr, nsize);
    if (p)
        lua_used = lua_used - old + nsize;
    return p;
}

static int on_panic(lua_State *L)
{
    fprintf(stderr, "%s: unprotected Lua error: %s\n", progname, lua_tostring(L, -1));
    return 0;
}

static lua_State *new_state(void)
{
    double cap;
    hl_err err;
    if (hl_env_bytes("HBDLAB_TEST_LUA_MEMORY", 0, 1e15, &cap, &err)) {
        fprintf(stderr, "%s: %s\n", progname, err.msg); /* junk was a cap of 0: nothing could run */
        exit(EXIT_FAILURE);
    }
    if (cap == 0)
        return luaL_newstate();
    lua_cap = (size_t)cap;
    lua_State *L = lua_newstate(capped_alloc, NULL);
    if (L)
        lua_atpanic(L, on_panic);
    return L;
}

int main(int argc, char **argv)
{
    /* over a file size limit a write fails with EFBIG (and the temp file is removed) instead of
     * the process dying with a half-written file; children get the default back (l_spawn) */
    signal(SIGXFSZ, SIG_IGN);
    int mpi = hl_dist_mpi_start(&argc, &argv);
    /* a frontier search splits like a sweep: it takes --shard too */
    int shardable = !(argc > 1 && is_subcommand(argv[1])) || strcmp(argv[1], "frontier") == 0;
    if (shardable && take_shard_option(&argc, argv) != 0) {
        return hl_dist_mpi_stop(EXIT_FAILURE);
    }
    if (!mpi && hl_bind_dist.count > 1) {
        /* a subcommand is one job, not a script's sweeps: half a notebook's sweeps rendered and
         * exit 0 is a silent loss (issue 22); a frontier search is split like a sweep */
        if (argc > 1 && is_subcommand(argv[1]) && strcmp(argv[1], "frontier") != 0) {
            fprintf(stderr,
                    "%s: --shard splits the sweeps of a script (hbdlab --shard I/N script.lua); "
                    "it does not apply to '%s'\n",
                    progname, argv[1]);
            return 2;
        }
        hl_bind_dist.run = hl_dist_run_id(argc, argv, hl_bind_dist.count);
    }
    if (mpi && hl_bind_dist.count > 1) {
        if (!hl_bind_dist.mpi) {
            fprintf(stderr, "%s: --shard cannot be combined with mpirun (the ranks split the sweeps)\n", progname);
            return hl_dist_mpi_stop(EXIT_FAILURE);
        }
        if (hl_bind_dist.index > 0 && !freopen("/dev/null", "w", stdout)) /* rank 0 prints for all */
            return EXIT_FAILURE;
    }
    int code = run_main(argc, argv);
    return hl_dist_mpi_stop(code);
}

static int run_main(int argc, char **argv)
{
    const char *tb = getenv("HBDLAB_TRACEBACK");
    if (tb && *tb && strcmp(tb, "0") != 0)
        show_traceback = 1;
    lua_State *L = new_state();
    if (L == NULL) {
        fprintf(stderr, "%s: cannot create Lua state: not enough memory\n", progname);
        return EXIT_FAILURE;
    }
    int code = open_state(L);
    if (code != EXIT_SUCCESS)
        goto done;

    if (argc > 1 && is_subcommand(argv[1])) {
        code = run_subcommand(L, argv[1], argv, argc, 2);
        goto done;
    }

    int want_repl = 0, ran_chunk = 0, script = 0;
    int i;
    create_arg_table(L, argv, argc, 0);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            print_usage(stdout);
            goto done;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--version") == 0) {
            printf("hbdlab %s (%s)\n", hl_version(), LUA_RELEASE);
            goto done;
        } else if (strcmp(a, "--traceback") == 0) {
            show_traceback = 1;
        } else if (strcmp(a, "-i") == 0) {
            want_repl = 1;
        } else if (strcmp(a, "-e") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: '-e' needs an argument\n", progname);
                print_usage(stderr);
                code = EXIT_FAILURE;
                goto done;
            }
            const char *chunk = argv[++i];
            code = run_loaded(L, luaL_loadbuffer(L, chunk, strlen(chunk), "=(command line)"), 0);
            ran_chunk = 1;
            if (code != EXIT_SUCCESS)
                goto done;
        } else if (strcmp(a, "-") == 0) {
            break;
        } else if (a[0] == '-') {
            fprintf(stderr, "%s: unrecognized option '%s'\n", progname, a);
            print_usage(stderr);
            code = EXIT_FAILURE;
            goto done;
        } else {
            break;
        }
    }
    script = i;
    if (script < argc) {
        const char *fname = strcmp(argv[script], "-") == 0 ? NULL : argv[script];
        create_arg_table(L, argv, argc, script);
        int n = push_script_args(L, argv, argc, script);
        code = run_loaded(L, luaL_loadfile(L, fname), n);
        if (code != EXIT_SUCCESS || !want_repl)
            goto done;
    } else if (!ran_chunk && !want_repl && !isatty(STDIN_FILENO)) {
        code = run_loaded(L, luaL_loadfile(L, NULL), 0);
        goto done;
    } else if (ran_chunk && !want_repl) {
        goto done;
    }
    code = hl_repl(L);
done:
    lua_close(L);
    /* output lost to a full disk (or /dev/full) must not end in success */
    int e = fflush(stdout) != 0 ? errno : 0;
    if (!e)
        e = stdout_errno;
    if (e || ferror(stdout)) {
        fprintf(stderr, "%s: cannot write standard output: %s\n", progname, e ? strerror(e) : "write error");
        code = EXIT_FAILURE;
    }
    return code;
}
