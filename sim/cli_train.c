/* ampsim train: train a model in an emulated precision policy (docs/training.md, docs/design.md). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: ampsim train [options]\n"
        "  --model mlp|gpt         model (default mlp: 64-H-..-H-10, ReLU; gpt: byte-level GPT)\n"
        "  --data digits|austen|PATH  data set (default: digits for mlp, austen for gpt)\n"
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
        "  --no-shuffle            batch s = rows (B*s + j) mod N (file order)\n"
        "  --log-every K           tensors.csv every K steps (default 10; 0 = never)\n"
        "  --hist-every K          hist.csv every K steps (default 50; 0 = never)\n"
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
        "  --dp R                  emulate R data-parallel ranks (default 1): --batch stays the global\n"
        "                          batch (divisible by R), rank r gets rows [r*B/R, (r+1)*B/R)\n"
        "  --allreduce ring|tree   gradient all-reduce algorithm (--dp > 1; default ring)\n"
        "  --allreduce-format F    format of every partial sum (--dp > 1; default fp32)\n"
        "  --allreduce-scale none|amax|pow2  per-tensor scaling before the reduction (default none)\n"
        "Writes DIR/config.json, metrics.csv, tensors.csv, hist.csv, events.csv, summary.json.\n",
        amp_policy_names());
}

int amp_cli_train(int argc, char **argv)
{
    amp_train_opts o;
    amp_train_opts_defaults(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (amp_cli_is_help(a)) { usage(stdout); return 0; }
        if (!strcmp(a, "--no-shuffle")) { o.shuffle = 0; continue; }
        if (!strcmp(a, "--resume")) { o.resume = 1; continue; }
        if (!strcmp(a, "--what-if")) {       /* optional value: a SPEC list */
            o.whatif = i + 1 < argc && strncmp(argv[i + 1], "--", 2) ? argv[++i] : "";
            continue;
        }
        if (strncmp(a, "--", 2)) return amp_cli_usage_error("train", "unexpected argument '%s'", a);
        if (i + 1 >= argc) return amp_cli_usage_error("train", "%s needs a value", a);
        const char *v = argv[++i];
        long n;
        if (!strcmp(a, "--model")) o.model = v;
        else if (!strcmp(a, "--data")) o.data = v;
        else if (!strcmp(a, "--precision")) o.precision = v;
        else if (!strcmp(a, "--policy")) o.policy_file = v;
        else if (!strcmp(a, "--scaler")) o.scaler = v;
        else if (!strcmp(a, "--optim")) o.optim = v;
        else if (!strcmp(a, "--init")) o.init = v;
        else if (!strcmp(a, "--save")) o.save = v;
        else if (!strcmp(a, "--out")) o.out = v;
        else if (!strcmp(a, "--act")) o.act = v;
        else if (!strcmp(a, "--what-if-format")) o.whatif_format = v;
        else if (!strcmp(a, "--allreduce")) o.allreduce = v;
        else if (!strcmp(a, "--allreduce-format")) o.allreduce_format = v;
        else if (!strcmp(a, "--allreduce-scale")) o.allreduce_scale = v;
        else if (!strcmp(a, "--dp")) {
            if (amp_cli_parse_long(v, 1, 1024, &n)) return amp_cli_usage_error("train", "--dp: '%s' is not 1..1024", v);
            o.dp = (int)n;
        }
        else if (!strcmp(a, "--seed")) {
            if (amp_cli_parse_u64(v, &o.seed)) return amp_cli_usage_error("train", "--seed: '%s' is not an unsigned integer", v);
        } else if (!strcmp(a, "--lr")) {
            if (amp_cli_parse_double(v, &o.lr) || !(o.lr >= 0) || o.lr > 1e30)
                return amp_cli_usage_error("train", "--lr: '%s' is not a finite number >= 0", v);
        } else if (!strcmp(a, "--steps")) {
            if (amp_cli_parse_long(v, 1, 1000000000L, &n)) return amp_cli_usage_error("train", "--steps: '%s' is not a positive integer", v);
            o.steps = n;
        } else if (!strcmp(a, "--batch")) {
            if (amp_cli_parse_long(v, 1, 1 << 20, &n)) return amp_cli_usage_error("train", "--batch: '%s' is not a positive integer", v);
            o.batch = (int)n;
        } else if (!strcmp(a, "--log-every")) {
            if (amp_cli_parse_long(v, 0, 1000000000L, &n)) return amp_cli_usage_error("train", "--log-every: '%s' is not an integer >= 0", v);
            o.log_every = n;
        } else if (!strcmp(a, "--hist-every")) {
            if (amp_cli_parse_long(v, 0, 1000000000L, &n)) return amp_cli_usage_error("train", "--hist-every: '%s' is not an integer >= 0", v);
            o.hist_every = n;
        } else if (!strcmp(a, "--threads")) {
            if (amp_cli_parse_long(v, 1, 1024, &n)) return amp_cli_usage_error("train", "--threads: '%s' is not 1..1024", v);
            o.threads = (int)n;
        } else if (!strcmp(a, "--hidden")) {
            if (amp_cli_parse_long(v, 1, 1 << 16, &n)) return amp_cli_usage_error("train", "--hidden: '%s' is not 1..65536", v);
            o.hidden = (int)n;
        } else if (!strcmp(a, "--layers")) {
            if (amp_cli_parse_long(v, 1, 64, &n)) return amp_cli_usage_error("train", "--layers: '%s' is not 1..64", v);
            o.layers = (int)n;
        } else if (!strcmp(a, "--heads") || !strcmp(a, "--dim") || !strcmp(a, "--ctx") || !strcmp(a, "--eval-batches")) {
            if (amp_cli_parse_long(v, 1, 1 << 16, &n)) return amp_cli_usage_error("train", "%s: '%s' is not 1..65536", a, v);
            *(!strcmp(a, "--heads") ? &o.heads : !strcmp(a, "--dim") ? &o.dim : !strcmp(a, "--ctx") ? &o.ctx : &o.eval_batches) = (int)n;
        } else if (!strcmp(a, "--on-nonfinite")) {
            if (amp_nonfinite_parse(v, &o.on_nonfinite)) return amp_cli_fail(AMP_EINVAL);
        } else if (!strcmp(a, "--checkpoint-every")) {
            if (amp_cli_parse_long(v, 0, 1000000000L, &n)) return amp_cli_usage_error("train", "--checkpoint-every: '%s' is not an integer >= 0", v);
            o.checkpoint_every = n;
        } else if (!strcmp(a, "--eval-every")) {
            if (amp_cli_parse_long(v, 0, 1000000000L, &n)) return amp_cli_usage_error("train", "--eval-every: '%s' is not an integer >= 0", v);
            o.eval_every = n;
        } else return amp_cli_usage_error("train", "unknown option '%s' (try --help)", a);
    }
    o.progress = amp_cli_progress_ok();
    amp_status s = amp_train_run(&o);
    return s ? amp_cli_fail(s) : 0;
}

