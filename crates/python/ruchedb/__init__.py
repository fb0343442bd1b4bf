"""ruchedb: an embedded hybrid search engine for AI agents.

An agent keeps its rules ("when CONDITION, do ACTION"), its memory chunks, its scenarios
and its tools in a local index directory. Each search runs BM25 and vector search side by
side, fuses them, keeps only what is relevant (a calibrated relevance gate: an unrelated
message gets no result), orders what passed by priority, importance and recency, and
decides how many results to return. Action-selection policies then choose one action.

    import ruchedb

    with ruchedb.Index.create("agent-index") as index:
        index.upsert_rules([{"id": "refund", "condition": "the customer asks for a refund",
                             "action": "explain the refund policy",
                             "patterns": ["I want my money back"]}])
        index.commit()
        hits = index.search_rules("I want my money back")["hits"]
        assert hits[0]["id"] == "refund"

Records are dicts in the JSONL format of the `ruche` command (unknown fields are an
error); embeddings may be lists or numpy float32 arrays. Every call that touches the
index releases the GIL. Errors are `RucheError(message, kind)`.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Optional, Sequence

from ._ruchedb import Engine as _Engine
from ._ruchedb import RucheError, __version__
from ._ruchedb import candidate_of_hit as _candidate_of_hit
from ._ruchedb import select_action as _select_action

__all__ = ["Index", "RucheError", "select_action", "candidates", "__version__"]

RucheError.kind = property(  # type: ignore[attr-defined]
    lambda self: self.args[1] if len(self.args) > 1 else None,
    doc="The kind of the error, as in ruchedb's ErrorKind (`InvalidInput`, `NotFound`, ...).",
)

_KINDS = {"rule": "rule", "rules": "rule", "chunk": "chunk", "chunks": "chunk",
          "memory": "chunk", "scenario": "scenario", "scenarios": "scenario",
          "tool": "tool", "tools": "tool"}


def _kind(kind: str) -> str:
    try:
        return _KINDS[kind]
    except KeyError:
        raise RucheError(f"unknown kind {kind!r} (rules, chunks, scenarios, tools)",
                         "UnknownName") from None


def _vector(value: Any) -> Any:
    """A list of floats from a list or a numpy array (float32 or any float)."""
    if value is None:
        return None
    if hasattr(value, "tolist"):
        value = value.tolist()
    return [float(x) for x in value]


def _record(record: Mapping[str, Any]) -> str:
    record = dict(record)
    for key in ("embedding",):
        if record.get(key) is not None:
            record[key] = _vector(record[key])
    for key in ("pattern_embeddings", "example_embeddings"):
        if record.get(key) is not None:
            record[key] = [_vector(v) for v in record[key]]
    return json.dumps(record)


class Index:
    """An open index. Use `Index.create`, `Index.open` or `Index.temporary`."""

    def __init__(self, engine: _Engine) -> None:
        self._engine = engine

    @classmethod
    def create(cls, path: str, embedder: Optional[str] = None,
               config: Optional[str] = None) -> "Index":
        """Creates an index in `path` (missing or empty). `embedder`: for every kind,
        "minilm" (all-MiniLM-L6-v2, compiled in), "static" (the compiled-in static model),
        "none" (BM25 only, or your own vectors), "static:DIR", "bert:DIR"; or per kind,
        "chunks=minilm,tools=static". Default: minilm for rules, scenarios and tools,
        static for chunks. `config`: TOML text of the engine's configuration."""
        return cls(_Engine.create(str(path), embedder, config))

    @classmethod
    def open(cls, path: str, wait: float = 0.0, config: Optional[str] = None) -> "Index":
        """Opens the index in `path`, waiting up to `wait` seconds for another process."""
        return cls(_Engine.open(str(path), wait, config))

    @classmethod
    def temporary(cls, embedder: Optional[str] = None,
                  config: Optional[str] = None) -> "Index":
        """An index in a temporary directory, removed when closed."""
        return cls(_Engine.temporary(embedder, config))

    # Writes ---------------------------------------------------------------------------

    def upsert(self, kind: str, records: Iterable[Mapping[str, Any]]) -> None:
        """Buffers records of `kind` for the next commit; nothing is buffered when one
        is invalid."""
        self._engine.upsert(_kind(kind), [_record(r) for r in records])

    def upsert_rules(self, rules: Iterable[Mapping[str, Any]]) -> None:
        """Rules: `id`, `condition`, `action`; optional `priority`, `scope`,
        `scenario_id`, `step_id`, `tenant_id`, `agent_id`, `enabled`, `tags`,
        `patterns`, `embedding`, `pattern_embeddings`."""
        self.upsert("rule", rules)

    def upsert_chunks(self, chunks: Iterable[Mapping[str, Any]]) -> None:
        """Chunks: `id`, `content`; optional `importance` (1-10), `created_at`,
        `expires_at`, `tenant_id`, `agent_id`, `context_id`, `memory_id`, `metadata`,
        `embedding`."""
        self.upsert("chunk", chunks)

    def upsert_scenarios(self, scenarios: Iterable[Mapping[str, Any]]) -> None:
        """Scenarios: `id`, `name`, `description`; optional `examples`, `steps`
        (`[{"id", "description"}]`), `tenant_id`, `agent_id`, `enabled`, `tags`."""
        self.upsert("scenario", scenarios)

    def upsert_tools(self, tools: Iterable[Mapping[str, Any]]) -> None:
        """Tools: `id`, `name`, `description`; optional `parameters` (a JSON schema),
        `examples`, `tenant_id`, `agent_id`, `enabled`, `tags`."""
        self.upsert("tool", tools)

    def delete(self, kind: str, id: str, tenant: Optional[str] = None) -> None:
        """Buffers the deletion of one document."""
        self._engine.delete(_kind(kind), id, tenant)

    def commit(self) -> int:
        """Makes the buffered changes durable and searchable; returns how many."""
        return self._engine.commit()

    def sync(self, *paths: str, tenant: Optional[str] = None,
             agent: Optional[str] = None, chunk_tokens: Optional[int] = None,
             dry_run: bool = False) -> dict:
        """Brings the index in line with the Markdown and text files under `paths`
        (files or folders, walked as ripgrep walks them): new files are indexed, changed
        ones re-indexed, deleted ones removed, unchanged ones not read; one commit. Each
        chunk's `source` names its file, lines and heading path. Returns the report:
        `added`, `changed`, `removed`, `unchanged`, `empty`, `failed` (counts) and
        `files` (each changed or failed file, with `path`, `change`, `line`, `error`)."""
        return json.loads(self._engine.sync([str(p) for p in paths], tenant, agent,
                                            chunk_tokens, dry_run))

    # Reads ----------------------------------------------------------------------------

    def search(self, text: str = "", kind: str = "rules", *,
               tenant: Optional[str] = None, agent: Optional[str] = None,
               scenario: Optional[str] = None, step: Optional[str] = None,
               context: Optional[str] = None, tags: Sequence[str] = (),
               filters: Optional[Mapping[str, Any]] = None, embedding: Any = None,
               top_k: Optional[int] = None, max_k: Optional[int] = None,
               min_k: Optional[int] = None, max_candidates: Optional[int] = None,
               min_relevance: Optional[float] = None, strategy: Optional[str] = None,
               strategy_params: Optional[Mapping[str, Any]] = None,
               fusion: Optional[str] = None,
               fusion_params: Optional[Mapping[str, Any]] = None,
               adaptive: Optional[bool] = None,
               chunk_weights: Optional[Mapping[str, float]] = None,
               now: Any = None, browse: bool = False) -> dict:
        """Searches documents of `kind`. Returns a dict: `query_id`, `hits` (each with
        `id`, `score`, `breakdown` and `document`), `abstained` (why nothing passed the
        relevance gate, or None), `selection`, `fusion`, `gate`, `timings`. An empty
        `text` without an `embedding` gets no hits, unless `browse=True` (chunks: every
        one the filters admit, by importance and recency)."""
        request: dict = {"text": text, "kind": _kind(kind), "browse": browse}
        for key, value in (("tenant", tenant), ("agent", agent), ("scenario", scenario),
                           ("step", step), ("context", context), ("top_k", top_k),
                           ("max_k", max_k), ("min_k", min_k),
                           ("max_candidates", max_candidates),
                           ("min_relevance", min_relevance), ("strategy", strategy),
                           ("fusion", fusion), ("adaptive", adaptive), ("now", now)):
            if value is not None:
                request[key] = value
        if tags:
            request["tags"] = list(tags)
        if filters:
            request["filters"] = dict(filters)
        if embedding is not None:
            request["embedding"] = _vector(embedding)
        if strategy_params:
            request["strategy_params"] = dict(strategy_params)
        if fusion_params:
            request["fusion_params"] = dict(fusion_params)
        if chunk_weights:
            request["chunk_weights"] = dict(chunk_weights)
        response = json.loads(self._engine.search(json.dumps(request)))
        response["kind"] = request["kind"]
        return response

    def search_rules(self, text: str, **kwargs: Any) -> dict:
        """The rules that apply to a message (pass `scenario`/`step` when active)."""
        return self.search(text, "rule", **kwargs)

    def search_memory(self, text: str = "", **kwargs: Any) -> dict:
        """Memory chunks relevant to a question (`browse=True` with no text: every chunk
        the filters admit, by importance and recency)."""
        return self.search(text, "chunk", **kwargs)

    def search_scenarios(self, text: str, **kwargs: Any) -> dict:
        """The scenario a message should activate (usually one, none when none fits)."""
        return self.search(text, "scenario", **kwargs)

    def search_tools(self, text: str, **kwargs: Any) -> dict:
        """The tools that fit a message, for a policy to choose among."""
        return self.search(text, "tool", **kwargs)

    def turn(self, text: str, *, context: Optional[str] = None,
             scenario: Optional[str] = None, step: Optional[str] = None,
             tenant: Optional[str] = None, agent: Optional[str] = None,
             budget_tokens: Optional[int] = None, embedding: Any = None,
             now: Any = None, files: Sequence[str] = (),
             rules: Sequence[str] = ()) -> dict:
        """One turn of a conversation: the scenario, the rules, the memory and the tools
        a message needs, in one call. `files`: the files the agent is working on (the
        rules whose globs match them apply); `rules`: rules to apply by id or name.
        Returns a dict: `turn_id` (for `feedback`),
        `scenario` (`active`, `activation`, `search`...), `rules`, `memory` and `tools`
        (each a search response with its `hits`), `budget` (tokens used, what was cut),
        `timings` and `prompt`: the rendered block, within `budget_tokens`."""
        request: dict = {"text": text}
        for key, value in (("context", context), ("scenario", scenario), ("step", step),
                           ("tenant", tenant), ("agent", agent),
                           ("budget_tokens", budget_tokens), ("now", now)):
            if value is not None:
                request[key] = value
        if embedding is not None:
            request["embedding"] = _vector(embedding)
        if files:
            request["files"] = list(files)
        if rules:
            request["rules"] = list(rules)
        return json.loads(self._engine.turn(json.dumps(request)))

    def get(self, kind: str, id: str, tenant: Optional[str] = None) -> Optional[dict]:
        """One document by id, as a record dict, or None."""
        found = self._engine.get(_kind(kind), id, tenant)
        return None if found is None else json.loads(found)

    def feedback(self, query_id: str, useful: bool) -> dict:
        """Records whether search `query_id` (or turn `turn_id`: each of its parts) was
        useful (once per query)."""
        return json.loads(self._engine.feedback(query_id, useful))

    def stats(self) -> dict:
        """Counts and state of the index."""
        return json.loads(self._engine.stats())

    def close(self) -> None:
        """Closes the index; buffered, uncommitted changes are dropped."""
        self._engine.close()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def candidates(response: Mapping[str, Any]) -> list:
    """The policy candidates of a search response's hits (seed 002's dicts: `id`,
    `action` (a tool's name, else the kind), `payload` (the document), `score`)."""
    kind = response.get("kind", "rule")
    return [json.loads(_candidate_of_hit(h["id"], kind, json.dumps(h["document"]), h["score"]))
            for h in response["hits"]]


def select_action(candidates_or_response: Any, policy: str = "greedy",
                  params: Optional[Mapping[str, Any]] = None, seed: int = 0) -> dict:
    """Lets a policy ("greedy", "sampling", "beam_search", "mcts") choose one candidate.

    Takes seed 002's candidate dicts (`{"action": ..., "confidence": ...}`, other fields
    kept in the payload) or a search response. Returns `{"chosen": candidate or None,
    "ranking": [(candidate, score), ...]}`; the same seed makes the same choice."""
    if isinstance(candidates_or_response, Mapping) and "hits" in candidates_or_response:
        items = candidates(candidates_or_response)
    else:
        items = list(candidates_or_response)
    result = json.loads(_select_action(json.dumps(items), policy, json.dumps(dict(params or {})), seed))
    chosen = None if result["chosen"] is None else items[result["chosen"]]
    return {"chosen": chosen, "ranking": [(items[i], s) for i, s in result["ranking"]]}
