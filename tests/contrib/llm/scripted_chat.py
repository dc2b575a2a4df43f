"""A scripted llm chat model: the test sets its replies and reads every prompt it got.

Registered through llm's own plugin hook (``register_models`` on ``llm.pm``), so the
selector finds it exactly as it finds an installed model; nothing touches the network.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass, field

import llm


@dataclass(frozen=True)
class Received:
    """One prompt a scripted model was given, and the thread it ran on."""

    prompt: str
    system: str | None
    attachments: int
    asynchronous: bool
    thread: int


@dataclass
class Script:
    """Replies handed out in order (the last one repeats); an exception is raised instead
    of replying. ``received`` lists every prompt, in the order the models got them."""

    replies: list[str | Exception] = field(default_factory=lambda: ["[]"])
    received: list[Received] = field(default_factory=list)

    def reply_with(self, *replies: str | Exception) -> None:
        """Set the next replies (the last one repeats)."""
        self.replies = list(replies)

    def answer(self, prompt: llm.Prompt, *, asynchronous: bool) -> str:
        """Record ``prompt`` and return (or raise) the next reply."""
        self.received.append(
            Received(
                prompt=prompt.prompt,
                system=prompt.system,
                attachments=len(prompt.attachments),
                asynchronous=asynchronous,
                thread=threading.get_ident(),
            )
        )
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        return reply

    @property
    def last(self) -> Received:
        """The latest prompt received."""
        return self.received[-1]


class ScriptedChat(llm.Model):
    """A synchronous chat model that answers from its script."""

    can_stream = False

    def __init__(self, script: Script, model_id: str = "scripted") -> None:
        self.script = script
        self.model_id = model_id

    def execute(
        self,
        prompt: llm.Prompt,
        stream: bool,
        response: llm.Response,
        conversation: llm.Conversation | None,
    ) -> Iterator[str]:
        """The script's next reply, in one chunk."""
        yield self.script.answer(prompt, asynchronous=False)


class AsyncScriptedChat(llm.AsyncModel):
    """The asynchronous twin of :class:`ScriptedChat`, on the same script."""

    can_stream = False

    def __init__(self, script: Script, model_id: str = "scripted") -> None:
        self.script = script
        self.model_id = model_id

    async def execute(
        self,
        prompt: llm.Prompt,
        stream: bool,
        response: llm.AsyncResponse,
        conversation: llm.AsyncConversation | None,
    ) -> AsyncGenerator[str, None]:
        """The script's next reply, in one chunk."""
        yield self.script.answer(prompt, asynchronous=True)


class ScriptedPlugin:
    """An llm plugin registering ``scripted`` (sync and async, alias ``scripted-alias``)
    and ``scripted-sync`` (sync only), both answering from ``script``."""

    def __init__(self, script: Script) -> None:
        self.script = script

    @llm.hookimpl
    def register_models(self, register: Callable[..., None]) -> None:
        """Register the scripted models with llm."""
        register(
            ScriptedChat(self.script), AsyncScriptedChat(self.script), aliases=["scripted-alias"]
        )
        register(ScriptedChat(self.script, "scripted-sync"))
