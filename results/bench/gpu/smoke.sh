# A minute: does metadisco import and train on the GPU with the carried wheels?
. results/bench/gpu/env.sh
nvidia-smi -L
python3 -c "
import jax, jaxlib, flax, optax, chex, evosax, gymnax, numpy, rejax
print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, 'flax', flax.__version__, 'optax', optax.__version__,
      'chex', chex.__version__, 'evosax', evosax.__version__ if hasattr(evosax, '__version__') else '?',
      'numpy', numpy.__version__, jax.devices())"
time md train --env CartPole-v1 --timesteps 16384 --seeds 2 --out /tmp/smoke --no-progress
