"""Config validation: defaults, bounds, unknown keys."""

import pytest
from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch.config import Settings, parse_web
from datasette_dbrain_websearch.config_keys import CONFIG_KEYS, ConfigError
from datasette_dbrain_websearch.config_reference import reference_markdown

from ..helpers import REPO, make_datasette


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
                "api_key": "sk-answer-7f3e",
                "keep_unsupported": True,
            }
        }
    )
    assert (s.answer.default, s.answer.synthesizer, s.answer.model) == (True, "llm", "gpt-4.1-mini")
    assert "sk-answer-7f3e" in s.secrets() and "sk-answer-7f3e" not in repr(s.answer)
    assert (answer.keep_unsupported, s.answer.keep_unsupported) == (False, True)


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ({"answer": {"synthesizer": "gpt"}}, "'answer.synthesizer' must be one of extractive, llm"),
        ({"answer": {"max_sentences": 0}}, "'answer.max_sentences' must be an integer"),
        ({"answer": {"min_support": 2}}, "'answer.min_support' must be a number"),
        ({"answer": {"model": 4}}, "'answer.model' must be a string"),
        ({"answer": {"keep_unsupported": "no"}}, "'answer.keep_unsupported' must be true or false"),
        ({"answer": {"allow": "alice"}}, "'answer.allow' must be an allow block"),
        ({"answer": {"modle": "x"}}, "unknown config key(s) modle in 'answer'"),
        ({"traces_database": ["runs.db"]}, "'traces_database' must be a string"),
    ],
)
def test_invalid_answer_config_names_the_key(raw, fragment):
    with pytest.raises(ConfigError) as info:
        Settings.from_config(raw)
    assert fragment in str(info.value)


CONFIG_DOCS = REPO / "docs" / "configuration.md"


def test_the_configuration_reference_documents_every_option():
    text = CONFIG_DOCS.read_text()
    for option in CONFIG_KEYS:
        assert f"| `{option.path}` |" in text


def test_the_definitions_are_the_defaults_the_parser_uses():
    assert Settings.from_config(None) == Settings()


def _nested(path: str, value: object) -> dict:
    """``{"a": {"b": value}}`` for ``a.b``; a placeholder segment becomes a real name."""
    keys = [segment.replace("<provider>", "brave") for segment in path.split(".")]
    block: object = value
    for key in reversed(keys):
        block = {key: block}
    return block  # type: ignore[return-value]


CHECKED_BOUNDS = [
    o for o in CONFIG_KEYS if o.checked_by == "config" and o.kind in ("integer", "number")
]
# Bounds that depend on another key: that key is set so only the option under test can fail.
PARTNERS = {
    "default_limit": ("max_limit", 500),
    "max_limit": ("default_limit", 1),
    "external_search.max_count": ("external_search.count", 1),
}


def _config(path: str, value: object) -> dict:
    config = _nested(path, value)
    if path in PARTNERS:
        partner, partner_value = PARTNERS[path]
        top, *rest = partner.split(".")
        if rest:
            config[top][rest[0]] = partner_value
        else:
            config[top] = partner_value
    return config


@pytest.mark.parametrize("option", CHECKED_BOUNDS, ids=lambda o: o.path)
def test_every_bounded_option_accepts_its_limits_and_refuses_beyond(option):
    for value in (option.low, option.high):
        typed = int(value) if option.kind == "integer" else value
        Settings.from_config(_config(option.path, typed))
    with pytest.raises(ConfigError) as info:
        Settings.from_config(_config(option.path, option.high + 1))
    assert option.path.replace("<provider>", "brave") in str(info.value)


def test_config_reference_command_prints_the_table():
    result = CliRunner().invoke(cli, ["dbrain-websearch", "config-reference"])
    assert result.exit_code == 0 and result.output.strip() == reference_markdown()
    assert "| `external_search.count` | integer | 5 |" in result.output


