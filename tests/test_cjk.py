"""Chinese, Japanese and Korean text, and emoji, are found by their words."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mnemosyne import Mnemosyne
from mnemosyne.core import cjk, lexical

START = datetime(2026, 5, 4, 9, tzinfo=timezone.utc)
APART = timedelta(hours=2)  # each memory's context window is itself

MEMORIES = [
    "我住在东京，每天坐地铁上班。",
    "明天下午三点开会讨论预算。",
    "用户喜欢喝绿茶。",
    "東京の天気は晴れです。",
    "The deploy 🚀 went out",
    "东西太多了，搬家公司下午来。",
    "京都的红叶十一月最好看。",
    "我们用Python写数据管道。",
    "서울에서 회의가 있어요.",
]


@pytest.fixture
def mem(tmp_path: Path):
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none") as m:
        m.remember_many([{"content": text, "created_at": START + i * APART} for i, text in enumerate(MEMORIES)])
        yield m


def found_by_words(mem: Mnemosyne, query: str) -> list[str]:
    """What ``query`` finds by its words (content BM25), best first."""
    return [m.content for m in mem.recall(query, explain=True) if m.explanation["content"] > 0]


@pytest.mark.parametrize(
    ("query", "memory"),
    [("东京", "我住在东京，每天坐地铁上班。"), ("地铁", "我住在东京，每天坐地铁上班。"),
     ("预算", "明天下午三点开会讨论预算。"), ("茶", "用户喜欢喝绿茶。"), ("天気", "東京の天気は晴れです。"),
     ("서울", "서울에서 회의가 있어요.")],
)
def test_a_word_inside_a_longer_run_is_found(mem: Mnemosyne, query: str, memory: str):
    assert found_by_words(mem, query)[0] == memory


def test_a_question_finds_the_memory_that_answers_it(mem: Mnemosyne):
    assert found_by_words(mem, "用户喜欢喝什么茶？")[0] == "用户喜欢喝绿茶。"
    assert found_by_words(mem, "明天几点开会？")[0] == "明天下午三点开会讨论预算。"


def test_the_memory_holding_the_whole_word_ranks_above_those_sharing_a_character(mem: Mnemosyne):
    found = mem.recall("东京", explain=True)
    scores = {m.content: m.explanation["content"] for m in found}
    assert found[0].content == "我住在东京，每天坐地铁上班。"
    whole = scores["我住在东京，每天坐地铁上班。"]
    assert all(scores.get(text, 0) < whole for text in ("东西太多了，搬家公司下午来。", "京都的红叶十一月最好看。"))


def test_an_emoji_is_found(mem: Mnemosyne):
    assert found_by_words(mem, "🚀") == ["The deploy 🚀 went out"]
    assert found_by_words(mem, "🚀🚀 launch") == ["The deploy 🚀 went out"]


@pytest.mark.parametrize("query", ["python", "数据管道", "Python 数据"])
def test_a_mixed_memory_is_found_by_its_english_and_by_its_cjk_words(mem: Mnemosyne, query: str):
    assert found_by_words(mem, query)[0] == "我们用Python写数据管道。"


def test_an_english_word_beside_cjk_is_found(tmp_path: Path):
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember("Meeting with 田中さん about the budget.")
        assert found_by_words(mem, "田中") == found_by_words(mem, "budget") == [
            "Meeting with 田中さん about the budget."]


def test_forget_leaves_no_cjk_text_in_any_index(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="a", db_path=db, embedder="none") as mem:
        close = timedelta(minutes=5)  # neighbours: each window holds the others' text
        ids = mem.remember_many([{"content": text, "created_at": START + i * close}
                                 for i, text in enumerate(["会议改到周五。", "密码是蓝色企鹅🐧。", "好的，知道了。"])])
        assert found_by_words(mem, "企鹅")
        mem.forget(ids[1])
        found = mem.recall("企鹅 🐧", explain=True)
        assert all(m.explanation["content"] == m.explanation["context"] == 0 for m in found)
        assert mem.doctor().ok
    with sqlite3.connect(db) as conn:
        for table, column in (("memories_cjk_fts", "content"), ("memories_context_fts", "context")):
            texts = [text for (text,) in conn.execute(f"SELECT {column} FROM {table}")]
            assert texts and not any("企" in text for text in texts)
            assert conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH '\"企鹅\"'").fetchone() == (0,)


def test_an_edit_takes_the_old_words_out_and_indexes_the_new(mem: Mnemosyne):
    (memory,) = [m for m in mem.recall("东京") if m.content.startswith("我住在")]
    mem.update(memory.id, content="我住在大阪，每天骑车上班。")
    assert "我住在大阪，每天骑车上班。" not in found_by_words(mem, "东京")
    assert found_by_words(mem, "大阪")[0] == "我住在大阪，每天骑车上班。"
    assert mem.doctor().ok


def test_english_is_indexed_exactly_as_before(tmp_path: Path):
    texts = ["The deploy went out", "café déjà vu", "thanks_x o'neil 3.14 #42", "email me@example.com"]
    assert [cjk.indexed_text(text) for text in texts] == texts
    assert [lexical.query_terms(text) for text in texts] == [
        ["deploy", "went"], ["café", "déjà", "vu"], ["thanks", "x", "o", "neil", "3", "14", "42"],
        ["email", "example", "com"]]
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none") as mem:
        mem.remember_many(texts)
        with sqlite3.connect(tmp_path / "m.db") as conn:
            assert conn.execute("SELECT count(*) FROM memories_cjk_fts").fetchone() == (0,)


def test_cjk_and_emoji_become_the_terms_the_index_holds():
    assert lexical.query_terms("东京") == ["东", "京", "东京"]
    assert lexical.query_terms("iPhone手机") == ["iphone", "手", "机", "手机"]
    # Skin tones and variation selectors fold away; a flag stays one token.
    assert lexical.query_terms("👍🏽") == lexical.query_terms("👍")
    assert lexical.query_terms("❤️") == lexical.query_terms("❤")
    assert len(lexical.query_terms("🇯🇵")) == 1 != len(lexical.query_terms("🇯🇵🇫🇷"))
    assert lexical.query_terms("ｶﾀｶﾅ") == lexical.query_terms("カタカナ")  # halfwidth katakana folded


def test_folding_keeps_a_cjk_run_one_run():
    """A CJK run is folded (NFKC) before it is split into characters: no letter of
    these scripts folds into a space, or into a character that is none of them."""
    emoji = (range(0x2300, 0x2C00), range(0x1F000, 0x1FB00))
    for code in range(0x1100, 0x32400):
        letter = chr(code)
        if cjk.split(letter) == [(letter, True)] and not any(code in block for block in emoji):
            assert all(cjk.split(term) == [(term, True)] for term in cjk.terms(letter)), hex(code)


def test_doctor_finds_a_missing_cjk_entry_and_repairs_it(tmp_path: Path):
    db = tmp_path / "m.db"
    with Mnemosyne(session_id="a", db_path=db, embedder="none") as mem:
        mem.remember("用户喜欢喝绿茶。")
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM memories_cjk_fts")
        failing = {c.name: c.detail for c in mem.doctor().problems}
        assert failing == {"index:memories_cjk_fts": "1 memor(y/ies) with CJK or emoji text missing from "
                                                     "memories_cjk_fts, or stale"}
        assert mem.doctor(repair=True).repaired == ("memories_cjk_fts",)
        assert found_by_words(mem, "绿茶") == ["用户喜欢喝绿茶。"]


def test_sleep_keeps_cjk_memories_found_and_the_indexes_whole(tmp_path: Path):
    with Mnemosyne(session_id="a", db_path=tmp_path / "m.db", embedder="none") as mem:
        for _ in range(3):
            mem.remember("服务器的数据库备份每天凌晨两点运行。", source="ops")
        mem.remember_many([{"content": f"第{i}次部署完成 🚀", "created_at": START + timedelta(minutes=i)}
                           for i in range(6)])
        mem.sleep()
        assert found_by_words(mem, "数据库备份")[0] == "服务器的数据库备份每天凌晨两点运行。"
        assert found_by_words(mem, "部署 🚀")
        assert mem.doctor().ok
