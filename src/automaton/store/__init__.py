"""Everything on disk: layout, atomic writes, locks, chained logs, task and loop stores."""
