"""Storage backends behind one narrow contract (see ``base.py``)."""
