/* General-shape forms of the transformer kernels' arithmetic: a row softmax
 * and a batched matrix product with double sums. They compute each output
 * element exactly as the attention kernels of layer_attention.c do, so a
 * model that forms its attention from separate matmul and softmax calls
 * (ampsim.torch under kernels="ampsim") gets the C GPT's bits. Masked
 * entries (-inf scores, zero probabilities) add exact zeros to the sums,
 * which leaves them unchanged. */
#include <math.h>
#include <stdlib.h>
#include "amp_base.h"
#include "amp_layers.h"
#include "amp_math.h"

/* The dot product of the attention scores: double, four partial sums. */
static double dot4(const float *a, const float *b, size_t n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += (double)a[i] * b[i];
        s1 += (double)a[i + 1] * b[i + 1];
        s2 += (double)a[i + 2] * b[i + 2];
        s3 += (double)a[i + 3] * b[i + 3];
    }
    for (; i < n; i++) s0 += (double)a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

void amp_softmax_rows_forward(float *prob, const float *x, size_t rows, size_t n)
{
    #pragma omp parallel for schedule(static) if (rows * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t r = 0; r < rows; r++) {
        const float *a = x + r * n;
        float *p = prob + r * n;
        float mx = -INFINITY;
        for (size_t j = 0; j < n; j++) if (a[j] > mx) mx = a[j];
        for (size_t j = 0; j < n; j++) p[j] = a[j] - mx;
        amp_expf_n(p, p, n);
        double sum = 0.0;
        for (size_t j = 0; j < n; j++) sum += p[j];
        for (size_t j = 0; j < n; j++) p[j] = (float)(p[j] / sum);
    }
}

void amp_softmax_rows_backward(float *dx, const float *dprob, const float *prob, size_t rows, size_t n)
{
    #pragma omp parallel for schedule(static) if (rows * n >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t r = 0; r < rows; r++) {
        size_t o = r * n;
        double s = 0.0;
        for (size_t j = 0; j < n; j++) s += (double)prob[o + j] * dprob[o + j];
        for (size_t j = 0; j < n; j++)
            dx[o + j] += (float)((double)prob[o + j] * ((double)dprob[o + j] - s));
    }
}

/* out[p] (M,N) = a[p] (M,K) @ b[p]: b_rows: b[p] is (N,K) and each element
 * is dot4 of two rows; else b[p] is (K,N) and each element is summed in
 * double over k in increasing order. */
void amp_bmm_f64(float *out, const float *a, const float *b, size_t P, size_t M, size_t N, size_t K, int b_rows)
{
    #pragma omp parallel for schedule(static) if (P * M * N * K >= AMP_PAR_MIN) num_threads(amp_get_threads())
    for (size_t pm = 0; pm < P * M; pm++) {
        size_t p = pm / M;
        const float *ai = a + pm * K;
        const float *bp = b + p * N * K;
        float *o = out + pm * N;
        if (b_rows) {
            for (size_t j = 0; j < N; j++) o[j] = (float)dot4(ai, bp + j * K, K);
            continue;
        }
        double *acc = calloc(N ? N : 1, sizeof *acc);
        AMP_ASSERT(acc != NULL);
        for (size_t k = 0; k < K; k++) {
            double ak = ai[k];
            const float *bk = bp + k * N;
            for (size_t j = 0; j < N; j++) acc[j] += ak * bk[j];
        }
        for (size_t j = 0; j < N; j++) o[j] = (float)acc[j];
        free(acc);
    }
}
