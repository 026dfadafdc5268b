/* x^p = exp(p ln x) by tables, for the roofline's power means (blend in roofline.c). The method is
 * the usual table-driven one (e.g. Tang, "Table-driven implementation of the exponential function
 * in IEEE floating-point arithmetic", ACM TOMS 15(2), 1989; glibc's sysdeps/ieee754/dbl-64/exp.c
 * and log.c follow it), written here with plain Taylor polynomials and no double-double steps,
 * since the model needs 1e-12, not glibc's last-ulp rounding.
 *
 * ln x: x = 2^e m, m in [1, 2); c = 1 + (i + 0.5)/128 is the centre of m's 1/128 interval
 * (i its top 7 mantissa bits), and for m >= 1.375 (i >= 48) x is taken as 2^(e+1) (m/2) so that
 * ln x near 1 is not a difference of e ln2 and a table entry. r = (m - c) / c, computed as
 * (m - c) invc with m - c exact (both multiples of 2^-52 within 2^-8) and invc = 1/c rounded,
 * so |r| <= 2^-8 within 2^-61; ln x = e ln2 + ln c (or ln(c/2)) + ln(1 + r), ln(1 + r) to
 * r^7/7 (the r^8/8 left out is under 2^-67). exp y: k = round(64 y / ln2), t = y - k ln2/64
 * (|t| <= ln2/128 + 2^-60; ln2/64 in two parts so k ln2hi/64 is exact for |k| < 2^17),
 * e^y = 2^(k/64) e^t, e^t to t^6/6! (t^7/7! is under 2^-66 of it).
 * Error (derived): the table entries are within half an ulp (libm log and exp2, which
 * tests/c/test_roofline.c recomputes), the polynomials' truncations are below 2^-66, and ln x
 * comes within ~2.5 2^-53 of itself (the sum e ln2 + ln c may cancel to a third: |ln c| <=
 * 0.375 against |e ln2| >= 0.69); y = p ln x then within 3.5 |y| 2^-53, which e^y turns into a
 * relative error of the same size, and exp's own ~6 roundings add at most 8 2^-53. Together: at
 * most (2 |y| + 4) 2^-52 of the result, |y| = |p ln x| (the test's 200,000 seeded cases stay
 * within it; 2,000,000 more, tried once by hand, reached at most 0.72 of it). */
#include "powpos_int.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Generated once with libm (gcc 12, glibc 2.36); test_roofline recomputes each entry. */
/* c = 1 + (i + 0.5) / 128: invc[i] = 1 / c rounded; logc[i] = log(c) for i < 48, else log(c / 2)
 * (libm log: m >= 1.375 is taken as m / 2 of the next binade) */
