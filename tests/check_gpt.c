/* The GPT model (sim/model_gpt.c) in the training framework.
 *
 * - Against PyTorch: tests/ref/gpt_torch.py trains nanoGPT's model (float32,
 *   AdamW) from the weights it saved (tests/ref/gpt_tiny_init.safetensors) on
 *   the batches ampsim draws; every per-step loss and validation loss of
 *   ampsim's fp32 run must be within 1e-4 of tests/ref/gpt_tiny_losses.csv,
 *   through the library and through `ampsim train --model gpt` (metrics.csv;
 *   tensors.csv must hold the attention scores and probabilities).
 * - Whole-model gradient check: the weight gradients of one backward agree
 *   with central differences of the loss (fp32 policy, O(1) weights).
 * - Autocast semantics: which tensors exist in which format per policy.
 * - Logging: the attention scores and probabilities carry statistics.
 * - Same bytes with 1 and 2 threads. Bad sizes are AMP_EINVAL. */
#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ampsim.h"

static char g_path[4096];

static const char *src_path(const char *rel)
{
    const char *src = getenv("AMP_SRCDIR");
    snprintf(g_path, sizeof g_path, "%s/%s", src ? src : ".", rel);
    return g_path;
}

static amp_austen g_text;

static void load_text(void)
{
    ck_assert_msg(amp_austen_load(&g_text, src_path("datasets/austen.txt")) == AMP_OK, "%s", amp_errmsg());
}

static void free_text(void) { amp_austen_free(&g_text); }

static void make_model(amp_model *m, const char *prec, int B, int T, int C, int L, int NH)
{
    amp_policy pol;
    ck_assert_int_eq(amp_policy_preset(prec, &pol), AMP_OK);
    ck_assert_msg(amp_gpt_create(m, &pol, B, T, C, L, NH, 1) == AMP_OK, "%s", amp_errmsg());
}

/* One training step on batch `step` of the training text. */
static float train_step(amp_model *m, amp_optim *opt, int64_t step, int B, int T, unsigned roles)
{
    int32_t *x = malloc((size_t)B * T * sizeof *x), *y = malloc((size_t)B * T * sizeof *y);
    ck_assert_int_eq(amp_austen_batch(&g_text, AMP_SPLIT_TRAIN, 1, (uint64_t)step, (size_t)B, (size_t)T, x, y), AMP_OK);
    amp_batch b = { .B = B, .D = T, .x = NULL, .tok = x, .y = y };
    amp_step_info info;
    amp_scaler_result res;
    ck_assert_msg(amp_train_step(m, opt, NULL, &b, step, roles, &info, &res) == AMP_OK, "%s", amp_errmsg());
    free(x);
    free(y);
    return info.loss;
}

/* ---- PyTorch reference -------------------------------------------------------- */
enum { REF_STEPS = 40 };
static double g_ref[REF_STEPS], g_ref_val[REF_STEPS];

/* Reads tests/ref/gpt_tiny_losses.csv (step,loss,val_loss; val_loss empty
 * where not evaluated -> NaN). */
static void read_reference(void)
{
    FILE *f = fopen(src_path("tests/ref/gpt_tiny_losses.csv"), "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "step,loss,val_loss\n");
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        ck_assert_int_lt(rows, REF_STEPS);
        ck_assert_int_eq((int)strtol(p, &p, 10), rows);
        ck_assert_int_eq(*p, ',');
        g_ref[rows] = strtod(p + 1, &p);
        ck_assert_int_eq(*p, ',');
        g_ref_val[rows] = p[1] != '\n' && p[1] != 0 ? strtod(p + 1, NULL) : NAN;
        rows++;
    }
    fclose(f);
    ck_assert_int_eq(rows, REF_STEPS);
}

