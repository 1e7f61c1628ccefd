"""Plan a meta-training run before it starts (`metadisco meta-train CONFIG --dry-run`): compile each task's
population program as a generation would call it, and report env steps, FLOPs, memory and time per generation
and for the whole run, and a roofline estimate on a named accelerator, without training the run or writing
anything.

- env steps are predicted for the calls `metrics.jsonl`'s `env_steps` sums as they run (`MetaProblem.ran`: each
  generation's drawn tasks, the ES mean's evaluations every `eval_every` generations and after the last,
  validations), from the same deterministic draws and the same call layout (`MetaProblem.point_layout`), so the
  plan's total is the run's final `env_steps` (tested);
- FLOPs and bytes come from XLA's cost model of each compiled population program with its loops counted
  (`metadisco.parallel.cost`), per device, times the devices: the work computed, padding rows included (an
  evaluation of the ES mean that trains it alone, `MetaProblem.mean_rows`, is the population program's figures
  scaled to its rows);
- memory per device is XLA's memory analysis of the compiled program (arguments, outputs, temporaries);
- time is measured on this machine by calling each program once after compiling it (one task call each), and a
  generation's time is the sum of its tasks' calls (the ES's ask and tell are left out: milliseconds), except
  that validation tasks on devices of their own (`MetaProblem.own_device`) run at once: the busiest device's sum;
- the accelerator figure is an estimate (`metadisco.parallel.cost.roofline_seconds`): the whole generation's FLOPs,
  bytes and kernel launches on one accelerator, and whether every device's programs would fit in its
  memory at once.

Set-up before the first generation (baselines, the initial objective's scores) is not in the totals, as it is
not in `env_steps`; the baseline cache (`metadisco.runs.baseline_cache`) makes it free on a second run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import jax
import numpy as np

from metadisco.meta import paired
from metadisco.parallel import cost, hosts
from metadisco.parallel.cost import format_seconds as _seconds
from metadisco.parallel.cost import format_si as _si


@dataclass(frozen=True)
class ProgramPlan:
    """One task's population program at the row count a generation (or a validation) calls it with."""

    task: str
    role: str  # "train" or "validation"
    rows: int  # rows of the call (members, PPO control, padding)
    seeds: int
    steps_per_run: int
    cost: cost.Cost  # the whole call, every device (loops counted)
    memory: cost.Memory  # per device
    compile_seconds: float
    call_seconds: float  # one call on this machine, after compiling


@dataclass(frozen=True)
class Pass:
    """Work of one generation, or of the whole run: env steps (as metrics.jsonl counts them), cost, seconds."""

    env_steps: int = 0
    cost: cost.Cost = cost.Cost()
    seconds: float = 0.0

    def __add__(self, other: Pass) -> Pass:
        return Pass(self.env_steps + other.env_steps, self.cost + other.cost, self.seconds + other.seconds)


def _rows(step) -> int:
    """Rows of a generation's call: the population (and PPO, padded, when paired), each at every grid point of a
    tuned fitness."""
    return step.problem.grid.size * (step.problem.population_rows() if step.problem.paired else step.population_size)
    # (a separate control's rows are its own program's: `plan` counts them apart)


def _blocks(step) -> tuple:
    """(a generation's rows, a validation's rows, a validation's rows on a device of its own) as the run builds
    them, from the ES's initial state: the population (and PPO, padded, when paired); one (ES mean, PPO) pair
    padded to the device count; the ES mean alone (`MetaProblem.own_device`)."""
    state = step.init()
    population = hosts.to_host(step.ask(jax.random.fold_in(step.base_key, 0), state)[0])
    problem = step.problem
    separate = problem.control_objective is not None  # the control trains in its own program (`_control_blocks`)
    if problem.paired and separate:
        train = paired.padded(population, problem.population_rows())
    else:
        train = paired.with_control(population, problem.control, step.devices) if problem.paired else population
    if problem.grid:  # each row at every grid point, as `MetaProblem.train_grid` calls it
        train = problem.grid.expand(train)
    if separate:  # the point alone (`MetaProblem._paired_means`)
        valid = paired.copies(step.solution(state), paired.point_rows(1, step.devices, 2 * step.devices))
    else:
        valid = paired.pairs(step.solution(state), problem.control, 1, step.devices)[0]
    return train, valid, paired.copies(step.solution(state), 1)


