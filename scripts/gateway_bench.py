#!/usr/bin/env python3
"""`ruche gateway` in front of catalogs of hundreds and thousands of tools: the MetaTool
(199) and StableToolBench (2,479) tool sets served as MCP tools by one server
(`scripts/mcp_catalog_server.py`), the gateway driven by the official MCP Python SDK.

Usage (a Python with PyPI's `mcp`, such as .ci/run's venv):
    target/python-venv/bin/python scripts/gateway_bench.py [--ruche target/release/ruche]
        [--eval ../shared/eval] [--sets metatool,stb] [--calls 300] [--json]

For each set it reports:
- the same short lists: `find_tools` through the gateway against `ruche search --kind
  tools` on the gateway's own index (the same catalog), query by query, and the accuracy
  of each, scored as `scripts/quality.py` scores the set (which indexes the set's tools
  with their example messages, which MCP tools do not carry: its figure is shown beside);
- the context saved: `o200k_base` tokens of every tool definition as the server lists it
  against the tokens of a `find_tools` answer (median and p99), from the gateway's log;
- `find_tools` latency p50/p99 as the host sees it (SDK to SDK, stdio);
- what `call_tool` adds to a direct call of the same server: p50/p99 of each, over
  `--calls` calls interleaved, and the difference of the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "mcp_catalog_server.py")


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def mcp_tools(tools):
    """The set's tools as MCP tool definitions, and each one's name → the set's id.

    MCP names are letters, digits, `_` and `-`: an id that is not (StableToolBench's
    `Tool::API name`) is rewritten, the original name kept as the tool's title."""
    listed, ids, taken = [], {}, set()
    for tool in tools:
        name = re.sub(r"[^A-Za-z0-9_-]+", "_", tool["id"]).strip("_")[:60] or "tool"
        base, n = name, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        entry = {"name": name, "description": tool["description"],
                 "inputSchema": tool.get("parameters") or {"type": "object", "properties": {}}}
        if name != tool["name"]:
            entry["title"] = tool["name"]
        listed.append(entry)
        ids[f"catalog__{name}"] = tool["id"]
    return listed, ids


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def log_events(path):
    events = []
    for line in open(path, errors="replace"):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        fields = event.get("fields", event)
        events.append(fields)
    return events


