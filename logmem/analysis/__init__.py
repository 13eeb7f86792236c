"""Analysis of one launch: the attribution of every drop, KV sizing, findings, failures."""
