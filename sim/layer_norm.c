/* LayerNorm over the last dimension (PyTorch nn.LayerNorm, biased variance). */
#include <math.h>
#include "amp_layers.h"
#include "amp_round.h"

/* inp, out (N,C); weight, bias (C); mean, rstd (N).
 * mean and variance in double (two passes), rstd = float(1/sqrt(var + eps));
 * n = float((x - mean) * rstd), out = n * w + b in float32 (two roundings, as
 * an unfused float32 kernel). */
void amp_layernorm_forward(float *out, float *mean, float *rstd,
                           const float *inp, const float *weight,
                           const float *bias, size_t N, size_t C, double eps)
{
    #pragma omp parallel for schedule(static) if (N * C >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t r = 0; r < N; r++) {
        const float *x = inp + r * C;
        double m = 0.0, v = 0.0;
        for (size_t c = 0; c < C; c++) m += x[c];
        m /= (double)C;
        for (size_t c = 0; c < C; c++) { double d = x[c] - m; v += d * d; }
        v /= (double)C;
        double s = 1.0 / sqrt(v + eps);
        float *o = out + r * C;
        for (size_t c = 0; c < C; c++) {
            float nrm = (float)((x[c] - m) * s);
            o[c] = nrm * weight[c] + bias[c];
        }
        mean[r] = (float)m;
        rstd[r] = (float)s;
    }
}

/* dout, inp, dinp (N,C); weight, dweight, dbias (C); mean, rstd (N).
 * With n = (x - mean) rstd and g = dout * w:
 *   dinp += rstd (g - mean_c(g) - n mean_c(g n)),
 *   dweight += sum_rows dout n,  dbias += sum_rows dout.
 * Row means and column sums in double; the columns are summed over rows in
 * order, so the bytes do not depend on the thread count. */
void amp_layernorm_backward(float *dinp, float *dweight, float *dbias,
                            const float *dout, const float *inp,
                            const float *weight, const float *mean,
                            const float *rstd, size_t N, size_t C)
{
    #pragma omp parallel for schedule(static) if (N * C >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t r = 0; r < N; r++) {
        const float *x = inp + r * C, *go = dout + r * C;
        double m = mean[r], s = rstd[r];
        double sg = 0.0, sgn = 0.0;
        for (size_t c = 0; c < C; c++) {
            double g = (double)go[c] * weight[c];
            sg += g;
            sgn += g * ((x[c] - m) * s);
        }
        sg /= (double)C;
        sgn /= (double)C;
        float *di = dinp + r * C;
        for (size_t c = 0; c < C; c++) {
            double nrm = (x[c] - m) * s;
            double g = (double)go[c] * weight[c];
            di[c] += (float)(s * (g - sg - nrm * sgn));
        }
    }
    #pragma omp parallel for schedule(static) if (N * C >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t c = 0; c < C; c++) {
        double sw = 0.0, sb = 0.0;
        for (size_t r = 0; r < N; r++) {
            double go = dout[r * C + c];
            sw += go * ((inp[r * C + c] - (double)mean[r]) * rstd[r]);
            sb += go;
        }
        dweight[c] += (float)sw;
        dbias[c] += (float)sb;
    }
}
