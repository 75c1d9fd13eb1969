"""``Admission``: the one answer to "may this request go now?" — go, wait (for what) or drop (why).

Every place scrapy-rep looks at a request asks here and does what it answers: the gate (before
the scheduler), a held request being released, the final gate (before download: also
``engine.download`` callers and requests another process or an earlier run allowed), the
guard's last look, and a request that got its download slot's place after waiting for it
(``after_wait``: what it was judged by may have changed meanwhile). No per-origin condition is
tested anywhere else. The order:

1. robots.txt unknown or unreachable: wait for it (SPEC B2) — nothing is known before it. At
   the gate an unknown origin's first request may go on unresolved (``FIRST``) and wait at the
   final gate, so that it goes the moment robots.txt is known.
2. Certain drops (Disallow, a Crawl-delay above REP_CRAWL_DELAY_MAX to skip), before any wait.
3. With a declared purpose (SPEC G2): a refusal by a statement that no pending source can
   override drops now; else each needed usage document not known yet is waited for, then a
   refusal drops.
4. The route's pause (SPEC H), last: a request that will be dropped is never held for it.
5. Go; before download, with the origin's Crawl-delay on its download slot.
6. Concurrency, at the guard's last look only, where Scrapy does not hold it (the room's
   ``Slots``): a request over its download slot's concurrency waits for a place there. One
   whose wait the crawl's close ended comes back to the gate (``send_back(closing=True)``) and
   is told to wait there for a place that will not come (``NO_PLACE``): held as the crawl
   closes.

A verdict belongs to the request it was given for. What the decision let go is bound to that
request object in this process (``_Given``, a weak reference: never to anything its meta
carries, so a spider that copies ``response.meta`` copies no verdict) with the inputs it read:
the URL and the User-Agent header. While the states it was judged by are current and its inputs
unchanged, the final gate needs one comparison. Its token (``ADMITTED``: the combined generation
of those states and their content ids) is also written into its meta, where it only says "a
gate let this go": a request that carries one it was not given here (restored from JOBDIR,
queued by another process of a fleet, a copy of another request's meta) is judged again,
counted (``robotstxt/rejudged``). So is one whose URL or User-Agent tokens changed since
(``again``, the guard's last look: a downloader middleware that set another User-Agent).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol, TypeAlias

from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.request import fingerprint
from twisted.internet.defer import Deferred

from scrapy_rep.core.sources import needed_documents
from scrapy_rep.core.stats import REJUDGED, RESCHEDULED
from scrapy_rep.crawl._cache import OriginKeys
from scrapy_rep.crawl._events import Why
from scrapy_rep.crawl._pauses import exempt, route
from scrapy_rep.crawl._verdict import user_agent

if TYPE_CHECKING:
    from scrapy.http import Request

    from scrapy_rep.core.clock import Clock
    from scrapy_rep.core.robots_file import RobotsTxt
    from scrapy_rep.core.sources import UsageDocument
    from scrapy_rep.crawl._cache import OriginState
    from scrapy_rep.crawl._events import Events, Where
    from scrapy_rep.crawl._pauses import Pauses
    from scrapy_rep.crawl._resolver import Resolver
    from scrapy_rep.crawl._verdict import Known
    from scrapy_rep.crawl.exceptions import DropReason

__all__ = [
    "ADMITTED",
    "FIRST",
    "GO",
    "NO_PLACE",
    "RESOLVE",
    "SEEN_META",
    "Admission",
    "Awaited",
    "Drop",
    "Token",
    "UsageSource",
    "Wait",
    "needed_sources",
    "seen_mark",
]

#: An origin's robots.txt state.
_State: TypeAlias = "OriginState[RobotsTxt]"

#: Meta key of a request's admission token (see the module docstring).
ADMITTED = "_rep_admitted"

#: Where a request is looked at: before the scheduler, released from a hold, before download.
Point = Literal["gate", "release", "download"]


#: Meta key of a held request the scheduler's dupefilter saw (it passed the gate to the
#: scheduler, not ``dont_filter``, before it was sent back to the gate and held): it goes to
#: the scheduler again with ``dont_filter``, and a run that restores it files its fingerprint
#: with the dupefilter first (``Room.open``). Its value is the request's fingerprint
#: (``seen_mark``): it must survive JOBDIR and Redis, so it cannot be bound to the request
#: object; bound to its content, a copy on another request files nothing.
SEEN_META = "_rep_seen"


def seen_mark(request: Request) -> str:
    """``SEEN_META``'s value for ``request``: Scrapy's default fingerprint of it, in hex."""
    return fingerprint(request).hex()


class Awaited(Protocol):
    """What held requests may wait for: a document's resolver, or the pauses."""

    name: str

    def wait(self, origin: str, trigger: Request | None) -> Deferred[Any]: ...


