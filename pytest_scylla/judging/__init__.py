"""The judge panel: several LLM judges score a run concurrently through the gateway, each
answering with a forced tool call whose input is validated; invalid verdicts are retried with
the validation errors fed back, a bounded number of times.

`--scylla-judges` entries: a bare model id or `anthropic:<model>` (Anthropic SDK through the
gateway), `openai:<model>@<base-url>` (any OpenAI-compatible endpoint, JSON-schema response),
`gemini:<model>` (Google's Gemini API through the gateway's `gemini` upstream, JSON-schema
response), `claude-cli:<model>` (`claude -p` with `--json-schema`, through the gateway).
"""
