/* The pointwise part of an LSTM or GRU step in one call (amp_rnn.h). Every
 * formula is the op-by-op emulation's (python/ampsim/torch/_rnn_fused.py and
 * _functions.py): same operands, same operator order, one rounding per op. */
#include "amp_base.h"
#include "amp_rnn.h"

#include <math.h>
#include <string.h>

/* The kernels' loops: target clones vectorised over elements only (each
 * element's operations and their order unchanged; -ffp-contract=off stays
 * on, so every clone gives the same bits). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(AMP_NO_CLONES)
#define RNN_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define RNN_CLONES
#endif

/* a + b as PyTorch's add kernel forms it (b * 1 + a): of two NaN operands
 * b's is kept, sign bit included (the compiler may order the operands of a
 * plain + either way, and x86 keeps the first NaN). Any other value is a + b. */
static inline float add(float a, float b)
{
    return isnan(b) ? b : a + b;
}

/* x (n values) rounded in place into the slot's format; statistics and the
 * non-finite report at site (-1: an unnamed rounding, neither). */
static void rnd(amp_rnn_ctx *c, int slot, int site, float *x, size_t n)
{
    amp_stats *run = site >= 0 && c->stats ? c->stats[site] : NULL;
    size_t nf = 0;
    amp_status st;
    if (run) {
        amp_stats_reset(c->scratch);
        st = amp_round_f32_nonfinite(c->fmt[slot], c->opts[slot], x, x, n, c->scratch, &nf);
        if (run->n == 0 && run->amin_nonzero == 0.0)
            *run = *c->scratch;           /* an all-zero one: the first statistics of the site */
        else
            amp_stats_merge(run, c->scratch);
    } else {
        st = amp_round_f32_nonfinite(c->fmt[slot], c->opts[slot], x, x, n, NULL, site >= 0 ? &nf : NULL);
    }
    if (st != AMP_OK && c->status == AMP_OK)
        c->status = st;
    if (nf && site >= 0 && c->nf_site < 0) {
        c->nf_site = site;
        c->nf_count = nf;
    }
}

/* x, a result already in the slot's format whose non-finite values an earlier
 * site reported, rounded again at site: only for its statistics. */
static void again(amp_rnn_ctx *c, int slot, int site, float *x, size_t n)
{
    if (c->stats && c->stats[site])
        rnd(c, slot, site, x, n);
}

/* out = the gradient buffer's sum of the present contributions a, b, e (in
 * that order): the first kept as it came; each later one r(r(sum) + r(x)). */
static inline void fold(amp_rnn_ctx *c, int slot, const float *a, const float *b, const float *e, float *out,
                        float *t, size_t n)
{
    const float *xs[3] = {a, b, e};
    int k = 0;
    for (int j = 0; j < 3; j++) {
        const float *x = xs[j];
        if (!x)
            continue;
        if (k++ == 0) {
            memcpy(out, x, n * sizeof *out);
            continue;
        }
        if (k == 2)
            rnd(c, slot, -1, out, n);
        memcpy(t, x, n * sizeof *t);
        rnd(c, slot, -1, t, n);
        for (size_t i = 0; i < n; i++) out[i] = add(out[i], t[i]);
        rnd(c, slot, -1, out, n);
    }
}

/* The backward rules of G gates at once (planar: gate k in [k*n, k*n+n)):
 * the sigmoid rule r(r(g * r(1 - y)) * y), and for gate tk (-1: none) the
 * tanh rule r(g * r(1 - r(y * y))), each with its three roundings in one call
 * for all gates (a rounding of an element does not depend on the others).
 * t, u: G*n floats of scratch each. */
static inline void rules(amp_rnn_ctx *c, size_t G, int tk, const float *g, const float *y, float *out, float *t,
                         float *u, size_t n)
{
    size_t m = G * n;
    for (size_t k = 0; k < G; k++) {
        size_t a = k * n;
        if ((int)k == tk)
            for (size_t i = a; i < a + n; i++) t[i] = y[i] * y[i];
        else
            for (size_t i = a; i < a + n; i++) t[i] = 1.0f - y[i];
    }
    rnd(c, AMP_RNN_RULE, -1, t, m);
    for (size_t k = 0; k < G; k++) {
        size_t a = k * n;
        if ((int)k == tk)
            for (size_t i = a; i < a + n; i++) u[i] = 1.0f - t[i];
        else
            for (size_t i = a; i < a + n; i++) u[i] = g[i] * t[i];
    }
    rnd(c, AMP_RNN_RULE, -1, u, m);
    for (size_t k = 0; k < G; k++) {
        size_t a = k * n;
        if ((int)k == tk)
            for (size_t i = a; i < a + n; i++) out[i] = g[i] * u[i];
        else
            for (size_t i = a; i < a + n; i++) out[i] = u[i] * y[i];
    }
    rnd(c, AMP_RNN_RULE, -1, out, m);
}

