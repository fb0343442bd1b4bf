"""The LangChain and LlamaIndex adapters (skipped when those packages are absent)."""

import pytest

from ruchedb import Index


@pytest.fixture()
def index():
    with Index.temporary() as index:
        index.upsert_chunks([
            {"id": "m1", "content": "The customer prefers to be contacted by email",
             "context_id": "cust-1", "importance": 8},
            {"id": "m2", "content": "Order NW-15699 shipped on Monday", "context_id": "cust-2"},
        ])
        index.upsert_rules([{"id": "refund", "condition": "the customer asks for a refund",
                             "action": "explain the refund policy"}])
        index.commit()
        yield index


def test_langchain_retriever(index):
    pytest.importorskip("langchain_core")
    from ruchedb.integrations.langchain import RucheRetriever

    retriever = RucheRetriever(index=index, search_kwargs={"context": "cust-1"})
    docs = retriever.invoke("how should we contact the customer?")
    assert [d.metadata["id"] for d in docs] == ["m1"]
    assert docs[0].page_content.startswith("The customer prefers")
    assert docs[0].metadata["relevance"] > 0.5
    assert RucheRetriever(index=index).invoke("who won the football game") == []
    rules = RucheRetriever(index=index, kind="rules").invoke("I want a refund")
    assert rules[0].page_content == "When the customer asks for a refund: explain the refund policy"


def test_llama_index_retriever(index):
    pytest.importorskip("llama_index.core")
    from ruchedb.integrations.llama_index import RucheRetriever

    nodes = RucheRetriever(index, top_k=1).retrieve("NW-15699")
    assert [n.node.id_ for n in nodes] == ["m2"]
    assert nodes[0].score > 1.0  # the code boost: the identifier matched verbatim
    assert RucheRetriever(index).retrieve("who won the football game") == []
