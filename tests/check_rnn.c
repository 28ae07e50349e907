/* Check suite: the LSTM/GRU step kernels (sim/amp_rnn.h) against a scalar
 * statement of the same formulas, one element at a time, each op's result
 * rounded by amp_round1 (the generic path) into fp16 (activations) and bf16
 * (gradients), bit for bit, NaN-aware, for several shapes and for every
 * combination of absent gradient contributions; the statistics of a site
 * against separate roundings of each step's array merged in order; the first
 * non-finite site; the weight shares' sums. The kernels' agreement with
 * PyTorch's op-by-op emulation is python/tests/test_torch_rnn.py's. */
#include "ampsim.h"
#include "amp_rnn.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_seed = 20261202;
static const amp_format *FA, *FG;       /* activation, gradient formats */
static amp_round_opts RO;

static float ra(double x) { return amp_round1(FA, &RO, x, 0, NULL); }
static float rg(double x) { return amp_round1(FG, &RO, x, 0, NULL); }

/* Values in (-s, s), in fmt; every 97th is 0 (signed zeros reach the sums). */
static void fill(float *x, size_t n, double s, const amp_format *f, uint64_t stream)
{
    for (size_t i = 0; i < n; i++) {
        double u = amp_rand_uniform(g_seed, stream, i);
        x[i] = i % 97 == 5 ? 0.0f : amp_round1(f, &RO, (2.0 * u - 1.0) * s, 0, NULL);
    }
}

/* Gate outputs in (0, 1) (tanh gate: (-1, 1)), in the activation format. */
static void fill_gate(float *x, size_t n, int tanh_gate, uint64_t stream)
{
    for (size_t i = 0; i < n; i++) {
        double u = amp_rand_uniform(g_seed, stream, i);
        x[i] = ra(tanh_gate ? 2.0 * u - 1.0 : u);
    }
}

static void ctx_init(amp_rnn_ctx *c, amp_stats *scratch, float *tmp)
{
    memset(c, 0, sizeof *c);
    for (int s = 0; s < AMP_RNN_SLOTS; s++) {
        c->fmt[s] = s == AMP_RNN_GRAD || s == AMP_RNN_WGRAD || s == AMP_RNN_BUF || s == AMP_RNN_WBUF ? FG : FA;
        c->opts[s] = &RO;
    }
    amp_stats_init(scratch);
    c->scratch = scratch;
    c->tmp = tmp;
    c->nf_site = -1;
}

static void same(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &got[i], 4);
        memcpy(&b, &want[i], 4);
        ck_assert_msg(a == b || (isnan(got[i]) && isnan(want[i])), "%s[%zu]: got %08x want %08x", what, i, a, b);
    }
}

/* The gradient buffer's sum of the present ones, in order (reference). */
static double sum_ref(const float *a, const float *b, const float *e, size_t i, int *k)
{
    const float *xs[3] = {a, b, e};
    float acc = 0.0f;
    *k = 0;
    for (int j = 0; j < 3; j++) {
        if (!xs[j]) continue;
        if ((*k)++ == 0) acc = xs[j][i];
        else acc = rg(rg(xs[j][i]) + rg(acc));
    }
    return acc;
}

static float sig_rule(float g, float y) { return ra(ra(g * ra(1.0f - y)) * y); }
static float tanh_rule(float g, float y) { return ra(g * ra(1.0f - ra(y * y))); }

