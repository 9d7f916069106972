"""The delivery edge: one flag-style parser, dispatch to use cases, rendering, exit codes."""
