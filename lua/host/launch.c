/* How the executable joins a shared sweep at launch (docs/LUA_API.md "Sweeps on a
 * cluster"): `--shard I/N` parsed, or MPI started under mpirun, into hl_bind_dist
 * (lua/bind/dist.h), which the bindings read. Only the host starts and ends MPI: the
 * Lua module hbdlab.so always runs alone. MPI is optional at build time (HBDLAB_HAVE_MPI: the
 * plugin hbdlab_mpi.so was built, and is loaded only under a launcher). */
#include "host.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef HBDLAB_HAVE_MPI
#include <dlfcn.h>
#include <unistd.h>

#include "mpi_ops.h"
#endif

int hl_dist_parse_shard(const char *text, hl_dist *d)
{
    char *end;
    long i = strtol(text, &end, 10);
    if (end == text || *end != '/')
        return -1;
    const char *p = end + 1;
    long n = strtol(p, &end, 10);
    if (end == p || *end != '\0' || n < 1 || n > 100000 || i < 0 || i >= n)
        return -1;
    d->index = (int32_t)i;
    d->count = (int32_t)n;
    d->mpi = 0;
    return 0;
}

uint64_t hl_dist_run_id(int argc, char **argv, int32_t count)
{
    uint64_t h = hl_dist_hash(HL_DIST_HASH_START, &count, sizeof count);
    for (int i = 1; i < argc; i++) {
        h = hl_dist_hash(h, argv[i], strlen(argv[i]) + 1); /* the NUL separates the arguments */
        struct stat st;
        FILE *f =
            stat(argv[i], &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (64 << 20) ? fopen(argv[i], "rb") : NULL;
        if (!f)
            continue;
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            h = hl_dist_hash(h, buf, n);
        fclose(f);
    }
    return h;
}

#ifdef HBDLAB_HAVE_MPI
/* The plugin beside the executable (the build folder), else where `make install` puts it, found
 * from the executable's own folder (HBDLAB_MPI_PLUGIN_REL: the install's libdir/hbdlab relative
 * to its bindir), so a moved install still finds it. */
static void *open_plugin(char *why, size_t n)
{
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        snprintf(why, n, "cannot find the executable's folder (/proc/self/exe)");
        return NULL;
    }
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    const char *const places[] = {"", "/" HBDLAB_MPI_PLUGIN_REL};
    why[0] = '\0';
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        char path[4096 + 256];
        snprintf(path, sizeof path, "%s%s/hbdlab_mpi.so", exe, places[i]);
        /* RTLD_GLOBAL: Open MPI's own components, which it dlopens, resolve libmpi's symbols */
        void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
        if (h)
            return h;
        size_t used = strlen(why);
        snprintf(why + used, n - used, "%s%s", used ? "; " : "", dlerror());
    }
    return NULL;
}

int hl_dist_mpi_start(int *argc, char ***argv)
{
    /* only under a launcher: a plain run must not pay for (or be confused by) MPI start-up, nor
     * even map libmpi (the plugin is loaded here, mpi_ops.h) */
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_SIZE"))
        return 0;
    char why[2048];
    void *h = open_plugin(why, sizeof why);
    hl_mpi_plugin_fn get = h ? (hl_mpi_plugin_fn)(uintptr_t)dlsym(h, HL_MPI_OPS_SYMBOL) : NULL;
    const hl_mpi_ops *ops = get ? get() : NULL;
    if (!ops || ops->abi != HL_MPI_OPS_ABI) {
        /* every rank running the whole script alone would write the same files N times */
        fprintf(stderr, "hbdlab: started by an MPI launcher but the MPI plugin cannot be used: %s\n",
                !h     ? why
                : !ops ? "it has no " HL_MPI_OPS_SYMBOL
                       : "it is of another hbdlab version");
        exit(EXIT_FAILURE);
    }
    int rank = 0, size = 1;
    if (ops->init(argc, argv, &rank, &size) != 0)
        return 0;
    hl_bind_mpi = ops;
    hl_bind_dist = (hl_dist){rank, size, 1, 0};
    return 1;
}

int hl_dist_mpi_stop(int code)
{
    if (!hl_bind_dist.mpi || !hl_bind_mpi)
        return code;
    /* The end of the script is a step the ranks agree on, as each sweep is (issue 22): a rank that
     * ran one more sweep, or failed while the others succeeded, is met here and every rank exits
     * non-zero with one message, instead of MPI_Abort killing ranks mid-sentence or one rank
     * waiting forever in a sweep the others never start. */
    if (hl_bind_dist.count > 1 && !hl_dist_out_of_step()) {
        char msg[400];
        if (hl_dist_agree(HL_DIST_END, code != 0, 0, msg, sizeof msg) != 0) {
            fprintf(stderr, "hbdlab: %s\n", msg);
            if (code == 0)
                code = EXIT_FAILURE;
        }
    }
    hl_bind_mpi->finalize();
    return code;
}
#else
int hl_dist_mpi_start(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int hl_dist_mpi_stop(int code) { return code; }
#endif
