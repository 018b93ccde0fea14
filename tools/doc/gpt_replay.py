#!/usr/bin/python3
"""gpt_replay.py - PyTorch replays a `tgraph train --text` GPT run: the same
initial weights, the same training batches, the same evaluation batches.

It answers one question: given the same randomness, does PyTorch's training
land where tgraph's does? If so, a difference between tgraph's and nanoGPT's
validation losses is the randomness (the initial weights and the batch
order), not the computation.

What is tgraph's here: the initial weights (`tgraph run gpt --seed S
--save-weights`, the initialisation `train --text --seed S` uses), and the
window starts of every batch, drawn as engine/rng.c and engine/train/text.c
draw them (xoshiro256** seeded by splitmix64; training batches from the seed
^ 0xda7a5eed, each evaluation from seed ^ 0x65766131 ^ step << 20 ^ split
<< 60; tg_rng_below's rejection sampling). What is PyTorch's: the model
(the oracle's GPT, nanoGPT's model.py to 0.0), torch.optim.AdamW with
nanoGPT's parameter groups, clip_grad_norm_, nanoGPT's get_lr, cross-entropy.

The run is nanoGPT's CPU run on Tiny Shakespeare (4 layers, 4 heads, 128
wide, block 64, batch 12, no dropout or bias, 2000 steps, lr 1e-3 with 100
warmup steps and a cosine to 1e-4, AdamW (0.9, 0.99), weight decay 0.1,
clip 1). It prints tgraph's evaluation lines:

  step 250: train loss 2.4247, val loss 2.4341

Compare them with the same `tgraph train --text` run:

  build/tgraph train --text ../shared/data/tinyshakespeare/input.txt \
      --set n_layer=4 n_head=4 n_embd=128 block_size=64 dropout=0 bias=false \
      --batch-size 12 --max-steps 2000 --lr 1e-3 --min-lr 1e-4 --lr-decay-iters 2000 \
      --warmup 100 --beta2 0.99 --weight-decay 0.1 --clip 1 --eval-interval 250 \
      --eval-iters 200 --seed 1337 --out-dir runs/gpt-1337
  /usr/bin/python3 tools/doc/gpt_replay.py --seed 1337

Needs Debian's python3-torch and python3-numpy, build/tgraph, and
../shared/oracle (layers.py, st.py). About 10 minutes on one thread.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(ROOT, "..", "shared")
sys.path.insert(0, os.path.join(SHARED, "oracle"))
import st                       # noqa: E402  (the oracle's safetensors reader)
from layers import GPT          # noqa: E402  (nanoGPT's GPT)

MASK = (1 << 64) - 1
N_LAYER, N_HEAD, N_EMBD, BLOCK, BATCH = 4, 4, 128, 64, 12


class Rng:
    """engine/rng.c: xoshiro256** with splitmix64 seeding."""

    def __init__(self, seed):
        x, self.s = seed & MASK, []
        for _ in range(4):
            x = (x + 0x9e3779b97f4a7c15) & MASK
            z = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & MASK
            z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK
            self.s.append(z ^ (z >> 31))

    @staticmethod
    def _rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & MASK

    def next(self):
        s = self.s
        r = (self._rotl((s[1] * 5) & MASK, 7) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = self._rotl(s[3], 45)
        return r

    def below(self, n):
        """tg_rng_below: uniform in [0, n), by rejection."""
        limit = MASK - MASK % n
        while True:
            x = self.next()
            if x < limit:
                return x % n


def batch(data, rng):
    """tg_text_batch: BATCH windows of BLOCK ids and their next ids."""
    ix = [rng.below(len(data) - BLOCK) for _ in range(BATCH)]
    x = torch.from_numpy(np.stack([data[i:i + BLOCK] for i in ix]))
    y = torch.from_numpy(np.stack([data[i + 1:i + 1 + BLOCK] for i in ix]))
    return x, y


def get_lr(it, lr=1e-3, warmup=100, decay_iters=2000, min_lr=1e-4):
    """nanoGPT's train.py get_lr."""
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay_iters:
        return min_lr
    ratio = (it - warmup) / (decay_iters - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


def initial_weights(tgraph, seed, vocab):
    """tgraph's initialisation for this seed, by state_dict name."""
    with tempfile.TemporaryDirectory(prefix="gpt-replay.") as d:
        idx, w = os.path.join(d, "idx.npy"), os.path.join(d, "init.safetensors")
        np.save(idx, np.zeros((BATCH, BLOCK), np.int64))
        subprocess.run([tgraph, "run", "gpt", "--set", f"vocab_size={vocab}",
                        f"block_size={BLOCK}", f"n_layer={N_LAYER}", f"n_head={N_HEAD}",
                        f"n_embd={N_EMBD}", "dropout=0", "bias=false", "--seed", str(seed),
                        "--input", f"idx={idx}", "--out", os.devnull, "--save-weights", w],
                       check=True, stderr=subprocess.DEVNULL)
        tensors, _ = st.load_file(w)
    return {k: torch.from_numpy(np.array(v)) for k, v in tensors.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--eval-interval", type=int, default=250)
    ap.add_argument("--eval-iters", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--text", default=os.path.join(SHARED, "data", "tinyshakespeare", "input.txt"))
    ap.add_argument("--tgraph", default=os.path.join(ROOT, "build", "tgraph"))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    text = open(a.text, encoding="utf-8", newline=None).read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = np.array([stoi[c] for c in text], dtype=np.int64)
    n = len(ids)
    splits = (ids[:int(n * 0.9)], ids[int(n * 0.9):])            # train, val

    model = GPT(len(chars), BLOCK, N_LAYER, N_HEAD, N_EMBD, 0.0, bias=False)
    sd = initial_weights(a.tgraph, a.seed, len(chars))
    sd.setdefault("lm_head.weight", sd["transformer.wte.weight"])
    model.load_state_dict(sd, strict=True)

    @torch.no_grad()
    def evaluate(step):
        model.eval()
        means = []
        for split, data in enumerate(splits):
            r = Rng(a.seed ^ 0x65766131 ^ (step << 20) ^ (split << 60))
            total = 0.0
            for _ in range(a.eval_iters):
                x, y = batch(data, r)
                total += F.cross_entropy(model(x).view(-1, len(chars)), y.view(-1)).item()
            means.append(total / a.eval_iters)
        model.train()
        print(f"step {step}: train loss {means[0]:.4f}, val loss {means[1]:.4f}", flush=True)

    params = list(model.parameters())
    opt = torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
                             {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99))
    data_rng = Rng(a.seed ^ 0xda7a5eed)
    t0 = time.time()
    for it in range(a.steps + 1):
        if it % a.eval_interval == 0 or it == a.steps:
            evaluate(it)
        if it == a.steps:
            break
        for g in opt.param_groups:
            g["lr"] = get_lr(it, decay_iters=a.steps)
        x, y = batch(splits[0], data_rng)
        loss = F.cross_entropy(model(x).view(-1, len(chars)), y.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    print(f"replayed {a.steps} steps in {time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
