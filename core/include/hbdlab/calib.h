/* Calibration: least-squares fit of model parameters to measured cases on the
 * log error, log(predicted / measured), with bounds; leave-one-out
 * cross-validation. Solver: GSL's multifit_nlinear trust region (Levenberg-
 * Marquardt), forward-difference Jacobian in the bounded-transformed parameters. Formulas: docs/MODEL.md, section "Calibration". */
#ifndef HBDLAB_CALIB_H
#define HBDLAB_CALIB_H
#include <stdint.h>
#include "hbdlab/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Predicts every case (pred[0..n_cases-1], > 0) for parameters x[0..n_params-1].
 * Returns HL_OK or an error (the fit stops and returns it). */
typedef hl_status (*hl_calib_fn)(void *ctx, const double *x, double *pred, hl_err *err);

typedef struct hl_calib_in {
    int32_t n_params;
    int32_t n_cases;
    const double *x0;       /* start, n_params values inside [lo, hi] (clamped) */
    const double *lo;       /* lower bounds, n_params */
    const double *hi;       /* upper bounds, n_params, hi > lo */
    const double *measured; /* n_cases values > 0 */
    const int32_t *use;     /* n_cases flags, 1 = the case takes part in the fit; NULL = every case */
    hl_calib_fn fn;
    void *ctx;
    int32_t max_iter; /* 0 = 200 */
} hl_calib_in;

typedef struct hl_calib_out {
    double rms_log; /* sqrt(mean of log(pred/measured)^2) over the fitted cases at the result */
    int32_t iterations;
    int32_t converged; /* 1 when GSL met its tolerances (0: iteration limit or no progress) */
} hl_calib_out;

/* Fits x_out[0..n_params-1]. Needs at least as many fitted cases as parameters. out may be NULL. */
hl_status hl_calib_fit(const hl_calib_in *in, double *x_out, hl_calib_out *out, hl_err *err);

/* Leave-one-out: for each case i that takes part, fits without it and writes
 * its prediction at those parameters to loo_pred[i] (0 for cases not used). */
hl_status hl_calib_loo(const hl_calib_in *in, double *loo_pred, hl_err *err);

#ifdef __cplusplus
}
#endif
#endif
