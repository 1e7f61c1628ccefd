"""What a program costs: FLOPs and bytes from XLA's cost model with loops counted, memory from XLA's memory
analysis, and a roofline estimate of its time on a named accelerator.

XLA's cost analysis (`compiled.cost_analysis()`) counts a loop's body once, whatever its trip count, and a
trainer is loops inside loops (updates, then rollout steps and epochs of minibatch steps). So `program_cost`
walks the program's jaxpr, costs each `scan` body as its own compiled program and multiplies it by the trip
count:

    T(f) = C(f) + sum over the scans of f:  length * T(body) - copies * C(body)

where C is XLA's count (each body `copies` times: once, or `unroll` times when the scan is unrolled) and T the
count with trips. Calls (`pjit`, custom derivatives, `cond` branches, checkpoints) are looked through; a
`while` loop, whose trip count is unknown until it runs, counts once. The figures are XLA's own model of the
compiled program, not a measurement. `roofline_seconds` turns them into seconds on an accelerator:

    kernels x seconds per kernel + max(FLOPs / peak, bytes / bandwidth)

The second term is the roofline, the time at the accelerator's peak. The first is why a small RL trainer never
gets there: its loops run one iteration after another (a rollout step needs the last one's env state), and each
iteration launches kernels that take about a microsecond and a half whatever their size. `Cost.kernels` counts
them from the same compiled programs: each loop body's instructions that run as kernels (`kernel_count`: a
fusion, a matrix product, a sort; not plumbing), times its trips. On one H200 (`results/bench/gpu/kernels/`)
nine trainers (CartPole and four MinAtar games; 1 to 64 rows; PPO, LPO and TA-LPO) took 25 to 109 us per loop
iteration, as they launched 16 to 61 kernels in each; kernels and roofline put every one at 0.84-1.31x of its
measured time, where loop iterations x 25 us (the model before) gave 0.23-1.01x. The count depends on the backend
that compiled it: XLA's GPU compiler fuses more than its CPU compiler, and a dry run usually runs on a CPU, so
kernels counted there are scaled to GPU kernels (`GPU_KERNELS_PER_CPU_KERNEL`, measured on those nine programs).
`Cost.iterations` counts the sequential loop iterations (every scan trip, nested ones included, however many
rows are vmapped inside). It is an estimate, and the command line says so.

`metadisco meta-train --dry-run` uses it (`metadisco.meta.plan`); `metadisco bench` can reuse it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from metadisco.core.errors import UserError

# JAX is imported inside the functions: the command line reads ACCELERATORS before it chooses the device count,
# which must happen before JAX starts.


@dataclass(frozen=True)
class Cost:
    """FLOPs, bytes accessed and transcendental operations (exp, tanh, ...) of a program, XLA's counts; its
    sequential loop iterations (each scan trip, nested trips included); and the kernels it launches, in GPU
    kernels (module docstring).

    Adding costs is running programs one after another, multiplying is running one k times; `on_devices` is
    running it on n devices at once, which multiplies the work but not the iterations or the launches (each
    device launches its own, at the same time); `on_rows` is the same program on a fraction of its rows, which
    scales the work but not the iterations or the launches."""

    flops: float = 0.0
    bytes: float = 0.0
    transcendentals: float = 0.0
    iterations: float = 0.0
    kernels: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.flops + other.flops, self.bytes + other.bytes, self.transcendentals + other.transcendentals,
                    self.iterations + other.iterations, self.kernels + other.kernels)

    def __mul__(self, k: float) -> Cost:
        return Cost(self.flops * k, self.bytes * k, self.transcendentals * k, self.iterations * k, self.kernels * k)

    __rmul__ = __mul__

    def __sub__(self, other: Cost) -> Cost:
        return self + other * -1.0

    def _work_times(self, k: float) -> Cost:
        return Cost(self.flops * k, self.bytes * k, self.transcendentals * k, self.iterations, self.kernels)

    def on_devices(self, n: int) -> Cost:
        return self._work_times(n)

    def on_rows(self, fraction: float) -> Cost:
        return self._work_times(fraction)


def xla_cost(compiled) -> Cost:
    """XLA's cost analysis of a compiled program and its kernels in GPU kernels (each loop body counted once)."""
    import jax

    analysis = compiled.cost_analysis()
    if isinstance(analysis, list | tuple):  # older JAX: one dict per program
        analysis = analysis[0] if analysis else {}
    analysis = analysis or {}
    per_gpu_kernel = GPU_KERNELS_PER_CPU_KERNEL if jax.default_backend() == "cpu" else 1.0
    return Cost(float(analysis.get("flops", 0.0)), float(analysis.get("bytes accessed", 0.0)),
                float(analysis.get("transcendentals", 0.0)), kernels=kernel_count(compiled.as_text()) * per_gpu_kernel)


