"""Optional semantic recall: an embeddings endpoint, a background worker that embeds stored messages,
and a per-process vector index whose similarity ranking is fused with the keyword ranking.

Off unless `EMBEDDINGS__PROVIDER` is set. Every failure here degrades recall to keyword ranking with a
logged warning; nothing in this package can fail a turn or delay a reply.
"""
