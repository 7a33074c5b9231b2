"""Peers of tilefuse's row kernels on the same GPU, in the same run as the C++ bench: torch (F.softmax,
F.layer_norm), torch.compile of each, and Triton one-program-per-row kernels (the row in registers, as
the Triton tutorials write them; widths up to 65536), each with the time of a device copy of the same
bytes (y.copy_(x)) for the x-copy ratio, inputs and outputs rotated past the L2 as the C++ bench rotates
its own. The shapes are the softmax and LayerNorm rows of the bench tables
given as arguments (tilefuse_bench --table, and --sweep's table), so every ratio compares one shape.
Python is needed only for this comparison. Prints one line per row; OUT=dir also writes peers_rows.json.
CUBINS=dir also writes each Triton kernel it timed as a CUBIN and a line of dir/manifest.txt, which
`tilefuse_bench --peer-cubins dir/manifest.txt` times beside ours on the same buffers (bench/peer_cubins.hpp).

    python3 bench/peers_rows.py OUT/bench_table.md [OUT/sweep_table.md]
"""
import json, os, re, sys
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from peers_common import bench_rotated_ms, rotation_sets

dev = "cuda"
dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def bench(fn, sets):
    return bench_rotated_ms(fn, sets) * 1e3  # us


@triton.jit
def softmax_row(X, Y, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * cols
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + row + offs, mask=offs < cols, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, 0))
    tl.store(Y + row + offs, (e / tl.sum(e, 0)).to(Y.dtype.element_ty), mask=offs < cols)


@triton.jit
def layernorm_row(X, W, B, Y, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * cols
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    x = tl.load(X + row + offs, mask=m, other=0.0).to(tl.float32)
    mean = tl.sum(x, 0) / cols
    d = tl.where(m, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, 0) / cols + eps)
    w = tl.load(W + offs, mask=m, other=0.0).to(tl.float32)
    b = tl.load(B + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(Y + row + offs, (d * rstd * w + b).to(Y.dtype.element_ty), mask=m)


def save_cubin(folder, kernel, R, C, d, compiled):
    """Writes the compiled Triton kernel of one shape as folder/<kernel>_<R>x<C>_<d>.cubin and its line of
    folder/manifest.txt: kernel rows cols dtype warps shared_bytes extra_params symbol cubin (extra_params:
    the pointer parameters Triton appends after the kernel's own, which tilefuse_bench passes as null)."""
    os.makedirs(folder, exist_ok=True)
    name = f"{kernel}_{R}x{C}_{d}.cubin"
    with open(os.path.join(folder, name), "wb") as f:
        f.write(compiled.asm["cubin"])
    ptx = compiled.asm["ptx"]
    entry = ptx[ptx.index(".entry"):]
    own = 3 if kernel == "softmax" else 6
    extra = entry[:entry.index(")")].count(".param") - own
    with open(os.path.join(folder, "manifest.txt"), "a") as f:
        f.write(f"{kernel} {R} {C} {d} {compiled.metadata.num_warps} {compiled.metadata.shared} {extra} {compiled.name} {name}\n")


def shapes_of(tables):
    seen = []
    for path in tables:
        for line in open(path):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 8 or cells[0] not in ("softmax", "layernorm") or not cells[1].startswith("tilefuse"):
                continue
            if "unfused" in cells[1]:
                continue
            m = re.fullmatch(r"(\d+)x(\d+)", cells[2])
            if m and cells[3] in dtypes:
                key = (cells[0], int(m.group(1)), int(m.group(2)), cells[3])
                if key not in seen:
                    seen.append(key)
    return seen


def main():
    rows = []
    for kernel, R, C, d in shapes_of(sys.argv[1:]):
        dt = dtypes[d]
        # Inputs and outputs rotated past the L2, as the C++ bench rotates its own (bench/measure.hpp).
        sets = rotation_sets(2 * R * C * torch.tensor([], dtype=dt).element_size())
        xs = [torch.randn(R, C, device=dev, dtype=dt) for _ in range(sets)]
        ys = [torch.empty_like(xs[0]) for _ in range(sets)]
        w, b = torch.randn(C, device=dev, dtype=dt), torch.randn(C, device=dev, dtype=dt)
        copy = bench(lambda i: ys[i].copy_(xs[i]), sets)
        if kernel == "softmax":
            compiled = torch.compile(lambda t: F.softmax(t, dim=-1))
            impls = {"torch": lambda i: F.softmax(xs[i], dim=-1), "torch.compile": lambda i: compiled(xs[i])}
        else:
            compiled = torch.compile(lambda t: F.layer_norm(t, (C,), w, b, 1e-5))
            impls = {"torch": lambda i: F.layer_norm(xs[i], (C,), w, b, 1e-5), "torch.compile": lambda i: compiled(xs[i])}
        block = triton.next_power_of_2(C)
        if block <= 65536:
            warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
            if kernel == "softmax":
                impls["Triton one program per row"] = lambda i: softmax_row[(R,)](xs[i], ys[i], C, BLOCK=block, num_warps=warps)
            else:
                impls["Triton one program per row"] = lambda i: layernorm_row[(R,)](xs[i], w, b, ys[i], C, 1e-5, BLOCK=block, num_warps=warps)
        if block <= 65536 and os.environ.get("CUBINS"):
            save_cubin(os.environ["CUBINS"], kernel, R, C, d, impls["Triton one program per row"](0))
        for name, fn in impls.items():
            try:
                us = bench(fn, sets)
            except Exception as e:  # a peer that cannot run this shape is reported, not fatal
                print(f"{kernel:10s} {name:28s} {R}x{C} {d}: failed: {type(e).__name__}: {str(e)[:80]}", flush=True)
                continue
            rows.append(dict(kernel=kernel, impl=name, shape=f"{R}x{C}", dtype=d, us=us, copy_us=copy, x_copy=copy / us))
            print(f"{kernel:10s} {name:28s} {R}x{C:<10d} {d:5s} {us:10.2f} us  x copy {copy / us:5.2f}", flush=True)
        del xs, ys
        torch.cuda.empty_cache()
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "peers_rows.json"), "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
