/* The shortest decimal text of a double that reads back to the same double (hl_csv_format_number,
 * hbdlab/csv.h): Dragonbox, by Junekey Jeon ("Dragonbox: A New Floating-Point Binary-to-Decimal
 * Conversion Algorithm", 2020; reference implementation github.com/jk-jeon/dragonbox,
 * include/dragonbox/dragonbox.h, compute_nearest with the default policies), written here in C
 * from the paper and that source. Of the decimals in the rounding interval of v it picks one with
 * the fewest digits, the one closest to v among those (an even last digit on a tie): the same
 * decimal as the Schubfach core it replaced (R. Giulietti 2020; compared on 10^7 and more doubles
 * of every kind, zero differences), with one 64 x 128-bit product where Schubfach takes three.
 *
 * The text is laid out as printf's "%.17g" lays out its digits: fixed notation when the decimal
 * exponent X of d.ddd x 10^X is in [-4, 17), else d.ddde+XX; so integers up to 10^17 print as
 * integers, and only the digits change (0.1, not 0.10000000000000001).
 *
 * The table phi(k) of 128-bit upper approximations of 10^k (k in [-292, 326]) is computed once,
 * on first use (pthread_once; ~1.7 million instructions, under a millisecond), by exact integer
 * arithmetic. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "csv_int.h"
#include "hbdlab/csv.h"

/* 16 digits at a time in SSE2's 16-bit lanes (digits16) on x86-64; elsewhere, or built with
 * -DHL_SHORTEST_SCALAR (how the one-off comparison checks this path), 8 at a time in a 64-bit
 * register (swar8). */
#if defined(__SSE2__) && defined(__x86_64__) && !defined(HL_SHORTEST_SCALAR)
#define HL_DIGITS16 1
#include <emmintrin.h>
#else
#define HL_DIGITS16 0
#endif

__extension__ typedef unsigned __int128 u128;

/* K_MIN..K_MAX: the table's k (the paper's section 5.2 / dragonbox.h cache_holder<binary64>);
 * KAPPA = 2: the normal interval is searched at 10^(KAPPA + 1) = 1000 units, then at 100. */
enum { K_MIN = -292, K_MAX = 326, E_MIN = -1074, P = 53, KAPPA = 2 };
#define C_MIN ((uint64_t)1 << 52)

/* floor(e log10 2), floor(e log10 2 - log10 (4/3)), floor(e log2 10), for |e| <= 5456721
 * (Giulietti's Schubfach paper, section 9.1, whose ranges cover the ones used here: |e| <= 1100). */
static int flog10pow2(int e) { return (int)(((int64_t)e * 661971961083LL) >> 41); }
static int flog10threequarterspow2(int e) { return (int)(((int64_t)e * 661971961083LL - 274743187321LL) >> 41); }
static int flog2pow10(int e) { return (int)(((int64_t)e * 913124641741LL) >> 38); }

/* phi(k) = ceil(10^k 2^(127 - flog2pow10(k))), so 2^127 <= phi < 2^128 (exact for 0 <= k <= 55),
 * as phi_hi 2^64 + phi_lo (Dragonbox section 5.2). */
static uint64_t phi_hi[K_MAX - K_MIN + 1], phi_lo[K_MAX - K_MIN + 1];
/* g_scale[e2 - E_MIN] for a normal v = fc 2^e2 (or a subnormal, e2 = E_MIN): to_decimal's scaling
 * 10^k, k = KAPPA - floor(e2 log10 2), as (k - K_MIN) << 4 | beta, beta = e2 + floor(k log2 10) in
 * 6..9 (the width deltai = phi_hi >> (63 - beta) is in [2^beta, 2^(beta + 1)) and in [100, 1000);
 * checked for every e2 one-off), built with the table: two products and shifts once per exponent */
static uint16_t g_scale[2046];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_built; /* 1 (release-stored) once the table is complete: the fast check before pthread_once */

/* A non-negative integer of up to BIG_LIMBS 32-bit limbs, least significant first: 10^326 < 2^1084
 * and 2^1400 fit. */
