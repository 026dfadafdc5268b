/* Internal hardware helpers. */
#ifndef HL_HW_INT_H
#define HL_HW_INT_H
#include "hbdlab/hw.h"

/* The cross-field rules of hl_cluster_validate (its GPU's, hbd divides gpus, fabric), for
 * a cluster whose field ranges were already checked by their setters. */
hl_status hl_cluster_check_consistency(const hl_cluster *c, hl_err *err);

#endif