START_TEST(test_torch_reference_cli)
{
    const char *bin = getenv("AMPSIM");
    ck_assert_msg(bin != NULL, "AMPSIM not set");
    read_reference();
    char dir[] = "/tmp/check_gpt.XXXXXX", cmd[8192], path[4200];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char *src = getenv("AMP_SRCDIR") ? getenv("AMP_SRCDIR") : ".";
    snprintf(cmd, sizeof cmd,
             "'%s' train --model gpt --data '%s/datasets/austen.txt' --init '%s/tests/ref/gpt_tiny_init.safetensors' "
             "--layers 2 --heads 4 --dim 32 --ctx 16 --batch 4 --steps 40 --optim adamw --lr 0.001 "
             "--eval-every 10 --eval-batches 2 --log-every 20 --hist-every 0 --out '%s/run' 2>'%s/err'",
             bin, src, src, dir, dir);
    if (system(cmd) != 0) {
        char rm[4200];
        snprintf(path, sizeof path, "%s/err", dir);
        char *err = NULL;
        size_t elen;
        int have = amp_read_file(path, 1 << 16, &err, &elen) == AMP_OK;
        snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
        ck_assert_int_eq(system(rm), 0);
        ck_abort_msg("ampsim train --model gpt failed: %s: %s", cmd, have ? err : "");
    }
    snprintf(path, sizeof path, "%s/run/metrics.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    int col_loss = -1, col_val = -1, c = 0;
    for (char *tok = strtok(line, ",\n"); tok; tok = strtok(NULL, ",\n"), c++) {
        if (!strcmp(tok, "loss")) col_loss = c;
        if (!strcmp(tok, "val_loss")) col_val = c;
    }
    ck_assert_int_ge(col_loss, 0);
    ck_assert_int_ge(col_val, 0);
    int rows = 0, vals = 0;
    while (fgets(line, sizeof line, f)) {
        /* split keeping empty cells */
        char *cell[32];
        int n = 0;
        for (char *p = line; n < 32;) {
            cell[n++] = p;
            char *e = strpbrk(p, ",\n");
            if (!e) break;
            int last = *e == '\n';
            *e = 0;
            p = e + 1;
            if (last) break;
        }
        ck_assert_int_gt(n, col_val);
        ck_assert_int_lt(rows, REF_STEPS);
        double loss = strtod(cell[col_loss], NULL);
        ck_assert_msg(fabs(loss - g_ref[rows]) <= 1e-4, "metrics.csv step %d: loss %.9g, PyTorch %.9g",
                      rows, loss, g_ref[rows]);
        if (!isnan(g_ref_val[rows])) {
            ck_assert_msg(*cell[col_val], "metrics.csv step %d: no val_loss", rows);
            double v = strtod(cell[col_val], NULL);
            ck_assert_msg(fabs(v - g_ref_val[rows]) <= 1e-4, "metrics.csv step %d: val_loss %.9g, PyTorch %.9g",
                          rows, v, g_ref_val[rows]);
            vals++;
        } else {
            ck_assert_msg(*cell[col_val] == 0, "metrics.csv step %d: unexpected val_loss", rows);
        }
        rows++;
    }
    fclose(f);
    ck_assert_int_eq(rows, REF_STEPS);
    ck_assert_int_eq(vals, 4);
    /* the attention scores and probabilities of both blocks are logged */
    snprintf(path, sizeof path, "%s/run/tensors.csv", dir);
    char *text;
    size_t len;
    ck_assert_int_eq(amp_read_file(path, 1 << 26, &text, &len), AMP_OK);
    const char *want[] = { "\n0,transformer.h.0.attn.att,act,fp32,", "\n0,transformer.h.1.attn.prob,act,fp32,",
                           "\n20,transformer.h.1.attn.att.grad,act_grad,fp32,", "\n20,transformer.wte.weight.grad," };
    for (int i = 0; i < 4; i++) ck_assert_msg(strstr(text, want[i]) != NULL, "tensors.csv lacks %s", want[i] + 1);
    free(text);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_torch_reference)
{
    /* tests/ref/gpt_torch.py: L 2, NH 4, C 32, T 16, B 4, AdamW lr 1e-3, 40 steps,
     * validation (2 batches) every 10 steps before the step's update */
    enum { L = 2, NH = 4, C = 32, T = 16, B = 4 };
    read_reference();
    amp_model m;
    make_model(&m, "fp32", B, T, C, L, NH);
    ck_assert_msg(amp_model_load(&m, src_path("tests/ref/gpt_tiny_init.safetensors")) == AMP_OK, "%s", amp_errmsg());
    amp_optim opt;
    amp_optim_defaults(&opt, AMP_OPT_ADAMW, 1e-3f);
    ck_assert_int_eq(amp_optim_attach(&opt, &m), AMP_OK);
    int vals = 0;
    double worst = 0, worst_val = 0;
    for (int step = 0; step < REF_STEPS; step++) {
        if (!isnan(g_ref_val[step])) {
            double v;
            ck_assert_int_eq(amp_gpt_eval(&m, &g_text, 1, step, 2, &v), AMP_OK);
            ck_assert_msg(fabs(v - g_ref_val[step]) <= 1e-4, "step %d: val loss %.9g, PyTorch %.9g",
                          step, v, g_ref_val[step]);
            worst_val = fmax(worst_val, fabs(v - g_ref_val[step]));
            vals++;
        }
        float loss = train_step(&m, &opt, step, B, T, 0);
        ck_assert_msg(fabs(loss - g_ref[step]) <= 1e-4, "step %d: loss %.9g, PyTorch %.9g", step, loss, g_ref[step]);
        worst = fmax(worst, fabs(loss - g_ref[step]));
    }
    ck_assert_int_eq(vals, 4);
    fprintf(stderr, "gpt vs PyTorch: %d steps, max |loss diff| %.3g, max |val loss diff| %.3g\n",
            REF_STEPS, worst, worst_val);
    amp_model_free(&m);
}
END_TEST

/* ---- whole-model gradient check --------------------------------------------------- */
static float model_loss(amp_model *m, const amp_batch *b)
{
    float loss;
    amp_tensors_begin_step(&m->reg, 0, 0);
    ck_assert_int_eq(amp_model_cast_weights(m), AMP_OK);
    ck_assert_int_eq(m->forward(m, b, &loss), AMP_OK);
    return loss;
}

START_TEST(test_model_gradients)
{
    enum { B = 2, T = 5, C = 8, L = 2, NH = 2 };
    amp_model m;
    make_model(&m, "fp32", B, T, C, L, NH);
    /* O(1) weights so that gradients are O(0.01..1) and float32 losses resolve them */
    for (int i = 0; i < m.reg.n; i++) {
        amp_tensor *w = m.reg.t[i];
        if (w->role != AMP_ROLE_WEIGHT) continue;
        ck_assert_ptr_null(w->master);            /* fp32: no master */
        for (size_t k = 0; k < w->n; k++)
            w->data[k] = (float)(0.5 * (2.0 * amp_rand_uniform(7, (uint64_t)i, k) - 1.0)) +
                         (strstr(w->name, "ln_") && strstr(w->name, ".weight") ? 1.0f : 0.0f);
    }
    int32_t x[B * T], y[B * T];
    ck_assert_int_eq(amp_austen_batch(&g_text, AMP_SPLIT_TRAIN, 3, 0, B, T, x, y), AMP_OK);
    amp_batch b = { .B = B, .D = T, .x = NULL, .tok = x, .y = y };
    model_loss(&m, &b);
    m.reg.phase = AMP_PHASE_BACKWARD;
    ck_assert_int_eq(m.backward(&m, &b, 1.0f), AMP_OK);
    int checked = 0;
    for (int i = 0; i < m.reg.n; i++) {
        amp_tensor *w = m.reg.t[i];
        if (w->role != AMP_ROLE_WEIGHT) continue;
        float *g = malloc(w->n * sizeof(float));
        memcpy(g, w->grad->data, w->n * sizeof(float));
        /* three elements per weight; for wte the rows of tokens that occur */
        for (int r = 0; r < 3; r++) {
            size_t k = strstr(w->name, "wte") ? (size_t)x[r] * C + (size_t)r : (size_t)(r * 7919) % w->n;
            float w0 = w->data[k];
            const float h = 0x1p-6f;
            w->data[k] = w0 + h;
            double lp = model_loss(&m, &b);
            w->data[k] = w0 - h;
            double lm = model_loss(&m, &b);
            w->data[k] = w0;
            double fd = (lp - lm) / (2.0 * h);
            ck_assert_msg(fabs(fd - g[k]) <= 2e-3 + 2e-2 * fabs(g[k]),
                          "%s[%zu]: finite difference %.7g, backward %.7g", w->name, k, fd, g[k]);
            checked++;
        }
        free(g);
    }
    ck_assert_int_eq(checked, 3 * (2 + L * 12 + 2));
    amp_model_free(&m);
}
END_TEST

/* ---- autocast semantics ------------------------------------------------------------ */
static const char *fmt_of(const amp_model *m, const char *name)
{
    const amp_tensor *t = amp_tensors_find(&m->reg, name);
    return t ? t->fmt.name : "(none)";
}

START_TEST(test_policy_formats)
{
    amp_model m;
    /* CUDA amp: softmax and LayerNorm forced to FP32, the bmm sees an fp16 copy of
     * the probabilities; residual stream FP32 (type promotion); embedding FP32 */
    make_model(&m, "fp16-amp", 2, 4, 8, 1, 2);
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.attn.att"), "fp16");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.attn.prob"), "fp32");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.attn.prob.input"), "fp16");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.attn.prob.input.grad"), "fp16");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.ln_1.out"), "fp32");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.attn.c_attn.out"), "fp16");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.res_1.out"), "fp32");
    ck_assert_str_eq(fmt_of(&m, "transformer.emb.out"), "fp32");
    ck_assert_str_eq(fmt_of(&m, "transformer.wte.weight"), "fp16");      /* lm_head's GEMM operand */
    ck_assert_str_eq(fmt_of(&m, "transformer.wte.weight.grad"), "fp32");
    ck_assert_str_eq(fmt_of(&m, "lm_head.weight.grad"), "fp16");
    ck_assert_str_eq(fmt_of(&m, "transformer.wpe.weight"), "fp32");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.ln_1.weight"), "fp32");
    ck_assert_str_eq(fmt_of(&m, "lm_head.out"), "fp16");
    const amp_tensor *att = amp_tensors_find(&m.reg, "transformer.h.0.attn.att");
    ck_assert_int_eq(att->ndim, 3);
    ck_assert_uint_eq(att->shape[0], 2);
    ck_assert_uint_eq(att->shape[1], 2);
    ck_assert_uint_eq(att->shape[2], 4 * 5 / 2);
    amp_model_free(&m);
    /* CPU bf16 autocast: softmax not forced, so the probabilities are bf16 and
     * the bmm uses them directly */
    make_model(&m, "bf16-amp-cpu", 2, 4, 8, 1, 2);
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.attn.prob"), "bf16");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.attn.prob.input"), "(none)");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.ln_1.out"), "fp32");    /* its input is FP32 */
    amp_model_free(&m);
    /* pure fp16: everything fp16, no masters */
    make_model(&m, "fp16-pure", 2, 4, 8, 1, 2);
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.res_1.out"), "fp16");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.ln_1.weight"), "fp16");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.attn.prob"), "fp16");
    ck_assert_str_eq(fmt_of(&m, "transformer.wte.weight.master"), "(none)");
    amp_model_free(&m);
    /* fp8-hybrid: FP8 GEMM operands, attention kept in the activation format */
    make_model(&m, "fp8-hybrid", 2, 4, 8, 1, 2);
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.attn.c_attn.weight"), "e4m3");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.attn.att"), "bf16");
    ck_assert_str_eq(fmt_of(&m, "transformer.h.0.attn.c_attn.out.input"), "(none)");
    amp_model_free(&m);
}
END_TEST

