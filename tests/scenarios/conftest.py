from tests.browser import browser, page  # noqa: F401  (fixtures for the browser tests)
