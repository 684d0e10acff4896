#!/usr/bin/env python3
"""project-facts: a small MCP server over stdio, standard library only.

It answers three questions about the project it is started in, without changing anything:

* project_overview      - which files exist, how many lines and bytes each has
* python_syntax_check   - whether Python files compile, with the position of each error
* python_outline        - the classes and functions a Python file defines, with line numbers

Transport: newline-delimited JSON-RPC 2.0 on stdin/stdout. Only protocol messages go to
stdout; anything else (warnings, stray prints) is sent to stderr.

Usage: python3 project_facts.py [--root DIR]   (default root: $PROJECT_FACTS_ROOT or the cwd)
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import sys
import warnings
from pathlib import Path

SERVER_NAME = "project-facts"
SERVER_VERSION = "1.0.0"
FALLBACK_PROTOCOL = "2025-06-18"

SKIP_DIRS = {
    ".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox", ".nox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".idea", ".vscode", "build", "dist",
    ".eggs", "htmlcov",
}
MAX_READ_BYTES = 5 * 1024 * 1024

# Keep the real stdout for protocol messages only; route every other print to stderr.
_PROTOCOL_OUT = sys.stdout.buffer
sys.stdout = sys.stderr
sys.dont_write_bytecode = True


class ToolError(Exception):
    """A tool could not do its job; reported to the client as a result with isError."""


class RpcError(Exception):
    """A protocol-level error, reported as a JSON-RPC error object."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


# --------------------------------------------------------------------------------- helpers

def parse_root(argv: list[str]) -> Path:
    root = os.environ.get("PROJECT_FACTS_ROOT") or os.getcwd()
    if "--root" in argv:
        index = argv.index("--root")
        if index + 1 < len(argv) and argv[index + 1]:
            root = argv[index + 1]
    path = Path(root).resolve()
    if not path.is_dir():
        print(f"{SERVER_NAME}: root {root!r} is not a folder, using {os.getcwd()}",
              file=sys.stderr)
        path = Path.cwd().resolve()
    return path


def inside(root: Path, relative: str) -> Path:
    """Resolve a user-supplied path and refuse anything outside the root."""
    if not isinstance(relative, str) or not relative.strip():
        raise ToolError("path must be a non-empty string")
    target = (root / relative).resolve()
    if target != root and root not in target.parents:
        raise ToolError(f"path {relative!r} is outside the project root")
    if not target.exists():
        raise ToolError(f"path {relative!r} does not exist")
    return target


def walk_files(root: Path, start: Path):
    """Yield regular files under start, sorted, skipping caches and tool folders."""
    if start.is_file():
        yield start
        return
    for dirpath, dirnames, filenames in os.walk(start):
        dirnames[:] = sorted(
            d for d in dirnames
            if d not in SKIP_DIRS and not d.endswith(".egg-info")
            and not os.path.islink(os.path.join(dirpath, d))
        )
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if path.is_symlink() or not path.is_file():
                continue
            yield path


def rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else "."


def count_lines(path: Path) -> tuple[int | None, int]:
    """Return (lines or None for binary/huge files, size in bytes)."""
    size = path.stat().st_size
    if size > MAX_READ_BYTES:
        return None, size
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None, size
    lines = data.count(b"\n")
    if data and not data.endswith(b"\n"):
        lines += 1
    return lines, size


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024 or unit == "MiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def python_files(root: Path, paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for entry in paths:
        target = inside(root, entry)
        for path in walk_files(root, target):
            if path.suffix == ".py" and path not in found:
                found.append(path)
    return found


# ----------------------------------------------------------------------------------- tools

def tool_project_overview(root: Path, args: dict) -> str:
    start = inside(root, args.get("path", "."))
    limit = args.get("max_files", 200)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 5000:
        raise ToolError("max_files must be an integer between 1 and 5000")

    rows = []
    by_ext: dict[str, list[int]] = {}
    total_lines = total_bytes = 0
    for path in walk_files(root, start):
        try:
            lines, size = count_lines(path)
        except OSError as exc:
            rows.append(f"{'?':>7} {'?':>10}  {rel(root, path)}  (unreadable: {exc.strerror})")
            continue
        total_bytes += size
        ext = path.suffix.lower() or "(none)"
        stats = by_ext.setdefault(ext, [0, 0])
        stats[0] += 1
        if lines is not None:
            total_lines += lines
            stats[1] += lines
        shown = "binary" if lines is None else str(lines)
        rows.append(f"{shown:>7} {human_size(size):>10}  {rel(root, path)}")

    out = [
        f"root: {root}",
        f"scope: {rel(root, start)}",
        f"files: {len(rows)}, text lines: {total_lines}, size: {human_size(total_bytes)}",
        f"git repository: {'yes' if (root / '.git').exists() else 'no'}",
        "skipped folders: " + ", ".join(sorted(SKIP_DIRS)) + ", *.egg-info",
        "",
        f"{'lines':>7} {'size':>10}  path",
    ]
    out.extend(rows[:limit])
    if len(rows) > limit:
        out.append(f"... {len(rows) - limit} more files not shown (raise max_files)")
    if by_ext:
        out.append("")
        out.append("by extension:")
        for ext, (files, lines) in sorted(by_ext.items(), key=lambda kv: (-kv[1][0], kv[0])):
            out.append(f"  {ext}: {files} file(s), {lines} line(s)")
    return "\n".join(out)


