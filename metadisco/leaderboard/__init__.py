"""A leaderboard of RL algorithms, published and discovered: every entry judged on one suite by one protocol, with
the statistics the field recommends (`metadisco leaderboard`).

- `suite`: what a board is judged on (envs and budgets, the tuning grid, seed sets, the score), as data;
- `entries`: the methods (`entries.yaml`: PPO, DPO, PQN, DQN and its published losses, update rules, the
  catalogue's discoveries) and any objective a user adds;
- `board`: the cells, their training, and the board computed from them;
- `render`: the board's table (markdown) and figures.
"""

from metadisco.leaderboard.board import Board
from metadisco.leaderboard.entries import Entry, shipped_entries, suite_entries
from metadisco.leaderboard.suite import Suite, load_suite, shipped_suites

__all__ = ["Board", "Entry", "Suite", "load_suite", "shipped_entries", "shipped_suites", "suite_entries"]
