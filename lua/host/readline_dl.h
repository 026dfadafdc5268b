/* GNU readline for the REPL, loaded when the REPL starts (dlopen) instead of linked: a script
 * run never maps libreadline and libtinfo, whose ~1,200 data relocations were most of the
 * dynamic linker's symbol lookups at every start (docs/PERFORMANCE.md "Startup"). */
#ifndef HL_READLINE_DL_H
#define HL_READLINE_DL_H
#include <stddef.h>
#include <stdio.h> /* readline.h uses FILE */

#include <readline/history.h>
#include <readline/readline.h>

/* The functions and variables of readline the REPL uses (repl.c), as in readline.h/history.h. */
typedef struct hl_readline {
    char *(*readline)(const char *prompt);
    void (*add_history)(const char *line);
    void (*using_history)(void);
    void (*stifle_history)(int max);
    int (*read_history)(const char *path);
    int (*write_history)(const char *path);
    HIST_ENTRY **(*history_list)(void);
    int (*on_new_line)(void);
    void (*replace_line)(const char *text, int clear_undo);
    void (*redisplay)(void);
    char **(*completion_matches)(const char *text, rl_compentry_func_t *generator);
    int *attempted_completion_over;
    int *completion_append_character;
    const char **readline_name;
    const char **basic_word_break_characters;
    rl_completion_func_t **attempted_completion_function;
} hl_readline;

/* Loads the readline the build was compiled against (libreadline.so.RL_VERSION_MAJOR) once; NULL,
 * with the reason in why (n bytes), when it cannot (the REPL then reads plain lines). */
const hl_readline *hl_readline_load(char *why, size_t n);

#endif
