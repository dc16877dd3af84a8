"""The GPU's SM clock, power draw and temperature, sampled through NVML in a background thread
while a benchmark times its work: the training bench tags each attention's timed steps, and
summary(tag) says at what clock and power they ran and how often the driver held the clock down
(power cap, thermal). Why: at the H100's / H200's 700 W limit the clock falls under sustained
load, so an attention kernel that draws more power can slow every other kernel of the step.

NVML comes from nvidia-ml-py (`import pynvml`); without it (or without a GPU) start() leaves
the monitor off, summary() returns None and the report says "not sampled".
"""
import statistics
import threading

# nvml.h's clocks-event reasons: the bits that mean the driver held the SM clock down
POWER_REASONS = 0x4 | 0x80          # SW power cap, HW power brake
THERMAL_REASONS = 0x20 | 0x40 | 0x8  # SW thermal, HW thermal, HW slowdown
DEFAULT_PERIOD_S = 0.05


class GpuMonitor:
    """Samples (tag, SM MHz, W, deg C, reasons) every period_s while started; tag is whatever
    the caller last set (None: not recorded)."""

    def __init__(self, device_index=0, period_s=DEFAULT_PERIOD_S, nvml=None):
        self.device_index = device_index
        self.period_s = period_s
        self.tag = None
        self.samples = []
        self.error = None
        self._nvml = nvml
        self._handle = None
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        try:
            if self._nvml is None:
                import pynvml
                self._nvml = pynvml
            self._nvml.nvmlInit()
            self._handle = self._nvml.nvmlDeviceGetHandleByIndex(self.device_index)
            self.sample_once()  # fails here, not in the thread, where NVML cannot read
        except Exception as e:  # no nvidia-ml-py, no driver: the report says not sampled
            self.error = f"{type(e).__name__}: {e}"
            self._handle = None
            return self
        self.samples.clear()
        self._thread = threading.Thread(target=self._loop, name="cudadent-gpu-monitor",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def sample_once(self):
        n, h = self._nvml, self._handle
        mhz = n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)
        watts = n.nvmlDeviceGetPowerUsage(h) / 1000.0
        temp = n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)
        try:
            reasons = n.nvmlDeviceGetCurrentClocksEventReasons(h)
        except AttributeError:  # older nvidia-ml-py
            reasons = n.nvmlDeviceGetCurrentClocksThrottleReasons(h)
        return mhz, watts, temp, reasons

    def _loop(self):
        while not self._stop.wait(self.period_s):
            tag = self.tag
            if tag is None:
                continue
            try:
                self.samples.append((tag,) + tuple(self.sample_once()))
            except Exception as e:
                self.error = f"{type(e).__name__}: {e}"
                return

    def summary(self, tag):
        """Median / min SM clock, median / max power, max temperature and the shares of samples
        with a power or a thermal reason set, over the samples taken under tag; None if none."""
        return summarize([s[1:] for s in self.samples if s[0] == tag])


def summarize(samples):
    """summary() of a list of (SM MHz, W, deg C, reasons) tuples; None if empty."""
    if not samples:
        return None
    mhz = [s[0] for s in samples]
    watts = [s[1] for s in samples]
    return dict(samples=len(samples), sm_mhz=statistics.median(mhz), sm_mhz_min=min(mhz),
                watts=round(statistics.median(watts), 1), watts_max=round(max(watts), 1),
                temp_max=max(s[2] for s in samples),
                power_capped=sum(1 for s in samples if s[3] & POWER_REASONS) / len(samples),
                thermal=sum(1 for s in samples if s[3] & THERMAL_REASONS) / len(samples))
