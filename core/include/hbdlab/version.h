/* The library version, known at compile time. CMakeLists.txt reads the three
 * numbers from the macros below (the one place the version is written);
 * hl_version() returns the string the library was built with. */
#ifndef HBDLAB_VERSION_H
#define HBDLAB_VERSION_H

#define HBDLAB_VERSION_MAJOR 0
#define HBDLAB_VERSION_MINOR 1
#define HBDLAB_VERSION_PATCH 0
#define HBDLAB_VERSION_STR_(a, b, c) #a "." #b "." #c
#define HBDLAB_VERSION_STR(a, b, c) HBDLAB_VERSION_STR_(a, b, c)
#define HBDLAB_VERSION_STRING HBDLAB_VERSION_STR(HBDLAB_VERSION_MAJOR, HBDLAB_VERSION_MINOR, HBDLAB_VERSION_PATCH)

/* The same numbers for LuaJIT's ffi.cdef, which sees no macros (core/src/status.c
 * checks at compile time that they equal the macros). */
enum { HL_VERSION_MAJOR = 0, HL_VERSION_MINOR = 1, HL_VERSION_PATCH = 0 };

#endif