/* Column chunk k (H wide) of a B x (G*H) array: copied out, or in. */
static inline void chunk_get(const float *a, size_t G, size_t k, float *out, size_t B, size_t H)
{
    for (size_t b = 0; b < B; b++) memcpy(out + b * H, a + b * G * H + k * H, H * sizeof *out);
}

static inline void chunk_put(float *a, size_t G, size_t k, const float *x, size_t B, size_t H)
{
    for (size_t b = 0; b < B; b++) memcpy(a + b * G * H + k * H, x + b * H, H * sizeof *a);
}

RNN_CLONES
amp_status amp_rnn_gates(amp_rnn_ctx *c, float *hw, const float *xw, float *g, size_t n)
{
    rnd(c, AMP_RNN_ACT, 0, hw, n);
    for (size_t i = 0; i < n; i++) g[i] = add(hw[i], xw[i]);
    rnd(c, AMP_RNN_ACT, 1, g, n);
    return c->status;
}

/* ---- LSTM ------------------------------------------------------------------------------ */
RNN_CLONES
amp_status amp_lstm_fwd(amp_rnn_ctx *c, float *yi, float *yf, float *yg, float *yo, const float *cx, float *cy,
                        size_t n)
{
    float *fc = c->tmp, *ig = c->tmp + n;
    rnd(c, AMP_RNN_ACT, AMP_LSTM_IN, yi, n);
    rnd(c, AMP_RNN_ACT, AMP_LSTM_FORGET, yf, n);
    rnd(c, AMP_RNN_ACT, AMP_LSTM_CELL, yg, n);
    rnd(c, AMP_RNN_ACT, AMP_LSTM_OUT, yo, n);
    for (size_t i = 0; i < n; i++) fc[i] = yf[i] * cx[i];
    rnd(c, AMP_RNN_ACT, AMP_LSTM_FC, fc, n);
    for (size_t i = 0; i < n; i++) ig[i] = yi[i] * yg[i];
    rnd(c, AMP_RNN_ACT, AMP_LSTM_IG, ig, n);
    for (size_t i = 0; i < n; i++) cy[i] = add(fc[i], ig[i]);
    rnd(c, AMP_RNN_ACT, AMP_LSTM_C, cy, n);
    return c->status;
}

RNN_CLONES
amp_status amp_lstm_fwd_out(amp_rnn_ctx *c, float *t, const float *o, float *hy, size_t n)
{
    rnd(c, AMP_RNN_ACT, AMP_LSTM_CTANH, t, n);
    for (size_t i = 0; i < n; i++) hy[i] = o[i] * t[i];
    rnd(c, AMP_RNN_ACT, AMP_LSTM_H, hy, n);
    return c->status;
}

