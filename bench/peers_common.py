"""What the peer scripts (peers_rows.py, peers_matrix.py) share: timing a CUDA call as the C++ bench does,
with warm-up, CUDA events around each run queued back to back, and the median."""
import torch


def bench_ms(fn, warm=5, runs=30):
    """Median milliseconds of `runs` calls of fn(), each between two CUDA events, after `warm` calls. The
    runs are queued back to back and synchronized once at the end, as the C++ bench times its own
    launches (bench/measure.hpp), so that Python's launch overhead overlaps the GPU's work instead of
    being timed: synchronizing after each run left the GPU idle while the next call was being launched."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(runs)]
    for s, e in events:
        s.record(); fn(); e.record()
    events[-1][1].synchronize()
    times = sorted(s.elapsed_time(e) for s, e in events)
    return times[len(times) // 2]
