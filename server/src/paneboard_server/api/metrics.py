"""`GET /metrics`: Prometheus text, gathered from the live state on each scrape (any viewer).

Every label value comes from a bounded set, because each distinct value is a series that
Prometheus keeps: agents are the manifests' agents (a name only a program's own report
gave is `other`), hosts the first `HOST_LABELS` by name (the rest `other`). A collector
cannot grow the scrape by inventing names.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse
from paneboard_protocol.pane import STATES
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ..services import Svc
from .access import Viewer
from .errors import READ, json_responses

HOST_LABELS = 50  # hosts with a label of their own; the others are counted as `other`
OTHER, NONE = "other", "none"


@functools.cache
def known_agents() -> frozenset[str]:
    """The agents the screen-rule manifests name: the only agent label values besides
    `other` and `none`. Read once; a manifest added later counts as `other` until restart."""
    from paneboard_protocol.rules import load_rules

    return load_rules().agents


def _agent_label(agent: str | None, known: frozenset[str]) -> str:
    if not agent:
        return NONE
    return agent if agent in known else OTHER


def _host_labels(hosts: Iterable[str]) -> dict[str, str]:
    """Each host's label: its name for the first `HOST_LABELS` by name, else `other`."""
    names = sorted(set(hosts))
    return {h: (h if i < HOST_LABELS else OTHER) for i, h in enumerate(names)}


def longest_wait(panes: Iterable[Any], now: float) -> float:
    """Seconds the longest-blocked live pane has waited; 0 when none waits."""
    waits = [now - p.since for p in panes if p.state == "blocked" and p.since is not None]
    return max(0.0, *waits) if waits else 0.0


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
        live = [p for p in core.panes.values() if p.gone_at is None]
        known = known_agents()
        by_agent = Counter((_agent_label(p.agent, known), p.state or NONE) for p in live)
        g = GaugeMetricFamily(
            "paneboard_agent_panes",
            "Live panes by agent (the manifests' agents, other, none) and state",
            labels=["agent", "state"],
        )
        for agent in (*sorted(known), OTHER, NONE):
            for st in (*STATES, NONE):
                g.add_metric([agent, st], by_agent.get((agent, st), 0))
        yield g
        names = {h.id: h.name for h in core.hosts.values()}
        host_label = _host_labels(names.values())
        by_host = Counter((host_label.get(names.get(p.host_id, ""), OTHER), p.state or NONE) for p in live)
        g = GaugeMetricFamily(
            "paneboard_host_panes",
            f"Live panes by host (the first {HOST_LABELS} by name, the rest other) and state",
            labels=["host", "state"],
        )
        for (host, st), n in sorted(by_host.items()):
            g.add_metric([host, st], n)
        yield g
        yield GaugeMetricFamily(
            "paneboard_longest_wait_seconds",
            "How long the longest-blocked live pane has waited on a person (0: none waits)",
            value=longest_wait(live, time.time()),
        )
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
