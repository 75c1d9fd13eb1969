"""The pure robots.txt core: parsing, matching, scope, fetch policy, page rules, usage
preferences and explanations. Imports neither Scrapy nor Twisted (an import contract checks it)."""