/* ---- logging and the rounding of the probabilities ----------------------------------- */
START_TEST(test_attention_logged)
{
    enum { B = 2, T = 8, C = 16, NH = 2 };
    amp_model m;
    make_model(&m, "bf16-amp-cpu", B, T, C, 1, NH);
    amp_optim opt;
    amp_optim_defaults(&opt, AMP_OPT_SGD, 0.1f);
    ck_assert_int_eq(amp_optim_attach(&opt, &m), AMP_OK);
    train_step(&m, &opt, 0, B, T, AMP_ROLES_LOGGED);
    const char *names[] = { "transformer.h.0.attn.att", "transformer.h.0.attn.prob",
                            "transformer.h.0.attn.att.grad", "transformer.h.0.attn.prob.grad" };
    for (int i = 0; i < 4; i++) {
        const amp_tensor *t = amp_tensors_find(&m.reg, names[i]);
        ck_assert_ptr_nonnull(t);
        ck_assert_msg(t->log && t->stats_valid && t->stats, "%s has no statistics", names[i]);
        ck_assert_uint_eq(t->stats->n, (uint64_t)B * NH * T * (T + 1) / 2);
    }
    /* the probabilities are bf16 values (the softmax ran in bf16), each row
     * sums to 1 within bf16 rounding */
    const amp_tensor *p = amp_tensors_find(&m.reg, "transformer.h.0.attn.prob");
    const amp_format *bf = amp_format_get(AMP_FMT_BF16);
    for (size_t i = 0; i < p->n; i++) ck_assert(amp_encode1(bf, p->data[i]) >= 0);
    for (int bh = 0; bh < B * NH; bh++)
        for (int t = 0; t < T; t++) {
            double s = 0;
            for (int u = 0; u <= t; u++) s += p->data[(size_t)bh * T * (T + 1) / 2 + t * (t + 1) / 2 + u];
            ck_assert_double_eq_tol(s, 1.0, (t + 1) * 0x1p-8);
        }
    amp_model_free(&m);
}
END_TEST

