"""`ruche mcp` driven by the official MCP Python SDK's client (PyPI `mcp`).

Usage: python mcp_sdk_client.py RUCHE_BINARY INDEX_DIR

Starts the server with `stdio_client`, initializes a `ClientSession`, lists the tools,
searches, writes (a rule, a memory) and reads the writes back, and checks that invalid
arguments are a protocol error (-32602). Run by the CLI's integration test
`mcp::the_official_mcp_python_sdk_client_lists_and_calls_tools` when `RUCHE_MCP_PYTHON`
names a Python that has `mcp`. Prints "all checks passed" and exits 0, or fails.
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(model):
    """A model of the SDK as the wire's JSON (camelCase), across SDK versions."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def call(session, name, arguments):
    result = dump(await session.call_tool(name, arguments))
    assert not result.get("isError"), f"{name}: {result}"
    return result["structuredContent"]


async def main(ruche, index):
    server = StdioServerParameters(command=ruche, args=["mcp", index])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = dump(await session.initialize())
            assert init["serverInfo"]["name"] == "ruche", init

            tools = {tool["name"]: tool for tool in map(dump, (await session.list_tools()).tools)}
            assert set(tools) == {
                "get_context", "search_rules", "search_memory", "find_scenario", "find_tools", "remember",
                "add_rule", "disable_rule", "forget", "feedback", "stats",
            }, sorted(tools)
            assert tools["search_rules"]["annotations"]["readOnlyHint"] is True
            assert tools["add_rule"]["annotations"]["destructiveHint"] is True
            assert tools["search_rules"]["inputSchema"]["properties"]["top_k"]["maximum"] == 1_000_000

            found = await call(session, "search_rules", {"message": "I want my money back"})
            assert found["results"][0]["id"] == "refund", found
            assert found["query_id"], found

            await call(session, "add_rule", {
                "id": "greet", "condition": "the conversation starts",
                "action": "greet the customer", "patterns": ["hello there"],
            })
            found = await call(session, "search_rules", {"message": "hello there"})
            assert [r["id"] for r in found["results"]] == ["greet"], found

            remembered = await call(session, "remember", {
                "content": "The customer prefers to be called in the morning",
                "context": "cust-1", "importance": 8,
            })
            found = await call(session, "search_memory", {
                "query": "when should we call the customer?", "context": "cust-1",
            })
            assert [r["id"] for r in found["results"]] == [remembered["remembered"]], found

            stats = await call(session, "stats", {})
            assert (stats["rules"], stats["chunks"]) == (3, 1), stats

            # Out of range: a protocol error (invalid params) naming the argument, raised
            # by the SDK as an exception with the JSON-RPC error.
            try:
                await session.call_tool("search_rules", {"message": "refund", "top_k": 0})
            except Exception as err:  # the SDK's McpError / MCPError
                error = getattr(err, "error", None)
                assert error is not None and error.code == -32602, repr(err)
                assert "top_k" in error.message, error.message
            else:
                raise AssertionError("top_k 0 was accepted")
    print("all checks passed")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
