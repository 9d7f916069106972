"""The loop runner: one tick = gates, worktree, implement, commit, verify, orchestrate, record."""
