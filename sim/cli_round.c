/* ampsim round: a tensor file rounded into a format, written as float32
 * values (or, with --encode, the format's bit patterns). Streams the input in
 * fixed chunks (bounded memory); stochastic rounding is keyed by the element's
 * index in the file, so chunking and threads never change the bytes. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ROUND_CHUNK ((size_t)1 << 20)   /* a multiple of the drivers' 2^16 chunks */

static void help(void)
{
    printf("usage: ampsim round --format F [--rounding M] [--saturate] [--ftz] [--daz] [--sr-bits K]\n"
           "                    [--seed S] [--exact] [--threads T] [--encode] [--stats] IN OUT\n"
           "Rounds every element of IN into format F and writes OUT.\n"
           "  IN   .npy (<f2, <f4, <f8; C order), raw little-endian .f32 / .f64, or a\n"
           "       .safetensors file holding one tensor (F16, BF16, F32, F64)\n"
           "  OUT  .npy (keeps IN's shape) or raw .f32: float32 values of the format;\n"
           "       with --encode the format's bit patterns (uint8 for formats of <= 8 bits,\n"
           "       uint16 for <= 16): .npy ('|u1' / '<u2'), any other name is raw bytes\n"
           "  --format F      a format name (ampsim formats) or eXmY / eXmYfn / eXmYfnuz\n"
           "  --rounding M    rne (default), rna, rtz, rup, rdn, rto, sr\n"
           "  --saturate      overflow and +-inf go to +-max finite\n"
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

static int has_ext(const char *path, const char *ext)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) && !strcasecmp(dot, ext);
}