START_TEST(test_lstm_step)
{
    static const size_t shapes[][2] = {{3, 5}, {1, 1}, {4, 32}, {2, 17}};
    for (size_t s = 0; s < 4; s++) {
        size_t B = shapes[s][0], H = shapes[s][1], n = B * H;
        float *buf = calloc(64 * n, sizeof *buf), *tmp = calloc(32 * n, sizeof *tmp);
        float *hw = buf, *xw = hw + 4 * n, *g = xw + 4 * n, *y = g + 4 * n, *cx = y + 4 * n, *cy = cx + n;
        float *t = cy + n, *hy = t + n, *ext = hy + n, *rec = ext + n, *dcn = rec + n, *dg = dcn + n;
        float *dc = dg + 4 * n, *want = dc + n;
        amp_rnn_ctx c;
        amp_stats scratch;
        ctx_init(&c, &scratch, tmp);
        fill(hw, 4 * n, 3.0, FA, 1);
        fill(xw, 4 * n, 3.0, FA, 2);
        fill(cx, n, 2.0, FA, 3);
        float hw0[4 * 128];
        memcpy(hw0, hw, 4 * n * sizeof *hw);
        amp_rnn_gates(&c, hw, xw, g, 4 * n);
        for (size_t i = 0; i < 4 * n; i++) want[i] = ra(ra(hw0[i]) + xw[i]);
        same(g, want, 4 * n, "gates");
        for (int k = 0; k < 4; k++) fill_gate(y + k * n, n, k == 2, 10 + k);
        amp_lstm_fwd(&c, y, y + n, y + 2 * n, y + 3 * n, cx, cy, n);
        for (size_t i = 0; i < n; i++) want[i] = ra(ra(y[n + i] * cx[i]) + ra(y[i] * y[2 * n + i]));
        same(cy, want, n, "cy");
        fill(t, n, 1.0, FA, 4);
        float t0[128];
        memcpy(t0, t, n * sizeof *t);
        amp_lstm_fwd_out(&c, t, y + 3 * n, hy, n);
        for (size_t i = 0; i < n; i++) want[i] = ra(y[3 * n + i] * ra(t0[i]));
        same(hy, want, n, "hy");
        ck_assert_int_eq(c.nf_site, -1);
        /* backward: every combination of the gradients that may be absent */
        fill(ext, n, 1e-3, FG, 5);
        fill(rec, n, 1e-3, FG, 6);
        fill(dcn, n, 1e-3, FG, 7);
        for (int m = 1; m < 8; m++) {
            const float *e = m & 1 ? ext : NULL, *r = m & 2 ? rec : NULL, *d = m & 4 ? dcn : NULL;
            amp_lstm_bwd(&c, e, r, d, y, y + n, y + 2 * n, y + 3 * n, cx, t, dg, dc, B, H);
            const float *i_ = y, *f_ = y + n, *g_ = y + 2 * n, *o_ = y + 3 * n;
            for (size_t b = 0; b < B; b++)
                for (size_t j = 0; j < H; j++) {
                    size_t i = b * H + j;
                    int k;
                    float dh = rg(sum_ref(e, r, NULL, i, &k)), dcy, d_o = 0.0f;
                    if (k) {
                        d_o = rg(dh * t[i]);
                        float u = tanh_rule(rg(dh * o_[i]), t[i]);
                        dcy = d ? rg(rg(d[i]) + rg(u)) : u;
                    } else {
                        dcy = d[i];
                    }
                    dcy = rg(dcy);
                    float gi = rg(dcy);
                    float w[4] = {sig_rule(rg(gi * g_[i]), i_[i]), sig_rule(rg(gi * cx[i]), f_[i]),
                                  tanh_rule(rg(gi * i_[i]), g_[i]), k ? sig_rule(d_o, o_[i]) : 0.0f};
                    for (int q = 0; q < 4; q++) want[b * 4 * H + q * H + j] = rg(w[q]);
                    want[4 * n + i] = gi * f_[i];
                }
            same(dg, want, 4 * n, "dg");
            same(dc, want + 4 * n, n, "dc");
        }
        free(buf);
        free(tmp);
    }
}
END_TEST

