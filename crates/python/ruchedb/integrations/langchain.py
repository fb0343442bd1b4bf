"""A LangChain retriever over a ruchedb index (`pip install langchain-core`).

    from ruchedb.integrations.langchain import RucheRetriever
    retriever = RucheRetriever(index=index, kind="chunks", search_kwargs={"context": "cust-1"})
    docs = retriever.invoke("how should we contact the customer?")
"""

from typing import Any, Dict, List

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from .. import Index
from ._text import hit_metadata, hit_text


class RucheRetriever(BaseRetriever):
    """Searches `kind` (chunks by default) with the index's relevance gate: a query
    nothing is relevant to gives no document."""

    index: Any
    kind: str = "chunks"
    search_kwargs: Dict[str, Any] = {}

    model_config = {"arbitrary_types_allowed": True}

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> List[Document]:
        index: Index = self.index
        response = index.search(query, self.kind, **self.search_kwargs)
        return [
            Document(page_content=hit_text(hit), metadata=hit_metadata(hit, response["kind"]))
            for hit in response["hits"]
        ]