const double hl_powpos_invc[128] = {
    0x1.fe01fe01fe02p-1,  0x1.fa11caa01fa12p-1, 0x1.f6310aca0dbb5p-1, 0x1.f25f644230ab5p-1, 0x1.ee9c7f8458e02p-1,
    0x1.eae807aba01ebp-1, 0x1.e741aa59750e4p-1, 0x1.e3a9179dc1a73p-1, 0x1.e01e01e01e01ep-1, 0x1.dca01dca01dcap-1,
    0x1.d92f2231e7f8ap-1, 0x1.d5cac807572b2p-1, 0x1.d272ca3fc5b1ap-1, 0x1.cf26e5c44bfc6p-1, 0x1.cbe6d9601cbe7p-1,
    0x1.c8b265afb8a42p-1, 0x1.c5894d10d4986p-1, 0x1.c26b5392ea01cp-1, 0x1.bf583ee868d8bp-1, 0x1.bc4fd65883e7bp-1,
    0x1.b951e2b18ff23p-1, 0x1.b65e2e3beee05p-1, 0x1.b37484ad806cep-1, 0x1.b094b31d922a4p-1, 0x1.adbe87f94905ep-1,
    0x1.aaf1d2f87ebfdp-1, 0x1.a82e65130e159p-1, 0x1.a574107688a4ap-1, 0x1.a2c2a87c51cap-1,  0x1.a01a01a01a01ap-1,
    0x1.9d79f176b682dp-1, 0x1.9ae24ea5510dap-1, 0x1.9852f0d8ec0ffp-1, 0x1.95cbb0be377aep-1, 0x1.934c67f9b2ce6p-1,
    0x1.90d4f120190d5p-1, 0x1.8e6527af1373fp-1, 0x1.8bfce8062ff3ap-1, 0x1.899c0f601899cp-1, 0x1.87427bcc092b9p-1,
    0x1.84f00c2780614p-1, 0x1.82a4a0182a4ap-1,  0x1.8060180601806p-1, 0x1.7e225515a4f1dp-1, 0x1.7beb3922e017cp-1,
    0x1.79baa6bb6398bp-1, 0x1.77908119ac60dp-1, 0x1.756cac201756dp-1, 0x1.734f0c541fe8dp-1, 0x1.713786d9c7c09p-1,
    0x1.6f26016f26017p-1, 0x1.6d1a62681c861p-1, 0x1.6b1490aa31a3dp-1, 0x1.691473a88d0cp-1,  0x1.6719f3601671ap-1,
    0x1.6524f853b4aa3p-1, 0x1.63356b88ac0dep-1, 0x1.614b36831ae94p-1, 0x1.5f66434292dfcp-1, 0x1.5d867c3ece2a5p-1,
    0x1.5babcc647fa91p-1, 0x1.59d61f123ccaap-1, 0x1.580560158056p-1,  0x1.56397ba7c52e2p-1, 0x1.54725e6bb82fep-1,
    0x1.52aff56a8054bp-1, 0x1.50f22e111c4c5p-1, 0x1.4f38f62dd4c9bp-1, 0x1.4d843bedc2c4cp-1, 0x1.4bd3edda68fe1p-1,
    0x1.4a27fad76014ap-1, 0x1.488052201488p-1,  0x1.46dce34596066p-1, 0x1.453d9e2c776cap-1, 0x1.43a2730abee4dp-1,
    0x1.420b5265e5951p-1, 0x1.40782d10e6566p-1, 0x1.3ee8f42a5af07p-1, 0x1.3d5d991aa75c6p-1, 0x1.3bd60d9232955p-1,
    0x1.3a524387ac822p-1, 0x1.38d22d366088ep-1, 0x1.3755bd1c945eep-1, 0x1.35dce5f9f2af8p-1, 0x1.34679ace01346p-1,
    0x1.32f5ced6a1dfap-1, 0x1.3187758e9ebb6p-1, 0x1.301c82ac4026p-1,  0x1.2eb4ea1fed14bp-1, 0x1.2d50a012d50ap-1,
    0x1.2bef98e5a3711p-1, 0x1.2a91c92f3c105p-1, 0x1.293725bb804a5p-1, 0x1.27dfa38a1ce4dp-1, 0x1.268b37cd60127p-1,
    0x1.2539d7e9177b2p-1, 0x1.23eb79717605bp-1, 0x1.22a0122a0122ap-1, 0x1.21579804855e6p-1, 0x1.2012012012012p-1,
    0x1.1ecf43c7fb84cp-1, 0x1.1d8f5672e4abdp-1, 0x1.1c522fc1ce059p-1, 0x1.1b17c67f2bae3p-1, 0x1.19e0119e0119ep-1,
    0x1.18ab083902bdbp-1, 0x1.1778a191bd684p-1, 0x1.1648d50fc3201p-1, 0x1.151b9a3fdd5c9p-1, 0x1.13f0e8d344724p-1,
    0x1.12c8b89edc0acp-1, 0x1.11a3019a74826p-1, 0x1.107fbbe01108p-1,  0x1.0f5edfab325a2p-1, 0x1.0e40655826011p-1,
    0x1.0d24456359e3ap-1, 0x1.0c0a7868b4171p-1, 0x1.0af2f722eecb5p-1, 0x1.09ddba6af836p-1,  0x1.08cabb37565e2p-1,
    0x1.07b9f29b8eae2p-1, 0x1.06ab59c7912fbp-1, 0x1.059eea0727586p-1, 0x1.04949cc1664c5p-1, 0x1.038c6b78247fcp-1,
    0x1.02864fc7729e9p-1, 0x1.0182436517a37p-1, 0x1.008040201008p-1,
};
const double hl_powpos_logc[128] = {
    0x1.ff00aa2b10bcp-9,   0x1.7dc475f810a77p-7,  0x1.3cea44346a575p-6,  0x1.b9fc027af9198p-6,  0x1.1b0d98923d98p-5,
    0x1.58a5bafc8e4d5p-5,  0x1.95c830ec8e3ebp-5,  0x1.d276b8adb0b52p-5,  0x1.075983598e471p-4,  0x1.253f62f0a1417p-4,
    0x1.42edcbea646fp-4,   0x1.60658a93750c4p-4,  0x1.7da766d7b12cdp-4,  0x1.9ab42462033adp-4,  0x1.b78c82bb0eda1p-4,
    0x1.d4313d66cb35dp-4,  0x1.f0a30c01162a6p-4,  0x1.0671512ca596ep-3,  0x1.14785846742acp-3,  0x1.2266f190a5acbp-3,
    0x1.303d718e47fd3p-3,  0x1.3dfc2b0ecc62ap-3,  0x1.4ba36f39a55e5p-3,  0x1.59338d9982086p-3,  0x1.66acd4272ad51p-3,
    0x1.740f8f54037a5p-3,  0x1.815c0a14357ebp-3,  0x1.8e928de886d41p-3,  0x1.9bb362e7dfb83p-3,  0x1.a8becfc882f19p-3,
    0x1.b5b519e8fb5a4p-3,  0x1.c2968558c18c1p-3,  0x1.cf6354e09c5dcp-3,  0x1.dc1bca0abec7dp-3,  0x1.e8c0252aa5a6p-3,
    0x1.f550a564b7b37p-3,  0x1.00e6c45ad501dp-2,  0x1.071b85fcd590dp-2,  0x1.0d46b579ab74bp-2,  0x1.136870293a8bp-2,
    0x1.1980d2dd4236fp-2,  0x1.1f8ff9e48a2f3p-2,  0x1.2596010df763ap-2,  0x1.2b9303ab89d25p-2,  0x1.31871c9544185p-2,
    0x1.3772662bfd85bp-2,  0x1.3d54fa5c1f71p-2,   0x1.432ef2a04e814p-2,  -0x1.7cc7f7db46a0ep-2, -0x1.76feecb947175p-2,
    -0x1.713e33a46a17cp-2, -0x1.6b85b4cffa3fdp-2, -0x1.65d558d4ce00bp-2, -0x1.602d08af091ecp-2, -0x1.5a8cadbbedfa1p-2,
    -0x1.54f431b7be1a9p-2, -0x1.4f637ebba981p-2,  -0x1.49da7f3bcc41fp-2, -0x1.44591e0539f49p-2, -0x1.3edf463c1683ep-2,
    -0x1.396ce359bbf54p-2, -0x1.3401e12aecba1p-2, -0x1.2e9e2bce12286p-2, -0x1.2941afb186b7cp-2, -0x1.23ec5991eba49p-2,
    -0x1.1e9e1678899f4p-2, -0x1.1956d3b9bc2fap-2, -0x1.14167ef367783p-2, -0x1.0edd060b78081p-2, -0x1.09aa572e6c6d4p-2,
    -0x1.047e60cde83b8p-2, -0x1.feb2233ea07cdp-3, -0x1.f474b134df229p-3, -0x1.ea4449f04aaf5p-3, -0x1.e020cc6235ab5p-3,
    -0x1.d60a17f903515p-3, -0x1.cc000c9db3c52p-3, -0x1.c2028ab17f9b4p-3, -0x1.b811730b823d2p-3, -0x1.ae2ca6f672bd4p-3,
    -0x1.a454082e6ab05p-3, -0x1.9a8778debaa38p-3, -0x1.90c6db9fcbcd9p-3, -0x1.871213750e994p-3, -0x1.7d6903caf5adp-3,
    -0x1.73cb9074fd14dp-3, -0x1.6a399dabbd383p-3, -0x1.60b3100b09476p-3, -0x1.5737cc9018cddp-3, -0x1.4dc7b897bc1c8p-3,
    -0x1.4462b9dc9b3dcp-3, -0x1.3b08b6757f2a9p-3, -0x1.31b994d3a4f85p-3, -0x1.28753bc11aba5p-3, -0x1.1f3b925f25d41p-3,
    -0x1.160c8024b27b1p-3, -0x1.0ce7ecdccc28dp-3, -0x1.03cdc0a51ec0dp-3, -0x1.f57bc7d9005dbp-4, -0x1.e3707ee30487bp-4,
    -0x1.d179788219364p-4, -0x1.bf968769fca11p-4, -0x1.adc77ee5aea8cp-4, -0x1.9c0c32d4d2548p-4, -0x1.8a6477a91dc29p-4,
    -0x1.78d02263d82d3p-4, -0x1.674f089365a7ap-4, -0x1.55e10050e0384p-4, -0x1.4485e03dbdfadp-4, -0x1.333d7f8183f4bp-4,
    -0x1.2207b5c78549ep-4, -0x1.10e45b3cae831p-4, -0x1.ffa6911ab9301p-5, -0x1.dda8adc67ee4ep-5, -0x1.bbcebfc68f42p-5,
    -0x1.9a187b573de7cp-5, -0x1.788595a3577bap-5, -0x1.5715c4c03ceefp-5, -0x1.35c8bfaa1306bp-5, -0x1.149e3e4005a8dp-5,
    -0x1.e72bf2813ce51p-6, -0x1.a55f548c5c43fp-6, -0x1.63d6178690bd6p-6, -0x1.228fb1fea2e28p-6, -0x1.c317384c75f06p-7,
    -0x1.41929f96832fp-7,  -0x1.8121214586b54p-8, -0x1.0040155d5889ep-9,
};
/* t2[j] = 2^(j/64) (libm exp2) */
const double hl_powpos_t2[64] = {
    0x1p+0,
    0x1.02c9a3e778061p+0,
    0x1.059b0d3158574p+0,
    0x1.0874518759bc8p+0,
    0x1.0b5586cf9890fp+0,
    0x1.0e3ec32d3d1a2p+0,
    0x1.11301d0125b51p+0,
    0x1.1429aaea92dep+0,
    0x1.172b83c7d517bp+0,
    0x1.1a35beb6fcb75p+0,
    0x1.1d4873168b9aap+0,
    0x1.2063b88628cd6p+0,
    0x1.2387a6e756238p+0,
    0x1.26b4565e27cddp+0,
    0x1.29e9df51fdee1p+0,
    0x1.2d285a6e4030bp+0,
    0x1.306fe0a31b715p+0,
    0x1.33c08b26416ffp+0,
    0x1.371a7373aa9cbp+0,
    0x1.3a7db34e59ff7p+0,
    0x1.3dea64c123422p+0,
    0x1.4160a21f72e2ap+0,
    0x1.44e086061892dp+0,
    0x1.486a2b5c13cdp+0,
    0x1.4bfdad5362a27p+0,
    0x1.4f9b2769d2ca7p+0,
    0x1.5342b569d4f82p+0,
    0x1.56f4736b527dap+0,
    0x1.5ab07dd485429p+0,
    0x1.5e76f15ad2148p+0,
    0x1.6247eb03a5585p+0,
    0x1.6623882552225p+0,
    0x1.6a09e667f3bcdp+0,
    0x1.6dfb23c651a2fp+0,
    0x1.71f75e8ec5f74p+0,
    0x1.75feb564267c9p+0,
    0x1.7a11473eb0187p+0,
    0x1.7e2f336cf4e62p+0,
    0x1.82589994cce13p+0,
    0x1.868d99b4492edp+0,
    0x1.8ace5422aa0dbp+0,
    0x1.8f1ae99157736p+0,
    0x1.93737b0cdc5e5p+0,
    0x1.97d829fde4e5p+0,
    0x1.9c49182a3f09p+0,
    0x1.a0c667b5de565p+0,
    0x1.a5503b23e255dp+0,
    0x1.a9e6b5579fdbfp+0,
    0x1.ae89f995ad3adp+0,
    0x1.b33a2b84f15fbp+0,
    0x1.b7f76f2fb5e47p+0,
    0x1.bcc1e904bc1d2p+0,
    0x1.c199bdd85529cp+0,
    0x1.c67f12e57d14bp+0,
    0x1.cb720dcef9069p+0,
    0x1.d072d4a07897cp+0,
    0x1.d5818dcfba487p+0,
    0x1.da9e603db3285p+0,
    0x1.dfc97337b9b5fp+0,
    0x1.e502ee78b3ff6p+0,
    0x1.ea4afa2a490dap+0,
    0x1.efa1bee615a27p+0,
    0x1.f50765b6e454p+0,
    0x1.fa7c1819e90d8p+0,
};

