"""`GET /metrics`: Prometheus text, gathered from the live state on each scrape (any viewer)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse
from paneboard_protocol.pane import STATES
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ..services import Svc
from .access import Viewer
from .errors import READ, json_responses


class _Live:
    def __init__(self, core: Any, registry: Any) -> None:
        self.core = core
        self.registry = registry

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        core = self.core
        states = Counter(p.state or "none" for p in core.panes.values() if p.gone_at is None)
        g = GaugeMetricFamily("paneboard_panes", "Live panes by state", labels=["state"])
        for st in (*STATES, "none"):
            g.add_metric([st], states.get(st, 0))
        yield g
        yield GaugeMetricFamily(
            "paneboard_sse_clients", "Connected live-stream clients", value=len(core.hub.subscribers)
        )
        yield GaugeMetricFamily(
            "paneboard_collectors_connected",
            "Collectors connected to this process",
            value=len(self.registry.connections),
        )
        yield GaugeMetricFamily(
            "paneboard_hosts_unreachable",
            "Hosts shown as unreachable",
            value=sum(1 for h in core.hosts.values() if not h.reachable),
        )
        yield GaugeMetricFamily(
            "paneboard_writer_queue", "Operations waiting for the writer", value=core.queue.qsize()
        )
        yield CounterMetricFamily("paneboard_reports", "Pane reports ingested", value=core.stats["reports"])
        yield CounterMetricFamily(
            "paneboard_commits", "Writer transactions committed", value=core.stats["batches"]
        )
        yield CounterMetricFamily(
            "paneboard_commit_failures", "Writer transactions that failed", value=core.stats["commits_failed"]
        )
        yield CounterMetricFamily(
            "paneboard_stale_changes",
            "State changes made by staleness expiry",
            value=core.stats["stale_changes"],
        )
        refused = CounterMetricFamily(
            "paneboard_ingest_refused",
            "Collector messages refused: invalid, unstorable, another collector's host, over a cap",
            labels=["reason"],
        )
        for reason in ("invalid", "unstorable", "host", "cap"):
            refused.add_metric([reason], core.stats[f"refused_{reason}"])
        yield refused
        yield CounterMetricFamily(
            "paneboard_ingest_delayed",
            "Collector connections delayed (or closed 1013) because their token was refused lately",
            value=core.stats["ingest_delayed"],
        )
        yield CounterMetricFamily(
            "paneboard_batches_retried",
            "Writer batches that failed and were bisected",
            value=core.stats["batches_retried"],
        )
        yield CounterMetricFamily(
            "paneboard_batches_rerun",
            "Writer batches run again whole after a deadlock or serialization failure with another process",
            value=core.stats["batches_rerun"],
        )
        yield CounterMetricFamily(
            "paneboard_transactions_failed",
            "Write transactions that failed, each half of a bisected batch and each probe included",
            value=core.stats["transactions_failed"],
        )
        yield CounterMetricFamily(
            "paneboard_sse_dropped", "Live-stream clients dropped for being slow", value=core.hub.dropped
        )


def metrics_text(core: Any, registry: Any) -> bytes:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Live(core, registry))
    return generate_latest(reg)


def make_router() -> APIRouter:
    r = APIRouter()

    @r.get(
        "/metrics",
        summary="Prometheus metrics",
        response_class=PlainTextResponse,
        responses={
            200: {
                "description": "The Prometheus text format, version 0.0.4",
                "content": {"text/plain": {"schema": {"type": "string"}}},
            },
            **json_responses(*READ),
        },
    )
    async def metrics(svc: Svc, _: Viewer) -> Response:
        return Response(metrics_text(svc.core, svc.registry), media_type="text/plain; version=0.0.4")

    return r
