/* Precision policies: the presets of docs/training.md and policies read from JSON.
 *
 * JSON keys (every key optional; an unknown key anywhere is an error naming it):
 * {
 *   "base": "fp16-amp",                  preset to start from (default fp32)
 *   "roles": { "weight": F, "master": F, "act": F, "act_grad": F,
 *              "weight_grad": F, "optim_state": F },
 *   "gemm":  { "input": F, "grad_input": F,
 *              "accumulator": "fp32" | F, "promote_every": N,
 *              "kernel": "reproducible" | "blas" },
 *   "fp32_ops": ["softmax", "log_softmax", "layer_norm", "loss", "reduction"],
 *   "rounding": "rne" | "sr" | ..., "sr_bits": K,
 *   "saturate_operands": true | false,   (GEMM operand casts saturate, as FP8 casts do)
 *   "update": "round" | "sr" | "kahan",  (weights stored in a narrow format)
 *   "fp8_scaling": true | false,         (per-tensor scaling of GEMM operands)
 *   "kernels": "default" | "torch_cpu",  (GELU and LayerNorm in higher precision rounded
 *                                         once, or in the arithmetic of PyTorch's CPU
 *                                         kernels; bf16-amp-cpu: torch_cpu)
 *   "nvfp4": { "hadamard": true | false, "stochastic_rounding": true | false,
 *              "bf16_layers": ["first", "last", "fc2", "transformer.h.0.", ...] },
 *                                        (NVFP4 GEMM operands: sim/amp_nvfp4.h; the key
 *                                         turns them on, each inner key optional)
 *   "name": "my-policy"
 * }
 * "master" other than fp32, or equal to "weight", means no master copy. */
#include "amp_base.h"
#include "amp_format.h"
#include "amp_io.h"
#include "amp_policy.h"
#include "amp_round.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[AMP_OP_COUNT] = { "softmax", "log_softmax", "layer_norm", "loss", "reduction" };
_Static_assert(AMP_OP_COUNT == 5, "op_names covers every op");

#define ALL_FP32_OPS ((1u << AMP_OP_COUNT) - 1)
/* PyTorch CPU autocast: softmax, log_softmax, layer_norm and sum are not forced. */
#define CPU_FP32_OPS (1u << AMP_OP_LOSS)

const char *amp_policy_names(void)
{
    return "fp32, fp16-amp, bf16-amp, bf16-amp-cpu, fp16-pure, bf16-pure, fp8-e4m3, fp8-hybrid, nvfp4";
}

static void set_all(amp_policy *p, amp_format_id low, amp_format_id master)
{
    const amp_format *L = amp_format_get(low), *M = amp_format_get(master);
    p->fwd_in = p->bwd_in = p->act = p->grad = p->wgrad = p->weight = *L;
    p->master = p->optim = *M;
    p->has_master = low != master;
    p->acc_fp32 = 1;
    p->acc = *amp_format_get(AMP_FMT_FP32);
    p->acc_chunk = 0;
    p->fp32_ops = ALL_FP32_OPS;
    p->mode = AMP_RND_NE;
    p->sr_bits = 0;
    p->op_flags = 0;
    p->update = AMP_UPD_ROUND;
    p->fp8_scaling = 0;
}

/* NVFP4 defaults: bf16-amp outside the quantized GEMMs (as Transformer
 * Engine's recipes keep everything else in the autocast dtype), Hadamard
 * transform and stochastic rounding on, the first and last layers kept. */
static void nvfp4_defaults(amp_policy *p)
{
    p->nvfp4 = 1;
    p->nvfp4_rht = 1;
    p->nvfp4_sr = 1;
    snprintf(p->nvfp4_bf16, sizeof p->nvfp4_bf16, "first,last");
}

/* "nvfp4" followed by any of ":no-hadamard", ":no-sr". */
static amp_status nvfp4_preset(const char *name, amp_policy *p)
{
    set_all(p, AMP_FMT_BF16, AMP_FMT_FP32);
    nvfp4_defaults(p);
    for (const char *c = name + 5; *c == ':';) {
        const char *e = strchr(c + 1, ':');
        size_t len = e ? (size_t)(e - c - 1) : strlen(c + 1);
        if (len == 11 && !strncmp(c + 1, "no-hadamard", 11)) p->nvfp4_rht = 0;
        else if (len == 5 && !strncmp(c + 1, "no-sr", 5)) p->nvfp4_sr = 0;
        else return amp_fail(AMP_EINVAL, "precision '%s': nvfp4 options are :no-hadamard and :no-sr", name);
        c += 1 + len;
    }
    return AMP_OK;
}

