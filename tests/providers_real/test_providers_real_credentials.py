"""Credential resolver chain: explicit, env mapping, callable, OAuth refresh."""

from __future__ import annotations

import anyio
import pytest

from prism.errors import CredentialError
from prism.security import (
    OAuthToken,
    ResolvedCredential,
    callable_credential,
    create_credential_chain,
    create_oauth_credential,
    env_credential,
    explicit_credential,
    resolve_credential,
)

pytestmark = pytest.mark.anyio

REFRESH_SECRET = "rt-canary-0a9b8c7d6e5f"


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_explicit_value_wins_and_empty_falls_through() -> None:
    found = await resolve_credential(["sk-explicit", env_credential({"K": "sk-env"}, "K")])
    assert (found.value, found.source) == ("sk-explicit", "explicit value")
    found = await resolve_credential(
        [explicit_credential(None), explicit_credential(""), env_credential({"K": "sk-env"}, "K")]
    )
    assert (found.value, found.source) == ("sk-env", "env K")
    assert found.secrets == frozenset({"sk-env"})


async def test_env_mapping_only_never_the_process_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRISM_TEST_ONLY_KEY", "sk-from-os-environ")
    with pytest.raises(CredentialError) as info:
        await resolve_credential(env_credential({}, "PRISM_TEST_ONLY_KEY"), name="demo")
    assert str(info.value) == "no credential for 'demo': tried env PRISM_TEST_ONLY_KEY"
    assert await env_credential(None, "PRISM_TEST_ONLY_KEY").resolve() is None


async def test_env_names_are_tried_in_order_and_whitespace_is_trimmed() -> None:
    env = {"A": "   ", "B": "sk-b\n", "C": "sk-c"}
    found = await resolve_credential(env_credential(env, "A", "B", "C"))
    assert (found.value, found.source) == ("sk-b", "env B")
    assert found.secrets == frozenset({"sk-b", "sk-b\n"})


async def test_env_values_must_be_strings() -> None:
    with pytest.raises(CredentialError, match="env K is not a string"):
        await env_credential({"K": 5}, "K").resolve()  # type: ignore[dict-item]


def test_env_needs_names() -> None:
    with pytest.raises(ValueError, match="at least one variable name"):
        env_credential({})
    with pytest.raises(ValueError, match="non-empty strings"):
        env_credential({}, "")


async def test_callables_sync_and_async() -> None:
    async def fetch() -> str:
        return "sk-async"

    assert (await resolve_credential(callable_credential(lambda: "sk-sync"))).value == "sk-sync"
    assert (await resolve_credential(callable_credential(fetch))).value == "sk-async"
    chain = create_credential_chain(callable_credential(lambda: None), "sk-fallback")
    assert (await resolve_credential(chain)).value == "sk-fallback"


async def test_failing_callable_hides_its_message() -> None:
    def broken() -> str:
        raise RuntimeError("vault said sk-leaky-secret-123 is revoked")

    with pytest.raises(CredentialError) as info:
        await resolve_credential(callable_credential(broken, name="vault"))
    assert str(info.value) == "credential resolver 'vault' failed with RuntimeError"
    assert info.value.__context__ is None and info.value.__cause__ is None


async def test_callable_returning_a_non_string_is_refused() -> None:
    with pytest.raises(CredentialError, match="returned int, expected a string or None"):
        await resolve_credential(callable_credential(lambda: 5))  # type: ignore[arg-type,return-value]


async def test_nothing_found_names_every_source_but_no_value() -> None:
    chain = [explicit_credential(None), env_credential({"OTHER": "x"}, "OPENAI_API_KEY")]
    with pytest.raises(CredentialError) as info:
        await resolve_credential(chain, name="openai")
    assert str(info.value) == (
        "no credential for 'openai': tried explicit value -> env OPENAI_API_KEY"
    )


def test_bad_chain_items_are_type_errors() -> None:
    with pytest.raises(TypeError, match="not a credential resolver: int"):
        create_credential_chain(5)  # type: ignore[arg-type]


def test_resolved_credentials_hide_their_value() -> None:
    found = ResolvedCredential("sk-hidden-value", "explicit")
    assert "sk-hidden-value" not in repr(found)
    assert "sk-hidden-value" in found.secrets
    assert "rt" not in repr(OAuthToken("at-hidden", 1.0, "rt-hidden")).replace("<hidden>", "")
    with pytest.raises(CredentialError, match="is empty"):
        ResolvedCredential("", "explicit")


# --- OAuth ------------------------------------------------------------------------