class Token(str):
    """An admission token: ``<generation>:<content id>[,<content id>…]`` (hex generation, then
    robots.txt's content id and each needed usage document's). In this process it also holds
    the states it names (``judged``: what the page level reads, whatever the LRU evicted
    since); pickled (JOBDIR, Redis), it is the plain string."""

    judged: tuple[OriginState[RobotsTxt], Known]

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        return str, (str(self),)


class _Given(weakref.ref["Request"]):
    """A verdict given in this process: a weak reference to the request it was given for (a
    copy or a ``replace`` is another object), with its token and the inputs it read. Its
    fields are set after it is made: weakref's own constructor, not a Python one, is called
    once per request let go."""

    __slots__ = ("agent", "token", "url")

    token: Token | str
    url: str
    agent: bytes | None


class _Answer(Enum):
    """The answers that carry nothing but themselves."""

    #: Go now.
    GO = "GO"
    #: An unknown origin's first request: on to the scheduler unresolved (the gate only).
    FIRST = "FIRST"
    #: An unknown origin's first request at the final gate: resolve robots.txt there and wait.
    RESOLVE = "RESOLVE"


GO, FIRST, RESOLVE = _Answer.GO, _Answer.FIRST, _Answer.RESOLVE
#: The token of a request let through as its origin's first (never a ``Token``).
_FIRST_TOKEN = "first"


@dataclass(frozen=True)
class Wait:
    """Wait until ``awaited`` (robots.txt's resolver, a usage document's, the pauses) says."""

    awaited: Awaited


class _NoPlace:
    """What a request whose slot wait the close ended is held for: a place that will not come
    (the crawl closes, and lets its held requests go with it)."""

    name = "a place in its download slot"

    def wait(self, origin: str, trigger: Request | None) -> Deferred[None]:
        return Deferred()


NO_PLACE = _NoPlace()


@dataclass(frozen=True)
class Drop:
    why: Why


Decision = _Answer | Wait | Drop


@dataclass(frozen=True)
class UsageSource:
    """A usage document and the resolver of its copies per origin."""

    document: UsageDocument
    resolver: Resolver[Any]


def needed_sources(
    sources: Sequence[UsageSource], labels: Sequence[str]
) -> tuple[UsageSource, ...]:
    """The usage documents a crawl declaring ``labels`` waits for (SPEC G2)."""
    wanted = needed_documents([source.document for source in sources], labels)
    return tuple(source for source in sources if source.document in wanted)


class Judge(Protocol):
    """What the decision asks of the verdicts (``_verdict.Verdicts``)."""

    def refusal(self, state: _State, request: Request) -> Why | None: ...
    def usage_refusal(self, state: _State, request: Request, known: Known) -> Why | None: ...
    def certain_refusal(self, state: _State, request: Request, known: Known) -> Why | None: ...
    def same_agents(self, judged: bytes | None, now: bytes | None) -> bool: ...
    def refuse(self, request: Request, why: Why, where: Where) -> NoReturn: ...


