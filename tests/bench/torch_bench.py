#!/usr/bin/python3
"""PyTorch's side of `tgraph bench`: the same measurements, the same JSON line.

  torch_bench.py LAYER [--set KEY=VALUE]... [--threads N] [--min-time S] [--warmup N]
  torch_bench.py gemm --m M --n N --k K [--threads N] [--min-time S] [--warmup N]

LAYER is built by the reference oracle (shared/oracle/make_case.py, found at ../shared/oracle
relative to the repository, or --oracle DIR) with its keys and defaults, from
torch.manual_seed(0), in float32, inputs ~ randn of the configured shape (masks 0/-100), and
a fixed random dy shaped like the output. Timed, each after --warmup calls, until --min-time
seconds and at least 5 calls, median reported:
  train_step_ms  model.train(); y = forward; (y*dy).sum().backward(); Adam step; zero_grad
  infer_ms       model.eval(); forward under torch.no_grad()
A layer without parameters (full_attention) differentiates its inputs instead, as
`tgraph bench` does. peak_rss_mb is this process's (resource.getrusage ru_maxrss).
The gemm form times torch.mm(A, B, out=C) in float32 and prints GFLOPS.

Exit status: 0, or 2 with one line on stderr for bad arguments. Not a test.
"""
import argparse
import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def fail(msg):
    print(f"torch_bench: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_sets(items, defaults, layer):
    cfg = dict(defaults)
    for it in items or []:
        k, eq, v = it.partition("=")
        if not eq or not k:
            fail(f"--set wants KEY=VALUE, got '{it}'")
        if k not in cfg:
            fail(f"{layer}: unknown key '{k}' (known: {', '.join(cfg)})")
        try:
            cfg[k] = json.loads(v)
        except json.JSONDecodeError:
            cfg[k] = v
    return cfg


def time_median(fn, warmup, min_time):
    for _ in range(warmup):
        fn()
    ts, total = [], 0.0
    while len(ts) < 5 or total < min_time:
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        total += ts[-1]
    ts.sort()
    n = len(ts)
    return ts[n // 2] if n % 2 else 0.5 * (ts[n // 2 - 1] + ts[n // 2])


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # Linux: KiB


def bench_gemm(torch, a):
    for flag in ("m", "n", "k"):
        if getattr(a, flag) is None:
            fail(f"gemm: missing --{flag} {flag.upper()}")
    M, N, K = a.m, a.n, a.k
    g = torch.Generator().manual_seed(0)
    A = torch.rand(M, K, generator=g, dtype=torch.float32) - 0.5
    B = torch.rand(K, N, generator=g, dtype=torch.float32) - 0.5
    C = torch.empty(M, N, dtype=torch.float32)
    t = time_median(lambda: torch.mm(A, B, out=C), a.warmup, a.min_time)
    print(json.dumps({"gemm": [M, N, K], "gflops": round(2.0 * M * N * K / t * 1e-9, 2),
                      "threads": torch.get_num_threads()}, separators=(",", ":")))


def bench_layer(torch, a):
    sys.path.insert(0, a.oracle)
    try:
        import make_case  # noqa: E402
    except ImportError as e:
        fail(f"cannot import make_case from {a.oracle}: {e}")
    if a.layer not in make_case.SPECS:
        fail(f"unknown layer '{a.layer}' (the oracle has: {', '.join(make_case.SPECS)})")
    spec = make_case.SPECS[a.layer]
    cfg = parse_sets(a.set, spec.defaults, a.layer)
    torch.manual_seed(0)
    try:
        model = spec.build(cfg).float()
        inputs = spec.inputs(cfg)
    except (ValueError, TypeError, RuntimeError, KeyError) as e:
        fail(f"{a.layer}: {e}")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:   # nothing to train: differentiate the inputs, as tgraph bench does
        for k, v in inputs.items():
            if k not in make_case.NON_DIFF_INPUTS:
                v.requires_grad_(True)
    with torch.no_grad():
        y, _ = spec.forward(model, inputs, cfg)
    dy = torch.randn(*y.shape, dtype=torch.float32)
    opt = torch.optim.Adam(params, lr=1e-4) if params else None

    def train_step():
        y, _ = spec.forward(model, inputs, cfg)
        (y * dy).sum().backward()
        if opt is not None:
            opt.step()
            opt.zero_grad()
        else:
            for v in inputs.values():
                v.grad = None

    def infer():
        with torch.no_grad():
            spec.forward(model, inputs, cfg)

    model.train()
    t_train = time_median(train_step, a.warmup, a.min_time)
    model.eval()
    t_infer = time_median(infer, a.warmup, a.min_time)
    print(json.dumps({"layer": a.layer, "config": cfg,
                      "train_step_ms": round(t_train * 1e3, 4),
                      "infer_ms": round(t_infer * 1e3, 4),
                      "params": int(sum(p.numel() for p in params)),
                      "peak_rss_mb": round(peak_rss_mb(), 1),
                      "threads": torch.get_num_threads()}, separators=(",", ":")))


class Parser(argparse.ArgumentParser):
    def error(self, message):   # one line, exit 2
        fail(message)


def main(argv=None):
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("layer", help="a layer of shared/oracle/make_case.py --list, or gemm")
    ap.add_argument("--set", action="append", metavar="KEY=VALUE")
    ap.add_argument("--threads", "-t", type=int)
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--m", type=int)
    ap.add_argument("--n", type=int)
    ap.add_argument("--k", type=int)
    ap.add_argument("--oracle", default=os.path.join(REPO, "..", "shared", "oracle"),
                    help="directory of make_case.py and layers.py (default: ../shared/oracle "
                         "relative to the repository)")
    a = ap.parse_args(argv)
    if a.threads is not None and not 1 <= a.threads <= 64:
        fail(f"--threads wants an integer in [1, 64], got {a.threads}")
    if not 0 <= a.min_time <= 3600:
        fail(f"--min-time wants a number in [0, 3600], got {a.min_time}")
    if a.warmup < 0:
        fail(f"--warmup wants an integer >= 0, got {a.warmup}")
    for flag in ("m", "n", "k"):
        v = getattr(a, flag)
        if v is not None and not 1 <= v <= 65536:
            fail(f"--{flag} wants an integer in [1, 65536], got {v}")
    try:
        import torch
    except ImportError:
        fail("PyTorch is not installed (apt-get install python3-torch)")
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.layer == "gemm":
        bench_gemm(torch, a)
    else:
        if a.m or a.n or a.k:
            fail("--m, --n and --k are for gemm, not a layer")
        bench_layer(torch, a)


if __name__ == "__main__":
    main()
