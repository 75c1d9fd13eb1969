# Copyright (c) Scrapy developers. All rights reserved.
# BSD-3-Clause: see tests/scrapy_suites/LICENSE.scrapy for the licence's conditions.
# From the Scrapy 2.11.2 sdist (scrapy-2.11.2.tar.gz), tests/test_downloadermiddleware_robotstxt.py, run against
# scrapy-rep's parts; every change is marked "scrapy-rep:".
import logging
from unittest import mock

import pytest

from twisted.internet import error, reactor
from twisted.internet.defer import Deferred, DeferredList, maybeDeferred
from twisted.python import failure
from twisted.trial import unittest

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request, Response, TextResponse
from scrapy.http.request import NO_CALLBACK
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_from_coro

from scrapy_rep import RobotsTxtMiddleware


class RobotsTxtMiddlewareTest(unittest.TestCase):
    def setUp(self):
        self.crawler = mock.MagicMock()
        # scrapy-rep: our middleware fetches robots.txt only with RobotsTxtGuard enabled
        # (scheme check, bounded decompression: docs/spec.md B4); the add-on adds it.
        self.crawler.settings = Settings({"DOWNLOADER_MIDDLEWARES": {"scrapy_rep.RobotsTxtGuard": 950}})
        self.crawler.engine.download = mock.MagicMock()
        # scrapy-rep: a mock has every attribute, the engine of Scrapy 2.11 has no
        # download_async (Scrapy >= 2.14), which our robots.txt fetch prefers.
        del self.crawler.engine.download_async

    def tearDown(self):
        # scrapy-rep: ours keeps timers (REP_HOLD_TIMEOUT expiry, retries of an
        # unreachable origin, SPEC B2) until spider_closed, which a crawl sends and
        # this mock crawler does not: send it, or trial finds the reactor unclean.
        closing = [
            deferred_from_coro(handler(spider=None, reason="finished"))
            for handler, kwargs in (
                (call.args[0], call.kwargs)
                for call in self.crawler.signals.connect.call_args_list
            )
            if kwargs.get("signal") is signals.spider_closed
        ]
        del self.crawler
        return DeferredList(closing, fireOnOneErrback=True)

    def test_robotstxt_settings(self):
        self.crawler.settings = Settings()
        self.crawler.settings.set("USER_AGENT", "CustomAgent")
        self.assertRaises(NotConfigured, RobotsTxtMiddleware.from_crawler, self.crawler)

    def _get_successful_crawler(self):
        crawler = self.crawler
        crawler.settings.set("ROBOTSTXT_OBEY", True)
        ROBOTS = """
User-Agent: *
Disallow: /admin/
Disallow: /static/
# taken from https://en.wikipedia.org/robots.txt
Disallow: /wiki/K%C3%A4ytt%C3%A4j%C3%A4:
Disallow: /wiki/Käyttäjä:
User-Agent: UnicödeBöt
Disallow: /some/randome/page.html
""".encode(
            "utf-8"
        )
        response = TextResponse("http://site.local/robots.txt", body=ROBOTS)

        def return_response(request):
            deferred = Deferred()
            reactor.callFromThread(deferred.callback, response)
            return deferred

        crawler.engine.download.side_effect = return_response
        return crawler

    def test_robotstxt(self):
        middleware = RobotsTxtMiddleware.from_crawler(self._get_successful_crawler())
        return DeferredList(
            [
                # scrapy-rep: ours reads its store (docs/spec.md, "Store and leases")
                # before it fetches robots.txt, so the fetch starts a turn later: the
                # check waits for the first request's answer.
                self.assertNotIgnored(
                    Request("http://site.local/allowed"), middleware
                ).addCallback(lambda _: self.assertRobotsTxtRequested("http://site.local")),
                self.assertIgnored(Request("http://site.local/admin/main"), middleware),
                self.assertIgnored(Request("http://site.local/static/"), middleware),
                self.assertIgnored(
                    Request("http://site.local/wiki/K%C3%A4ytt%C3%A4j%C3%A4:"),
                    middleware,
                ),
                self.assertIgnored(
                    Request("http://site.local/wiki/Käyttäjä:"), middleware
                ),
            ],
            fireOnOneErrback=True,
        )

    def test_robotstxt_ready_parser(self):
        middleware = RobotsTxtMiddleware.from_crawler(self._get_successful_crawler())
        d = self.assertNotIgnored(Request("http://site.local/allowed"), middleware)
        d.addCallback(
            lambda _: self.assertNotIgnored(
                Request("http://site.local/allowed"), middleware
            )
        )
        return d

    def test_robotstxt_meta(self):
        middleware = RobotsTxtMiddleware.from_crawler(self._get_successful_crawler())
        meta = {"dont_obey_robotstxt": True}
        return DeferredList(
            [
                self.assertNotIgnored(
                    Request("http://site.local/allowed", meta=meta), middleware
                ),
                self.assertNotIgnored(
                    Request("http://site.local/admin/main", meta=meta), middleware
                ),
                self.assertNotIgnored(
                    Request("http://site.local/static/", meta=meta), middleware
                ),
            ],
            fireOnOneErrback=True,
        )

    def _get_garbage_crawler(self):
        crawler = self.crawler
        crawler.settings.set("ROBOTSTXT_OBEY", True)
        response = Response(
            "http://site.local/robots.txt", body=b"GIF89a\xd3\x00\xfe\x00\xa2"
        )

        def return_response(request):
            deferred = Deferred()
            reactor.callFromThread(deferred.callback, response)
            return deferred

        crawler.engine.download.side_effect = return_response
        return crawler

    def test_robotstxt_garbage(self):
        # garbage response should be discarded, equal 'allow all'
        middleware = RobotsTxtMiddleware.from_crawler(self._get_garbage_crawler())
        deferred = DeferredList(
            [
                self.assertNotIgnored(Request("http://site.local"), middleware),
                self.assertNotIgnored(Request("http://site.local/allowed"), middleware),
                self.assertNotIgnored(
                    Request("http://site.local/admin/main"), middleware
                ),
                self.assertNotIgnored(Request("http://site.local/static/"), middleware),
            ],
            fireOnOneErrback=True,
        )
        return deferred

    def _get_emptybody_crawler(self):
        crawler = self.crawler
        crawler.settings.set("ROBOTSTXT_OBEY", True)
        response = Response("http://site.local/robots.txt")

        def return_response(request):
            deferred = Deferred()
            reactor.callFromThread(deferred.callback, response)
            return deferred

        crawler.engine.download.side_effect = return_response
        return crawler

    def test_robotstxt_empty_response(self):
        # empty response should equal 'allow all'
        middleware = RobotsTxtMiddleware.from_crawler(self._get_emptybody_crawler())
        return DeferredList(
            [
                self.assertNotIgnored(Request("http://site.local/allowed"), middleware),
                self.assertNotIgnored(
                    Request("http://site.local/admin/main"), middleware
                ),
                self.assertNotIgnored(Request("http://site.local/static/"), middleware),
            ],
            fireOnOneErrback=True,
        )

    def test_robotstxt_error(self):
        self.crawler.settings.set("ROBOTSTXT_OBEY", True)
        err = error.DNSLookupError("Robotstxt address not found")

        def return_failure(request):
            deferred = Deferred()
            reactor.callFromThread(deferred.errback, failure.Failure(err))
            return deferred

        self.crawler.engine.download.side_effect = return_failure

        middleware = RobotsTxtMiddleware.from_crawler(self.crawler)
        # scrapy-rep: SPEC B2 — a DNS failure makes the origin unreachable: its
        # requests are held, not allowed, so the report says so with the error
        # (Scrapy's version checks that its private _logerror was called).
        deferred = middleware.resolve("http://site.local")
        deferred.addCallback(self.assertUnreachable)
        return deferred

    def test_robotstxt_immediate_error(self):
        self.crawler.settings.set("ROBOTSTXT_OBEY", True)
        err = error.DNSLookupError("Robotstxt address not found")

        def immediate_failure(request):
            deferred = Deferred()
            deferred.errback(failure.Failure(err))
            return deferred

        self.crawler.engine.download.side_effect = immediate_failure

        middleware = RobotsTxtMiddleware.from_crawler(self.crawler)
        # scrapy-rep: SPEC B2 — unreachable, held instead of allowed (see above).
        return middleware.resolve("http://site.local").addCallback(self.assertUnreachable)

    def test_ignore_robotstxt_request(self):
        self.crawler.settings.set("ROBOTSTXT_OBEY", True)

        def ignore_request(request):
            deferred = Deferred()
            reactor.callFromThread(deferred.errback, failure.Failure(IgnoreRequest()))
            return deferred

        self.crawler.engine.download.side_effect = ignore_request

        middleware = RobotsTxtMiddleware.from_crawler(self.crawler)
        # scrapy-rep: our middleware's logger is not Scrapy's module logger: any
        # ERROR record from scrapy_rep counts.
        errors = _ErrorRecords()
        logging.getLogger("scrapy_rep").addHandler(errors)

        def stop_listening(result):
            logging.getLogger("scrapy_rep").removeHandler(errors)
            return result

        d = self.assertNotIgnored(Request("http://site.local/allowed"), middleware)
        d.addBoth(stop_listening)
        d.addCallback(lambda _: self.assertEqual(errors.records, []))
        return d

    def test_robotstxt_user_agent_setting(self):
        crawler = self._get_successful_crawler()
        crawler.settings.set("ROBOTSTXT_USER_AGENT", "Examplebot")
        crawler.settings.set("USER_AGENT", "Mozilla/5.0 (X11; Linux x86_64)")
        # scrapy-rep: ours has no process_request_2 to hand a mock parser to; the
        # same check through the rules (SPEC C1): a group for Examplebot only
        # applies if the middleware asks as Examplebot, not as Mozilla.
        crawler.engine.download.side_effect = lambda request: _later(
            TextResponse(request.url, body=b"User-agent: Examplebot\nDisallow: /\n")
        )
        middleware = RobotsTxtMiddleware.from_crawler(crawler)
        return self.assertIgnored(Request("http://site.local/allowed"), middleware)

    def test_robotstxt_local_file(self):
        middleware = RobotsTxtMiddleware.from_crawler(self._get_emptybody_crawler())
        assert not middleware.process_request(
            Request("data:text/plain,Hello World data"), None
        )
        assert not middleware.process_request(
            Request("file:///tests/sample_data/test_site/nothinghere.html"), None
        )
        # scrapy-rep: the Deferred is waited for: ours lets a request still waiting for
        # robots.txt go with IgnoreRequest when the spider closes (tearDown closes it).
        waiting = middleware.process_request(Request("http://site.local/allowed"), None)
        assert isinstance(waiting, Deferred)
        return waiting

    def assertNotIgnored(self, request, middleware):
        spider = None  # not actually used
        dfd = maybeDeferred(middleware.process_request, request, spider)
        dfd.addCallback(self.assertIsNone)
        return dfd

    def assertIgnored(self, request, middleware):
        spider = None  # not actually used
        return self.assertFailure(
            maybeDeferred(middleware.process_request, request, spider), IgnoreRequest
        )

    def assertUnreachable(self, report):
        self.assertEqual(report.outcome, "unreachable")
        self.assertIn("Robotstxt address not found", report.error)

    def assertRobotsTxtRequested(self, base_url):
        calls = self.crawler.engine.download.call_args_list
        request = calls[0][0][0]
        self.assertEqual(request.url, f"{base_url}/robots.txt")
        self.assertEqual(request.callback, NO_CALLBACK)


def _later(response):
    deferred = Deferred()
    reactor.callLater(0, deferred.callback, response)
    return deferred


class _ErrorRecords(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.records = []

    def emit(self, record):
        self.records.append(record)
