"""A generated long group chat with known answers, for the recall benchmark.

Four people (one of them often writing Chinese) and the assistant talk over six months in several
sessions. Most messages are everyday chatter: half small talk ("ok", "on my way"), half sentences that
reuse the names, places, objects and phrases of the facts, so every question has look-alike
distractors. Each fact is one message; its questions are worded
the way people ask, not the way the fact was said:

- word_forms:    other inflections of the fact's words ("painted" -> "paint", "books" -> "book")
- synonyms:      a key word replaced by a synonym ("car" -> "automobile"), the rest still overlapping
- question_words: a plain question with who/what/when/where and auxiliaries
- stop_words:    the question buried in conversational filler ("do you remember what it was that ...")
- chinese:       a Chinese fact asked about in Chinese (no spaces; two-character words)

Everything comes from one seeded random generator, so a run is reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

SPEAKERS = ("Melanie", "Caroline", "Dev", "Li Wei")
START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
DAYS = 180
KINDS = ("word_forms", "synonyms", "question_words", "stop_words", "chinese")


@dataclass(frozen=True, slots=True)
class Line:
    author: str
    text: str
    fact: int | None = None
    """Index into `Corpus.facts` when this line states a fact."""


@dataclass(frozen=True, slots=True)
class Question:
    kind: str
    text: str
    fact: int


@dataclass(slots=True)
class Corpus:
    lines: list[Line] = field(default_factory=list)
    times: list[datetime] = field(default_factory=list)
    sessions: list[int] = field(default_factory=list)
    """Session number (0-based) of each line."""
    questions: list[Question] = field(default_factory=list)
    facts: int = 0


# -- slot values ---------------------------------------------------------------------------------------

PLACES = ["lake", "harbour", "old mill", "north ridge", "river bend", "city park", "train station", "bakery"]
SUBJECTS = ["sunrise", "lighthouse", "fox", "storm", "sailboat", "cathedral", "waterfall", "meadow"]
BOOKS = ["The Silent Harbor", "Glass Orchard", "Winter Ledger", "The Copper Field", "Paper Tigers"]
CITIES = ["Lisbon", "Porto", "Vienna", "Krakow", "Seville", "Ghent", "Tallinn", "Bologna"]
PETS = ["Biscuit", "Pepper", "Mochi", "Juniper", "Waffles", "Ziggy"]
CARS = ["red Volvo", "blue Skoda", "grey Toyota", "green Fiat", "white Kia"]
INSTRUMENTS = ["cello", "ukulele", "trumpet", "harp", "banjo"]
DISHES = ["mushroom risotto", "lamb tagine", "lemon tart", "pumpkin soup", "fish tacos"]
COMPANIES = ["Northwind", "Bluefin Labs", "Oakridge Studio", "Marlow & Finch", "Tessera"]
ZH_TRIPS = [("杭州", "西湖"), ("北京", "长城"), ("西安", "兵马俑"), ("成都", "熊猫基地"), ("苏州", "园林")]
ZH_SKILLS = ["书法", "游泳", "吉他", "摄影", "太极拳"]
ZH_FOODS = ["火锅", "饺子", "烤鸭", "小笼包", "麻婆豆腐"]
ZH_PLACES = ["抽屉", "书架", "车库", "阳台", "鞋柜"]

# A fact: (statement, {kind: question}) built from a random slot choice. {s} is the speaker.
FactMaker = Callable[[random.Random, str], tuple[str, dict[str, str]]]


def _painting(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    subject, place = rng.choice(SUBJECTS), rng.choice(PLACES)
    return (
        f"I painted a {subject} over the {place} this weekend, first time using oils",
        {
            "word_forms": f"When did {s} paint the {subject}?",
            "synonyms": f"When did {s} sketch the {subject}?",
            "question_words": f"Where was {s} when she painted the {subject}?",
            "stop_words": f"Hey, do you remember what it was that {s} said she had painted at the {place}?",
        },
    )


def _book(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    title = rng.choice(BOOKS)
    return (
        f"Just finished {title}, best book I read this year, the ending got me",
        {
            "word_forms": f"Which books has {s} been reading lately?",
            "synonyms": f"Which novel did {s} say had a great ending?",
            "question_words": f"What was the best book {s} read this year?",
            "stop_words": f"So what was that one that {s} told us she had just finished, with the ending?",
        },
    )


def _move(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    city = rng.choice(CITIES)
    return (
        f"Big news: my sister is moving to {city} in the spring for her new job",
        {
            "word_forms": f"Where did {s}'s sister move for the new job?",
            "synonyms": f"Which city is {s}'s sister relocating to in the spring?",
            "question_words": f"Who is moving to {city}?",
            "stop_words": f"Was it {s} whose sister was going to move somewhere for a new job or something?",
        },
    )


def _pet(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    name = rng.choice(PETS)
    return (
        f"We adopted a beagle puppy from the shelter, the kids named him {name}",
        {
            "word_forms": f"What name did {s}'s kids give the adopted puppy?",
            "synonyms": f"What is the name of the beagle {s}'s children picked?",
            "question_words": f"When did {s} adopt a beagle?",
            "stop_words": f"Remind me, what was the name of the little one that {s} got from the shelter?",
        },
    )


def _car(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    car = rng.choice(CARS)
    return (
        f"Finally bought a car, a second-hand {car}, picking it up on Friday",
        {
            "word_forms": f"Which cars did {s} pick up on Friday?",
            "synonyms": f"Which second-hand automobile did {s} purchase?",
            "question_words": f"When is {s} picking up the car?",
            "stop_words": f"And what was the thing {s} bought that she was going to pick up on the Friday?",
        },
    )


def _instrument(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    instrument = rng.choice(INSTRUMENTS)
    return (
        f"Started {instrument} lessons on Tuesdays, my fingers hurt already",
        {
            "word_forms": f"What lesson is {s} starting on Tuesday?",
            "synonyms": f"What instrument did {s} begin taking lessons on?",
            "question_words": f"What day are {s}'s {instrument} lessons?",
            "stop_words": f"What was it that {s} was doing on the Tuesdays that made her fingers hurt?",
        },
    )


def _dinner(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    dish = rng.choice(DISHES)
    return (
        f"For the anniversary dinner I cooked {dish}, it turned out great",
        {
            "word_forms": f"What did {s} cook for the anniversary?",
            "synonyms": f"What meal did {s} make for the anniversary?",
            "question_words": f"What dish did {s} cook for the anniversary dinner?",
            "stop_words": f"Do you know what it was that {s} cooked for that anniversary dinner, any good?",
        },
    )


def _doctor(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    day = rng.choice(["Monday", "Wednesday", "Thursday"])
    hour = rng.choice(["9", "10", "11", "2", "4"])
    return (
        f"Doctor appointment moved to {day} at {hour}, the clinic called this morning",
        {
            "word_forms": f"When is {s}'s appointment with the doctor?",
            "synonyms": f"When is {s} seeing the physician now that the clinic moved it?",
            "question_words": f"What day did the clinic move {s}'s appointment to?",
            "stop_words": f"Wait, what was it that the clinic called {s} about, when is it now?",
        },
    )


def _race(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    city = rng.choice(CITIES)
    return (
        f"I signed up for the {city} half marathon in October, training starts now",
        {
            "word_forms": f"What has {s} been signing up for in October?",
            "synonyms": f"What run is {s} training for in October?",
            "question_words": f"When is the {city} half marathon {s} is doing?",
            "stop_words": f"What was the half marathon thing {s} signed up for, was it in October or so?",
        },
    )


def _wedding(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    city = rng.choice(CITIES)
    day = rng.choice(["June 14", "May 30", "September 6", "July 19"])
    return (
        f"My cousin's wedding is on {day} in {city}, we need to book a hotel",
        {
            "word_forms": f"Where is the wedding of {s}'s cousins?",
            "synonyms": f"When is the marriage of {s}'s cousin?",
            "question_words": f"Where does {s} need to book a hotel?",
            "stop_words": f"What was it {s} said about the hotel, for her cousin's thing?",
        },
    )


def _job(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    company = rng.choice(COMPANIES)
    return (
        f"I got the job at {company}! Starting as a designer on the first of the month",
        {
            "word_forms": f"Where did {s} get the designer job?",
            "synonyms": f"Where is {s}'s new employment as a designer?",
            "question_words": f"When does {s} start at {company}?",
            "stop_words": f"Did {s} tell us where she got that designer job, or was it someone else?",
        },
    )


def _holiday(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    city = rng.choice(CITIES)
    return (
        f"Booked our holiday: two weeks in {city} in August, flights were cheap",
        {
            "word_forms": f"Where is {s} holidaying in August?",
            "synonyms": f"Where is {s} going on vacation in August?",
            "question_words": f"How long is {s}'s holiday in {city}?",
            "stop_words": f"Where was it that {s} was flying off to, with the cheap flights?",
        },
    )


def _boiler(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    cost = rng.choice(["180", "240", "315", "95", "420"])
    return (
        f"The plumber fixed the boiler, it cost {cost} euros in the end",
        {
            "word_forms": f"How much did fixing the boiler cost {s}?",
            "synonyms": f"What did {s} pay to repair the boiler?",
            "question_words": f"Who fixed {s}'s boiler?",
            "stop_words": f"How much was it in the end for that whole boiler business at {s}'s place?",
        },
    )


def _gift(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    gift = rng.choice(["silk scarf", "pottery class", "reading lamp", "bird feeder", "jigsaw puzzle"])
    return (
        f"For my mum's birthday I got her a {gift}, she loved it",
        {
            "word_forms": f"What did {s}'s mum love for her birthday?",
            "synonyms": f"What present did {s} buy for her mum's birthday?",
            "question_words": f"Who loved the {gift} {s} got for a birthday?",
            "stop_words": f"Do you remember what it was {s} got her mum for the birthday, did she love it?",
        },
    )


def _driving(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    attempt = rng.choice(["second", "third", "fourth"])
    return (
        f"Passed my driving test today on the {attempt} try!",
        {
            "word_forms": f"When did {s} pass the driving test?",
            "synonyms": f"Did {s} get through her driving exam?",
            "question_words": f"How many tries did {s} need for the driving test?",
            "stop_words": f"Was it {s} who finally passed the driving test the other day, or am I wrong?",
        },
    )


def _allergy(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    drug = rng.choice(["cetirizine", "loratadine", "fexofenadine"])
    return (
        f"The doctor put me on {drug} for the allergies, twice a day",
        {
            "word_forms": f"What did the doctors put {s} on for her allergy?",
            "synonyms": f"What pills did {s} get for the allergies?",
            "question_words": f"How often does {s} take {drug}?",
            "stop_words": f"What was that stuff the doctor gave {s} for the allergies again?",
        },
    )


def _zh_trip(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    city, sight = rng.choice(ZH_TRIPS)
    return (f"上周末我们去{city}看了{sight}，人特别多", {"chinese": f"我们什么时候去的{city}？"})


def _zh_skill(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    skill = rng.choice(ZH_SKILLS)
    return (f"我最近在学{skill}，每天练习一个小时", {"chinese": f"{skill}每天练习多久？"})


def _zh_food(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    food = rng.choice(ZH_FOODS)
    return (f"今晚我请大家吃{food}，七点在老地方见", {"chinese": f"今晚吃{food}是几点？"})


def _zh_keys(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    place = rng.choice(ZH_PLACES)
    return (f"备用钥匙我放在{place}里了，别忘了", {"chinese": "备用钥匙放在哪里了？"})


def _zh_move(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    city = rng.choice([c for c, _ in ZH_TRIPS])
    return (f"我下个月要搬到{city}去工作了", {"chinese": "下个月搬去哪里工作？"})


def _zh_phone(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    brand = rng.choice(["华为", "小米", "苹果", "三星"])
    return (f"我的新手机是{brand}的，拍照特别清楚", {"chinese": "新手机是什么牌子的？"})


def _zh_badminton(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    place = rng.choice(["体育馆", "学校操场", "公园"])
    return (f"周六上午十点在{place}打羽毛球，谁来？", {"chinese": "羽毛球在哪里打？"})


def _zh_birthday(rng: random.Random, s: str) -> tuple[str, dict[str, str]]:
    month, day = rng.randint(1, 12), rng.randint(1, 28)
    return (f"我妈妈的生日是{month}月{day}号，要准备礼物", {"chinese": "妈妈生日是几号？"})


ENGLISH: list[FactMaker] = [
    _painting, _book, _move, _pet, _car, _instrument, _dinner, _doctor,
    _race, _wedding, _job, _holiday, _boiler, _gift, _driving, _allergy,
]  # fmt: skip
CHINESE: list[FactMaker] = [
    _zh_trip, _zh_skill, _zh_food, _zh_keys, _zh_move, _zh_phone, _zh_badminton, _zh_birthday,
]  # fmt: skip

# -- chatter ------------------------------------------------------------------------------------------

CHATTER = [
    "the {place} was packed {when}",
    "anyone up for a walk along the {place} {when}?",
    "I should really paint the fence this {season}",
    "we need a new book club pick, any ideas?",
    "the car needs new tyres again",
    "my sister says hi, she is {mood} about {event}",
    "the kids want a {animal}, I keep saying no",
    "did you see the {weather} {when}?",
    "dinner at ours on {day}? I can make {food}",
    "the clinic never answers the phone",
    "traffic near the {place} was terrible {when}",
    "{other} did you get my message about the {thing}?",
    "{instrument} lessons are expensive these days",
    "I finished the {work}, finally",
    "who is bringing {food} on {day}?",
    "I read somewhere that {city} is lovely in {season}",
    "the shelter is looking for volunteers on {day}s",
    "{day} plans anyone?",
    "this {weather} is something else",
    "we should all go to {city} one day",
    "the {subject} was beautiful from the train",
    "my fingers are frozen, it is so cold at the {place}",
    "new job starts in {month} for my cousin",
    "picking up {food} on the way home, need anything?",
    "appointment went fine, nothing serious",
    "the anniversary is coming up, no idea what to do",
    "can someone send the photos from {day}?",
    "I cooked way too much {food} again",
    "the ending of that show was a letdown",
    "I keep meaning to start running, maybe in {month}",
    "hotel prices in {city} are wild",
    "my mum wants a {gift} for her birthday, any ideas?",
    "the boiler is making that noise again",
    "driving to the {place} {when}, anyone need a lift?",
    "allergies are terrible this {season}",
    "heard {company} is hiring designers",
    "flights to {city} are cheap in {month}",
    "the {thing} finally arrived",
    "reading anything good at the moment?",
    "sorry {other}, missed your call, {mood} day",
]
SMALL_TALK = [
    "lol", "haha yes", "ok", "sounds good", "on my way", "see you at 7", "thanks!", "good night all",
    "where are you?", "running late, sorry", "nice", "same here", "who's in?", "I'm in", "can't tonight",
    "yes!", "no idea", "let me check", "brb", "👍", "omg", "true", "agreed", "sure, why not", "hmm",
]  # fmt: skip
OPENERS = ["", "", "", "ok so ", "honestly ", "btw ", "hey all, ", "morning! ", "ugh, ", "lol "]
CLOSERS = ["", "", "", " :)", " haha", ", anyway", "!", "..."]
FILL = {
    "when": ["today", "this morning", "last night", "on Sunday", "yesterday", "after work"],
    "season": ["spring", "summer", "autumn", "winter"],
    "mood": ["thrilled", "nervous", "annoyed", "excited", "tired", "busy"],
    "event": ["the move", "the new flat", "her exams", "the trip", "the party"],
    "animal": ["dog", "cat", "rabbit", "hamster", "parrot"],
    "weather": ["storm", "rain", "heatwave", "fog", "snow"],
    "day": ["Monday", "Friday", "Saturday", "Sunday", "Thursday"],
    "thing": ["tickets", "parcel", "invoice", "new sofa", "bike", "keys"],
    "work": ["report", "tax return", "slides", "quarterly numbers", "application"],
    "month": ["March", "April", "May", "June", "July", "September"],
    "gift": ["scarf", "lamp", "puzzle", "plant", "watch"],
}
ZH_CHATTER = [
    "今天天气不错",
    "晚上吃什么？",
    "我们明天再说吧",
    "好的，没问题",
    "刚下班，好累",
    "周末有什么计划？",
    "这个周末我在家休息",
    "大家早上好",
    "路上堵车了，晚点到",
    "照片我发群里了",
]
ASSISTANT = [
    "That sounds lovely, {s}!",
    "Good luck with it, {s}.",
    "Noted. Anything I can help plan?",
    "Happy to help if you need a reminder.",
    "That sounds like a busy week.",
]


def _session_starts(rng: random.Random) -> list[int]:
    """Day offsets at which a new session (/new) begins: every three to five weeks."""
    starts = [0]
    while starts[-1] < DAYS - 35:
        starts.append(starts[-1] + rng.randint(21, 35))
    return starts


def _chatter(rng: random.Random, author: str) -> str:
    if author == "Li Wei" and rng.random() < 0.5:
        return rng.choice(ZH_CHATTER)
    if rng.random() < 0.5:
        return rng.choice(SMALL_TALK)
    others = [s for s in SPEAKERS if s != author]
    slots = {key: rng.choice(values) for key, values in FILL.items()}
    text = rng.choice(CHATTER).format(
        place=rng.choice(PLACES),
        city=rng.choice(CITIES),
        other=rng.choice(others),
        food=rng.choice(DISHES),
        instrument=rng.choice(INSTRUMENTS),
        subject=rng.choice(SUBJECTS),
        company=rng.choice(COMPANIES),
        **slots,
    )
    return rng.choice(OPENERS) + text + rng.choice(CLOSERS)


def _fact_plan(rng: random.Random, facts: int) -> Iterator[tuple[str, FactMaker]]:
    """Every sixth fact Chinese (Li Wei's); English facts never repeat a (template, speaker) pair
    until all have been used, so most questions have one answer."""
    english = [(s, m) for m in ENGLISH for s in ("Melanie", "Caroline", "Dev")]
    chinese = list(CHINESE)
    rng.shuffle(english)
    rng.shuffle(chinese)
    for i in range(facts):
        if i % 6 == 5:
            yield "Li Wei", chinese[(i // 6) % len(chinese)]
        else:
            yield english[(i - i // 6) % len(english)]


def generate(messages: int, *, facts: int = 48, seed: int = 15, tail_free: int = 40) -> Corpus:
    """`messages` lines over six months with `facts` planted facts (none in the last `tail_free`)."""
    rng = random.Random(seed)
    corpus = Corpus()
    slots = sorted(rng.sample(range(max(1, messages - tail_free)), min(facts, messages - tail_free)))
    planned = dict(zip(slots, _fact_plan(rng, len(slots)), strict=True))
    starts = _session_starts(rng)
    step = timedelta(days=DAYS) / messages
    for i in range(messages):
        when = START + step * i + timedelta(seconds=rng.randint(0, 59))
        day = (when - START).days
        session = sum(1 for s in starts if s <= day) - 1
        if i in planned:
            author, maker = planned[i]
            statement, questions = maker(rng, author)
            fact = corpus.facts
            corpus.facts += 1
            corpus.lines.append(Line(author, statement, fact))
            corpus.questions += [Question(kind, q, fact) for kind, q in questions.items()]
        elif i % 7 == 6:
            corpus.lines.append(Line("assistant", rng.choice(ASSISTANT).format(s=rng.choice(SPEAKERS))))
        else:
            author = rng.choice(SPEAKERS)
            corpus.lines.append(Line(author, _chatter(rng, author)))
        corpus.times.append(when)
        corpus.sessions.append(session)
    return corpus
