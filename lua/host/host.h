/* The hbdlab host: shared pieces of the script runner and the REPL. */
#ifndef HL_HOST_H
#define HL_HOST_H
#include <lua.h>

/* Exit status of a script stopped by Ctrl-C (128 + SIGINT), as shells report it. */
enum { HL_EXIT_INTERRUPTED = 130 };

/* Calls the function at the top of the stack (below it: narg arguments) with
 * a traceback handler and Ctrl-C armed. Returns the lua_pcall status; on error
 * the message (with traceback) is left on the stack. */
int hl_docall(lua_State *L, int narg, int nres);

/* True when the last failed hl_docall was stopped by Ctrl-C. */
int hl_was_interrupted(void);

/* Prints the error message at the top of the stack to stderr and pops it. */
void hl_report(lua_State *L, const char *progname);

/* Runs the interactive loop until end of input. Returns the process exit status. */
int hl_repl(lua_State *L);

#endif
