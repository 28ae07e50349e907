/* `ampsim bench round`: rounding-kernel speed as ratios to memcpy measured in
 * the same run (one thread), on 64-byte aligned arrays. Times are the calling thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), best of N: on a loaded machine wall time mostly
 * measures the other processes. Ratios measured back to back are what we quote. */
#include "amp_gemm.h"
#include "amp_base.h"
#include "amp_bench.h"
#include "amp_format.h"
#include "amp_round.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 2^24 mixed magnitudes: log-uniform over 2^-30..2^10 with random signs, and
 * every 16th value an exact tie (midpoint between two neighbours) of `f`. */
static void fill_mixed(float *x, size_t n, const amp_format *f)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = amp_rand64(2024, 7, i);
        double e = -30.0 + 40.0 * (double)(r >> 11) * 0x1p-53;
        double v = exp2(e);
        if ((i & 15) == 15 && f) {
            /* midpoint above a value of f: round v into f, add half its ulp */
            amp_round_opts o = amp_round_defaults();
            o.mode = AMP_RND_TZ;
            o.flags = AMP_SATURATE;
            double lo = amp_round1(f, &o, v, 0, NULL);
            int ex = lo >= f->min_normal ? ilogb(lo) : f->emin;
            double t = lo + ldexp(1.0, ex - f->mbits - 1);
            if ((double)(float)t == t && t <= f->max_finite) v = t;
        }
        x[i] = (float)((r & 1) ? -v : v);
    }
}

/* best of `reps` wall times of fn */
#define BEST_OF(reps, best, stmt)                          \
    do {                                                   \
        best = INFINITY;                                   \
        for (int rep_ = 0; rep_ < (reps); rep_++) {        \
            double t0_ = now_s();                          \
            stmt;                                          \
            double t_ = now_s() - t0_;                     \
            if (t_ < best) best = t_;                      \
        }                                                  \
    } while (0)

void amp_bench_paths(FILE *out)
{
    fprintf(out, "rounding kernel paths: %s (AMP_SIMD=generic|avx512|gfni caps them); reproducible GEMM path: %s "
            "(AMP_GEMM_PATH=generic|avx2|avx512)\n", amp_simd_name(amp_simd_active()), amp_gemm_path_name(amp_gemm_path_active()));
}

int amp_bench_round(FILE *out, int csv, int reps, size_t n)
{
    /* 64-byte aligned, as ampsim's tensors are (amp_tensor data): unaligned
     * arrays make every 64-byte vector access straddle two cache lines */
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    float *x = aligned_alloc(64, bytes), *y = aligned_alloc(64, bytes);
    if (!x || !y) { free(x); free(y); return -1; }
    int saved = amp_get_threads();
    amp_set_threads(1);
    static const amp_rounding modes[] = { AMP_RND_NE, AMP_RND_NA, AMP_RND_TZ, AMP_RND_UP, AMP_RND_DN, AMP_RND_TO, AMP_RND_SR };
    if (csv) fprintf(out, "format,mode,stats,ns_per_elem,memcpy_ns_per_elem,ratio_to_memcpy\n");
    else {
        fprintf(out, "rounding %zu float32 values, 1 thread, thread CPU time, best of %d; ratio = memcpy time / kernel time (higher is faster)\n",
                n, reps);
        amp_bench_paths(out);
        fprintf(out, "%-9s %-4s %-5s %10s %10s %8s\n", "format", "mode", "stats", "ns/elem", "memcpy", "ratio");
    }
    for (int fi = 0; fi < AMP_FMT_COUNT; fi++) {
        const amp_format *f = amp_format_get((amp_format_id)fi);
        fill_mixed(x, n, f);
        for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
            for (int with_stats = 0; with_stats < 2; with_stats++) {
                amp_round_opts o = amp_round_defaults();
                o.mode = modes[mi];
                double tk, tm;
                amp_stats st;
                int r = modes[mi] == AMP_RND_NE ? reps : 1 + reps / 3;
                /* memcpy measured right next to the kernel so both see the same machine state */
                BEST_OF(r, tm, memcpy(y, x, n * sizeof *x));
                BEST_OF(r, tk, (amp_stats_init(&st), amp_round_f32(f, &o, x, y, n, with_stats ? &st : NULL)));
                double ns = 1e9 * tk / (double)n, nm = 1e9 * tm / (double)n;
                if (csv) fprintf(out, "%s,%s,%d,%.4f,%.4f,%.3f\n", f->name, amp_rounding_name(o.mode), with_stats, ns, nm, tm / tk);
                else fprintf(out, "%-9s %-4s %-5s %10.3f %10.3f %8.3f\n", f->name, amp_rounding_name(o.mode),
                             with_stats ? "on" : "off", ns, nm, tm / tk);
                fflush(out);
            }
        }
    }
    amp_set_threads(saved);
    free(x);
    free(y);
    return 0;
}