/* ---- determinism ----------------------------------------------------------------------- */
START_TEST(test_threads)
{
    /* big enough for every kernel to take its parallel path (AMP_PAR_MIN) */
    enum { B = 8, T = 64, C = 128, L = 1, NH = 4 };
    float loss[2][3];
    float *w[2];
    for (int r = 0; r < 2; r++) {
        amp_set_threads(r + 1);
        amp_model m;
        make_model(&m, "fp16-amp", B, T, C, L, NH);
        amp_optim opt;
        amp_optim_defaults(&opt, AMP_OPT_ADAMW, 1e-3f);
        ck_assert_int_eq(amp_optim_attach(&opt, &m), AMP_OK);
        for (int s = 0; s < 3; s++) loss[r][s] = train_step(&m, &opt, s, B, T, AMP_ROLES_LOGGED);
        const amp_tensor *t = amp_tensors_find(&m.reg, "transformer.h.0.attn.c_attn.weight.master");
        w[r] = malloc(t->n * sizeof(float));
        memcpy(w[r], t->data, t->n * sizeof(float));
        amp_model_free(&m);
    }
    amp_set_threads(0);
    ck_assert_mem_eq(loss[0], loss[1], sizeof loss[0]);
    ck_assert_mem_eq(w[0], w[1], 3 * C * C * sizeof(float));
    free(w[0]);
    free(w[1]);
}
END_TEST

