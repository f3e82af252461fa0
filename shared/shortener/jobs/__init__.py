"""Bulk jobs: submission, the CSV reader, packing rows into messages, splitting uploaded files,
processing chunks, outcomes, dead letters, results, labels, click reports, changes in bulk
(batches), the bulk bucket, job events, and the jobs table (``store``). ``bulk`` gathers the names
other packages use."""
