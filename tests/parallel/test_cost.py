"""The cost model: loops counted against a hand count, memory from XLA, accelerators and the roofline."""

import jax
import jax.numpy as jnp
import pytest

from metadisco.core.errors import UserError
from metadisco.parallel import cost

B, H, STEPS = 32, 64, 10


def mlp_scan(x, w1, b1, w2, b2, unroll=1):
    """STEPS applications of a 64x64 two-layer MLP to a [B, 64] batch."""

    def body(h, _):
        return jnp.tanh(h @ w1 + b1) @ w2 + b2, None

    return jax.lax.scan(body, x, None, STEPS, unroll=unroll)[0]


def args():
    return (jnp.ones((B, H)), jnp.ones((H, H)), jnp.ones(H), jnp.ones((H, H)), jnp.ones(H))


def hand_count() -> int:
    """Per step: two [B, 64] x [64, 64] matmuls (2 B 64 64 FLOPs each: a multiply and an add per term) and two
    bias adds (B 64 each); tanh is a transcendental, which XLA counts apart."""
    return STEPS * (2 * (2 * B * H * H) + 2 * B * H)


@pytest.mark.parametrize("unroll", [1, 5, True])
def test_a_scan_is_counted_as_many_times_as_it_runs(unroll):
    counted = cost.program_cost(lambda *a: mlp_scan(*a, unroll=unroll), *args())
    assert counted.flops == pytest.approx(hand_count(), rel=1e-3)
    assert counted.transcendentals == pytest.approx(STEPS * B * H, rel=1e-3)
    assert counted.bytes > 0
    # XLA alone counts the body once (or once per unrolled copy)
    once = cost.xla_cost(jax.jit(mlp_scan).lower(*args()).compile())
    assert once.flops == pytest.approx(hand_count() / STEPS, rel=1e-2)


def test_nested_scans_multiply():
    def nested(x, *weights):
        def outer(h, _):
            return mlp_scan(h, *weights), None

        return jax.lax.scan(outer, x, None, 3)[0]

    counted = cost.program_cost(nested, *args())
    assert counted.flops == pytest.approx(3 * hand_count(), rel=1e-3)
    assert counted.iterations == 3 * (1 + STEPS)  # each outer trip, and the inner loop's trips inside it


@pytest.mark.parametrize("rows", [1, 16])
def test_loop_iterations_count_trips_not_rows(rows):
    """vmapped rows run inside the same iterations; a program on n devices runs its iterations once."""
    batched = jax.vmap(mlp_scan, (0, None, None, None, None))
    x, *weights = args()
    counted = cost.program_cost(batched, jnp.ones((rows, *x.shape)), *weights)
    assert counted.iterations == STEPS
    assert counted.kernels == cost.program_cost(mlp_scan, *args()).kernels  # the rows share each kernel
    on_four = counted.on_devices(4)
    assert (on_four.iterations, on_four.kernels, on_four.flops) == (STEPS, counted.kernels, 4 * counted.flops)
    half = counted.on_rows(0.5)
    assert (half.iterations, half.kernels, half.flops) == (STEPS, counted.kernels, counted.flops / 2)
    assert (counted * 3).iterations == 3 * STEPS  # three calls, one after another


def test_kernels_grow_by_the_bodys_kernels_per_trip():
    """A scan of n trips launches a fixed number of kernels plus n times its body's: equal steps in n add equal
    counts, and the body's share is at least its two matrix products."""
    x, *weights = args()

    def kernels(length):
        def run(h, *w):
            return jax.lax.scan(lambda c, _: (jnp.tanh(c @ w[0] + w[1]) @ w[2] + w[3], None), h, None, length)[0]

        return cost.program_cost(run, x, *weights).kernels / cost.GPU_KERNELS_PER_CPU_KERNEL

    k5, k10, k20 = kernels(5), kernels(10), kernels(20)
    assert k20 - k10 == pytest.approx(2 * (k10 - k5))
    assert (k10 - k5) / 5 >= 2


HLO = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

