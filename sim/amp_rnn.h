/* ampsim — the pointwise part of an LSTM or GRU time step, forward and backward,
 * with every rounding of the step done in one call (the kernels of ampsim.torch's
 * emulated nn.LSTM / nn.GRU, python/ampsim/torch/_rnn_layer.py).
 *
 * Each kernel computes, element by element in float32 (products, sums and
 * differences: IEEE operations, so any compiler gives the same bits), what the
 * op-by-op emulation computes with torch ops, and rounds each op's result with
 * amp_round_f32_nonfinite into the format of its slot. The nonlinearities
 * (sigmoid, tanh) are not computed here: the caller runs PyTorch's own kernels
 * between the calls and passes their outputs in.
 *
 * Arrays are float32, row-major and contiguous: n = B*H elements for a state,
 * B rows of G*H for the gates (G = 4 for the LSTM, 3 for the GRU, gate k in
 * columns k*H .. k*H+H-1). A rounding "at site s" merges the statistics of
 * that one rounding (one amp_stats per call, as a separate rounding of the
 * whole array gives them) into ctx->stats[s] when that pointer is not NULL,
 * and notes the first named rounding with a non-finite result. Each kernel
 * returns c->status: AMP_OK, or the first failure of a rounding (bad
 * options) since the caller last cleared it. */
#ifndef AMP_RNN_H
#define AMP_RNN_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"

/* The slots: the format and options of each kind of rounding. */
enum {
    AMP_RNN_ACT,      /* an op's output (the activation format, the policy's options) */
    AMP_RNN_GRAD,     /* an op's gradient (activation-gradient format) */
    AMP_RNN_WGRAD,    /* a weight's gradient share (weight-gradient format) */
    AMP_RNN_RULE,     /* the steps of the tanh/sigmoid backward rules (activation format, rne) */
    AMP_RNN_BUF,      /* a sum of two gradient contributions (activation-gradient format, rne) */
    AMP_RNN_WBUF,     /* a sum of two weight-gradient shares (weight-gradient format, rne) */
    AMP_RNN_SLOTS
};

/* The named sites of an LSTM step (the op-by-op names: hh, gates, in_gate,
 * forget_gate, cell_gate, out_gate, fc, ig, c, c_tanh, h), their gradients
 * (+ AMP_LSTM_GRAD) and the two weight-gradient shares. */
enum {
    AMP_LSTM_HH, AMP_LSTM_GATES, AMP_LSTM_IN, AMP_LSTM_FORGET, AMP_LSTM_CELL, AMP_LSTM_OUT,
    AMP_LSTM_FC, AMP_LSTM_IG, AMP_LSTM_C, AMP_LSTM_CTANH, AMP_LSTM_H, AMP_LSTM_GRAD,
    AMP_LSTM_W = 2 * AMP_LSTM_GRAD, AMP_LSTM_B, AMP_LSTM_SITES
};
/* The GRU's: hh, gates, reset_gate, update_gate, hn_r, new_gate_pre,
 * new_gate, h_minus_n, h_z, h; gradients; weight shares. */
enum {
    AMP_GRU_HH, AMP_GRU_GATES, AMP_GRU_RESET, AMP_GRU_UPDATE, AMP_GRU_HNR, AMP_GRU_NPRE,
    AMP_GRU_NEW, AMP_GRU_HMN, AMP_GRU_HZ, AMP_GRU_H, AMP_GRU_GRAD,
    AMP_GRU_W = 2 * AMP_GRU_GRAD, AMP_GRU_B, AMP_GRU_SITES
};

typedef struct amp_rnn_ctx {
    const amp_format *fmt[AMP_RNN_SLOTS];
    const amp_round_opts *opts[AMP_RNN_SLOTS];
    amp_stats *const *stats;   /* per site: statistics merged into (an all-zero amp_stats: none yet,
                                * taken as initialised), or NULL; the array may be NULL */
    amp_stats *scratch;        /* an initialised amp_stats the kernels reuse */
    float *tmp;                /* scratch of 32 * B * H floats */
    int nf_site;               /* in/out: the first site with a non-finite result (-1: none yet) */
    uint64_t nf_count;         /* its count of non-finite results */
    amp_status status;         /* in/out: the first failure (AMP_OK: none) */
} amp_rnn_ctx;

