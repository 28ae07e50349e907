/* Check suite: scaler SPEC parsing (docs/scalers.md) and `ampsim scaler-replay`.
 * Defaults are typed in from docs/scalers.md; the replay output is compared with
 * a golden trace typed in from the frameworks' rules (docs/scalers.md). */
#include "ampsim.h"

#include <check.h>
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void canon(const char *in, const char *want)
{
    amp_scaler_spec s, s2;
    char buf[512], buf2[512];
    ck_assert_msg(amp_scaler_spec_parse(in, &s) == AMP_OK, "%s: %s", in, amp_errmsg());
    amp_scaler_spec_str(&s, buf, sizeof buf);
    ck_assert_msg(!strcmp(buf, want), "%s -> '%s', want '%s'", in, buf, want);
    ck_assert_msg(amp_scaler_spec_parse(buf, &s2) == AMP_OK, "%s: %s", buf, amp_errmsg());
    amp_scaler_spec_str(&s2, buf2, sizeof buf2);
    ck_assert_str_eq(buf, buf2);
}

START_TEST(defaults)
{
    canon("none", "none");
    canon("static:8", "static:scale=8,skip=0");
    canon("static:scale=2^10,skip=1", "static:scale=1024,skip=1");
    canon("torch", "torch:init=65536,growth=2,backoff=0.5,interval=2000");
    canon("apex", "apex:init=65536,window=2000,min=none,max=16777216");
    canon("deepspeed", "deepspeed:init=65536,window=1000,min=1,hysteresis=2,consecutive=0,raise=1");
    canon("megatron", "megatron:init=4294967296,min=1,growth=2,backoff=0.5,interval=1000,hysteresis=2");
    canon("keras", "keras:init=32768,interval=2000");
    canon("delayed", "delayed:history=1024,algo=max,margin=0,fmt=hybrid");
    canon("current", "current:pow2=0,fmt=hybrid");
    canon("mx", "mx:block=32,exp=floor,fmt=hybrid");
    canon("block", "block:size=128,pow2=0,fmt=hybrid");
    canon("adaptive", "adaptive:underflow=0.001,init=65536,min=1,max=1099511627776,headroom=2,fmt=fp16");
    canon("underflow", "underflow:init=65536,growth=2,backoff=0.5,interval=2000,flush=0.001,headroom=2,fmt=fp16");
    canon("torch:init=1024,interval=3", "torch:init=1024,growth=2,backoff=0.5,interval=3");
    canon("deepspeed:consecutive=true,raise=0,min=0.5", "deepspeed:init=65536,window=1000,min=0.5,hysteresis=2,consecutive=1,raise=0");
    canon("delayed:algo=most_recent,fmt=e5m2,history=16,margin=2", "delayed:history=16,algo=most_recent,margin=2,fmt=e5m2");
    canon("mx:exp=ceil,fmt=e2m1", "mx:block=32,exp=ceil,fmt=e2m1");
    canon("apex:min=0,max=none", "apex:init=65536,window=2000,min=none,max=none");
    for (int k = 0; k < AMP_SCALER_KIND_COUNT; k++)
        ck_assert(strstr(amp_scaler_spec_help(), amp_scaler_kind_name(k)));
    ck_assert(amp_scaler_kind_is_fp8(AMP_SCALER_MX) && !amp_scaler_kind_is_fp8(AMP_SCALER_TORCH));
}
END_TEST

START_TEST(number_forms)
{
    const char *forms[] = { "65536", "2^16", "6.5536e4", "0x1p16", "4^8", "65536.0" };
    for (int i = 0; i < 6; i++) {
        char spec[64];
        snprintf(spec, sizeof spec, "torch:init=%s", forms[i]);
        amp_scaler_spec s;
        ck_assert_msg(amp_scaler_spec_parse(spec, &s) == AMP_OK, "%s: %s", spec, amp_errmsg());
        ck_assert_msg(s.init == 65536.0, "%s: %g", spec, s.init);
    }
    amp_scaler_spec s;
    ck_assert_int_eq(amp_scaler_spec_parse("torch:interval=1e3,backoff=2^-2", &s), AMP_OK);
    ck_assert(s.interval == 1000 && s.backoff == 0.25);
    ck_assert_int_eq(amp_scaler_spec_parse("megatron:init=2^32", &s), AMP_OK);
    ck_assert(s.init == 4294967296.0);
}
END_TEST

