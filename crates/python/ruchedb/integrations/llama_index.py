"""A LlamaIndex retriever over a ruchedb index (`pip install llama-index-core`).

    from ruchedb.integrations.llama_index import RucheRetriever
    retriever = RucheRetriever(index, kind="chunks", top_k=5)
    nodes = retriever.retrieve("how should we contact the customer?")
"""

from typing import Any, List

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from .. import Index
from ._text import hit_metadata, hit_text


class RucheRetriever(BaseRetriever):
    """Searches `kind` (chunks by default) with the index's relevance gate; extra
    keyword arguments are `Index.search` settings (filters, `top_k`, ...)."""

    def __init__(self, index: Index, kind: str = "chunks", **search_kwargs: Any) -> None:
        super().__init__()
        self._index = index
        self._kind = kind
        self._search_kwargs = search_kwargs

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        response = self._index.search(query_bundle.query_str, self._kind, **self._search_kwargs)
        return [
            NodeWithScore(
                node=TextNode(id_=hit["id"], text=hit_text(hit),
                              metadata=hit_metadata(hit, response["kind"])),
                score=hit["score"],
            )
            for hit in response["hits"]
        ]
