"""Retriever adapters for agent frameworks (optional extras):

- `ruchedb.integrations.langchain.RucheRetriever` (`pip install ruchedb[langchain]`)
- `ruchedb.integrations.llama_index.RucheRetriever` (`pip install ruchedb[llama-index]`)
"""
