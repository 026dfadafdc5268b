/* Calibration by nonlinear least squares on log errors (docs/MODEL.md, section "Calibration"). */
#include "hbdlab/calib.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err_int.h"

/* State shared with the GSL callback. Bounds are kept by fitting u with
 * x = lo + (hi - lo) / (1 + exp(-u)) (a logistic map of the real line). */
typedef struct fit_ctx {
    const hl_calib_in *in;
    int32_t *rows; /* indices of the fitted cases */
    int32_t n_rows;
    double *x, *pred; /* scratch: n_params, n_cases */
    hl_err *err;
    hl_status st; /* first error raised by in->fn */
} fit_ctx;

static double to_x(double u, double lo, double hi) { return lo + (hi - lo) / (1 + exp(-u)); }

static double to_u(double x, double lo, double hi)
{
    double f = (x - lo) / (hi - lo);
    f = fmin(fmax(f, 1e-9), 1 - 1e-9);
    return log(f / (1 - f));
}

static int residuals(const gsl_vector *u, void *data, gsl_vector *r)
{
    fit_ctx *c = data;
    const hl_calib_in *in = c->in;
    for (int32_t p = 0; p < in->n_params; p++)
        c->x[p] = to_x(gsl_vector_get(u, (size_t)p), in->lo[p], in->hi[p]);
    hl_status st = in->fn(in->ctx, c->x, c->pred, c->err);
    if (st) {
        c->st = st;
        return GSL_EBADFUNC;
    }
    for (int32_t i = 0; i < c->n_rows; i++) {
        double p = c->pred[c->rows[i]];
        if (!(p > 0) || !isfinite(p)) {
            c->st = hl_fail(c->err, HL_EINVAL, "calibrate: case %d predicted %g (a prediction must be > 0)",
                            (int)c->rows[i] + 1, p);
            return GSL_EBADFUNC;
        }
        gsl_vector_set(r, (size_t)i, log(p / in->measured[c->rows[i]]));
    }
    return GSL_SUCCESS;
}

/* Forward-difference Jacobian in u with a fixed step: u is O(1) by
 * construction, and GSL's own step (relative to |u|) vanishes at u = 0. */
static int jacobian(const gsl_vector *u, void *data, gsl_matrix *J)
{
    fit_ctx *c = data;
    const double h = 1e-4;
    size_t n = (size_t)c->n_rows, p = (size_t)c->in->n_params;
    gsl_vector *f0 = gsl_vector_alloc(n), *f1 = gsl_vector_alloc(n), *v = gsl_vector_alloc(p);
    int rc = f0 && f1 && v ? GSL_SUCCESS : GSL_ENOMEM;
    if (rc == GSL_SUCCESS)
        rc = residuals(u, data, f0);
    for (size_t j = 0; j < p && rc == GSL_SUCCESS; j++) {
        gsl_vector_memcpy(v, u);
        gsl_vector_set(v, j, gsl_vector_get(u, j) + h);
        rc = residuals(v, data, f1);
        for (size_t i = 0; i < n && rc == GSL_SUCCESS; i++)
            gsl_matrix_set(J, i, j, (gsl_vector_get(f1, i) - gsl_vector_get(f0, i)) / h);
    }
    if (f0)
        gsl_vector_free(f0);
    if (f1)
        gsl_vector_free(f1);
    if (v)
        gsl_vector_free(v);
    return rc;
}

static hl_status check_in(const hl_calib_in *in, hl_err *err)
{
    if (in->n_params < 1 || in->n_cases < 1 || !in->fn || !in->x0 || !in->lo || !in->hi || !in->measured)
        return hl_fail(err, HL_EINVAL, "calibrate: needs at least one parameter and one case");
    for (int32_t p = 0; p < in->n_params; p++)
        if (!(in->hi[p] > in->lo[p]) || !isfinite(in->lo[p]) || !isfinite(in->hi[p]))
            return hl_fail(err, HL_EINVAL, "calibrate: parameter %d bounds %g..%g (need finite lo < hi)", (int)p + 1,
                           in->lo[p], in->hi[p]);
    for (int32_t i = 0; i < in->n_cases; i++)
        if (!(in->measured[i] > 0) || !isfinite(in->measured[i]))
            return hl_fail(err, HL_EINVAL, "calibrate: case %d measured %g (must be > 0)", (int)i + 1, in->measured[i]);
    return HL_OK;
}