def _program(step, task, role: str, block, measure: bool, mesh=None, grid: bool = False,
             rows: int | None = None) -> ProgramPlan:
    """Compile `task`'s population program on the rows `block` (host), on `mesh` (default: the task's), cost it
    and (`measure`) call it once; `rows` counts the block where its points have no leaves (a handcrafted
    control's)."""
    rows = paired.count(block) if rows is None else rows
    program = task.program(mesh)
    seeds = np.asarray(jax.random.split(jax.random.fold_in(step.base_key, task.index), task.cfg.seeds))
    args = step.problem.program_args(task, hosts.to_global(block, step.mesh), paired.rows_of(seeds, rows), mesh, grid)
    start = time.perf_counter()
    compiled = program.lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    per_device = cost.jaxpr_cost(jax.make_jaxpr(program)(*args), compiled)
    seconds = 0.0
    if measure:
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        seconds = time.perf_counter() - start
    devices = step.devices if mesh is None else int(mesh.devices.size)
    return ProgramPlan(task.name, role, rows, task.cfg.seeds, task.steps_per_run, per_device.on_devices(devices),
                       cost.memory(compiled), compile_seconds, seconds)


def _call(program: ProgramPlan, counted_rows: int, called_rows: int | None = None) -> Pass:
    """One call of `program`'s task counting `counted_rows` rows of env steps. A call of `called_rows` rows (the
    ES mean's evaluation when it trains alone, `MetaProblem.mean_rows`) is costed and timed as `program`'s scaled
    by called_rows / program.rows (the work grows with the rows, the loop iterations and kernels do not; no program of
    that size is compiled for the plan)."""
    part = 1.0 if called_rows is None else min(1.0, called_rows / program.rows)
    return Pass(counted_rows * program.seeds * program.steps_per_run, program.cost.on_rows(part),
                program.call_seconds * part)


def _validation(step, valid: dict[str, ProgramPlan], devices: list) -> Pass:
    """One validation: each validation task's call (`MetaProblem.validation_rows` counted). Tasks on devices of
    their own (`MetaProblem.own_device`) run at once, so their seconds are those of the busiest device."""
    one_by_one, lanes = Pass(), {}
    for j, (task, device) in enumerate(zip(step.problem.valid_tasks, devices, strict=True)):
        call = _call(valid[task.name], step.problem.validation_rows(j))
        if device is None:
            one_by_one = one_by_one + call
        else:
            lanes[device] = lanes.get(device, Pass()) + call
    at_once = sum(lanes.values(), Pass())
    return one_by_one + replace(at_once, seconds=max((lane.seconds for lane in lanes.values()), default=0.0))


@dataclass(frozen=True)
class Plan:
    programs: list[ProgramPlan]
    generations: list[Pass]  # one per generation: its tasks, evaluation and validation
    devices: int
    population_size: int

    @property
    def total(self) -> Pass:
        return sum(self.generations, Pass())

    @property
    def per_generation(self) -> Pass:
        """The mean generation."""
        total, n = self.total, max(1, len(self.generations))
        return Pass(round(total.env_steps / n), total.cost * (1 / n), total.seconds / n)

    @property
    def memory_per_device(self) -> int:
        return max(p.memory.total for p in self.programs)

    def estimate(self, acc: cost.Accelerator) -> dict:
        """Roofline seconds per generation and in total on one `acc`, and whether the memory the programs take
        on all devices together fits in it (an estimate: see `metadisco.parallel.cost`)."""
        needed = self.memory_per_device * self.devices
        return {"accelerator": acc.name, "seconds_per_generation": cost.roofline_seconds(self.per_generation.cost, acc),
                "seconds_total": cost.roofline_seconds(self.total.cost, acc), "memory_needed": needed,
                "fits": needed <= acc.memory, "bound": cost.bound(self.total.cost, acc)}


