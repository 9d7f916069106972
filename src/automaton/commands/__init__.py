"""Use cases: typed arguments in, an Outcome out. No argparse, no print."""
