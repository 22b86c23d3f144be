"""The HTML pages, through HTTP and in a real browser (headless Chromium)."""