amp_status amp_policy_preset(const char *name, amp_policy *p)
{
    memset(p, 0, sizeof *p);
    if (!name) name = "fp32";
    snprintf(p->name, sizeof p->name, "%s", name);
    if (!strcmp(name, "fp32")) set_all(p, AMP_FMT_FP32, AMP_FMT_FP32);
    else if (!strcmp(name, "fp16-amp")) set_all(p, AMP_FMT_FP16, AMP_FMT_FP32);
    else if (!strcmp(name, "bf16-amp")) set_all(p, AMP_FMT_BF16, AMP_FMT_FP32);
    else if (!strcmp(name, "bf16-amp-cpu")) {
        set_all(p, AMP_FMT_BF16, AMP_FMT_FP32);
        p->fp32_ops = CPU_FP32_OPS;
        p->torch_cpu = 1;
    } else if (!strcmp(name, "fp16-pure") || !strcmp(name, "bf16-pure")) {
        /* weights, gradients and optimizer states all in the format (Apex O3
         * style); GEMMs still accumulate in FP32 as tensor cores do. */
        set_all(p, name[0] == 'f' ? AMP_FMT_FP16 : AMP_FMT_BF16, AMP_FMT_FP32);
        p->master = p->optim = p->weight;
        p->has_master = 0;
        p->fp32_ops = 1u << AMP_OP_LOSS;
    } else if (!strcmp(name, "fp8-e4m3") || !strcmp(name, "fp8-hybrid")) {
        /* GEMM operands in FP8 (saturating casts as TE does), FP32 accumulation,
         * BF16 outputs and gradients between layers, FP32 master weights.
         * fp8-e4m3: every operand E4M3, no scaling. fp8-hybrid: E4M3 forward,
         * E5M2 gradient operands, per-tensor scaling (sim/amp_scaler.h). */
        set_all(p, AMP_FMT_BF16, AMP_FMT_FP32);
        p->fwd_in = p->weight = *amp_format_get(AMP_FMT_E4M3);
        p->bwd_in = *amp_format_get(name[4] == 'e' ? AMP_FMT_E4M3 : AMP_FMT_E5M2);
        p->op_flags = AMP_SATURATE;
        p->fp8_scaling = name[4] == 'h';
    } else if (!strncmp(name, "nvfp4", 5) && (!name[5] || name[5] == ':')) {
        return nvfp4_preset(name, p);
    } else {
        return amp_fail(AMP_EINVAL, "unknown precision '%s' (%s)", name, amp_policy_names());
    }
    return AMP_OK;
}

const amp_format *amp_policy_op_format(const amp_policy *p, amp_op op, const amp_format *in)
{
    if ((p->fp32_ops >> op) & 1u) return amp_format_get(AMP_FMT_FP32);
    return in;
}

/* ---- JSON -------------------------------------------------------------------- */
static amp_status bad_key(const char *what, const char *where, const char *key)
{
    return amp_fail(AMP_EINVAL, "%s: unknown policy key '%s%s'", what, where, key);
}

static amp_status get_fmt(const char *what, const cJSON *it, const char *key, amp_format *out)
{
    if (!cJSON_IsString(it)) return amp_fail(AMP_EINVAL, "%s: policy key '%s' must be a format name", what, key);
    amp_status s = amp_format_parse(it->valuestring, out);
    if (s) return amp_fail(AMP_EINVAL, "%s: policy key '%s': unknown format '%s'", what, key, it->valuestring);
    return AMP_OK;
}

static amp_status parse_roles(const char *what, const cJSON *obj, amp_policy *p)
{
    if (!cJSON_IsObject(obj)) return amp_fail(AMP_EINVAL, "%s: policy key 'roles' must be an object", what);
    for (const cJSON *it = obj->child; it; it = it->next) {
        amp_format f;
        amp_format *dst = NULL;
        if (!strcmp(it->string, "weight")) dst = &p->weight;
        else if (!strcmp(it->string, "master")) dst = &p->master;
        else if (!strcmp(it->string, "act")) dst = &p->act;
        else if (!strcmp(it->string, "act_grad")) dst = &p->grad;
        else if (!strcmp(it->string, "weight_grad")) dst = &p->wgrad;
        else if (!strcmp(it->string, "optim_state")) dst = &p->optim;
        else return bad_key(what, "roles.", it->string);
        amp_status s = get_fmt(what, it, it->string, &f);
        if (s) return s;
        *dst = f;
    }
    return AMP_OK;
}

