/* ampsim round: a tensor file rounded into a format, written as float32
 * values (or, with --encode, the format's bit patterns), by amp_round_file. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static void help(void)
{
    printf("usage: ampsim round --format F [--rounding M] [--saturate] [--ftz] [--daz] [--sr-bits K]\n"
           "                    [--seed S] [--exact] [--threads T] [--encode] [--stats] IN OUT\n"
           "Rounds every element of IN into format F and writes OUT.\n"
           "  IN   .npy (<f2, <f4, <f8; C order), raw little-endian .f32 / .f64, or a\n"
           "       .safetensors file (F16, BF16, F32, F64, F8); FILE:NAME picks one tensor of a\n"
           "       file that holds several\n"
           "  OUT  .npy (keeps IN's shape) or raw .f32: float32 values of the format;\n"
           "       with --encode the format's bit patterns (uint8 for formats of <= 8 bits,\n"
           "       uint16 for <= 16): .npy ('|u1' / '<u2'), any other name is raw bytes\n"
           "  --format F      a format name (ampsim formats) or eXmY / eXmYfn / eXmYfnuz, or a\n"
           "                  block-scaled format: mx:ELEM[:block=N][:scale=floor|ceil|rne],\n"
           "                  nvfp4[:2d], block:ELEM:RxC (blocks along the last axis; float32 out)\n"
           "  --rounding M    rne (default), rna, rtz, rup, rdn, rto, sr\n"
           "  --saturate      overflow and +-inf go to +-max finite (P3109 SatFinite)\n"
           "  --satprop       overflow goes to +-max finite, +-inf stays (P3109 SatPropagate)\n"
           "  --ftz / --daz   flush subnormal results / read subnormal inputs as zero\n"
           "  --sr-bits K     sr: random bits used (1..64; default all discarded bits)\n"
           "  --seed S        sr: generator seed (default 0); element i uses index i\n"
           "  --exact         use the MPFR reference path (slow)\n"
           "  --threads T     threads for the rounding kernels (default: all)\n"
           "  --stats         print the classification counts, amax, amin_nonzero, rel_err\n"
           "float64 input is rounded directly (one correct rounding); float16/bfloat16\n"
           "widen exactly to float32 first. Bad input or options: exit 2, one line on stderr,\n"
           "and no output file is left behind.\n");
}

static void print_stats(const char *in, const amp_format *f, const amp_round_opts *o, const amp_stats *st)
{
    printf("input         %s\n", in);
    printf("format        %s\n", f->name);
    printf("rounding      %s%s%s%s%s\n", amp_rounding_name(o->mode), (o->flags & AMP_SATURATE) ? " saturate" : "",
           (o->flags & AMP_SATPROP) ? " satprop" : "", (o->flags & AMP_FTZ) ? " ftz" : "", (o->flags & AMP_DAZ) ? " daz" : "");
    printf("n             %llu\n", (unsigned long long)st->n);
    for (int c = 0; c < AMP_CLS_COUNT; c++)
        printf("%-13s %llu\n", amp_class_name((amp_class)c), (unsigned long long)st->cls[c]);
    printf("amax          %.9g\n", st->amax);
    printf("amin_nonzero  %.9g\n", st->amin_nonzero);
    printf("rel_err       %.9g\n", amp_stats_rel_err(st));
    printf("in_normal     %.9g\n", amp_stats_in_normal_range(st));
}

static void print_block_stats(const amp_block_stats *bs)
{
    int lo, med, hi;
    amp_block_exp_summary(bs, &lo, &med, &hi);
    printf("blocks        %llu\n", (unsigned long long)bs->blocks);
    printf("scale_hi      %llu\n", (unsigned long long)bs->scale_hi);
    printf("scale_lo      %llu\n", (unsigned long long)bs->scale_lo);
    printf("amax_sat      %llu\n", (unsigned long long)bs->amax_sat);
    printf("nan_blocks    %llu\n", (unsigned long long)bs->nan_blocks);
    printf("zero_blocks   %llu\n", (unsigned long long)bs->zero_blocks);
    printf("scale_exp     %d %d %d\n", lo, med, hi);
    printf("tensor_scale  %.9g\n", (double)bs->tensor_scale);
}

int amp_cli_round(int argc, char **argv)
{
    const char *fmt_name = NULL;
    amp_round_opts o = amp_round_defaults();
    int encode = 0, stats = 0, threads = 0;
    const char *pos[2];
    amp_cli_list files = { pos, 0, 2 };
    const amp_cli_opt opts[] = {
        { "--format", AMP_OPT_STR, &fmt_name, 0, 0, NULL },
        AMP_CLI_CAST_OPTS(o),
        { "--exact", AMP_OPT_BITS, &o.flags, AMP_EXACT, 0, NULL },
        { "--encode", AMP_OPT_FLAG, &encode, 1, 0, NULL },
        { "--stats", AMP_OPT_FLAG, &stats, 1, 0, NULL },
        { "--threads", AMP_OPT_INT, &threads, 1, 4096, NULL },
        { NULL, 0, NULL, 0, 0, NULL },
    };
    int rc = amp_cli_parse("round", argc, argv, opts, &files, AMP_CLI_POSITIONAL, help);
    if (rc) return rc < 0 ? 0 : rc;
    if (!fmt_name) return amp_cli_usage_error("round", "--format is required (try --help)");
    if (files.n < 2) return amp_cli_usage_error("round", "needs IN and OUT files (try --help)");
    amp_format f;
    amp_block_spec bspec;
    int block = amp_block_is_spec(fmt_name);
    if (block) {
        if (amp_block_parse(fmt_name, &bspec)) return amp_cli_usage_error("round", "--format: %s", amp_errmsg());
        if (encode) return amp_cli_usage_error("round", "--encode: block-scaled formats are written as float32 values");
        f = bspec.elem;
    } else if (amp_format_parse(fmt_name, &f)) {
        return amp_cli_usage_error("round", "--format: %s", amp_errmsg());
    }
    if (threads) amp_set_threads(threads);
    /* IN may name one tensor of a multi-tensor file: FILE:NAME */
    char in[4096];
    const char *name;
    amp_status st = amp_tensor_arg_split(files.v[0], in, sizeof in, &name);
    if (st) return amp_cli_fail(st);
    amp_stats sts;
    amp_stats_init(&sts);
    amp_block_stats bs;
    amp_block_stats_init(&bs);
    if (block) st = amp_block_round_file(in, name, files.v[1], &bspec, &o, stats ? &sts : NULL, &bs);
    else st = amp_round_file(in, name, files.v[1], &f, &o, encode, stats ? &sts : NULL);
    if (st) return amp_cli_fail(st);
    if (stats) {
        if (block) snprintf(f.name, sizeof f.name, "%.23s", bspec.name);
        print_stats(files.v[0], &f, &o, &sts);
        if (block) print_block_stats(&bs);
    }
    return 0;
}
