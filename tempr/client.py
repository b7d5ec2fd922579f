"""Python client for the tempr API, sync (`TemprClient`) and async (`AsyncTemprClient`).

Typed with the API's own pydantic models; an error answer raises `TemprAPIError` carrying the
server's message; the API key is `api_key=` or $TEMPR_API_KEY; 429, 502, 503 and connection failures are retried with exponential backoff
(honouring Retry-After); other errors, 501 "no LLM configured" among them, are raised at once.
Every call is described once, as a `_Call`, and both clients send it.

    with TemprClient("http://127.0.0.1:8000") as tempr:
        token = tempr.retain("alice", "I moved to Lisbon in May.", speaker="Alice").consistency.token
        for fact in tempr.recall("alice", "Where does Alice live?", after=token).results:
            print(fact.text)
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any, Generic, TypeVar
from uuid import UUID

import httpx
from pydantic import BaseModel, TypeAdapter

from tempr.errors import TemprError
from tempr.schemas.api import (
    BankStats,
    DeadLetterOut,
    DocumentDeleted,
    DocumentPage,
    EntityDetail,
    EntityPage,
    Health,
    MemoryPage,
    RetainItem,
    RetainResponse,
)
from tempr.schemas.bank_export import ImportResult
from tempr.schemas.banks import Bank, BankDeletedOut, BankIn, BankPage, BankPatch
from tempr.schemas.lifecycle import CorrectionAccepted, ForgetResponse, MemoryDetail, MemoryPatch
from tempr.schemas.operations import BankReplayResponse, DeadLetterReplayed
from tempr.schemas.recall import RecallResponse
from tempr.schemas.reflect import Opinion, OpinionPage, ReflectResponse

__all__ = ["AsyncTemprClient", "TemprAPIError", "TemprClient", "api_key_headers"]

M = TypeVar("M", bound=BaseModel)
_RETRY_STATUS = {429, 502, 503}
# Answers that are not one model (a bare JSON list) are validated through an adapter.
_DEAD_LETTERS: TypeAdapter[list[DeadLetterOut]] = TypeAdapter(list[DeadLetterOut])


class TemprAPIError(TemprError):
    """The server answered with an error; `detail` is its message."""

    def __init__(self, status_code: int, detail: Any) -> None:
        self.status_code = status_code
        self.detail = detail
        super().__init__(f"HTTP {status_code}: {detail}")


@dataclass(frozen=True)
class _Call(Generic[M]):
    method: str
    path: str
    model: type[M] | TypeAdapter[Any]
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)


def _parse(call: _Call[M], response: httpx.Response) -> M:
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        raise TemprAPIError(response.status_code, detail)
    if isinstance(call.model, TypeAdapter):
        return call.model.validate_python(response.json())
    return call.model.model_validate(response.json())


def _delay(attempt: int, response: httpx.Response | None, base: float) -> float:
    retry_after = response.headers.get("retry-after") if response is not None else None
    if retry_after and retry_after.replace(".", "", 1).isdigit():
        return min(float(retry_after), 30.0)
    return min(base * 2**attempt, 10.0) * random.uniform(0.5, 1.0)


@dataclass(frozen=True)
class _Retry:
    """When to try a call again and how long to wait: one rule for both clients."""

    max_retries: int
    backoff_s: float

    def again(self, attempt: int, response: httpx.Response | None) -> bool:
        """`response` None means the request failed in transport."""
        if attempt >= self.max_retries:
            return False
        return response is None or response.status_code in _RETRY_STATUS

    def pause(self, attempt: int, response: httpx.Response | None) -> float:
        return _delay(attempt, response, self.backoff_s)


def _retain_call(bank: str, items: str | RetainItem | list[RetainItem] | list[dict], kw: dict) -> _Call:
    if isinstance(items, str):
        items = [RetainItem(content=items, **kw)]
    elif isinstance(items, RetainItem):
        items = [items]
    payload = [
        i.model_dump(mode="json", exclude_none=True) if isinstance(i, RetainItem) else i for i in items
    ]
    return _Call("POST", f"/v1/banks/{bank}/memories", RetainResponse, json={"items": payload})


def _recall_call(bank: str, query: str, options: dict[str, Any]) -> _Call:
    body = _json_body({"query": query, **options})
    return _Call("POST", f"/v1/banks/{bank}/recall", RecallResponse, json=body)


def _json_body(options: dict[str, Any]) -> dict[str, Any]:
    """Unset options left out (the server's defaults apply), datetimes as ISO text."""
    body = {k: v for k, v in options.items() if v is not None}
    for key, value in body.items():
        if hasattr(value, "isoformat"):
            body[key] = value.isoformat()
    return body


def _profile(model: type[BaseModel], profile: BaseModel | dict | None, fields: dict[str, Any]) -> dict:
    """A bank profile or patch from a model, a dict or keyword fields, validated before sending."""
    merged = profile.model_dump(exclude_unset=True) if isinstance(profile, BaseModel) else dict(profile or {})
    merged.update(fields)
    return model.model_validate(merged).model_dump(mode="json", exclude_unset=True)


async def _file_pieces(source: IO[bytes], size: int = 1 << 20) -> AsyncIterator[bytes]:
    while piece := source.read(size):
        yield piece


def api_key_headers(api_key: str | None = None) -> dict[str, str]:
    """`api_key`, else $TEMPR_API_KEY; nothing without either (a server in open mode)."""
    key = api_key if api_key is not None else os.environ.get("TEMPR_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


class _Calls:
    """The API surface, as calls; subclasses decide how a call is sent."""

    def _send(self, call: _Call[M]) -> Any:
        raise NotImplementedError

    def health(self) -> Any:
        return self._send(_Call("GET", "/health", Health))

    def retain(
        self, bank: str, items: str | RetainItem | list[RetainItem] | list[dict], **item_fields: Any
    ) -> Any:
        """Retain one text (with `speaker=`, `timestamp=`, ... as item fields) or a batch of items."""
        return self._send(_retain_call(bank, items, item_fields))

    def recall(self, bank: str, query: str, **options: Any) -> Any:
        """Options as in the API: budget, max_tokens, types, tags, tags_match, query_timestamp,
        time_window, include, trace, after, preset."""
        return self._send(_recall_call(bank, query, options))

    def memories(self, bank: str, *, limit: int = 100, offset: int = 0) -> Any:
        return self._send(
            _Call("GET", f"/v1/banks/{bank}/memories", MemoryPage, params={"limit": limit, "offset": offset})
        )

    def memory(self, bank: str, memory_id: UUID | str) -> Any:
        """One fact with its provenance, entities, links and earlier versions (`MemoryDetail`)."""
        return self._send(_Call("GET", f"/v1/banks/{bank}/memories/{memory_id}", MemoryDetail))

    def forget_memory(self, bank: str, memory_id: UUID | str) -> Any:
        """Forget one fact for good (tombstoned: a replay or an import never brings it back)."""
        return self._send(_Call("DELETE", f"/v1/banks/{bank}/memories/{memory_id}", ForgetResponse))

    def forget_message(self, bank: str, message_id: str) -> Any:
        """Forget a message and every fact made from it; sending it again is refused (409)."""
        return self._send(_Call("DELETE", f"/v1/banks/{bank}/messages/{message_id}", ForgetResponse))

    def forget_conversation(self, bank: str, conversation_id: str) -> Any:
        return self._send(
            _Call("DELETE", f"/v1/banks/{bank}/conversations/{conversation_id}", ForgetResponse)
        )

    def correct_memory(self, bank: str, memory_id: UUID | str, **changes: Any) -> Any:
        """Correct a fact: `text`, `occurred_start`, `occurred_end`, `tags`, `reason`; the answer's
        consistency token makes a recall's `after` wait until it is applied."""
        body = MemoryPatch.model_validate(changes).model_dump(mode="json", exclude_unset=True)
        return self._send(
            _Call("PATCH", f"/v1/banks/{bank}/memories/{memory_id}", CorrectionAccepted, json=body)
        )

    def entities(self, bank: str, *, limit: int = 100, offset: int = 0) -> Any:
        return self._send(
            _Call("GET", f"/v1/banks/{bank}/entities", EntityPage, params={"limit": limit, "offset": offset})
        )

    def entity(self, bank: str, entity_id: UUID | str) -> Any:
        return self._send(_Call("GET", f"/v1/banks/{bank}/entities/{entity_id}", EntityDetail))

    def documents(self, bank: str, *, limit: int = 100, offset: int = 0) -> Any:
        return self._send(
            _Call(
                "GET", f"/v1/banks/{bank}/documents", DocumentPage, params={"limit": limit, "offset": offset}
            )
        )

    def delete_document(self, bank: str, document_id: str) -> Any:
        return self._send(_Call("DELETE", f"/v1/banks/{bank}/documents/{document_id}", DocumentDeleted))

    def stats(self, bank: str) -> Any:
        return self._send(_Call("GET", f"/v1/banks/{bank}/stats", BankStats))

    def reflect(self, bank: str, query: str, **options: Any) -> Any:
        """Answer in the bank's voice from what it remembers. Options as in the API: budget,
        max_tokens, context, response_schema, query_timestamp, form_opinions, after."""
        body = _json_body({"query": query, **options})
        return self._send(_Call("POST", f"/v1/banks/{bank}/reflect", ReflectResponse, json=body))

    def banks(self, *, limit: int = 100, offset: int = 0) -> Any:
        return self._send(_Call("GET", "/v1/banks", BankPage, params={"limit": limit, "offset": offset}))

    def bank(self, bank: str) -> Any:
        return self._send(_Call("GET", f"/v1/banks/{bank}", Bank))

    def put_bank(self, bank: str, profile: BankIn | dict | None = None, **fields: Any) -> Any:
        """Create the bank, or replace its whole profile (name, background, disposition, config);
        its memories are untouched. Fields as `BankIn`, given as a model, a dict or keywords."""
        body = _profile(BankIn, profile, fields)
        return self._send(_Call("PUT", f"/v1/banks/{bank}", Bank, json=body))

    def patch_bank(self, bank: str, patch: BankPatch | dict | None = None, **fields: Any) -> Any:
        """Change only the given fields (`BankPatch`); a new background is merged into the old one."""
        body = _profile(BankPatch, patch, fields)
        return self._send(_Call("PATCH", f"/v1/banks/{bank}", Bank, json=body))

    def delete_bank(self, bank: str) -> Any:
        """Delete the bank with everything it remembers."""
        return self._send(_Call("DELETE", f"/v1/banks/{bank}", BankDeletedOut))

    def opinions(self, bank: str, *, limit: int = 100, offset: int = 0) -> Any:
        return self._send(
            _Call("GET", f"/v1/banks/{bank}/opinions", OpinionPage, params={"limit": limit, "offset": offset})
        )

    def opinion(self, bank: str, opinion_id: UUID | str) -> Any:
        """One opinion with its history of changes."""
        return self._send(_Call("GET", f"/v1/banks/{bank}/opinions/{opinion_id}", Opinion))

    def replay(self, bank: str, *, from_: datetime | str | None = None) -> Any:
        """Rebuild the bank's facts from its stored messages (all, or those accepted at or after
        `from_`, an aware time); the answer counts what was removed and carries a consistency
        token that recall's `after` waits for."""
        body = _json_body({"from": from_}) or None
        return self._send(_Call("POST", f"/v1/banks/{bank}/replay", BankReplayResponse, json=body))

    def dead_letters(self, *, limit: int = 100, offset: int = 0, replayed: bool | None = None) -> Any:
        """Records that failed in the pipeline, newest first (a list of `DeadLetterOut`);
        `replayed` True or False keeps only letters replayed or not yet."""
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if replayed is not None:
            params["replayed"] = replayed
        return self._send(_Call("GET", "/v1/dead-letters", _DEAD_LETTERS, params=params))

    def replay_dead_letter(self, letter_id: UUID | str, *, force: bool = False) -> Any:
        """Publish a failed record again, unchanged, to its topic; a letter replayed before is
        refused (409) unless `force`."""
        return self._send(
            _Call("POST", f"/v1/dead-letters/{letter_id}/replay", DeadLetterReplayed, params={"force": force})
        )


class TemprClient(_Calls):
    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        api_key: str | None = None,
        auth: httpx.Auth | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url,
            timeout=timeout,
            transport=transport,
            headers=api_key_headers(api_key),
            auth=auth,
        )
        self.retry = _Retry(max_retries, backoff_s)

    def _send(self, call: _Call[M]) -> M:
        attempt = 0
        while True:
            try:
                response = self._http.request(call.method, call.path, json=call.json, params=call.params)
            except httpx.TransportError:
                if not self.retry.again(attempt, None):
                    raise
                response = None
            if response is not None and not self.retry.again(attempt, response):
                return _parse(call, response)
            time.sleep(self.retry.pause(attempt, response))
            attempt += 1

    def export_bank(self, bank: str, out: IO[bytes]) -> int:
        """Write the bank's export (JSON lines) to `out` as it streams; returns the bytes written."""
        written = 0
        with self._http.stream("GET", f"/v1/banks/{bank}/export", timeout=None) as response:
            if response.status_code >= 400:
                response.read()
                _parse(_Call("GET", "", ImportResult), response)
            for piece in response.iter_bytes():
                written += out.write(piece)
        return written

    def import_bank(self, bank: str, source: IO[bytes] | bytes) -> ImportResult:
        """Import an export (a binary file, streamed, or bytes) into `bank`; running it again
        changes nothing, and completes an import that was cut."""
        response = self._http.post(
            f"/v1/banks/{bank}/import",
            content=source,
            headers={"content-type": "application/x-ndjson"},
            timeout=None,
        )
        return _parse(_Call("POST", "", ImportResult), response)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> TemprClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncTemprClient(_Calls):
    """Same methods as `TemprClient`, each a coroutine."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
        api_key: str | None = None,
        auth: httpx.Auth | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url,
            timeout=timeout,
            transport=transport,
            headers=api_key_headers(api_key),
            auth=auth,
        )
        self.retry = _Retry(max_retries, backoff_s)

    async def _send(self, call: _Call[M]) -> M:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method, call.path, json=call.json, params=call.params
                )
            except httpx.TransportError:
                if not self.retry.again(attempt, None):
                    raise
                response = None
            if response is not None and not self.retry.again(attempt, response):
                return _parse(call, response)
            await asyncio.sleep(self.retry.pause(attempt, response))
            attempt += 1

    async def export_bank(self, bank: str, out: IO[bytes]) -> int:
        """Write the bank's export (JSON lines) to `out` as it streams; returns the bytes written."""
        written = 0
        async with self._http.stream("GET", f"/v1/banks/{bank}/export", timeout=None) as response:
            if response.status_code >= 400:
                await response.aread()
                _parse(_Call("GET", "", ImportResult), response)
            async for piece in response.aiter_bytes():
                written += out.write(piece)
        return written

    async def import_bank(self, bank: str, source: IO[bytes] | bytes) -> ImportResult:
        """Import an export (a binary file, streamed, or bytes) into `bank`."""
        content = source if isinstance(source, bytes) else _file_pieces(source)
        response = await self._http.post(
            f"/v1/banks/{bank}/import",
            content=content,
            headers={"content-type": "application/x-ndjson"},
            timeout=None,
        )
        return _parse(_Call("POST", "", ImportResult), response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncTemprClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
