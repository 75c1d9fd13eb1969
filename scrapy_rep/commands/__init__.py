"""Scrapy commands of scrapy-rep, registered through the ``scrapy.commands`` entry point."""
