"""The `evictable` command: `verify`, `check`, `explore`, `replay`, `diagram`, `bench`
(`main`), their JSON reports (`report`, `schema.json`) and the generated docs
(`docgen`).
"""
