/* ampsim — loss-scaling and FP8-scaling strategies with the exact semantics of
 * the systems they are named after (docs/scalers.md), their SPEC
 * parser (docs/scalers.md), and the per-tensor FP8 quantizers of the fp8 policies.
 *
 * Two families share one SPEC syntax, `name[:key=value,...]`:
 *   loss scalers  none static torch apex deepspeed megatron keras adaptive underflow
 *                 -> amp_scaler (one scale per step; adaptive also one per tensor)
 *   FP8 scalers   delayed current mx block
 *                 -> amp_fp8_scaler (per-tensor / per-block scales, quantize)
 *
 * A training step with a loss scaler reads:
 *     float s = amp_scaler_scale(&sc);             // before backward (float32)
 *     (layer-wise: amp_scaler_tensor_scale(&sc, i) for gradient tensor i)
 *     backward with the loss gradient times s; round gradients with statistics;
 *     unscale in FP32 with amp_scaler_inv(s); found_inf = any non-finite value
 *     amp_scaler_update(&sc, &obs, &res);          // res.skipped, events, scales
 * amp_scaler_update returns AMP_ERUN (message set, res filled) when the rule
 * stops the run (DeepSpeed's raise at the minimum scale). */
#ifndef AMP_SCALER_H
#define AMP_SCALER_H

#include "amp_base.h"
#include "amp_format.h"
#include "amp_round.h"

/* ---- SPEC ----------------------------------------------------------------- */
typedef enum amp_scaler_kind {
    AMP_SCALER_NONE, AMP_SCALER_STATIC, AMP_SCALER_TORCH, AMP_SCALER_APEX,
    AMP_SCALER_DEEPSPEED, AMP_SCALER_MEGATRON, AMP_SCALER_KERAS, AMP_SCALER_ADAPTIVE,
    AMP_SCALER_UNDERFLOW,
    /* FP8 per-tensor / per-block strategies (amp_fp8_scaler) */
    AMP_SCALER_DELAYED, AMP_SCALER_CURRENT, AMP_SCALER_MX, AMP_SCALER_BLOCK,
    AMP_SCALER_KIND_COUNT
} amp_scaler_kind;

typedef enum amp_amax_algo { AMP_AMAX_MAX, AMP_AMAX_MOST_RECENT } amp_amax_algo;

/* A parsed SPEC: every key of every strategy, defaults filled for `kind`.
 * Fields a strategy does not use keep neutral values. */
typedef struct amp_scaler_spec {
    amp_scaler_kind kind;
    char text[160];        /* the SPEC as given (truncated), for messages and logs */
    double init;           /* initial (or static) scale */
    double growth, backoff;
    double min;            /* 0 = none (apex default) */
    double max;            /* +inf = none */
    long interval;         /* torch/megatron/keras/underflow interval; apex/deepspeed window */
    long hysteresis;       /* deepspeed, megatron */
    int consecutive;       /* deepspeed consecutive_hysteresis */
    int raise;             /* deepspeed raise_error_at_min_scale */
    int skip;              /* static: skip steps with inf/NaN (apex static: 0) */
    int pow2;              /* current, block: power-of-two scales */
    double underflow;      /* adaptive: allowed predicted underflow rate */
    double flush;          /* underflow: flushed-fraction threshold */
    double headroom;       /* adaptive, underflow: amax*scale*headroom <= max_finite */
    long history;          /* delayed: amax history length */
    long margin;           /* delayed: scale /= 2^margin */
    amp_amax_algo algo;    /* delayed */
    long block;            /* mx: block length; block: tile side */
    int exp_ceil;          /* mx: 0 = floor (OCP reference), 1 = ceil (TE) */
    int fmt_hybrid;        /* FP8 kinds: 1 = by role (E4M3 forward, E5M2 gradients) */
    amp_format fmt;        /* the format when !fmt_hybrid; adaptive/underflow: gradient format */
} amp_scaler_spec;

/* Parses `text` (docs/scalers.md). Numbers may be written 65536, 2^16, 1e4, 0x1p16.
 * Unknown names or keys, repeated keys and out-of-range values are AMP_EINVAL
 * with a message naming the spec and the key. */
