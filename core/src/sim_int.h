/* Internal entry point of the job simulation (core/src/sim.c) shared with the
 * planner and the sweep. */
#ifndef HL_SIM_INT_H
#define HL_SIM_INT_H
#include "hbdlab/sim.h"
#include "mapping_int.h" /* HL_TRUST_* */

/* hl_sim_run, skipping the validations named in `trust` (the sweep validates
 * its base job once and trusts the objects no axis touches). */
hl_status hl_sim_run_trusted(const hl_job *job, hl_result *out, int trust, hl_err *err);

/* hl_sim_run_trusted calls so far on the calling thread (HL_TRUST_SAME_BUT_INPUT's caller
 * checks that none ran since its previous one). */
uint64_t hl_sim_thread_runs(void);

#endif
