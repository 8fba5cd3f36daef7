"""Disaster recovery: verified, atomic backups and restores (``mnemosyne.dr.recovery``)."""
