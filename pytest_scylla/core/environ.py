"""The harness's environment less every model credential: for the subprocesses it starts on
trusted input (git on the case's source or the plugin's checkout, npm installing a pinned MCP
package). Anything that touches what an agent wrote gets an allow-list instead."""

from __future__ import annotations

import os

CREDENTIAL_PREFIXES = ("ANTHROPIC_", "OPENAI_", "CLAUDE_CODE_OAUTH", "GEMINI_", "GOOGLE_API")


def credential_free() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(CREDENTIAL_PREFIXES) and "API_KEY" not in k
    }
