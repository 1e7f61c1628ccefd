"""The learned value loss's shape in numbers: its second derivative over the errors a CartPole critic makes
(where it is negative the loss is not convex) and its asymmetry (the pull on an overestimate against the pull on
an underestimate of the same size).

    python results/value_loss_cartpole/shape.py results/value_loss_cartpole/learned.msgpack
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np

from metadisco.objectives import Progress, ValueLossInputs, load_objective

objective, meta = load_objective(sys.argv[1])
piece, piece_meta = objective.value_loss, meta["value_loss"]
progress = Progress(jnp.float32(0.0), jnp.float32(128.0))
loss = lambda e: piece(piece_meta, ValueLossInputs(e[None], jnp.zeros(1), jnp.zeros(1)), progress)[0]
errors = jnp.linspace(-100.0, 100.0, 4001)
curvature = np.asarray(jax.vmap(jax.grad(jax.grad(loss)))(errors))
slope = np.asarray(jax.vmap(jax.grad(loss))(errors))
concave = errors[curvature < 0]
print(f"second derivative < 0 on {np.mean(curvature < 0):.1%} of e in [-100, 100]"
      + (f" (between {float(concave.min()):.2f} and {float(concave.max()):.2f})" if concave.size else ""))
for e in (1.0, 3.0, 10.0, 30.0, 100.0):
    over, under = (float(jax.grad(loss)(jnp.float32(x))) for x in (e, -e))
    print(f"|e| = {e:5.0f}: slope {over:10.4g} on an overestimate, {under:10.4g} on an underestimate "
          f"(ratio {abs(over / under):.3g})")
print(f"slope never negative on e > 0: {bool(np.all(slope[errors > 0] >= 0))}; "
      f"never positive on e < 0: {bool(np.all(slope[errors < 0] <= 0))}")
