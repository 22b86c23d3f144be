"""Research: planning, the lanes, ranking, the judge, the pack and saved runs."""