/* Every precision policy starts from the same initial weights (the init
 * stream is keyed by the weight's name, not its policy-dependent registry id):
 * the master (or weight) values of every WEIGHT tensor agree bit for bit. */
START_TEST(test_same_init_every_policy)
{
    static const char *const precs[] = { "fp16-amp", "bf16-amp-cpu", "fp8-hybrid", "fp16-pure" };
    amp_model ref;
    make_model(&ref, "fp32", 2, 16, 32, 2, 2);
    for (size_t k = 0; k < sizeof precs / sizeof precs[0]; k++) {
        amp_model m;
        make_model(&m, precs[k], 2, 16, 32, 2, 2);
        int compared = 0;
        for (int i = 0; i < ref.reg.n; i++) {
            amp_tensor *a = ref.reg.t[i];
            if (a->role != AMP_ROLE_WEIGHT) continue;
            amp_tensor *b = NULL;
            for (int j = 0; j < m.reg.n; j++)
                if (m.reg.t[j]->role == AMP_ROLE_WEIGHT && !strcmp(m.reg.t[j]->name, a->name)) b = m.reg.t[j];
            ck_assert_msg(b != NULL, "%s: no %s", precs[k], a->name);
            const float *va = a->master ? a->master->data : a->data;
            const float *vb = b->master ? b->master->data : b->data;
            if (!b->master) continue;   /* pure policies keep weights in the format: rounded init */
            ck_assert_msg(!memcmp(va, vb, a->n * sizeof(float)), "%s: %s starts from other values", precs[k], a->name);
            compared++;
        }
        if (strcmp(precs[k], "fp16-pure")) ck_assert_int_gt(compared, 5);
        amp_model_free(&m);
    }
    amp_model_free(&ref);
}
END_TEST