enum { BIG_LIMBS = 48, BIG_FRAC_BITS = 1400 };
typedef struct big {
    uint32_t l[BIG_LIMBS];
} big;

static void big_mul10(big *b)
{
    uint64_t carry = 0;
    for (int i = 0; i < BIG_LIMBS; i++) {
        uint64_t x = (uint64_t)b->l[i] * 10 + carry;
        b->l[i] = (uint32_t)x;
        carry = x >> 32;
    }
}

static void big_div10(big *b)
{
    uint64_t rem = 0;
    for (int i = BIG_LIMBS - 1; i >= 0; i--) {
        uint64_t x = (rem << 32) | b->l[i];
        b->l[i] = (uint32_t)(x / 10);
        rem = x % 10;
    }
}

/* The 32 bits of b from bit i up (i may be negative: zeros below bit 0; zeros past the end). */
static uint32_t big_word(const big *b, int i)
{
    uint64_t w = 0;
    for (int j = 0; j < 2; j++) { /* the limbs holding bits i .. i + 31 */
        int limb = (i >= 0 ? i / 32 : -((31 - i) / 32)) + j;
        if (limb >= 0 && limb < BIG_LIMBS)
            w |= (uint64_t)b->l[limb] << (32 * j);
    }
    int off = i - 32 * (i >= 0 ? i / 32 : -((31 - i) / 32)); /* 0..31 */
    return (uint32_t)(w >> off);
}

/* phi_hi/lo[slot] = floor(b 2^-shift) (shift < 0: a left shift; the result has 128 bits), plus
 * one when `inexact` or when bits of b below `shift` are set: the ceiling of b 2^-shift for an
 * exact b, the ceiling of x 2^-shift for b = floor(x) with x not an integer. */
static void store_phi(const big *b, int shift, int inexact, int slot)
{
    uint64_t hi = (uint64_t)big_word(b, shift + 96) << 32 | big_word(b, shift + 64);
    uint64_t lo = (uint64_t)big_word(b, shift + 32) << 32 | big_word(b, shift);
    for (int i = 0; i < shift / 32 && !inexact; i++) /* whole limbs below the shift, then the rest */
        inexact = b->l[i] != 0;
    if (!inexact && shift > 0 && shift % 32)
        inexact = (b->l[shift / 32] & ((1u << (shift % 32)) - 1)) != 0;
    if (inexact && ++lo == 0)
        hi++;
    phi_hi[slot] = hi;
    phi_lo[slot] = lo;
}

static void build_table(void)
{
    big b;
    memset(&b, 0, sizeof b);
    b.l[0] = 1; /* 10^k for k >= 0, exact */
    for (int k = 0; k <= K_MAX; k++) {
        store_phi(&b, flog2pow10(k) - 127, 0, k - K_MIN);
        big_mul10(&b);
    }
    memset(&b, 0, sizeof b);
    b.l[BIG_FRAC_BITS / 32] = 1u << (BIG_FRAC_BITS % 32); /* 2^1400; then floor(2^1400 / 10^n), exact */
    for (int n = 1; n <= -K_MIN; n++) {
        big_div10(&b); /* floor(floor(x / a) / b) = floor(x / (a b)) */
        /* 10^-n 2^(127 - e) = (2^1400 / 10^n) 2^-(1400 + e - 127), never an integer (5^n) */
        store_phi(&b, BIG_FRAC_BITS + flog2pow10(-n) - 127, 1, -n - K_MIN);
    }
    for (int e2 = E_MIN; e2 < E_MIN + 2046; e2++) {
        int k = KAPPA - flog10pow2(e2);
        g_scale[e2 - E_MIN] = (uint16_t)((k - K_MIN) << 4 | (e2 + flog2pow10(k)));
    }
    __atomic_store_n(&g_built, 1, __ATOMIC_RELEASE);
}

/* Bit beta of the integer part of x phi(k) 2^-128 (x < 2^64, 1 <= beta < 64: the caller's x
 * is shifted by beta there) and whether that product is an integer: the low 128 bits of the
 * 192-bit x phi, read at beta (dragonbox.h compute_mul_parity). */
