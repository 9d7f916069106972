"""Scripted model servers: local HTTP servers that play a model for the real agent CLIs.

Each provider module (`anthropic` for Claude Code, `openai_responses` for Codex, `gemini` for
Gemini CLI, `openai_chat` for OpenCode's OpenAI-compatible provider) subclasses
`base.ScriptedServer`: it replays a script of steps (tool calls, final text, errors) from a JSON
fixture or a list, records every request, and answers with the provider's own response and error
shapes.
"""
