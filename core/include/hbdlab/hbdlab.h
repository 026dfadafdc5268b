/* hbdlab: umbrella header for the simulation core. Include this one header to
 * get the whole C API (also parseable by LuaJIT's ffi.cdef via the generated
 * share/hbdlab/hbdlab_cdef.h). */
#ifndef HBDLAB_H
#define HBDLAB_H
#include "hbdlab/version.h"
#include "hbdlab/status.h"
#include "hbdlab/precision.h"
#include "hbdlab/fields.h"
#include "hbdlab/io.h"
#include "hbdlab/json.h"
#include "hbdlab/hw.h"
#include "hbdlab/model.h"
#include "hbdlab/roofline.h"
#include "hbdlab/kernels.h"
#include "hbdlab/expert_load.h"
#include "hbdlab/router.h"
#include "hbdlab/kvcache.h"
#include "hbdlab/presets.h"
#include "hbdlab/coll.h"
#include "hbdlab/cost.h"
#include "hbdlab/job.h"
#include "hbdlab/memory.h"
#include "hbdlab/sim.h"
#include "hbdlab/serve.h"
#include "hbdlab/result.h"
#include "hbdlab/csv.h"
#include "hbdlab/plan.h"
#include "hbdlab/sweep.h"
#include "hbdlab/calib.h"
#include "hbdlab/bench.h"
#include "hbdlab/minitf.h"
#endif