static int mul_parity(uint64_t x, uint64_t hi, uint64_t lo, int beta, int *is_integer)
{
    u128 xl = (u128)x * lo;
    uint64_t r_hi = x * hi + (uint64_t)(xl >> 64), r_lo = (uint64_t)xl;
    *is_integer = ((r_hi << beta) | (r_lo >> (64 - beta))) == 0;
    return (int)((r_hi >> (64 - beta)) & 1);
}

/* The decimal f 10^e closest to v = fc 2^e2 (fc < 2^53) among the shortest in v's rounding
 * interval, both ends in it when fc is even (round to nearest even reads them back). *strip: f
 * may end in zeros (the 1000-unit search found it); otherwise it ends in none. */
static inline __attribute__((always_inline)) uint64_t to_decimal(uint64_t fc, int e2, int *e, int *strip)
{
    uint64_t two_fc = fc << 1;
    int even = (int)(~fc & 1);
    int scale = g_scale[e2 - E_MIN]; /* k and beta (g_scale) */
    int k = (scale >> 4) + K_MIN, beta = scale & 15;
    uint64_t hi = phi_hi[k - K_MIN], lo = phi_lo[k - K_MIN];
    /* phi 2^-128 = 10^k 2^-(1 + flog2pow10(k)), so deltai = floor(2^e2 10^k), the interval's width
     * in units of 10^-k (100 <= deltai < 1000), and zi = floor((fc + 1/2) 2^e2 10^k), its upper
     * end, with whether that product is exact */
    uint32_t deltai = (uint32_t)(hi >> (63 - beta));
    uint64_t u = (two_fc | 1) << beta;
    u128 zh = (u128)u * hi;
    uint64_t zc = (uint64_t)(((u128)u * lo) >> 64), zl = (uint64_t)zh + zc; /* z's low 64 bits */
    uint64_t zi = (uint64_t)(zh >> 64) + (zl < zc);
    int z_integer = zl == 0;
    uint64_t s = zi / 1000;
    uint32_t r = (uint32_t)(zi - 1000 * s);
    *strip = 1;
    *e = KAPPA + 1 - k;
    if (r < deltai) { /* s 1000 is in the interval, unless it is its excluded upper end */
        if (r != 0 || !z_integer || even)
            return s;
        s--;
        r = 1000;
    } else if (r == deltai) { /* s 1000 is the lower end's integer part: in the interval when the
                               * lower end's fraction is at most z's (its parity and exactness) */
        int x_integer, x_parity = mul_parity(two_fc - 1, hi, lo, beta, &x_integer);
        if (x_parity || (x_integer && even))
            return s;
    }
    /* no multiple of 1000 in the interval: the multiple of 100 closest to v, which is in it */
    *strip = 0;
    *e = KAPPA - k;
    uint32_t dist = r - (deltai >> 1) + 50; /* <= 1000 */
    int approx_y_parity = (int)((dist ^ 50) & 1);
    uint32_t q = dist / 100;
    s = s * 10 + q;
    if (dist == q * 100) { /* v sits on a 100-unit boundary: the rounding of y decides (and a tie) */
        int y_integer, y_parity = mul_parity(two_fc, hi, lo, beta, &y_integer);
        if (y_parity != approx_y_parity || ((s & 1) && y_integer))
            s--;
    }
    return s;
}

/* to_decimal for v = 2^52 2^e2 (a power of two, e2 > -1074): the interval below v is half as
 * wide as the one above (dragonbox.h, compute_nearest's shorter interval case). */