# Instructions counted as no kernel: plumbing, the second halves of asynchronous pairs, and copies (XLA's CPU
# compiler makes far more of them than its GPU compiler; the fit behind the constants below counts none on either).
# A loop or call is entered instead (a body once: `_costs` multiplies bodies by their trips) and a conditional
# counts once (one branch runs; on a GPU the branch choice is a wait for the device).
_NO_KERNEL = frozenset({"parameter", "get-tuple-element", "tuple", "constant", "bitcast", "copy", "after-all",
                        "opt-barrier", "add-dependency", "partition-id", "replica-id", "get-dimension-size", "while",
                        "call"})
_COMPUTATION = re.compile(r"^(ENTRY )?%?([\w.\-]+) \(.*\{$")
# An instruction's opcode: the first lowercase word that opens a parenthesis after its name and type (a tuple
# type's parentheses follow no word).
_INSTRUCTION = re.compile(r"^\s+(?:ROOT )?%?[\w.\-]+ = .*?(?:^|[\s)\]}])([a-z][a-z0-9\-]*)\(")
_CALLED = re.compile(r"(?:body|to_apply)=%?([\w.\-]+)")
_TRIPS = re.compile(r'"known_trip_count":\{"n":"(\d+)"')

# GPU kernels per kernel of XLA's CPU compiler, for the same program: the median over nine trainers on one H200
# (0.44; 0.30 for Seaquest to 0.52 for an LPO population: `results/bench/gpu/kernels/iteration_model.txt`).
GPU_KERNELS_PER_CPU_KERNEL = 0.44


def kernel_count(hlo_text: str, trips: bool = False) -> int:
    """Kernels one call of a compiled program launches, from its optimised HLO text (`compiled.as_text()`): the
    instructions of its entry computation, and of the loop bodies and calls in it, that are not plumbing
    (`_NO_KERNEL`). A fusion's computation is not entered: a fusion is one kernel. Each loop body counts once, or
    (`trips`) times the trip count XLA knows for it (`program_cost` multiplies bodies itself, from the jaxpr)."""
    computations, entry, current = {}, None, None
    for line in hlo_text.splitlines():
        if not line.startswith(" "):
            header = _COMPUTATION.match(line)
            current = header.group(2) if header else None
            if header:
                computations[current] = []
                entry = current if header.group(1) else entry
        elif current is not None:
            computations[current].append(line)

    def count(name: str) -> int:
        total = 0
        for line in computations.get(name, ()):
            instruction = _INSTRUCTION.match(line)
            if instruction is None:
                continue
            opcode = instruction.group(1)
            if opcode in ("while", "call"):
                known = _TRIPS.search(line) if trips and opcode == "while" else None
                total += (int(known.group(1)) if known else 1) * sum(count(called) for called in _CALLED.findall(line))
            elif opcode not in _NO_KERNEL and not opcode.endswith(("-done", "-update")):
                total += 1
        return total

    return count(entry) if entry else 0


def _compile(closed) -> object:
    """A closed jaxpr as its own compiled program (inputs of its abstract shapes)."""
    import jax
    from jax.extend.core import jaxpr_as_fun

    args = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in closed.in_avals]
    return jax.jit(jaxpr_as_fun(closed)).lower(*args).compile()


def _closed(value) -> Iterator:
    """The closed jaxprs among a primitive's parameters (a call's body, a cond's branches)."""
    from jax.extend.core import ClosedJaxpr, Jaxpr

    items = value if isinstance(value, list | tuple) else (value,)
    for item in items:
        if isinstance(item, ClosedJaxpr):
            yield item
        elif isinstance(item, Jaxpr):
            yield ClosedJaxpr(item, ())


