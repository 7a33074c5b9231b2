"""Peers of tilefuse's matrix kernels on the same GPU, in the same run as the C++ bench: SDPA (flash and
cuDNN backends), a Triton fused-attention kernel (tl.dot, online softmax, best of a few block configs),
and torch.matmul (cuBLAS) with the bias + GELU epilogue fused by torch.compile and as separate passes.
Python is needed only for this comparison. Prints one line per row; OUT=dir also writes peers_matrix.json.
    python3 bench/peers_matrix.py [attention|matmul]    (one family only; both without an argument)"""
import json, os, sys, time
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from peers_common import bench_ms as bench  # median ms

dev = "cuda"
rows = []


def record(kernel, impl, shape, ms, flops):
    rows.append(dict(kernel=kernel, impl=impl, shape=shape, us=ms * 1e3, tflops=flops / ms * 1e-9))
    print(f"{kernel:10s} {impl:36s} {shape:28s} {ms * 1e3:10.1f} us {flops / ms * 1e-9:8.1f} TFLOP/s", flush=True)


@triton.jit
def attn_fwd(Q, K, V, O, N, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    start = tl.program_id(0) * BM
    head = tl.program_id(1).to(tl.int64) * N * D
    rm = start + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(Q + head + rm[:, None] * D + rd[None, :], mask=rm[:, None] < N, other=0.0)
    m = tl.full([BM], float("-inf"), tl.float32)
    l = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    hi = tl.minimum(N, start + BM) if CAUSAL else N
    for j in range(0, hi, BN):
        rn = j + tl.arange(0, BN)
        k = tl.load(K + head + rn[:, None] * D + rd[None, :], mask=rn[:, None] < N, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where(rn[None, :] < N, s, float("-inf"))
        if CAUSAL:
            s = tl.where(rn[None, :] <= rm[:, None], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m - m_new)
        l = l * alpha + tl.sum(p, 1)
        v = tl.load(V + head + rn[:, None] * D + rd[None, :], mask=rn[:, None] < N, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m = m_new
    tl.store(O + head + rm[:, None] * D + rd[None, :], (acc / l[:, None]).to(O.dtype.element_ty), mask=rm[:, None] < N)


def triton_attention(q, k, v, causal, cfg):
    B, H, N, D = q.shape
    o = torch.empty_like(q)
    BM, BN, warps, stages = cfg
    attn_fwd[(triton.cdiv(N, BM), B * H)](q, k, v, o, N, D ** -0.5 * 1.4426950408889634, D=D, BM=BM, BN=BN, CAUSAL=causal,
                                          num_warps=warps, num_stages=stages)
    return o


def main():
    from torch.nn.attention import sdpa_kernel, SDPBackend
    props = torch.cuda.get_device_properties(0)
    print("device", props.name, "torch", torch.__version__, "triton", triton.__version__, flush=True)
    only = sys.argv[1] if len(sys.argv) > 1 else None
    for B, H, N, D, causal, dt in ([] if only == "matmul" else [(4, 32, 4096, 128, False, torch.bfloat16), (4, 32, 4096, 128, True, torch.bfloat16),
                                   (8, 16, 2048, 64, False, torch.bfloat16), (1, 32, 16384, 128, True, torch.bfloat16),
                                   (4, 32, 4096, 128, False, torch.float16)]):
        q, k, v = (torch.randn(B, H, N, D, device=dev, dtype=dt) for _ in range(3))
        flops = 4 * B * H * N * N * D / (2 if causal else 1)
        shape = f"B{B} H{H} N{N} D{D}{' causal' if causal else ''} {str(dt)[6:]}"
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        for name, be in [("sdpa flash", SDPBackend.FLASH_ATTENTION), ("sdpa cudnn", SDPBackend.CUDNN_ATTENTION)]:
            try:
                with sdpa_kernel(be):
                    record("attention", name, shape, bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)), flops)
            except Exception as e:
                print(name, "failed", str(e)[:160])
        timed = []
        for cfg in [(128, 64, 8, 3), (128, 64, 4, 3), (128, 128, 8, 3), (64, 64, 4, 4), (128, 32, 4, 4)]:
            try:
                o = triton_attention(q, k, v, causal, cfg)
                if (o.float() - ref.float()).abs().max().item() > 5e-2:
                    print("triton config", cfg, "wrong")
                    continue
                timed.append((bench(lambda: triton_attention(q, k, v, causal, cfg)), cfg))
            except Exception as e:
                print("triton config", cfg, "failed", str(e)[:120])
        if timed:
            ms, cfg = min(timed)
            record("attention", f"triton fused (best of 5: {cfg})", shape, ms, flops)
    gelu = lambda x: F.gelu(x)
    fused = torch.compile(lambda a, b, bias: F.gelu(a @ b + bias))
    for m in (() if only == "attention" else (4096, 8192)):
        a, b = (torch.randn(m, m, device=dev, dtype=torch.bfloat16) for _ in range(2))
        bias = torch.randn(m, device=dev, dtype=torch.bfloat16)
        flops = 2 * m ** 3
        shape = f"{m}x{m}x{m} bf16"
        record("matmul", "torch.matmul (cuBLAS)", shape, bench(lambda: torch.matmul(a, b)), flops)
        record("matmul", "torch.matmul + bias", shape, bench(lambda: torch.addmm(bias, a, b)), flops)
        record("matmul", "torch.matmul + bias, then GELU pass", shape, bench(lambda: gelu(torch.addmm(bias, a, b))), flops)
        try:
            record("matmul", "torch.compile(gelu(a @ b + bias))", shape, bench(lambda: fused(a, b, bias)), flops)
        except Exception as e:
            print("compile failed", str(e)[:160])
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "peers_matrix.json"), "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