/* The option's value: "--opt=value" or the next argument. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (!strncmp(argv[*i], name, n) && argv[*i][n] == '=') return argv[*i] + n + 1;
    if (*i + 1 >= argc) return NULL;
    return argv[++*i];
}

static int is_opt(const char *a, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(a, name, n) && (a[n] == 0 || a[n] == '=');
}

static void print_stats(const char *in, const amp_format *f, const amp_round_opts *o, const amp_stats *st)
{
    printf("input         %s\n", in);
    printf("format        %s\n", f->name);
    printf("rounding      %s%s%s%s\n", amp_rounding_name(o->mode), (o->flags & AMP_SATURATE) ? " saturate" : "",
           (o->flags & AMP_FTZ) ? " ftz" : "", (o->flags & AMP_DAZ) ? " daz" : "");
    printf("n             %llu\n", (unsigned long long)st->n);
    for (int c = 0; c < AMP_CLS_COUNT; c++)
        printf("%-13s %llu\n", amp_class_name((amp_class)c), (unsigned long long)st->cls[c]);
    printf("amax          %.9g\n", st->amax);
    printf("amin_nonzero  %.9g\n", st->amin_nonzero);
    printf("rel_err       %.9g\n", amp_stats_rel_err(st));
    printf("in_normal     %.9g\n", amp_stats_in_normal_range(st));
}

int amp_cli_round(int argc, char **argv)
{
    const char *fmt_name = NULL, *in = NULL, *out = NULL;
    amp_round_opts o = amp_round_defaults();
    int encode = 0, stats = 0;
    long threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long l;
        if (amp_cli_is_help(a)) { help(); return 0; }
        if (is_opt(a, "--format")) {
            if (!(fmt_name = opt_value(argc, argv, &i, "--format"))) return amp_cli_usage_error("round", "--format needs a value");
        } else if (is_opt(a, "--rounding")) {
            if (!(v = opt_value(argc, argv, &i, "--rounding"))) return amp_cli_usage_error("round", "--rounding needs a value");
            if (amp_rounding_parse(v, &o.mode)) return amp_cli_usage_error("round", "%s", amp_errmsg());
        } else if (!strcmp(a, "--saturate")) {
            o.flags |= AMP_SATURATE;
        } else if (!strcmp(a, "--ftz")) {
            o.flags |= AMP_FTZ;
        } else if (!strcmp(a, "--daz")) {
            o.flags |= AMP_DAZ;
        } else if (!strcmp(a, "--exact")) {
            o.flags |= AMP_EXACT;
        } else if (!strcmp(a, "--encode")) {
            encode = 1;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else if (is_opt(a, "--sr-bits")) {
            v = opt_value(argc, argv, &i, "--sr-bits");
            if (!v || amp_cli_parse_long(v, 1, 64, &l)) return amp_cli_usage_error("round", "--sr-bits needs an integer 1..64");
            o.sr_bits = (int)l;
        } else if (is_opt(a, "--seed")) {
            v = opt_value(argc, argv, &i, "--seed");
            if (!v || amp_cli_parse_u64(v, &o.seed)) return amp_cli_usage_error("round", "--seed needs an unsigned integer");
        } else if (is_opt(a, "--threads")) {
            v = opt_value(argc, argv, &i, "--threads");
            if (!v || amp_cli_parse_long(v, 1, 4096, &threads)) return amp_cli_usage_error("round", "--threads needs an integer 1..4096");
        } else if (a[0] == '-' && a[1]) {
            return amp_cli_usage_error("round", "unknown option '%s' (try --help)", a);
        } else if (!in) {
            in = a;
        } else if (!out) {
            out = a;
        } else {
            return amp_cli_usage_error("round", "unexpected argument '%s' (IN and OUT already given)", a);
        }
    }
    if (!fmt_name) return amp_cli_usage_error("round", "--format is required (try --help)");
    if (!in || !out) return amp_cli_usage_error("round", "needs IN and OUT files (try --help)");
    amp_format f;
    if (amp_format_parse(fmt_name, &f)) return amp_cli_usage_error("round", "--format: %s", amp_errmsg());
    if (encode && f.bits > 16)
        return amp_cli_usage_error("round", "--encode: format %s has %d bits (bit patterns only for <= 16)", f.name, f.bits);
    int out_npy = has_ext(out, ".npy");
    if (!encode && !out_npy && !has_ext(out, ".f32"))
        return amp_cli_usage_error("round", "%s: output must be .npy or raw .f32 (float32 values)", out);
    if (threads) amp_set_threads((int)threads);

    amp_tensor_file tf;
    amp_status st = amp_tensor_file_open(in, &tf);
    if (st) return amp_cli_fail(st);
    if (tf.n_tensors != 1) {
        int nt = tf.n_tensors;
        amp_tensor_file_close(&tf);
        return amp_cli_usage_error("round", "%s: holds %d tensors; round takes a file with exactly one", in, nt);
    }
    const amp_tensor_view *v = &tf.tensors[0];
    int is64 = v->dtype == AMP_DT_F64;
    size_t esz_out = encode ? (f.bits <= 8 ? 1 : 2) : 4;

    float *x32 = malloc(ROUND_CHUNK * sizeof *x32), *y = malloc(ROUND_CHUNK * sizeof *y);
    double *x64 = is64 ? malloc(ROUND_CHUNK * sizeof *x64) : NULL;
    void *enc = encode ? malloc(ROUND_CHUNK * esz_out) : NULL;
    amp_afile af;
    int af_open = 0;
    amp_stats sts;
    amp_stats_init(&sts);
    if (!x32 || !y || (is64 && !x64) || (encode && !enc)) {
        st = amp_fail(AMP_ENOMEM, "round: out of memory");
        goto done;
    }
    if ((st = amp_afile_open(&af, out))) goto done;
    af_open = 1;
    if (out_npy) {
        char hdr[512];
        size_t hl;
        const char *descr = !encode ? "<f4" : esz_out == 1 ? "|u1" : "<u2";
        if ((st = amp_npy_header(descr, v->ndim, v->shape, hdr, sizeof hdr, &hl))) goto done;
        if (fwrite(hdr, 1, hl, af.fp) != hl) goto write_error;
    }
    for (size_t first = 0; first < v->n; first += ROUND_CHUNK) {
        size_t m = v->n - first < ROUND_CHUNK ? v->n - first : ROUND_CHUNK;
        o.index0 = first;
        if (is64) {
            amp_tensor_view_to_f64(v, first, m, x64);
            st = amp_round_f64(&f, &o, x64, y, m, stats ? &sts : NULL);
        } else {
            amp_tensor_view_to_f32(v, first, m, x32);
            st = amp_round_f32(&f, &o, x32, y, m, stats ? &sts : NULL);
        }
        if (st) goto done;
        const void *w = y;
        if (encode) {
            if ((st = amp_encode(&f, y, enc, m))) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", amp_errmsg());
                st = amp_fail(st, "%s: %s (in the chunk of elements from %zu)", in, msg, first);
                goto done;
            }
            w = enc;
        }
        if (fwrite(w, esz_out, m, af.fp) != m) goto write_error;
    }
    st = amp_afile_commit(&af);
    af_open = 0;
    goto done;
write_error:
    st = amp_fail(AMP_EIO, "%s: write failed: %s", out, strerror(errno ? errno : EIO));
done:
    if (af_open) amp_afile_abort(&af);
    free(x32);
    free(y);
    free(x64);
    free(enc);
    amp_tensor_file_close(&tf);
    if (st) return amp_cli_fail(st);
    if (stats) print_stats(in, &f, &o, &sts);
    return 0;
}
