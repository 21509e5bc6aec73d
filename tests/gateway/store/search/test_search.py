"""Recall search: ranked, any language, the chat's whole history (archive, older sessions), this chat only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent.tools.recall_types import RecallQuery, RecallResults
from gateway.store import NewMessage, Store
from gateway.store.records import Role
from gateway.store.search.scope import SHOWN_WHOLE_BELOW
from tests.gateway.store.helpers import new_chat
from tests.gateway.store.test_compaction import plan

DAY = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def said(
    text: str, *, who: str = "ann", role: Role = "user", when: datetime | None = None, tool: bool = False
) -> NewMessage:
    author = "tool" if tool else ("assistant" if role == "assistant" else who)
    return NewMessage(
        role=role,
        content=text,
        text=text,
        token_estimate=max(1, len(text) // 4),
        author_id=author,
        author_name=author if author in ("tool", "assistant") else who.title(),
        created_at=when,
    )


async def add(store: Store, session: int, *texts: str | NewMessage) -> list[int]:
    items = [t if isinstance(t, NewMessage) else said(t) for t in texts]
    return [r.message.id for r in await store.append_messages(session, items)]


async def archive(store: Store, session: int, ids: list[int], tail: int, text: str = "SUMMARY") -> int:
    record = await store.apply_compaction(session, plan(ids, tail, text=text))
    assert record.summary_message_id is not None
    return record.summary_message_id


async def search(
    store: Store, chat: int, query: str, *, shown_whole_below: int = SHOWN_WHOLE_BELOW, **options: object
) -> RecallResults:
    request = RecallQuery(text=query, **options)  # type: ignore[arg-type]
    return await store.search_history(chat, request, shown_whole_below=shown_whole_below)


def ids_of(result: RecallResults) -> list[int]:
    return [h.main.message_id for h in result.hits]


def texts_of(result: RecallResults) -> list[str]:
    return [h.main.text for h in result.hits]


async def test_a_question_finds_the_message_worded_differently(store: Store) -> None:
    chat, session = await new_chat(store, "q")
    ids = await add(
        store,
        session,
        said("Good morning everyone", who="mel"),
        said("I finally finished this book I read last year, a novel about lighthouses", who="mel"),
        said("The weather is lovely today", who="caro"),
        said("Do you have plans for the weekend?", who="caro"),
        said("Has anyone seen my keys", who="mel"),
        "tail",
    )
    await archive(store, session, ids[:-1], ids[-1])
    result = await search(store, chat, "What books has she read?")
    assert ids_of(result)[0] == ids[1]
    hit = result.hits[0]
    assert hit.main.author_name == "Mel"
    assert hit.session.number == 1
    # Stop words and punctuation alone do not make a match; every other message stays out.
    assert ids[0] not in ids_of(result)
    assert ids[2] not in ids_of(result)


async def test_ranking_prefers_messages_with_more_and_rarer_terms(store: Store) -> None:
    chat, session = await new_chat(store, "rank")
    filler = [said(f"Melanie went for a walk number {i}", who="caro") for i in range(30)]
    ids = await add(
        store,
        session,
        *filler,
        said("I painted a sunrise over the lake this morning", who="melanie"),
        said("sunrise pictures are hard to take", who="caro"),
        "tail",
    )
    await archive(store, session, ids[:-1], ids[-1])
    result = await search(store, chat, "When did Melanie paint a sunrise?", limit=3)
    assert ids_of(result)[0] == ids[30]
    assert ids[31] in ids_of(result)


async def test_chinese_is_found_by_two_and_three_character_words(store: Store) -> None:
    chat, session = await new_chat(store, "zh")
    ids = await add(
        store,
        session,
        "上周末我们去杭州看了西湖",
        "明天下午三点在北京开会",
        "我今天用Python写代码",
        "会议改到星期五了",
        "tail",
    )
    await archive(store, session, ids[:-1], ids[-1])
    assert ids_of(await search(store, chat, "杭州"))[0] == ids[0]
    assert ids_of(await search(store, chat, "北京"))[0] == ids[1]
    assert ids_of(await search(store, chat, "西湖"))[0] == ids[0]  # at the very end of its message
    assert ids_of(await search(store, chat, "开会"))[0] == ids[1]
    assert ids_of(await search(store, chat, "我们什么时候去的杭州？"))[0] == ids[0]
    assert ids_of(await search(store, chat, "python"))[0] == ids[2]
    assert ids_of(await search(store, chat, "星期五"))[0] == ids[3]
    assert ids_of(await search(store, chat, "上海")) == []


async def test_older_sessions_are_searched_and_labelled(store: Store) -> None:
    chat, first = await new_chat(store, "old")
    old = await add(store, first, said("the wifi password is hunter2", when=DAY))
    second = (await store.new_session(chat)).id
    await add(store, second, said("what was the wifi password again?", when=DAY + timedelta(days=30)))
    result = await search(store, chat, "wifi password")
    # The current window's question is in view already; the old session's message is found.
    assert ids_of(result) == old
    hit = result.hits[0]
    assert hit.main.created_at == DAY
    assert hit.session.number == 1
    assert not hit.session.active
    assert hit.session.ended_at is not None


async def test_after_and_before_bound_the_dates(store: Store) -> None:
    chat, session = await new_chat(store, "dates")
    ids = await add(
        store,
        session,
        said("deploy on monday", when=DAY),
        said("deploy on tuesday", when=DAY + timedelta(days=7)),
        said("deploy on wednesday", when=DAY + timedelta(days=14)),
        "tail",
    )
    await archive(store, session, ids[:-1], ids[-1])
    week = DAY + timedelta(days=7)
    assert set(ids_of(await search(store, chat, "deploy", after=week))) == {ids[1], ids[2]}
    assert ids_of(await search(store, chat, "deploy", before=week)) == [ids[0]]
    assert ids_of(await search(store, chat, "deploy", after=week, before=week + timedelta(days=1))) == [
        ids[1]
    ]


async def test_another_chats_messages_never_come_back(store: Store) -> None:
    mine, my_session = await new_chat(store, "mine")
    theirs, their_first = await new_chat(store, "theirs")
    await add(store, their_first, "their vault code is 4711")
    their_second = (await store.new_session(theirs)).id
    await add(store, their_second, "another vault secret")
    ids = await add(store, my_session, "my vault is in the basement", "tail")
    await archive(store, my_session, ids[:-1], ids[-1])
    assert ids_of(await search(store, mine, "vault code secret", limit=20)) == [ids[0]]
    assert len((await search(store, theirs, "vault", limit=20, shown_whole_below=1)).hits) == 2
    # Excerpts stay inside the chat too: a neighbour is never another chat's row.
    for hit in (await search(store, mine, "vault", limit=20)).hits:
        for part in (hit.before, hit.after):
            assert part is None or part.message_id in ids


async def test_window_messages_are_skipped_unless_long(store: Store) -> None:
    chat, session = await new_chat(store, "window")
    long_text = "filler words " * 200 + "the needle sits here " + "more words " * 200
    ids = await add(store, session, "a short needle in view", long_text)
    result = await search(store, chat, "needle", shown_whole_below=1000)
    assert ids_of(result) == [ids[1]]
    main = result.hits[0].main
    assert "needle" in main.text
    assert main.text.startswith("…")
    assert main.text.endswith("…")
    assert len(main.text) < 320
    assert 0 < main.offset < main.total_chars == len(long_text)


async def test_a_question_comes_with_its_answer_and_a_short_answer_with_its_question(store: Store) -> None:
    chat, session = await new_chat(store, "qa")
    ids = await add(
        store,
        session,
        said("Which dentist did you book for the kids?", who="caro"),
        said("Dr Alvarez on Elm street", who="mel"),
        said("unrelated chatter about football", who="caro"),
        said("When is the piano recital?", who="mel"),
        said("Saturday at four", who="caro"),
        "tail",
    )
    await archive(store, session, ids[:-1], ids[-1])
    [asked] = (await search(store, chat, "dentist", limit=1)).hits
    assert asked.main.message_id == ids[0]
    assert asked.after is not None
    assert asked.after.message_id == ids[1]
    assert asked.after.created_at.tzinfo is not None  # a real, aware datetime on both databases
    [answered] = (await search(store, chat, "alvarez", limit=1)).hits
    assert answered.before is not None
    assert answered.before.message_id == ids[0]
    # The pair is one result, not two.
    both = await search(store, chat, "piano recital saturday", limit=5)
    shown = [h.main.message_id for h in both.hits] + [
        p.message_id for h in both.hits for p in (h.before, h.after) if p is not None
    ]
    assert sorted(shown) == [ids[3], ids[4]]


async def test_duplicates_are_merged(store: Store) -> None:
    chat, session = await new_chat(store, "dup")
    ids = await add(store, session, *["standup moved to 10:30"] * 3, "standup notes are in the doc", "tail")
    await archive(store, session, ids[:-1], ids[-1])
    result = await search(store, chat, "standup", limit=5)
    assert [h.main.text for h in result.hits].count("standup moved to 10:30") == 1
    assert len(result.hits) == 2
    assert not result.more


async def test_limit_and_more(store: Store) -> None:
    chat, session = await new_chat(store, "many")
    ids = await add(store, session, *[f"invoice number {i} was paid" for i in range(12)], "tail")
    await archive(store, session, ids[:-1], ids[-1])
    result = await search(store, chat, "invoice", limit=4)
    assert len(result.hits) == 4
    assert result.more


async def test_summaries_and_tool_results_are_not_searched(store: Store) -> None:
    chat, session = await new_chat(store, "kinds")
    ids = await add(
        store,
        session,
        "the budget is 300 euros",
        said("recall said: the budget is 300 euros", tool=True),
        "tail",
    )
    await archive(store, session, ids[:-1], ids[-1], text="Summary: the budget is 300 euros")
    assert ids_of(await search(store, chat, "budget", limit=10)) == [ids[0]]


async def test_deleted_messages_leave_the_index(store: Store) -> None:
    chat, session = await new_chat(store, "gone")
    ids = await add(store, session, said("old plan for the garden", when=DAY), "tail")
    await archive(store, session, ids[:-1], ids[-1])
    assert ids_of(await search(store, chat, "garden")) == [ids[0]]
    assert await store.delete_archived_before(DAY + timedelta(days=1)) == 1
    assert ids_of(await search(store, chat, "garden")) == []
    await add(store, session, said("new plan for the garden"))
    assert len((await search(store, chat, "garden", shown_whole_below=1)).hits) == 1


async def test_accents_case_and_punctuation_do_not_matter(store: Store) -> None:
    chat, session = await new_chat(store, "fold")
    ids = await add(store, session, "Meet at the CAFÉ near Straße 5, ok?", "tail")
    await archive(store, session, ids[:-1], ids[-1])
    for query in ("cafe", "café!!", "straße", "STRASSE? cafe"):
        assert ids_of(await search(store, chat, query))[:1] == [ids[0]], query
    assert ids_of(await search(store, chat, "???")) == []
    assert ids_of(await search(store, chat, "")) == []
