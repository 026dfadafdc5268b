/* The hbdlab host: shared pieces of the script runner and the REPL. */
#ifndef HL_HOST_H
#define HL_HOST_H
#include <lua.h>
#include <stdint.h>

#include "dist.h"

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

/* Launch (launch.c): how this process joins a shared sweep, into hl_bind_dist (dist.h). */

/* Parses "i/n" (0 <= i < n <= 100000) into *d; 0 on success, else -1. */
int hl_dist_parse_shard(const char *text, hl_dist *d);

/* The fingerprint of a sharded run (hl_dist.run): a hash of the shard count, the command line
 * without --shard, and the bytes of every regular file (up to 64 MiB) it names (the script,
 * its inputs), so the shards of one run share it and shards of two runs differ. */
uint64_t hl_dist_run_id(int argc, char **argv, int32_t count);

/* Starts MPI when the process was launched by mpirun (Open MPI / PMIx
 * environment) and sets hl_bind_dist from the communicator; returns 1 when
 * MPI runs. Without MPI support or launcher, returns 0 and changes nothing. */
int hl_dist_mpi_start(int *argc, char ***argv);

/* Ends MPI after the ranks agree that the script ended (hl_dist_agree, HL_DIST_END): returns
 * the exit status, `code` or 1 when another rank failed or is still at an earlier step. */
int hl_dist_mpi_stop(int code);

/* Runs the interactive loop until end of input. Returns the process exit status. */
int hl_repl(lua_State *L);

#endif
