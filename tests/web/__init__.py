"""The web stage: the providers, the fake provider server, fetching and reading pages, ranking."""
