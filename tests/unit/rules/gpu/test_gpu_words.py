"""The GPU rules' words: each sentence form once, from decisions built by hand (the rule tests in
test_gpu_rules.py and test_kernels.py assert the decisions)."""

from __future__ import annotations

from gpubottle.evidence import CopyEvidence, GpuEvidence, NvmlDevice, SyncEvidence, SyncSite
from gpubottle.rules.gpu import decide as gd
from gpubottle.rules.gpu import words
from gpubottle.rules.gpu.decide import DeviceState, GpuCompute, Resident, Syncs, Transfer

GIB = 1 << 30


def _gpu(**kw: object) -> GpuEvidence:
    base: dict[str, object] = dict(source="trace", steps=6, step_s=0.1,
                                   breakdown={"kernel": 0.3, "memcpy": 0.3, "runtime": 0.05, "other": 0.0})
    base.update(kw)
    return GpuEvidence(**base)  # type: ignore[arg-type]


def test_transfer_words() -> None:
    g = _gpu(copies=[CopyEvidence("HtoD", "pageable", 60, 0.18, 3 * GIB),
                     CopyEvidence("DtoH", "pageable", 60, 0.02)])
    d = Transfer(g, 0.3, 1.0, 0.4, "train.py:9", True, Resident(2000, 4 << 20, 60 * GIB, "train.py:9"))
    assert words.transfer_summary(d) == ("host<->device copies take 30% of step time, 100% of it from "
                                         "pageable memory")
    assert [f.text for f in words.transfer_facts(d)] == [
        "host<->device copies take 30% of each 100.0 ms step",
        "HtoD from pageable memory: 60 copies, 180.0 ms, 3.00 GiB (90% of copy time)",
        "DtoH from pageable memory: 60 copies, 20.0 ms (10% of copy time)"]
    pin, dtoh, resident, less = words.transfer_fixes(d)
    assert pin.change == {"pin_memory": [False, True]} and pin.where == "train.py:9"
    assert dtoh.text.startswith("device-to-host copies every step")
    assert resident.text.startswith("the whole dataset (2000 samples x 4 MiB = 7.81 GiB) fits in the "
                                    "GPU's 60.00 GiB of free memory")
    assert less.text.startswith("send less: send uint8 images")
    d.pageable, d.dtoh, d.resident = 0.0, 0.0, None
    assert words.transfer_summary(d) == "host<->device copies take 30% of step time"
    assert [f.text.split(":")[0] for f in words.transfer_fixes(d)] == ["send less"]


def test_gpu_compute_words() -> None:
    g = _gpu(kernel_share=0.9, matmul_share=0.7, matmul_precision={"fp32": 0.9, "half": 0.1},
             unclassified_kernel_share=0.3, top_kernels=[["ampere_sgemm_128x64_nn", 0.4]])
    d = GpuCompute(g, 0.9, True, gd.FP32_MATMULS)
    assert words.compute_summary(d) == "GPU kernels keep the device busy 90% of step time"
    facts = words.compute_facts(d)
    assert [f.name for f in facts] == ["kernel_share", None, "matmul_share", "unclassified_kernel_share",
                                       None]
    assert facts[1].text == "step 100.0 ms (6 step(s)): Kernel 30%, Memcpy 30%, Runtime 5%"
    assert facts[2].text == ("matmuls, convolutions and attention take 70% of kernel time (fp32 90%, "
                             "half 10%)")
    assert facts[4].text == "the busiest kernel is ampere_sgemm_128x64_nn (40% of kernel time)"
    assert words.cpu_trace_summary(0.8) == ("operators on the CPU take 80% of step time: the loop is "
                                            "compute-bound")
    assert words.cpu_trace_fix().text.startswith("run the math faster")
    assert words.math_fixes(d, ["net"])[-1].text == (
        "fuse kernels with net = torch.compile(net); raise the batch size if memory allows")


