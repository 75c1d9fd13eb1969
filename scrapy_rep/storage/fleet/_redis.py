"""A fleet's places in its download slots, in Redis: each slot's concurrency and spacing held
by all the processes sharing a Redis ``REP_STORE`` together.

Keys, under the store's prefix ``P`` (``REP_STORE_PREFIX``), per download slot ``S`` (Scrapy's
slot key: a ``download_slot`` meta, else the hostname):

- ``P fleet:alive:<member>``: the member's heartbeat (one per process, not per place), renewed
  every ``ttl / 4`` s with a ``ttl`` expiry;
- ``P fleet:decl:S``: hash member → "concurrency delay-ms jitter", what each member's settings
  say of the slot; the slot holds the lowest concurrency and the longest delay of live members;
- ``P fleet:places:S``: hash lease → member, the places taken;
- ``P fleet:next:S``: when the next request may start (ms of Redis's clock, ``TIME``);
- ``P fleet:queue:S``: the members waiting, first come first served;
- channel ``P fleet:wake``: a slot's name when a place frees or another member may go.

A place is taken by one script call (``TAKE``: one round trip) and given back by another
(``RELEASE``, which checks the owner); a place of a member whose heartbeat lapsed is removed by
the next script that reads the slot. A member that waits is woken by the channel (read by a
thread, handed to the reactor) or, should a message be missed, by its backstop: the waiting
room's tick, every second.

Redis unreachable: each process goes on alone with ``max(1, c // N)`` places and N times the
delay, N the live members last seen (one WARNING, ``robotstxt/store_error`` per failed call,
``robotstxt/slot/fleet_local`` per place so taken); Redis is asked again every
``retry_interval`` s, and when it answers the member first registers the places it holds.
"""

from __future__ import annotations

import logging
import random
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from twisted.internet import task

from scrapy_rep.core.stats import SLOT_FLEET_LOCAL
from scrapy_rep.storage.fleet._scripts import LEAVE, REGISTER, RELEASE, STATE, TAKE
from scrapy_rep.storage.options import store_kind
from scrapy_rep.storage.outage import Outage

if TYPE_CHECKING:
    import redis
    from twisted.internet.interfaces import IReactorTime

    from scrapy_rep.core.clock import Clock
    from scrapy_rep.storage.options import StoreOptions

__all__ = ["FLEET_TTL", "FleetState", "RedisPlaces", "SlotLimits", "fleet_state", "open_places"]

logger = logging.getLogger(__name__)

#: Seconds a member's heartbeat lasts: a member that dies gives its places back this long
#: after its last beat, at most, plus the waiting room's one-second tick.
FLEET_TTL = 10.0


class SlotLimits(NamedTuple):
    """What a process's settings say of one download slot: its concurrency, its delay
    (seconds) and the delay's jitter (Scrapy's: the delay times 1 ± jitter, at random)."""

    concurrency: int
    delay: float
    jitter: float


class FleetState(NamedTuple):
    """A slot as the fleet sees it (``scrapy robots``): places taken by live processes, the
    lowest concurrency and longest delay they declare, seconds to the next start, how many
    declare it, how many wait."""

    slot: str
    taken: int
    next_start: float
    members: int
    limit: int
    delay: float
    waiting: int


