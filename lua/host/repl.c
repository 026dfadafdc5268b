/* The interactive REPL: readline editing and history, completion of globals
 * and table fields, `return`-less expressions, multi-line chunks. */
#include "host.h"

#include "hbdlab/io.h"
#include "hbdlab/status.h"

#include <ctype.h>
#include <lauxlib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HBDLAB_HAVE_READLINE
#include "readline_dl.h"
#endif

enum { MAX_INPUT_LINE = 4096, HISTORY_KEEP = 2000 };

static lua_State *repl_state = NULL;

/* ---- reading lines ---------------------------------------------------- */

/* Plain lines from stdin: without a terminal (piped input), without readline, or when it cannot be
 * loaded. A line is read whole up to the input limit (a 4,096-byte buffer cut longer lines into
 * pieces run as chunks of their own); a longer one is skipped with a message and runs as "". Bytes
 * are taken one at a time so that a NUL byte is seen: fgets read past it while strlen stopped at
 * it, so the rest of that line was lost and the next line was appended to its head; a line with
 * a NUL byte is skipped with a message too (input files refuse NUL bytes, io.c). */
static char *read_plain_line(const char *prompt)
{
    fputs(prompt, stdout);
    fflush(stdout);
    int64_t cap = 0;
    hl_err err;
    if (hl_max_input_bytes(&cap, &err) != HL_OK) {
        fprintf(stderr, "hbdlab: %s\n", err.msg);
        return NULL;
    }
    size_t size = MAX_INPUT_LINE, n = 0;
    char *buf = malloc(size);
    int too_long = 0, nul = 0, any = 0, c;
    while (buf && (c = getc(stdin)) != EOF) {
        any = 1;
        if (c == '\n')
            break;
        if (c == 0)
            nul = 1;
        if (nul || too_long)
            continue;            /* read on to the line's end */
        if ((int64_t)n >= cap) { /* drop what is read */
            too_long = 1;
            continue;
        }
        if (n + 1 == size) {
            char *g = realloc(buf, size * 2);
            if (!g)
                free(buf);
            buf = g;
            size *= 2;
        }
        if (buf)
            buf[n++] = (char)c;
    }
    if (!buf) {
        fprintf(stderr, "hbdlab: out of memory reading a line\n");
        return strdup("");
    }
    if (!any) {
        free(buf);
        return NULL; /* end of input */
    }
    buf[n] = '\0';
    if (too_long || nul) {
        if (nul)
            fprintf(stderr, "hbdlab: a line with a NUL byte is skipped\n");
        else
            fprintf(stderr,
                    "hbdlab: a line longer than the input limit of %lld bytes (HBDLAB_MAX_INPUT_BYTES) is skipped\n",
                    (long long)cap);
        buf[0] = '\0';
    }
    return buf;
}

#ifdef HBDLAB_HAVE_READLINE
static char history_path[4096];
static const hl_readline *rl; /* loaded by setup_readline; NULL: plain lines */

static void on_sigint_at_prompt(int sig)
{
    (void)sig;
    /* Ctrl-C at the prompt abandons the current line, as a shell does. */
    ssize_t ignored = write(STDOUT_FILENO, "\n", 1);
    (void)ignored;
    rl->on_new_line();
    rl->replace_line("", 0);
    rl->redisplay();
}

/* Collects completions of `text`: "a.b.pre" lists the fields of a.b (and of
 * its metatable's __index table) that start with "pre". */
static char **completions = NULL;
static size_t ncompletions = 0, capcompletions = 0;

static void add_completion(const char *s)
{
    if (ncompletions + 1 >= capcompletions) {
        size_t cap = capcompletions ? capcompletions * 2 : 64;
        char **p = realloc(completions, cap * sizeof *p);
        if (!p)
            return;
        completions = p;
        capcompletions = cap;
    }
    char *copy = strdup(s);
    if (copy)
        completions[ncompletions++] = copy;
}

static void collect_keys(lua_State *L, int idx, const char *head, size_t headlen, const char *partial)
{
    size_t plen = strlen(partial);
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) == LUA_TSTRING) {
            const char *k = lua_tostring(L, -2);
            if (strncmp(k, partial, plen) == 0 && k[0] != '_') {
                char buf[512];
                snprintf(buf, sizeof buf, "%.*s%s", (int)headlen, head, k);
                add_completion(buf);
            }
        }
        lua_pop(L, 1);
    }
}

/* t[k] with metamethods, for userdata objects whose __index is a function (fields of a GPU, a cluster's gpu). */
static int get_field_call(lua_State *L)
{
    lua_gettable(L, 1);
    return 1;
}

