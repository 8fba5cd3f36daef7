from mnemosyne import Mnemosyne

# New process — reconnect to the same session
mem = Mnemosyne(
  session_id="website-redesign",
  db_path="/data/memories.db",
)

# Recover context
context = mem.recall("design progress and next steps", top_k=10)
for item in context:
  print(item)
