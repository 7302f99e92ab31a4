"""A user's check of their own implementation: setup (import and probe the factory),
both engines under one contract (`manager`), the pytest fixture (`plugin`) and
trace replay (`replay`).
"""