__attribute__((noinline, cold)) static uint64_t to_decimal_pow2(int e2, int *e, int *strip)
{
    int k = -flog10threequarterspow2(e2);
    uint64_t hi = phi_hi[k - K_MIN];
    int beta = e2 + flog2pow10(k);
    uint64_t xi = (hi - (hi >> 54)) >> (11 - beta); /* the interval's ends, scaled by 10^k */
    uint64_t zi = (hi + (hi >> 53)) >> (11 - beta);
    if (e2 < 2 || e2 > 3) /* the lower end is an integer only for e2 = 2, 3: else round it up */
        xi++;
    uint64_t s = zi / 10;
    if (s * 10 >= xi) {
        *strip = 1;
        *e = 1 - k;
        return s;
    }
    *strip = 0;
    *e = -k;
    s = ((hi >> (10 - beta)) + 1) / 2; /* v scaled, rounded up from one more bit */
    if ((s & 1) && e2 == -77)          /* the one e2 where v lies midway: the even one */
        s--;
    else if (s < xi)
        s++;
    return s;
}

static const char DIGIT_PAIRS[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                  "8081828384858687888990919293949596979899";

static const uint64_t POW10[20] = {1ull,
                                   10ull,
                                   100ull,
                                   1000ull,
                                   10000ull,
                                   100000ull,
                                   1000000ull,
                                   10000000ull,
                                   100000000ull,
                                   1000000000ull,
                                   10000000000ull,
                                   100000000000ull,
                                   1000000000000ull,
                                   10000000000000ull,
                                   100000000000000ull,
                                   1000000000000000ull,
                                   10000000000000000ull,
                                   100000000000000000ull,
                                   1000000000000000000ull,
                                   10000000000000000000ull};

/* The number of decimal digits of f (0 < f < 10^19). */
static int digit_count(uint64_t f)
{
    int bits = 64 - __builtin_clzll(f);
    int t = (bits * 1233) >> 12; /* 1233 / 4096 ~ log10(2): t or t + 1 digits */
    return t + (f >= POW10[t]);
}

/* The eight decimal digits of v < 10^8, leading zeros included, as ASCII in the bytes of the
 * result, most significant digit in the lowest byte (so a little-endian store writes them in
 * order). All eight at once in lanes of one register ("SWAR"): v = a 10^4 + b puts a and b in
 * two 32-bit lanes, each lane w < 10^4 is split into w / 100 and w % 100 (16-bit lanes), each of
 * those u < 100 into u / 10 and u % 10 (bytes). The quotients are multiply-and-shift:
 * floor(w 10486 / 2^20) = floor(w / 100) for w < 10^4 and floor(u 103 / 2^10) = floor(u / 10)
 * for u < 100 (derived: the errors w (10486 / 2^20 - 1/100) < 1.4e-3 and u (103/1024 - 1/10)
 * < 5.9e-2 stay below the 1/100 and 1/10 that the fractional part has room for). No lane
 * overflows into the next: w 10486 < 2^27 < 2^32 and u 103 < 2^14 < 2^16, and the masks drop
 * what the shifts bring down from the lane above. Each split q | (x - q m) << L is written
 * (x << L) - q (m 2^L - 1): the same value (no lane borrows, x >= q m in each; the top lane's
 * x << L stays below 2^64), one multiply for a shift, a subtraction and an or. Checked against
 * the digits of snprintf for every v < 10^8 (one-off) and through test_csv.c's oracle texts. */
static uint64_t swar8(uint32_t v)
{
    uint64_t a = v / 10000;
    uint64_t x = ((uint64_t)v << 32) - a * ((10000ull << 32) - 1); /* a | (v - 10^4 a) << 32 */
    uint64_t q = ((x * 10486) >> 20) & 0x0000007F0000007Full;
    x = (x << 16) - q * ((100ull << 16) - 1);
    q = ((x * 103) >> 10) & 0x000F000F000F000Full;
    x = (x << 8) - q * ((10ull << 8) - 1);
    return x + 0x3030303030303030ull;
}

static void store8(char *p, uint64_t w) { memcpy(p, &w, 8); } /* little-endian (x86-64, aarch64) */

#if HL_DIGITS16
/* The 16 digits of f < 10^16, leading zeros included, as ASCII into d[0, 16), most significant
 * first (W. Mula's SSE2 scheme, "SSE: conversion integers to decimal representation", 2011,
 * written here from its description). f = hi 10^8 + lo by a scalar division; hi and lo (< 10^8)
 * in the two 64-bit lanes are split into a 10^4 + b and c 10^4 + e by one unsigned 32 x 32-bit
 * product each: floor(x 0xD1B71759 / 2^45) = floor(x / 10^4) for x < 2^32 (0xD1B71759 =
 * ceil(2^45 / 10^4) exceeds 2^45 / 10^4 by 0.117, so the quotient is over by at most
 * x 0.117 / 2^45 < 1.4e-5 < 1 / 10^4, the room below the next integer; checked for every x < 10^8,
 * one-off), and the remainders x - 10^4 q in the low 32 bits (the products fit them). Then each
 * group w < 10^4 fills four 16-bit lanes as 4 w (< 2^16), and two unsigned high products
 * give floor(w / 10^3), floor(w / 10^2), floor(w / 10), w in them: (4 w m) >> 16 >> s with
 * (m, 16 + s) = (8389, 25), (5243, 21), (6554, 18), (32768, 17), the second shift itself a high
 * product by 2^(16 - s) (floor(floor(x / 2^16) / 2^s) = floor(x / 2^(16 + s))). Derived: m / 2^(16
 * + s) exceeds 1 / (4 10^k) by a relative 6.1e-5 at most, so the quotient w / 10^k is over by at
 * most w 6.1e-5 / 10^k < 1 / 10^k for w < 10^4, less than its distance to the next integer
 * (checked for every w in each lane, one-off; 4 w m < 2^31). A lane less ten times its left neighbour (a 64-bit shift by one
 * lane within each group) is its digit; the two registers are packed to bytes and '0' added. */
static inline void digits16(uint64_t f, char *d)
{
    uint64_t hi = f / 100000000, lo = f - hi * 100000000;
    __m128i v = _mm_set_epi64x((long long)lo, (long long)hi);                      /* 64-bit lanes hi lo */
    __m128i q = _mm_srli_epi64(_mm_mul_epu32(v, _mm_set1_epi64x(0xD1B71759)), 45); /* a = hi / 10^4, c */
    __m128i r = _mm_sub_epi32(v, _mm_mul_epu32(q, _mm_set1_epi64x(10000)));        /* b = hi - 10^4 a, e */
    __m128i g = _mm_or_si128(_mm_slli_epi64(q, 2), _mm_slli_epi64(r, 18)); /* 16-bit lanes 4a 4b 0 0 4c 4e 0 0 */
    __m128i x = _mm_unpacklo_epi16(g, g), y = _mm_unpackhi_epi16(g, g);    /* 4a 4a 4b 4b 0 0 0 0, and c e's */
    x = _mm_unpacklo_epi32(x, x);                                          /* a a a a b b b b (times 4) */
    y = _mm_unpacklo_epi32(y, y);                                          /* c c c c e e e e */
    const __m128i m = _mm_setr_epi16(8389, 5243, 6554, (short)32768, 8389, 5243, 6554, (short)32768);
    const __m128i sh = _mm_setr_epi16(128, 2048, 16384, (short)32768, 128, 2048, 16384, (short)32768);
    const __m128i ten = _mm_set1_epi16(10);
    x = _mm_mulhi_epu16(_mm_mulhi_epu16(x, m), sh);
    y = _mm_mulhi_epu16(_mm_mulhi_epu16(y, m), sh);
    x = _mm_sub_epi16(x, _mm_slli_epi64(_mm_mullo_epi16(x, ten), 16));
    y = _mm_sub_epi16(y, _mm_slli_epi64(_mm_mullo_epi16(y, ten), 16));
    _mm_storeu_si128((__m128i *)(void *)d, _mm_add_epi8(_mm_packus_epi16(x, y), _mm_set1_epi8('0')));
}
#endif

/* The n = digit_count(f) digits of f (f < 10^17) into d[0, n), most significant first, in 8- and
 * 16-byte stores; d has 24 bytes and the bytes past n are scratch. */
static inline void put_digits(uint64_t f, char *d, int n)
{
    if (n <= 8) {
        store8(d, swar8((uint32_t)f) >> (8 * (8 - n))); /* the leading zeros are the low bytes */
        return;
    }
#if HL_DIGITS16
    if (n <= 16) { /* the last n of 16: the first 8 of them, then the last 8 (n >= 9, so inside t) */
        char t[16];
        digits16(f, t);
        memcpy(d, t + 16 - n, 8);
        memcpy(d + n - 8, t + 8, 8);
    } else { /* 17 digits */
        uint64_t top = f / 10000000000000000ull;
        d[0] = (char)('0' + top);
        digits16(f - top * 10000000000000000ull, d + 1);
    }
#else
    uint64_t hi = f / 100000000;
    uint32_t lo = (uint32_t)(f - hi * 100000000);
    if (n <= 16) {
        store8(d, swar8((uint32_t)hi) >> (8 * (16 - n)));
    } else { /* 17 digits: hi has nine */
        uint32_t top = (uint32_t)(hi / 100000000);
        d[0] = (char)('0' + top);
        store8(d + 1, swar8((uint32_t)(hi - (uint64_t)top * 100000000)));
    }
    store8(d + n - 8, swar8(lo));
#endif
}

/* f's n digits (f < 10^17, 1 <= n <= 17) times 10^(x - n + 1) at o, laid out as "%.17g" lays out
 * its digits: put_digits' stores straight into place (they reach o + 17 past where they start),
 * then fixed-size copies (no loops, no calls). The bytes past the text are scratch, overwritten
 * by the next cell or left past its NUL (the furthest: o + 33). Returns the text's end. */
static inline char *put_layout(uint64_t f, int n, int x, char *o)
{
    char tail[16];
    if (x >= -4 && x < 17) {
        if (x < 0) { /* 0.000ddd: -x - 1 zeros after the point (at most 3) */
            memcpy(o, "0.000000", 8);
            put_digits(f, o + 1 - x, n);
            return o + 1 - x + n;
        }
        put_digits(f, o, n);
        if (x >= n - 1) { /* ddd000: x + 1 - n zeros after the digits (at most 16) */
            memcpy(o + n, "0000000000000000", 16);
            return o + x + 1;
        }
        /* dd.ddd: x + 1 <= 16 digits, then the n - x - 1 <= 16 after the point moved up one */
        memcpy(tail, o + x + 1, 16);
        memcpy(o + x + 2, tail, 16);
        o[x + 1] = '.';
        return o + n + 1;
    }
    /* d.ddde+XX, at least two exponent digits as printf writes them */
    put_digits(f, o, n);
    if (n > 1) {
        memcpy(tail, o + 1, 16);
        memcpy(o + 2, tail, 16);
        o[1] = '.';
        o += n + 1;
    } else {
        o += 1;
    }
    *o++ = 'e';
    *o++ = x < 0 ? '-' : '+';
    int ax = x < 0 ? -x : x;
    if (ax >= 100) {
        *o++ = (char)('0' + ax / 100);
        ax %= 100;
    }
    *o++ = DIGIT_PAIRS[2 * ax];
    *o++ = DIGIT_PAIRS[2 * ax + 1];
    return o;
}

/* The table, built on first use. */
static inline void need_table(void)
{
    if (!__atomic_load_n(&g_built, __ATOMIC_ACQUIRE))
        pthread_once(&g_once, build_table);
}

/* put_number for the values off its hot path, at o (after the sign): zero, the subnormals, the
 * infinities, NaN (out: its sign's byte, for NaN's unsigned text) and the powers of two that are
 * not integers below 2^53. Digits counted here (a subnormal has fewer than 16). */
__attribute__((noinline, cold)) static char *put_rare(uint64_t bits, char *out, char *o)
{
    uint64_t t = bits & (C_MIN - 1), f;
    int bq = (int)((bits >> 52) & 0x7ff), e, strip;
    if (bq == 0x7ff) {
        if (t != 0) {
            memcpy(out, "nan", 3); /* a NaN's sign carries no meaning */
            return out + 3;
        }
        memcpy(o, "inf", 3);
        return o + 3;
    }
    if (bq == 0 && t == 0) {
        *o = '0';
        return o + 1;
    }
    need_table();
    if (bq <= 1) /* a subnormal t 2^-1074, or the least normal (its interval below: the subnormals' spacing) */
        f = to_decimal(bq ? C_MIN : t, E_MIN, &e, &strip);
    else /* a power of two: the lopsided interval */
        f = to_decimal_pow2(bq - 1075, &e, &strip);
    while (strip && f % 10 == 0) { /* shortest: drop the trailing zeros into the exponent */
        f /= 10;
        e++;
    }
    int n = digit_count(f);
    return put_layout(f, n, e + n - 1, o);
}

/* put_layout for f of n digits that ends in zeros: they are dropped (x stays) */
__attribute__((noinline)) static char *put_stripped(uint64_t f, int n, int x, char *o)
{
    while (f % 10 == 0) {
        f /= 10;
        n--;
    }
    return put_layout(f, n, x, o);
}

/* The text of v at out (HL_CSV_NUMBER_ROOM bytes, csv_int.h), without its NUL; returns its end.
 * The hot path is a normal double's: an integer below 2^53, else Dragonbox's decimal, whose digit
 * count is known without counting: v = fc 2^e2 with 2^52 <= fc < 2^53 is scaled by 10^k into
 * [100, 1000) units of 2^e2 (to_decimal), so z in [100 2^52, 1000 2^53) = [4.5e17, 9.01e18) and
 * the 1000-unit search's s = floor(z / 1000) has 15 or 16 digits (before its trailing zeros are
 * dropped), the 100-unit search's f (v 10^k / 100, rounded) 16 or 17. table_ready: the caller ran
 * need_table (a run does, once before its first value). */
static inline char *put_number(double v, char *out, int table_ready)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    out[0] = '-';
    char *o = out + (bits >> 63); /* the sign kept, or written over */
    uint64_t t = bits & (C_MIN - 1), fc = C_MIN | t, f;
    int bq = (int)((bits >> 52) & 0x7ff), mq = 1075 - bq; /* a normal v = fc 2^-mq */
    if (__builtin_expect((unsigned)bq - 1 >= 0x7fe, 0))   /* bq 0 (zero, subnormals) or 0x7ff (infinities, NaN) */
        return put_rare(bits, out, o);
    if ((unsigned)mq - 1 < P - 1 && fc << (64 - mq) == 0) { /* an integer below 2^53 < 10^16 */
        f = fc >> mq;
        int n = digit_count(f);
        put_digits(f, o, n); /* 8- and 16-byte stores: scratch up to o + 16 */
        return o + n;
    }
    if (__builtin_expect(t == 0, 0))
        return put_rare(bits, out, o);
    if (!table_ready)
        need_table();
    int e, strip;
    f = to_decimal(fc, -mq, &e, &strip);
    /* each digit count its own inlined layout: the count a constant in it */
    if (strip) {
        int n = f >= 1000000000000000ull ? 16 : 15;
        if (f % 10 == 0)
            return put_stripped(f, n, e + n - 1, o);
        return n == 16 ? put_layout(f, 16, e + 15, o) : put_layout(f, 15, e + 14, o);
    }
    return f >= 10000000000000000ull ? put_layout(f, 17, e + 16, o) : put_layout(f, 16, e + 15, o);
}

int32_t hl_csv_format_number(double v, char *out)
{
    char b[HL_CSV_NUMBER_ROOM];
    int32_t n = hl_csv_format_number_wide(v, b);
    memcpy(out, b, (size_t)n + 1);
    return n;
}

/* out has HL_CSV_NUMBER_ROOM bytes (csv_int.h). */
int32_t hl_csv_format_number_wide(double v, char *out)
{
    char *end = put_number(v, out, 0);
    *end = '\0';
    return (int32_t)(end - out);
}

char *hl_csv_put_numbers(char *o, const double *v, int32_t n)
{
    need_table(); /* once a run */
    for (int32_t i = 0; i < n; i++) {
        o = put_number(v[i], o, 1);
        *o++ = ',';
    }
    return o;
}
