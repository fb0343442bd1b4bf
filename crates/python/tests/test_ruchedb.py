"""The Python package against a real index: records, search with filters and
abstention, scenarios and tools, policies, errors, feedback, persistence, numpy."""

import threading

import pytest

import ruchedb
from ruchedb import Index, RucheError

RULES = [
    {"id": "refund", "condition": "the customer asks for a refund",
     "action": "explain the refund policy", "priority": 60,
     "patterns": ["I want my money back", "can I get reimbursed"]},
    {"id": "order-status", "condition": "the customer asks where their order is",
     "action": "look up the order and give its status",
     "patterns": ["where is my package?", "my order has not arrived"]},
    {"id": "vip", "condition": "a VIP customer asks for a refund",
     "action": "refund at once", "scope": "scenario", "scenario_id": "vip"},
    {"id": "acme-refund", "condition": "the customer asks for a refund",
     "action": "acme's policy", "tenant_id": "acme"},
]

CHUNKS = [
    {"id": "m1", "content": "The customer prefers to be contacted by email",
     "importance": 8, "context_id": "cust-1", "created_at": "2026-11-20T09:00:00Z"},
    {"id": "m2", "content": "Order NW-15699 was shipped with the carrier on Monday",
     "context_id": "cust-2"},
]


@pytest.fixture()
def index():
    with Index.temporary() as index:
        index.upsert_rules(RULES)
        index.upsert_chunks(CHUNKS)
        index.upsert_scenarios([
            {"id": "returns", "name": "Returns and refunds",
             "description": "The customer wants to send an item back or get their money back",
             "examples": ["I want to return my boots", "how do I get a refund?"],
             "steps": [{"id": "confirm", "description": "Confirm the return"}]},
        ])
        index.upsert_tools([
            {"id": "track", "name": "track_order",
             "description": "Look up where a shipped order is and when it arrives",
             "parameters": {"type": "object", "required": ["order_id"]},
             "examples": ["where is my package?"]},
            {"id": "refund-tool", "name": "issue_refund",
             "description": "Refund a payment to the customer",
             "examples": ["I want my money back"]},
        ])
        assert index.commit() == 9
        yield index


def ids(response):
    return [hit["id"] for hit in response["hits"]]


def test_rules_rank_with_scores_explain_and_scope(index):
    response = index.search_rules("I want my money back")
    assert ids(response)[0] == "refund"
    hit = response["hits"][0]
    assert hit["document"]["action"] == "explain the refund policy"
    assert hit["breakdown"]["relevance"] > 0.5
    assert hit["breakdown"]["gate"] == "relevant"
    assert response["selection"]["strategy"] == "adaptive_k"
    # Scenario rules apply only when their scenario is active.
    assert "vip" not in ids(index.search_rules("refund please", top_k=5))
    assert "vip" in ids(index.search_rules("refund please", scenario="vip", top_k=5))


def test_an_unrelated_message_gets_nothing_and_says_why(index):
    response = index.search_rules("who won the football game last night")
    assert response["hits"] == []
    assert "no candidate is relevant" in response["abstained"]
    # With the gate off and top_k, exactly k.
    assert len(index.search_rules("football", min_relevance=0, top_k=2)["hits"]) == 2


def test_tenants_never_see_each_other(index):
    assert ids(index.search_rules("refund", tenant="acme", top_k=5)) == ["acme-refund"]
    assert "acme-refund" not in ids(index.search_rules("refund", top_k=5))


def test_memory_filters_identifiers_and_importance(index):
    assert ids(index.search_memory("how should we contact them", context="cust-1")) == ["m1"]
    assert ids(index.search_memory("NW-15699"))[0] == "m2"
    assert index.search_memory("how should we contact them", context="nobody")["hits"] == []


def test_chunk_weights_are_taken(index):
    # Importance alone decides among what passed the gate.
    assert index.search_memory("")["hits"] == []
    response = index.search_memory("", browse=True, top_k=2, chunk_weights={
        "relevance_weight": 0.0, "importance_weight": 1.0, "recency_weight": 0.0})
    assert ids(response)[0] == "m1"
    with pytest.raises(RucheError):
        index.search_memory("x", chunk_weights={"gravity": 1.0})


def test_selection_and_fusion_settings_are_taken(index):
    response = index.search_rules("refund", strategy="fixed_k", strategy_params={"k": 1},
                                  min_relevance=0)
    assert response["selection"]["strategy"] == "fixed_k"
    assert len(response["hits"]) == 1
    response = index.search_rules("refund", fusion="rrf", top_k=2, min_relevance=0)
    assert "rrf" in response["fusion"]["method"]


def test_scenarios_and_tools_then_a_policy_chooses(index):
    assert ids(index.search_scenarios("these boots don't fit, I'll send them back")) == ["returns"]
    tools = index.search_tools("where is my package NW-15699?")
    assert ids(tools)[0] == "track"
    assert tools["hits"][0]["document"]["parameters"]["required"] == ["order_id"]
    choice = ruchedb.select_action(tools, "greedy")
    assert choice["chosen"]["action"] == "track_order"
    assert choice["chosen"]["payload"]["name"] == "track_order"
    # The same seed makes the same choice.
    seeded = [ruchedb.select_action(tools, "sampling", {"temperature": 2.0}, seed=7)["chosen"]
              for _ in range(3)]
    assert seeded[0] == seeded[1] == seeded[2]