def _scans(jaxpr) -> Iterator[tuple[int, int, object]]:
    """(trip count, bodies XLA sees, body) of each scan in `jaxpr`, looking through calls but not into scans."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "scan":
            length, unroll = int(eqn.params["length"]), eqn.params.get("unroll", 1)
            copies = length if unroll is True else max(1, min(int(unroll or 1), length))
            if length > 0:
                yield length, copies, eqn.params["jaxpr"]
            continue
        for value in eqn.params.values():
            for sub in _closed(value):
                yield from _scans(sub.jaxpr)


# Loop bodies already costed in this process, by their text: a task's training lengths share every body but the
# outermost loop's length, and the dry run costs each length.
_BODIES: dict[str, tuple[Cost, Cost]] = {}


def _costs(closed, compiled=None) -> tuple[Cost, Cost]:
    """(XLA's count, the count with trips) of a closed jaxpr; each distinct body is compiled once."""
    once = xla_cost(compiled if compiled is not None else _compile(closed))
    total = once
    for length, copies, body in _scans(closed.jaxpr):
        key = f"{body.in_avals}{body.jaxpr}"
        if key not in _BODIES:
            _BODIES[key] = _costs(body)
        body_once, body_total = _BODIES[key]
        total = total + body_total * length - body_once * copies + Cost(iterations=length)
    return once, total


def jaxpr_cost(closed, compiled=None) -> Cost:
    """The cost of a closed jaxpr with every scan's body counted as many times as the scan runs it
    (`compiled`: the jaxpr's compiled program, if the caller has it)."""
    return _costs(closed, compiled)[1]


def program_cost(fn, *args) -> Cost:
    """FLOPs and bytes of `fn(*args)` (arrays or `jax.ShapeDtypeStruct`s), loops counted (module docstring)."""
    import jax

    return jaxpr_cost(jax.make_jaxpr(fn)(*args))


@dataclass(frozen=True)
class Memory:
    """Bytes a compiled program holds on one device while it runs (XLA's memory analysis)."""

    arguments: int
    outputs: int
    temporaries: int
    aliased: int
    code: int

    @property
    def total(self) -> int:
        return self.arguments + self.outputs + self.temporaries - self.aliased + self.code


def memory(compiled) -> Memory:
    stats = compiled.memory_analysis()
    if stats is None:
        raise UserError("this backend gives no memory analysis of a compiled program")
    return Memory(int(stats.argument_size_in_bytes), int(stats.output_size_in_bytes),
                  int(stats.temp_size_in_bytes), int(stats.alias_size_in_bytes),
                  int(getattr(stats, "generated_code_size_in_bytes", 0) or 0))


# Seconds per GPU kernel launched, fitted on one H200 to nine trainers' measured times with the roofline
# beside it (`results/bench/gpu/kernels/iteration_model.txt`; a kernel took 1.5-1.8 us where the work was small).
# No other GPU was measured; their rows assume the same, as launch costs differ little between recent NVIDIA GPUs.
GPU_KERNEL_SECONDS = 1.53e-6


@dataclass(frozen=True)
class Accelerator:
    name: str
    flops: float  # peak float32 FLOP/s (dense, no sparsity, no TF32)
    bandwidth: float  # memory bandwidth, bytes/s
    memory: float  # bytes
    kernel_seconds: float = GPU_KERNEL_SECONDS  # per kernel launched (module docstring)

    def describe(self) -> str:
        return (f"{self.name} ({self.flops / 1e12:g} TFLOP/s float32, {self.bandwidth / 1e12:g} TB/s, "
                f"{self.memory / 1e9:g} GB, {self.kernel_seconds * 1e6:g} us per kernel)")


# Vendors' datasheet figures: peak dense float32 (not TF32 tensor cores), memory bandwidth, memory.
ACCELERATORS = {a.name: a for a in (
    Accelerator("A100-40GB", 19.5e12, 1.555e12, 40e9),
    Accelerator("A100-80GB", 19.5e12, 2.039e12, 80e9),
    Accelerator("H100-SXM", 66.9e12, 3.35e12, 80e9),
    Accelerator("H100-PCIe", 51.2e12, 2.0e12, 80e9),
    Accelerator("H200", 66.9e12, 4.8e12, 141e9),
    Accelerator("RTX-4090", 82.6e12, 1.008e12, 24e9),
    Accelerator("L4", 30.3e12, 0.3e12, 24e9),
    Accelerator("T4", 8.1e12, 0.32e12, 16e9),
    Accelerator("V100-16GB", 15.7e12, 0.9e12, 16e9),
)}


def accelerator(name: str | None, flops: float | None = None, bandwidth: float | None = None,
                memory_bytes: float | None = None) -> Accelerator:
    """A named accelerator of `ACCELERATORS` (case and '-' / ' ' / '_' ignored), its figures overridden by any
    given; with no name, all three figures must be given."""
    if name is None:
        if None in (flops, bandwidth, memory_bytes):
            raise UserError(f"give a name ({', '.join(ACCELERATORS)}), or all of flops, bandwidth and memory_bytes")
        return Accelerator("custom", flops, bandwidth, memory_bytes)

    def plain(text: str) -> str:
        return "".join(c for c in text.lower() if c.isalnum())

    found = [a for key, a in ACCELERATORS.items() if plain(key) == plain(name)]
    if not found:
        raise UserError(f"unknown accelerator {name!r}; known: {', '.join(ACCELERATORS)} (or give "
                        "--accelerator-flops, --accelerator-bandwidth and --accelerator-memory)")
    base = found[0]
    given = (flops, bandwidth, memory_bytes) != (None, None, None)
    return Accelerator(f"{base.name} (figures overridden)" if given else base.name, flops or base.flops,
                       bandwidth or base.bandwidth, memory_bytes or base.memory)


def bounds(cost: Cost, acc: Accelerator) -> dict[str, float]:
    """Seconds of `cost` on `acc` by each limit: compute, memory bandwidth and kernel launches (module
    docstring)."""
    return {"compute": cost.flops / acc.flops, "memory bandwidth": cost.bytes / acc.bandwidth,
            "kernel launches": cost.kernels * acc.kernel_seconds}


# How `roofline_seconds` combines `bounds`, as the dry runs' last line names it.
ESTIMATE_MODEL = "kernels x seconds each + max(FLOPs / peak, bytes / bandwidth)"


def roofline_seconds(cost: Cost, acc: Accelerator) -> float:
    """The estimated time of `cost` on `acc`: kernels x seconds per kernel + max(FLOPs / peak, bytes / bandwidth)
    (an estimate: module docstring)."""
    limits = bounds(cost, acc)
    return limits["kernel launches"] + max(limits["compute"], limits["memory bandwidth"])


def bound(cost: Cost, acc: Accelerator) -> str:
    """Which term is the larger part of `roofline_seconds`: "compute", "memory bandwidth" or "kernel launches"."""
    limits = bounds(cost, acc)
    return max(limits, key=limits.get)


def format_si(value: float, unit: str) -> str:
    """1.23 G<unit> style: three significant digits and a decimal prefix."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_seconds(value: float) -> str:
    if value >= 3600:
        return f"{value / 3600:.2f} h"
    if value >= 60:
        return f"{value / 60:.1f} min"
    return f"{value:.3g} s"


# ---------------------------------------------------------------------------------------------------------
# planning a command's calls (`--dry-run` of evaluate, sweep and pbt; meta-train's is `metadisco.meta.plan`)


@dataclass(frozen=True)
class CallPlan:
    """One compiled call of a command, made `calls` times: its work over all of them, its memory per device."""

    label: str  # what the call is, e.g. "CartPole-v1: dpo" or "pbt round"
    runs: int  # runs it trains (before padding to the device count)
    env_steps: int  # over all its calls
    cost: Cost  # every device, over all its calls
    memory: Memory  # per device
    compile_seconds: float
    calls: int = 1


def plan_call(label: str, fn, args: tuple, runs: int, env_steps_per_call: int, calls: int = 1) -> CallPlan:
    """Compile `fn(*args)` (a program sharded over the devices its first argument is on) and cost it."""
    import time

    import jax

    start = time.perf_counter()
    compiled = fn.lower(*args).compile()
    seconds = time.perf_counter() - start
    used = len(jax.tree.leaves(args[0])[0].sharding.device_set)
    per_device = jaxpr_cost(jax.make_jaxpr(fn)(*args), compiled)
    return CallPlan(label, runs, env_steps_per_call * calls, per_device.on_devices(used) * calls, memory(compiled),
                    seconds, calls)


def render_plan(calls: list[CallPlan], acc: Accelerator, devices: int, what: str, note: str = "") -> list[str]:
    """A dry run's report, one line each: the calls, the whole (`what`), memory, and the accelerator estimate."""
    lines = [f"{'call':40s} {'calls':>5s} {'runs':>5s} {'env steps':>13s} {'FLOPs':>12s} {'bytes':>12s} "
             f"{'memory/device':>13s} {'compile':>8s}"]
    for c in calls:
        lines.append(f"{c.label[:40]:40s} {c.calls:>5d} {c.runs:>5d} {c.env_steps:>13,} "
                     f"{format_si(c.cost.flops, 'FLOP'):>12s} {format_si(c.cost.bytes, 'B'):>12s} "
                     f"{format_si(c.memory.total, 'B'):>13s} {format_seconds(c.compile_seconds):>8s}")
    total = sum((c.cost for c in calls), Cost())
    steps = sum(c.env_steps for c in calls)
    mem = max(c.memory.total for c in calls)
    lines.append(f"{what}: {steps:,} env steps, {format_si(total.flops, 'FLOP')}, {format_si(total.bytes, 'B')} "
                 f"accessed{f' ({note})' if note else ''}")
    lines.append(f"memory per device: {format_si(mem, 'B')} (XLA's memory analysis of the largest call) on each of "
                 f"{devices} device(s)")
    needed = mem * devices
    fits = "fits" if needed <= acc.memory else "does NOT fit"
    lines.append(f"ESTIMATE for one {acc.describe()}, not a measurement: "
                 f"{format_seconds(roofline_seconds(total, acc))} in total ({ESTIMATE_MODEL}, "
                 f"{bound(total, acc)}-bound); the largest call needs about {format_si(needed, 'B')}, which {fits} "
                 f"in {format_si(acc.memory, 'B')}")
    return lines