START_TEST(test_gru_step)
{
    static const size_t shapes[][2] = {{3, 5}, {1, 1}, {4, 32}, {2, 17}};
    for (size_t s = 0; s < 4; s++) {
        size_t B = shapes[s][0], H = shapes[s][1], n = B * H;
        float *buf = calloc(64 * n, sizeof *buf), *tmp = calloc(32 * n, sizeof *tmp);
        float *hw = buf, *xw = hw + 3 * n, *y = xw + 3 * n, *h = y + 2 * n, *hn = h + n, *np = hn + n;
        float *t = np + n, *d = t + n, *hy = d + n, *ext = hy + n, *gdn = ext + n, *rec = gdn + n;
        float *dhw = rec + n, *dxw = dhw + 3 * n, *gd = dxw + 3 * n, *want = gd + n;
        amp_rnn_ctx c;
        amp_stats scratch;
        ctx_init(&c, &scratch, tmp);
        fill(hw, 3 * n, 3.0, FA, 21);
        fill(xw, 3 * n, 3.0, FA, 22);
        fill(h, n, 1.0, FA, 23);
        fill_gate(y, n, 0, 24);
        fill_gate(y + n, n, 0, 25);
        amp_gru_fwd(&c, y, y + n, hw, xw, hn, np, B, H);
        for (size_t b = 0; b < B; b++)
            for (size_t j = 0; j < H; j++) {
                size_t i = b * H + j;
                want[i] = ra(hw[b * 3 * H + 2 * H + j] * y[i]);
                want[n + i] = ra(xw[b * 3 * H + 2 * H + j] + want[i]);
            }
        same(hn, want, n, "hn_r");
        same(np, want + n, n, "new_gate_pre");
        fill(t, n, 1.0, FA, 26);
        float t0[128];
        memcpy(t0, t, n * sizeof *t);
        amp_gru_fwd_out(&c, t, h, y + n, d, hy, n);
        for (size_t i = 0; i < n; i++) {
            float nn = ra(t0[i]), dd = ra(h[i] - nn);
            want[i] = dd;
            want[n + i] = ra(ra(dd * y[n + i]) + nn);
        }
        same(d, want, n, "h_minus_n");
        same(hy, want + n, n, "h");
        fill(ext, n, 1e-3, FG, 27);
        fill(gdn, n, 1e-3, FG, 28);
        fill(rec, n, 1e-3, FG, 29);
        for (int m = 1; m < 8; m++) {
            const float *e = m & 1 ? ext : NULL, *g2 = m & 2 ? gdn : NULL, *r = m & 4 ? rec : NULL;
            amp_gru_bwd(&c, e, g2, r, y, y + n, hw, d, t, dhw, dxw, gd, B, H);
            for (size_t b = 0; b < B; b++)
                for (size_t j = 0; j < H; j++) {
                    size_t i = b * H + j;
                    int k;
                    float dh = rg(sum_ref(e, g2, r, i, &k));
                    float gdz = rg(dh), gdv = rg(gdz * y[n + i]), d_z = rg(gdz * d[i]);
                    float gn = rg(rg(rg(dh) + rg(-gdv)));
                    float gnp = rg(tanh_rule(gn, t[i])), ghn = rg(gnp);
                    float dhn = ghn * y[i], d_r = rg(ghn * hw[b * 3 * H + 2 * H + j]);
                    float dg[3] = {rg(sig_rule(d_r, y[i])), rg(sig_rule(d_z, y[n + i])), 0.0f};
                    for (int q = 0; q < 3; q++) {
                        float a = q == 2 ? rg(dhn) : 0.0f, x = q == 2 ? rg(gnp) : 0.0f;
                        want[b * 3 * H + q * H + j] = rg(rg(a + dg[q]));
                        want[3 * n + b * 3 * H + q * H + j] = rg(x + dg[q]);
                    }
                    want[6 * n + i] = gdv;
                }
            same(dhw, want, 3 * n, "dhw");
            same(dxw, want + 3 * n, 3 * n, "dxw");
            same(gd, want + 6 * n, n, "gd");
        }
        free(buf);
        free(tmp);
    }
}
END_TEST