def test_seed_002_free_form_candidates():
    result = ruchedb.select_action([
        {"action": "code", "code": "approach_a()", "confidence": 0.7},
        {"action": "code", "code": "approach_b()", "confidence": 0.9},
        {"action": "final", "code": "FINAL('x')", "confidence": 0.4},
    ], "greedy")
    assert result["chosen"]["code"] == "approach_b()"
    assert [c["code"] for c, _ in result["ranking"]] == ["approach_b()", "approach_a()", "FINAL('x')"]
    with pytest.raises(RucheError) as err:
        ruchedb.select_action([{"action": "a"}], "roulette")
    assert err.value.kind == "UnknownName"


def test_errors_are_exceptions_with_the_message_and_kind(index):
    with pytest.raises(RucheError) as err:
        index.upsert_chunks([{"id": "bad", "content": "x", "importance": 11}])
    assert "importance" in str(err.value)
    with pytest.raises(RucheError) as err:
        index.upsert_rules([{"id": "r", "condition": "c", "action": "a", "colour": 1}])
    assert "unknown field `colour`" in str(err.value)
    with pytest.raises(RucheError) as err:
        index.search_rules("x", min_relevance=2)
    assert err.value.kind == "InvalidInput"
    with pytest.raises(RucheError) as err:
        index.search("x", kind="memories")
    assert err.value.kind == "UnknownName"


def test_feedback_get_delete_and_stats(index):
    response = index.search_rules("I want my money back")
    window = index.feedback(response["query_id"], True)
    assert window["records"] >= 1
    assert index.get("rule", "refund")["action"] == "explain the refund policy"
    assert index.get("rule", "nope") is None
    index.delete("rule", "refund")
    index.commit()
    assert index.get("rule", "refund") is None
    stats = index.stats()
    assert (stats["rules"], stats["chunks"], stats["scenarios"], stats["tools"]) == (3, 2, 1, 2)


def test_an_index_persists_and_is_locked_while_open(tmp_path):
    path = str(tmp_path / "idx")
    with Index.create(path, embedder="none") as index:
        index.upsert_rules(RULES[:2])
        index.commit()
        with pytest.raises(RucheError) as err:
            Index.open(path)
        assert err.value.kind == "Locked"
    with Index.open(path) as index:
        assert ids(index.search_rules("refund"))[0] == "refund"
    with pytest.raises(RucheError) as err:
        Index.open(str(tmp_path / "missing"))
    assert err.value.kind == "IndexNotFound"


def test_numpy_embeddings_are_accepted():
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((20, 8)).astype(np.float32)
    with Index.temporary(embedder="none") as index:
        index.upsert_chunks([{"id": f"c{i}", "content": f"note {i}", "embedding": v}
                             for i, v in enumerate(vectors)])
        index.commit()
        response = index.search_memory("", embedding=vectors[3], top_k=1)
        assert ids(response) == ["c3"]


def test_searches_run_in_parallel_threads(index):
    # Blocking calls release the GIL: threads search side by side.
    results = []

    def worker():
        results.append(ids(index.search_rules("I want my money back"))[0])

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["refund"] * 8


def test_one_turn_gives_the_scenario_rules_memory_and_tools_within_a_budget(index):
    turn = index.turn("I want my money back", budget_tokens=200)
    assert turn["turn_id"].startswith("turn-")
    assert ids(turn["rules"])[0] == "refund"
    assert ids(turn["tools"])[0] == "refund-tool"
    assert turn["scenario"]["active"] == "returns"
    assert turn["scenario"]["activation"] == "detected"
    assert "Rules to follow:\n- the customer asks for a refund: explain the refund policy\n" in turn["prompt"]
    assert turn["budget"]["used"] <= 200
    assert turn["budget"]["tokenizer"] == "o200k_base"
    # Memory within the conversation the turn names.
    memory = index.turn("how should we contact them", context="cust-1")
    assert ids(memory["memory"]) == ["m1"]
    assert "Known from memory:\n- [2026-11-20] The customer prefers" in memory["prompt"]
    # Feedback on the turn credits its parts.
    assert index.feedback(turn["turn_id"], True)["records"] >= 1
    # Nothing relevant: an empty turn.
    empty = index.turn("who won the football game last night")
    assert empty["prompt"] == ""
    assert all(empty[part]["hits"] == [] for part in ("rules", "memory", "tools"))
    with pytest.raises(RucheError, match="scenario"):
        index.turn("hello", step="confirm")


def test_sync_keeps_the_index_in_line_with_a_folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        "# Install\n\n## Linux\n\nRun make install as root.\n")
    (docs / "bad.md").write_text("---\ntitle: [unclosed\n---\nBody\n")
    idx = Index.temporary()
    first = idx.sync(str(docs))
    assert (first["added"], first["failed"]) == (1, 1)
    failed = [f for f in first["files"] if f["change"] == "failed"][0]
    assert failed["path"].endswith("bad.md") and failed["line"] >= 2
    assert idx.sync(str(docs))["added"] == 0
    hits = idx.search_memory("make install on linux")["hits"]
    source = hits[0]["document"]["source"]
    assert source["headings"] == ["Install"]
    assert source["path"].endswith("docs/install.md")
    (docs / "install.md").unlink()
    assert idx.sync(str(docs))["removed"] == 1
    rules = tmp_path / "project" / ".cursor" / "rules"
    rules.mkdir(parents=True)
    (rules / "python.mdc").write_text(
        "---\ndescription: Python style\nglobs: \"*.py\"\n---\nFormat with black.\n")
    assert idx.sync(str(tmp_path / "project"))["added"] == 1
    plain = idx.turn("fix the bug")["rules"]["hits"]
    assert all(h["id"] != rules.as_posix() + "/python.mdc" for h in plain)
    turn = idx.turn("fix the bug", files=["app/main.py"])
    assert "Format with black." in turn["prompt"]
    idx.close()