class RedisPlaces:
    """See the module docstring. ``start(on_free)`` when the spider opens, ``close()`` when it
    closes; ``on_free(slot)`` is called on the reactor when a member may go in ``slot``."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        clock: Clock,
        prefix: str,
        stats: Any = None,
        spider: Callable[[], object] = lambda: None,
        ttl: float = FLEET_TTL,
        retry_interval: float = 5.0,
        draw: Callable[[], float] = random.random,
        member: str | None = None,
    ) -> None:
        self.member = member or uuid.uuid4().hex
        self._client = client
        self._clock = clock
        self._prefix = prefix
        self._base = f"{prefix}fleet:"
        self._stats = stats
        self._ttl_ms = max(1, int(ttl * 1000))
        self._retry_interval = retry_interval
        self._draw = draw
        self._take = client.register_script(TAKE)
        self._release = client.register_script(RELEASE)
        self._register = client.register_script(REGISTER)
        self._leave = client.register_script(LEAVE)
        #: The places this member holds, by slot (in Redis, or its own while Redis is away).
        self._held: dict[str, set[str]] = {}
        self._seq = 0
        #: The live members last seen, by slot and over all slots (the fallback's N).
        self._members: dict[str, int] = {}
        self._fleet_size = 1
        #: While Redis is away: when each slot's next start may be, this process alone.
        self._local_next: dict[str, float] = {}
        self._down_until = 0.0
        self._reregister = False
        self._grace_until = 0.0
        self._outage = Outage(
            stats=stats,
            logger=logger,
            lost="Redis unavailable for the fleet's download slots (%s): each process holds "
            "its share of every slot's concurrency and delay alone until it answers again",
            back="Redis answers again for the fleet's download slots",
            spider=spider,
        )
        self._heartbeat = task.LoopingCall(self.beat)
        self._heartbeat.clock = cast("IReactorTime", clock)
        self._pubsub: Any = None
        self._listener: threading.Thread | None = None
        self._closed = threading.Event()

    # -- lifecycle ------------------------------------------------------------

    def start(
        self, on_free: Callable[[str], None], call_from_thread: Callable[..., object]
    ) -> None:
        """Beat, and listen for slots where a member may go (``on_free`` on the reactor
        thread, through ``call_from_thread``)."""
        self._heartbeat.start(self._ttl_ms / 4000, now=True)

        def heard(message: dict[str, Any]) -> None:
            slot = message["data"].decode("utf-8", "replace")
            call_from_thread(on_free, slot)

        self._pubsub = pubsub = self._client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
        closed = self._closed

        def listen() -> None:
            while not closed.is_set():
                try:
                    if not pubsub.subscribed:
                        pubsub.subscribe(**{f"{self._base}wake": heard})
                    pubsub.get_message(timeout=0.5)
                except Exception:  # Redis away: the backstop wakes meanwhile; try again
                    closed.wait(1.0)

        self._listener = threading.Thread(target=listen, name="scrapy-rep fleet", daemon=True)
        self._listener.start()

    def beat(self) -> None:
        """Renew this member's heartbeat; if it had lapsed (or Redis was away), register the
        places it holds first."""
        if self._clock.seconds() < self._down_until:
            return
        try:
            lapsed = (
                self._client.set(
                    f"{self._base}alive:{self.member}", b"1", px=self._ttl_ms, get=True
                )
                is None
            )
            if lapsed or self._reregister:
                self._register_held()
        except Exception as exc:  # redis.RedisError, OSError: the next beat tries again
            self._failed(exc)
            return
        self._answered()

    def close(self) -> None:
        """Give every place back and leave every queue; stop beating and listening."""
        if self._heartbeat.running:
            self._heartbeat.stop()
        self._closed.set()
        if self._listener is not None:
            self._listener.join(timeout=2)
            self._listener = None
        if self._pubsub is not None:
            self._pubsub.close()
            self._pubsub = None
        if self._outage.down:
            return
        try:
            for slot in sorted(set(self._members) | set(self._held)):
                self._leave(args=[self._base, slot, self.member, 1])
            self._client.delete(f"{self._base}alive:{self.member}")
        except Exception as exc:  # their heartbeat lapses instead: within the TTL
            self._failed(exc)
        self._held.clear()

    # -- places ---------------------------------------------------------------

    def take(
        self, slot: str, limits: SlotLimits, more: bool, release: str | None = None
    ) -> str | float:
        """A place in ``slot`` now (its lease), or how many seconds until this member may ask
        again (0.0: until ``on_free`` names the slot). ``more``: other requests of this member
        wait in the slot after this one (it keeps its turn in the queue). ``release``: a lease
        of this member's in the slot to give back first, in the same call."""
        self._seq += 1
        lease = f"{self.member}:{self._seq}"
        now = self._clock.seconds()
        given = [] if release is None or not self._drop_lease(slot, release) else [release]
        if now >= self._down_until:
            try:
                if self._reregister:
                    # Back from an outage (or a lapsed heartbeat): the places this member holds
                    # are the fleet's again before it asks for another.
                    self._register_held()
                self._answered()
                if now < self._grace_until and len(self._held.get(slot, ())) >= self._share(
                    slot, limits
                ):
                    # Others may still go alone, or not have registered theirs yet: this one
                    # keeps to its share meanwhile.
                    if given:
                        self._release(args=[self._base, slot, self.member, *given])
                    return 1.0
                reply = self._take(
                    args=[
                        self._base,
                        slot,
                        self.member,
                        lease,
                        limits.concurrency,
                        int(limits.delay * 1000),
                        repr(limits.jitter),
                        repr(self._draw()),
                        int(more),
                        *given,
                    ]
                )
            except Exception as exc:  # redis.RedisError, OSError: this process decides alone
                self._failed(exc)
            else:
                taken, wait_ms, members = (int(value) for value in reply)
                if now < self._grace_until:
                    # A Redis that restarted has forgotten the others until they beat again.
                    members = max(members, self._members.get(slot, self._fleet_size))
                self._members[slot] = self._fleet_size = members
                if taken:
                    self._held.setdefault(slot, set()).add(lease)
                return lease if taken else wait_ms / 1000
        if given:
            self._reregister = True  # Redis was not told: registered again when it answers
        return self._take_alone(slot, limits, lease)

    def give(self, slot: str, lease: str) -> None:
        """Give the place ``lease`` in ``slot`` back (a member waiting there is woken)."""
        if not self._drop_lease(slot, lease):
            return
        if self._clock.seconds() < self._down_until:
            self._reregister = True
            return
        try:
            self._release(args=[self._base, slot, self.member, lease])
        except Exception as exc:  # registered again, without it, when Redis answers
            self._failed(exc)
            self._reregister = True

    def _drop_lease(self, slot: str, lease: str) -> bool:
        """Forget ``lease`` here (False: not this member's); Redis is told by the caller."""
        held = self._held.get(slot)
        if held is None or lease not in held:
            return False
        held.discard(lease)
        if not held:
            # Kept per slot in use, not per slot ever crawled (a broad crawl's millions).
            del self._held[slot]
            self._members.pop(slot, None)
        return True

    def leave(self, slot: str) -> None:
        """Nothing of this member waits in ``slot`` any more: out of its queue."""
        self._members.pop(slot, None)
        self._local_next.pop(slot, None)
        if self._clock.seconds() < self._down_until:
            return
        try:
            self._leave(args=[self._base, slot, self.member, 0])
        except Exception as exc:  # its heartbeat keeps it queued: others wait for the backstop
            self._failed(exc)

    def state(self, slot: str) -> FleetState:
        """``slot`` as the fleet sees it now (raises what the Redis client raises)."""
        return fleet_state(self._client, self._prefix, slot)

    # -- Redis away -----------------------------------------------------------

    def _take_alone(self, slot: str, limits: SlotLimits, lease: str) -> str | float:
        """Without Redis: this process's share, ``max(1, c // N)`` places and N times the
        delay, N the live members last seen in the slot (or in any)."""
        share = self._members.get(slot, self._fleet_size) or 1
        held = self._held.setdefault(slot, set())
        now = self._clock.seconds()
        start = self._local_next.get(slot, 0.0)
        if len(held) >= self._share(slot, limits):
            return 1.0  # asked again on the next tick, or when a place of its own frees
        if start > now:
            return start - now
        held.add(lease)
        jitter = 1 + limits.jitter * (2 * self._draw() - 1)
        self._local_next[slot] = now + max(0.0, share * limits.delay * jitter)
        if self._stats is not None:
            self._stats.inc_value(SLOT_FLEET_LOCAL)
        return lease

    def _share(self, slot: str, limits: SlotLimits) -> int:
        return max(1, limits.concurrency // (self._members.get(slot, self._fleet_size) or 1))

    def _register_held(self) -> None:
        for slot in sorted(set(self._held) | set(self._members)):
            self._register(args=[self._base, slot, self.member, *sorted(self._held.get(slot, ()))])
        self._reregister = False

    def _failed(self, error: object) -> None:
        self._down_until = self._clock.seconds() + self._retry_interval
        self._reregister = True
        self._outage.failed(error)

    def _answered(self) -> None:
        if self._outage.down:
            # Back, its own places registered (``take``, ``beat``): the others go alone until
            # their next try, at most a retry interval and a beat from now.
            self._grace_until = self._clock.seconds() + self._retry_interval + self._ttl_ms / 4000
            self._local_next.clear()
        self._outage.answered()


def fleet_state(client: redis.Redis, prefix: str, slot: str) -> FleetState:
    """``slot`` as the fleet sees it now (raises what the Redis client raises)."""
    reply = client.register_script(STATE)(args=[f"{prefix}fleet:", slot, ""])
    taken, wait_ms, members, limit, delay_ms, waiting = (int(value) for value in reply)
    return FleetState(slot, taken, wait_ms / 1000, members, limit, delay_ms / 1000, waiting)


def open_places(
    store: StoreOptions, *, clock: Clock, stats: Any, spider: Callable[[], object]
) -> RedisPlaces | None:
    """The fleet's places for a Redis ``store`` (not contacted yet: ``start`` does), else None:
    the SQLite and memory stores hold no fleet-wide limits."""
    if store_kind(store.url) != "redis":
        return None
    from scrapy_rep.storage.results._redis import redis_client

    # Two connections: the reactor thread's calls, and the thread listening for wake-ups.
    client = redis_client(store.url, timeout=store.timeout, connections=2)
    return RedisPlaces(client, clock=clock, prefix=store.prefix, stats=stats, spider=spider)
