/* hbdlab: umbrella header for the simulation core. Include this one header to
 * get the whole C API (also parseable by LuaJIT's ffi.cdef via the generated
 * share/hbdlab/hbdlab_cdef.h). */
#ifndef HBDLAB_H
#define HBDLAB_H
#include "hbdlab/status.h"
#endif
