from mnemosyne import Mnemosyne

# Connect to a persistent database with a named session
mem = Mnemosyne(
  session_id="website-redesign",
  db_path="/data/memories.db",
)

# Store progress
mem.remember(
  content="Completed hero section design. User approved color palette.",
  source="conversation",
  importance=0.7,
)

# Store task state
mem.remember(
  content="Next step: implement responsive navigation component.",
  source="task-tracker",
  importance=0.8,
)
