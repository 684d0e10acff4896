"""The model gateway: a local HTTP proxy that every model call of a run goes through.

One gateway runs per pytest process (per xdist worker). A run registers a `Route` and gives the
CLI `ANTHROPIC_BASE_URL=<gateway>/run/<key>` with a dummy key; the gateway injects the real
credential upstream (so the key never enters a workspace, transcript or report), streams the
answer back unchanged, appends one JSON line per call to the run's `model_calls.jsonl`, checks
the ablation on the run's first request, enforces the run's budget and notes every rate limit or
upstream failure it sees. It listens on 127.0.0.1 and on a unix socket (for sandboxes without
network).
"""

from pytest_scylla.run.gateway.routes import Route, UpstreamSetupError
from pytest_scylla.run.gateway.server import Gateway

__all__ = ["Gateway", "Route", "UpstreamSetupError"]
