"""cudadent.gpu_monitor with a fake NVML (no GPU, no nvidia-ml-py needed) and the training
report's clocks section."""
import time

from cudadent.gpu_monitor import POWER_REASONS, GpuMonitor, summarize
from cudadent.train_report import clocks_section


class FakeNvml:
    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, fail=False):
        self.fail, self.reads = fail, 0

    def nvmlInit(self):
        if self.fail:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("handle", i)

    def nvmlDeviceGetClockInfo(self, h, which):
        assert which == self.NVML_CLOCK_SM and h == ("handle", 3)
        self.reads += 1
        return 1980 - 10 * (self.reads % 3)

    def nvmlDeviceGetPowerUsage(self, h):
        return 650_000 + 1000 * (self.reads % 3)  # milliwatts

    def nvmlDeviceGetTemperature(self, h, which):
        return 60

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x4 if self.reads % 2 else 0


def test_monitor_samples_only_under_a_tag():
    nvml = FakeNvml()
    mon = GpuMonitor(device_index=3, period_s=0.002, nvml=nvml).start()
    assert mon.error is None
    time.sleep(0.03)  # no tag: nothing recorded
    assert mon.samples == []
    mon.tag = ("c", "cudadent")
    deadline = time.time() + 5
    while len(mon.samples) < 6 and time.time() < deadline:
        time.sleep(0.005)
    mon.tag = None
    mon.stop()
    s = mon.summary(("c", "cudadent"))
    assert s is not None and s["samples"] >= 6
    assert 1960 <= s["sm_mhz_min"] <= s["sm_mhz"] <= 1980
    assert 650.0 <= s["watts"] <= s["watts_max"] <= 652.0 and s["temp_max"] == 60
    assert 0.0 < s["power_capped"] < 1.0 and s["thermal"] == 0.0
    assert mon.summary(("c", "sdpa")) is None


def test_monitor_without_nvml_is_off():
    mon = GpuMonitor(nvml=FakeNvml(fail=True)).start()
    assert mon.error and "NVML" in mon.error and mon._thread is None
    mon.tag = "x"
    mon.stop()
    assert mon.summary("x") is None


def test_summarize_and_the_report_section():
    s = summarize([(1755, 699.0, 70, POWER_REASONS & 0x4), (1980, 500.0, 65, 0),
                   (1900, 690.0, 71, 0x80)])
    assert s["samples"] == 3 and s["sm_mhz"] == 1900 and s["sm_mhz_min"] == 1755
    assert s["watts"] == 690.0 and s["watts_max"] == 699.0 and s["temp_max"] == 71
    assert abs(s["power_capped"] - 2 / 3) < 1e-9 and s["thermal"] == 0.0
    assert summarize([]) is None
    rows = [{"config": "d128-s4k", "attention": "cudadent", "gpu_clocks": s},
            {"config": "d128-s4k", "attention": "sdpa"}]
    lines = clocks_section(rows)
    assert any("| d128-s4k | cudadent | 3 | 1900 (1755) | 690 (699) | 71 | 67% | 0% |" in ln
               for ln in lines), lines
    assert not any("| sdpa |" in ln for ln in lines)
    assert clocks_section([{"config": "c", "attention": "sdpa"}]) == []