def test_launch_sync_and_communication_words() -> None:
    g = _gpu(sync_share=0.25, syncs=[SyncEvidence("cudaStreamSynchronize", 600, 0.15)],
             communication_share=0.3, communication_overlap=0.5)
    assert words.launch_summary(0.4) == "the GPU waits on the host 40% of step time"
    assert words.launch_facts(g, 0.4)[0].name == "idle_host_share"
    assert words.launch_fix().text.startswith(
        "cut per-step host work: torch.compile(model, mode='reduce-overhead') (CUDA graphs)")
    # The script's own name for its model, where the counted step saw it called
    assert words.launch_fix(["net"]).text.startswith(
        "cut per-step host work: net = torch.compile(net, mode='reduce-overhead') (CUDA graphs)")
    assert words.busy_fix(["self.model"]).text.endswith("self.model = torch.compile(self.model)")
    costly = Syncs(g, [], True)
    assert words.sync_summary(costly) == (
        "the GPU idles after the host's synchronising calls 25% of step time")
    assert words.sync_facts(costly)[0].text == (
        "the GPU idles after the host's synchronising calls 25% of the step: "
        "cudaStreamSynchronize x600 (150.0 ms)")
    assert words.sync_fixes(costly)[0].text.startswith("remove per-step synchronisation")
    sites = Syncs(None, [SyncSite("train.py:40", 2.0)], False)
    assert words.sync_summary(sites) == "the host waits for the GPU at 1 place(s) in every step"
    assert words.sync_facts(sites)[0].text == "train.py:40 synchronises with the GPU 2.0x per step"
    inner = Syncs(None, [SyncSite("train.py:41", 1.0, "torch/optim/adam.py:520")], False)
    assert words.sync_facts(inner)[0].text == ("train.py:41 synchronises with the GPU 1.0x per step "
                                               "(in torch/optim/adam.py:520)")
    assert words.sync_fixes(sites)[0].where == "train.py:40"
    assert words.communication_summary(0.15) == ("communication not hidden under compute costs 15% of "
                                                 "step time")
    assert words.communication_facts(g, 0.15)[0].text == ("communication takes 30% of the step, 50% of it "
                                                          "overlapped with compute")
    assert words.communication_fix().text.startswith("overlap gradient all-reduce with backward")


def test_nvml_words() -> None:
    d = NvmlDevice(index=0, name="H100", role="run", util_mean=0.97, util_p10=0.9,
                   mem_used_peak=79 * GIB, mem_total=80 * GIB, proc_mem_peak=3 * GIB, sm_clock_mean=1400,
                   sm_clock_max=1980, power_mean_w=690, power_limit_w=700, temp_max=88)
    s = DeviceState(d, {"hw-thermal": 0.3}, 0.5, 79 / 80)
    assert words.throttled_summary(s) == f"{d.label} slowed its clocks: hw-thermal 30% of the time"
    assert words.clocks_fact(d).text == ("SM clock 1400 MHz on average, 1980 at most; 88 C peak; power "
                                         "690 W of 700 W")
    assert words.power_capped_summary(s).startswith(f"{d.label} held its power limit 50% of the time")
    assert words.power_fact(d).text == "power 690 W of 700 W; SM clock 1400 MHz on average"
    assert words.busy_summary(d) == f"{d.label} runs kernels 97% of the time: the run is compute-bound"
    assert words.busy_fact(d).text == "NVML utilization 97% on average (10th percentile 90%)"
    assert words.memory_full_summary(s) == f"{d.label} memory reached 99% (all processes)"
    assert words.memory_full_fact(d).text == "79.00 GiB of 80.00 GiB used on the device; this run 3.00 GiB"
    fixes = [words.throttle_fix(), words.busy_fix(), words.memory_full_fix()]
    assert [f.text.split(" ")[0] for f in fixes] == ["check", "use", "other"]
    assert words.throttle_fix() is not words.throttle_fix()  # a new one each time: later stages fill fixes