def plan(step, measure: bool = True) -> Plan:
    """The plan of `step`'s config (`metadisco.meta.step.GenerationStep`): compiles every training and
    validation task's program, calls each once (`measure`), and adds up its generations (nothing trained for
    the run, nothing written)."""
    config = step.config
    rows = _rows(step)
    train_block, valid_block, alone_block = _blocks(step)
    G = step.problem.grid.size  # a tuned fitness's scoring of one point: one call per grid point
    train = {t.name: _program(step, t, "train", train_block, measure, grid=bool(step.problem.grid))
             for t in step.problem.tasks}
    devices = [step.problem.own_device(t, j, 1) for j, t in enumerate(step.problem.valid_tasks)]
    valid = {t.name: _program(step, t, "validation", valid_block if d is None else alone_block, measure, d)
             for t, d in zip(step.problem.valid_tasks, devices, strict=True)}
    validation = _validation(step, valid, devices) if valid else Pass()
    control = {}  # a control with a program of its own (an update rule's actor-critic): one call per task and point
    if step.problem.paired and step.problem.control_objective is not None:
        block = paired.copies(step.problem.control, step.problem.control_rows())
        if step.problem.grid:
            block = step.problem.grid.expand(block)
        control = {t.name: _program(step, step.problem.control_task(t), "control", block, measure,
                                    grid=bool(step.problem.grid), rows=step.problem.control_rows() * G)
                   for t in step.problem.tasks}
    generations = []
    for g in range(config.generations):
        last = g + 1 == config.generations
        work = sum((_call(train[t.name], rows) for t in step.problem.tasks_of(g)), Pass())
        work = work + sum((_call(control[t.name], step.problem.control_rows() * G)
                           for t in step.problem.tasks_of(g) if control), Pass())
        if (g + 1) % config.eval_every == 0 or last:
            work = work + sum((_call(train[t.name], step.problem.mean_rows(j), step.problem.mean_rows(j))
                               for j, t in enumerate(step.problem.tasks) for _ in range(G)), Pass())
        if valid and ((g + 1) % config.validation.every == 0 or last):
            work = work + sum([validation] * G, Pass())
        generations.append(work)
    return Plan([*train.values(), *control.values(), *valid.values()], generations, step.devices,
                step.population_size)


def render(result: Plan, acc: cost.Accelerator, measured: bool = True) -> list[str]:
    """The dry run's report, one line each."""
    lines = [f"{'program':28s} {'role':10s} {'rows x seeds':>12s} {'FLOPs/call':>12s} {'bytes/call':>12s} "
             f"{'memory/device':>13s} {'compile':>8s} {'call':>8s}"]
    for p in result.programs:
        lines.append(f"{p.task:28s} {p.role:10s} {f'{p.rows} x {p.seeds}':>12s} {_si(p.cost.flops, 'FLOP'):>12s} "
                     f"{_si(p.cost.bytes, 'B'):>12s} {_si(p.memory.total, 'B'):>13s} "
                     f"{_seconds(p.compile_seconds):>8s} {_seconds(p.call_seconds) if measured else '-':>8s}")
    gen, total = result.per_generation, result.total
    n = len(result.generations)
    lines.append(f"per generation (mean of {n}): {gen.env_steps:,} env steps, {_si(gen.cost.flops, 'FLOP')}, "
                 f"{_si(gen.cost.bytes, 'B')} accessed" + (f", {_seconds(gen.seconds)} here" if measured else ""))
    lines.append(f"whole run ({n} generations, evaluations and validations; set-up before the first generation "
                 f"not included): {total.env_steps:,} env steps, {_si(total.cost.flops, 'FLOP')}, "
                 f"{_si(total.cost.bytes, 'B')} accessed" + (f", {_seconds(total.seconds)} here" if measured else ""))
    lines.append(f"memory per device: {_si(result.memory_per_device, 'B')} (XLA's memory analysis of the largest "
                 f"program) on each of {result.devices} device(s)")
    est = result.estimate(acc)
    fits = "fits" if est["fits"] else "does NOT fit"
    lines.append(f"ESTIMATE for one {acc.describe()}, not a measurement: {_seconds(est['seconds_per_generation'])} "
                 f"per generation, {_seconds(est['seconds_total'])} in total ({cost.ESTIMATE_MODEL}, "
                 f"{est['bound']}-bound); the population needs about "
                 f"{_si(est['memory_needed'], 'B')}, which {fits} in {_si(acc.memory, 'B')}")
    return lines