/* A site's statistics are those of a separate rounding of each call's array,
 * merged in call order; the first named site with a non-finite result is
 * the one reported, with its count. */
START_TEST(test_stats_and_nonfinite)
{
    enum { N = 48 };
    float hw[N], xw[N], g[N], tmp[32 * N], ref[N];
    amp_rnn_ctx c;
    amp_stats scratch, run[AMP_LSTM_SITES], want, one;
    amp_stats *ptrs[AMP_LSTM_SITES] = {0};
    ctx_init(&c, &scratch, tmp);
    memset(run, 0, sizeof run);                     /* all zero: taken as initialised */
    ptrs[AMP_LSTM_GATES] = &run[AMP_LSTM_GATES];
    c.stats = ptrs;
    amp_stats_init(&want);
    for (int call = 0; call < 3; call++) {
        fill(hw, N, 3.0, FA, 40 + call);
        fill(xw, N, 1e5, FA, 50 + call);            /* fp16 overflows: inf gates */
        memcpy(g, hw, sizeof hw);
        for (int i = 0; i < N; i++) ref[i] = ra(hw[i]) + xw[i];
        amp_stats_init(&one);
        ck_assert_int_eq(amp_round_f32(FA, &RO, ref, ref, N, &one), AMP_OK);
        amp_stats_merge(&want, &one);
        amp_rnn_gates(&c, g, xw, g, N);
    }
    ck_assert(memcmp(&run[AMP_LSTM_GATES], &want, sizeof want) == 0);
    ck_assert_int_eq(c.nf_site, AMP_LSTM_GATES);
    uint64_t bad = 0;
    fill(hw, N, 3.0, FA, 40);
    fill(xw, N, 1e5, FA, 50);
    for (int i = 0; i < N; i++) bad += !isfinite(ra(ra(hw[i]) + xw[i]));
    ck_assert(bad > 0);
    ck_assert_uint_eq(c.nf_count, bad);
    ck_assert_int_eq(c.status, AMP_OK);
}
END_TEST

/* Shares rounded in place, then summed: the first copied, each later one
 * r(sum + share). */
START_TEST(test_shares)
{
    enum { NW = 30, NB = 6, T = 4 };
    float dw[NW], db[NB], accw[NW], accb[NB], sw[NW], sb[NB], tmp[32];
    amp_rnn_ctx c;
    amp_stats scratch;
    int count[2] = {0, 0};
    ctx_init(&c, &scratch, tmp);
    for (int t = 0; t < T; t++) {
        fill(dw, NW, 10.0, amp_format_get(AMP_FMT_FP32), 60 + t);
        fill(db, NB, 10.0, amp_format_get(AMP_FMT_FP32), 70 + t);
        for (int i = 0; i < NW; i++) sw[i] = t ? rg(sw[i] + rg(dw[i])) : rg(dw[i]);
        for (int i = 0; i < NB; i++) sb[i] = t ? rg(sb[i] + rg(db[i])) : rg(db[i]);
        amp_rnn_shares(&c, dw, NW, AMP_LSTM_W, db, NB, AMP_LSTM_B, accw, accb, count);
    }
    same(accw, sw, NW, "accw");
    same(accb, sb, NB, "accb");
    ck_assert_int_eq(count[0], T);
    ck_assert_int_eq(count[1], T);
}
END_TEST

int main(void)
{
    amp_check_seed("rnn", "AMP_RNN_SEED", &g_seed);
    FA = amp_format_get(AMP_FMT_FP16);
    FG = amp_format_get(AMP_FMT_BF16);
    RO = amp_round_defaults();
    Suite *s = suite_create("rnn");
    TCase *tc = tcase_create("kernels");
    tcase_add_test(tc, test_lstm_step);
    tcase_add_test(tc, test_gru_step);
    tcase_add_test(tc, test_stats_and_nonfinite);
    tcase_add_test(tc, test_shares);
    suite_add_tcase(s, tc);
    return amp_check_failures(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
