"""Scripted model servers: local HTTP servers that play a model provider from a script."""
