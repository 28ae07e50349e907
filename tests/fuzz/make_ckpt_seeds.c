/* Writes the committed seed corpus of fuzz_checkpoint (tests/fuzz/corpus_checkpoint):
 * real checkpoints made by the library, matching the harness's registry
 * (w [2,2] fp16 weight, w.master [2,2] fp32, b [3] fp16 weight) and states.
 *   make BUILD=build && cc -std=c11 -D_GNU_SOURCE -Isim -Ianalysis -Ireports \
 *     tests/fuzz/make_ckpt_seeds.c build/libampsim.a $(pkg-config --libs mpfr gmp openblas libcjson zlib) \
 *     -fopenmp -lm -o /tmp/make_ckpt_seeds && /tmp/make_ckpt_seeds tests/fuzz/corpus_checkpoint */
#include "ampsim.h"

#include <stdio.h>
#include <string.h>

static int check(amp_status s)
{
    if (s) { fprintf(stderr, "make_ckpt_seeds: %s\n", amp_errmsg()); return 1; }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) { fprintf(stderr, "usage: make_ckpt_seeds DIR\n"); return 2; }
    char p[4096];
    amp_format f32, f16;
    amp_format_parse("fp32", &f32);
    amp_format_parse("fp16", &f16);
    amp_tensors r;
    amp_tensors_init(&r, 1, AMP_RND_NE, 0);
    size_t s1[2] = { 2, 2 }, s2[1] = { 3 };
    amp_tensor *t;
    if (check(amp_tensors_add(&r, "w", AMP_ROLE_WEIGHT, &f16, 2, s1, &t))) return 1;
    if (check(amp_tensors_add(&r, "w.master", AMP_ROLE_MASTER, &f32, 2, s1, &t))) return 1;
    if (check(amp_tensors_add(&r, "b", AMP_ROLE_WEIGHT, &f16, 1, s2, &t))) return 1;
    for (int i = 0; i < r.n; i++)
        for (size_t k = 0; k < r.t[i]->n; k++) r.t[i]->data[k] = 0.5f * (float)(i + (int)k);
    amp_scaler sc, ad;
    amp_scaler_init_str(&sc, "torch:init=1024");
    amp_scaler_init_str(&ad, "adaptive");
    amp_scaler_result res;
    amp_scaler_obs obs = { .found_inf = 1 };
    amp_scaler_update(&sc, &obs, &res);
    amp_fp8_scaler f8;
    amp_fp8_init_str(&f8, "delayed:history=4");
    float su, sa;
    amp_fp8_observe_amax(&f8, 1, amp_format_get(AMP_FMT_E4M3), 3.0f, &su, &sa);
    amp_optim o;
    amp_optim_defaults(&o, AMP_OPT_ADAMW, 0.001f);
    o.t = 5;

    amp_ckpt_writer w;
    /* full: everything the harness reads */
    snprintf(p, sizeof p, "%s/full.ckpt", argv[1]);
    if (check(amp_ckpt_create(&w, p))) return 1;
    if (check(amp_ckpt_put_u64(&w, "step", 7)) || check(amp_ckpt_put_tensors(&w, &r, AMP_CKPT_ROLES_ALL)) ||
        check(amp_ckpt_put_scaler(&w, &sc)) || check(amp_ckpt_put_fp8(&w, &f8)) ||
        check(amp_ckpt_put_optim(&w, &o)) || check(amp_ckpt_commit(&w))) return 1;
    /* adaptive scaler state (per-tensor exponents) and weights only */
    snprintf(p, sizeof p, "%s/adaptive.ckpt", argv[1]);
    if (check(amp_ckpt_create(&w, p))) return 1;
    if (check(amp_ckpt_put_scaler(&w, &ad)) || check(amp_ckpt_put_tensors(&w, &r, 1u << AMP_ROLE_WEIGHT)) ||
        check(amp_ckpt_commit(&w))) return 1;
    /* empty and a plain blob */
    snprintf(p, sizeof p, "%s/empty.ckpt", argv[1]);
    if (check(amp_ckpt_create(&w, p)) || check(amp_ckpt_commit(&w))) return 1;
    snprintf(p, sizeof p, "%s/blob.ckpt", argv[1]);
    if (check(amp_ckpt_create(&w, p)) || check(amp_ckpt_put(&w, "log/metrics.csv", "\x10\0\0\0\0\0\0\0", 8)) ||
        check(amp_ckpt_commit(&w))) return 1;
    amp_tensors_free(&r);
    amp_scaler_free(&sc);
    amp_scaler_free(&ad);
    amp_fp8_free(&f8);
    return 0;
}
