/* The shortest decimal text of a double that reads back to the same double (hl_csv_format_number,
 * hbdlab/csv.h): Schubfach, by Raffaello Giulietti ("The Schubfach way to render doubles", 2020;
 * the algorithm of java.lang.Double.toString since JDK 19, DoubleToDecimal.java), written here in
 * C from the paper's description. Of the decimals in the rounding interval of v it picks one with
 * the fewest digits, the one closest to v among those (an even last digit on a tie).
 *
 * The text is laid out as printf's "%.17g" lays out its digits: fixed notation when the decimal
 * exponent X of d.ddd x 10^X is in [-4, 17), else d.ddde+XX; so integers up to 10^17 print as
 * integers, and only the digits change (0.1, not 0.10000000000000001).
 *
 * The table g(k) of 126-bit over-approximations of 10^-k (k in [-324, 292]) is computed once,
 * on first use (pthread_once; 1.6 million instructions, under a millisecond), by exact integer
 * arithmetic. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "csv_int.h"
#include "hbdlab/csv.h"

__extension__ typedef unsigned __int128 u128;

enum { K_MIN = -324, K_MAX = 292, Q_MIN = -1074, P = 53, C_TINY = 3 };
#define C_MIN ((uint64_t)1 << 52)
#define MASK_63 (((uint64_t)1 << 63) - 1)

/* floor(e log10 2), floor(e log10 (3/4 2^e)) / e..., floor(e log2 10), for |e| <= 5456721
 * (the paper's section 9.1; checked against the logarithms in tests/c/test_csv.c). */
static int flog10pow2(int e) { return (int)(((int64_t)e * 661971961083LL) >> 41); }
static int flog10threequarterspow2(int e) { return (int)(((int64_t)e * 661971961083LL - 274743187321LL) >> 41); }
static int flog2pow10(int e) { return (int)(((int64_t)e * 913124641741LL) >> 38); }

/* g(k) = floor(10^-k 2^-r) + 1 with r = flog2pow10(-k) - 125, so 2^125 <= g < 2^126, split as
 * g1 2^63 + g0 (paper section 9.8.3). */
static uint64_t g_hi[K_MAX - K_MIN + 1], g_lo[K_MAX - K_MIN + 1];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_built; /* 1 (release-stored) once the table is complete: the fast check before pthread_once */

/* A non-negative integer of up to BIG_LIMBS 32-bit limbs, least significant first. */
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

/* Bit i of b (0 past the end). */
static uint64_t big_bit(const big *b, int i)
{
    return i >= 0 && i < 32 * BIG_LIMBS ? (b->l[i / 32] >> (i % 32)) & 1 : 0;
}

/* floor(b 2^-shift) + 1 (shift may be negative: a left shift) into g_hi/g_lo[slot]; the result
 * has 126 bits. */
static void store_g(const big *b, int shift, int slot)
{
    uint64_t hi = 0, lo = 0; /* the 126-bit value: bits 125..63 in hi, 62..0 in lo */
    for (int j = 125; j >= 0; j--) {
        uint64_t bit = big_bit(b, j + shift);
        if (j >= 63)
            hi |= bit << (j - 63);
        else
            lo |= bit << j;
    }
    lo += 1; /* the + 1, carried into hi when the low 63 bits were all ones */
    if (lo >> 63) {
        lo &= MASK_63;
        hi += 1;
    }
    g_hi[slot] = hi;
    g_lo[slot] = lo;
}

static void build_table(void)
{
    big b;
    memset(&b, 0, sizeof b);
    b.l[0] = 1; /* 10^0; then 10^n for k = -n <= 0, exact */
    for (int n = 0; n <= -K_MIN; n++) {
        int r = flog2pow10(n) - 125;
        store_g(&b, r, -n - K_MIN);
        big_mul10(&b);
    }
    memset(&b, 0, sizeof b);
    b.l[BIG_FRAC_BITS / 32] = 1u << (BIG_FRAC_BITS % 32); /* 2^1400; then floor(2^1400 / 10^k), exact */
    for (int k = 1; k <= K_MAX; k++) {
        big_div10(&b); /* floor(floor(x / a) / b) = floor(x / (a b)) */
        int r = flog2pow10(-k) - 125;
        store_g(&b, BIG_FRAC_BITS + r, k - K_MIN); /* 10^-k 2^-r = (2^1400 / 10^k) 2^-(1400 + r) */
    }
    __atomic_store_n(&g_built, 1, __ATOMIC_RELEASE);
}