async def test_oauth_refreshes_when_missing_expired_or_within_skew() -> None:
    clock = FakeClock(1000.0)
    issued: list[OAuthToken | None] = []

    def refresh(current: OAuthToken | None) -> OAuthToken:
        issued.append(current)
        return OAuthToken(f"at-{len(issued)}", clock.now + 3600, REFRESH_SECRET)

    oauth = create_oauth_credential(refresh, skew_seconds=60, clock=clock)
    first = await resolve_credential(oauth)
    assert first.value == "at-1" and oauth.refresh_count == 1
    assert issued == [None]
    assert first.secrets >= {"at-1", REFRESH_SECRET}

    clock.now += 3600 - 61  # still outside the skew window
    assert (await resolve_credential(oauth)).value == "at-1"
    clock.now += 2  # now within 60s of expiry
    second = await resolve_credential(oauth)
    assert second.value == "at-2" and oauth.refresh_count == 2
    assert issued[1] is not None and issued[1].access_token == "at-1"
    assert "at-1" in second.secrets  # old tokens stay redacted

    clock.now += 10_000  # long expired
    assert (await resolve_credential(oauth)).value == "at-3"


async def test_oauth_token_without_expiry_is_kept() -> None:
    calls = 0

    async def refresh(current: OAuthToken | None) -> OAuthToken:
        nonlocal calls
        calls += 1
        return OAuthToken("at-forever")

    oauth = create_oauth_credential(refresh, token=OAuthToken("at-initial"))
    assert (await oauth.resolve()).value == "at-initial"
    assert calls == 0
    assert (await oauth.get_token(force=True)).access_token == "at-forever"
    assert calls == 1


async def test_single_flight_refresh_shared_by_concurrent_callers() -> None:
    clock = FakeClock()
    release = anyio.Event()
    calls = 0

    async def refresh(current: OAuthToken | None) -> OAuthToken:
        nonlocal calls
        calls += 1
        await release.wait()
        return OAuthToken("at-shared", clock.now + 600)

    oauth = create_oauth_credential(refresh, clock=clock)
    results: list[str] = []

    async def caller() -> None:
        results.append((await resolve_credential(oauth)).value)

    async with anyio.create_task_group() as tg:
        for _ in range(10):
            tg.start_soon(caller)
        await anyio.wait_all_tasks_blocked()  # every caller is parked on the one refresh
        assert calls == 1
        release.set()
    assert results == ["at-shared"] * 10
    assert oauth.refresh_count == 1


async def test_refresh_failure_is_shared_clear_and_secret_free() -> None:
    release = anyio.Event()

    async def refresh(current: OAuthToken | None) -> OAuthToken:
        await release.wait()
        raise RuntimeError(f"invalid_grant for refresh token {REFRESH_SECRET}")

    expired = OAuthToken("at-old-canary", expires_at=0.0, refresh_token=REFRESH_SECRET)
    oauth = create_oauth_credential(refresh, token=expired, clock=FakeClock(), name="acme")
    errors: list[CredentialError] = []

    async def caller() -> None:
        try:
            await oauth.resolve()
        except CredentialError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(caller)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert oauth.refresh_count == 1
    assert len(errors) == 5
    message = str(errors[0])
    assert message == (
        "OAuth refresh for 'acme' failed with RuntimeError: "
        "invalid_grant for refresh token [REDACTED]"
    )
    assert all(str(e) == message for e in errors)
    assert errors[0].__context__ is None
    # The failure is not cached: the next caller tries again.
    with pytest.raises(CredentialError):
        await oauth.resolve()
    assert oauth.refresh_count == 2


async def test_refresh_returning_nothing_is_an_error() -> None:
    oauth = create_oauth_credential(lambda current: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(CredentialError, match="returned no access token"):
        await oauth.resolve()


async def test_cancelled_refresh_lets_a_waiting_caller_take_over() -> None:
    first_started = anyio.Event()
    calls = 0

    async def refresh(current: OAuthToken | None) -> OAuthToken:
        nonlocal calls
        calls += 1
        if calls == 1:
            first_started.set()
            await anyio.sleep_forever()
        return OAuthToken("at-second")

    oauth = create_oauth_credential(refresh)
    got: list[str] = []

    async def follower() -> None:
        got.append((await oauth.resolve()).value)

    async with anyio.create_task_group() as outer:
        with anyio.CancelScope() as leader_scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(oauth.resolve)
                await first_started.wait()
                outer.start_soon(follower)
                await anyio.wait_all_tasks_blocked()
                leader_scope.cancel()
    assert got == ["at-second"]
    assert calls == 2


def test_oauth_token_from_response() -> None:
    token = OAuthToken.from_response(
        {"access_token": "at", "expires_in": 3600, "refresh_token": "rt"}, now=100.0
    )
    assert token == OAuthToken("at", 3700.0, "rt")
    assert OAuthToken.from_response({"access_token": "at"}, now=0).expires_at is None
    with pytest.raises(CredentialError, match="no access_token"):
        OAuthToken.from_response({"token": "x"}, now=0)
    with pytest.raises(CredentialError, match="expires_in is not a number"):
        OAuthToken.from_response({"access_token": "at", "expires_in": "soon"}, now=0)


def test_oauth_options_are_validated() -> None:
    with pytest.raises(ValueError, match="skew_seconds must be >= 0"):
        create_oauth_credential(lambda c: OAuthToken("x"), skew_seconds=-1)
    with pytest.raises(TypeError, match="needs a refresh callable"):
        create_oauth_credential("nope")  # type: ignore[arg-type]
