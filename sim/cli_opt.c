/* The table-driven option parser every subcommand uses: `--key value` and
 * `--key=value`, flags, numbers checked for their range, repeatable options,
 * positional arguments, and (for compare and sweep) pass-through of what
 * belongs to `ampsim train`. */
#include "cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The table entry named by a (its "--key" part before any '='), or NULL. */
static const amp_cli_opt *find(const amp_cli_opt *opt, const char *a)
{
    size_t n = strcspn(a, "=");
    for (const amp_cli_opt *o = opt; o->name; o++)
        if (strlen(o->name) == n && !strncmp(o->name, a, n)) return o;
    return NULL;
}

/* Stores value v of option o; a message and 2 when v is not acceptable. */
static int store(const char *cmd, const amp_cli_opt *o, const char *v)
{
    long l;
    double d;
    switch (o->kind) {
    case AMP_OPT_STR: *(const char **)o->dst = v; return 0;
    case AMP_OPT_LIST: {
        amp_cli_list *li = o->dst;
        if (li->n >= li->max) return amp_cli_usage_error(cmd, "%s given too often", o->name);
        li->v[li->n++] = v;
        return 0;
    }
    case AMP_OPT_INT:
    case AMP_OPT_I64:
        if (amp_cli_parse_long(v, (long)o->lo, (long)o->hi, &l)) {
            if (!amp_cli_parse_long(v, LONG_MIN, LONG_MAX, &l))   /* an integer, but past a limit: say which */
                return amp_cli_usage_error(cmd, "%s %s: %s is %.0f", o->name, v, l < o->lo ? "the lowest allowed" :
                                           "the limit", l < o->lo ? o->lo : o->hi);
            return amp_cli_usage_error(cmd, "%s: '%s' is not an integer in %.0f..%.0f", o->name, v, o->lo, o->hi);
        }
        if (o->kind == AMP_OPT_INT) *(int *)o->dst = (int)l;
        else *(int64_t *)o->dst = l;
        return 0;
    case AMP_OPT_U64:
        if (amp_cli_parse_u64(v, (uint64_t *)o->dst))
            return amp_cli_usage_error(cmd, "%s: '%s' is not an unsigned integer", o->name, v);
        return 0;
    case AMP_OPT_DOUBLE:
        if (amp_cli_parse_double(v, &d) || !(d >= o->lo && d <= o->hi))
            return amp_cli_usage_error(cmd, "%s: '%s' is not a number in [%g, %g]", o->name, v, o->lo, o->hi);
        *(double *)o->dst = d;
        return 0;
    case AMP_OPT_FN:
        if (o->fn(v, o->dst)) return amp_cli_usage_error(cmd, "%s: %s", o->name, amp_errmsg());
        return 0;
    default:
        return 0;
    }
}

int amp_cli_parse(const char *cmd, int argc, char **argv, const amp_cli_opt *opt, amp_cli_list *rest, int mode,
                  void (*help)(void))
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (amp_cli_is_help(a)) { help(); return -1; }
        const amp_cli_opt *o = a[0] == '-' && a[1] == '-' ? find(opt, a) : NULL;
        if (!o) {
            int is_opt = a[0] == '-' && a[1];
            if (mode == AMP_CLI_PASS || (mode == AMP_CLI_POSITIONAL && !is_opt)) {
                if (rest->n >= rest->max) return amp_cli_usage_error(cmd, "unexpected argument '%s' (try --help)", a);
                rest->v[rest->n++] = a;
                continue;
            }
            if (is_opt) return amp_cli_usage_error(cmd, "unknown option '%s' (try --help)", a);
            return amp_cli_usage_error(cmd, "unexpected argument '%s' (try --help)", a);
        }
        const char *eq = strchr(a, '=');
        if (o->kind == AMP_OPT_FLAG || o->kind == AMP_OPT_BITS) {
            if (eq) return amp_cli_usage_error(cmd, "%s takes no value", o->name);
            if (o->kind == AMP_OPT_FLAG) *(int *)o->dst = (int)o->lo;
            else *(unsigned *)o->dst |= (unsigned)o->lo;
            continue;
        }
        if (o->kind == AMP_OPT_REFUSE)
            return amp_cli_usage_error(cmd, "%s %s", o->name, (const char *)o->dst);
        const char *v = eq ? eq + 1 : NULL;
        if (!v && o->kind == AMP_OPT_OPTSTR) {   /* the value is optional: the next word unless an option */
            v = i + 1 < argc && strncmp(argv[i + 1], "--", 2) ? argv[++i] : "";
            *(const char **)o->dst = v;
            continue;
        }
        if (!v) {
            if (i + 1 >= argc) return amp_cli_usage_error(cmd, "%s needs a value", o->name);
            v = argv[++i];
        }
        if (o->kind == AMP_OPT_OPTSTR) { *(const char **)o->dst = v; continue; }
        if (store(cmd, o, v)) return 2;
    }
    return 0;
}

amp_status amp_cli_list_init(amp_cli_list *l, int argc)
{
    l->n = 0;
    l->max = argc;
    l->v = calloc((size_t)argc + 1, sizeof *l->v);
    return l->v ? AMP_OK : amp_fail(AMP_ENOMEM, "out of memory");
}

void amp_cli_list_free(amp_cli_list *l)
{
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

amp_status amp_cli_parse_rounding(const char *v, void *dst) { return amp_rounding_parse(v, dst); }
