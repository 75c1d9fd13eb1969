"""The scrapy-rep example project: ``scrapy crawl demo``."""
