"""tempr as an MCP server: the tools an agent uses to remember, recall and reflect.

The tools are written once, over `AsyncTemprClient`, so both ways of serving them speak to tempr
through its public HTTP API, with the same validation and errors as any other client:

- `tempr mcp --bank B --url URL` serves them over stdio, the client pointed at a running server;
- `mount_mcp(app)` serves them at `/mcp` (streamable HTTP) inside the API itself, the client
  talking to that same app in-process through `httpx.ASGITransport`. In-process rather than the
  server's own URL because the app does not know the address it is reached at (bind address,
  proxies, ports chosen at run time), a request to itself over the network could exhaust the
  server's connections under load, and there is nothing to retry: a failure is the app's answer.

A bank is either a tool argument or fixed for the whole server (`bank=`): then the argument is
absent from every tool's schema, so an agent cannot wander into another bank by accident.
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar
from uuid import UUID

import httpx
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AwareDatetime, BaseModel, Field

from tempr import __version__
from tempr.client import AsyncTemprClient, TemprAPIError
from tempr.schemas.api import BankStats, DocumentDeleted, EntityPage
from tempr.schemas.banks import Bank, BankPage, Disposition
from tempr.schemas.lifecycle import CorrectionAccepted, ForgetResponse
from tempr.schemas.recall import FactType
from tempr.schemas.reflect import ReflectResponse

if TYPE_CHECKING:  # the stdio server (`tempr mcp`, the `cli` extra) runs without FastAPI
    from fastapi import FastAPI

__all__ = [
    "FORWARDED_AUTHORIZATION",
    "MCP_PATH",
    "TemprTools",
    "build_mcp_server",
    "mcp_lifespan",
    "mount_mcp",
]

MCP_PATH = "/mcp"
T = TypeVar("T")

INSTRUCTIONS = (
    "tempr is your long-term memory. Before answering anything that may depend on earlier "
    "conversations, call recall. After a turn that contains something worth remembering (facts "
    "about people, plans, preferences, events, decisions), call retain. For a considered answer "
    "or judgement drawn from everything remembered, call reflect."
)

BankArg = Annotated[str, Field(description="The memory bank (e.g. one per user or per agent).")]
Budget = Literal["low", "mid", "high"]


class Retained(BaseModel):
    bank_id: str
    accepted: int
    consistency_token: str = Field(
        description="Pass as recall's `after` to be sure the recall sees this memory."
    )


class RecalledFact(BaseModel):
    id: UUID
    text: str
    fact_type: str
    occurred_start: datetime | None
    occurred_end: datetime | None
    mentioned_at: datetime | None
    source_message_ids: list[str]


class Recalled(BaseModel):
    bank_id: str
    facts: list[RecalledFact] = Field(description="Best first.")
    tokens_used: int


def _describe(detail: Any) -> str:
    """The server's message; a validation error as `field: problem` pairs."""
    if isinstance(detail, list):
        return "; ".join(
            f"{'.'.join(str(p) for p in item.get('loc', ())[1:])}: {item.get('msg')}"
            if isinstance(item, dict)
            else str(item)
            for item in detail
        )
    return str(detail)


