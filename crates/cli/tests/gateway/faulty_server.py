"""An MCP server on stdio that misbehaves on request (plain Python, no package).

Usage: python3 faulty_server.py STATE_DIR [--garbage-first] [--tools N] [--linger]

Tools:
- `echo` answers its `text`, after a line of garbage on stdout (a client skips it);
- `hang` never answers;
- `die` exits the process in the middle of the call;
- `grow` adds a tool `grown` and sends `notifications/tools/list_changed`;
- `starts` answers how many times this server has started (counted in STATE_DIR);
- `env` answers the value of the environment variable `name` (empty when unset);
- with `--tools N`, N more tools `tool_0` … listed 100 per page (a cursor).

With `--garbage-first` it writes garbage before its first answer; with `--linger` it does
not exit when its stdin closes (only a signal stops it). Written by hand so that
it misbehaves exactly as asked; used by the CLI's `gateway` tests as a downstream server
of `ruche gateway`.
"""

import json
import os
import sys
import threading
import time

state = sys.argv[1]
os.makedirs(state, exist_ok=True)
count_file = os.path.join(state, "starts")
starts = int(open(count_file).read()) + 1 if os.path.exists(count_file) else 1
with open(count_file, "w") as f:
    f.write(str(starts))
with open(os.path.join(state, "pid"), "w") as f:
    f.write(str(os.getpid()))
extra = int(sys.argv[sys.argv.index("--tools") + 1]) if "--tools" in sys.argv else 0
grown = False
out = threading.Lock()

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
EMPTY = {"type": "object", "properties": {}}
PAGE = 100


def send(message):
    with out:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def garbage():
    with out:
        sys.stdout.write("this line is not JSON-RPC {\n")
        sys.stdout.flush()


def tools():
    listed = [
        {"name": "echo", "description": "Repeat a text back unchanged", "inputSchema": TEXT},
        {"name": "hang", "description": "Wait forever without answering", "inputSchema": EMPTY},
        {"name": "die", "description": "Crash the server process", "inputSchema": EMPTY},
        {"name": "grow", "description": "Add a new tool to this server", "inputSchema": EMPTY},
        {"name": "starts", "description": "Count how many times the server started", "inputSchema": EMPTY},
        {"name": "env", "description": "Read an environment variable", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    ]
    if grown:
        listed.append({"name": "grown", "description": "Water the tomato plants in the greenhouse", "inputSchema": EMPTY})
    listed += [
        {"name": f"tool_{i}", "description": f"Numbered tool {i} of a long catalog", "inputSchema": EMPTY}
        for i in range(extra)
    ]
    return listed


def text(value):
    return {"content": [{"type": "text", "text": value}], "isError": False}


def call(name, arguments):
    global grown
    if name == "echo":
        garbage()
        return text(arguments.get("text", ""))
    if name == "hang":
        time.sleep(3600)
    if name == "die":
        os._exit(3)
    if name == "grow":
        grown = True
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return text("grown")
    if name == "env":
        return text(os.environ.get(arguments.get("name", ""), ""))
    if name == "starts":
        return text(str(starts))
    if name == "grown" and grown:
        return text("watered")
    if name.startswith("tool_"):
        return text(name)
    return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}


def answer(request):
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "faulty", "version": "1"},
        }
    if method == "tools/list":
        start = int(params.get("cursor") or 0)
        listed = tools()
        page = {"tools": listed[start:start + PAGE]}
        if start + PAGE < len(listed):
            page["nextCursor"] = str(start + PAGE)
        return page
    if method == "tools/call":
        return call(params.get("name"), params.get("arguments") or {})
    if method == "ping":
        return {}
    raise KeyError(method)


def serve(request):
    try:
        send({"jsonrpc": "2.0", "id": request["id"], "result": answer(request)})
    except KeyError as err:
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no method {err}"}})


if "--garbage-first" in sys.argv:
    garbage()
for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        continue
    if "id" in request and "method" in request:
        # Calls run side by side, as a real server's do: a hanging one blocks nothing.
        threading.Thread(target=serve, args=(request,), daemon=True).start()
if "--linger" in sys.argv:
    time.sleep(3600)