/* Pushes the value named by the dotted path text[0..len) or nil. */
static void push_path(lua_State *L, const char *text, size_t len)
{
    lua_pushglobaltable(L);
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || text[i] == '.' || text[i] == ':') {
            if (!lua_istable(L, -1) && !lua_isuserdata(L, -1)) {
                lua_pop(L, 1);
                lua_pushnil(L);
                return;
            }
            lua_pushlstring(L, text + start, i - start);
            if (lua_istable(L, -2))
                lua_rawget(L, -2);
            else if (lua_isuserdata(L, -2) && luaL_getmetafield(L, -2, "__fields") != LUA_TNIL) {
                /* an hbdlab object: its __index function reads fields ([obj key]) */
                lua_pop(L, 1);
                lua_pushcfunction(L, get_field_call); /* [obj key f] */
                lua_insert(L, -2);                    /* [obj f key] */
                lua_pushvalue(L, -3);
                lua_insert(L, -2);                     /* [obj f obj key] */
                if (lua_pcall(L, 2, 1, 0) != LUA_OK) { /* no such field: no completion */
                    lua_pop(L, 1);
                    lua_pushnil(L);
                }
            } else if (luaL_getmetafield(L, -2, "__index") == LUA_TTABLE) {
                lua_insert(L, -2);
                lua_rawget(L, -2);
                lua_remove(L, -2);
            } else {
                lua_settop(L, lua_gettop(L) - 1);
                lua_pushnil(L);
            }
            lua_remove(L, -2);
            start = i + 1;
        }
    }
}