static amp_status parse_gemm(const char *what, const cJSON *obj, amp_policy *p)
{
    if (!cJSON_IsObject(obj)) return amp_fail(AMP_EINVAL, "%s: policy key 'gemm' must be an object", what);
    for (const cJSON *it = obj->child; it; it = it->next) {
        amp_status s = AMP_OK;
        if (!strcmp(it->string, "input")) s = get_fmt(what, it, "gemm.input", &p->fwd_in);
        else if (!strcmp(it->string, "grad_input")) s = get_fmt(what, it, "gemm.grad_input", &p->bwd_in);
        else if (!strcmp(it->string, "accumulator")) {
            s = get_fmt(what, it, "gemm.accumulator", &p->acc);
            if (!s) p->acc_fp32 = p->acc.id == AMP_FMT_FP32;
        } else if (!strcmp(it->string, "promote_every")) {
            if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e9 ||
                it->valuedouble != (double)(int)it->valuedouble)
                return amp_fail(AMP_EINVAL, "%s: policy key 'gemm.promote_every' must be an integer >= 0", what);
            p->acc_chunk = (int)it->valuedouble;
        } else if (!strcmp(it->string, "kernel")) {
            const char *k = cJSON_GetStringValue(it);
            if (k && !strcmp(k, "reproducible")) p->gemm = AMP_GEMM_REPRODUCIBLE;
            else if (k && !strcmp(k, "blas")) p->gemm = AMP_GEMM_BLAS;
            else return amp_fail(AMP_EINVAL, "%s: policy key 'gemm.kernel' must be \"reproducible\" or \"blas\"", what);
        } else return bad_key(what, "gemm.", it->string);
        if (s) return s;
    }
    return AMP_OK;
}

static amp_status get_bool(const char *what, const cJSON *it, const char *key, int *out)
{
    if (!cJSON_IsBool(it)) return amp_fail(AMP_EINVAL, "%s: policy key '%s' must be true or false", what, key);
    *out = cJSON_IsTrue(it);
    return AMP_OK;
}

static amp_status parse_nvfp4(const char *what, const cJSON *obj, amp_policy *p)
{
    if (!cJSON_IsObject(obj)) return amp_fail(AMP_EINVAL, "%s: policy key 'nvfp4' must be an object", what);
    if (!p->nvfp4) nvfp4_defaults(p);
    for (const cJSON *it = obj->child; it; it = it->next) {
        amp_status s = AMP_OK;
        if (!strcmp(it->string, "hadamard")) s = get_bool(what, it, "nvfp4.hadamard", &p->nvfp4_rht);
        else if (!strcmp(it->string, "stochastic_rounding")) s = get_bool(what, it, "nvfp4.stochastic_rounding", &p->nvfp4_sr);
        else if (!strcmp(it->string, "bf16_layers")) {
            if (!cJSON_IsArray(it)) return amp_fail(AMP_EINVAL, "%s: policy key 'nvfp4.bf16_layers' must be an array", what);
            char buf[sizeof p->nvfp4_bf16];
            size_t len = 0;
            buf[0] = 0;
            for (const cJSON *e = it->child; e; e = e->next) {
                const char *v = cJSON_GetStringValue(e);
                if (!v || !*v || strchr(v, ','))
                    return amp_fail(AMP_EINVAL, "%s: policy key 'nvfp4.bf16_layers' holds layer names (no commas)", what);
                size_t add = strlen(v) + (len ? 1 : 0);
                if (len + add >= sizeof buf)
                    return amp_fail(AMP_EINVAL, "%s: policy key 'nvfp4.bf16_layers' is too long", what);
                snprintf(buf + len, sizeof buf - len, "%s%s", len ? "," : "", v);
                len += add;
            }
            memcpy(p->nvfp4_bf16, buf, sizeof buf);
        } else return bad_key(what, "nvfp4.", it->string);
        if (s) return s;
    }
    return AMP_OK;
}

