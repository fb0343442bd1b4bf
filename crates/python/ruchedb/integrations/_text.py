"""What the adapters share: the text and metadata of a hit."""

from typing import Any, Mapping


def hit_text(hit: Mapping[str, Any]) -> str:
    """The text of a hit's document: a chunk's content, a rule as "when C, A", a scenario
    or a tool as "name: description"."""
    doc = hit["document"]
    if "content" in doc:
        return doc["content"]
    if "condition" in doc:
        return f"When {doc['condition']}: {doc['action']}"
    return f"{doc['name']}: {doc['description']}"


def hit_metadata(hit: Mapping[str, Any], kind: str) -> dict:
    """The hit's id, kind, score, relevance and document fields (text fields left out)."""
    doc = {k: v for k, v in hit["document"].items() if k not in ("content",)}
    return {
        "id": hit["id"],
        "kind": kind,
        "score": hit["score"],
        "relevance": hit["breakdown"].get("relevance"),
        "document": doc,
    }
