"""The Scrapy side: the components a project enables (each module named for the component it
holds) and the private parts they are built from. Depends on ``core`` and ``storage``."""
