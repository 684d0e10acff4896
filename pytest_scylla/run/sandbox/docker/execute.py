"""`python execute.py PYCACHE CONTAINER CWD -- command ...`: run a command in a run's
container through the docker SDK with this process's environment, relay its output and exit
with its status. The docker sandbox's `wrap` (the checks) starts it on the host, by path.
"""

from __future__ import annotations

import os
import sys


def main(args: list[str]) -> int:
    if len(args) < 5 or args[3] != "--":
        print("usage: execute.py PYCACHE CONTAINER CWD -- command ...", file=sys.stderr)
        return 2
    # this helper's own imports use a bytecode cache of the harness's, whatever the check's
    # environment says about bytecode (it is meant for the command inside)
    sys.dont_write_bytecode, sys.pycache_prefix = False, args[0]
    sys.path.remove(
        os.path.dirname(os.path.abspath(__file__))
    )  # its siblings (copy.py, ...) are not the stdlib or the SDK
    import docker  # type: ignore[import-untyped]

    container, cwd, command = args[1], args[2], args[4:]
    api = docker.from_env(timeout=None).api
    handle = api.exec_create(
        container, command, environment=dict(os.environ), workdir=cwd, stdout=True, stderr=True
    )
    for out, err in api.exec_start(handle["Id"], stream=True, demux=True):
        if out:
            sys.stdout.buffer.write(out)
            sys.stdout.buffer.flush()
        if err:
            sys.stderr.buffer.write(err)
            sys.stderr.buffer.flush()
    code = api.exec_inspect(handle["Id"]).get("ExitCode")
    return int(code) if code is not None else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
