#!/usr/bin/env python3
"""An MCP server on stdio that serves a catalog of tools read from a JSON file (a list of
MCP tool definitions: name, optional title, description, inputSchema), 100 per page.
A call answers with one text block naming the tool and its arguments.

Usage: python3 scripts/mcp_catalog_server.py TOOLS.json

Plain Python (no package), for `scripts/gateway_bench.py`: the MetaTool and
StableToolBench tool sets as one MCP server behind `ruche gateway`.
"""

import json
import sys

PAGE = 100
tools = json.load(open(sys.argv[1]))


def answer(method, params):
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "catalog", "version": "1"},
        }
    if method == "tools/list":
        start = int(params.get("cursor") or 0)
        page = {"tools": tools[start:start + PAGE]}
        if start + PAGE < len(tools):
            page["nextCursor"] = str(start + PAGE)
        return page
    if method == "tools/call":
        text = f"{params.get('name')} called with {json.dumps(params.get('arguments') or {})}"
        return {"content": [{"type": "text", "text": text}], "isError": False}
    if method == "ping":
        return {}
    return None


for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        continue
    if "id" not in request or "method" not in request:
        continue
    result = answer(request["method"], request.get("params") or {})
    if result is None:
        message = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no such method"}}
    else:
        message = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
