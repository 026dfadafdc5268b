/* The Lua library (every .lua file under lua/hbdlab), embedded at build time by
 * cmake/lua_chunks.c into the generated lua_data.c, as source and as the chunk lua_dump makes of
 * it (precompiled against the same liblua); l_hbdlab.c serves it to require. */
#ifndef HL_LUA_LIBRARY_H
#define HL_LUA_LIBRARY_H
#include <stddef.h>
#include <stdint.h>

typedef struct hl_lua_file {
    const char *name;  /* path relative to lua/, e.g. "hbdlab/plot.lua" */
    const char *data;  /* NUL-terminated source, static storage */
    size_t size;       /* bytes, without the terminating NUL */
    const char *chunk; /* the precompiled chunk (lua_dump, debug information kept) */
    size_t chunk_size; /* bytes */
} hl_lua_file;

/* hl_embedded_lua_count files, then a {NULL, NULL, 0, NULL, 0} end marker. */
extern const hl_lua_file hl_embedded_lua[];
extern const int32_t hl_embedded_lua_count;
/* LUA_RELEASE of the lua.h the chunks were compiled with ("Lua 5.4.4"). */
extern const char hl_embedded_lua_release[];

#endif
