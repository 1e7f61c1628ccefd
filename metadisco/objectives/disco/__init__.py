"""DiscoRL's learned update rule (Oh et al., "Discovering State-of-the-art Reinforcement Learning Algorithms",
Nature 2025), ported from DeepMind's released code (`google-deepmind/disco_rl`, commit 9059a29) so that its released
meta-parameters, Disco103, run here unchanged: `weights` (the file), `meta_net` (the meta-network), `rule` (the
targets, normalisers and agent losses around it)."""
