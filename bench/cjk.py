"""Recall of Chinese, Japanese and Korean text and emoji, beside English.

    python bench/cjk.py                  # lexical only, then with the local model
    python bench/cjk.py --lexical-only

Eighty memories an agent might keep for a user who writes Chinese, Japanese,
Korean, English and emoji (and mixes them), stored in one database, and questions
about them: key words ("东京"), a word of one character ("茶"), questions as a user
asks them ("用户喜欢喝什么茶？"), emoji, mixed text. Memories sharing a single
character or a reversed pair with a key word ("东西", "京都", "京东" beside
"东京"; "上周去了海边" beside "上海") are there to be ranked below. Reports, per
language, how often a right memory comes first (R@1), is among the first five
(R@5), and the MRR over the first ten.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from mnemosyne import Mnemosyne

MEMORIES = [
    # Chinese
    "我住在东京，每天坐地铁上班。",
    "明天下午三点开预算会议，财务部的人也来。",
    "用户喜欢喝绿茶，不喜欢咖啡。",
    "我的猫叫小白，今年三岁了。",
    "下周五是妈妈的生日，要订蛋糕。",
    "服务器的数据库备份每天凌晨两点运行。",
    "用户对花生过敏。",
    "我们的产品发布日期推迟到六月。",
    "张经理负责北京分公司的招聘。",
    "东西太多了，搬家公司下午来。",
    "京都的红叶十一月最好看。",
    "我女儿在学钢琴，每周二上课。",
    "用户的护照号码已经更新了。",
    "这个季度的销售额增长了百分之十五。",
    "预订了去上海的高铁票，周六早上八点出发。",
    "会议室的投影仪坏了，需要报修。",
    "我每天早上跑步五公里。",
    "医生说要少吃盐，多喝水。",
    "老王推荐了一家四川火锅店。",
    "孩子的学校在朝阳区。",
    # Japanese
    "東京の天気は晴れです。",
    "来週の月曜日に歯医者の予約があります。",
    "田中さんはラーメンが大好きです。",
    "プロジェクトの締め切りは金曜日です。",
    "新しいノートパソコンを注文しました。",
    "京都で抹茶のお菓子を買いました。",
    "会議の資料は共有フォルダにあります。",
    "犬の散歩は毎朝七時です。",
    "母は北海道に住んでいます。",
    "コーヒーより紅茶が好きです。",
    # Korean
    "서울에서 회의가 있어요.",
    "내일 부산으로 출장을 갑니다.",
    "김치찌개를 좋아해요.",
    "비밀번호는 매달 바꿔야 합니다.",
    "아들의 생일 파티는 토요일이에요.",
    # Emoji and mixed
    "The deploy 🚀 went out at 5pm.",
    "Standup moved to 10am ☕ because of the offsite.",
    "Great job on the release 🎉🎉",
    "今天的发布很顺利🎉",
    "Bug 🐛 in the export pipeline blocks invoices.",
    "我们用Python写数据管道。",
    "The client in 大阪 wants the demo on Thursday.",
    "Meeting with 田中 about the budget.",
    "👍🏽 approved the design mockups.",
    "Flight to Tokyo 🇯🇵 on March 3.",
    "iPhone手机屏幕碎了，送去维修。",
    "下载了最新的Docker镜像。",
    # Sharing characters, or pairs, with the key words above, and answering none of the questions
    "东方明珠塔晚上很漂亮。",
    "在京东上买了一台洗衣机。",
    "北京的冬天很冷。",
    "绿色的文件夹放在桌子上。",
    "预算表已经发给财务部了。",
    "花生酱放在冰箱里。",
    "北京分公司下个月搬到新办公室。",
    "上周去了海边，天气很好。",
    "火车站离这里不远。",
    "学校组织了春游。",
    "医院的停车场很难找。",
    "钢笔没有墨水了。",
    "数据分析报告写完了。",
    "他说明天再说吧。",
    "東口で待ち合わせしましょう。",
    "天ぷらを食べました。",
    "歯ブラシを買いました。",
    "田んぼの中に家があります。",
    "散歩道に花が咲いています。",
    "母の日のプレゼントを選びました。",
    "会社の書類を印刷しました。",
    "서점에 갔어요.",
    "부모님께 전화했어요.",
    "생선을 샀어요.",
    "🚗 is in the shop until Friday.",
    "🎂 for the party is ordered.",
    "🐶 needs a bath.",
    # English
    "The team agreed to move the database migration to next week.",
    "The budget review is scheduled for Thursday afternoon.",
    "The user prefers dark mode in every app.",
    "The dentist appointment is on Monday at 9am.",
    "My cat is allergic to chicken.",
    "Tea with the Tokyo office on Wednesday.",
]

# (language, question, the memories that answer it)
QUESTIONS: list[tuple[str, str, set[int]]] = [
    ("zh", "东京", {0}), ("zh", "预算会议", {1}), ("zh", "绿茶", {2}), ("zh", "茶", {2, 25, 29}),
    ("zh", "猫", {3}), ("zh", "生日", {4}), ("zh", "数据库备份", {5}), ("zh", "过敏", {6}),
    ("zh", "发布日期", {7}), ("zh", "招聘", {8}), ("zh", "京都", {10, 25}), ("zh", "钢琴课", {11}),
    ("zh", "护照", {12}), ("zh", "销售额", {13}), ("zh", "上海", {14}), ("zh", "投影仪", {15}),
    ("zh", "跑步", {16}), ("zh", "火锅", {18}), ("zh", "会议", {1, 15}), ("zh", "医生", {17}),
    ("zh", "学校", {19, 56}),
    ("zh", "我住在哪里？", {0}), ("zh", "用户喜欢喝什么茶？", {2}), ("zh", "我的猫叫什么名字？", {3}),
    ("zh", "妈妈的生日是哪天？", {4}), ("zh", "数据库什么时候备份？", {5}), ("zh", "用户对什么过敏？", {6}),
    ("zh", "产品什么时候发布？", {7}), ("zh", "谁负责招聘？", {8}), ("zh", "女儿什么时候上钢琴课？", {11}),
    ("zh", "去上海的火车几点出发？", {14}), ("zh", "医生说了什么？", {17}), ("zh", "孩子的学校在哪里？", {19}),
    ("zh", "我喜欢喝什么？", {2}), ("zh", "猫多大了？", {3}), ("zh", "家里有茶吗？", {2, 25, 29}),
    ("zh", "北京分公司谁负责招聘？", {8}), ("zh", "哪天开预算会？", {1}),
    ("ja", "天気", {20}), ("ja", "歯医者の予約はいつですか？", {21}), ("ja", "田中さんの好きな食べ物は？", {22}),
    ("ja", "締め切り", {23}), ("ja", "抹茶", {25}), ("ja", "会議の資料はどこ？", {26}), ("ja", "犬の散歩", {27}),
    ("ja", "母はどこに住んでいますか", {28}), ("ja", "紅茶", {29}), ("ja", "ラーメン", {22}),
    ("ja", "ノートパソコン", {24}), ("ja", "東京", {20}), ("ja", "母の住まいは？", {28}),
    ("ko", "서울", {30}), ("ko", "부산 출장", {31}), ("ko", "김치찌개", {32}), ("ko", "비밀번호", {33}),
    ("ko", "생일 파티", {34}),
    ("emoji/mixed", "🚀", {35}), ("emoji/mixed", "☕", {36}), ("emoji/mixed", "🎉", {37, 38}),
    ("emoji/mixed", "🐛", {39}), ("emoji/mixed", "Python", {40}), ("emoji/mixed", "大阪", {41}),
    ("emoji/mixed", "田中 budget", {42}), ("emoji/mixed", "👍", {43}), ("emoji/mixed", "🇯🇵", {44}),
    ("emoji/mixed", "iPhone维修", {45}), ("emoji/mixed", "Docker", {46}), ("emoji/mixed", "deploy", {35}),
    ("en", "database migration", {74}), ("en", "budget review", {75}), ("en", "dark mode", {76}),
    ("en", "dentist appointment", {77}), ("en", "Tokyo office", {79}), ("en", "allergic", {78}),
]

START = 1_780_000_000.0
GAP_S = 2 * 3600.0  # apart enough that each memory's episode window is itself


def evaluate(embedder: str) -> dict[str, tuple[float, float, float, int]]:
    """``{language: (R@1, R@5, MRR@10, questions)}``, and the same over all of them."""
    ranks: dict[str, list[int | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        with Mnemosyne(session_id="bench", db_path=Path(tmp) / "cjk.db", embedder=embedder) as mem:
            ids = mem.remember_many(
                [{"content": text, "created_at": START + i * GAP_S} for i, text in enumerate(MEMORIES)])
            position = {memory_id: index for index, memory_id in enumerate(ids)}
            for language, question, answers in QUESTIONS:
                found = [position[m.id] for m in mem.recall(question, top_k=10)]
                rank = next((r for r, index in enumerate(found, 1) if index in answers), None)
                for group in (language, "all"):
                    ranks.setdefault(group, []).append(rank)
    ordered = sorted(ranks, key=lambda group: group == "all")  # each language, then all of them
    return {group: _scores(ranks[group]) for group in ordered}


def _scores(ranks: list[int | None]) -> tuple[float, float, float, int]:
    n = len(ranks)
    return (sum(r == 1 for r in ranks) / n, sum(r is not None and r <= 5 for r in ranks) / n,
            sum(1 / r for r in ranks if r is not None) / n, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lexical-only", action="store_true", help="skip the local embedding model")
    args = parser.parse_args()
    print("| recall | language | questions | R@1 | R@5 | MRR@10 |")
    print("|---|---|---|---|---|---|")
    runs = [("lexical only", "none")] + ([] if args.lexical_only else [("default (local model)", "local")])
    for label, embedder in runs:
        for group, (r1, r5, mrr, n) in evaluate(embedder).items():
            print(f"| {label} | {group} | {n} | {r1:.3f} | {r5:.3f} | {mrr:.3f} |")


if __name__ == "__main__":
    main()
