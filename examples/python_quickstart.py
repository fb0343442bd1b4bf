"""The Python quickstart of the README, run by CI: rules, memory, scenarios and tools in
one index, searched, and a tool chosen by a policy.

    pip install ./crates/python
    python examples/python_quickstart.py
"""

import ruchedb

with ruchedb.Index.temporary() as index:
    index.upsert_rules([
        {"id": "refund", "condition": "the customer asks for a refund",
         "action": "check the order, then refund", "priority": 60,
         "patterns": ["I want my money back", "can I get reimbursed"]},
        {"id": "confirm", "condition": "the customer confirms the return",
         "action": "send the return label", "scope": "step",
         "scenario_id": "returns", "step_id": "confirm"},
    ])
    index.upsert_chunks([
        {"id": "m1", "content": "Prefers email over phone calls", "importance": 8,
         "created_at": "2026-11-20T09:00:00Z", "context_id": "customer-42"},
    ])
    index.upsert_scenarios([
        {"id": "returns", "name": "Returns and refunds",
         "description": "The customer wants to send an item back",
         "examples": ["I want to return my boots", "how do I get a refund?"],
         "steps": [{"id": "confirm", "description": "Confirm and send the label"}]},
    ])
    index.upsert_tools([
        {"id": "track", "name": "track_order",
         "description": "Look up where a shipped order is",
         "parameters": {"type": "object", "required": ["order_id"]},
         "examples": ["where is my package?"]},
    ])
    index.commit()

    rules = index.search_rules("I want my money back")
    hit = rules["hits"][0]
    print(hit["id"], round(hit["score"], 3), hit["breakdown"]["gate"])
    assert hit["id"] == "refund"

    memory = index.search_memory("how should I contact them", context="customer-42",
                                 now="2026-11-21T12:00:00Z")
    assert memory["hits"][0]["id"] == "m1"

    nothing = index.search_rules("what is the weather tomorrow")
    print("no rule:", nothing["abstained"])
    assert nothing["hits"] == []

    scenario = index.search_scenarios("these boots don't fit, I'll send them back")
    assert scenario["hits"][0]["id"] == "returns"

    tools = index.search_tools("where is my package NW-15699?")
    choice = ruchedb.select_action(tools, "greedy")
    print("tool:", choice["chosen"]["action"], choice["chosen"]["payload"]["parameters"])
    assert choice["chosen"]["action"] == "track_order"
