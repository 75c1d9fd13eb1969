"""Settings of the scrapy-rep example project.

The one line that turns scrapy-rep on is ``ADDONS``; the rest is an ordinary,
polite Scrapy project.
"""

import scrapy

BOT_NAME = "example_project"

SPIDER_MODULES = ["example_project.spiders"]
NEWSPIDER_MODULE = "example_project.spiders"

# scrapy-rep: replaces Scrapy's robots.txt middleware, sets ROBOTSTXT_PARSER
# and ROBOTSTXT_OBEY = True (each can still be overridden here).
ADDONS = {"scrapy_rep.Addon": 0}

# A crawler names itself with a product token robots.txt files can address:
# this one obeys "User-agent: scrapy-rep-demo" groups.
USER_AGENT = "scrapy-rep-demo/0.1 (+https://github.com/scrapy-rep/scrapy-rep)"

# Be gentle with real sites (`scrapy crawl demo -a start_url=https://...`).
CONCURRENT_REQUESTS_PER_DOMAIN = 2
DOWNLOAD_DELAY = 0.25
CLOSESPIDER_PAGECOUNT = 30
DOWNLOAD_TIMEOUT = 30

TELNETCONSOLE_ENABLED = False
FEED_EXPORT_ENCODING = "utf-8"

# Scrapy 2.11 warns unless this is set to "2.7"; 2.12 and 2.13 warn when it is set at all
# (newer versions ignore it): set only where it is needed.
if scrapy.version_info < (2, 12):
    REQUEST_FINGERPRINTER_IMPLEMENTATION = "2.7"
