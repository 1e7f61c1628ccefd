"""Layer 2: pure RL maths, each function with its paper and shapes in the docstring: GAE, Q(lambda), minibatch
epochs, action distributions, network building blocks."""