static void add_fields_of_top(lua_State *L, const char *head, size_t headlen, const char *partial)
{
    if (lua_istable(L, -1))
        collect_keys(L, -1, head, headlen, partial);
    int t = luaL_getmetafield(L, -1, "__index");
    if (t == LUA_TTABLE)
        collect_keys(L, -1, head, headlen, partial);
    if (t != LUA_TNIL)
        lua_pop(L, 1);                                         /* an object's __index is a function: pushed too */
    if (luaL_getmetafield(L, -1, "__methods") == LUA_TTABLE) { /* obj:with, m:params, ... */
        collect_keys(L, -1, head, headlen, partial);
        lua_pop(L, 1);
    }
    if (luaL_getmetafield(L, -1, "__fields") == LUA_TTABLE) {
        int n = (int)luaL_len(L, -1);
        for (int i = 1; i <= n; i++) {
            lua_rawgeti(L, -1, i);
            const char *k = lua_tostring(L, -1);
            if (k && strncmp(k, partial, strlen(partial)) == 0) {
                char buf[512];
                snprintf(buf, sizeof buf, "%.*s%s", (int)headlen, head, k);
                add_completion(buf);
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
}

/* collect_completions(text): the completions of text (a light userdata), into completions. */
static int collect_completions(lua_State *L)
{
    const char *text = lua_touserdata(L, 1);
    const char *sep = NULL;
    for (const char *p = text; *p; p++)
        if (*p == '.' || *p == ':')
            sep = p;
    if (sep) {
        push_path(L, text, (size_t)(sep - text));
        add_fields_of_top(L, text, (size_t)(sep - text) + 1, sep + 1);
    } else {
        static const char *const keywords[] = {"and",      "break",  "do",   "else", "elseif", "end",   "false", "for",
                                               "function", "goto",   "if",   "in",   "local",  "nil",   "not",   "or",
                                               "repeat",   "return", "then", "true", "until",  "while", NULL};
        for (int k = 0; keywords[k]; k++)
            if (strncmp(keywords[k], text, strlen(text)) == 0)
                add_completion(keywords[k]);
        lua_pushglobaltable(L);
        add_fields_of_top(L, "", 0, text);
    }
    return 0;
}

static char *completion_generator(const char *text, int state)
{
    static size_t next;
    if (state == 0) {
        for (size_t i = 0; i < ncompletions; i++)
            free(completions[i]);
        ncompletions = 0;
        next = 0;
        lua_State *L = repl_state;
        int top = lua_gettop(L);
        /* in a protected call: a metamethod that raises (an object whose __len or __index fails)
         * leaves fewer completions, never an unprotected error (it aborted the process, issue 22) */
        lua_pushcfunction(L, collect_completions);
        lua_pushlightuserdata(L, (void *)text);
        if (lua_pcall(L, 1, 0, 0) != LUA_OK)
            lua_pop(L, 1);
        lua_settop(L, top);
    }
    if (next < ncompletions)
        return strdup(completions[next++]);
    return NULL;
}

static char **hl_complete(const char *text, int start, int end)
{
    (void)start;
    (void)end;
    *rl->attempted_completion_over = 1;
    *rl->completion_append_character = '\0';
    return rl->completion_matches(text, completion_generator);
}

static void setup_readline(void)
{
    char why[600];
    if (!isatty(STDIN_FILENO))
        return; /* piped input: plain lines (readline echoed and redrew every byte, 5 s a MB; its history
                   file took in whatever was piped) */
    if (!(rl = hl_readline_load(why, sizeof why))) {
        fprintf(stderr, "hbdlab: no line editing (%s)\n", why);
        return;
    }
    *rl->readline_name = "hbdlab";
    *rl->basic_word_break_characters = " \t\n\"\\'`><=;+-*/%^~#{}()[],&|";
    *rl->attempted_completion_function = hl_complete;
    rl->using_history();
    rl->stifle_history(HISTORY_KEEP);
    const char *home = getenv("HOME");
    if (home && *home) {
        snprintf(history_path, sizeof history_path, "%s/.hbdlab_history", home);
        /* only a regular file of ours (not followed through a link, never a FIFO, which blocked the
         * start-up, or a device); else the session keeps no history and says why */
        struct stat st;
        if (lstat(history_path, &st) == 0 && !S_ISREG(st.st_mode)) {
            fprintf(stderr, "hbdlab: %s is %s, not a regular file: this session's history is not kept\n", history_path,
                    S_ISLNK(st.st_mode)    ? "a symbolic link"
                    : S_ISFIFO(st.st_mode) ? "a FIFO"
                                           : "not a file");
            history_path[0] = '\0';
        } else {
            rl->read_history(history_path);
        }
    }
}

static char *read_line(const char *prompt)
{
    if (!rl)
        return read_plain_line(prompt);
    void (*old)(int) = signal(SIGINT, on_sigint_at_prompt);
    char *line = rl->readline(prompt);
    signal(SIGINT, old == SIG_ERR ? SIG_DFL : old);
    return line;
}

static void save_line(const char *line)
{
    if (!rl || !line[0])
        return;
    rl->add_history(line);
    if (!history_path[0])
        return;
    /* The file is rewritten whole to a temp file beside it and renamed over it (history_truncate_file
     * rewrote it in place: through a symbolic link into its target, and under a file size limit
     * it lost lines). On any failure the old file stays and the temp file goes. */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", history_path);
    int fd = mkstemp(tmp); /* 0600: a history is private */
    if (fd < 0)
        return;
    close(fd);
    struct stat st;
    int ok = (lstat(history_path, &st) != 0 || S_ISREG(st.st_mode)) && rl->write_history(tmp) == 0;
    /* readline takes a short write for success (a file size limit cuts the file, write() returns
     * the bytes it wrote): the temp file must hold every line, each with its line end */
    long long want = 0;
    HIST_ENTRY **list = rl->history_list();
    for (int i = 0; list && list[i]; i++)
        want += (long long)strlen(list[i]->line) + 1;
    ok = ok && stat(tmp, &st) == 0 && (long long)st.st_size == want;
    if (!ok || rename(tmp, history_path) != 0)
        unlink(tmp);
}
#else
static void setup_readline(void) {}

static char *read_line(const char *prompt) { return read_plain_line(prompt); }

static void save_line(const char *line) { (void)line; }
#endif

/* ---- evaluating --------------------------------------------------------- */

/* True when the load error at the top of the stack means "chunk incomplete". */
static int incomplete(lua_State *L, int status)
{
    if (status != LUA_ERRSYNTAX)
        return 0;
    size_t len;
    const char *msg = lua_tolstring(L, -1, &len);
    static const char mark[] = "<eof>";
    size_t ml = sizeof mark - 1;
    return len >= ml && strcmp(msg + len - ml, mark) == 0;
}

/* Names a line declared with `local` (each REPL line is its own chunk, so they are
 * gone on the next line), and the last line when it is one bare name: typing that
 * name and getting nil earns a hint instead of a silent nil. */
enum { MAX_LOCAL_NAMES = 64, NAME_CAP = 64 };
static char local_names[MAX_LOCAL_NAMES][NAME_CAP];
static int n_local_names;
static char bare_name[NAME_CAP]; /* the line, when it is a single identifier; else "" */

static size_t ident_len(const char *s)
{
    size_t n = 0;
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    while (isalnum((unsigned char)s[n]) || s[n] == '_')
        n++;
    return n;
}

static const char *skip_space(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

static void remember_local(const char *s, size_t n)
{
    if (n == 0 || n >= NAME_CAP)
        return;
    for (int i = 0; i < n_local_names; i++)
        if (strlen(local_names[i]) == n && memcmp(local_names[i], s, n) == 0)
            return;
    int slot = n_local_names < MAX_LOCAL_NAMES ? n_local_names++ : (int)(n % MAX_LOCAL_NAMES);
    memcpy(local_names[slot], s, n);
    local_names[slot][n] = '\0';
}

static int was_local(const char *name)
{
    for (int i = 0; i < n_local_names; i++)
        if (strcmp(local_names[i], name) == 0)
            return 1;
    return 0;
}

static void note_line(const char *line)
{
    const char *p = skip_space(line);
    size_t n = ident_len(p);
    bare_name[0] = '\0';
    if (n > 0 && n < NAME_CAP && *skip_space(p + n) == '\0') {
        memcpy(bare_name, p, n);
        bare_name[n] = '\0';
    }
    if (strncmp(p, "local", 5) != 0 || !isspace((unsigned char)p[5]))
        return;
    p = skip_space(p + 5);
    if (strncmp(p, "function", 8) == 0 && isspace((unsigned char)p[8])) {
        p = skip_space(p + 8);
        remember_local(p, ident_len(p));
        return;
    }
    for (;;) { /* local a, b <const>, c = ... */
        size_t k = ident_len(p);
        if (k == 0)
            return;
        remember_local(p, k);
        p = skip_space(p + k);
        if (*p == '<') {
            const char *e = strchr(p, '>');
            if (!e)
                return;
            p = skip_space(e + 1);
        }
        if (*p != ',')
            return;
        p = skip_space(p + 1);
    }
}

/* Tries "return <line>" so that expressions print without `return`. */
static int try_expression(lua_State *L, const char *line)
{
    const char *code = lua_pushfstring(L, "return %s;", line);
    int status = luaL_loadbuffer(L, code, strlen(code), "=stdin");
    lua_remove(L, -2);
    if (status != LUA_OK)
        lua_pop(L, 1);
    return status;
}

/* Reads one complete chunk (possibly several lines); leaves the compiled
 * function or a syntax error on the stack. Returns -1 at end of input. */
static int read_chunk(lua_State *L)
{
    char *line = read_line("hbdlab> ");
    if (!line)
        return -1;
    save_line(line);
    note_line(line);
    if (try_expression(L, line) == LUA_OK) {
        free(line);
        return LUA_OK;
    }
    luaL_Buffer b;
    lua_pushstring(L, line);
    free(line);
    for (;;) {
        size_t len;
        const char *code = lua_tolstring(L, -1, &len);
        int status = luaL_loadbuffer(L, code, len, "=stdin");
        if (!incomplete(L, status)) {
            lua_remove(L, -2); /* source */
            return status;
        }
        lua_pop(L, 1);
        char *more = read_line(">> ");
        if (!more) {
            lua_pop(L, 1);
            return -1;
        }
        save_line(more);
        luaL_buffinit(L, &b);
        lua_pushvalue(L, -2);
        luaL_addvalue(&b);
        luaL_addchar(&b, '\n');
        luaL_addstring(&b, more);
        free(more);
        luaL_pushresult(&b);
        lua_remove(L, -2);
    }
}

/* Prints the n values on top of the stack with hbdlab.pretty. */
static void print_results(lua_State *L, int n)
{
    if (n == 0)
        return;
    lua_getglobal(L, "require");
    lua_pushliteral(L, "hbdlab.pretty");
    if (hl_docall(L, 1, 1) != LUA_OK) {
        hl_report(L, "hbdlab");
        lua_pop(L, n);
        return;
    }
    lua_getfield(L, -1, "print");
    lua_remove(L, -2);
    lua_insert(L, -(n + 1));
    if (hl_docall(L, n, 0) != LUA_OK)
        hl_report(L, "hbdlab");
}

/* Loads the modules hl loads on first use (init.lua: its metatable's __load_all), so that
 * completion, which reads tables raw, lists hl.plot.line and the like from the first line. */
static void load_lazy_modules(lua_State *L)
{
    lua_getglobal(L, "hl");
    if (luaL_getmetafield(L, -1, "__load_all") != LUA_TNIL && hl_docall(L, 0, 0) != LUA_OK)
        hl_report(L, "hbdlab");
    lua_pop(L, 1);
}

int hl_repl(lua_State *L)
{
    repl_state = L;
    load_lazy_modules(L);
    setup_readline();
    printf("hbdlab %s (%s)  hl.help() lists the API; Ctrl-D exits\n", hl_version(), LUA_RELEASE);
    for (;;) {
        int top = lua_gettop(L);
        int status = read_chunk(L);
        if (status == -1)
            break;
        if (status == LUA_OK)
            status = hl_docall(L, 0, LUA_MULTRET);
        if (status == LUA_OK) {
            int n = lua_gettop(L) - top;
            int hint = n == 1 && lua_isnil(L, -1) && bare_name[0] && was_local(bare_name);
            print_results(L, n);
            if (hint)
                printf("(%s is nil here: `local %s` lived only in its own line, each REPL line is a chunk; "
                       "write `%s = ...` without local to keep it)\n",
                       bare_name, bare_name, bare_name);
        } else
            hl_report(L, "hbdlab");
        lua_settop(L, top);
    }
    putchar('\n');
    return EXIT_SUCCESS;
}
