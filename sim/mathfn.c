/* Elementary functions with fixed results (sim/amp_math.h).
 *
 * exp: x = k ln2 + r, k = nearest integer to x/ln2, r = (x - k ln2_hi) - k ln2_lo
 *   (ln2_hi has 32 trailing zero bits, so k ln2_hi is exact for |k| < 2^20;
 *   |r| <= 0.3466); e^r = 1 + (hi + (r^2 P(r) - lo)), hi = x - k ln2_hi exact,
 *   lo = k ln2_lo, with P the Taylor polynomial to
 *   degree 13 (truncation < 2^-60 relative), then scaled by 2^k exactly (or
 *   with one final rounding where the result is subnormal).
 * log: x = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f/(2+f);
 *   log(1+f) = 2 atanh(s) = f - (h - s (h + T)), h = f^2/2, T = 2 s^2/3 + 2 s^4/5
 *   + ... (to s^22, truncation < 2^-62 as |s| <= 0.1716: fdlibm's arrangement
 *   with Taylor coefficients); log x = e ln2_hi - ((h - (s (h + T) + e ln2_lo)) - f).
 * tanh (float): in double, |x| < 2^-10: x - x^3/3 + 2x^5/15 (relative
 *   truncation < 2^-56); |x| >= 9.1: +-1 (tanh is within 2^-26 of 1 there);
 *   else (e^{2|x|} - 1)/(e^{2|x|} + 1), where e^{2|x|} - 1 loses at most 10 of
 *   53 bits (|x| >= 2^-10): > 40 good bits before the rounding to float.
 * pown: binary powering with each product in double-double (Dekker's exact
 *   product with Veltkamp's split, no FMA), relative error ~ 2 log2(n) 2^-104.
 * cos2pi: u reduced modulo 1 exactly (u - floor(u)), the quadrant taken from 4u
 *   (exact), and sin or cos of (pi/2) r, r in [0, 1/2], by Taylor series to
 *   degree 20 (truncation < 2^-70). */
#include "amp_math.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const double LN2_HI = 6.93147180369123816490e-01;   /* 0x3fe62e42fee00000 */
static const double LN2_LO = 1.90821492927058770002e-10;   /* 0x3dea39ef35793c76 */
static const double INV_LN2 = 1.44269504088896338700e+00;

static double from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint64_t to_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MATH_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define MATH_CLONES
#endif

/* e^x, branch-free so that the array versions vectorise; the scalar and
 * array versions share it, so they give the same bits. The result y 2^k is
 * scaled in two exact steps 2^k1 2^k2 (k1 = k/2): only the last product can
 * round, where the result is subnormal. */
static inline __attribute__((always_inline)) double exp_core(double x)
{
    double xc = x < -745.2 ? -745.2 : x;
    xc = xc > 709.782712893384 ? 709.782712893384 : xc;
    xc = xc == xc ? xc : 0.0;
    double kd = (xc * INV_LN2 + 0x1.8p52) - 0x1.8p52;   /* nearest integer (ties to even), exact */
    double hi = xc - kd * LN2_HI, lo = kd * LN2_LO;      /* hi exact */
    double r = hi - lo;
    /* P(r) = 1/2 + r/6 + ... + r^11/13! (Horner) */
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600;
    p = p * r + 1.0 / 39916800;
    p = p * r + 1.0 / 3628800;
    p = p * r + 1.0 / 362880;
    p = p * r + 1.0 / 40320;
    p = p * r + 1.0 / 5040;
    p = p * r + 1.0 / 720;
    p = p * r + 1.0 / 120;
    p = p * r + 1.0 / 24;
    p = p * r + 1.0 / 6;
    p = p * r + 1.0 / 2;
    double er = 1.0 + (hi + ((r * r) * p - lo));
    int64_t k = (int64_t)kd, k1 = k / 2, k2 = k - k1;   /* |k1|, |k2| <= 538 */
    double y = er * from_bits((uint64_t)(k1 + 1023) << 52) * from_bits((uint64_t)(k2 + 1023) << 52);
    double nan = x + x;               /* computed on every path: the selects below if-convert */
    y = x < -745.2 ? 0.0 : y;
    y = x > 709.782712893384 ? HUGE_VAL : y;
    return x == x ? y : nan;
}