static const double ln2hi = 0x1.62e42fefa3800p-1, ln2lo = 0x1.ef35793c76730p-45;       /* ln 2 = hi + lo */
static const double inv_ln2_64 = 0x1.71547652b82fep+6;                                 /* 64 / ln 2 */
static const double ln2_64hi = 0x1.62e42fefa0000p-7, ln2_64lo = 0x1.cf79abc9e3b3ap-46; /* ln2/64 = hi + lo */
static const double round_shift = 0x1.8p52; /* adding and subtracting it rounds to an integer */

double hl_pow_pos(double x, double p)
{
    uint64_t ix;
    memcpy(&ix, &x, sizeof ix);
    uint64_t top = ix >> 52; /* sign and biased exponent */
    if (top - 1 >= 0x7fe)    /* 0, subnormal, negative, inf or NaN: libm's rules */
        return pow(x, p);
    if (x == 1)
        return 1;
    int e = (int)top - 1023;
    unsigned i = (unsigned)(ix >> 45) & 127;
    uint64_t im = (ix & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
    double m;
    memcpy(&m, &im, sizeof m);
    double r = (m - (1 + (i + 0.5) / 128)) * hl_powpos_invc[i]; /* m - c exact: r within 2^-61 of m/c - 1 */
    double r2 = r * r;
    double l1p = r + r2 * (-0.5 + r * (1.0 / 3 + r * (-0.25 + r * (0.2 + r * (-1.0 / 6 + r * (1.0 / 7))))));
    double de = (double)(e + (i >= 48)); /* m >= 1.375: x = 2^(e+1) (m/2), so ln x has no cancellation near 1 */
    double lnx = (de * ln2hi + hl_powpos_logc[i]) + (de * ln2lo + l1p);
    double y = p * lnx;
    if (!(y > -707 && y < 707)) /* underflow or overflow near: libm's rounding there */
        return pow(x, p);
    double kd = (y * inv_ln2_64 + round_shift) - round_shift;
    double t = (y - kd * ln2_64hi) - kd * ln2_64lo;
    double er = 1 + (t + t * t * (0.5 + t * (1.0 / 6 + t * (1.0 / 24 + t * (1.0 / 120 + t * (1.0 / 720))))));
    int64_t k = (int64_t)kd;              /* |k| <= 707 x 64 / ln 2 < 65,300 */
    int64_t j = k & 63, q = (k - j) / 64; /* k = 64 q + j, q in -1020..1020 */
    uint64_t sb = (uint64_t)(q + 1023) << 52;
    double scale;
    memcpy(&scale, &sb, sizeof scale);
    return hl_powpos_t2[j] * scale * er;
}