AMP_API amp_status amp_scaler_spec_parse(const char *text, amp_scaler_spec *out);
/* The canonical SPEC with every key of its strategy ("torch:init=65536,...");
 * returns what snprintf returns. */
AMP_API int amp_scaler_spec_str(const amp_scaler_spec *s, char *buf, size_t len);
AMP_API const char *amp_scaler_kind_name(amp_scaler_kind k);
/* 1 for delayed, current, mx, block (amp_fp8_scaler), 0 for loss scalers. */
AMP_API int amp_scaler_kind_is_fp8(amp_scaler_kind k);
/* Multi-line help text: every strategy with its keys and defaults. */
AMP_API const char *amp_scaler_spec_help(void);

/* ---- loss scalers ---------------------------------------------------------- */
/* Events of one update. Skipping is not an event: read amp_scaler_result.skipped. */
typedef enum amp_scaler_event_kind {
    AMP_SEV_BACKOFF,        /* scale reduced after inf/NaN */
    AMP_SEV_GROWTH,         /* scale grown after a run of finite steps */
    AMP_SEV_HYSTERESIS,     /* inf/NaN absorbed by hysteresis (scale kept) */
    AMP_SEV_GROWTH_REFUSED, /* torch: the grown scale would be inf, not applied */
    AMP_SEV_AT_MIN,         /* warning: inf/NaN while already at the minimum scale */
    AMP_SEV_MIN_ERROR,      /* deepspeed raise at minimum: the run stops (AMP_ERUN) */
    AMP_SEV_ZERO,           /* warning: the scale collapsed to 0 (torch has no minimum) */
    AMP_SEV_INF,            /* warning: the scale grew to +inf (megatron, keras: no maximum) */
    AMP_SEV_UNDERFLOW_RAISE,/* underflow: scale raised early because of flushed values */
    AMP_SEV_LAYER,          /* adaptive: per-tensor scales changed */
    AMP_SEV_ERROR,          /* the framework's update raised (deepspeed: an inf scale cannot
                             * be printed as an integer); the run stops (AMP_ERUN) */
    AMP_SEV_COUNT
} amp_scaler_event_kind;
AMP_API const char *amp_scaler_event_name(amp_scaler_event_kind k);

#define AMP_SCALER_MAX_EVENTS 8
typedef struct amp_scaler_event {
    amp_scaler_event_kind kind;
    long tensor;            /* tensor index, -1 for the global scale */
    char detail[120];
} amp_scaler_event;

typedef struct amp_scaler_result {
    long step;              /* 0-based index of this update */
    int skipped;            /* the optimizer step must be skipped */
    float scale_used;       /* global scale of this step, as float32 (what multiplies the loss) */
    float scale_after;      /* global scale for the next step, as float32 */
    double held_used;       /* the same two scales as the framework holds them: a double for */
    double held_after;      /* apex and deepspeed (2^128 stays 2^128), else the float32 value */
    int n_events;
    int events_dropped;     /* events beyond AMP_SCALER_MAX_EVENTS */
    amp_scaler_event events[AMP_SCALER_MAX_EVENTS];
} amp_scaler_result;

/* One gradient tensor's observation: the statistics of rounding the *scaled*
 * gradient (scale = amp_scaler_tensor_scale(i) of this step) into its format,
 * as amp_round_f32 produces them (n, classes incl. flushed, amax, log2 hist). */
typedef struct amp_scaler_tensor {
    const char *name;        /* for event details; may be NULL */
    int is_act;              /* 1 activation gradient, 0 weight gradient */
    const amp_format *fmt;   /* format the gradient was rounded into; NULL = spec fmt */
    const amp_stats *st;     /* may be NULL (tensor ignored) */
    float scale;             /* scale of the values in st; 0 = the step's global scale
                              * (amp_scaler_scale before the update). A layer-wise
                              * trainer sets amp_scaler_tensor_scale(i) here. */
} amp_scaler_tensor;

typedef struct amp_scaler_obs {
    int found_inf;           /* any non-finite value in the unscaled gradients */
    size_t n_tensors;        /* tensor i keeps its index from step to step */
    const amp_scaler_tensor *tensors;
} amp_scaler_obs;

/* Scaler state. Callers read it through the functions below; the fields are
 * public for tests and checkpoints, not for writing. */
