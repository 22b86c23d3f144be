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


def test_answer_block_defaults_and_values():
    answer = Settings.from_config(None).answer
    assert (answer.default, answer.synthesizer, answer.model) == (False, "extractive", "")
    assert (answer.max_sentences, answer.max_evidence, answer.min_support) == (6, 12, 0.4)
    s = Settings.from_config(
        {
            "answer": {
                "default": True,
                "synthesizer": "llm",
                "model": " gpt-4.1-mini ",
                "api_key": "k",
            }
        }
    )
    assert (s.answer.default, s.answer.synthesizer, s.answer.model) == (True, "llm", "gpt-4.1-mini")
    assert "k" in s.secrets() and "k" not in repr(s.answer)


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ({"answer": {"synthesizer": "gpt"}}, "'answer.synthesizer' must be one of extractive, llm"),
        ({"answer": {"max_sentences": 0}}, "'answer.max_sentences' must be an integer"),
        ({"answer": {"min_support": 2}}, "'answer.min_support' must be a number"),
        ({"answer": {"model": 4}}, "'answer.model' must be a string"),
        ({"answer": {"allow": "alice"}}, "'answer.allow' must be an allow block"),
        ({"answer": {"modle": "x"}}, "unknown config key(s) modle in 'answer'"),
    ],
)
def test_invalid_answer_config_names_the_key(raw, fragment):
    with pytest.raises(ConfigError) as info:
        Settings.from_config(raw)
    assert fragment in str(info.value)
