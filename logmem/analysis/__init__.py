"""Analysis of one launch: the ledger (attribution, captures, sizing), its findings, and the
failures stage (outcome, fixes, verdict), all as typed facts; the words are logmem.report's."""