typedef struct amp_scaler {
    amp_scaler_spec spec;
    long step;               /* updates done */
    float scale;             /* float32 scale (torch, megatron, keras, underflow, static) */
    double dscale;           /* Python-float scale (apex, deepspeed) */
    long tracker;            /* growth tracker / apex unskipped */
    long hyst;               /* deepspeed cur_hysteresis / megatron hysteresis tracker */
    long last_overflow;      /* deepspeed last_overflow_iter */
    float ceiling;           /* underflow: early growth stays below it (the last scale
                              * that overflowed; 0 = none) until a periodic growth */
    int failed;              /* deepspeed raised: further updates refused */
    int gexp;                /* adaptive: global scale = 2^gexp */
    size_t n_tensors;        /* adaptive */
    int *texp;               /* adaptive: per-tensor scale = 2^texp[i] */
} amp_scaler;

/* Initializes from a loss-scaler spec (AMP_EINVAL for an FP8 kind). */
AMP_API amp_status amp_scaler_init(amp_scaler *sc, const amp_scaler_spec *spec);
/* Parses and initializes in one call. */
AMP_API amp_status amp_scaler_init_str(amp_scaler *sc, const char *spec);
AMP_API void amp_scaler_free(amp_scaler *sc);
/* The loss scale to apply before backward, as float32: every framework
 * multiplies the float32 loss by a float32 scale (apex and deepspeed convert
 * their double to float32 there, so a double above FLT_MAX is inf here and the
 * scaled loss overflows). none: 1. adaptive: the one scale that serves every
 * tensor (see scaler_loss.c). */
AMP_API float amp_scaler_scale(const amp_scaler *sc);
/* The global scale as the framework holds it: the double of apex and
 * deepspeed, the float32 value of every other strategy (widened exactly). */
AMP_API double amp_scaler_held(const amp_scaler *sc);
/* 1 if the strategy holds its scale in a double (apex, deepspeed). */
AMP_API int amp_scaler_kind_held_double(amp_scaler_kind k);
/* Prints a held scale v into buf: "%.9g" of the float32 value for scalers that
 * hold a float32 (as before), the shortest "%.{N}g" that reads back to the same
 * double for apex and deepspeed. Returns what snprintf returns. */
AMP_API int amp_scaler_fmt_scale(amp_scaler_kind k, double v, char *buf, size_t len);
/* Scale of gradient tensor i: per tensor for layer-wise strategies (adaptive;
 * `init` for a tensor not seen yet), else the global scale. */
AMP_API float amp_scaler_tensor_scale(const amp_scaler *sc, size_t i);
/* 1 if the strategy keeps one scale per tensor (adaptive). */
AMP_API int amp_scaler_is_layerwise(const amp_scaler *sc);
/* 1 if the strategy reads per-tensor statistics (adaptive, underflow). */
AMP_API int amp_scaler_needs_stats(const amp_scaler *sc);
/* The unscale factor as the frameworks compute it: float(1/double(s)). */
AMP_API float amp_scaler_inv(float s);
/* Applies one step's observation (obs may be NULL = finite, no statistics).
 * Fills *res. AMP_ERUN when the rule stops the run (message set, res filled:
 * skipped, scale unchanged, an AMP_SEV_MIN_ERROR event); every later call
 * returns AMP_ERUN again. */
AMP_API amp_status amp_scaler_update(amp_scaler *sc, const amp_scaler_obs *obs, amp_scaler_result *res);

/* State as a byte image (little-endian, versioned) for checkpoints: *buf is
 * malloc'ed. Loading needs a scaler initialized from an equivalent SPEC (the
 * canonical forms are compared) and restores it exactly; AMP_EFORMAT for a
 * bad image or another SPEC. */
AMP_API amp_status amp_scaler_save(const amp_scaler *sc, uint8_t **buf, size_t *len);
AMP_API amp_status amp_scaler_load(amp_scaler *sc, const uint8_t *buf, size_t len);

/* ---- FP8 per-tensor / per-block scaling ----------------------------------- */
typedef enum amp_fp8_role { AMP_FP8_ACT, AMP_FP8_WEIGHT, AMP_FP8_GRAD } amp_fp8_role;

