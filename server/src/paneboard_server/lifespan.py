"""Start-up and shut-down: every part of a running server, made, wired and stopped.

`running(cfg, url, clock)` opens the database, refuses an unmigrated schema, loads the
pane mirror and starts the writer, revocation, retention, notifications, the screens
pages watch and (on PostgreSQL) the cross-process fan-out; it yields them as one
`Services` and, on the way out, closes the collectors' sockets and stops it all in
reverse. `app.create_app` runs it as the app's lifespan.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from .answers import AnswerDesk, Offers, ScreenHub
from .auth import LoginThrottle, Revocation, warm_password_check
from .config import Config
from .ingest import IngestRegistry, RefusedTokens
from .notify import NotifyService, feed
from .panes import Core, retention_loop
from .services import Services
from .store import check_schema, create_engine, is_sqlite
from .stream import SnapshotCache

if TYPE_CHECKING:  # imported only on PostgreSQL, below
    from .answers import Replicas
    from .panes import Fanout


@asynccontextmanager
async def running(cfg: Config, url: str, clock: Callable[[], float]) -> AsyncIterator[Services]:
    lim = cfg.limits
    engine = create_engine(url)
    await check_schema(engine)
    core = Core(engine, cfg, clock)
    await core.load()
    registry = IngestRegistry(
        core, RefusedTokens(cfg.limits.collector_refusals_free, cfg.limits.collector_max_backoff)
    )
    core.start()
    revocation = Revocation(engine, lim.revocation_check)
    revocation.extra.append(registry.holders)
    notify = NotifyService(engine, cfg.notify, clock=clock, public_url=cfg.server.public_url)
    await notify.start()
    feed(notify, core)
    tasks: list[asyncio.Task[Any]] = [
        asyncio.create_task(asyncio.to_thread(warm_password_check), name="paneboard-warm-login"),
        asyncio.create_task(retention_loop(core), name="paneboard-retention"),
        asyncio.create_task(revocation.run(), name="paneboard-revocation"),
    ]
    screens = ScreenHub(core)
    answers = AnswerDesk(core, screens, cfg.server.answer_ttl)
    registry.on_side = screens.on_side
    registry.on_attach.append(screens.on_attach)
    tasks.append(asyncio.create_task(screens.run(), name="paneboard-screens"))
    # Once screens run: blocked panes' pushes to operators offer their answers.
    notify.offers = Offers(core, screens)
    fanout: Fanout | None = None
    replicas: Replicas | None = None
    if not is_sqlite(url):  # several processes may share the database: hear the others
        from .answers import Replicas
        from .panes import Fanout

        fanout = Fanout(core, registry)
        replicas = Replicas(core, screens, answers)
        fanout.extra = replicas.listeners()
        registry.on_attach.append(replicas.on_attach)
        registry.on_attach.append(fanout.holds_changed)
        registry.on_detach.append(fanout.holds_changed)
        tasks.append(asyncio.create_task(replicas.run(fanout.ready), name="paneboard-replicas"))
        tasks.append(asyncio.create_task(fanout.run(), name="paneboard-fanout"))
        await fanout.ready.wait()
    svc = Services(
        cfg=cfg,
        core=core,
        registry=registry,
        revocation=revocation,
        snapshots=SnapshotCache(core),
        notify=notify,
        screens=screens,
        answers=answers,
        login_throttle=LoginThrottle(
            lim.login_account_failures, lim.login_address_failures, lim.login_max_backoff
        ),
        login_slots=asyncio.Semaphore(lim.login_concurrency),
        fanout=fanout,
        replicas=replicas,
    )
    try:
        yield svc
    finally:
        registry.close_all()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await notify.stop()
        await core.stop()
        await engine.dispose()
