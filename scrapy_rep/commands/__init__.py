"""Scrapy commands of scrapy-rep, registered through the ``scrapy.commands`` entry point."""

from typing import Any

#: What every scrapy-rep command runs with: few log lines, a missing spider module is no error,
#: and no port of its own opened (it explains or checks; it does not crawl).
QUIET_SETTINGS: dict[str, Any] = {
    "LOG_LEVEL": "WARNING",
    "SPIDER_LOADER_WARN_ONLY": True,
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
}