async def measure(ruche, tools_file, queries, top_k, work, calls):
    config = os.path.join(work, "servers.json")
    with open(config, "w") as f:
        json.dump({"mcpServers": {"catalog": {"command": sys.executable, "args": [SERVER, tools_file]}}}, f)
    index = os.path.join(work, "index")
    log_path = os.path.join(work, "gateway.log")
    gateway = StdioServerParameters(
        command=ruche, args=["gateway", "--config", config, "--index", index, "--start-timeout", "300"],
        env={**os.environ, "RUCHE_LOG": "info", "RUCHE_LOG_FORMAT": "json"})
    direct = StdioServerParameters(command=sys.executable, args=[SERVER, tools_file])
    found, latency = {}, []
    with open(log_path, "w") as log:
        async with stdio_client(gateway, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            started = time.perf_counter()
            await session.call_tool("find_tools", {"task": "warm up"})
            first = time.perf_counter() - started
            for query in queries:
                arguments = {"task": query["text"]}
                if top_k:
                    arguments["top_k"] = top_k
                started = time.perf_counter()
                result = await session.call_tool("find_tools", arguments)
                latency.append(time.perf_counter() - started)
                found[query["id"]] = [tool["name"] for tool in result.structured_content["tools"]]
            # call_tool against a direct call of the same server, interleaved.
            name = json.load(open(tools_file))[0]["name"]
            through, straight = [], []
            async with stdio_client(direct) as (dread, dwrite), ClientSession(dread, dwrite) as dsession:
                await dsession.initialize()
                for _ in range(calls):
                    started = time.perf_counter()
                    await session.call_tool("call_tool", {"name": f"catalog__{name}", "arguments": {"q": "x"}})
                    through.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    await dsession.call_tool(name, {"q": "x"})
                    straight.append(time.perf_counter() - started)
    events = log_events(log_path)
    definition = sum(e.get("definition_tokens", 0) for e in events if e.get("message") == "indexed")
    answers = [e["answer_tokens"] for e in events if e.get("message") == "find_tools"][1:]
    inside = [e["elapsed_us"] / 1000 for e in events if e.get("message") == "find_tools"][1:]
    return found, {
        "first find_tools, s (start, list, index)": first,
        "definition tokens (all tools)": definition,
        "find_tools answer tokens p50": pct(answers, 50),
        "find_tools answer tokens p99": pct(answers, 99),
        "context saved (p50 answer)": 1 - pct(answers, 50) / definition,
        "find_tools ms p50 (host)": 1000 * pct(latency, 50),
        "find_tools ms p99 (host)": 1000 * pct(latency, 99),
        "find_tools ms p50 (in the gateway)": pct(inside, 50),
        "find_tools ms p99 (in the gateway)": pct(inside, 99),
        "call_tool ms p50": 1000 * pct(through, 50),
        "call_tool ms p99": 1000 * pct(through, 99),
        "direct call ms p50": 1000 * pct(straight, 50),
        "direct call ms p99": 1000 * pct(straight, 99),
        "call_tool overhead ms p50": 1000 * (pct(through, 50) - pct(straight, 50)),
    }


def ruche_search(ruche, index, queries, work, top_k):
    path = os.path.join(work, "queries.jsonl")
    with open(path, "w") as f:
        for query in queries:
            row = {"id": query["id"], "text": query["text"], "kind": "tools"}
            if top_k:
                row["top_k"] = top_k
            f.write(json.dumps(row) + "\n")
    out = subprocess.run([ruche, "search", index, "--tenant", "mcp-gateway", "--batch", path, "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"search failed: {out.stderr}")
    return {o["id"]: [h["id"] for h in o["hits"]] for o in map(json.loads, out.stdout.splitlines())}


def metatool_score(first, gold):
    need = [(q, g) for q, g in gold if g != "none"]
    none = [q for q, g in gold if g == "none"]
    right = sum(first.get(q) == g for q, g in need)
    refused = sum(first.get(q) is None for q in none)
    return (right + refused) / len(gold)


def recall(returned, gold):
    return sum(len(g & set(returned.get(q, []))) / len(g) for q, g in gold.items()) / len(gold)


def run_set(name, args):
    d = os.path.join(args.eval, {"metatool": "metatool", "stb": "stb"}[name])
    tools = read_jsonl(os.path.join(d, "tools.jsonl"))
    listed, ids = mcp_tools(tools)
    queries = read_jsonl(os.path.join(d, "queries.dev.jsonl"))
    report = {"tools": len(listed), "queries": len(queries)}
    runs = [("default", None)] + ([("top_k 5", 5)] if name == "stb" else [])
    for label, top_k in runs:
        with tempfile.TemporaryDirectory() as work:
            tools_file = os.path.join(work, "tools.json")
            json.dump(listed, open(tools_file, "w"))
            found, numbers = asyncio.run(measure(args.ruche, tools_file, queries, top_k, work, args.calls))
            searched = ruche_search(args.ruche, os.path.join(work, "index"), queries, work, top_k)
        same = sum(found[q["id"]] == searched.get(q["id"]) for q in queries) / len(queries)
        to_ids = lambda lists: {q: [ids[n] for n in names] for q, names in lists.items()}
        if name == "metatool":
            gold = [line.split("\t") for line in open(f"{d}/gold.dev.tsv").read().splitlines()]
            first = lambda lists: {q: (v[0] if v else None) for q, v in to_ids(lists).items()}
            accuracy = {"find_tools accuracy with abstention": metatool_score(first(found), gold),
                        "ruche search accuracy with abstention": metatool_score(first(searched), gold)}
        else:
            gold = {}
            for line in open(f"{d}/gold.dev.tsv").read().splitlines():
                q, t = line.split("\t")[:2]
                gold.setdefault(q, set()).add(t)
            accuracy = {"find_tools recall": recall(to_ids(found), gold),
                        "ruche search recall": recall(to_ids(searched), gold),
                        "tools returned": sum(len(v) for v in found.values()) / len(found)}
        report[label] = {"same short lists": same, **accuracy, **numbers}
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ruche", default="target/release/ruche")
    parser.add_argument("--eval", default="../shared/eval")
    parser.add_argument("--sets", default="metatool,stb")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.ruche = os.path.abspath(args.ruche)
    results = {name: run_set(name, args) for name in args.sets.split(",")}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, report in results.items():
        print(f"## {name}: {report['tools']} tools, {report['queries']} queries")
        for label in ("default", "top_k 5"):
            if label in report:
                print(f"### {label}")
                for key, value in report[label].items():
                    print(f"- {key}: {value:.4g}" if isinstance(value, float) else f"- {key}: {value}")


if __name__ == "__main__":
    main()