def test_a_provider_without_a_key_takes_dbrains_from_the_environment():
    raw = {"enabled": True, "brave": {"api_key": None, "count": 3}}
    environ = {"DBRAIN_BRAVE_SEARCH_API_KEY": " dbrain-brave ", "DBRAIN_EXA_API_KEY": "dbrain-exa"}
    external = parse_web(raw, environ)
    assert external.options_for("brave") == {"api_key": "dbrain-brave", "count": 3}
    assert external.options_for("exa") == {"api_key": "dbrain-exa"}
    assert sorted(external.secrets()) == ["dbrain-brave", "dbrain-exa"]  # so they are redacted
    # dbrain reads the plain name first, as the plugin's own examples name it.
    both = {"BRAVE_SEARCH_API_KEY": "plain", "DBRAIN_BRAVE_SEARCH_API_KEY": "prefixed"}
    assert parse_web(raw, both).options_for("brave")["api_key"] == "plain"


def test_a_configured_key_wins_over_the_environment():
    raw = {"brave": {"api_key": "from-config"}}
    external = parse_web(raw, {"BRAVE_SEARCH_API_KEY": "from-environment"})
    assert external.options_for("brave")["api_key"] == "from-config"
    assert parse_web({}, {"BRAVE_SEARCH_API_KEY": "  "}).options_for("brave") == {}


def test_dbrains_search_settings_are_defaults_under_the_plugin_config():
    """``DBRAIN_EXTERNAL_SEARCH_MODE``, ``…_PROVIDERS`` (or ``…_PROVIDER``) and ``…_COUNT``
    fill what the block leaves unset, in dbrain's spellings; a key the block sets wins."""
    environ = {
        "DBRAIN_EXTERNAL_SEARCH_MODE": "on_weak_local_evidence",
        "DBRAIN_EXTERNAL_SEARCH_PROVIDER": " exa , brave ",
        "DBRAIN_EXTERNAL_SEARCH_COUNT": "7",
    }
    external = parse_web({}, environ)
    assert (external.default_mode, external.providers, external.count) == (
        "on_weak",
        ("exa", "brave"),
        7,
    )
    assert parse_web({}, {"DBRAIN_EXTERNAL_SEARCH_MODE": "on-weak"}).default_mode == "on_weak"
    plural = {**environ, "DBRAIN_EXTERNAL_SEARCH_PROVIDERS": "searxng"}
    assert parse_web({}, plural).providers == ("searxng",)  # dbrain's own name first
    configured = parse_web({"default_mode": "never", "providers": ["brave"], "count": 3}, environ)
    assert (configured.default_mode, configured.providers, configured.count) == (
        "never",
        ("brave",),
        3,
    )


@pytest.mark.parametrize(
    "variable, value, fragment",
    [
        ("DBRAIN_EXTERNAL_SEARCH_COUNT", "lots", "'external_search.count' (from DBRAIN_"),
        ("DBRAIN_EXTERNAL_SEARCH_COUNT", "11", "must be an integer from 1 to 10"),
        ("DBRAIN_EXTERNAL_SEARCH_MODE", "sometimes", "must be one of never, on_weak, always"),
        ("DBRAIN_EXTERNAL_SEARCH_PROVIDERS", ",", "(from DBRAIN_EXTERNAL_SEARCH_PROVIDERS) must"),
    ],
)
def test_a_bad_dbrain_setting_is_a_config_error_naming_the_variable(variable, value, fragment):
    with pytest.raises(ConfigError) as info:
        parse_web({}, {variable: value})
    assert fragment in str(info.value)
    assert variable in str(info.value)


async def test_a_changed_environment_is_read_by_a_running_datasette(monkeypatch):
    """Settings are cached per config block; dbrain's variables are part of what is cached."""
    ds = make_datasette([], plugin_config={"external_search": {"providers": ["brave", "exa"]}})
    monkeypatch.setenv("DBRAIN_EXTERNAL_SEARCH_COUNT", "4")
    assert Settings.from_datasette(ds).web.count == 4
    monkeypatch.setenv("DBRAIN_EXTERNAL_SEARCH_COUNT", "6")
    monkeypatch.setenv("DBRAIN_EXTERNAL_SEARCH_MODE", "always")
    web = Settings.from_datasette(ds).web
    assert (web.count, web.default_mode, web.providers) == (6, "always", ("brave", "exa"))
    monkeypatch.setenv("DBRAIN_EXTERNAL_SEARCH_COUNT", "0")
    with pytest.raises(ConfigError, match="DBRAIN_EXTERNAL_SEARCH_COUNT"):
        Settings.from_datasette(ds)
