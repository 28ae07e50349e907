#!/usr/bin/env python3
"""Writes the committed seed corpora of the dataset-CSV, policy-JSON,
scaler-SPEC and report-CSV fuzzers (stdlib only). The checkpoint seeds
(corpus_checkpoint) are real checkpoints written by the library through
tests/fuzz/make_ckpt_seeds.c (build and run command in its header).
Run from anywhere: python3 tests/fuzz/make_seeds_reliability.py"""
import gzip, os

HERE = os.path.dirname(os.path.abspath(__file__))

def write(dirname, files):
    d = os.path.join(HERE, dirname)
    os.makedirs(d, exist_ok=True)
    for name, b in files.items():
        with open(os.path.join(d, name), "wb") as fp:
            fp.write(b if isinstance(b, bytes) else b.encode())

def row(px, label):
    return ",".join(str(p) for p in px) + ",%d\n" % label

r1 = row([0, 0, 5, 13, 9, 1, 0, 0] * 8, 0)
r2 = row([16] * 64, 9)
write("corpus_digits", {
    "two_rows.csv": r1 + r2,
    "crlf.csv": (r1 + r2).replace("\n", "\r\n"),
    "blank_lines.csv": r1 + "\n" + r2 + "\n\n",
    "gzip.csv.gz": gzip.compress((r1 + r2).encode(), mtime=0),
    "spaces.csv": " 1, 2 ," + ",".join(["3"] * 62) + ", 4\n",
    "bad_pixel.csv": row([17] + [0] * 63, 1),
    "bad_label.csv": row([0] * 64, 10),
    "short.csv": "1,2,3\n",
    "long.csv": row([0] * 65, 1),
    "not_int.csv": "a" + r1[1:],
    "empty.csv": "",
})

write("corpus_policy", {
    "full.json": '{"base": "bf16-pure", "roles": {"weight": "bf16", "master": "fp32", "act": "bf16", '
                 '"act_grad": "bf16", "weight_grad": "bf16", "optim_state": "fp32"}, '
                 '"gemm": {"input": "bf16", "grad_input": "bf16", "accumulator": "e5m10", "promote_every": 128}, '
                 '"fp32_ops": ["loss", "softmax"], "rounding": "sr", "sr_bits": 8, '
                 '"saturate_operands": false, "update": "kahan", "fp8_scaling": false, "name": "mine"}',
    "min.json": '{}',
    "fp8.json": '{"base": "fp8-hybrid", "fp8_scaling": true, "saturate_operands": true}',
    "amp.json": '{"base": "fp16-amp", "gemm": {"accumulator": "fp32"}, "fp32_ops": []}',
    "bad_key.json": '{"base": "fp32", "nope": 1}',
    "bad_fmt.json": '{"roles": {"weight": "e9m99"}}',
    "not_object.json": '[1, 2]',
})

write("corpus_scaler_spec", {
    "none": "none", "static": "static:8", "static2": "static:scale=2^10,skip=1",
    "torch": "torch:init=1024,interval=3", "apex": "apex:min=0,max=none",
    "deepspeed": "deepspeed:consecutive=true,raise=0,min=0.5", "megatron": "megatron",
    "keras": "keras:init=32768,interval=2000",
    "delayed": "delayed:algo=most_recent,fmt=e5m2,history=16,margin=2",
    "current": "current:pow2=1", "mx": "mx:exp=ceil,fmt=e2m1", "block": "block:size=128,pow2=0",
    "adaptive": "adaptive:underflow=1e-3,fmt=fp16", "underflow": "underflow:flush=0.001,headroom=2",
    "bad_key": "torch:nope=1", "bad_val": "torch:init=-1", "dup": "torch:init=1,init=2",
})

write("corpus_csv", {
    "metrics.csv": "step,loss,loss_scale,skipped,grad_norm,lr,vanished,nonfinite,val_loss\n"
                   "0,2.30,65536,0,1.5,0.1,0,0,\n1,2.1,32768,1,nan,0.1,0,3,2.2\n",
    "quoted.csv": 'step,event,tensor,detail\n3,skip,,"scale 1, ""x"""\n4,growth,"a\nb",z\n',
    "crlf.csv": "a,b\r\n1,2\r\n3,4\r\n\r\n",
    "nums.csv": "x\ninf\n-inf\n1e400\n0x1p3\n 1\n-0\n",
    "bad_fields.csv": "a,b\n1\n",
    "bad_quote.csv": 'a\n"abc\n',
    "blank_mid.csv": "a\n1\n\n2\n",
    "empty_head.csv": "a,,b\n1,2,3\n",
})
print("seeds written under", HERE)
