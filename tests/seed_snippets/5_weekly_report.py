from mnemosyne import Mnemosyne

# Runs every Monday at 9 AM
def generate_weekly_report():
  mem = Mnemosyne(
      session_id="weekly-reports",
      db_path="/data/reports.db",
  )
  
  # Recall recent activities
  last_week = mem.recall("project updates decisions", top_k=10)
  
  # Generate report
  report = compile_report(last_week)
  
  # Store report for future reference
  mem.remember(
      content=report.summary,
      source="weekly-report",
      importance=0.7,
  )
  
  return report