double amp_exp(double x) { return exp_core(x); }

float amp_expf(float x) { return (float)exp_core((double)x); }

static inline __attribute__((always_inline)) float tanhf_core(float xf)
{
    double x = (double)xf, a = fabs(x), z = a * a;
    double ts = a - a * z * (1.0 / 3 - z * (2.0 / 15));
    double e = exp_core(2.0 * (a < 9.1 ? a : 9.1));
    double q = (e - 1.0) / (e + 1.0);   /* every value computed, then selected */
    double t1 = a >= 9.1 ? 1.0 : q;     /* one select per statement (gcc if-converts those) */
    double t = a < 0x1p-10 ? ts : t1;
    double ns = -t;
    float r = (float)(x < 0 ? ns : t), nan = xf + xf;
    return xf == xf ? r : nan;
}

float amp_tanhf(float x) { return tanhf_core(x); }

/* In groups through a local copy, so that y == x (in place) still vectorises. */
#define GROUP 64
MATH_CLONES void amp_exp_n(const double *x, double *y, size_t n)
{
    for (size_t i = 0; i < n; i += GROUP) {
        size_t m = n - i < GROUP ? n - i : GROUP;
        double t[GROUP];
        memcpy(t, x + i, m * sizeof *t);
        for (size_t j = 0; j < m; j++) t[j] = exp_core(t[j]);
        memcpy(y + i, t, m * sizeof *t);
    }
}

MATH_CLONES void amp_expf_n(const float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i += GROUP) {
        size_t m = n - i < GROUP ? n - i : GROUP;
        float t[GROUP];
        memcpy(t, x + i, m * sizeof *t);
        for (size_t j = 0; j < m; j++) t[j] = (float)exp_core((double)t[j]);
        memcpy(y + i, t, m * sizeof *t);
    }
}

MATH_CLONES void amp_tanhf_n(const float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i += GROUP) {
        size_t m = n - i < GROUP ? n - i : GROUP;
        float t[GROUP];
        memcpy(t, x + i, m * sizeof *t);
        for (size_t j = 0; j < m; j++) t[j] = tanhf_core(t[j]);
        memcpy(y + i, t, m * sizeof *t);
    }
}

double amp_log(double x)
{
    if (x != x) return x + x;
    if (x < 0.0) return (x - x) / 0.0;
    if (x == 0.0) return -HUGE_VAL;
    if (x == HUGE_VAL) return x;
    int e = 0;
    uint64_t u = to_bits(x);
    if ((u >> 52) == 0) {             /* subnormal: scale into the normal range */
        u = to_bits(x * 0x1p54);
        e = -54;
    }
    e += (int)(u >> 52) - 1023;
    u &= 0x000fffffffffffffULL;
    double m = from_bits(u | 0x3ff0000000000000ULL);   /* [1, 2) */
    if (m > 1.4142135623730951) {
        m *= 0.5;                     /* exact */
        e++;
    }
    double f = m - 1.0;               /* exact (Sterbenz) */
    double s = f / (2.0 + f), z = s * s;
    /* T = z (2/3 + z (2/5 + z (2/7 + ... + z 2/23))) */
    double t = 2.0 / 23;
    for (int d = 21; d >= 3; d -= 2) t = t * z + 2.0 / d;
    t *= z;
    double hfsq = 0.5 * f * f, ed = (double)e;
    return ed * LN2_HI - ((hfsq - (s * (hfsq + t) + ed * LN2_LO)) - f);
}

float amp_logf(float x) { return (float)amp_log((double)x); }

/* ---- double-double ------------------------------------------------------------ */
typedef struct dd { double h, l; } dd;