/* Round to odd of g cp / 2^127 (paper section 9.8.4): the floor, with its last bit set when the
 * quotient was not exact. */
static uint64_t rop(uint64_t g1, uint64_t g0, uint64_t cp)
{
    uint64_t x1 = (uint64_t)(((u128)g0 * cp) >> 64);
    u128 y = (u128)g1 * cp;
    uint64_t y0 = (uint64_t)y, y1 = (uint64_t)(y >> 64);
    uint64_t z = (y0 >> 1) + x1;
    uint64_t vbp = y1 + (z >> 63);
    return vbp | (((z & MASK_63) + MASK_63) >> 63);
}

/* The decimal f 10^e closest to v = c 2^q among the shortest in v's rounding interval. */
static void to_decimal(int q, uint64_t c, int dk, uint64_t *f, int *e)
{
    int out = (int)(c & 1);
    uint64_t cb = c << 2, cbr = cb + 2, cbl;
    int k;
    if (c != C_MIN || q == Q_MIN) {
        cbl = cb - 2;
        k = flog10pow2(q);
    } else { /* at a power of two the interval below is half as wide */
        cbl = cb - 1;
        k = flog10threequarterspow2(q);
    }
    int h = q + flog2pow10(-k) + 2;
    uint64_t g1 = g_hi[k - K_MIN], g0 = g_lo[k - K_MIN];
    uint64_t vb = rop(g1, g0, cb << h), vbl = rop(g1, g0, cbl << h), vbr = rop(g1, g0, cbr << h);
    uint64_t s = vb >> 2;
    /* One digit fewer, when a multiple of 10 (of 10^k) is in the interval: the interval is
     * narrower than 10^(k+1), so at most one is. The paper asks s >= 100 (Java writes at least
     * two digits); s >= 10 also finds the one-digit decimal of a small subnormal (8e-323). */
    if (s >= 10) {
        uint64_t sp10 = 10 * (s / 10), tp10 = sp10 + 10;
        int upin = vbl + (uint64_t)out <= sp10 << 2;
        int wpin = (tp10 << 2) + (uint64_t)out <= vbr;
        if (upin != wpin) {
            *f = upin ? sp10 : tp10;
            *e = k + dk;
            return;
        }
    }
    uint64_t t = s + 1;
    int uin = vbl + (uint64_t)out <= s << 2;
    int win = (t << 2) + (uint64_t)out <= vbr;
    *e = k + dk;
    if (uin != win) {
        *f = uin ? s : t;
        return;
    }
    int64_t cmp = (int64_t)(vb - ((s + t) << 1)); /* both in: the closer, s on a tie when even */
    *f = cmp < 0 || (cmp == 0 && (s & 1) == 0) ? s : t;
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
 * < 5.9e-2 stay below the 1/100 and 1/10 that the fractional part has room for; checked for
 * every w and u in tests/c/test_csv.c). No lane overflows into the next: w 10486 < 2^27 < 2^32
 * and u 103 < 2^14 < 2^16, and the masks drop what the shifts bring down from the lane above. */
static uint64_t swar8(uint32_t v)
{
    uint32_t a = v / 10000, b = v - a * 10000;
    uint64_t x = a | (uint64_t)b << 32;
    uint64_t q = ((x * 10486) >> 20) & 0x0000007F0000007Full;
    x = q | (x - q * 100) << 16;
    q = ((x * 103) >> 10) & 0x000F000F000F000Full;
    x = q | (x - q * 10) << 8;
    return x + 0x3030303030303030ull;
}

static void store8(char *p, uint64_t w) { memcpy(p, &w, 8); } /* little-endian (x86-64, aarch64) */

