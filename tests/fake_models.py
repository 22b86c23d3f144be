"""Fake ``llm`` models with canned replies, registered through llm's ``register_models`` hook.

No network, no real keys. Each model id is a behaviour:

- ``dbrain-fake``: reads the evidence keys from the prompt and answers with a supported sentence
  citing the first brain row, a sentence citing the first web row (if any), a sentence citing an
  invented key, a sentence with no citation, a sentence whose words its cited row does not hold,
  and two conflicts (one citing two keys, one citing a single key). It streams in pieces.
- ``dbrain-fake-error``: raises an error whose message holds the key (as some APIs do).
- ``dbrain-fake-slow``: never finishes within a short timeout.
- ``dbrain-fake-empty``: replies with nothing.
- ``dbrain-fake-pro``: directs a deep run (``strategy=pro``): each step prompt gets the next
  reply of ``FakeAsync.steps`` (a test's script; a ``stop`` step once it runs out); a claims
  prompt gets claims citing the first brain row and web rows, one citing an invented key and one
  citing none, and on the repair turn only the first two.
- ``dbrain-fake-pro-stubborn``: as ``dbrain-fake-pro``, but its repair repeats its mistakes.
- ``dbrain-fake-key``: needs a key; answers with the first brain row's text and records the key
  (``FakeKeyModelAsync.keys_seen``) so tests can prove the configured key reached it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ClassVar

import llm

INVENTED = "src:ffffffffffff"
KEY_ENV = "DBRAIN_FAKE_LLM_KEY"
EVIDENCE = re.compile(
    r"^\[(\S+)\] (FROM THE USER'S BRAIN|OUTSIDE THE USER'S BRAIN)[^\n]*\n([^\n]*)", re.M
)


def blocks(prompt: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(key, first text line) of the brain blocks and of the web blocks, in prompt order."""
    local, web = [], []
    for key, where, text in EVIDENCE.findall(prompt):
        (local if where.startswith("FROM") else web).append((key, text))
    return local, web


def canned_reply(prompt: str) -> str:
    local, web = blocks(prompt)
    lines = []
    if local:
        key, text = local[0]
        lines.append(f"{first_sentence(text)} [{key}]")
    if web:
        key, text = web[0]
        lines.append(f"{first_sentence(text)} [{key}]")
    lines.append(f"This claim rests on a page nobody retrieved [{INVENTED}].")
    lines.append("The moon is made of green cheese and nobody disputes it.")
    if local:
        lines.append(f"Penguins migrate across volcanic glaciers every winter [{local[0][0]}].")
    lines.append("CONFLICTS:")
    if local and web:
        lines.append(
            f"- The brain and the web disagree about the numbers [{local[0][0]}] [{web[0][0]}]"
        )
    if local:
        lines.append(f"- A disagreement with one source only [{local[0][0]}]")
    return "\n".join(lines)


STEP = "dbrain_websearch.step.v1"
REPAIR = "Your previous reply had these problems"


def step(action: str, **fields: str) -> str:
    """A step reply as the model writes it."""
    return json.dumps({"schema": STEP, "action": action, **fields})


def claims_reply(prompt: str, repaired: bool) -> str:
    """Claims bound to keys: the first brain row's and first three web rows' first
    sentences and, unless
    repaired, a claim citing an invented key and one citing none."""
    local, web = blocks(prompt)
    claims = [{"text": first_sentence(t), "keys": [k]} for k, t in [*local[:1], *web[:3]]]
    if not repaired:
        claims.append({"text": "A page nobody retrieved says so.", "keys": [INVENTED]})
        claims.append({"text": "The moon is made of green cheese.", "keys": []})
    return json.dumps({"schema": "dbrain_websearch.claims.v1", "claims": claims, "conflicts": []})


def first_sentence(text: str) -> str:
    sentence = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    return sentence.rstrip(".") + "."


def pieces(text: str, size: int = 40) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


class _Sync(llm.Model):
    can_stream = True

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id

    def execute(self, prompt, stream, response, conversation=None):
        yield "sync models are not used by the plugin"


class FakeAsync(llm.AsyncModel):
    can_stream = True
    # dbrain-fake-pro's replies to step prompts, in order: a reply, or a function of the prompt.
    steps: ClassVar[list[str | Callable[[str], str]]] = []
    calls: ClassVar[list[str]] = []  # "step" or "claims" per prompt a pro model was sent

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id

    async def execute(self, prompt, stream, response, conversation=None):
        behaviour = self.model_id.removeprefix("dbrain-fake").lstrip("-")
        if behaviour == "error":  # like an API that echoes the key it refused
            raise RuntimeError(f"Incorrect API key provided: {os.environ.get(KEY_ENV, '')}")
        if behaviour == "slow":
            yield "Starting "
            await asyncio.sleep(30)
        if behaviour == "empty":
            return
        if behaviour.startswith("pro"):
            yield self.pro_reply(behaviour, prompt.system or "", prompt.prompt)
            return
        for piece in pieces(canned_reply(prompt.prompt)):
            yield piece

    @staticmethod
    def pro_reply(behaviour: str, system: str, prompt: str) -> str:
        if STEP in system:
            FakeAsync.calls.append("step")
            if not FakeAsync.steps:
                return step("stop", why="done")
            reply = FakeAsync.steps.pop(0)
            return reply(prompt) if callable(reply) else reply
        FakeAsync.calls.append("claims")
        return claims_reply(prompt, REPAIR in prompt and behaviour == "pro")


class FakeKeyModelAsync(llm.AsyncKeyModel):
    model_id = "dbrain-fake-key"
    needs_key = "dbrain-fake"
    key_env_var = "DBRAIN_FAKE_LLM_KEY_UNSET"
    can_stream = True
    keys_seen: ClassVar[list[str]] = []

    async def execute(self, prompt, stream, response, conversation, key):
        FakeKeyModelAsync.keys_seen.append(key)
        local, _ = blocks(prompt.prompt)
        text = f"{first_sentence(local[0][1])} [{local[0][0]}]" if local else "Nothing here."
        yield f"{text} The key was {key}."


class FakeKeyModel(llm.KeyModel):
    model_id = "dbrain-fake-key"
    needs_key = "dbrain-fake"
    key_env_var = "DBRAIN_FAKE_LLM_KEY_UNSET"

    def execute(self, prompt, stream, response, conversation, key):
        yield "sync models are not used by the plugin"


MODEL_IDS = (
    "dbrain-fake",
    "dbrain-fake-error",
    "dbrain-fake-slow",
    "dbrain-fake-empty",
    "dbrain-fake-pro",
    "dbrain-fake-pro-stubborn",
)


class FakeModels:
    __name__ = "dbrain-fake-models"

    @llm.hookimpl
    def register_models(self, register):
        for model_id in MODEL_IDS:
            register(_Sync(model_id), FakeAsync(model_id))
        register(FakeKeyModel(), FakeKeyModelAsync())


@contextmanager
def fake_models() -> Iterator[None]:
    """The fake models, registered for the duration of a test."""
    plugin = FakeModels()
    llm.plugins.pm.register(plugin, name=plugin.__name__)
    FakeKeyModelAsync.keys_seen = []
    FakeAsync.steps, FakeAsync.calls = [], []
    try:
        yield
    finally:
        llm.plugins.pm.unregister(name=plugin.__name__)