def tool_python_syntax_check(root: Path, args: dict) -> str:
    paths = args.get("paths", ["."])
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths) or not paths:
        raise ToolError("paths must be a non-empty list of strings")
    files = python_files(root, paths)
    if not files:
        return "no Python files found in: " + ", ".join(paths)

    problems, notes = [], []
    for path in files:
        name = rel(root, path)
        try:
            source = path.read_bytes()
        except OSError as exc:
            problems.append(f"{name}: cannot read: {exc.strerror}")
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                compile(source, name, "exec", dont_inherit=True)
            except SyntaxError as exc:
                where = f"{exc.lineno or '?'}:{exc.offset or '?'}"
                problems.append(f"{name}:{where}: {type(exc).__name__}: {exc.msg}")
            except (ValueError, UnicodeDecodeError) as exc:
                problems.append(f"{name}: cannot compile: {exc}")
        for warning in caught:
            notes.append(f"{name}:{warning.lineno}: {warning.category.__name__}: "
                         f"{warning.message}")

    head = (f"checked {len(files)} Python file(s) with Python "
            f"{sys.version_info.major}.{sys.version_info.minor}: "
            f"{len(files) - len(problems)} ok, {len(problems)} with errors")
    out = [head]
    if problems:
        out += ["", "errors:"] + [f"  {p}" for p in problems]
    if notes:
        out += ["", "warnings:"] + [f"  {n}" for n in notes]
    return "\n".join(out)


def _signature(node: ast.AST) -> str:
    try:
        text = f"({ast.unparse(node.args)})"
        if node.returns is not None:
            text += f" -> {ast.unparse(node.returns)}"
        return text
    except AttributeError:  # Python older than 3.9 has no ast.unparse
        return "(" + ", ".join(a.arg for a in node.args.args) + ")"


def _outline(nodes, depth: int, out: list[str]) -> None:
    pad = "  " * depth
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
            out.append(f"{pad}{kind} {node.name}{_signature(node)}  [line {node.lineno}]")
        elif isinstance(node, ast.ClassDef):
            bases = ", ".join(ast.unparse(b) for b in node.bases) if hasattr(ast, "unparse") else ""
            out.append(f"{pad}class {node.name}{f'({bases})' if bases else ''}  "
                       f"[line {node.lineno}]")
            _outline(node.body, depth + 1, out)


def tool_python_outline(root: Path, args: dict) -> str:
    path = inside(root, args.get("path", ""))
    if not path.is_file() or path.suffix != ".py":
        raise ToolError("path must name a .py file")
    source = path.read_bytes()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source, rel(root, path))
    except SyntaxError as exc:
        raise ToolError(f"{rel(root, path)}:{exc.lineno}: SyntaxError: {exc.msg}") from None
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    imports = sorted(imported)
    lines, _ = count_lines(path)
    out = [f"{rel(root, path)} ({lines} lines)"]
    doc = ast.get_docstring(tree)
    if doc:
        out.append(f"docstring: {doc.strip().splitlines()[0]}")
    out.append("imports: " + (", ".join(imports) if imports else "none"))
    has_main = any(
        isinstance(n, ast.If) and "__main__" in ast.dump(n.test) for n in tree.body
    )
    out.append(f"main guard: {'yes' if has_main else 'no'}")
    body: list[str] = []
    _outline(tree.body, 1, body)
    out.append("definitions:" if body else "definitions: none")
    out.extend(body)
    return "\n".join(out)


