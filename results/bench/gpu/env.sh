# Sourced first by every device command (issue 45, item 4). The lent GPU machine reaches no package registry, so the
# README's `pip install -e . -c constraints.txt` cannot run there as written. What it does instead: the image's own
# Python 3.12 with its jax/jaxlib/CUDA plugin, flax, optax and chex (versions printed below; jax is outside
# pyproject's <0.11 range), plus the pure-Python packages metadisco needs that the image lacks, carried as wheels
# in .whl/ (evosax 0.3.2, gymnax 1.0.1, gymnasium 1.3.0, dotmap, rejax 0.1.3 with distrax/tfp, gplearn), and this
# checkout on PYTHONPATH. Numbers are therefore not comparable bit for bit with the CPU's; speed is what is measured.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD
export XLA_PYTHON_CLIENT_PREALLOCATE=false   # several processes (tests) share the one GPU
# step LIMIT NAME CMD...: run CMD under a time limit, its output in $OUT/NAME.log, its status, wall time and tail here.
step() { local limit=$1 name=$2; shift 2; echo "=== $name (limit ${limit}s) $(date +%T)";
         local t0=$(date +%s.%N); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?;
         echo "=== $name rc=$rc wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"; tail -8 "$OUT/$name.log"; }
