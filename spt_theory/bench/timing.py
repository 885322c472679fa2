"""Clocks, interleaved timing, quartiles and the machine's matmul / bf16 peaks."""

from __future__ import annotations

import statistics
import time

import torch

from spt_theory.bench.cases import BF16_DENSE_PEAK_TFLOPS
from spt_theory.core import cpu


def wall_clock():
    """Start a wall-clock timer; the returned function gives the seconds since."""
    start = time.perf_counter()
    return lambda: time.perf_counter() - start


def cuda_clock():
    """Start a CUDA-event timer on the current stream; the returned function records the end
    event, waits for it and gives the seconds of GPU time between the two events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()

    def stop() -> float:
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    return stop


def clock_for(device: torch.device):
    """CUDA events on a CUDA device, the wall clock elsewhere."""
    return cuda_clock if device.type == "cuda" else wall_clock


def interleaved_times(steps: dict, repetitions: int, inner: int, warmup: int = 2,
                      clock=wall_clock) -> dict[str, list[float]]:
    """Seconds per call of each closure, the closures alternating within every repetition."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repetitions):
        for name, step in steps.items():
            stop = clock()
            for _ in range(inner):
                step()
            times[name].append(stop() / inner)
    return times


def quartiles(values: list[float]) -> dict:
    q1, median, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else (values[0],) * 3
    return {"median": median, "q1": q1, "q3": q3}


def matmul_peak_gflops(sizes: tuple[int, ...] = (512, 1024, 2048), repetitions: int = 5) -> dict[str, float]:
    """Per kernel, the best over ``sizes`` of the median GFLOP/s of a size x size float32 matmul:
    torch's ``a @ b`` (MKL on x86) and, where available, oneDNN's (:func:`spt_theory.core.cpu.linear`)."""
    peaks: dict[str, float] = {}
    for size in sizes:
        a, b = torch.randn(size, size), torch.randn(size, size)
        kernels = {"torch_mm": lambda a=a, b=b: a @ b}
        if cpu.onednn_available():
            kernels["onednn"] = lambda a=a, b=b: cpu.linear(a, b)
        for name, kernel in kernels.items():
            kernel()
            times = []
            for _ in range(repetitions):
                start = time.perf_counter()
                kernel()
                times.append(time.perf_counter() - start)
            peaks[name] = max(peaks.get(name, 0.0), 2 * size**3 / statistics.median(times) / 1e9)
    return peaks


def device_peak_gflops(device: torch.device) -> tuple[str, float | None]:
    """(device name, its bf16 dense peak in GFLOP/s from :data:`BF16_DENSE_PEAK_TFLOPS`, or None)."""
    name = torch.cuda.get_device_name(device)
    for key, tflops in BF16_DENSE_PEAK_TFLOPS.items():
        if key in name:
            return name, 1e3 * tflops
    return name, None
