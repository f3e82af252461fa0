"""Loops: the self-recursing pollers, their pacing, healing and scaling, their tokens table, the bulk
queue and its metrics."""