RNN_CLONES
amp_status amp_lstm_bwd(amp_rnn_ctx *c, const float *ext, const float *rec, const float *dcn, const float *i,
                        const float *f, const float *g, const float *o, const float *cx, const float *tc, float *dg,
                        float *dc, size_t B, size_t H)
{
    const int G0 = AMP_LSTM_GRAD;
    size_t n = B * H;
    /* planar blocks of four gates: their gradients gs, outputs ys, rule results */
    float *dh = c->tmp, *dtc = dh + n, *dcy = dtc + n, *gig = dcy + n, *gfc = gig + n;
    float *gs = gfc + n, *ys = gs + 4 * n, *r = ys + 4 * n, *t = r + 4 * n, *u = t + 4 * n;
    float *d_i = gs, *d_f = gs + n, *d_g = gs + 2 * n, *d_o = gs + 3 * n;
    int has_dh = ext || rec;
    if (has_dh) {
        fold(c, AMP_RNN_BUF, ext, rec, NULL, dh, t, n);
        rnd(c, AMP_RNN_GRAD, G0 + AMP_LSTM_H, dh, n);
        for (size_t k = 0; k < n; k++) d_o[k] = dh[k] * tc[k];
        for (size_t k = 0; k < n; k++) dtc[k] = dh[k] * o[k];
        rnd(c, AMP_RNN_GRAD, G0 + AMP_LSTM_CTANH, dtc, n);
        rules(c, 1, 0, dtc, tc, r, t, u, n);             /* the gradient of c through tanh */
        if (dcn)
            fold(c, AMP_RNN_BUF, dcn, r, NULL, dcy, t, n);
        else
            memcpy(dcy, r, n * sizeof *dcy);
    } else {
        memcpy(dcy, dcn, n * sizeof *dcy);
        memset(d_o, 0, n * sizeof *d_o);
    }
    rnd(c, AMP_RNN_GRAD, G0 + AMP_LSTM_C, dcy, n);
    /* (c's gradient under the names of its two operands' ops) */
    memcpy(gig, dcy, n * sizeof *gig);
    again(c, AMP_RNN_GRAD, G0 + AMP_LSTM_IG, gig, n);
    memcpy(gfc, gig, n * sizeof *gfc);
    again(c, AMP_RNN_GRAD, G0 + AMP_LSTM_FC, gfc, n);
    for (size_t k = 0; k < n; k++) d_i[k] = gig[k] * g[k];
    for (size_t k = 0; k < n; k++) d_g[k] = gig[k] * i[k];
    for (size_t k = 0; k < n; k++) d_f[k] = gfc[k] * cx[k];
    for (size_t k = 0; k < n; k++) dc[k] = gfc[k] * f[k];
    /* the gates' gradients in the op-by-op backward's order, then their rules */
    if (has_dh)
        rnd(c, AMP_RNN_GRAD, G0 + AMP_LSTM_OUT, d_o, n);
    rnd(c, AMP_RNN_GRAD, G0 + AMP_LSTM_CELL, d_g, n);
    rnd(c, AMP_RNN_GRAD, G0 + AMP_LSTM_FORGET, d_f, n);
    rnd(c, AMP_RNN_GRAD, G0 + AMP_LSTM_IN, d_i, n);
    memcpy(ys, i, n * sizeof *ys);
    memcpy(ys + n, f, n * sizeof *ys);
    memcpy(ys + 2 * n, g, n * sizeof *ys);
    memcpy(ys + 3 * n, o, n * sizeof *ys);
    rules(c, 4, 2, gs, ys, r, t, u, n);
    if (!has_dh)
        memset(r + 3 * n, 0, n * sizeof *r);     /* no gradient reached the output gate */
    for (size_t k = 0; k < 4; k++) chunk_put(dg, 4, k, r + k * n, B, H);
    rnd(c, AMP_RNN_GRAD, G0 + AMP_LSTM_GATES, dg, 4 * n);
    again(c, AMP_RNN_GRAD, G0 + AMP_LSTM_HH, dg, 4 * n);
    return c->status;
}

/* ---- GRU -------------------------------------------------------------------------------- */
RNN_CLONES
amp_status amp_gru_fwd(amp_rnn_ctx *c, float *yr, float *yz, const float *hw, const float *xw, float *hn,
                       float *npre, size_t B, size_t H)
{
    size_t n = B * H;
    rnd(c, AMP_RNN_ACT, AMP_GRU_RESET, yr, n);
    rnd(c, AMP_RNN_ACT, AMP_GRU_UPDATE, yz, n);
    for (size_t b = 0; b < B; b++)
        for (size_t j = 0; j < H; j++) hn[b * H + j] = hw[b * 3 * H + 2 * H + j] * yr[b * H + j];
    rnd(c, AMP_RNN_ACT, AMP_GRU_HNR, hn, n);
    for (size_t b = 0; b < B; b++)
        for (size_t j = 0; j < H; j++) npre[b * H + j] = add(xw[b * 3 * H + 2 * H + j], hn[b * H + j]);
    rnd(c, AMP_RNN_ACT, AMP_GRU_NPRE, npre, n);
    return c->status;
}

RNN_CLONES
amp_status amp_gru_fwd_out(amp_rnn_ctx *c, float *t, const float *h, const float *z, float *d, float *hy, size_t n)
{
    float *dz = c->tmp;
    rnd(c, AMP_RNN_ACT, AMP_GRU_NEW, t, n);
    for (size_t i = 0; i < n; i++) d[i] = h[i] - t[i];
    rnd(c, AMP_RNN_ACT, AMP_GRU_HMN, d, n);
    for (size_t i = 0; i < n; i++) dz[i] = d[i] * z[i];
    rnd(c, AMP_RNN_ACT, AMP_GRU_HZ, dz, n);
    for (size_t i = 0; i < n; i++) hy[i] = add(dz[i], t[i]);
    rnd(c, AMP_RNN_ACT, AMP_GRU_H, hy, n);
    return c->status;
}

