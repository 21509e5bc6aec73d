"""Who may talk to the bot and who may administer it. Fails closed.

Users are identified by platform user id only (display names are never trusted). Anonymous group
admins and messages sent on behalf of a chat have no verifiable user and are never admins.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from gateway.platforms.base import Author
from gateway.platforms.console import CONSOLE_USER_ID

UNAUTHORIZED_NOTICE_INTERVAL_S = 3600.0


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    admins: Mapping[str, frozenset[str]]
    """platform -> admin user ids."""
    allowed: Mapping[str, frozenset[str]]
    """platform -> user ids allowed to chat (admins are always allowed)."""
    allow_all: bool = False


def policy_from_ids(
    *,
    admins: Mapping[str, Iterable[int | str]],
    allowed: Mapping[str, Iterable[int | str]],
    allow_all: bool,
) -> AccessPolicy:
    admin_sets = {p: frozenset(str(i) for i in ids) for p, ids in admins.items()}
    admin_sets["console"] = admin_sets.get("console", frozenset()) | {CONSOLE_USER_ID}
    allowed_sets = {p: frozenset(str(i) for i in ids) for p, ids in allowed.items()}
    return AccessPolicy(admins=admin_sets, allowed=allowed_sets, allow_all=allow_all)


@dataclass
class Authorizer:
    policy: AccessPolicy
    clock: Callable[[], float] = time.monotonic
    _notified: dict[tuple[str, str], float] = field(default_factory=dict)

    def is_admin(self, platform: str, author: Author) -> bool:
        if author.is_anonymous_admin or author.is_bot or author.is_self:
            return False
        return author.user_id in self.policy.admins.get(platform, frozenset())

    def is_allowed(self, platform: str, author: Author) -> bool:
        if author.is_self or author.is_bot:
            return False
        if self.is_admin(platform, author):
            return True
        if author.is_anonymous_admin:
            return self.policy.allow_all
        return self.policy.allow_all or author.user_id in self.policy.allowed.get(platform, frozenset())

    def should_tell_unauthorized(self, platform: str, user_id: str) -> bool:
        """True at most once per interval per user, so a refused user gets one reply, then silence."""
        key = (platform, user_id)
        now = self.clock()
        last = self._notified.get(key)
        if last is not None and now - last < UNAUTHORIZED_NOTICE_INTERVAL_S:
            return False
        self._notified[key] = now
        if len(self._notified) > 10_000:  # bound memory under a flood of strangers
            cutoff = now - UNAUTHORIZED_NOTICE_INTERVAL_S
            self._notified = {k: v for k, v in self._notified.items() if v >= cutoff}
        return True
