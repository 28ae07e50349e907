/* ampsim train: train a model in an emulated precision policy (docs/training.md, docs/design.md). */
#include "cli.h"
#include <stdlib.h>
#include <stdio.h>
#include <string.h>


static void help(void)
{
    printf(
        "usage: ampsim train [options]\n"
        "  --model mlp|gpt         model (default mlp: D-H-..-H-C, ReLU, D features and C classes of the\n"
        "                          data (digits: 64, 10); gpt: byte-level GPT)\n"
        "  --data digits|austen|PATH  data set (default: digits for mlp, austen for gpt); for mlp PATH is\n"
        "                          a CSV (.gz ok) of float features and an integer label per row (label\n"
        "                          column named label/y/target/class in a header line, else the last), or\n"
        "                          FEATURES.npy,LABELS.npy; any width, any number of classes\n"
        "  --precision P           policy preset: %s (default fp32)\n"
        "  --policy FILE.json      policy from JSON (roles, gemm, fp32_ops, rounding, update)\n"
        "  --scaler SPEC           loss scaler (default none; static:S, torch, apex, ...)\n"
        "  --steps N               training steps (default 200)\n"
        "  --batch B               batch size (default 32)\n"
        "  --lr X                  learning rate (default 0.1)\n"
        "  --optim sgd|momentum|adamw   optimizer (default sgd)\n"
        "  --seed S                seed of init, shuffling and stochastic rounding (default 1)\n"
        "  --init FILE.safetensors start from these weights (fc1.weight [H,64], fc1.bias [H], ...)\n"
        "  --save FILE.safetensors write the final weights the same way\n"
        "  --save-grads FILE.safetensors  write the first step's FP32 weight gradients (unscaled,\n"
        "                          before the update) the same way\n"
        "  --no-shuffle            batch s = rows (B*s + j) mod N (file order)\n"
        "  --log-every K           tensors.csv every K steps (default 10; 0 = never)\n"
        "  --hist-every K          hist.csv every K steps (default 50; 0 = never)\n"
        "  --gemm reproducible|blas  FP32 GEMM kernel: ampsim's fixed order, the same bits on every\n"
        "                          CPU (default), or OpenBLAS sgemm (faster; its order depends on the CPU)\n"
        "  --threads T             threads (results do not depend on it; default 1)\n"
        "  --hidden H              hidden width (default 32)\n"
        "  --act relu|gelu         mlp activation (default relu)\n"
        "  --layers L              mlp: linear layers (default 2); gpt: blocks (default 4)\n"
        "  --heads H --dim C --ctx T   gpt: heads (4), width (128), context (64)\n"
        "  --eval-every K          gpt: validation loss every K steps (default 0 = off)\n"
        "  --eval-batches N        gpt: validation batches per evaluation (default 8)\n"
        "  --out DIR               run directory (default ampsim-run)\n"
        "  --what-if [SPEC;SPEC..] shadow loss scalers on the run's gradients -> DIR/whatif.csv\n"
        "                          (default: every loss scaler; the run itself is unchanged)\n"
        "  --what-if-format FMT    the shadows round the gradients into FMT (default: wgrad)\n"
        "  --checkpoint-every K    write DIR/checkpoint.bin every K steps (default 0 = never)\n"
        "  --on-nonfinite P        a step whose loss or weight gradients are not finite: continue (the\n"
        "                          loss scaler alone decides, as in the frameworks; default), skip (never\n"
        "                          apply it), stop (end the run, exit 1; also when the loss scale reaches 0).\n"
        "                          Each case is an event in events.csv. NaN/Inf in the data is exit 2 at load.\n"
        "  --resume                continue from DIR/checkpoint.bin (same options; bit-identical)\n"
        "  --force                 overwrite a finished run in DIR (without it: exit 2)\n"
        "  --dp R                  emulate R data-parallel ranks (default 1): --batch stays the global\n"
        "                          batch (divisible by R), rank r gets rows [r*B/R, (r+1)*B/R)\n"
        "  --allreduce ring|tree   gradient all-reduce algorithm (--dp > 1; default ring)\n"
        "  --allreduce-format F    format of every partial sum (--dp > 1; default fp32)\n"
        "  --allreduce-scale none|amax|pow2|mx  scaling before the reduction: per tensor, or mx: a power of\n"
        "                          two per block of 32 values (default none)\n"
        "Writes DIR/config.json, metrics.csv, tensors.csv, hist.csv, events.csv, summary.json.\n"
        "Exit 1 when the run failed: stopped (--on-nonfinite stop, a scaler at its minimum) or its loss\n"
        "ended not finite (one line names the first non-finite step, tensor and phase; the logs are complete).\n",
        amp_policy_names());
}

