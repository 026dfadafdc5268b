/* Loading GNU readline for the REPL (readline_dl.h). */
#include "readline_dl.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define HL_STR2(x) #x
#define HL_STR(x) HL_STR2(x)
/* the soname of the readline whose header the REPL was compiled with */
#define READLINE_SONAME "libreadline.so." HL_STR(RL_VERSION_MAJOR)
_Static_assert(sizeof(void (*)(void)) == sizeof(void *), "function pointers are copied from dlsym's void *");

const hl_readline *hl_readline_load(char *why, size_t n)
{
    static hl_readline rl;
    static int state; /* 0 not tried, 1 loaded, -1 failed */
    static char failure[512];
    if (state == 0) {
        state = -1;
        void *h = dlopen(READLINE_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(failure, sizeof failure, "%s", dlerror());
        } else {
            /* each symbol by name into its slot: a function pointer read through void * as POSIX dlsym allows */
            static const struct {
                const char *name;
                size_t offset;
            } syms[] = {
                {"readline", offsetof(hl_readline, readline)},
                {"add_history", offsetof(hl_readline, add_history)},
                {"using_history", offsetof(hl_readline, using_history)},
                {"stifle_history", offsetof(hl_readline, stifle_history)},
                {"read_history", offsetof(hl_readline, read_history)},
                {"write_history", offsetof(hl_readline, write_history)},
                {"history_list", offsetof(hl_readline, history_list)},
                {"rl_on_new_line", offsetof(hl_readline, on_new_line)},
                {"rl_replace_line", offsetof(hl_readline, replace_line)},
                {"rl_redisplay", offsetof(hl_readline, redisplay)},
                {"rl_completion_matches", offsetof(hl_readline, completion_matches)},
                {"rl_attempted_completion_over", offsetof(hl_readline, attempted_completion_over)},
                {"rl_completion_append_character", offsetof(hl_readline, completion_append_character)},
                {"rl_readline_name", offsetof(hl_readline, readline_name)},
                {"rl_basic_word_break_characters", offsetof(hl_readline, basic_word_break_characters)},
                {"rl_attempted_completion_function", offsetof(hl_readline, attempted_completion_function)},
            };
            state = 1;
            for (size_t i = 0; i < sizeof syms / sizeof syms[0] && state == 1; i++) {
                void *p = dlsym(h, syms[i].name);
                if (!p) {
                    snprintf(failure, sizeof failure, "%s has no %s", READLINE_SONAME, syms[i].name);
                    state = -1;
                } else {
                    memcpy((char *)&rl + syms[i].offset, &p, sizeof p); /* every member is one pointer */
                }
            }
        }
    }
    if (state < 0) {
        snprintf(why, n, "%s", failure);
        return NULL;
    }
    return &rl;
}