class Admission:
    def __init__(
        self,
        *,
        resolver: Resolver[RobotsTxt],
        needed: tuple[UsageSource, ...],
        pauses: Pauses,
        judge: Judge,
        apply_delay: Callable[[Request, float], None],
        events: Events,
        clock: Clock,
        hold_timeout: float,
        first_through: Callable[[], bool],
    ) -> None:
        """``needed``: the usage documents the declared purpose needs; ``apply_delay``: put a
        Crawl-delay on a request's download slot; ``hold_timeout``: REP_HOLD_TIMEOUT, how long
        a request may wait (``deadline``); ``first_through``: may an unknown origin's
        first request go on unresolved (``FIRST``; not where held requests are durable: there
        every one is held, so that a crash loses none)."""
        #: (scheme, netloc) -> origin, for the adapters and ``origin``.
        self.keys = OriginKeys()
        self._events = events
        self._clock = clock
        self._resolver = resolver
        self._pauses = pauses
        self._paused = pauses.paused
        self._judge = judge
        self._apply_delay = apply_delay
        self._timeout = hold_timeout
        # One of each, made once: waiting allocates nothing.
        self._wait_robots = Wait(resolver)
        self._wait_pause = Wait(pauses)
        self._needed = [(source, Wait(source.resolver)) for source in needed]
        self._first_through = first_through
        self._no_place = Wait(NO_PLACE)
        #: Requests sent back from their slot's wait as the crawl closes (``send_back``).
        self._closed_out: weakref.WeakSet[Request] = weakref.WeakSet()
        # The verdicts given in this process, each keyed and valued by its ``_Given`` (a weak
        # reference to its request: looked up with any reference to the same request, gone
        # with it). One allocation per request let go.
        self._given: dict[weakref.ref[Request], _Given] = {}
        self._forget = lambda ref: self._given.pop(ref, None)
        # Requests counted as judged again (``REJUDGED``), so that each counts once.
        self._rejudged: weakref.WeakSet[Request] = weakref.WeakSet()

    def decide(self, request: Request, origin: str, now: float, at: Point) -> Decision:
        """The answer for ``request`` (of ``origin``) at ``at``, in the order of the module
        docstring. On go, the request carries its token; before download, its slot has the
        origin's Crawl-delay. Before download, an unknown origin's first request is told to
        resolve it there (``RESOLVE``)."""
        if at == "gate" and self._closed_out and request in self._closed_out:
            # Step 6 at close: no place will come; held (kept or said at close, as held ones).
            self._closed_out.discard(request)
            return self._no_place
        given: Token | str | None = None
        if request.meta.get(ADMITTED) is not None:
            # The verdict given to it in this process, while its URL is the one judged; else it
            # is judged again. At the gate (a request entering) the token it carries is dropped;
            # before download it still says the request came from a scheduler (``send_back``),
            # and it is counted once as judged again.
            bound = self._given.get(weakref.ref(request))
            if bound is not None and bound.url == request.url:
                given = bound.token
            elif at == "gate":
                del request.meta[ADMITTED]
            elif request not in self._rejudged:
                self._rejudged.add(request)
                self._events.count(REJUDGED)
        first = given is _FIRST_TOKEN
        if first and at == "download":
            self._unclaim(request, origin)
        state = self._resolver.state(origin, now, request)
        if state is None or state.serving.kind == "hold":
            self._resolver.waiting(origin, request)
            if state is None and at == "gate":
                if (
                    self._first_through()
                    and route(origin, request) not in self._paused
                    and self._resolver.claim(origin, now)
                ):
                    self._bind(request, _FIRST_TOKEN)
                    return FIRST
            elif state is None and first:
                # Its claim is over: from now on it waits as any request before download.
                del request.meta[ADMITTED]
                return RESOLVE
            return self._wait_robots
        known: list[tuple[UsageDocument, OriginState[Any]]] = []
        for source, wait in self._needed:
            document = source.resolver.state(origin, now, request)
            if document is None:
                # Not known yet: drop now if that is certain, else wait for it.
                why = self._judge.refusal(state, request) or self._judge.certain_refusal(
                    state, request, known
                )
                return Drop(why) if why is not None else wait
            known.append((source.document, document))
        # The hot path (robots.txt alone, its token current): no call to make it.
        kept = state.admitted
        if known or kept is None or kept[0] != state.generation:
            token = self.token(state, known)
        else:
            token = kept[1]
        # One comparison while nothing it was judged by changed (the token is made once per
        # combination of states, and this request was given it here).
        if given is not token and (why := self._refused(state, request, known)) is not None:
            return Drop(why)
        if self._paused and self.paused(origin, request, now):
            return self._wait_pause
        if given is not token:
            self._bind(request, token)
        if at == "download" and state.crawl_delay is not None:
            self._apply_delay(request, state.crawl_delay)
        return GO

    def _bind(self, request: Request, token: Token | str) -> None:
        """Give ``request`` ``token``: in its meta, and bound to it with the URL and User-Agent
        header it was judged by."""
        request.meta[ADMITTED] = token
        given = _Given(request, self._forget)
        given.token, given.url, given.agent = token, request.url, user_agent(request)
        self._given.pop(given, None)  # a verdict given to it before (its callback goes too)
        self._given[given] = given

    def again(self, request: Request) -> Decision | None:
        """The guard's last look, after every other downloader middleware: None while
        ``request``'s verdict holds (or it has none), else the decision for it judged again.
        It is judged again when its URL or the User-Agent tokens it carries changed since its
        verdict was given (a middleware that rotates User-Agents, say): it is then no longer
        bound to it. A User-Agent filled in from USER_AGENT is no change."""
        given = self._given.get(weakref.ref(request))
        if given is None or given.token is _FIRST_TOKEN:
            return None
        agent = user_agent(request)
        if given.url == request.url and (
            agent == given.agent or self._judge.same_agents(given.agent, agent)
        ):
            return None
        self._given.pop(weakref.ref(request), None)
        request.meta.pop(ADMITTED, None)
        self._rejudged.add(request)
        self._events.count(REJUDGED)
        origin = self.origin(request)
        assert origin is not None  # it was judged
        return self.decide(request, origin, self._clock.seconds(), "download")

    def _refused(self, state: _State, request: Request, known: Known) -> Why | None:
        """Why the known documents drop ``request`` (steps 2 and 3), or None."""
        return self._judge.refusal(state, request) or self._judge.usage_refusal(
            state, request, known
        )

    def refuse(self, request: Request, why: Why) -> NoReturn:
        """Drop ``request`` before download, as the admission answered (``Drop``)."""
        self._judge.refuse(request, why, "before_download")

    def copy_of(self, request: Request, origin: str, now: float) -> _State | Wait | Drop:
        """For a spider's own request for ``origin``'s robots.txt, answered from the crawl's
        copy (no pause or usage document matters: the site is not asked): the state to answer
        from, with the origin's Crawl-delay on the request's slot should it go to the server
        (no copy to give); a wait for robots.txt; or a drop, as for any request."""
        self.claim_over(request)  # it may have been let through as its origin's first
        state = self._resolver.state(origin, now, request)
        if state is None or state.serving.kind == "hold":
            return self._wait_robots
        if (why := self._refused(state, request, ())) is not None:
            return Drop(why)
        if state.crawl_delay is not None:
            self._apply_delay(request, state.crawl_delay)
        return state

    def kept(self, origin: str) -> dict[Resolver[Any], OriginState[Any]]:
        """The states of ``origin`` known here now (robots.txt's, the needed documents'), by
        resolver: to ``restore`` before deciding again after a wait."""
        return {
            resolver: state
            for resolver in (self._resolver, *(source.resolver for source, _ in self._needed))
            if (state := resolver.peek(origin)) is not None
        }

    def restore(self, kept: dict[Resolver[Any], OriginState[Any]]) -> None:
        """Put ``kept`` states back in their caches where evicted (nothing newer came)."""
        for resolver, state in kept.items():
            resolver.reinstate(state)

    def paused(self, origin: str, request: Request, now: float) -> bool:
        """Is ``request``'s route to ``origin`` paused, and it is not the one probe (which
        this makes it, ``Pauses.probing``)? A request outside the pauses (``exempt``: marked
        ``rep_dont_pause``, SPEC H4) never is."""
        if exempt(request) or self._pauses.probing(request):
            return False
        key = route(origin, request)
        return key in self._paused and not self._pauses.admit(key, request, now)

    def origin(self, request: Request) -> str | None:
        """``request``'s origin (SPEC B1), or None: robots.txt does not apply to its URL."""
        return self.keys.origin(urlparse_cached(request))

    def after_wait(self, request: Request) -> Drop | Wait | None:
        """The last look once ``request`` got its download slot's place: a wait long enough
        for what it was judged by to change (robots.txt refreshed, a usage document, its route
        paused) is judged again as at the final gate; None to go on. One not judged here (its
        origin's first, ``dont_obey_robotstxt``, ``engine.download`` callers) goes on."""
        given = self._given.get(weakref.ref(request))
        if given is None or given.token is _FIRST_TOKEN:
            return None
        origin = self.origin(request)
        if origin is None:
            return None
        decision = self.decide(request, origin, self._clock.seconds(), "download")
        return decision if isinstance(decision, (Drop, Wait)) else None

    def leaving(self, request: Request) -> bool:
        """The last look before the download slot: must ``request``, admitted before, go back
        (its route paused since)? Only the pause can have changed by then."""
        if not self._paused or weakref.ref(request) not in self._given:
            return False
        origin = self.origin(request)
        return origin is not None and self.paused(origin, request, self._clock.seconds())

    def send_back(self, request: Request, *, closing: bool = False) -> Request:
        """``request`` on its way back to the scheduler, to be admitted again (held, if it
        must wait). The dupefilter saw it once already (if it passed the gate to the scheduler
        and was not ``dont_filter``): marked so, a run that restores it files it with the
        dupefilter again (``Room.open``). ``closing``: its slot's wait was ended by the crawl
        closing; the gate holds it."""
        if closing:
            self._closed_out.add(request)
        if not request.dont_filter and ADMITTED in request.meta:
            request.meta[SEEN_META] = seen_mark(request)
        request.dont_filter = True
        request.meta.pop(ADMITTED, None)
        self._given.pop(weakref.ref(request), None)
        self._pauses.not_probed(request)
        self._events.count(RESCHEDULED)
        return request

    def token(self, state: OriginState[RobotsTxt], known: Known) -> Token:
        """The token of ``state`` with the usage documents ``known``: made once per
        combination (kept on robots.txt's state), so that comparing is all a current one
        costs."""
        generation = state.generation
        for _, document in known:  # a loop: no generator made on every decision
            generation = max(generation, document.generation)
        kept: tuple[int, Token] | None = state.admitted
        if kept is not None and kept[0] == generation:
            return kept[1]
        contents = ",".join([state.content, *(document.content for _, document in known)])
        token = Token(f"{generation:x}:{contents}")
        token.judged = (state, tuple(known))
        state.admitted = (generation, token)
        return token

    def first(self, request: Request) -> bool:
        """Was ``request`` let through as its origin's first (``FIRST``), in this process?"""
        if request.meta.get(ADMITTED) != _FIRST_TOKEN:
            return False
        given = self._given.get(weakref.ref(request))
        return given is not None and given.token is _FIRST_TOKEN

    def claim_over(self, request: Request) -> None:
        """``request`` was dropped before the final gate (a duplicate, an earlier downloader
        middleware), or is a robots.txt request answered from the crawl's copy (``copy_of``):
        if it was let through as its origin's first, the claim is released (for its own
        request only: a copy of its meta releases nothing)."""
        if self.first(request) and (origin := self.origin(request)) is not None:
            self._unclaim(request, origin)

    def _unclaim(self, request: Request, origin: str) -> None:
        self._given.pop(weakref.ref(request), None)
        self._resolver.unclaim(origin)

    def from_scheduler(self, request: Request) -> bool:
        """Did ``request`` pass a gate on its way to the scheduler (it carries a token)? An
        ``engine.download`` caller did not."""
        return ADMITTED in request.meta

    def goes_back(self, request: Request, origin: str, awaited: Awaited) -> bool:
        """Before download, ``request`` must wait for ``awaited``: back to the gate, to be held
        there (durably where the crawl is), when it came from the scheduler and waits for its
        route's pause or for an origin become unreachable. The others wait where they are: an
        ``engine.download`` caller, an origin's first request, one whose origin the LRU
        evicted."""
        return self.from_scheduler(request) and (
            awaited is self._pauses
            or (awaited is self._resolver and self._resolver.peek(origin) is not None)
        )

    def judged(self, request: Request) -> tuple[OriginState[RobotsTxt], Known] | None:
        """The states ``request`` was let go with in this process (its token's), or None."""
        given = self._given.get(weakref.ref(request))
        return given.token.judged if given is not None and isinstance(given.token, Token) else None

    def awaited(self, request: Request, origin: str, now: float) -> Awaited | None:
        """For a held request being released: what it still waits for, or None (send it on:
        it goes, with its token). One the documents it waited for refuse is dropped here as
        the gate drops it (``refuse`` raises ``IgnoreRequest``), not sent on to be judged
        again."""
        decision = self.decide(request, origin, now, "release")
        if isinstance(decision, Drop):
            self._judge.refuse(request, decision.why, "before_schedule")
        return decision.awaited if isinstance(decision, Wait) else None

    # -- why the room lets waiting requests go (asked on its tick and at the close) ----------

    def given_up(self, origin: str) -> tuple[DropReason, str] | None:
        """Why the crawl may stop waiting for ``origin`` now, with the reason its drops get:
        its robots.txt keeps failing (``gave_up``), or it stays paused (``pause_gave_up``)."""
        if (why := self._resolver.given_up(origin)) is not None:
            return "gave_up", why
        why = self._pauses.given_up(origin)
        return None if why is None else ("pause_gave_up", why)

    def deadline(self, origin: str, now: float) -> float:
        """Requests of ``origin`` waiting since this or before have waited REP_HOLD_TIMEOUT. A
        robots.txt fetch in flight that began while one still had time to wait is waited for:
        it may answer, and dropping it first would leave the crawl to wait for that fetch
        with nothing to do (the engine closes only once it is over)."""
        started = self._resolver.fetch_started(origin)
        return (now if started is None else min(now, started)) - self._timeout

    def timed_out(self, origin: str, waited_for: set[str]) -> tuple[DropReason, str]:
        """Why requests of ``origin`` that waited for ``waited_for`` (``Awaited.name``s) are
        let go at REP_HOLD_TIMEOUT (``deadline``)."""
        timeout = f"REP_HOLD_TIMEOUT={self._timeout:g}s"
        if (paused := self._pauses.why(origin)) is not None:
            why = f"its pages asked to slow down ({paused}) for longer than {timeout}"
        elif documents := sorted(waited_for - {self._resolver.name, self._pauses.name}):
            why = f"its {' and '.join(documents)} could not be fetched within {timeout}"
        else:
            state = self._resolver.peek(origin)
            error = (state.entry.error if state else None) or "no answer yet"
            why = f"its robots.txt could not be fetched within {timeout} ({error})"
        return "hold_timeout", why

    def closing(self, origin: str, awaited: Awaited | None = None) -> Why:
        """Why a request of ``origin`` waiting for ``awaited`` (robots.txt if None, a pause,
        a place in its download slot) is dropped as the crawl closes."""
        if awaited is not None and awaited is not self._resolver and awaited is not self._pauses:
            what = f"it was waiting for {awaited.name}"
        elif self._pauses.why(origin) is not None:
            what = "it was paused (its pages asked to slow down)"
        else:
            what = "its robots.txt was not known"
        return Why("closing", f"{origin}: {what} when the crawl closed", origin)
