"""The kinds of finding: one stable name per record type (logmem.analysis.findings)."""

from __future__ import annotations

from enum import Enum


class FindingKind(Enum):
    """Which finding a record is (one value per record type; stable names for machines)."""

    WEIGHTS = "weights"
    WEIGHTS_NOT_LOADED = "weights_not_loaded"
    WEIGHTS_COMMITTED = "weights_committed"
    KV_BUDGET = "kv_budget"
    NO_RULE_CHECK = "no_rule_check"
    POST_CAPTURE_KV = "post_capture_kv"
    KV_LOGGED_AVAILABLE = "kv_logged_available"
    DRAFT_POOL = "draft_pool"
    BUDGET_NOT_POSITIVE = "budget_not_positive"
    POOLS_VS_BUDGET = "pools_vs_budget"
    POOL_STEP = "pool_step"
    KV_POOLS_LOGGED = "kv_pools_logged"
    KV_SOURCES_DISAGREE = "kv_sources_disagree"
    WORKSPACES = "workspaces"
    GRAPH_SPLIT = "graph_split"
    LARGEST_BUCKET_NOTE = "largest_bucket_note"
    GRAPH_SPARSE = "graph_sparse"
    STOPPED_FIRST_BUCKET = "stopped_first_bucket"
    CAPTURE_ROSE = "capture_rose"
    BUCKETS_ROSE = "buckets_rose"
    NEGLIGIBLE_CAPTURES = "negligible_captures"
    CAPTURE_UNMEASURED = "capture_unmeasured"
    LEFT_FREE = "left_free"
    EXHAUSTED = "exhausted"  # the floor reached before or during capture, yet it came up
    DRAFT_RELEASED = "draft_released"
    BOTTOMED_OUT = "bottomed_out"
    IMBALANCE = "imbalance"
    UNEXPLAINED = "unexplained"
    RESERVE = "reserve"
    REUSE = "reuse"
    RANK_GRAPH_SPREAD = "rank_graph_spread"
    CONTEXT_VS_POOL = "context_vs_pool"
    UNIFIED_MEMORY = "unified_memory"
    MAMBA_SLOTS = "mamba_slots"
    OUT_OF_ORDER = "out_of_order"
    SHARED_LABEL = "shared_label"
    LAUNCH_START = "launch_start"
    REPEATED_LINES = "repeated_lines"
    CLOCK_OFFSET = "clock_offset"
