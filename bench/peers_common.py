"""What the peer scripts (peers_rows.py, peers_matrix.py) share: timing a CUDA call as the C++ bench does,
with warm-up, CUDA events around each run, and the median."""
import torch


def bench_ms(fn, warm=5, runs=30):
    """Median milliseconds of `runs` calls of fn(), each between two CUDA events, after `warm` calls."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]