class TemprTools:
    """Each public coroutine is one MCP tool; its docstring tells an agent when to call it."""

    def __init__(self, client: AsyncTemprClient, url: str) -> None:
        self.client = client
        self.url = url

    async def _ask(self, call: Awaitable[T]) -> T:
        try:
            return await call
        except TemprAPIError as exc:
            raise ToolError(f"tempr refused ({exc.status_code}): {_describe(exc.detail)}") from exc
        except httpx.HTTPError as exc:
            raise ToolError(f"cannot reach tempr at {self.url}: {exc}") from exc

    async def retain(
        self,
        bank: BankArg,
        content: Annotated[str, Field(description="What to remember, in plain words.")],
        speaker: Annotated[str | None, Field(description="Who said or wrote it.")] = None,
        timestamp: Annotated[AwareDatetime | None, Field(description="When it was said (ISO 8601).")] = None,
        conversation_id: Annotated[str | None, Field(description="Groups turns of one conversation.")] = None,
        message_id: Annotated[
            str | None, Field(description="The source's id; the same id twice is stored once.")
        ] = None,
        context: Annotated[str | None, Field(description="Where this comes from (e.g. 'chat').")] = None,
        document_id: Annotated[
            str | None, Field(description="Replaces what was stored under this id before.")
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Labels to filter recall by.")] = None,
    ) -> Retained:
        """Store something worth remembering: facts about people, plans, preferences, events,
        decisions. Call it after a turn that contains such information (one call per message;
        include the speaker and time when known). Memories become searchable within seconds; to
        read your own write at once, pass the returned consistency_token to recall as `after`."""
        fields = {
            "speaker": speaker,
            "timestamp": timestamp,
            "conversation_id": conversation_id,
            "message_id": message_id,
            "context": context,
            "document_id": document_id,
            "tags": tags,
        }
        out = await self._ask(
            self.client.retain(bank, content, **{k: v for k, v in fields.items() if v is not None})
        )
        return Retained(bank_id=out.bank_id, accepted=out.accepted, consistency_token=out.consistency.token)

    async def recall(
        self,
        bank: BankArg,
        query: Annotated[str, Field(description="What you want to know, as a question or keywords.")],
        max_tokens: Annotated[int, Field(ge=1, le=100_000, description="Token budget of the facts.")] = 2048,
        budget: Annotated[
            Budget, Field(description="Search depth: low is fastest, high most thorough.")
        ] = "mid",
        types: Annotated[
            list[FactType] | None, Field(description="Only these fact types (default: all).")
        ] = None,
        query_timestamp: Annotated[
            AwareDatetime | None, Field(description="'Now' for relative times such as 'last week'.")
        ] = None,
        after: Annotated[
            str | None, Field(description="A consistency_token from retain: wait until it is stored.")
        ] = None,
    ) -> Recalled:
        """Search long-term memory. Call recall before answering anything that may depend on
        earlier conversations: who someone is, what they said, like, plan or did, and when.
        Returns the most relevant facts, best first, with their dates and source messages."""
        out = await self._ask(
            self.client.recall(
                bank, query, max_tokens=max_tokens, budget=budget, types=types,
                query_timestamp=query_timestamp, after=after,
            )
        )  # fmt: skip
        facts = [RecalledFact.model_validate(r.model_dump()) for r in out.results]
        return Recalled(bank_id=out.bank_id, facts=facts, tokens_used=out.tokens_used)

    async def reflect(
        self,
        bank: BankArg,
        query: Annotated[str, Field(description="The question or topic to think about.")],
        context: Annotated[str | None, Field(description="Extra context for this question only.")] = None,
        budget: Annotated[Budget | None, Field(description="Recall depth (default: the bank's).")] = None,
        response_schema: Annotated[
            dict[str, Any] | None, Field(description="A JSON schema for a structured answer.")
        ] = None,
        query_timestamp: Annotated[AwareDatetime | None, Field(description="'Now' for the recall.")] = None,
        after: Annotated[
            str | None, Field(description="A consistency_token from retain: wait until it is stored.")
        ] = None,
    ) -> ReflectResponse:
        """Think over everything the bank remembers and answer in its own voice, with the facts the
        answer rests on; may form opinions that are kept for later. Use it for judgements, advice,
        summaries or questions that need reasoning across many memories; for looking up facts,
        recall is faster. Needs an LLM configured on the server."""
        options = {"context": context, "budget": budget, "response_schema": response_schema, "after": after}
        return await self._ask(self.client.reflect(bank, query, query_timestamp=query_timestamp, **options))

    async def list_banks(
        self,
        limit: Annotated[int, Field(ge=1, le=1000)] = 100,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> BankPage:
        """List the memory banks that have a profile, with their names and backgrounds. Use it to
        find which bank holds the memories you need."""
        return await self._ask(self.client.banks(limit=limit, offset=offset))

    async def create_bank(
        self,
        bank: BankArg,
        name: Annotated[str | None, Field(description="A display name (default: the bank id).")] = None,
        background: Annotated[str, Field(description="First person: who I am, what I do.")] = "",
        disposition: Annotated[
            Disposition | None, Field(description="Traits that shape reflect's opinions.")
        ] = None,
    ) -> Bank:
        """Give a bank its identity: name, background and disposition, which reflect answers from.
        Call it once when setting up a new agent or user. If the bank exists its whole profile is
        replaced (what it remembers is kept). Retaining into a bank does not require this."""
        profile: dict[str, Any] = {"name": name, "background": background, "disposition": disposition}
        return await self._ask(
            self.client.put_bank(bank, {k: v for k, v in profile.items() if v is not None})
        )

    async def get_bank(self, bank: BankArg) -> Bank:
        """Read a bank's profile: name, background, disposition and configuration."""
        return await self._ask(self.client.bank(bank))

    async def bank_stats(self, bank: BankArg) -> BankStats:
        """How much a bank remembers: facts by type, entities, links, documents, and messages
        accepted but not yet stored. Use it to check that memories arrived."""
        return await self._ask(self.client.stats(bank))

    async def list_entities(
        self,
        bank: BankArg,
        limit: Annotated[int, Field(ge=1, le=1000)] = 50,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> EntityPage:
        """List the people, places, organisations and things a bank knows about, most mentioned
        first, with their aliases. Use it to see who and what is remembered."""
        return await self._ask(self.client.entities(bank, limit=limit, offset=offset))

    async def delete_document(
        self,
        bank: BankArg,
        document_id: Annotated[str, Field(description="The document_id it was retained with.")],
    ) -> DocumentDeleted:
        """Forget a document: everything retained with this document_id and the facts made from it.
        Use it when the user asks to forget something or a document was withdrawn."""
        return await self._ask(self.client.delete_document(bank, document_id))

    async def forget(
        self,
        bank: BankArg,
        memory_id: Annotated[str | None, Field(description="A fact's id, as recall returned it.")] = None,
        message_id: Annotated[
            str | None, Field(description="A message's id: it goes with every fact made from it.")
        ] = None,
    ) -> ForgetResponse:
        """Forget for good, when the user asks you to forget something ("forget what I told you
        about X") or a memory must not be kept: give a fact's id (from recall) to drop that fact,
        or a message's id to drop the message and everything learned from it. Forgotten things
        never come back, not even if the same message is sent again. To fix a wrong fact instead,
        use correct."""
        if (memory_id is None) == (message_id is None):
            raise ToolError("give exactly one of memory_id or message_id")
        if memory_id is not None:
            return await self._ask(self.client.forget_memory(bank, memory_id))
        return await self._ask(self.client.forget_message(bank, message_id or ""))

    async def correct(
        self,
        bank: BankArg,
        memory_id: Annotated[str, Field(description="The fact's id, as recall returned it.")],
        text: Annotated[str | None, Field(description="The fact as it should read.")] = None,
        occurred_start: Annotated[AwareDatetime | None, Field(description="When it began.")] = None,
        occurred_end: Annotated[AwareDatetime | None, Field(description="When it ended.")] = None,
        reason: Annotated[str, Field(description="Why, kept with the old version.")] = "",
    ) -> CorrectionAccepted:
        """Correct a remembered fact that is wrong or out of date (the user says "no, it was
        Porto, not Lisbon", or a date was misread): give its id from recall and the corrected
        text or dates. The old version is kept in the fact's history. Pass the returned
        consistency token to recall as `after` to see the correction at once."""
        changes = {"text": text, "occurred_start": occurred_start, "occurred_end": occurred_end}
        given = {k: v for k, v in changes.items() if v is not None}
        if not given:
            raise ToolError("give text, occurred_start or occurred_end")
        return await self._ask(self.client.correct_memory(bank, memory_id, reason=reason, **given))

    def all(self) -> list[Callable[..., Awaitable[Any]]]:
        return [
            self.retain,
            self.recall,
            self.reflect,
            self.list_banks,
            self.create_bank,
            self.get_bank,
            self.bank_stats,
            self.list_entities,
            self.delete_document,
            self.forget,
            self.correct,
        ]


def _with_bank(tool: Callable[..., Awaitable[Any]], bank: str) -> Callable[..., Awaitable[Any]]:
    """The tool with `bank` fixed and gone from its signature (hence from its input schema)."""
    signature = inspect.signature(tool, eval_str=True)
    if "bank" not in signature.parameters:
        return tool

    async def fixed(**arguments: Any) -> Any:
        return await tool(bank=bank, **arguments)

    fixed.__name__ = tool.__name__
    fixed.__doc__ = tool.__doc__
    fixed.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for p in signature.parameters.values() if p.name != "bank"]
    )
    return fixed


def build_mcp_server(
    client: AsyncTemprClient, *, url: str, bank: str | None = None, log_level: str = "INFO"
) -> MCPServer:
    """An MCP server whose tools call tempr through `client` (closed when the server stops)."""

    @asynccontextmanager
    async def close_client(_: MCPServer) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            await client.aclose()

    instructions = INSTRUCTIONS + (f" Every tool works on the bank {bank!r}." if bank else "")
    server = MCPServer(
        "tempr",
        instructions=instructions,
        version=__version__,
        lifespan=close_client,
        log_level=log_level,  # type: ignore[arg-type]
    )
    tools = TemprTools(client, url)
    for tool in tools.all():
        server.add_tool(_with_bank(tool, bank) if bank else tool)
    return server


# Set by `recall_api.auth.McpAuth` for the duration of an `/mcp` request. Here rather than in
# auth.py so that `tempr mcp` (stdio) imports nothing of the server.
FORWARDED_AUTHORIZATION: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "tempr_forwarded_authorization", default=None
)


