"""Paraphrase recall in a small store: questions that share no word with their answer.

    python bench/paraphrase.py [--embedder local]

Thirty memories an agent might keep, each with a question that asks for it in other
words ("what typeface does the customer use" for "The font is Inter."). All thirty
are stored in one database; each question is recalled with the default top_k.
Reported: how often the answer is the first result and among the results at all,
and how many other memories come back with it (none of them answers the question,
so fewer is better). Words cannot find these answers: only meaning can. Then twenty
questions that no memory answers: whatever they return is noise.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from mnemosyne import Mnemosyne

PAIRS = [
    ("what typeface does the customer use", "The font is Inter."),
    ("any outages recently", "The staging server ran out of disk space and crashed."),
    ("which database did we pick", "We decided to go with PostgreSQL for billing."),
    ("when is the user free to talk", "Bob prefers calls on Tuesday mornings."),
    ("what pet does she have", "Her dog Max is a golden retriever."),
    ("how much did the laptop cost", "I paid 1200 dollars for the new MacBook."),
    ("where does the client live", "The customer is based in Lisbon, Portugal."),
    ("what allergies should I know about", "Dana cannot eat peanuts."),
    ("is the build passing", "CI pipeline is green on main."),
    ("who is responsible for on-call this week", "Eve carries the pager until Sunday."),
    ("what did the user eat for lunch", "Had sushi at noon."),
    ("favourite music genre", "She listens to jazz all the time."),
    ("how do we deploy", "Releases ship via a GitHub Actions workflow to Kubernetes."),
    ("what's the budget", "We can spend at most 5000 euros this quarter."),
    ("car trouble", "My Honda's engine light came on yesterday."),
    ("vacation plans", "Flying to Japan in April for two weeks."),
    ("programming language preference", "He writes everything in Rust."),
    ("health issues", "I sprained my ankle while jogging."),
    ("where did they get married", "The wedding was held in a vineyard near Florence."),
    ("kids", "My son starts kindergarten in September."),
    ("which cloud provider", "Everything runs on AWS in eu-west-1."),
    ("meeting cancelled", "The standup is off tomorrow."),
    ("password rotation", "Credentials are changed every 90 days."),
    ("what hobby does the user have", "I spend weekends painting watercolours."),
    ("what went wrong with the payment", "The card was declined at checkout."),
    ("how old is the user", "I turned 32 last month."),
    ("what job does the user have", "I work as a nurse at the city hospital."),
    ("where does the user exercise", "I go to the gym on Elm Street every morning."),
    ("what's the deadline", "The report is due Friday at 5pm."),
    ("who won the game", "The Lakers beat the Celtics 102 to 99."),
]


# Questions none of the thirty memories answers: whatever comes back is noise.
NO_ANSWER = [
    "what is my passport number", "which airline do I usually fly with", "what's my wife's shoe size",
    "how many siblings do I have", "what is the wifi password at the office", "who is my dentist",
    "what is the name of my landlord", "what's the capital of Australia", "recommend a good book",
    "what's my blood type", "how tall am I", "which bank holds my mortgage",
    "what did the plumber quote", "what is my car's license plate", "what's my favourite colour",
    "who is the CEO of the company", "what's the API rate limit", "which browser does the customer use",
    "what's the Slack channel for incidents", "what is my daughter's teacher called",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default="local", help="embedder spec (default: local, the bundled model)")
    args = parser.parse_args()
    first = found = others = 0
    with tempfile.TemporaryDirectory() as tmp, \
            Mnemosyne(session_id="bench", db_path=Path(tmp) / "m.db", embedder=args.embedder) as mem:
        ids = mem.remember_many({"content": answer} for _, answer in PAIRS)
        for (question, _), answer_id in zip(PAIRS, ids, strict=True):
            results = [m.id for m in mem.recall(question)]
            first += results[:1] == [answer_id]
            found += answer_id in results
            others += len(results) - (answer_id in results)
        noise = [len(mem.recall(question)) for question in NO_ANSWER]
    n = len(PAIRS)
    print(f"\nParaphrases, {n} questions over {n} memories ({args.embedder})\n")
    print("| answer first | answer returned | other memories returned per question |")
    print("|---|---|---|")
    print(f"| {first / n:.2f} | {found / n:.2f} | {others / n:.2f} |")
    print(f"\n{len(NO_ANSWER)} questions none of them answers\n")
    print("| questions with any result | results per question |")
    print("|---|---|")
    print(f"| {sum(map(bool, noise)) / len(noise):.2f} | {sum(noise) / len(noise):.2f} |")


if __name__ == "__main__":
    main()