amp_status amp_policy_from_json(const char *text, const char *what, amp_policy *p)
{
    const char *err = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &err, 0);
    if (!root) {   /* where the parser stopped, as line:column (1-based) */
        long line = 1, col = 1;
        for (const char *c = text; err && c < err && *c; c++) {
            if (*c == '\n') { line++; col = 1; } else col++;
        }
        int end = !err || !*err;
        return amp_fail(AMP_EINVAL, "%s:%ld:%ld: not valid JSON (%s)", what, line, col,
                        end ? "the text ends before the JSON does: truncated?" : "unexpected text here");
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return amp_fail(AMP_EINVAL, "%s: not a JSON object", what);
    }
    amp_status s = AMP_OK;
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(root, "base");
    if (base && !cJSON_IsString(base)) s = amp_fail(AMP_EINVAL, "%s: policy key 'base' must be a preset name", what);
    if (!s) s = amp_policy_preset(base ? base->valuestring : "fp32", p);
    if (s && base) s = amp_fail(AMP_EINVAL, "%s: policy key 'base': unknown preset '%s' (%s)", what, base->valuestring,
                                amp_policy_names());
    for (const cJSON *it = root->child; it && !s; it = it->next) {
        const char *k = it->string;
        if (!strcmp(k, "base")) continue;
        if (!strcmp(k, "name")) {
            if (!cJSON_IsString(it)) s = amp_fail(AMP_EINVAL, "%s: policy key 'name' must be a string", what);
            else snprintf(p->name, sizeof p->name, "%s", it->valuestring);
        } else if (!strcmp(k, "roles")) {
            s = parse_roles(what, it, p);
        } else if (!strcmp(k, "gemm")) s = parse_gemm(what, it, p);
        else if (!strcmp(k, "fp32_ops")) {
            if (!cJSON_IsArray(it)) { s = amp_fail(AMP_EINVAL, "%s: policy key 'fp32_ops' must be an array", what); break; }
            p->fp32_ops = 0;
            for (const cJSON *e = it->child; e && !s; e = e->next) {
                int found = -1;
                for (int o = 0; o < AMP_OP_COUNT; o++)
                    if (cJSON_IsString(e) && !strcmp(e->valuestring, op_names[o])) found = o;
                if (found < 0) s = amp_fail(AMP_EINVAL, "%s: policy key 'fp32_ops': unknown op '%s'", what,
                                            cJSON_IsString(e) ? e->valuestring : "?");
                else p->fp32_ops |= 1u << found;
            }
        } else if (!strcmp(k, "rounding")) {
            if (!cJSON_IsString(it) || amp_rounding_parse(it->valuestring, &p->mode))
                s = amp_fail(AMP_EINVAL, "%s: policy key 'rounding': unknown mode '%s' (rne, rna, rtz, rup, rdn, rto, sr)",
                             what, cJSON_IsString(it) ? it->valuestring : "?");
        } else if (!strcmp(k, "sr_bits")) {
            if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 64 ||
                it->valuedouble != (double)(int)it->valuedouble)
                s = amp_fail(AMP_EINVAL, "%s: policy key 'sr_bits' must be 0..64", what);
            else p->sr_bits = (int)it->valuedouble;
        } else if (!strcmp(k, "saturate_operands")) {
            if (!cJSON_IsBool(it)) s = amp_fail(AMP_EINVAL, "%s: policy key 'saturate_operands' must be true or false", what);
            else p->op_flags = cJSON_IsTrue(it) ? AMP_SATURATE : 0;
        } else if (!strcmp(k, "fp8_scaling")) {
            if (!cJSON_IsBool(it)) s = amp_fail(AMP_EINVAL, "%s: policy key 'fp8_scaling' must be true or false", what);
            else p->fp8_scaling = cJSON_IsTrue(it);
        } else if (!strcmp(k, "kernels")) {
            const char *v = cJSON_IsString(it) ? it->valuestring : "";
            if (!strcmp(v, "default")) p->torch_cpu = 0;
            else if (!strcmp(v, "torch_cpu")) p->torch_cpu = 1;
            else s = amp_fail(AMP_EINVAL, "%s: policy key 'kernels' must be default or torch_cpu", what);
        } else if (!strcmp(k, "update")) {
            const char *v = cJSON_IsString(it) ? it->valuestring : "";
            if (!strcmp(v, "round") || !strcmp(v, "rne")) p->update = AMP_UPD_ROUND;
            else if (!strcmp(v, "sr")) p->update = AMP_UPD_SR;
            else if (!strcmp(v, "kahan")) p->update = AMP_UPD_KAHAN;
            else s = amp_fail(AMP_EINVAL, "%s: policy key 'update' must be round, sr or kahan", what);
        } else if (!strcmp(k, "nvfp4")) s = parse_nvfp4(what, it, p);
        else s = bad_key(what, "", k);
    }
    cJSON_Delete(root);
    if (s) return s;
    p->has_master = p->master.id == AMP_FMT_FP32 && p->weight.id != AMP_FMT_FP32;
    if (!p->has_master) p->master = p->weight;
    if (p->nvfp4 && !p->has_master)
        return amp_fail(AMP_EINVAL, "%s: policy key 'nvfp4' needs FP32 master weights (roles.master fp32, "
                        "roles.weight narrower)", what);
    if (!p->acc_fp32 && p->acc.id == AMP_FMT_FP32) p->acc_fp32 = 1;
    return AMP_OK;
}