class _CallersKey(httpx.Auth):
    """Each in-process call carries the key of the `/mcp` request it serves (set by
    `recall_api.auth.McpAuth`), so the route it calls checks the caller's scopes and banks."""

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        forwarded = FORWARDED_AUTHORIZATION.get()
        if forwarded:
            request.headers["Authorization"] = forwarded
        yield request


def mount_mcp(app: FastAPI, *, host: str, bank: str | None = None) -> MCPServer:
    """Serve the tools at `/mcp` in `app`; `mcp_lifespan(app)` must run inside the app's lifespan.

    Stateless streamable HTTP: no session outlives a request, so any API replica can answer any
    call, and tempr's tools need no server-to-client messages. `host` is the bind address: on a
    loopback address the SDK refuses other Host/Origin headers (DNS-rebinding protection).
    """
    # raise_app_exceptions=False: a crash in a route reaches the agent as the 500 any client sees.
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    client = AsyncTemprClient(
        "http://localhost",  # a loopback Host: the REST guards let it through
        transport=transport,
        max_retries=0,
        timeout=300,
        api_key="",  # never the server's own $TEMPR_API_KEY: the caller's key is forwarded
        auth=_CallersKey(),
    )
    server = build_mcp_server(client, url="this API (in-process)", bank=bank)
    sub_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True, host=host
    )
    # The route itself, not a Mount: it answers at exactly `/mcp`, and every other path keeps
    # FastAPI's JSON 404.
    app.router.routes.extend(sub_app.routes)
    app.state.mcp = server
    return server


@asynccontextmanager
async def mcp_lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Runs the MCP session manager (its task group) for as long as the app serves."""
    server: MCPServer | None = getattr(app.state, "mcp", None)
    if server is None:
        yield
        return
    async with server.session_manager.run():
        yield
