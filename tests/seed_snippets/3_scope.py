from mnemosyne import Mnemosyne

mem = Mnemosyne(session_id="website-redesign", db_path="/data/memories.db")

# Temporary task context (session-scoped)
mem.remember(
  content="Current CSS file is main.scss in /src/styles.",
  scope="session",
  importance=0.4,
)

# Permanent project knowledge (global)
mem.remember(
  content="Website uses the company design system v3.",
  scope="global",
  importance=0.9,
)
