"""What the peer scripts (peers_rows.py, peers_matrix.py) share: timing a CUDA call as the C++ bench does,
with warm-up, CUDA events around bursts of calls (memory-bound row kernels) or around each call (matrix
kernels) queued back to back, the median, and (for memory-bound calls) operands rotated through enough sets
to overflow the L2."""
import os

import torch


def rotation_sets(bytes_per_set, most=64):
    """Operand sets to rotate through so that their total is at least three times the L2 (2 to `most`), as
    bench/measure.hpp's rotation_sets: each run then reads its input from memory, not from what the
    previous run left in the L2."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    want = 3 * l2
    return max(2, min(most, -(-want // max(bytes_per_set, 1))))


def burst_launches(default):
    """Calls timed between one pair of events: BURST=N in the environment, as tilefuse_bench --burst N, else
    `default`."""
    n = int(os.environ.get("BURST", str(default)))
    if not 1 <= n <= 1000:
        raise ValueError(f"BURST: expected 1 to 1000 calls between a pair of events, got {n}")
    return n


def bench_rotated_ms(fn, sets, warm=5, runs=200, burst=20):
    """Median milliseconds of fn(i), i rotating over range(sets), after `warm` calls, timed in bursts of
    `burst` calls between two CUDA events (BURST=N overrides it; 1: events around each call), each burst's
    time divided by its calls: about `runs` calls in all, at least 5 bursts. The bursts are queued back to
    back and synchronized once at the end, as the C++ bench times its own launches (bench/measure.hpp).
    Bursts are the default because Python's launch of a call takes about as long as a short row kernel
    runs: with an event pair around every call, the GPU idled between the calls of a 30 us kernel and the
    peer was timed slower than it runs (bench/NOTES.md, "Bursts")."""
    for i in range(warm):
        fn(i % sets)
    torch.cuda.synchronize()
    burst = burst_launches(burst)
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
    """Median milliseconds of fn() on one operand set, an event pair around each call (compute-bound calls
    of hundreds of microseconds, whose operands' place matters little and whose launch Python keeps ahead of)."""
    return bench_rotated_ms(lambda i: fn(), 1, warm, runs, burst=1)
