"""`ruche gateway` in front of five MCP servers nobody on this project wrote, driven by the
official MCP Python SDK's client as the host.

Usage: python real_servers.py RUCHE_BINARY NODE_SERVERS_DIR WORK_DIR

NODE_SERVERS_DIR holds `node_modules/@modelcontextprotocol/server-{filesystem,memory,
everything}` (npm); `mcp-server-time` and `mcp-server-git` (PyPI) are beside this
Python. For each server: find a tool by a task, call it through the gateway, check the
server's real answer. Run by the CLI's integration test
`gateway::real_servers_behind_the_gateway`. Prints "all checks passed" and exits 0, or
fails.
"""

import asyncio
import json
import os
import subprocess
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ruche, node_dir, work = sys.argv[1:4]
bin_dir = os.path.dirname(sys.executable)
project = os.path.join(work, "project")
repo = os.path.join(work, "repo")
memory_file = os.path.join(work, "memory", "graph.jsonl")


def node_server(name, *args):
    main = os.path.join(node_dir, "node_modules", "@modelcontextprotocol", f"server-{name}", "dist", "index.js")
    assert os.path.exists(main), main
    return {"command": "node", "args": [main, *args]}


def setup():
    os.makedirs(project, exist_ok=True)
    os.makedirs(os.path.dirname(memory_file), exist_ok=True)
    for name, text in [("README.md", "# The project\n"), ("notes.txt", "meeting at noon\n")]:
        with open(os.path.join(project, name), "w") as f:
            f.write(text)
    os.makedirs(repo, exist_ok=True)
    git = ["git", "-C", repo, "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "init", "-q", repo], check=True)
    with open(os.path.join(repo, "a.txt"), "w") as f:
        f.write("a\n")
    subprocess.run(git + ["add", "a.txt"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "first commit of the test repository"], check=True)
    servers = {
        "filesystem": node_server("filesystem", project),
        "memory": {**node_server("memory"), "env": {"MEMORY_FILE_PATH": memory_file}},
        "everything": node_server("everything"),
        "time": {"command": os.path.join(bin_dir, "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": os.path.join(bin_dir, "mcp-server-git"), "args": ["--repository", repo]},
    }
    config = os.path.join(work, "servers.json")
    with open(config, "w") as f:
        json.dump({"mcpServers": servers}, f)
    return config


def dump(model):
    """A model of the SDK as the wire's JSON (camelCase), across SDK versions."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def find(session, task):
    result = dump(await session.call_tool("find_tools", {"task": task}))
    assert not result.get("isError"), result
    answer = result["structuredContent"]
    return [tool["name"] for tool in answer["tools"]], [tool["name"] for tool in answer.get("nearest", [])], answer


async def call(session, name, arguments):
    result = dump(await session.call_tool("call_tool", {"name": name, "arguments": arguments}))
    assert not result.get("isError"), f"{name}: {result}"
    return "\n".join(block.get("text", "") for block in result["content"])


async def expect_error(session, name, arguments, naming):
    """A call through the gateway that must fail with a JSON-RPC error naming `naming`."""
    try:
        result = dump(await session.call_tool("call_tool", {"name": name, "arguments": arguments}))
    except Exception as err:  # the SDK raises a JSON-RPC error
        assert naming in str(err), err
        return
    raise AssertionError(f"{name}: no error: {result}")


def pids_running(script):
    """The processes whose command line holds `script` (from /proc)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if script.encode() in f.read():
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def kill_processes_running(script):
    pids = pids_running(script)
    for pid in pids:
        os.kill(pid, 9)
    return pids


async def main():
    config = setup()
    host = StdioServerParameters(
        command=ruche,
        args=["gateway", "--config", config, "--index", os.path.join(work, "index"), "--call-timeout", "5"],
        env={**os.environ, "RUCHE_LOG": "warn"},
    )
    async with stdio_client(host) as (read, write):
        async with ClientSession(read, write) as session:
            init = dump(await session.initialize())
            assert init["serverInfo"]["name"] == "ruche-gateway", init
            listed = [tool["name"] for tool in map(dump, (await session.list_tools()).tools)]
            assert listed == ["find_tools", "call_tool"], listed

            # filesystem (npm): the issue's own task.
            tools, _, answer = await find(session, "list the files in the project folder")
            assert "filesystem__list_directory" in tools[:3], answer
            schema = next(t for t in answer["tools"] if t["name"] == "filesystem__list_directory")["inputSchema"]
            assert "path" in schema["properties"], schema
            listing = await call(session, "filesystem__list_directory", {"path": project})
            assert "README.md" in listing and "notes.txt" in listing, listing

            # time (PyPI)
            tools, _, answer = await find(session, "what time is it now in Tokyo")
            assert "time__get_current_time" in tools[:3], answer
            now = await call(session, "time__get_current_time", {"timezone": "Asia/Tokyo"})
            assert "Asia/Tokyo" in now, now
            # The server's own error, through the gateway: a result with isError, or its
            # protocol error naming the server.
            try:
                bad = dump(await session.call_tool(
                    "call_tool", {"name": "time__get_current_time", "arguments": {"timezone": "Mars/Olympus"}}))
                assert bad.get("isError") is True, bad
            except Exception as err:  # the SDK raises for a JSON-RPC error
                assert "time" in str(err), err

            # git (PyPI), on a temporary repository.
            tools, _, answer = await find(session, "show the commit history of the repository")
            assert "git__git_log" in tools[:3], answer
            log = await call(session, "git__git_log", {"repo_path": repo})
            assert "first commit of the test repository" in log, log

            # memory (npm): its env (MEMORY_FILE_PATH) goes to it.
            # (With the default static embedder, "remember that Alice works at Acme" finds
            # nothing: the server's descriptions speak of a knowledge graph.)
            tools, _, answer = await find(session, "record a new person in the knowledge graph")
            assert "memory__create_entities" in tools[:3], answer
            await call(session, "memory__create_entities", {
                "entities": [{"name": "Alice", "entityType": "person", "observations": ["works at Acme"]}],
            })
            found = await call(session, "memory__search_nodes", {"query": "Alice"})
            assert "Acme" in found, found
            assert os.path.exists(memory_file), "the memory server did not get its env"

            # everything (npm)
            tools, nearest, answer = await find(session, "what did I tell you about Bob")
            assert tools == [] and len(nearest) == 3, answer
            tools, _, answer = await find(session, "add two numbers")
            assert "everything__get-sum" in tools[:3], answer
            total = await call(session, "everything__get-sum", {"a": 2, "b": 3})
            assert "5" in total, total
            echoed = await call(session, "everything__echo", {"message": "through the gateway"})
            assert "through the gateway" in echoed, echoed

            # A real server that does not answer within the call limit: an error naming
            # it, and the server goes on serving.
            long_op = "everything__trigger-long-running-operation"
            await expect_error(session, long_op, {"duration": 8, "steps": 2}, "within 5 s")
            echoed = await call(session, "everything__echo", {"message": "still there"})
            assert "still there" in echoed, echoed

            # A real server killed in the middle of a call: an error naming it, then it is
            # restarted and answers again.
            everything = node_server("everything")["args"][0]
            call_in_flight = asyncio.create_task(
                expect_error(session, long_op, {"duration": 4, "steps": 2}, "`everything`"))
            await asyncio.sleep(1)
            killed = kill_processes_running(everything)
            assert killed, "no server-everything process found"
            await call_in_flight
            for _ in range(100):
                try:
                    echoed = await call(session, "everything__echo", {"message": "restarted"})
                    break
                except Exception:
                    await asyncio.sleep(0.2)
            assert "restarted" in echoed, echoed
            assert not set(killed) & set(pids_running(everything)), "the same process answered"

    written = sorted(os.listdir(work))
    assert written == ["index", "memory", "project", "repo", "servers.json"], written
    print("all checks passed")


asyncio.run(main())