RNN_CLONES
amp_status amp_gru_bwd(amp_rnn_ctx *c, const float *ext, const float *gdn, const float *rec, const float *r,
                       const float *z, const float *hw, const float *d, const float *nt, float *dhw, float *dxw,
                       float *gd, size_t B, size_t H)
{
    const int G0 = AMP_GRU_GRAD;
    size_t n = B * H;
    float *dh = c->tmp, *gdz = dh + n, *gn = gdz + n, *gnp = gn + n, *ghn = gnp + n, *dhn = ghn + n;
    float *hn = dhn + n, *gs = hn + n, *ys = gs + 2 * n, *q = ys + 2 * n, *t = q + 2 * n, *u = t + 2 * n;
    float *p = u + 2 * n;     /* 3n floats */
    float *d_r = gs, *d_z = gs + n;
    fold(c, AMP_RNN_BUF, ext, gdn, rec, dh, t, n);
    rnd(c, AMP_RNN_GRAD, G0 + AMP_GRU_H, dh, n);
    memcpy(gdz, dh, n * sizeof *gdz);
    again(c, AMP_RNN_GRAD, G0 + AMP_GRU_HZ, gdz, n);
    for (size_t k = 0; k < n; k++) gd[k] = gdz[k] * z[k];
    for (size_t k = 0; k < n; k++) d_z[k] = gdz[k] * d[k];
    rnd(c, AMP_RNN_GRAD, G0 + AMP_GRU_HMN, gd, n);
    /* the new gate's buffer: h's add (dh), then the subtraction's (-gd) */
    for (size_t k = 0; k < n; k++) u[k] = -gd[k];
    fold(c, AMP_RNN_BUF, dh, u, NULL, gn, t, n);
    rnd(c, AMP_RNN_GRAD, G0 + AMP_GRU_NEW, gn, n);
    rules(c, 1, 0, gn, nt, gnp, t, u, n);
    rnd(c, AMP_RNN_GRAD, G0 + AMP_GRU_NPRE, gnp, n);
    memcpy(ghn, gnp, n * sizeof *ghn);
    again(c, AMP_RNN_GRAD, G0 + AMP_GRU_HNR, ghn, n);
    chunk_get(hw, 3, 2, hn, B, H);
    for (size_t k = 0; k < n; k++) dhn[k] = ghn[k] * r[k];
    for (size_t k = 0; k < n; k++) d_r[k] = ghn[k] * hn[k];
    rnd(c, AMP_RNN_GRAD, G0 + AMP_GRU_UPDATE, d_z, n);
    rnd(c, AMP_RNN_GRAD, G0 + AMP_GRU_RESET, d_r, n);
    /* dhw holds the gates' gradient [rule(r), rule(z), 0] for now */
    memcpy(ys, r, n * sizeof *ys);
    memcpy(ys + n, z, n * sizeof *ys);
    rules(c, 2, -1, gs, ys, q, t, u, n);
    chunk_put(dhw, 3, 0, q, B, H);
    chunk_put(dhw, 3, 1, q + n, B, H);
    memset(u, 0, n * sizeof *u);
    chunk_put(dhw, 3, 2, u, B, H);
    rnd(c, AMP_RNN_GRAD, G0 + AMP_GRU_GATES, dhw, 3 * n);
    /* hw's and xw's gradients: the buffer sums of [0, 0, x] (the chunk) and the gates' */
    memcpy(dxw, dhw, 3 * n * sizeof *dxw);
    for (size_t s = 0; s < 2; s++) {
        float *out = s ? dxw : dhw;
        memset(p, 0, 3 * n * sizeof *p);
        chunk_put(p, 3, 2, s ? gnp : dhn, B, H);
        rnd(c, AMP_RNN_BUF, -1, p, 3 * n);
        for (size_t k = 0; k < 3 * n; k++) out[k] = add(p[k], out[k]);
        rnd(c, AMP_RNN_BUF, -1, out, 3 * n);
    }
    rnd(c, AMP_RNN_GRAD, AMP_GRU_HH + G0, dhw, 3 * n);
    return c->status;
}

RNN_CLONES
amp_status amp_rnn_shares(amp_rnn_ctx *c, float *dw, size_t nw, int sw, float *db, size_t nb, int sb, float *accw,
                          float *accb, int *count)
{
    if (dw)
        rnd(c, AMP_RNN_WGRAD, sw, dw, nw);
    if (db)
        rnd(c, AMP_RNN_WGRAD, sb, db, nb);
    if (!accw)
        return c->status;
    for (int s = 0; s < 2; s++) {
        float *x = s ? db : dw, *acc = s ? accb : accw;
        size_t m = s ? nb : nw;
        if (!x || !acc)
            continue;
        if (count[s]++ == 0) {
            memcpy(acc, x, m * sizeof *acc);
        } else {
            /* (the sum and the share are in the format: their own roundings change nothing) */
            for (size_t k = 0; k < m; k++) acc[k] = add(acc[k], x[k]);
            rnd(c, AMP_RNN_WBUF, -1, acc, m);
        }
    }
    return c->status;
}
