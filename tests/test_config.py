"""Config validation: defaults, bounds, unknown keys."""

import pytest

from datasette_dbrain_websearch.config import ConfigError, Settings


def test_defaults():
    s = Settings.from_config(None)
    assert (s.default_limit, s.max_limit, s.databases) == (10, 50, None)
    assert s.judge.min_evidence == 2


def test_values_are_read():
    s = Settings.from_config(
        {"databases": "brain", "default_limit": 5, "judge": {"min_term_coverage": 1}}
    )
    assert s.databases == ("brain",)
    assert s.default_limit == 5
    assert s.judge.min_term_coverage == 1.0


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ({"limit": 3}, "unknown config key(s) limit"),
        ({"default_limit": 0}, "'default_limit' must be an integer"),
        ({"max_limit": 5, "default_limit": 6}, "'default_limit' must be an integer from 1 to 5"),
        ({"databases": [1]}, "'databases' must be a list"),
        ({"judge": {"min_term_coverage": 2}}, "'judge.min_term_coverage' must be a number"),
        ({"judge": {"typo": 1}}, "unknown config key(s) typo in 'judge'"),
        ({"judge": []}, "'judge' must be a mapping"),
    ],
)
def test_invalid_config_names_the_key(raw, fragment):
    with pytest.raises(ConfigError) as info:
        Settings.from_config(raw)
    assert fragment in str(info.value)
