"""`make mutate`: mutation testing of the brake modules (mutmut), scoped per module."""