%fused_computation (param_0: f32[4]) -> f32[4] {
  %param_0 = f32[4]{0} parameter(0)
  %a = f32[4]{0} sine(%param_0)
  ROOT %b = f32[4]{0} cosine(%a)
}

%body (arg: (s32[], f32[4])) -> (s32[], f32[4]) {
  %arg = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%arg), index=0
  %x = f32[4]{0} get-tuple-element(%arg), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %start = ((f32[4]{0}), /*index=1*/f32[4]{0}, u32[]) fusion-start(%x), kind=kLoop, calls=%fused_computation
  %done = f32[4]{0} fusion-done(%start)
  %y = f32[4]{0} copy(%done)
  ROOT %t = (s32[], f32[4]{0}) tuple(%next, %y)
}

%cond (arg.1: (s32[], f32[4])) -> pred[] {
  %arg.1 = (s32[], f32[4]{0}) parameter(0)
  %i.1 = s32[] get-tuple-element(%arg.1), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i.1, %n), direction=LT
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %f = f32[4]{0} fusion(%p), kind=kLoop, calls=%fused_computation
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %f)
  %w = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"10"}}
  %out = f32[4]{0} get-tuple-element(%w), index=1
  ROOT %s = f32[4]{0} sort(%out), dimensions={0}, to_apply=%cond
}
"""


def test_kernel_count_reads_the_hlo_text():
    """Entry: a fusion and a sort (its comparator is not entered); the loop's body once: an add and an
    asynchronous fusion (its start, not its done); plumbing, the copy and the fused computation's own
    instructions launch nothing. With trips, the body counts ten times."""
    assert cost.kernel_count(HLO) == 4
    assert cost.kernel_count(HLO, trips=True) == 2 + 10 * 2


def test_memory_is_xlas_memory_analysis():
    compiled = jax.jit(mlp_scan).lower(*args()).compile()
    stats = compiled.memory_analysis()
    mem = cost.memory(compiled)
    assert mem.arguments == stats.argument_size_in_bytes == 4 * (B * H + 2 * H * H + 2 * H)
    assert mem.outputs == 4 * B * H
    assert mem.total == (stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
                         - stats.alias_size_in_bytes + stats.generated_code_size_in_bytes)


def test_accelerators_and_the_roofline():
    a100 = cost.accelerator("a100 40gb")
    assert a100 == cost.ACCELERATORS["A100-40GB"]
    custom = cost.accelerator("T4", flops=1e12)
    assert custom.flops == 1e12 and custom.bandwidth == cost.ACCELERATORS["T4"].bandwidth
    assert "overridden" in custom.name
    assert cost.accelerator(None, 1e12, 1e11, 1e9).name == "custom"
    with pytest.raises(UserError, match="unknown accelerator 'B200'"):
        cost.accelerator("B200")
    with pytest.raises(UserError, match="or all of flops, bandwidth and memory_bytes"):
        cost.accelerator(None, 1e12)
    acc = cost.Accelerator("x", flops=1e12, bandwidth=1e11, memory=1e9)
    assert cost.roofline_seconds(cost.Cost(flops=2e12, bytes=1e10), acc) == 2.0  # compute-bound
    assert cost.roofline_seconds(cost.Cost(flops=1e9, bytes=1e11), acc) == 1.0  # bandwidth-bound
    assert cost.bound(cost.Cost(flops=1e9, bytes=1e11), acc) == "memory bandwidth"
    latency = cost.Cost(flops=1e9, bytes=1e9, kernels=1e6)  # a million launches, and the roofline's 0.01 s
    assert cost.roofline_seconds(latency, acc) == pytest.approx(1e6 * cost.GPU_KERNEL_SECONDS + 0.01)
    assert cost.bound(latency, acc) == "kernel launches"


def test_the_command_line_reads_the_table_before_jax_starts():
    """The parser lists the accelerators; JAX must not start then, or the device count is fixed too early."""
    import subprocess
    import sys

    code = "import sys; from metadisco.cli import build_parser; build_parser(); print('jax' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