amp_status amp_policy_load(const char *path, amp_policy *p)
{
    char *text;
    size_t len;
    amp_status s = amp_read_file(path, 1 << 20, &text, &len);
    if (s) return s;
    s = amp_policy_from_json(text, path, p);
    free(text);
    return s;
}

char *amp_policy_to_json(const amp_policy *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *roles = cJSON_AddObjectToObject(o, "roles"), *gemm = cJSON_AddObjectToObject(o, "gemm");
    cJSON_AddStringToObject(o, "name", p->name);
    cJSON_AddStringToObject(roles, "weight", p->weight.name);
    cJSON_AddStringToObject(roles, "master", p->has_master ? p->master.name : p->weight.name);
    cJSON_AddStringToObject(roles, "act", p->act.name);
    cJSON_AddStringToObject(roles, "act_grad", p->grad.name);
    cJSON_AddStringToObject(roles, "weight_grad", p->wgrad.name);
    cJSON_AddStringToObject(roles, "optim_state", p->optim.name);
    cJSON_AddStringToObject(gemm, "input", p->fwd_in.name);
    cJSON_AddStringToObject(gemm, "grad_input", p->bwd_in.name);
    cJSON_AddStringToObject(gemm, "accumulator", p->acc_fp32 ? "fp32" : p->acc.name);
    cJSON_AddNumberToObject(gemm, "promote_every", p->acc_chunk);
    cJSON_AddStringToObject(gemm, "kernel", p->gemm == AMP_GEMM_BLAS ? "blas" : "reproducible");
    cJSON *ops = cJSON_AddArrayToObject(o, "fp32_ops");
    for (int i = 0; i < AMP_OP_COUNT; i++)
        if ((p->fp32_ops >> i) & 1u) cJSON_AddItemToArray(ops, cJSON_CreateString(op_names[i]));
    cJSON_AddStringToObject(o, "rounding", amp_rounding_name(p->mode));
    cJSON_AddNumberToObject(o, "sr_bits", p->sr_bits);
    cJSON_AddBoolToObject(o, "saturate_operands", (p->op_flags & AMP_SATURATE) != 0);
    cJSON_AddStringToObject(o, "update", p->update == AMP_UPD_SR ? "sr" : p->update == AMP_UPD_KAHAN ? "kahan" : "round");
    cJSON_AddBoolToObject(o, "fp8_scaling", p->fp8_scaling);
    cJSON_AddStringToObject(o, "kernels", p->torch_cpu ? "torch_cpu" : "default");
    if (p->nvfp4) {                          /* only then: other policies' config.json unchanged */
        cJSON *nv = cJSON_AddObjectToObject(o, "nvfp4"), *ly = cJSON_AddArrayToObject(nv, "bf16_layers");
        cJSON_AddBoolToObject(nv, "hadamard", p->nvfp4_rht);
        cJSON_AddBoolToObject(nv, "stochastic_rounding", p->nvfp4_sr);
        char buf[sizeof p->nvfp4_bf16], *save = NULL;
        memcpy(buf, p->nvfp4_bf16, sizeof buf);
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
            cJSON_AddItemToArray(ly, cJSON_CreateString(t));
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}
