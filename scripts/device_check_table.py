#!/usr/bin/env python3
"""PyTorch beside sdpabench on the shapes of cases/gpu/perf.cases (scripts/device_check.sh, steps 5 and 7).

Reads sdpabench's P-mode JSONL reports (REPORTS/perf-MODE.jsonl), times PyTorch's
scaled_dot_product_attention on the same shapes with its cuDNN backend and with its flash backend
forced (fwd and bwd apart, CUDA events, the same launch gate as sdpabench's EventTimer), and prints a
markdown table: TFLOP/s of each by sdpabench's FLOP count, the percentage of the device's bf16 dense
peak, and the ratio of the times. Writes REPORTS/comparison-MODE.json (one record per row).

    device_check_table.py REPORTS warm|cold

Needs a CUDA device and torch; every backend PyTorch refuses for a shape is a line, not the end.
"""
import json
import re
import statistics
import sys


def records(path):
    """The JSONL records of `path` ([] when the file is absent)."""
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def shape(prb):
    """(B, H_q, H_kv, S, D) of a perf.cases problem such as "b2hq32hkv8sq2048d128"."""
    m = re.fullmatch(r"b(\d+)hq(\d+)hkv(\d+)sq(\d+)d(\d+)", prb)
    if not m:
        raise ValueError(f"not a perf.cases shape: {prb}")
    return tuple(map(int, m.groups()))


def ours(reports, mode):
    """sdpabench's executed P-mode cases of one pass: {(name, dir): record fields}."""
    out = {}
    for r in records(f"{reports}/perf-{mode}.jsonl"):
        if r.get("status") != "EXECUTED":
            continue
        perf = r.get("perf") or {}
        out[(r["name"], r["dir"])] = dict(ms=perf.get("median_ms"), flops=r.get("flops"), peak=perf.get("peak_tflops"),
                                          prb=r.get("prb"))
    return out


def time_ms(fn, flush, reps=15):
    """The median CUDA-event time (ms) of `reps` calls of fn after two warm-up calls; `flush` (a
    buffer larger than L2, zeroed before each call) makes every call start with a cold L2, None
    leaves it warm."""
    import torch
    fn()
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        if flush is not None:
            flush.zero_()
        # The GPU waits ~1 ms while Python enqueues fn: the events time the kernels, not the launch
        # overhead (the gate sdpabench's EventTimer uses, backends/cuda/cuda_runtime.hpp).
        torch.cuda._sleep(2_000_000)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def time_backend(name, mode, label, backend, qkvdo, group, flush):
    """PyTorch's fwd and bwd times (ms) of case `name` on one SDPA backend (`label` its name,
    `backend` an SDPBackend) with Q, K, V, dO `qkvdo` and `group` query heads per K/V head:
    (fwd, bwd, how K and V went in). enable_gqa first; a backend that refuses it gets K and V
    with their heads repeated (outside the timed calls), so the row still exists and says so.
    (None, None, note) when the backend refuses both, each refusal a printed line."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel
    q, k, v, do = qkvdo
    for note in ("enable_gqa", "K, V heads repeated"):
        if note == "enable_gqa":
            kk, vv, gqa = k, v, True
        else:
            kk = k.detach().repeat_interleave(group, dim=1).requires_grad_()
            vv = v.detach().repeat_interleave(group, dim=1).requires_grad_()
            gqa = False

        def fwd():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, kk, vv, is_causal=True, enable_gqa=gqa)

        try:
            t_f = time_ms(fwd, flush)
            o = fwd()
            return t_f, time_ms(lambda: torch.autograd.grad(o, (q, kk, vv), do, retain_graph=True), flush), note
        except Exception as e:  # a backend PyTorch refuses for this shape is a line
            print(f"{name}: torch {label} ({mode}, {note}): {type(e).__name__}: "
                  f"{(str(e).splitlines() or [''])[0][:160]}")
    return None, None, note


def shape_rows(name, prb, mode, us, flush):
    """The table's rows of case `name` (shape `prb`): for each PyTorch backend (cuDNN, flash) that
    runs it, one per direction sdpabench timed (`us`: ours()), bf16 inputs of seed 1."""
    import torch
    from torch.nn.attention import SDPBackend
    B, Hq, Hkv, S, D = shape(prb)
    g = torch.Generator(device="cuda").manual_seed(1)

    def mk(h):
        return torch.randn(B, h, S, D, device="cuda", dtype=torch.bfloat16, generator=g)

    q, k, v, do = mk(Hq).requires_grad_(), mk(Hkv).requires_grad_(), mk(Hkv).requires_grad_(), mk(Hq)
    rows = []
    for label, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        t_f, t_b, note = time_backend(name, mode, label, backend, (q, k, v, do), Hq // Hkv, flush)
        if t_f is None:
            continue
        for d, t in (("fwd_t", t_f), ("bwd", t_b)):
            r = us.get((name, d))
            if not r or not r["ms"]:
                continue

            def tflops(ms):
                return r["flops"] / (ms * 1e-3) / 1e12

            rows.append(dict(case=name, dir=d, cache=mode, torch_backend=label, torch_ms=t, sdpabench_ms=r["ms"],
                             torch_tflops=tflops(t), sdpabench_tflops=tflops(r["ms"]), ratio=t / r["ms"],
                             pct_peak=100 * tflops(r["ms"]) / r["peak"] if r["peak"] else None, torch_note=note))
    del q, k, v, do
    torch.cuda.empty_cache()
    return rows


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("warm", "cold"):
        sys.exit(__doc__)
    reports, mode = sys.argv[1], sys.argv[2]
    import torch

    cold = mode == "cold"
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda") if cold else None  # > 2x the H200's 60 MB L2
    us = ours(reports, mode)
    rows = []
    for name, prb in sorted({(n, v["prb"]) for (n, _), v in us.items()}):
        rows += shape_rows(name, prb, mode, us, flush)

    print(f"| case | dir | L2 | sdpabench TFLOP/s | % of bf16 peak | torch backend | torch TFLOP/s | "
          f"torch ms / sdpabench ms | torch inputs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        pct = f"{r['pct_peak']:.1f}" if r["pct_peak"] is not None else "?"
        print(f"| {r['case']} | {r['dir']} | {r['cache']} | {r['sdpabench_tflops']:.1f} | {pct} | {r['torch_backend']} | "
              f"{r['torch_tflops']:.1f} | {r['ratio']:.3f} | {r['torch_note']} |")
    with open(f"{reports}/comparison-{mode}.json", "w") as f:
        json.dump(rows, f, indent=1)
    if not rows:
        sys.exit(f"no rows: no executed case in {reports}/perf-{mode}.jsonl, or PyTorch refused every backend")


if __name__ == "__main__":
    main()