/* Activation gradients inside blocks 1.. live in block 0's storage (each is
 * dead once its block's backward is done), and so do the three activations no
 * backward reads; the residual stream's gradients and the other activations
 * keep their own. (That the gradients stay right is
 * test_model_gradients, on two blocks; the bytes of runs, check_repro.) */
START_TEST(test_block_grads_shared)
{
    amp_model m;
    make_model(&m, "fp16-amp", 2, 8, 16, 3, 2);
    int shared = 0;
    for (int i = 0; i < m.reg.n; i++) {
        const amp_tensor *t = m.reg.t[i];
        int l, len = 0;
        if (sscanf(t->name, "transformer.h.%d.%n", &l, &len) != 1 || len == 0) {
            ck_assert_int_eq(t->borrowed, 0);
            continue;
        }
        char name[AMP_TENSOR_NAME + 16];
        snprintf(name, sizeof name, "transformer.h.0.%s", t->name + len);
        const amp_tensor *t0 = amp_tensors_find(&m.reg, name);
        ck_assert_ptr_nonnull(t0);
        const char *loc = t->name + len;
        int expect = l > 0 && (t->role == AMP_ROLE_ACT_GRAD ? strcmp(loc, "res_2.out.grad") != 0
                               : !strcmp(loc, "attn.att") || !strcmp(loc, "attn.c_proj.out") || !strcmp(loc, "mlp.c_proj.out"));
        ck_assert_msg((t->data == t0->data) == (expect || l == 0), "%s: shared %d, expected %d", t->name,
                      t->data == t0->data, expect);
        ck_assert_int_eq(t->borrowed, expect);
        shared += expect;
    }
    ck_assert_int_ge(shared, 2 * (12 + 3));      /* every internal gradient of blocks 1 and 2, 3 activations */
    amp_tensor *a = amp_tensors_find(&m.reg, "transformer.h.0.mlp.c_fc.out.grad");
    amp_tensor *b = amp_tensors_find(&m.reg, "transformer.h.0.attn.c_proj.out.grad");
    ck_assert_int_eq(amp_tensor_share(b, a), AMP_EINVAL);   /* sizes differ */
    amp_model_free(&m);
}
END_TEST

START_TEST(test_bad_sizes)
{
    amp_policy pol;
    amp_model m;
    ck_assert_int_eq(amp_policy_preset("fp32", &pol), AMP_OK);
    ck_assert_int_eq(amp_gpt_create(&m, &pol, 2, 8, 30, 1, 4, 1), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "--heads"));
    ck_assert_int_eq(amp_gpt_create(&m, &pol, 2, 8, 32, 0, 4, 1), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "--layers"));
    ck_assert_int_eq(amp_gpt_create(&m, &pol, 2, 0, 32, 1, 4, 1), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "--ctx"));
    /* an init file of another model names the first missing tensor */
    make_model(&m, "fp32", 2, 8, 32, 1, 4);
    ck_assert_int_eq(amp_model_load(&m, src_path("tests/ref/gpt_tiny_init.safetensors")), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_errmsg(), "transformer.wpe.weight"));
    amp_model_free(&m);
}
END_TEST

int main(void)
{
    amp_gemm_init();
    Suite *su = suite_create("gpt");
    TCase *tc = tcase_create("gpt");
    tcase_add_unchecked_fixture(tc, load_text, free_text);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_torch_reference);
    tcase_add_test(tc, test_torch_reference_cli);
    tcase_add_test(tc, test_model_gradients);
    tcase_add_test(tc, test_policy_formats);
    tcase_add_test(tc, test_attention_logged);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_bad_sizes);
    tcase_add_test(tc, test_block_grads_shared);
    tcase_add_test(tc, test_same_init_every_policy);
    suite_add_tcase(su, tc);
    return amp_check_failures(su) ? 1 : 0;
}
