"""A tiny trainer config and a counter of JAX's traces and compilations, shared by the trainer, sweep and PBT
tests (their compiled programs are cached across them)."""

import jax

from metadisco import train_config

TINY = train_config(num_envs=4, num_steps=16, total_timesteps=4 * 16 * 6, update_epochs=2, num_minibatches=2,
                    hidden_sizes=(8, 8))


class CompileCounter:
    """Counts jaxpr traces and XLA compilations (JAX's own monitoring events) while active."""

    def __init__(self):
        self.traces = self.compiles = 0
        self.names: list[str] = []  # the functions traced
        self.active = False
        jax.monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, event, duration, **kwargs):
        if not self.active:
            return
        if event == "/jax/core/compile/jaxpr_trace_duration":
            self.traces += 1
            self.names.append(kwargs.get("fun_name"))
        elif event == "/jax/core/compile/backend_compile_duration":
            self.compiles += 1

    def __enter__(self):
        self.traces = self.compiles = 0
        self.names = []
        self.active = True
        return self

    def __exit__(self, *exc):
        self.active = False
