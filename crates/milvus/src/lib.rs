//! Milvus as a ruchedb retriever (in progress).