static amp_status parse_nonfinite(const char *v, void *dst) { return amp_nonfinite_parse(v, dst); }

int amp_cli_train(int argc, char **argv)
{
    amp_train_opts o;
    amp_train_opts_defaults(&o);
    int no_shuffle = 0;
    const amp_cli_opt opts[] = {
        { "--model", AMP_OPT_STR, &o.model, 0, 0, NULL },
        { "--data", AMP_OPT_STR, &o.data, 0, 0, NULL },
        { "--precision", AMP_OPT_STR, &o.precision, 0, 0, NULL },
        { "--policy", AMP_OPT_STR, &o.policy_file, 0, 0, NULL },
        { "--gemm", AMP_OPT_STR, &o.gemm, 0, 0, NULL },
        { "--scaler", AMP_OPT_STR, &o.scaler, 0, 0, NULL },
        { "--optim", AMP_OPT_STR, &o.optim, 0, 0, NULL },
        { "--init", AMP_OPT_STR, &o.init, 0, 0, NULL },
        { "--save", AMP_OPT_STR, &o.save, 0, 0, NULL },
        { "--save-grads", AMP_OPT_STR, &o.save_grads, 0, 0, NULL },
        { "--out", AMP_OPT_STR, &o.out, 0, 0, NULL },
        { "--act", AMP_OPT_STR, &o.act, 0, 0, NULL },
        { "--what-if", AMP_OPT_OPTSTR, &o.whatif, 0, 0, NULL },
        { "--what-if-format", AMP_OPT_STR, &o.whatif_format, 0, 0, NULL },
        { "--allreduce", AMP_OPT_STR, &o.allreduce, 0, 0, NULL },
        { "--allreduce-format", AMP_OPT_STR, &o.allreduce_format, 0, 0, NULL },
        { "--allreduce-scale", AMP_OPT_STR, &o.allreduce_scale, 0, 0, NULL },
        { "--no-shuffle", AMP_OPT_FLAG, &no_shuffle, 1, 0, NULL },
        { "--resume", AMP_OPT_FLAG, &o.resume, 1, 0, NULL },
        { "--force", AMP_OPT_FLAG, &o.force, 1, 0, NULL },
        { "--seed", AMP_OPT_U64, &o.seed, 0, 0, NULL },
        { "--lr", AMP_OPT_DOUBLE, &o.lr, 0, 1e30, NULL },
        { "--steps", AMP_OPT_I64, &o.steps, 1, 1e9, NULL },
        { "--batch", AMP_OPT_INT, &o.batch, 1, 1 << 20, NULL },
        { "--log-every", AMP_OPT_I64, &o.log_every, 0, 1e9, NULL },
        { "--hist-every", AMP_OPT_I64, &o.hist_every, 0, 1e9, NULL },
        { "--checkpoint-every", AMP_OPT_I64, &o.checkpoint_every, 0, 1e9, NULL },
        { "--eval-every", AMP_OPT_I64, &o.eval_every, 0, 1e9, NULL },
        { "--threads", AMP_OPT_INT, &o.threads, 1, 1024, NULL },
        { "--dp", AMP_OPT_INT, &o.dp, 1, 1024, NULL },
        { "--hidden", AMP_OPT_INT, &o.hidden, 1, 1 << 16, NULL },
        { "--layers", AMP_OPT_INT, &o.layers, 1, 64, NULL },
        { "--heads", AMP_OPT_INT, &o.heads, 1, 1 << 16, NULL },
        { "--dim", AMP_OPT_INT, &o.dim, 1, 1 << 16, NULL },
        { "--ctx", AMP_OPT_INT, &o.ctx, 1, 1 << 16, NULL },
        { "--eval-batches", AMP_OPT_INT, &o.eval_batches, 1, 1 << 16, NULL },
        { "--on-nonfinite", AMP_OPT_FN, &o.on_nonfinite, 0, 0, parse_nonfinite },
        { NULL, 0, NULL, 0, 0, NULL },
    };
    int rc = amp_cli_parse("train", argc, argv, opts, NULL, AMP_CLI_STRICT, help);
    if (rc) return rc < 0 ? 0 : rc;
    if (no_shuffle) o.shuffle = 0;
    o.progress = amp_cli_progress_ok();
    amp_cli_catch_signals();
    o.stop = amp_cli_stop_flag();
    amp_status s = amp_train_run(&o);
    if (s == AMP_EINTR || (s && amp_cli_interrupted())) return amp_cli_interrupt_exit("train", s == AMP_EINTR ? amp_errmsg() : NULL);
    if (s) return amp_cli_fail(s);
    return amp_cli_run_failed("train", o.out);
}
