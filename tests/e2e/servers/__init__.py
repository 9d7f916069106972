"""Scripted model servers: local HTTP servers that play a model for the real agent CLIs.

Each provider module (`anthropic`, ...) subclasses `base.ScriptedServer`: it replays a script of
steps (tool calls, final text, errors) from a JSON fixture, records every request, and answers
with the provider's own response and error shapes.
"""