static void split(double a, double *hi, double *lo)
{
    double c = 134217729.0 * a;   /* 2^27 + 1 */
    *hi = c - (c - a);
    *lo = a - *hi;
}

/* a b = p + e exactly (Dekker), no FMA */
static dd two_prod(double a, double b)
{
    double ah, al, bh, bl, p = a * b;
    split(a, &ah, &al);
    split(b, &bh, &bl);
    double e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return (dd){ p, e };
}

static dd dd_mul(dd x, dd y)
{
    dd p = two_prod(x.h, y.h);
    double e = p.l + (x.h * y.l + x.l * y.h);
    double h = p.h + e;
    return (dd){ h, e - (h - p.h) };
}

double amp_pown(double x, int64_t n)
{
    if (n < 0) return 1.0 / amp_pown(x, -n);
    double ax = fabs(x);
    if (!(ax >= 0x1p-500 && ax <= 0x1p500)) {   /* 0, huge, tiny, Inf, NaN: plain products */
        double r = 1.0, b = x;
        for (; n; n >>= 1) {
            if (n & 1) r *= b;
            b *= b;
        }
        return r;
    }
    dd r = { 1.0, 0.0 }, b = { x, 0.0 };
    for (; n; n >>= 1) {
        if (n & 1) r = dd_mul(r, b);
        if (n > 1) b = dd_mul(b, b);
        if (fabs(r.h) > 0x1p900 || fabs(r.h) < 0x1p-900 || fabs(b.h) > 0x1p900 || fabs(b.h) < 0x1p-900) {
            /* leaving the safe range of the split: finish in plain products */
            double rr = r.h + r.l, bb = b.h + b.l;
            for (n >>= 1; n; n >>= 1) {
                if (n & 1) rr *= bb;
                bb *= bb;
            }
            return rr;
        }
    }
    return r.h + r.l;
}

/* sin and cos of (pi/2) r, r in [0, 1/2] */
static double sin_half_pi(double r)
{
    double x = r * 1.5707963267948966, z = x * x, p = 0.0;
    static const double c[10] = { -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800,
                                  1.0 / 6227020800.0, -1.0 / 1307674368000.0, 1.0 / 355687428096000.0,
                                  -1.0 / 121645100408832000.0, 1.0 / 51090942171709440000.0 };
    for (int i = 9; i >= 0; i--) p = p * z + c[i];
    return x + x * z * p;
}

static double cos_half_pi(double r)
{
    double x = r * 1.5707963267948966, z = x * x, p = 0.0;
    static const double c[10] = { 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600,
                                  -1.0 / 87178291200.0, 1.0 / 20922789888000.0, -1.0 / 6402373705728000.0,
                                  1.0 / 2432902008176640000.0, -1.0 / 1124000727777607680000.0 };
    for (int i = 9; i >= 0; i--) p = p * z + c[i];
    return 1.0 + (z * (-0.5 + z * p));
}

double amp_cos2pi(double u)
{
    if (!isfinite(u)) return u - u;
    double v = u - floor(u);          /* [0, 1), exact */
    double q4 = 4.0 * v;              /* exact */
    int q = (int)q4;                  /* quadrant 0..3 */
    double r = q4 - q;                /* [0, 1), exact */
    /* cos(2 pi u) = cos((pi/2)(q + r)) */
    double c = r <= 0.5 ? cos_half_pi(r) : sin_half_pi(1.0 - r);
    double s = r <= 0.5 ? sin_half_pi(r) : cos_half_pi(1.0 - r);
    switch (q & 3) {
    case 0: return c;
    case 1: return -s;
    case 2: return -c;
    default: return s;
    }
}

float amp_sum8f(const float *v, size_t n)
{
    float l[8] = { 0 };
    size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int i = 0; i < 8; i++) l[i] += v[j + i];
    for (int i = 0; j < n; j++, i++) l[i] += v[j];
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}