hl_status hl_calib_fit(const hl_calib_in *in, double *x_out, hl_calib_out *out, hl_err *err)
{
    if (!in || !x_out) /* out may be NULL (hl_calib_loo's refits pass none) */
        return hl_fail(err, HL_EINVAL, "hl_calib_fit: the %s is NULL", !in ? "input" : "x output");
    hl_status st = check_in(in, err);
    if (st)
        return st;
    fit_ctx c = {in, NULL, 0, NULL, NULL, err, HL_OK};
    c.rows = malloc(sizeof *c.rows * (size_t)in->n_cases);
    c.x = malloc(sizeof *c.x * (size_t)in->n_params);
    c.pred = malloc(sizeof *c.pred * (size_t)in->n_cases);
    gsl_vector *u0 = gsl_vector_alloc((size_t)in->n_params);
    gsl_multifit_nlinear_workspace *w = NULL;
    if (!c.rows || !c.x || !c.pred || !u0) {
        st = hl_fail(err, HL_ENOMEM, "calibrate: out of memory");
        goto done;
    }
    for (int32_t i = 0; i < in->n_cases; i++)
        if (!in->use || in->use[i])
            c.rows[c.n_rows++] = i;
    if (c.n_rows < in->n_params) {
        st = hl_fail(err, HL_EINVAL, "calibrate: %d cases cannot fit %d parameters (need at least as many cases)",
                     (int)c.n_rows, (int)in->n_params);
        goto done;
    }
    for (int32_t p = 0; p < in->n_params; p++)
        gsl_vector_set(u0, (size_t)p, to_u(in->x0[p], in->lo[p], in->hi[p]));
    gsl_multifit_nlinear_fdf fdf;
    memset(&fdf, 0, sizeof fdf);
    fdf.f = residuals;
    fdf.df = jacobian;
    fdf.n = (size_t)c.n_rows;
    fdf.p = (size_t)in->n_params;
    fdf.params = &c;
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    gsl_set_error_handler_off(); /* errors come back as status codes, never abort() */
    w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, fdf.n, fdf.p);
    if (!w) {
        st = hl_fail(err, HL_ENOMEM, "calibrate: out of memory");
        goto done;
    }
    int info = 0;
    int gs = gsl_multifit_nlinear_init(u0, &fdf, w);
    if (gs == GSL_SUCCESS)
        gs = gsl_multifit_nlinear_driver((size_t)(in->max_iter > 0 ? in->max_iter : 200), 1e-10, 1e-10, 0, NULL, NULL,
                                         &info, w);
    if (c.st) {
        st = c.st;
        goto done;
    }
    if (gs != GSL_SUCCESS && gs != GSL_EMAXITER && gs != GSL_ENOPROG) {
        st = hl_fail(err, HL_EINVAL, "calibrate: the solver failed: %s", gsl_strerror(gs));
        goto done;
    }
    gsl_vector *u = gsl_multifit_nlinear_position(w);
    for (int32_t p = 0; p < in->n_params; p++)
        x_out[p] = to_x(gsl_vector_get(u, (size_t)p), in->lo[p], in->hi[p]);
    gsl_vector *r = gsl_multifit_nlinear_residual(w);
    double ss = 0;
    for (int32_t i = 0; i < c.n_rows; i++)
        ss += gsl_vector_get(r, (size_t)i) * gsl_vector_get(r, (size_t)i);
    if (out) {
        out->rms_log = sqrt(ss / c.n_rows);
        out->iterations = (int32_t)gsl_multifit_nlinear_niter(w);
        out->converged = gs == GSL_SUCCESS;
    }
done:
    if (w)
        gsl_multifit_nlinear_free(w);
    gsl_vector_free(u0);
    free(c.rows);
    free(c.x);
    free(c.pred);
    return st;
}

hl_status hl_calib_loo(const hl_calib_in *in, double *loo_pred, hl_err *err)
{
    if (!in || !loo_pred)
        return hl_fail(err, HL_EINVAL, "hl_calib_loo: the %s is NULL", !in ? "input" : "prediction output");
    hl_status st = check_in(in, err);
    if (st)
        return st;
    int32_t *use = malloc(sizeof *use * (size_t)in->n_cases);
    double *x = malloc(sizeof *x * (size_t)in->n_params);
    double *pred = malloc(sizeof *pred * (size_t)in->n_cases);
    if (!use || !x || !pred) {
        st = hl_fail(err, HL_ENOMEM, "calibrate: out of memory");
        goto done;
    }
    hl_calib_in sub = *in;
    sub.use = use;
    for (int32_t i = 0; i < in->n_cases && !st; i++) {
        loo_pred[i] = 0;
        if (in->use && !in->use[i])
            continue;
        for (int32_t k = 0; k < in->n_cases; k++)
            use[k] = k != i && (!in->use || in->use[k]);
        if ((st = hl_calib_fit(&sub, x, NULL, err)))
            break;
        if ((st = in->fn(in->ctx, x, pred, err)))
            break;
        loo_pred[i] = pred[i];
    }
done:
    free(use);
    free(x);
    free(pred);
    return st;
}