/* Every bad spec: AMP_EINVAL, message names the spec text and the key/name. */
START_TEST(bad_specs)
{
    const struct { const char *spec, *word; } bad[] = {
        { "torch2", "torch2" },
        { "", "unknown strategy" },
        { "torch:foo=1", "foo" },
        { "torch:window=3", "window" },              /* apex/deepspeed key, not torch's */
        { "torch:growth=0.5", "growth" },
        { "torch:growth=1", "growth" },
        { "torch:backoff=1", "backoff" },
        { "torch:backoff=0", "backoff" },
        { "torch:interval=0", "interval" },
        { "torch:interval=1.5", "interval" },
        { "torch:interval=abc", "interval" },
        { "torch:init=0", "init" },
        { "torch:init=-1", "init" },
        { "torch:init=1e39", "init" },
        { "torch:init=nan", "init" },
        { "torch:init=", "init" },
        { "torch:init=2^", "init" },
        { "torch:init=1,init=2", "twice" },
        { "torch:", "empty" },
        { "torch:init", "init" },
        { "static", "static" },
        { "static:0", "scale" },
        { "static:1,2", "2" },
        { "deepspeed:hysteresis=0", "hysteresis" },
        { "deepspeed:raise=2", "raise" },
        { "deepspeed:min=0", "min" },
        { "megatron:min=8,init=4", "init" },
        { "apex:max=0", "max" },
        { "apex:min=-1", "min" },
        { "keras:growth=2", "growth" },
        { "delayed:history=0", "history" },
        { "delayed:algo=mean", "algo" },
        { "delayed:margin=-1", "margin" },
        { "delayed:fmt=fp99", "fmt" },
        { "delayed:fmt=e8m0", "fmt" },
        { "mx:exp=round", "exp" },
        { "mx:block=0", "block" },
        { "block:size=0", "size" },
        { "current:pow2=yes please", "pow2" },
        { "adaptive:underflow=1", "underflow" },
        { "adaptive:init=3", "power" },
        { "adaptive:fmt=hybrid", "fmt" },
        { "underflow:flush=0", "flush" },
        { "underflow:headroom=0.5", "headroom" },
        { "none:init=1", "init" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        amp_scaler_spec s;
        amp_status st = amp_scaler_spec_parse(bad[i].spec, &s);
        ck_assert_msg(st == AMP_EINVAL, "'%s' accepted", bad[i].spec);
        ck_assert_msg(strstr(amp_errmsg(), bad[i].word), "'%s': message '%s' lacks '%s'", bad[i].spec, amp_errmsg(), bad[i].word);
        if (*bad[i].spec)
            ck_assert_msg(strstr(amp_errmsg(), bad[i].spec), "'%s': message '%s' does not name the spec", bad[i].spec, amp_errmsg());
    }
    amp_scaler sc;
    amp_fp8_scaler f8;
    ck_assert_int_eq(amp_scaler_init_str(&sc, "delayed"), AMP_EINVAL);
    ck_assert_int_eq(amp_fp8_init_str(&f8, "torch"), AMP_EINVAL);
}
END_TEST

/* ---- the CLI ------------------------------------------------------------------- */
static char tmpdir[256];

static void mk_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_scaler_XXXXXX");
    ck_assert(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert(system(cmd) == 0);
}

static void write_file(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *fp = fopen(p, "w");
    ck_assert(fp);
    fputs(text, fp);
    fclose(fp);
}

static char *read_all(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *fp = fopen(p, "r");
    ck_assert(fp);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = 0;
    fclose(fp);
    return buf;
}

/* Runs `ampsim scaler-replay ARGS` in tmpdir; stdout -> out.txt, stderr -> err.txt. */
static int replay(const char *args)
{
    const char *bin = getenv("AMPSIM");
    ck_assert_msg(bin && *bin, "AMPSIM not set");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' scaler-replay %s >out.txt 2>err.txt", tmpdir, bin, args);
    int rc = system(cmd);
    ck_assert(rc != -1 && WIFEXITED(rc));
    return WEXITSTATUS(rc);
}

START_TEST(cli_replay_golden)
{
    mk_tmp();
    /* the golden pattern F F F I F F F F I I I F F F I I I I I */
    write_file("seq.txt", "0\n0\n0\n1\n0\n0\n0\n0\n1\n1\n1\n0\n0\n0\n1\n1\n1\n1\n1\n");
    ck_assert_int_eq(replay("--scaler torch:init=1024,interval=3 seq.txt"), 0);
    const char *want =
        "step,input,skipped,scale_used,scale_after\n"
        "0,0,0,1024,1024\n1,0,0,1024,1024\n2,0,0,1024,2048\n3,1,1,2048,1024\n"
        "4,0,0,1024,1024\n5,0,0,1024,1024\n6,0,0,1024,2048\n7,0,0,2048,2048\n"
        "8,1,1,2048,1024\n9,1,1,1024,512\n10,1,1,512,256\n11,0,0,256,256\n"
        "12,0,0,256,256\n13,0,0,256,512\n14,1,1,512,256\n15,1,1,256,128\n"
        "16,1,1,128,64\n17,1,1,64,32\n18,1,1,32,16\n";
    ck_assert_str_eq(read_all("out.txt"), want);
    /* megatron, from stdin, with --csv and comments */
    write_file("seq2.txt", "# golden\n0\n0\n0\n1\n0\n0\n0\n0\n1\n1\n1\n0\n0\n0\n1\n1\n1\n1\n1\n");
    ck_assert_int_eq(replay("--csv --scaler megatron:init=1024,interval=3,hysteresis=2,min=256 - < seq2.txt"), 0);
    const float used[19] = { 1024, 1024, 1024, 2048, 2048, 2048, 2048, 4096, 4096, 4096,
                             2048, 1024, 1024, 1024, 2048, 2048, 1024, 512, 256 };
    char *out = read_all("out.txt");
    char *line = strchr(out, '\n') + 1;
    for (int i = 0; i < 19; i++) {
        int step, in, sk;
        float u, a;
        ck_assert_int_eq(sscanf(line, "%d,%d,%d,%g,%g", &step, &in, &sk, &u, &a), 5);
        ck_assert_int_eq(step, i);
        ck_assert_msg(u == used[i], "megatron step %d: %g want %g", i, u, used[i]);
        line = strchr(line, '\n') + 1;
    }
    ck_assert_int_eq(*line, 0);
    rm_tmp();
}
END_TEST

START_TEST(cli_replay_fp8_and_errors)
{
    mk_tmp();
    /* TE's fused update: an amax of 0 is not recorded (scale kept), a NaN is
     * recorded and skipped by the fmaxf maximum of the window {1, nan}, then
     * {nan, 0.5} gives 448 / 0.5 */
    write_file("amax.txt", "2\n1\n1\n0\nnan\n0.5\n");
    ck_assert_int_eq(replay("--scaler delayed:history=2 amax.txt"), 0);
    ck_assert_str_eq(read_all("out.txt"),
                     "step,input,skipped,scale_used,scale_after\n"
                     "0,2,0,1,224\n1,1,0,224,224\n2,1,0,224,448\n3,0,0,448,448\n"
                     "4,nan,0,448,448\n5,0.5,0,448,896\n");
    ck_assert_int_eq(replay("--scaler delayed:fmt=e5m2,algo=most_recent amax.txt"), 0);
    ck_assert(strstr(read_all("out.txt"), "\n0,2,0,1,28672\n"));
    /* statistics-driven scalers replay flags alone: adaptive halves on inf
     * (down to min=1), underflow is torch */
    write_file("flags.txt", "1\n0\n1\n1\n");
    ck_assert_int_eq(replay("--scaler adaptive:init=4 flags.txt"), 0);
    ck_assert_str_eq(read_all("out.txt"),
                     "step,input,skipped,scale_used,scale_after\n"
                     "0,1,1,4,2\n1,0,0,2,2\n2,1,1,2,1\n3,1,1,1,1\n");
    ck_assert_int_eq(replay("--scaler underflow:init=4,interval=1 flags.txt"), 0);
    ck_assert_str_eq(read_all("out.txt"),
                     "step,input,skipped,scale_used,scale_after\n"
                     "0,1,1,4,2\n1,0,0,2,4\n2,1,1,4,2\n3,1,1,2,1\n");
    /* deepspeed stops at its minimum: the row is printed, exit 1 */
    write_file("inf.txt", "1\n1\n1\n1\n");
    ck_assert_int_eq(replay("--events --scaler deepspeed:init=4,min=2,hysteresis=1 inf.txt"), 1);
    ck_assert_str_eq(read_all("out.txt"),
                     "step,input,skipped,scale_used,scale_after,events\n"
                     "0,1,1,4,2,backoff\n1,1,1,2,2,min_error\n");
    ck_assert(strstr(read_all("err.txt"), "Current loss scale already at minimum"));
    /* bad line: exit 2 naming file:line, nothing on stdout but nothing half-done */
    write_file("bad.txt", "0\n1\n2\n");
    ck_assert_int_eq(replay("--scaler torch bad.txt"), 2);
    ck_assert_msg(strstr(read_all("err.txt"), "bad.txt:3"), "%s", read_all("err.txt"));
    ck_assert_str_eq(read_all("out.txt"), "");
    write_file("bad2.txt", "1.5\n-3\n");
    ck_assert_int_eq(replay("--scaler current bad2.txt"), 2);
    ck_assert(strstr(read_all("err.txt"), "bad2.txt:2"));
    /* bad specs: exit 2 naming the spec */
    const char *specs[] = { "torch2", "torch:foo=1", "torch:growth=0.5", "deepspeed:hysteresis=0" };
    for (int i = 0; i < 4; i++) {
        char args[256];
        snprintf(args, sizeof args, "--scaler '%s' amax.txt", specs[i]);
        ck_assert_int_eq(replay(args), 2);
        ck_assert_msg(strstr(read_all("err.txt"), specs[i]), "%s: %s", specs[i], read_all("err.txt"));
    }
    ck_assert_int_eq(replay("--scaler torch missing.txt"), 2);
    ck_assert(strstr(read_all("err.txt"), "missing.txt"));
    ck_assert_int_eq(replay("seq.txt"), 2);
    ck_assert_int_eq(replay("--scaler torch --bogus amax.txt"), 2);
    ck_assert_int_eq(replay("--help"), 0);
    ck_assert(strstr(read_all("out.txt"), "usage: ampsim scaler-replay"));
    rm_tmp();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("scaler_spec");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, number_forms);
    tcase_add_test(tc, bad_specs);
    tcase_add_test(tc, cli_replay_golden);
    tcase_add_test(tc, cli_replay_fp8_and_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return amp_check_failures(suite()) ? 1 : 0;
}
