from mnemosyne.dr.recovery import create_backup, restore_backup

# Create backup before risky operations
create_backup(db_path="/data/memories.db", backup_path="/backups/pre-deploy.bak")

# Restore if needed
restore_backup(backup_path="/backups/pre-deploy.bak", db_path="/data/memories.db")