typedef struct amp_fp8_tstate {
    float scale;             /* delayed: scale for the next quantize (TE init 1) */
    float *hist;             /* delayed: ring of the last `history` amaxes */
    long count;              /* amaxes recorded */
} amp_fp8_tstate;

typedef struct amp_fp8_scaler {
    amp_scaler_spec spec;
    size_t n;                /* tensors with state */
    amp_fp8_tstate *t;
} amp_fp8_scaler;

typedef struct amp_fp8_info {
    const amp_format *fmt;   /* format the tensor went into */
    float amax;              /* max |x| of the unscaled tensor; delayed, current: NaN values
                              * skipped (TE's fmaxf); mx, block: NaN if any NaN */
    float scale;             /* multiplier used (q = x*scale); per-block kinds: block 0's */
    float scale_next;        /* delayed: scale for the tensor's next quantize; else = scale */
    size_t n_blocks;         /* 1 for per-tensor strategies */
    int kept;                /* delayed/current: amax 0 or non-finite -> scale kept / 1 */
    size_t nonfinite;        /* inf and NaN values written to y (counted as they are written; 0 without y) */
} amp_fp8_info;

AMP_API amp_status amp_fp8_init(amp_fp8_scaler *sc, const amp_scaler_spec *spec);
AMP_API amp_status amp_fp8_init_str(amp_fp8_scaler *sc, const char *spec);
AMP_API void amp_fp8_free(amp_fp8_scaler *sc);
/* The format of a role: hybrid -> E4M3 for ACT and WEIGHT, E5M2 for GRAD;
 * else the spec's fmt for every role. */
AMP_API const amp_format *amp_fp8_format(const amp_fp8_scaler *sc, amp_fp8_role role);
/* Number of scales amp_fp8_quantize writes for a (rows x cols) tensor. */
AMP_API size_t amp_fp8_nblocks(const amp_fp8_scaler *sc, amp_fp8_role role, size_t rows, size_t cols);
/* Quantizes x (rows x cols, row-major; a vector is 1 x n) for its role.
 * `tensor` is the caller's stable id of this tensor stream (state of delayed
 * scaling lives there; one call = one step of that tensor).
 *   q[i]  = cast_sat(x[i]*scale) in the format (RNE, saturating)  (may be NULL)
 *   y[i]  = the dequantized value (q * scale_inv in float32)       (may be NULL,
 *           may alias x)
 *   scale_inv[b] = the dequantization factor of block b             (may be NULL)
 *   st    += statistics of the rounding of the scaled values      (may be NULL)
 *   info->nonfinite = inf and NaN values written to y (counted as y is written)
 * delayed: scale from amaxes of earlier calls, then this amax is recorded;
 * current: fp8_max/amax now; mx: 1 x `block` runs along rows with an E8M0
 * scale; block: 1 x size runs (ACT, GRAD) or size x size tiles (WEIGHT). */
AMP_API amp_status amp_fp8_quantize(amp_fp8_scaler *sc, size_t tensor, amp_fp8_role role,
                                    const float *x, size_t rows, size_t cols, float *q, float *y,
                                    float *scale_inv, amp_stats *st, amp_fp8_info *info);
/* Checkpoint image of the per-tensor state (same contract as amp_scaler_save). */
AMP_API amp_status amp_fp8_save(const amp_fp8_scaler *sc, uint8_t **buf, size_t *len);
AMP_API amp_status amp_fp8_load(amp_fp8_scaler *sc, const uint8_t *buf, size_t len);
/* Delayed scaling without data: records `amax` (float32) for `tensor` and
 * returns the scale after the update; *scale_used gets the scale before it.
 * Also works for current/mx/block (stateless: the scale of that amax). */
AMP_API amp_status amp_fp8_observe_amax(amp_fp8_scaler *sc, size_t tensor, const amp_format *fmt,
                                        float amax, float *scale_used, float *scale_after);

/* sizeof of a public type of this header by name ("amp_scaler_spec",
 * "amp_scaler", "amp_scaler_event", "amp_scaler_result", "amp_scaler_tensor",
 * "amp_scaler_obs", "amp_fp8_scaler", "amp_fp8_info"), 0 for any other name:
 * for foreign-function bindings to check their struct mirrors. */
AMP_API size_t amp_scaler_abi_size(const char *type);

#endif
