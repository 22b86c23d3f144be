"""Deep research (depth=deep), the deterministic loop and strategy=pro, over the film brain."""
