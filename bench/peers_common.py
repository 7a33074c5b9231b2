"""What the peer scripts (peers_rows.py, peers_matrix.py) share: timing a CUDA call as the C++ bench does,
with warm-up, CUDA events around each run queued back to back, the median, and (for memory-bound calls)
operands rotated through enough sets to overflow the L2."""
import os

import torch


def rotation_sets(bytes_per_set, most=64):
    """Operand sets to rotate through so that their total is at least three times the L2 (2 to `most`), as
    bench/measure.hpp's rotation_sets: each run then reads its input from memory, not from what the
    previous run left in the L2."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    want = 3 * l2
    return max(2, min(most, -(-want // max(bytes_per_set, 1))))


def burst_launches():
    """Calls timed between one pair of events: BURST=N in the environment, as tilefuse_bench --burst N
    (default 1: events around each call)."""
    n = int(os.environ.get("BURST", "1"))
    if not 1 <= n <= 1000:
        raise ValueError(f"BURST: expected 1 to 1000 calls between a pair of events, got {n}")
    return n


def bench_rotated_ms(fn, sets, warm=5, runs=30):
    """Median milliseconds of `runs` calls of fn(i), i rotating over range(sets), each between two CUDA
    events, after `warm` calls (with BURST=N, about as many calls in bursts of N between two events, each
    burst's time divided by N). The runs are queued back to back and synchronized once at the end, as the
    C++ bench times its own launches (bench/measure.hpp), so that Python's launch overhead overlaps the
    GPU's work instead of being timed."""
    for i in range(warm):
        fn(i % sets)
    torch.cuda.synchronize()
    burst = burst_launches()
    if burst > 1:
        runs = max(5, runs // burst)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(runs)]
    call = 0
    for s, e in events:
        s.record()
        for _ in range(burst):
            fn(call % sets)
            call += 1
        e.record()
    events[-1][1].synchronize()
    times = sorted(s.elapsed_time(e) / burst for s, e in events)
    return times[len(times) // 2]


def bench_ms(fn, warm=5, runs=30):
    """bench_rotated_ms of fn() on one operand set (compute-bound calls, whose operands' place matters little)."""
    return bench_rotated_ms(lambda i: fn(), 1, warm, runs)