/* Forward, both cells: hw = r(hw) at site 0 (the hidden GEMM's output), then
 * g = r(hw + xw) at site 1; n = B*G*H. */
AMP_API amp_status amp_rnn_gates(amp_rnn_ctx *c, float *hw, const float *xw, float *g, size_t n);

/* LSTM forward: y[0..3] (sigmoid, sigmoid, tanh, sigmoid of the gate chunks,
 * contiguous) rounded in place at the gate sites; cy = r(r(f*cx) + r(i*g)). */
AMP_API amp_status amp_lstm_fwd(amp_rnn_ctx *c, float *yi, float *yf, float *yg, float *yo, const float *cx, float *cy,
                          size_t n);
/* LSTM forward, after tanh(cy): t = r(t) in place (c_tanh), hy = r(o * t). */
AMP_API amp_status amp_lstm_fwd_out(amp_rnn_ctx *c, float *t, const float *o, float *hy, size_t n);
/* LSTM backward of one step. dh is the sum of the contributions ext and rec
 * (either may be NULL: not both when dcn is NULL) as ampsim.torch's gradient
 * buffer adds them; dcn the cell state's gradient from the next step (NULL:
 * none). i, f, g, o: the rounded gates; cx: the cell state in; tc: r(tanh(cy)).
 * Out: dg (B x 4H) the gates' gradient, rounded at the gates site and then at
 * the hidden GEMM's; dc the gradient of cx (unrounded). */
AMP_API amp_status amp_lstm_bwd(amp_rnn_ctx *c, const float *ext, const float *rec, const float *dcn,
                          const float *i, const float *f, const float *g, const float *o, const float *cx,
                          const float *tc, float *dg, float *dc, size_t B, size_t H);

/* GRU forward, after the sigmoids: yr, yz rounded in place (reset, update);
 * hn = r(h_n * r), npre = r(i_n + hn), h_n and i_n the third chunks of the
 * rounded hw and of xw (B x 3H). */
AMP_API amp_status amp_gru_fwd(amp_rnn_ctx *c, float *yr, float *yz, const float *hw, const float *xw, float *hn,
                         float *npre, size_t B, size_t H);
/* GRU forward, after tanh(npre): t = r(t) in place (new_gate), d = r(h - t),
 * hy = r(r(d * z) + t). */
AMP_API amp_status amp_gru_fwd_out(amp_rnn_ctx *c, float *t, const float *h, const float *z, float *d, float *hy,
                             size_t n);
/* GRU backward of one step: dh the buffer sum of ext, gdn, rec (in that
 * order; any may be NULL, not all); r, z the rounded gates, hw the rounded
 * hidden GEMM output (B x 3H), d and nt the saved h - n and r(tanh). Out:
 * dhw (B x 3H, rounded at the hidden GEMM's site), dxw (B x 3H), gd (the
 * gradient of h through h - n, rounded). */
AMP_API amp_status amp_gru_bwd(amp_rnn_ctx *c, const float *ext, const float *gdn, const float *rec, const float *r,
                         const float *z, const float *hw, const float *d, const float *nt, float *dhw, float *dxw,
                         float *gd, size_t B, size_t H);

/* A step's weight-gradient shares: dw (nw values, may be NULL) rounded at
 * site sw, db (nb, may be NULL) at site sb; when accw is not NULL each is then
 * added into its sum (accw, accb) as the gradient buffer adds (count[0],
 * count[1]: the contributions already in each sum, counted up; the first is
 * copied). */
AMP_API amp_status amp_rnn_shares(amp_rnn_ctx *c, float *dw, size_t nw, int sw, float *db, size_t nb, int sb,
                            float *accw, float *accb, int *count);

#endif