TOOLS = {
    "project_overview": {
        "handler": tool_project_overview,
        "description": (
            "List the project's files with line counts and sizes, plus totals by extension. "
            "Skips VCS folders, caches, virtual environments and build output. Read-only."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Folder or file relative to the project root (default '.')",
                },
                "max_files": {"type": "integer", "minimum": 1, "maximum": 5000,
                              "description": "Maximum number of files to list (default 200)"},
            },
            "additionalProperties": False,
        },
    },
    "python_syntax_check": {
        "handler": tool_python_syntax_check,
        "description": (
            "Compile Python files without running them and report syntax errors with "
            "file:line:column, plus syntax warnings. Writes no bytecode. Read-only."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                          "description": "Files or folders relative to the project root "
                                         "(default: the whole project)"},
            },
            "additionalProperties": False,
        },
    },
    "python_outline": {
        "handler": tool_python_outline,
        "description": (
            "Show the structure of one Python file: imports, whether it has a __main__ "
            "guard, and its classes, methods and functions with signatures and line numbers."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string",
                         "description": "A .py file relative to the project root"},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    },
}


# -------------------------------------------------------------------------------- protocol

def handle_initialize(params: dict, _root: Path) -> dict:
    requested = params.get("protocolVersion")
    version = requested if isinstance(requested, str) and requested else FALLBACK_PROTOCOL
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
        "instructions": "Read-only facts about the project in the working directory.",
    }


def handle_tools_list(_params: dict, _root: Path) -> dict:
    return {"tools": [
        {"name": name, "description": spec["description"], "inputSchema": spec["inputSchema"]}
        for name, spec in TOOLS.items()
    ]}


def handle_tools_call(params: dict, root: Path) -> dict:
    name = params.get("name")
    if name not in TOOLS:
        raise RpcError(-32602, f"unknown tool: {name!r}")
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise RpcError(-32602, "arguments must be an object")
    unknown = set(arguments) - set(TOOLS[name]["inputSchema"]["properties"])
    try:
        if unknown:
            raise ToolError("unknown argument(s): " + ", ".join(sorted(unknown)))
        text = TOOLS[name]["handler"](root, arguments)
        is_error = False
    except ToolError as exc:
        text, is_error = f"error: {exc}", True
    except OSError as exc:
        text, is_error = f"error: {exc}", True
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


METHODS = {
    "initialize": handle_initialize,
    "ping": lambda _params, _root: {},
    "tools/list": handle_tools_list,
    "tools/call": handle_tools_call,
}


def error_reply(msg_id, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def handle_message(message, root: Path):
    """Return the reply for one message, or None when no reply is due."""
    if not isinstance(message, dict):
        return error_reply(None, -32600, "invalid request: expected a JSON object")
    is_request = "id" in message
    msg_id = message.get("id")
    method = message.get("method")
    if method is None:
        return None  # a response to a request we never send, or junk: nothing to answer
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return error_reply(msg_id, -32600, "invalid request") if is_request else None
    if not is_request:
        return None  # notifications (initialized, cancelled, ...) never get a reply
    params = message.get("params") or {}
    if not isinstance(params, dict):
        return error_reply(msg_id, -32602, "params must be an object")
    handler = METHODS.get(method)
    if handler is None:
        return error_reply(msg_id, -32601, f"method not found: {method}")
    try:
        return {"jsonrpc": "2.0", "id": msg_id, "result": handler(params, root)}
    except RpcError as exc:
        return error_reply(msg_id, exc.code, exc.message)
    except Exception as exc:  # never let one bad request kill the server
        print(f"{SERVER_NAME}: internal error in {method}: {exc!r}", file=sys.stderr)
        return error_reply(msg_id, -32603, f"internal error: {exc}")


def send(reply) -> None:
    _PROTOCOL_OUT.write(json.dumps(reply, separators=(",", ":")).encode("utf-8") + b"\n")
    _PROTOCOL_OUT.flush()


def serve(root: Path) -> None:
    for raw in sys.stdin.buffer:
        line = raw.strip()
        if not line:
            continue
        try:
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            send(error_reply(None, -32700, f"parse error: {exc}"))
            continue
        if isinstance(message, list):  # JSON-RPC batch (older protocol revisions)
            if not message:
                send(error_reply(None, -32600, "invalid request: empty batch"))
                continue
            replies = [r for r in (handle_message(m, root) for m in message) if r is not None]
            if replies:
                send(replies)
            continue
        reply = handle_message(message, root)
        if reply is not None:
            send(reply)


def main() -> int:
    root = parse_root(sys.argv[1:])
    print(f"{SERVER_NAME} {SERVER_VERSION}: serving {root}", file=sys.stderr)
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        serve(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