/* The n = digit_count(f) digits of f (f < 10^17) into d[0, n), most significant first, in 8-byte
 * stores; d has 24 bytes and the bytes past n are scratch. */
static void put_digits(uint64_t f, char *d, int n)
{
    if (n <= 8) {
        store8(d, swar8((uint32_t)f) >> (8 * (8 - n))); /* the leading zeros are the low bytes */
        return;
    }
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
}

/* hl_csv_format_number_wide (csv_int.h): out has HL_CSV_NUMBER_ROOM bytes. */
static int32_t format_wide(double v, char *out);

int32_t hl_csv_format_number(double v, char *out)
{
    char b[HL_CSV_NUMBER_ROOM];
    int32_t n = format_wide(v, b);
    memcpy(out, b, (size_t)n + 1);
    return n;
}

int32_t hl_csv_format_number_wide(double v, char *out) { return format_wide(v, out); }

static int32_t format_wide(double v, char *out)
{
    char *o = out;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (isnan(v)) {
        memcpy(out, "nan", 4);
        return 3;
    }
    if (bits >> 63)
        *o++ = '-';
    if (isinf(v)) {
        memcpy(o, "inf", 4);
        return (int32_t)(o - out) + 3;
    }
    uint64_t t = bits & (C_MIN - 1);
    int bq = (int)((bits >> 52) & 0x7ff);
    uint64_t f;
    int e;
    if (bq == 0 && t == 0) {
        *o++ = '0';
        *o = '\0';
        return (int32_t)(o - out);
    }
    if (!__atomic_load_n(&g_built, __ATOMIC_ACQUIRE))
        pthread_once(&g_once, build_table);
    if (bq != 0) {
        int mq = -Q_MIN + 1 - bq;
        uint64_t c = C_MIN | t;
        if (0 < mq && mq < P && ((c >> mq) << mq) == c) { /* an integer below 2^53: its digits */
            f = c >> mq;
            e = 0;
        } else {
            to_decimal(-mq, c, 0, &f, &e);
        }
    } else if (t < C_TINY) {
        /* 2^-1074 and 2^-1073: the paper's 10 t path gives two digits (4.9e-324, Java's
         * form); one digit is in their intervals, (2.47e-324, 7.41e-324) and (7.41e-324,
         * 1.24e-323), and 5e-324 and 1e-323 are the closest one-digit decimals */
        f = t == 1 ? 5 : 1;
        e = t == 1 ? -324 : -323;
    } else {
        to_decimal(Q_MIN, t, 0, &f, &e);
    }
    while (f % 10 == 0) { /* shortest: drop the trailing zeros into the exponent */
        f /= 10;
        e++;
    }
    /* the digits into d, then laid out by fixed-size copies (no loops, no calls): the bytes
     * past the text are scratch, overwritten by the next cell or left past its NUL */
    int n = digit_count(f);
    int x = e + n - 1; /* v = d[0].d[1..n) x 10^x */
    char d[32];
    memset(d, '0', sizeof d);
    put_digits(f, d, n);
    if (x >= -4 && x < 17) {
        if (x < 0) { /* 0.000ddd: -x - 1 zeros after the point (at most 3) */
            memcpy(o, "0.000000", 8);
            memcpy(o + 1 - x, d, 24); /* n <= 17 */
            o += 1 - x + n;
        } else if (x >= n - 1) { /* ddd000: x + 1 - n zeros after the digits (at most 16) */
            memcpy(o, d, 24);
            memcpy(o + n, "0000000000000000", 16);
            o += x + 1;
        } else { /* dd.ddd: x + 1 <= 16 digits, the point, n - x - 1 <= 16 digits */
            memcpy(o, d, 16);
            o[x + 1] = '.';
            memcpy(o + x + 2, d + x + 1, 16);
            o += n + 1;
        }
    } else { /* d.ddde+XX, at least two exponent digits as printf writes them */
        o[0] = d[0];
        if (n > 1) {
            o[1] = '.';
            memcpy(o + 2, d + 1, 16);
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
    }
    *o = '\0';
    return (int32_t)(o - out);
}
